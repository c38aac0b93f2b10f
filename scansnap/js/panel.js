/* panel.js: the live panel around yzlive.js. Sliders (native <input type=range> and <select>,
 * so the keyboard works), a small canvas plotter of its own, and a Web Worker made from the
 * engine's own source (a Blob URL: nothing is fetched, so file:// pages and offline readers work;
 * where a Worker cannot be made the same run is sliced on the main thread instead).
 *
 * The HTML that scansnap.live.panel() writes is a <div class="yzlive-panel"> holding a static
 * figure with one sentence (what a reader without JavaScript sees), a <script type=
 * "application/json" class="yzlive-config"> and this file. YZLivePanel.initAll() turns every
 * such div not yet live into a panel, so the code can appear once or many times on a page.
 *
 * For tests and benchmarks each panel div carries data-yzlive-runs (finished runs),
 * data-yzlive-state (running | done | diverged | error) and data-yzlive-ms (milliseconds from
 * the control's input event to the finished run drawn).
 */
(function (root) {
  "use strict";
  if (root.YZLivePanel) return;          // a second copy on the page: the first one serves
  var YZ = root.YZLive;
  var now = function () { return (root.performance || Date).now(); };

  // ----------------------------------------------------------------------------------
  // Controls: how a slider position maps to a value
  // ----------------------------------------------------------------------------------

  function ladder(lo, hi, perDecade, keep) {
    // integers lo..hi on a log scale (about perDecade per decade), always holding `keep`
    var out = {}, v, k;
    for (k = 0; ; k++) {
      v = Math.round(lo * Math.pow(10, k / perDecade));
      if (v > hi) break;
      out[v] = 1;
    }
    out[lo] = 1; out[hi] = 1;
    (keep || []).forEach(function (x) { if (typeof x === "number" && isFinite(x)) out[x] = 1; });
    return Object.keys(out).map(Number).sort(function (a, b) { return a - b; });
  }

  function fmt(v, digits) {
    if (v === Infinity) return "\u221e";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return String(v);
    var s = v.toPrecision(digits || 3);
    if (s.indexOf("e") < 0 && s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }

  var CONTROLS = {
    eta_y: { label: "\u03b7<sub>Y</sub>", aria: "learning rate eta Y (decoder)", kind: "log" },
    eta_z: { label: "\u03b7<sub>Z</sub>", aria: "learning rate eta Z (attention)", kind: "log" },
    steps: { label: "steps", aria: "training steps", kind: "ladder" },
    T: { label: "T", aria: "sequence length T", kind: "ladder", inf: true },
    batch: { label: "batch", aria: "batch size", kind: "ladder" },
    seed: { label: "seed", aria: "random seed", kind: "int" },
    momentum: { label: "momentum", aria: "SGD momentum", kind: "lin", step: 0.01 },
    num_last: { label: "queries", aria: "number of query tokens", kind: "int" },
    num_distinct: { label: "distinct", aria: "distinct tokens per class", kind: "int" },
    optimizer: { label: "optimiser", aria: "optimiser", kind: "select",
                 options: [["sgd", "SGD"], ["adam", "Adam"]] },
    init: { label: "init", aria: "initialisation", kind: "select",
            options: [["zero", "zero"], ["default", "uniform \u00b11/\u221aM"]] },
  };

  /** The next round value (1, 2, 3, 5 times a power of ten) above (dir 1) or below (dir -1) v;
   * decade: a factor of ten instead, landing on a round value. */
  function roundStep(v, decade, dir) {
    if (decade) return roundStep(dir > 0 ? v * 10 / 1.01 : v / 10 * 1.01, 0, dir);
    var e = Math.floor(Math.log10(v)) - 1, best = dir > 0 ? Infinity : -Infinity;
    for (var k = e; k <= e + 2; k++) {
      [1, 2, 3, 5].forEach(function (m) {
        var c = Number((m * Math.pow(10, k)).toPrecision(3));
        if (dir > 0 ? c > v * 1.0001 && c < best : c < v / 1.0001 && c > best) best = c;
      });
    }
    return best;
  }

  function makeControl(panel, name) {
    var spec = CONTROLS[name], range = panel.cfg.ranges[name], value = panel.values[name];
    var label = document.createElement("label");
    label.className = "yz-ctl yz-ctl-" + name + (spec.kind === "select" ? " yz-ctl-sel" : "");
    var lab = document.createElement("span");
    lab.className = "yz-lab";
    lab.innerHTML = spec.label;
    label.appendChild(lab);
    if (spec.kind === "select") {
      var sel = document.createElement("select");
      sel.setAttribute("aria-label", spec.aria);
      spec.options.forEach(function (o) {
        var op = document.createElement("option");
        op.value = o[0]; op.textContent = o[1];
        sel.appendChild(op);
      });
      sel.value = value;
      sel.addEventListener("change", function () { panel.set(name, sel.value, "change"); });
      label.appendChild(sel);
      return label;
    }
    var input = document.createElement("input"), out = document.createElement("output");
    input.type = "range";
    input.setAttribute("aria-label", spec.aria);
    var toValue, toPos;
    if (spec.kind === "log") {                       // continuous, log10 of the value
      var a = Math.log10(range[0]), b = Math.log10(range[1]);
      input.min = a; input.max = b; input.step = 0.01;
      toValue = function (p) { return Number(Math.pow(10, p).toPrecision(3)); };
      toPos = function (v) { return Math.log10(v); };
    } else if (spec.kind === "ladder") {             // integers, about 20 stops per decade
      var stops = ladder(range[0], range[1], 20, [value]);
      if (spec.inf && panel.cfg.allow_inf) stops.push(Infinity);
      input.min = 0; input.max = stops.length - 1; input.step = 1;
      toValue = function (p) { return stops[Math.round(p)]; };
      toPos = function (v) { var i = stops.indexOf(v); return i < 0 ? 0 : i; };
    } else if (spec.kind === "int") {
      input.min = range[0]; input.max = range[1]; input.step = 1;
      toValue = function (p) { return Math.round(p); };
      toPos = function (v) { return v; };
    } else {
      input.min = range[0]; input.max = range[1]; input.step = spec.step;
      toValue = function (p) { return Number(Number(p).toFixed(2)); };
      toPos = function (v) { return v; };
    }
    input.value = toPos(value);
    panel.ends[name] = [toValue(Number(input.min)), toValue(Number(input.max))];
    var show = function (v) {
      out.textContent = fmt(v);
      input.setAttribute("aria-valuetext", fmt(v));
    };
    show(value);
    // A touch that turns into a vertical scroll (touch-action: pan-y in the CSS) must not move the
    // slider: under touch the value is taken on release, and a cancelled touch puts it back.
    var touch = null;
    input.addEventListener("pointerdown", function (ev) { touch = ev.pointerType === "touch" ? input.value : null; });
    input.addEventListener("pointercancel", function () {
      if (touch === null) return;
      input.value = touch;
      show(panel.values[name]);
      touch = null;
    });
    input.addEventListener("input", function () {
      var v = toValue(Number(input.value));
      show(v);
      if (touch === null) panel.set(name, v, "input");
    });
    input.addEventListener("change", function () {
      if (touch === null) return;
      touch = null;
      var v = toValue(Number(input.value));
      if (v !== panel.values[name]) panel.set(name, v, "input");
    });
    if (spec.kind === "log") {
      // keys step through round values (1, 2, 3, 5 per decade; Page keys: a decade), so "set
      // eta_Y to 1" is a few presses, not a hundred steps of 0.01 in log10
      input.addEventListener("keydown", function (ev) {
        var up = { ArrowUp: 1, ArrowRight: 1, PageUp: 10 }[ev.key], down = { ArrowDown: 1, ArrowLeft: 1, PageDown: 10 }[ev.key];
        if (!up && !down) return;
        ev.preventDefault();
        // from the value itself: the input's position is snapped to its 0.01 grid (0.5 reads 0.501)
        var v = panel.values[name], lo = panel.ends[name][0], hi = panel.ends[name][1];
        var next = up ? roundStep(v, up === 10 ? 10 : 0, 1) : roundStep(v, down === 10 ? 10 : 0, -1);
        next = Math.min(hi, Math.max(lo, next));
        input.value = toPos(next);
        show(next);
        panel.set(name, next, "input");
      });
    }
    label.appendChild(input);
    label.appendChild(out);
    return label;
  }

  // ----------------------------------------------------------------------------------
  // A small plotter: axes (linear or log), lines, bands, bars, rich text (x_{sub}, x^{sup})
  // ----------------------------------------------------------------------------------

  var FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";

  function theme(el) {
    var cs = getComputedStyle(el), g = function (k) { return cs.getPropertyValue(k).trim(); };
    return { fg: g("--yz-fg"), muted: g("--yz-muted"), grid: g("--yz-grid"), frame: g("--yz-frame"),
             bg: g("--yz-bg"), band: g("--yz-band"), c0: g("--yz-c0"), c1: g("--yz-c1"), ref: g("--yz-ref"),
             ghost: g("--yz-ghost"), dark: g("--yz-dark") === "1" };
  }

  var VIRIDIS = [[68, 1, 84], [65, 68, 135], [42, 120, 142], [34, 168, 132], [122, 209, 81], [253, 231, 37]];
  /** A sequence colour for t in [0, 1] (a token's rank by P, a step's place in the run): the
   * high end stands out in both modes. On a light page t = 1 is viridis' darkest purple and t = 0
   * a teal that keeps 3:1 contrast on white (viridis' yellow-green end would not); on a dark page
   * t = 1 is its yellow and t = 0 a blue that keeps 3:1 on the dark canvas (its purple would not). */
  function viridis(t, dark) {
    t = dark ? 0.32 + 0.68 * t : 0.62 * (1 - t);
    t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
    var i = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - i, a = VIRIDIS[i], b = VIRIDIS[i + 1];
    return "rgb(" + [0, 1, 2].map(function (k) { return Math.round(a[k] + f * (b[k] - a[k])); }).join(",") + ")";
  }

  function parseRich(s) {
    // "c_{l|n}" -> [{t:"c"}, {t:"l|n", sub:1}]; "_x" and "^x" take one character
    var out = [], i = 0, buf = "";
    while (i < s.length) {
      var ch = s[i];
      if ((ch === "_" || ch === "^") && i + 1 < s.length) {
        if (buf) { out.push({ t: buf }); buf = ""; }
        var txt;
        if (s[i + 1] === "{") { var j = s.indexOf("}", i); txt = s.slice(i + 2, j); i = j + 1; }
        else { txt = s[i + 1]; i += 2; }
        out.push({ t: txt, sub: ch === "_", sup: ch === "^" });
      } else { buf += ch; i++; }
    }
    if (buf) out.push({ t: buf });
    return out;
  }

  function richWidth(ctx, s, size) {
    var w = 0;
    parseRich(s).forEach(function (p) {
      ctx.font = (p.sub || p.sup ? Math.round(size * 0.75) : size) + "px " + FONT;
      w += ctx.measureText(p.t).width;
    });
    return w;
  }

  function richText(ctx, s, x, y, size, align, color, rotate) {
    var w = richWidth(ctx, s, size);
    ctx.save();
    ctx.translate(x, y);
    if (rotate) ctx.rotate(-Math.PI / 2);
    var x0 = align === "center" ? -w / 2 : align === "right" ? -w : 0;
    ctx.fillStyle = color;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    parseRich(s).forEach(function (p) {
      var small = p.sub || p.sup, sz = small ? Math.round(size * 0.75) : size;
      ctx.font = sz + "px " + FONT;
      ctx.fillText(p.t, x0, p.sub ? size * 0.3 : p.sup ? -size * 0.35 : 0);
      x0 += ctx.measureText(p.t).width;
    });
    ctx.restore();
    return w;
  }

  function niceTicks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return { ticks: [lo], step: 1 };
    var step = Math.pow(10, Math.floor(Math.log10(span / n))), err = span / n / step;
    if (err >= 7.5) step *= 10; else if (err >= 3.5) step *= 5; else if (err >= 1.5) step *= 2;
    var t = [], v = Math.ceil(lo / step - 1e-9) * step;
    for (; v <= hi + step * 1e-9; v += step) t.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return { ticks: t, step: step };
  }

  function logTicks(lo, hi) {
    var a = Math.floor(Math.log10(lo) + 1e-9), b = Math.ceil(Math.log10(hi) - 1e-9), t = [], k;
    for (k = a; k <= b; k++) { var v = Math.pow(10, k); if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push(v); }
    if (t.length < 2) {
      t = [];
      for (k = a; k <= b; k++) [1, 2, 5].forEach(function (m) {
        var v = m * Math.pow(10, k); if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push(v);
      });
    }
    while (t.length > 7) t = t.filter(function (_, i) { return i % 2 === 0; });
    return t;
  }

  function tickLabel(v, log, step) {
    if (v === 0) return "0";
    if (log) {
      var k = Math.round(Math.log10(v));
      if (Math.abs(v - Math.pow(10, k)) < 1e-9 * v && (k < -2 || k > 3)) return "10^{" + k + "}";
      return fmt(v, 2);
    }
    var d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    return Math.abs(v) >= 1e5 ? v.toExponential(0) : v.toFixed(Math.min(d, 6));
  }

  /** Axes inside box {x, y, w, h} (CSS px) with limits xlim, ylim. */
  function Axes(ctx, box, o, th) {
    this.ctx = ctx; this.o = o; this.th = th;
    this.xlog = !!o.xlog; this.ylog = !!o.ylog;
    var xl = o.xlim, yl = o.ylim;
    this.xt = this.xlog ? logTicks(xl[0], xl[1]) : niceTicks(xl[0], xl[1], o.xn || 5);
    this.yt = this.ylog ? logTicks(yl[0], yl[1]) : niceTicks(yl[0], yl[1], o.yn || 4);
    var self = this, fs = o.fs || 12;
    this.fs = fs;
    var ytl = (this.ylog ? this.yt : this.yt.ticks).map(function (v) { return tickLabel(v, self.ylog, self.yt.step); });
    var yw = Math.max.apply(null, ytl.map(function (s) { return richWidth(ctx, s, fs); }).concat([8]));
    var left = Math.max(box.x + (o.ylabel ? fs + 8 : 0) + yw + 8, o.left || 0);
    // above the plot, never on the data: the title, the legend (in as many rows as it needs) and a
    // strip for the labels of marked positions (t_0) and of regions (common / distinct)
    this.lg = o.legend && o.legend.length ? legendRows(ctx, o.legend, box.w - 8, fs - 1) : null;
    var top = box.y + (o.title ? fs + 10 : 6) + (this.lg ? this.lg.h + 4 : 0) + (o.marks ? fs + 4 : 0);
    var bottom = box.y + box.h - (o.xlabel ? 2 * fs + 12 : fs + 10);
    var right = box.x + box.w - (o.right || 10);
    this.r = { x: left, y: top, w: Math.max(10, right - left), h: Math.max(10, bottom - top) };
    this.box = box; this.ytl = ytl;
    this.lx = xl.map(function (v) { return self.xlog ? Math.log10(v) : v; });
    this.ly = yl.map(function (v) { return self.ylog ? Math.log10(v) : v; });
  }

  Axes.prototype.X = function (v) {
    var t = this.xlog ? Math.log10(v) : v;
    return this.r.x + (t - this.lx[0]) / ((this.lx[1] - this.lx[0]) || 1) * this.r.w;
  };
  Axes.prototype.Y = function (v) {
    var t = this.ylog ? Math.log10(v) : v;
    return this.r.y + this.r.h - (t - this.ly[0]) / ((this.ly[1] - this.ly[0]) || 1) * this.r.h;
  };

  Axes.prototype.frame = function () {
    var c = this.ctx, r = this.r, th = this.th, o = this.o, fs = this.fs, self = this;
    c.save();
    c.lineWidth = 1;
    c.strokeStyle = th.grid;
    var yt = this.ylog ? this.yt : this.yt.ticks, xt = this.xlog ? this.xt : this.xt.ticks;
    c.beginPath();
    yt.forEach(function (v) { var y = Math.round(self.Y(v)) + 0.5; c.moveTo(r.x, y); c.lineTo(r.x + r.w, y); });
    if (!o.noxgrid) xt.forEach(function (v) { var x = Math.round(self.X(v)) + 0.5; c.moveTo(x, r.y); c.lineTo(x, r.y + r.h); });
    c.stroke();
    c.strokeStyle = th.frame;
    c.strokeRect(Math.round(r.x) + 0.5, Math.round(r.y) + 0.5, Math.round(r.w), Math.round(r.h));
    yt.forEach(function (v, i) { richText(c, self.ytl[i], r.x - 5, self.Y(v), fs, "right", th.muted); });
    if (!o.noxticks) {
      xt.forEach(function (v) {
        richText(c, tickLabel(v, self.xlog, self.xt.step), self.X(v), r.y + r.h + fs * 0.5 + 4, fs, "center", th.muted);
      });
    }
    // a label may be a list of ever shorter variants: the first that fits is drawn
    var fit = function (s, w) {
      var alts = [].concat(s);
      for (var i = 0; i < alts.length; i++) if (richWidth(c, alts[i], fs) <= w) return alts[i];
      return alts[alts.length - 1];
    };
    if (o.xlabel) richText(c, fit(o.xlabel, this.box.w - 8), r.x + r.w / 2, r.y + r.h + fs * 1.6 + 6, fs, "center", th.fg);
    if (o.ylabel) richText(c, fit(o.ylabel, r.h + 20), this.box.x + fs * 0.6, r.y + r.h / 2, fs, "center", th.fg, true);
    if (o.title) richText(c, fit(o.title, this.box.w - 8), this.box.x + this.box.w / 2, this.box.y + fs * 0.5 + 2, fs, "center", th.fg);
    if (this.lg) drawLegend(c, this.lg, this.box.x + 4, this.box.y + (o.title ? fs + 10 : 6), th);
    c.restore();
  };

  /** The y of the strip above the frame where marks and regions are labelled (o.marks). */
  Axes.prototype.markY = function () { return this.r.y - this.fs * 0.5 - 3; };

  Axes.prototype.clip = function () {
    this.ctx.save();
    this.ctx.beginPath();
    this.ctx.rect(this.r.x, this.r.y, this.r.w, this.r.h);
    this.ctx.clip();
  };

  Axes.prototype.line = function (xs, ys, st) {
    var c = this.ctx, started = false, i, self = this;
    st = st || {};
    this.clip();
    c.strokeStyle = st.color; c.lineWidth = st.width || 1.6; c.globalAlpha = st.alpha || 1;
    c.setLineDash(st.dash || []);
    if (st.dots) xs = [];         // markers only
    c.beginPath();
    for (i = 0; i < xs.length; i++) {
      var ok = isFinite(ys[i]) && (!this.ylog || ys[i] > 0) && (!this.xlog || xs[i] > 0);
      if (!ok) { started = false; continue; }
      var x = this.X(xs[i]), y = this.Y(ys[i]);
      if (started) c.lineTo(x, y); else { c.moveTo(x, y); started = true; }
    }
    c.stroke();
    c.setLineDash([]);
    if (st.dots) xs = st.dots;
    if (st.marker) {
      c.fillStyle = st.color;
      for (i = 0; i < xs.length; i++) {
        if (!isFinite(ys[i]) || (this.ylog && ys[i] <= 0)) continue;
        c.beginPath(); c.arc(self.X(xs[i]), self.Y(ys[i]), st.marker, 0, 2 * Math.PI); c.fill();
      }
    }
    c.restore();
  };

  Axes.prototype.band = function (xs, lo, hi, color) {
    var c = this.ctx, i;
    if (!xs.length) return;
    this.clip();
    c.fillStyle = color;
    c.beginPath();
    c.moveTo(this.X(xs[0]), this.Y(hi[0]));
    for (i = 1; i < xs.length; i++) c.lineTo(this.X(xs[i]), this.Y(hi[i]));
    for (i = xs.length - 1; i >= 0; i--) c.lineTo(this.X(xs[i]), this.Y(lo[i]));
    c.closePath();
    c.fill();
    c.restore();
  };

  Axes.prototype.xspan = function (a, b, color) {
    this.clip();
    this.ctx.fillStyle = color;
    this.ctx.fillRect(this.X(a), this.r.y, this.X(b) - this.X(a), this.r.h);
    this.ctx.restore();
  };

  Axes.prototype.vline = function (x, color, label) {
    if (!(x >= this.o.xlim[0] && x <= this.o.xlim[1])) return false;
    var c = this.ctx, X = Math.round(this.X(x)) + 0.5;
    c.save();
    c.strokeStyle = color; c.lineWidth = 1.4; c.setLineDash([4, 3]);
    c.beginPath(); c.moveTo(X, this.r.y); c.lineTo(X, this.r.y + this.r.h); c.stroke();
    c.restore();
    if (label) richText(c, label, X, this.o.marks ? this.markY() : this.r.y + this.fs * 0.7 + 2, this.fs,
                        this.o.marks ? "center" : "left", color);
    return true;
  };

  Axes.prototype.bars = function (xs, ys, color, width) {
    var c = this.ctx, self = this;
    this.clip();
    c.fillStyle = color;
    xs.forEach(function (x, i) {
      var x0 = self.X(x - width / 2), x1 = self.X(x + width / 2), y0 = self.Y(0), y1 = self.Y(ys[i]);
      c.fillRect(x0, Math.min(y0, y1), x1 - x0, Math.abs(y1 - y0));
    });
    c.restore();
  };

  Axes.prototype.text = function (s, x, y, align, color, size) {
    richText(this.ctx, s, x, y, size || this.fs, align || "left", color || this.th.fg);
  };

  /** A legend above the plot: entries {label, color, dash, band, dot, ghost, gradient: t -> colour},
   * laid out left to right in rows no wider than `width`. Returns {rows, h, fs}. */
  function legendRows(ctx, entries, width, fs) {
    var sw = 20, gap = 14, rows = [[]], x = 0;
    entries.forEach(function (e) {
      var w = sw + 5 + richWidth(ctx, e.label, fs);
      if (x > 0 && x + w > width) { rows.push([]); x = 0; }
      rows[rows.length - 1].push({ e: e, x: x });
      x += w + gap;
    });
    return { rows: rows, h: rows.length * (fs + 6), fs: fs, sw: sw };
  }

  function drawLegend(c, lg, x, y, th) {
    var fs = lg.fs, sw = lg.sw, lh = fs + 6;
    lg.rows.forEach(function (row, r) {
      var yy = y + r * lh + lh / 2;
      row.forEach(function (it) {
        var e = it.e, x0 = x + it.x;
        c.save();
        if (e.band) { c.fillStyle = e.color; c.fillRect(x0, yy - 4, sw, 8); }
        else if (e.dot) { c.fillStyle = e.color; c.beginPath(); c.arc(x0 + sw / 2, yy, 2.8, 0, 2 * Math.PI); c.fill(); }
        else if (e.hollow) { c.strokeStyle = e.color; c.lineWidth = 1.5; c.strokeRect(x0 + 3.5, yy - 4.5, sw - 7, 9); }
        else if (e.gradient) {
          for (var k = 0; k < sw; k++) { c.fillStyle = e.gradient(k / (sw - 1)); c.fillRect(x0 + k, yy - 4, 1.2, 8); }
        } else {
          c.strokeStyle = e.color; c.lineWidth = e.width || 1.8; c.setLineDash(e.dash || []);
          c.beginPath(); c.moveTo(x0, yy); c.lineTo(x0 + sw, yy); c.stroke(); c.setLineDash([]);
        }
        c.restore();
        richText(c, e.label, x0 + sw + 5, yy, fs, "left", th.fg);
      });
    });
  }

  function range0(n, start) { var a = new Array(n); for (var i = 0; i < n; i++) a[i] = i + (start || 0); return a; }

  // ----------------------------------------------------------------------------------
  // The views. Each draws a run (its records: loss[s], entropy[s], rows[s] = c_n at step s) in
  // fixed axes (the panel's frame: the default run and the main slider's two ends, grown only if a
  // later run leaves it), with the default run behind it as a faint ghost once a slider moved.
  // range(run) gives the extents a view needs for its frame; metrics(run) the numbers the line
  // "what changed" compares.
  // ----------------------------------------------------------------------------------

  // A run: {rec, values, classes, cls, S0, nc, limit}
  function row(run, s) { return run.rec.rows.subarray(s * run.S0, (s + 1) * run.S0); }

  // Momentum's clock (the intro's box, chapter 5): gamma is drawn against tau(s) and t_0 marked
  // where tau reaches it (YZ.clockTau, YZ.clockSteps).
  function momentumOf(v) { return v.optimizer === "sgd" ? v.momentum : 0; }

  function t0Plain(run) {
    try { return YZ.transitionTime(run.classes.M, run.classes.K, run.values.eta_y); } catch (e) { return NaN; }   // M < 4: no t_0
  }

  function t0Of(run) { return YZ.clockSteps(t0Plain(run), momentumOf(run.values)); }

  function sgd(run) { return run.values.optimizer === "sgd" && isFinite(t0Of(run)); }

  function rateNote(run, short) {
    var v = run.values;
    if (v.optimizer !== "sgd") return null;
    var t0 = t0Of(run), head = "t_0" + (isFinite(t0) ? " = " + fmt(t0, 2) : "");   // its value, in steps
    if (!v.momentum) return head + " (plain SGD at \u03b7_Y = " + fmt(v.eta_y) + ")";
    return head + (short ? " (momentum's clock)" : " on momentum's clock (\u03b2 = " + fmt(v.momentum) +
      "; plain SGD: " + fmt(t0Plain(run), 3) + ")");
  }

  function maxOf(a, n) { var m = -Infinity; for (var i = 0; i < (n === undefined ? a.length : n); i++) if (a[i] > m) m = a[i]; return m; }
  function finite(a) { return Array.prototype.filter.call(a, function (v) { return isFinite(v); }); }

  /** Limits from a frame's extents: linear from zero, linear padded, or log (a decade at least). */
  function zeroLim(e) { return [0, (e && e[1] > 0 ? e[1] : 1) * 1.08]; }
  function padLim(e) {
    if (!e || !(e[0] <= e[1])) return [0, 1];
    var lo = e[0], hi = e[1];
    if (hi - lo < 1e-12) { lo -= 0.5; hi += 0.5; }
    var pad = 0.06 * (hi - lo);
    return [lo - pad, hi + pad];
  }
  function logLim(e) {
    if (!e || !(e[0] > 0 && e[0] <= e[1])) return [0.1, 1];
    var lo = e[0], hi = e[1];
    if (hi / lo < 10) { var m = Math.sqrt(hi * lo); lo = Math.min(lo, m / 3.2); hi = Math.max(hi, m * 3.2); }
    return [lo / 1.3, hi * 1.3];
  }
  // On a log axis a value below LOG_FLOOR is zero to the eye (a loss of 1e-17 is rounding): the axes
  // stop there, so a run that learns its data exactly does not stretch them over ten more decades.
  var LOG_FLOOR = 1e-6;
  function span(vals, log) {
    var lo = Infinity, hi = -Infinity;
    vals.forEach(function (v) { if (isFinite(v) && (!log || v > 0)) { if (v < lo) lo = v; if (v > hi) hi = v; } });
    if (log && lo <= hi) { lo = Math.max(lo, Math.min(LOG_FLOOR, hi)); }
    return lo <= hi ? [lo, hi] : null;
  }

  // the ghost's look: the default run, faint, behind the current one
  var GHOST = { width: 2.6, alpha: 0.55 };

  function topToken(run) {            // the largest attention on one distinct token at the last step
    var r = row(run, run.rec.recorded - 1);
    return maxOf(r.subarray(run.nc));
  }

  var VIEWS = {};

  VIEWS.cn = {
    title: "c_n over class tokens", height: 0.55, min: 260, max: 340, wide: true,
    range: function (run) {
      var hi = 0;
      run.snaps.forEach(function (s) { if (s < run.rec.recorded) hi = Math.max(hi, maxOf(row(run, s))); });
      return { y: [0, hi] };
    },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var cl = run.classes, n = run.cls, S0 = run.S0, nc = run.nc;
      var steps = run.snaps.filter(function (s) { return s < run.rec.recorded; });
      var ys = steps.map(function (s) { return row(run, s); }), all = run.snaps;
      var legend = steps.map(function (s) { return { label: "step " + s, color: viridis(all.indexOf(s) / Math.max(1, all.length - 1), th.dark) }; });
      if (ghost) legend.push({ label: "default run, step " + ghost.values.steps, color: th.ghost, width: GHOST.width });
      var ax = new Axes(ctx, box, { xlim: [-0.6, S0 - 0.4], ylim: zeroLim(frame.y), noxticks: true, noxgrid: true, marks: true,
        legend: legend, ylabel: ["attention c_{l|n} (Eq. 5)", "c_{l|n}"], xlabel: ["token of class " + n + " (next token " + cl.next[n] +
        "): common, then distinct by increasing P", "token of class " + n + ": common, then distinct by P", "token"] }, th);
      if (nc) ax.xspan(-0.5, nc - 0.5, th.band);
      ax.frame();
      var every = Math.max(1, Math.ceil(S0 / (ax.r.w / 22)));
      for (var k = 0; k < S0; k += every) ax.text(String(cl.order[n][k]), ax.X(k), ax.r.y + ax.r.h + ax.fs * 0.5 + 4, "center", th.muted, ax.fs - 1);
      if (nc) ax.text("common", ax.X((nc - 1) / 2), ax.markY(), "center", th.muted);
      if (S0 > nc) ax.text("distinct (P \u2192)", ax.X(nc + (S0 - nc - 1) / 2), ax.markY(), "center", th.muted);
      var xs = range0(S0);
      if (ghost) { ax.line(xs, row(ghost, ghost.rec.recorded - 1), { color: th.ghost, width: GHOST.width, alpha: GHOST.alpha }); p.ghostMarks += 1; }
      steps.forEach(function (s, i) { ax.line(xs, ys[i], { color: legend[i].color, marker: 2.5, width: 1.4 }); });
    },
    describe: function (run) {
      var last = run.rec.recorded - 1, r = row(run, last), com = 0, dis = 0;
      for (var k = 0; k < run.S0; k++) (k < run.nc ? (com += r[k]) : (dis += r[k]));
      return "Attention c_n of class " + run.cls + " at step " + last + ": " + fmt(com, 2) + " on common tokens, " +
             fmt(dis, 2) + " on distinct tokens.";
    },
    metrics: function (run) { return [["top token's share", topToken(run), 2]]; },
  };

  VIEWS.loss = {
    title: "loss", height: 0.62, min: 230, max: 300,
    range: function (run) {
      var n = run.rec.nLoss, vals = finite(run.rec.loss.subarray(0, n));
      if (run.rec.refLoss) vals = vals.concat(finite(run.rec.refLoss.subarray(0, n)));
      return { y: span(vals, true) };
    },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var L = run.rec.loss.subarray(0, run.rec.nLoss), xs = range0(L.length);
      var R = run.rec.refLoss ? run.rec.refLoss.subarray(0, run.rec.nLoss) : null;
      var lg = [{ label: run.limit ? "expected loss (T\u2192\u221e)" : "batch loss", color: th.c0 }];
      if (R) lg.push({ label: "T\u2192\u221e, same init", color: th.ref, dash: [5, 3] });
      if (ghost) lg.push({ label: "default run", color: th.ghost, width: GHOST.width });
      var ax = new Axes(ctx, box, { xlim: [0, Math.max(1, run.values.steps - 1)], ylim: logLim(frame.y), legend: lg,
        ylog: true, xlabel: "step s", ylabel: "training loss" }, th);
      ax.frame();
      if (ghost) { var G = ghost.rec.loss.subarray(0, ghost.rec.nLoss); ax.line(range0(G.length), G, { color: th.ghost, width: GHOST.width, alpha: GHOST.alpha }); p.ghostMarks += 1; }
      if (R) ax.line(xs, R, { color: th.ref, dash: [5, 3], width: 1.4 });
      ax.line(xs, L, { color: th.c0 });
    },
    describe: function (run) {
      var L = run.rec.loss, n = run.rec.nLoss;
      return n ? "Training loss from " + fmt(L[0], 3) + " at step 0 to " + fmt(L[n - 1], 3) + " at step " + (n - 1) + "." : "";
    },
    metrics: function (run) {          // the batch loss is noisy: the mean of the last tenth of the steps
      var n = run.rec.nLoss, k = Math.max(1, Math.round(n / 10)), s = 0;
      for (var i = n - k; i < n; i++) s += run.rec.loss[i];
      return [["final loss", s / k, 2]];
    },
  };

  VIEWS.entropy = {
    title: "distinct-token entropy", height: 0.62, min: 230, max: 300,
    range: function (run) {
      var n = run.rec.recorded, vals = finite(run.rec.entropy.subarray(0, n));
      if (run.rec.refEntropy) vals = vals.concat(finite(run.rec.refEntropy.subarray(0, n)));
      return { y: span(vals, false) };
    },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var E = run.rec.entropy.subarray(0, run.rec.recorded), xs = range0(E.length);
      var R = run.rec.refEntropy ? run.rec.refEntropy.subarray(0, run.rec.recorded) : null;
      var lg = [{ label: "mean over the " + run.classes.K + " classes", color: th.c0 }];
      if (R) lg.push({ label: "T\u2192\u221e, same init", color: th.ref, dash: [5, 3] });
      if (ghost) lg.push({ label: "default run", color: th.ghost, width: GHOST.width });
      var ax = new Axes(ctx, box, { xlim: [0, run.values.steps], ylim: padLim(frame.y), xlabel: "step s", legend: lg,
        ylabel: ["entropy of c_n on distinct tokens", "entropy on distinct tokens", "entropy"] }, th);
      ax.frame();
      if (ghost) { var G = ghost.rec.entropy.subarray(0, ghost.rec.recorded); ax.line(range0(G.length), G, { color: th.ghost, width: GHOST.width, alpha: GHOST.alpha }); p.ghostMarks += 1; }
      if (R) ax.line(xs, R, { color: th.ref, dash: [5, 3], width: 1.4 });
      ax.line(xs, E, { color: th.c0 });
    },
    describe: function (run) {
      var E = run.rec.entropy, n = run.rec.recorded;
      return "Distinct-token entropy from " + fmt(E[0], 3) + " to " + fmt(E[n - 1], 3) + " at step " + (n - 1) + ".";
    },
    metrics: function (run) { return [["entropy", run.rec.entropy[run.rec.recorded - 1], -2]]; },
  };

  /** gamma(t) of Eq. 85 at each step (on momentum's clock), divided by its peak. */
  function gammaCurve(run) {
    var steps = run.values.steps, g = new Float64Array(steps + 1), gm = 0, s, cl = run.classes;
    for (s = 0; s <= steps; s++) { g[s] = YZ.gamma(YZ.clockTau(s, momentumOf(run.values)), cl.M, cl.K, run.values.eta_y, false); gm = Math.max(gm, g[s]); }
    if (gm > 0) for (s = 0; s <= steps; s++) g[s] /= gm;
    return g;
  }

  function tokenSeries(run, k) {
    var N = run.rec.recorded, ys = new Float64Array(N);
    for (var s = 0; s < N; s++) ys[s] = run.rec.rows[s * run.S0 + k];
    return ys;
  }

  VIEWS.scan = {
    title: "scan", height: 0.78, min: 360, max: 500, wide: true,
    range: function (run) {
      var N = run.rec.recorded;
      return { y: [0, maxOf(run.rec.rows, N * run.S0)] };
    },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var n = run.cls, S0 = run.S0, nc = run.nc, N = run.rec.recorded, steps = run.values.steps;
      var xs = range0(N), k, s;
      var top = { x: box.x, y: box.y, w: box.w, h: Math.round(box.h * 0.66) };
      var bot = { x: box.x, y: top.y + top.h, w: box.w, h: box.h - top.h };
      var lo = new Float64Array(N), hi = new Float64Array(N);
      for (s = 0; s < N; s++) {
        var r = row(run, s), a = Infinity, b = -Infinity;
        for (k = 0; k < nc; k++) { a = Math.min(a, r[k]); b = Math.max(b, r[k]); }
        lo[s] = a; hi[s] = b;
      }
      var col = function (t) { return viridis(t, th.dark); };
      var lg = [];
      if (nc) lg.push({ label: "common tokens (" + nc + ")", color: th.band, band: true });
      if (S0 > nc) lg.push({ label: "distinct, P low \u2192 high", gradient: col });
      if (ghost) lg.push({ label: "default run", color: th.ghost, width: GHOST.width });
      var on = sgd(run), t0 = t0Of(run), g0 = ghost && sgd(ghost) ? t0Of(ghost) : NaN;
      var oTop = { xlim: [0, steps], ylim: zeroLim(frame.y), noxticks: true, marks: true, legend: lg,
        ylabel: "c_{l|n}", title: ["Scan: attention of class " + n + "'s query on each token", "Scan: c_{l|n} of each token"] };
      var oBot = { xlim: [0, steps], ylim: [0, 1.12], yn: 2, ylabel: ["\u03b3 \u00f7 peak", "\u03b3"],
        xlabel: on ? ["step s;  \u03b3 (Eq. 85) and " + rateNote(run), "step s;  " + rateNote(run, true), "step s"] : "step s" };
      var ax = new Axes(ctx, top, oTop, th), bx = new Axes(ctx, bot, oBot, th);
      if (ax.r.x !== bx.r.x) {        // one x axis for both: the same left edge
        oTop.left = oBot.left = Math.max(ax.r.x, bx.r.x);
        ax = new Axes(ctx, top, oTop, th); bx = new Axes(ctx, bot, oBot, th);
      }
      ax.frame();
      if (ghost && ghost.S0 === S0) {
        for (k = ghost.nc; k < S0; k++) ax.line(range0(ghost.rec.recorded), tokenSeries(ghost, k), { color: th.ghost, width: 1.6, alpha: GHOST.alpha });
        if (isFinite(g0) && g0 <= steps) ax.line([g0, g0], [0, ax.o.ylim[1]], { color: th.ghost, width: 1.4, dash: [4, 3] });
        p.ghostMarks += 1;
      }
      if (nc) {
        ax.band(xs, lo, hi, th.band);
        ax.line(xs, lo, { color: th.ref, width: 1 }); ax.line(xs, hi, { color: th.ref, width: 1 });
      }
      for (k = nc; k < S0; k++) ax.line(xs, tokenSeries(run, k), { color: col((k - nc) / Math.max(1, S0 - nc - 1)), width: 1.4 });
      if (on && !ax.vline(t0, th.fg, "t_0")) ax.text("t_0 = " + fmt(t0, 3) + " \u2192", ax.r.x + ax.r.w, ax.markY(), "right", th.fg);
      // gamma(t) of Eq. 85 beneath, on the same steps, divided by its peak: when the signal comes and goes
      bx.frame();
      if (ghost && sgd(ghost)) bx.line(range0(ghost.values.steps + 1), gammaCurve(ghost), { color: th.ghost, width: GHOST.width, alpha: GHOST.alpha });
      if (on) {
        bx.line(range0(steps + 1), gammaCurve(run), { color: th.c1 });
        bx.vline(t0, th.fg);
      } else {
        bx.text("\u03b3(t) and t_0 (Eq. 85) are SGD's; not drawn for Adam", bx.r.x + 6, bx.r.y + bx.r.h / 2, "left", th.muted);
      }
    },
    describe: function (run) {
      return VIEWS.cn.describe(run) + (run.values.optimizer === "sgd" ? " t0 = " + fmt(t0Of(run), 3) + " steps." : "");
    },
    metrics: function (run) {
      var out = [["top token's share", topToken(run), 2]];
      if (sgd(run)) out.push(["t\u2080", t0Of(run), 2]);
      return out;
    },
  };

  // the change over each doubling [s, 2s] of the SGD steps, plotted at its start s (as chapter 5's
  // figure of the real model plots it; s counts steps, t is the theory's gradient-flow time)
  function snapSeries(run) {
    var xs = [], ys = [], N = run.rec.recorded;
    for (var s = 1; 2 * s < N; s *= 2) {
      var a = row(run, s), b = row(run, 2 * s), d = 0;
      for (var k = 0; k < run.S0; k++) d += Math.abs(b[k] - a[k]);
      xs.push(s); ys.push(d);
    }
    return { xs: xs, ys: ys };
  }

  VIEWS.snap = {
    title: "snap", height: 0.62, min: 250, max: 330,
    range: function (run) { return { y: span(snapSeries(run).ys, true) }; },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var sr = snapSeries(run), steps = run.values.steps, t0 = t0Of(run), on = sgd(run);
      var lg = [{ label: "this run", color: th.c0 }];
      if (ghost) lg.push({ label: "default run", color: th.ghost, width: GHOST.width });
      var ax = new Axes(ctx, box, { xlim: [0.75, Math.max(2, steps / 2) * 1.3], ylim: logLim(frame.y), xlog: true, marks: true,
        ylog: true, legend: lg, xlabel: on ? ["step s;  " + rateNote(run), "step s;  " + rateNote(run, true), "step s"] : "step s",
        ylabel: ["\u2016c_n(2s) \u2212 c_n(s)\u2016_1", "change"],
        title: ["Snap: change of c_n per doubling of s", "change of c_n per doubling of s"] }, th);
      ax.frame();
      if (ghost) { var gs = snapSeries(ghost); ax.line(gs.xs, gs.ys, { color: th.ghost, width: GHOST.width, alpha: GHOST.alpha }); p.ghostMarks += 1; }
      ax.line(sr.xs, sr.ys, { color: th.c0, marker: 3 });
      if (on && !ax.vline(t0, th.fg, "t_0")) {
        ax.text("t_0 = " + fmt(t0, 3) + (t0 > steps / 2 ? " \u2192" : ""), ax.r.x + ax.r.w, ax.markY(), "right", th.fg);
      }
    },
    describe: function (run) {
      var sr = snapSeries(run);
      if (!sr.ys.length) return "";
      var last = sr.ys.length - 1;
      return "Change of c_n over steps [" + sr.xs[last] + ", " + 2 * sr.xs[last] + "]: " + fmt(sr.ys[last], 3) +
             "; largest " + fmt(Math.max.apply(null, sr.ys), 3) + ".";
    },
    metrics: function (run) {
      var sr = snapSeries(run);
      return sr.ys.length ? [["last doubling's change", sr.ys[sr.ys.length - 1], 2]] : [];
    },
  };

  function shares(run, s) {
    var r = row(run, s), nc = run.nc, tot = 0, out = [];
    for (var k = nc; k < run.S0; k++) tot += r[k];
    for (k = nc; k < run.S0; k++) out.push(r[k] / tot);
    return out;
  }

  VIEWS.bars = {
    title: "bars", height: 0.58, min: 250, max: 330,
    range: function (run) {
      var s = run.rec.recorded - 1;
      return { y: [0, Math.max(maxOf(shares(run, s)), maxOf(shares(run, 0)))] };
    },
    draw: function (p, ctx, box, th, run, ghost, frame) {
      var s = run.rec.recorded - 1, sh = shares(run, s), sh0 = shares(run, 0), xs = range0(sh.length);
      var ent = run.rec.entropy[s], v = run.values;
      var lg = [{ label: "share at step " + s, color: th.c0, band: true }, { label: "at step 0", color: th.fg, dot: true }];
      var gh = ghost && ghost.S0 - ghost.nc === sh.length ? shares(ghost, ghost.rec.recorded - 1) : null;
      if (gh) lg.push({ label: "default run", color: th.ghost, hollow: true });
      var ax = new Axes(ctx, box, { xlim: [-0.7, sh.length - 0.3], ylim: zeroLim(frame.y), legend: lg,
        noxgrid: true, noxticks: true, xlabel: ["distinct tokens of class " + run.cls + ", by increasing P(l|n)", "distinct tokens by P"],
        ylabel: "share of c_n", title: ["\u03b7_Y/\u03b7_Z = " + fmt(v.eta_y / v.eta_z) + ", step " + s +
        ": entropy " + ent.toFixed(2), "entropy " + ent.toFixed(2)] }, th);
      ax.frame();
      ax.bars(xs, sh, th.c0, 0.7);
      if (gh) {                        // the default run's bars as outlines over the new ones
        var c = ax.ctx;
        ax.clip(); c.strokeStyle = th.ghost; c.lineWidth = 1.6;
        xs.forEach(function (x, i) { var x0 = ax.X(x - 0.4), x1 = ax.X(x + 0.4), y = ax.Y(gh[i]); c.strokeRect(x0, y, x1 - x0, ax.Y(0) - y); });
        c.restore();
        p.ghostMarks += 1;
      }
      ax.line(xs, sh0, { color: th.fg, dots: xs, marker: 2.8 });
    },
    describe: function (run) {
      var s = run.rec.recorded - 1, sh = shares(run, s);
      return "At step " + s + " the most frequent distinct token holds " + fmt(sh[sh.length - 1] * 100, 3) +
             "% of class " + run.cls + "'s distinct-token attention; entropy " + run.rec.entropy[s].toFixed(2) + ".";
    },
    metrics: function (run) {
      var s = run.rec.recorded - 1, sh = shares(run, s);
      return [["top share", Math.max.apply(null, sh), -2], ["entropy", run.rec.entropy[s], -2]];
    },
  };

  // ----------------------------------------------------------------------------------
  // Running jobs: a Worker from a Blob URL of the engine, else slices on the main thread
  // ----------------------------------------------------------------------------------

  var workerURL = null, workerBroken = false;

  function Runner(onSlice) {
    this.onSlice = onSlice; this.worker = null; this.busy = false; this.token = 0; this.job = null;
    this.mode = "worker";
  }

  Runner.prototype.start = function (job) {
    this.job = job;
    this.token += 1;
    if (!workerBroken) {
      try {
        if (this.worker && this.busy) { this.worker.terminate(); this.worker = null; }
        if (!this.worker) {
          if (!workerURL) workerURL = URL.createObjectURL(new Blob([YZ.workerSource()], { type: "text/javascript" }));
          var w = new Worker(workerURL), self = this;
          w.onmessage = function (e) { if (w === self.worker) self.receive(e.data); };
          w.onerror = function (e) {
            // a page that forbids blob: workers: run on the main thread from now on
            if (e && e.preventDefault) e.preventDefault();
            if (w !== self.worker) return;
            workerBroken = true; self.worker = null; self.startMain(self.job);
          };
          this.worker = w;
        }
        this.busy = true;
        this.mode = "worker";
        this.worker.postMessage(job);
        return;
      } catch (err) {
        workerBroken = true;
        this.worker = null;
      }
    }
    this.startMain(job);
  };

  Runner.prototype.receive = function (msg) {
    if (this.job && msg.id !== this.job.id) return;
    if (msg.type === "error" || msg.done) this.busy = false;
    this.onSlice(msg);
  };

  Runner.prototype.startMain = function (job) {
    var token = ++this.token, self = this, run, t0 = now();
    this.mode = "main thread";
    try { run = new YZ.Run(job); } catch (err) { this.onSlice({ type: "error", id: job.id, message: String(err.message || err) }); return; }
    var tick = function () {
      if (token !== self.token) return;
      var sl = run.advance(12, now);
      sl.type = "slice"; sl.id = job.id; sl.ms = now() - t0;
      self.onSlice(sl);
      if (!sl.done) setTimeout(tick, 0);
    };
    tick();
  };

  // ----------------------------------------------------------------------------------
  // The panel
  // ----------------------------------------------------------------------------------

  function Panel(el, cfg) {
    this.el = el; this.cfg = cfg;
    this.values = {};
    for (var k in cfg.values) this.values[k] = cfg.values[k] === "inf" ? Infinity : cfg.values[k];
    this.defaults = copy(this.values);
    this.views = cfg.views;
    this.ends = {};
    this.jobId = 0; this.runs = 0; this.tInput = null; this.rec = null;
    this.frame = null;          // the axes' extents per view: {view: {key: [lo, hi]}}
    this.ghost = null;          // the default run, drawn faintly once a slider has moved
    this.cur = null;            // the run on show
    this.phase = "load";        // load (the default run) -> frame (the main slider's ends) -> ready
    this.runner = new Runner(this.onSlice.bind(this));
    this.build();
  }

  function copy(o) { var out = {}; for (var k in o) out[k] = o[k]; return out; }

  function sameValues(a, b) { for (var k in a) if (a[k] !== b[k]) return false; return true; }

  /** The slider whose two ends set the axes: cfg.main, else the first slider (not a select). */
  Panel.prototype.mainControl = function () {
    if (this.cfg.main) return this.cfg.main;
    for (var i = 0; i < this.cfg.controls.length; i++) if (CONTROLS[this.cfg.controls[i]].kind !== "select") return this.cfg.controls[i];
    return null;
  };

  Panel.prototype.build = function () {
    var el = this.el, cfg = this.cfg, self = this;
    var ui = document.createElement("div");
    ui.className = "yz-ui";
    if (cfg.title) { var t = document.createElement("div"); t.className = "yz-title"; t.textContent = cfg.title; ui.appendChild(t); }
    if (cfg.question) { var q = document.createElement("p"); q.className = "yz-question"; q.innerHTML = cfg.question; ui.appendChild(q); }
    var ctl = document.createElement("div");
    ctl.className = "yz-controls";
    this.controlEls = {};
    cfg.controls.forEach(function (name) { var c = makeControl(self, name); self.controlEls[name] = c; ctl.appendChild(c); });
    if (cfg.controls.length) ui.appendChild(ctl);
    var vw = document.createElement("div");
    vw.className = "yz-views";
    this.canvases = {};
    // wide views span the row; so does the last narrow one when the narrow ones are odd in number
    var narrow = this.views.filter(function (v) { return !VIEWS[v].wide; });
    this.views.forEach(function (v) {
      var wide = VIEWS[v].wide || (narrow.length % 2 === 1 && v === narrow[narrow.length - 1]);
      var fig = document.createElement("figure");
      fig.className = "yz-view yz-view-" + v + (wide && self.views.length > 1 ? " yz-wide" : "");
      var cv = document.createElement("canvas");
      cv.setAttribute("role", "img");
      cv.setAttribute("aria-label", VIEWS[v].title);
      fig.appendChild(cv);
      vw.appendChild(fig);
      self.canvases[v] = cv;
    });
    ui.appendChild(vw);
    this.diff = document.createElement("div");
    this.diff.className = "yz-diff";
    ui.appendChild(this.diff);
    this.status = document.createElement("div");
    this.status.className = "yz-status";
    this.status.setAttribute("aria-live", "polite");
    ui.appendChild(this.status);
    var fb = el.querySelector(".yzlive-fallback");
    if (fb) fb.hidden = true;
    el.appendChild(ui);
    el.setAttribute("data-yzlive-runs", "0");
    el.setAttribute("data-yzlive-state", "starting");
    el.setAttribute("data-yzlive-main", this.mainControl() || "");
    // redraw on resize and on a light/dark switch
    var again = function () { self.requestDraw(); };
    if (root.ResizeObserver) { this.lastW = 0; new ResizeObserver(function () {
      if (el.clientWidth !== self.lastW) { self.lastW = el.clientWidth; again(); } }).observe(el); }
    if (root.matchMedia) { var mq = root.matchMedia("(prefers-color-scheme: dark)"); if (mq.addEventListener) mq.addEventListener("change", again); }
    if (root.MutationObserver) {
      var mo = new MutationObserver(again);
      mo.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme", "class"] });
      if (document.body) mo.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] });
    }
    this.start("load", this.values);
  };

  Panel.prototype.set = function (name, value, how) {
    this.values[name] = value;
    if (this.phase === "frame") this.phase = "ready";   // the reader moved first: the frame grows as runs come
    this.tInput = now();
    this.start(how, this.values);
  };

  function dataSpec(cfg, v) {
    var d = {};
    for (var k in cfg.data) d[k] = cfg.data[k];
    if (v.num_last !== undefined) d.numLast = v.num_last;
    if (v.num_distinct !== undefined) d.numDistinct = v.num_distinct;
    return d;
  }

  Panel.prototype.snapSteps = function (v) {
    var steps = v.steps, out = {};
    (this.cfg.cn_steps || []).forEach(function (s) { if (s <= steps) out[s] = 1; });
    out[steps] = 1;
    return Object.keys(out).map(Number).sort(function (a, b) { return a - b; });
  };

  /** Start a run with values `v` (the reader's, or the default with the main slider at one end). */
  Panel.prototype.start = function (how, v) {
    v = copy(v);
    var classes = YZ.classesFromSpec(dataSpec(this.cfg, v)), cls = Math.min(this.cfg.cls || 0, classes.K - 1);
    var limit = v.T === Infinity, S0 = classes.order[cls].length;
    var job = { id: ++this.jobId, data: dataSpec(this.cfg, v), etaY: v.eta_y, etaZ: v.eta_z, steps: v.steps, batch: v.batch,
                T: limit ? "inf" : v.T, seed: v.seed, optimizer: v.optimizer, momentum: v.momentum, init: v.init,
                cls: cls, reference: !!this.cfg.reference && !limit &&
                  (this.views.indexOf("loss") >= 0 || this.views.indexOf("entropy") >= 0) };
    var steps = v.steps;
    var rec = { loss: new Float64Array(steps), entropy: new Float64Array(steps + 1), rows: new Float64Array((steps + 1) * S0),
                refLoss: job.reference ? new Float64Array(steps) : null,
                refEntropy: job.reference ? new Float64Array(steps + 1) : null, recorded: 0, nLoss: 0 };
    this.job = { run: { rec: rec, values: v, classes: classes, cls: cls, S0: S0, nc: classes.nCommon[cls], limit: limit,
                        snaps: this.snapSteps(v) }, how: how };
    if (how !== "frame") this.tStart = this.tInput === null ? now() : this.tInput;
    this.el.setAttribute("data-yzlive-state", "running");
    this.runner.start(job);
  };

  /** Grow the frame to hold a finished run (never shrink it: the axes stay as they were). */
  Panel.prototype.hold = function (run) {
    var f = this.frame || (this.frame = {});
    this.views.forEach(function (v) {
      var r = VIEWS[v].range(run), fv = f[v] || (f[v] = {});
      for (var k in r) {
        if (!r[k]) continue;
        fv[k] = fv[k] ? [Math.min(fv[k][0], r[k][0]), Math.max(fv[k][1], r[k][1])] : [r[k][0], r[k][1]];
      }
    });
  };

  Panel.prototype.frameEnds = function () {
    var main = this.mainControl(), ends = main && this.ends[main], self = this;
    if (!ends) return [];
    return ends.filter(function (x) { return x !== self.defaults[main]; }).map(function (x) {
      var v = copy(self.defaults); v[main] = x; return v;
    });
  };

  Panel.prototype.onSlice = function (m) {
    if (m.id !== this.jobId) return;
    var job = this.job, run = job.run;
    if (m.type === "error") {
      if (job.how === "frame") { this.nextFrame(); return; }          // an end too large to train: skip it
      this.el.setAttribute("data-yzlive-state", "error");
      this.setStatus("Cannot train: " + m.message, true);
      return;
    }
    var r = run.rec;
    r.loss.set(m.loss, m.fromLoss); r.entropy.set(m.entropy, m.from); r.rows.set(m.rows, m.from * run.S0);
    if (r.refLoss && m.refLoss) { r.refLoss.set(m.refLoss, m.fromLoss); r.refEntropy.set(m.refEntropy, m.from); }
    r.recorded = m.to; r.nLoss = m.toLoss;
    if (job.how === "frame") {
      if (m.done) {
        if (m.diverged === null) this.hold(run);       // a diverged end would stretch the axes to its blow-up
        this.nextFrame();
      }
      return;
    }
    this.cur = run;
    if (!m.done) {
      this.setStatus("training\u2026 step " + m.toLoss + " of " + run.values.steps, false);
      this.requestDraw();
      return;
    }
    this.hold(run);
    this.last = { ms: m.ms, diverged: m.diverged, run: run };
    if (job.how === "load") {
      this.ghost = run;
      this.draw();
      this.frameQueue = this.frameEnds();
      this.phase = "frame";
      var main = this.mainControl();
      this.setStatus("Trained in your browser; now the runs at the two ends of the " +
                     (main ? CONTROLS[main].label : "") + " slider, to fix the axes\u2026", false, true);
      this.nextFrame();
      return;
    }
    this.finish();
  };

  Panel.prototype.nextFrame = function () {
    if (this.phase === "frame" && this.frameQueue.length) { this.start("frame", this.frameQueue.shift()); return; }
    this.phase = "ready";
    this.cur = this.ghost;
    this.finish();
  };

  Panel.prototype.finish = function () {
    var m = this.last, run = m.run;
    this.draw();
    var ms = now() - this.tStart;
    this.runs += 1;
    this.el.setAttribute("data-yzlive-runs", String(this.runs));
    this.el.setAttribute("data-yzlive-ms", ms.toFixed(1));
    this.el.setAttribute("data-yzlive-train-ms", m.ms.toFixed(1));
    this.el.setAttribute("data-yzlive-mode", this.runner.mode);
    this.el.setAttribute("data-yzlive-frame", JSON.stringify(this.limits()));
    var v = run.values, what;
    if (run.limit) what = "expected gradient (T \u2192 \u221e, all " + run.classes.K + " classes)";
    else what = "batch " + v.batch + ", T = " + v.T + ", seed " + v.seed;
    var opt = v.optimizer === "sgd" ? "SGD" + (v.momentum ? " (momentum " + fmt(v.momentum) + ")" : "") : "Adam";
    if (m.diverged !== null) {
      this.el.setAttribute("data-yzlive-state", "diverged");
      this.setStatus("Diverged at step " + m.diverged + " (non-finite loss): try a smaller \u03b7. Drawn up to there.", true);
    } else {
      this.el.setAttribute("data-yzlive-state", "done");
      this.setStatus("Trained in your browser: " + v.steps + " steps of " + opt + ", " + what + ", in " +
                     (m.ms / 1000).toFixed(2) + " s.", false);
    }
    this.setDiff(run);
  };

  /** One line: what changed against the default run (its numbers, then this run's). */
  Panel.prototype.setDiff = function (run) {
    var seen = {}, parts = [], ghost = this.ghost;
    var ghostShown = ghost && run !== ghost && !sameValues(run.values, this.defaults);
    this.views.forEach(function (v) {
      var now_ = VIEWS[v].metrics(run), then = ghost ? VIEWS[v].metrics(ghost) : [];
      now_.forEach(function (mt, i) {
        if (seen[mt[0]] || parts.length >= 3) return;
        seen[mt[0]] = 1;
        var show = function (x) { return mt[2] < 0 ? x.toFixed(-mt[2]) : fmt(x, mt[2]); };
        var a = then[i] && then[i][0] === mt[0] ? show(then[i][1]) : "?", b = show(mt[1]);
        parts.push(ghostShown ? mt[0] + " " + a + " \u2192 " + b : mt[0] + " " + b);
      });
    });
    var text = ghostShown ? "Against the default run (grey): " + parts.join("; ") + "."
                          : "Default run: " + parts.join("; ") + ". Move a slider: this run stays behind the new one, in grey.";
    this.diff.textContent = text.replace(/t_0/g, "t\u2080");
    this.el.setAttribute("data-yzlive-diff", this.diff.textContent);
  };

  Panel.prototype.setStatus = function (text, bad, html) {
    if (html) this.status.innerHTML = text;      // only the panel's own labels (CONTROLS), never the reader's input
    else this.status.textContent = text;
    this.status.className = "yz-status" + (bad ? " yz-bad" : "");
  };

  Panel.prototype.requestDraw = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    (root.requestAnimationFrame || setTimeout)(function () { self.pending = false; self.draw(); });
  };

  /** The axes' extents per view: the frame, or (before it exists) the run on show. */
  Panel.prototype.frameOf = function (v, run) {
    return (this.frame && this.frame[v]) || VIEWS[v].range(run);
  };

  Panel.prototype.limits = function () {
    var out = {}, self = this;
    this.views.forEach(function (v) {
      var f = self.frame && self.frame[v], o = {};
      for (var k in f) o[k] = f[k].map(function (x) { return Number(x.toPrecision(6)); });
      out[v] = o;
    });
    return out;
  };

  Panel.prototype.draw = function () {
    var run = this.cur;
    if (!run || run.rec.recorded < 1) return;
    var th = theme(this.el), dpr = root.devicePixelRatio || 1, self = this;
    // the default run behind the current one once the reader has moved a slider (same tokens only)
    var ghost = this.ghost && run !== this.ghost && !sameValues(run.values, this.defaults) ? this.ghost : null;
    this.ghostMarks = 0;
    this.views.forEach(function (v) {
      var cv = self.canvases[v], spec = VIEWS[v], w = cv.clientWidth || cv.parentNode.clientWidth || 600;
      var h = Math.round(Math.min(spec.max, Math.max(spec.min, w * spec.height)));
      if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
        cv.width = Math.round(w * dpr); cv.height = Math.round(h * dpr); cv.style.height = h + "px";
      }
      var ctx = cv.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = th.bg; ctx.fillRect(0, 0, w, h);
      spec.draw(self, ctx, { x: 4, y: 4, w: w - 8, h: h - 8 }, th, run, ghost, self.frameOf(v, run));
      try { cv.setAttribute("aria-label", spec.title + ". " + spec.describe(run)); } catch (e) { /* partial data */ }
    });
    this.el.setAttribute("data-yzlive-ghost", String(this.ghostMarks));
    this.el.setAttribute("data-yzlive-drawn-dark", th.dark ? "1" : "0");
  };

  function initAll(scope) {
    var els = (scope || document).querySelectorAll(".yzlive-panel:not([data-yzlive-runs])"), out = [];
    for (var i = 0; i < els.length; i++) {
      var el = els[i], cfgEl = el.querySelector("script.yzlive-config");
      if (!cfgEl) continue;
      try {
        out.push(new Panel(el, JSON.parse(cfgEl.textContent)));
      } catch (err) {
        // leave the static figure in place and say why
        var fb = el.querySelector(".yzlive-fallback");
        if (fb) fb.hidden = false;
        if (root.console) console.warn("yzlive: panel not started: " + err.message);
      }
    }
    (root.YZLivePanel.panels = root.YZLivePanel.panels || []).push.apply(root.YZLivePanel.panels, out);
    return out;
  }

  root.YZLivePanel = { initAll: initAll, VIEWS: VIEWS, CONTROLS: CONTROLS, ladder: ladder, panels: [] };
})(typeof window !== "undefined" ? window : this);
