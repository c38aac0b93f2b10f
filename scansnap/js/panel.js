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
    var show = function (v) {
      out.textContent = fmt(v);
      input.setAttribute("aria-valuetext", fmt(v));
    };
    show(value);
    input.addEventListener("input", function () {
      var v = toValue(Number(input.value));
      show(v);
      panel.set(name, v, "input");
    });
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
             dark: g("--yz-dark") === "1" };
  }

  var VIRIDIS = [[68, 1, 84], [65, 68, 135], [42, 120, 142], [34, 168, 132], [122, 209, 81], [253, 231, 37]];
  function viridis(t, dark) {
    t = dark ? 0.25 + 0.75 * t : 0.9 * t;            // the darkest purple vanishes on a dark page
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
    var left = box.x + (o.ylabel ? fs + 8 : 0) + yw + 8;
    var top = box.y + (o.title ? fs + 10 : 6);
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
    c.restore();
  };

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
    if (label) richText(c, label, X + 4, this.r.y + this.fs * 0.7 + 2, this.fs, "left", color);
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

  /** entries: {label, color, dash, band, dot, gradient: t -> colour} in the corner `where` (ne | nw | se | sw). */
  Axes.prototype.legend = function (entries, where, series) {
    var c = this.ctx, fs = this.fs - 1, th = this.th, pad = 5, sw = 22, lh = fs + 5, self = this;
    var w = 0;
    entries.forEach(function (e) { w = Math.max(w, richWidth(c, e.label, fs)); });
    w += sw + 3 * pad; var h = entries.length * lh + pad;
    var r = this.r;
    var at = function (wh) {
      return [wh[1] === "w" ? r.x + 6 : r.x + r.w - w - 6, wh[0] === "s" ? r.y + r.h - h - 6 : r.y + 6];
    };
    if (series) {   // the corner that hides the fewest points of `series` ([[xs, ys], ...]); `where` first on ties
      var best = null, bestN = Infinity;
      [where, "ne", "nw", "se", "sw"].forEach(function (wh) {
        var p = at(wh), n = 0;
        series.forEach(function (sr) {
          for (var i = 0; i < sr[0].length; i++) {
            var X = self.X(sr[0][i]), Y = self.Y(sr[1][i]);
            if (X >= p[0] - 4 && X <= p[0] + w + 4 && Y >= p[1] - 4 && Y <= p[1] + h + 4) n++;
          }
        });
        if (n < bestN) { bestN = n; best = wh; }
      });
      where = best;
    }
    var xy = at(where || "ne"), x = xy[0], y = xy[1];
    c.save();
    c.globalAlpha = 0.85; c.fillStyle = th.bg; c.fillRect(x, y, w, h); c.globalAlpha = 1;
    c.strokeStyle = th.grid; c.strokeRect(x + 0.5, y + 0.5, w, h);
    entries.forEach(function (e, i) {
      var yy = y + pad + i * lh + lh / 2 - 2, x0 = x + pad;
      if (e.band) { c.fillStyle = e.color; c.fillRect(x0, yy - 4, sw, 8); }
      else if (e.dot) { c.fillStyle = e.color; c.beginPath(); c.arc(x0 + sw / 2, yy, 2.8, 0, 2 * Math.PI); c.fill(); }
      else if (e.gradient) {
        for (var k = 0; k < sw; k++) { c.fillStyle = e.gradient(k / (sw - 1)); c.fillRect(x0 + k, yy - 4, 1.2, 8); }
      } else {
        c.strokeStyle = e.color; c.lineWidth = 1.8; c.setLineDash(e.dash || []);
        c.beginPath(); c.moveTo(x0, yy); c.lineTo(x0 + sw, yy); c.stroke(); c.setLineDash([]);
      }
      richText(c, e.label, x0 + sw + pad, yy, fs, "left", th.fg);
    });
    c.restore();
  };

  function extent(arrs, log) {
    var lo = Infinity, hi = -Infinity;
    arrs.forEach(function (a) {
      for (var i = 0; i < a.length; i++) {
        var v = a[i];
        if (!isFinite(v) || (log && v <= 0)) continue;
        if (v < lo) lo = v; if (v > hi) hi = v;
      }
    });
    if (!(lo <= hi)) return log ? [0.1, 1] : [0, 1];
    if (log) { if (hi / lo < 10) { var m = Math.sqrt(hi * lo); lo = Math.min(lo, m / 3.2); hi = Math.max(hi, m * 3.2); } return [lo / 1.3, hi * 1.3]; }
    if (hi - lo < 1e-12) { lo -= 0.5; hi += 0.5; }
    var pad = 0.06 * (hi - lo);
    return [lo - pad, hi + pad];
  }

  function range0(n, start) { var a = new Array(n); for (var i = 0; i < n; i++) a[i] = i + (start || 0); return a; }

  // ----------------------------------------------------------------------------------
  // The views (each draws from the run's records: loss[s], entropy[s], rows[s] = c_n at step s)
  // ----------------------------------------------------------------------------------

  // Momentum's clock (the intro's box, chapter 5): gamma is drawn against tau(s) and t_0 marked
  // where tau reaches it (YZ.clockTau, YZ.clockSteps).
  function momentumOf(p) { return p.values.optimizer === "sgd" ? p.values.momentum : 0; }

  function t0Plain(p) {
    var c = p.classes;
    try { return YZ.transitionTime(c.M, c.K, p.values.eta_y); } catch (e) { return NaN; }   // M < 4: no t_0
  }

  function rateNote(p, short) {
    var v = p.values;
    if (v.optimizer !== "sgd") return null;
    var t0 = t0Of(p), head = "t_0" + (isFinite(t0) ? " = " + fmt(t0, 2) : "");   // its value, in steps
    if (!v.momentum) return head + " (plain SGD at \u03b7_Y = " + fmt(v.eta_y) + ")";
    return head + (short ? " (momentum's clock)" : " on momentum's clock (\u03b2 = " + fmt(v.momentum) +
      "; plain SGD: " + fmt(t0Plain(p), 3) + ")");
  }

  function t0Of(p) { return YZ.clockSteps(t0Plain(p), momentumOf(p)); }


  function row(p, s) { return p.rec.rows.subarray(s * p.S0, (s + 1) * p.S0); }

  var VIEWS = {};

  VIEWS.cn = {
    title: "c_n over class tokens", height: 0.55, min: 250, max: 330, wide: true,
    draw: function (p, ctx, box, th) {
      var cl = p.classes, n = p.cls, S0 = p.S0, nc = cl.nCommon[n];
      var steps = p.snapSteps().filter(function (s) { return s < p.rec.recorded; });
      var ys = steps.map(function (s) { return row(p, s); });
      var yl = extent(ys.concat([[0]]), false);
      yl[0] = 0;
      var ax = new Axes(ctx, box, { xlim: [-0.6, S0 - 0.4], ylim: yl, noxticks: true, noxgrid: true,
        ylabel: ["attention c_{l|n} (Eq. 5)", "c_{l|n}"], xlabel: ["token of class " + n + " (next token " + cl.next[n] +
        "): common, then distinct by increasing P", "token of class " + n + ": common, then distinct by P", "token"] }, th);
      if (nc) ax.xspan(-0.5, nc - 0.5, th.band);
      ax.frame();
      var every = Math.max(1, Math.ceil(S0 / (ax.r.w / 22)));
      for (var k = 0; k < S0; k += every) ax.text(String(cl.order[n][k]), ax.X(k), ax.r.y + ax.r.h + ax.fs * 0.5 + 4, "center", th.muted, ax.fs - 1);
      if (nc) ax.text("common", ax.X((nc - 1) / 2), ax.r.y + ax.fs, "center", th.muted);
      if (S0 > nc) ax.text("distinct (P \u2192)", ax.X(nc + (S0 - nc - 1) / 2), ax.r.y + ax.fs, "center", th.muted);
      var xs = range0(S0), all = p.snapSteps(), legend = [];
      steps.forEach(function (s, i) {
        var col = viridis(all.indexOf(s) / Math.max(1, all.length - 1), th.dark);
        ax.line(xs, ys[i], { color: col, marker: 2.5, width: 1.4 });
        legend.push({ label: "step " + s, color: col });
      });
      if (legend.length) ax.legend(legend, "nw", ys.map(function (y) { return [xs, y]; }));
    },
    describe: function (p) {
      var last = p.rec.recorded - 1, r = row(p, last), nc = p.classes.nCommon[p.cls], com = 0, dis = 0;
      for (var k = 0; k < p.S0; k++) (k < nc ? (com += r[k]) : (dis += r[k]));
      return "Attention c_n of class " + p.cls + " at step " + last + ": " + fmt(com, 2) + " on common tokens, " +
             fmt(dis, 2) + " on distinct tokens.";
    },
  };

  VIEWS.loss = {
    title: "loss", height: 0.62, min: 220, max: 290,
    draw: function (p, ctx, box, th) {
      var L = p.rec.loss.subarray(0, p.rec.nLoss), xs = range0(L.length);
      var R = p.rec.refLoss ? p.rec.refLoss.subarray(0, p.rec.nLoss) : null;
      var ax = new Axes(ctx, box, { xlim: [0, Math.max(1, p.values.steps - 1)], ylim: extent(R ? [L, R] : [L], true),
        ylog: true, xlabel: "step", ylabel: "training loss" }, th);
      ax.frame();
      if (R) ax.line(xs, R, { color: th.ref, dash: [5, 3], width: 1.4 });
      ax.line(xs, L, { color: th.c0 });
      var lg = [{ label: p.limit ? "expected loss (T\u2192\u221e)" : "batch loss", color: th.c0 }];
      if (R) lg.push({ label: "T\u2192\u221e, same init", color: th.ref, dash: [5, 3] });
      ax.legend(lg, "ne", R ? [[xs, L], [xs, R]] : [[xs, L]]);
    },
    describe: function (p) {
      var L = p.rec.loss, n = p.rec.nLoss;
      return n ? "Training loss from " + fmt(L[0], 3) + " at step 0 to " + fmt(L[n - 1], 3) + " at step " + (n - 1) + "." : "";
    },
  };

  VIEWS.entropy = {
    title: "distinct-token entropy", height: 0.62, min: 220, max: 290,
    draw: function (p, ctx, box, th) {
      var E = p.rec.entropy.subarray(0, p.rec.recorded), xs = range0(E.length);
      var R = p.rec.refEntropy ? p.rec.refEntropy.subarray(0, p.rec.recorded) : null;
      var yl = extent(R ? [E, R] : [E], false);
      var ax = new Axes(ctx, box, { xlim: [0, p.values.steps], ylim: yl, xlabel: "step",
        ylabel: ["entropy of c_n on distinct tokens", "entropy on distinct tokens", "entropy"] }, th);
      ax.frame();
      if (R) ax.line(xs, R, { color: th.ref, dash: [5, 3], width: 1.4 });
      ax.line(xs, E, { color: th.c0 });
      var lg = [{ label: "mean over the " + p.classes.K + " classes", color: th.c0 }];
      if (R) lg.push({ label: "T\u2192\u221e, same init", color: th.ref, dash: [5, 3] });
      ax.legend(lg, "ne", R ? [[xs, E], [xs, R]] : [[xs, E]]);
    },
    describe: function (p) {
      var E = p.rec.entropy, n = p.rec.recorded;
      return "Distinct-token entropy from " + fmt(E[0], 3) + " to " + fmt(E[n - 1], 3) + " at step " + (n - 1) + ".";
    },
  };

  VIEWS.scan = {
    title: "scan", height: 0.72, min: 330, max: 460, wide: true,
    draw: function (p, ctx, box, th) {
      var cl = p.classes, n = p.cls, S0 = p.S0, nc = cl.nCommon[n], N = p.rec.recorded, steps = p.values.steps;
      var xs = range0(N), k, s;
      var top = { x: box.x, y: box.y, w: box.w, h: Math.round(box.h * 0.64) };
      var bot = { x: box.x, y: top.y + top.h, w: box.w, h: box.h - top.h };
      var lo = new Float64Array(N), hi = new Float64Array(N), ymax = 0;
      for (s = 0; s < N; s++) {
        var r = row(p, s), a = Infinity, b = -Infinity;
        for (k = 0; k < S0; k++) { if (k < nc) { a = Math.min(a, r[k]); b = Math.max(b, r[k]); } ymax = Math.max(ymax, r[k]); }
        lo[s] = a; hi[s] = b;
      }
      var ax = new Axes(ctx, top, { xlim: [0, steps], ylim: [0, (ymax || 1) * 1.08], noxticks: true,
        ylabel: "c_{l|n}", title: ["Scan: attention of class " + n + "'s query on each token", "Scan: c_{l|n} of each token"] }, th);
      ax.frame();
      if (nc) {
        ax.band(xs, lo, hi, th.band);
        ax.line(xs, lo, { color: th.ref, width: 1 }); ax.line(xs, hi, { color: th.ref, width: 1 });
      }
      var col = function (t) { return viridis(t, th.dark); };
      for (k = nc; k < S0; k++) {
        var ys = new Float64Array(N);
        for (s = 0; s < N; s++) ys[s] = p.rec.rows[s * S0 + k];
        ax.line(xs, ys, { color: col((k - nc) / Math.max(1, S0 - nc - 1)), width: 1.4 });
      }
      var t0 = t0Of(p), sgd = p.values.optimizer === "sgd" && isFinite(t0);
      if (sgd) ax.vline(t0, th.fg, "t_0");
      var lg = [];
      if (nc) lg.push({ label: "common tokens (" + nc + ")", color: th.band, band: true });
      if (S0 > nc) lg.push({ label: "distinct, P low \u2192 high", gradient: col });
      var ser = [[xs, lo], [xs, hi]];
      for (k = nc; k < S0; k++) ser.push([xs, Array.prototype.map.call(xs, function (s2) { return p.rec.rows[s2 * S0 + k]; })]);
      ax.legend(lg, "ne", ser);
      // gamma(t) of Eq. 85 beneath, on the same steps
      var g = new Float64Array(steps + 1), gm = 0;
      if (sgd) for (s = 0; s <= steps; s++) { g[s] = YZ.gamma(YZ.clockTau(s, momentumOf(p)), cl.M, cl.K, p.values.eta_y, false); gm = Math.max(gm, g[s]); }
      var bx = new Axes(ctx, bot, { xlim: [0, steps], ylim: [0, (gm || 1) * 1.1],
        xlabel: sgd ? ["step t;  \u03b3 (Eq. 85) and " + rateNote(p), "step t;  " + rateNote(p, true), "step t"] : "step t",
        ylabel: "\u03b3(t)", yn: 2 }, th);
      bx.frame();
      if (sgd) {
        bx.line(range0(steps + 1), g, { color: th.c1 });
        bx.vline(t0, th.fg);
        if (!(t0 <= steps)) bx.text("t_0 = " + fmt(t0, 3) + " \u2192", bx.r.x + bx.r.w - 4, bx.r.y + bx.fs, "right", th.fg);
      } else {
        bx.text("\u03b3(t) and t_0 (Eq. 85) are SGD's; not drawn for Adam", bx.r.x + 6, bx.r.y + bx.r.h / 2, "left", th.muted);
      }
    },
    describe: function (p) {
      var t0 = t0Of(p);
      return VIEWS.cn.describe(p) + (p.values.optimizer === "sgd" ? " t0 = " + fmt(t0, 3) + " steps." : "");
    },
  };

  function snapSeries(p) {
    var xs = [], ys = [], N = p.rec.recorded;
    for (var t = 2; t < N; t *= 2) {
      var a = row(p, t / 2), b = row(p, t), d = 0;
      for (var k = 0; k < p.S0; k++) d += Math.abs(b[k] - a[k]);
      xs.push(t); ys.push(d);
    }
    return { xs: xs, ys: ys };
  }

  VIEWS.snap = {
    title: "snap", height: 0.62, min: 240, max: 320,
    draw: function (p, ctx, box, th) {
      var sr = snapSeries(p), steps = p.values.steps, t0 = t0Of(p);
      var sgd = p.values.optimizer === "sgd" && isFinite(t0);
      var ax = new Axes(ctx, box, { xlim: [1.5, Math.max(4, steps) * 1.3], ylim: extent([sr.ys], true), xlog: true,
        ylog: true, xlabel: sgd ? ["step t;  " + rateNote(p), "step t;  " + rateNote(p, true), "step t"] : "step t",
        ylabel: ["\u2016c_n(t) \u2212 c_n(t/2)\u2016_1", "change"],
        title: ["Snap: change of c_n per doubling of t", "change of c_n per doubling of t"] }, th);
      ax.frame();
      ax.line(sr.xs, sr.ys, { color: th.c0, marker: 3 });
      if (sgd && !ax.vline(t0, th.fg, "t_0")) {
        ax.text("t_0 = " + fmt(t0, 3) + (t0 > steps ? " \u2192" : ""), ax.r.x + ax.r.w - 4, ax.r.y + ax.fs, "right", th.fg);
      }
    },
    describe: function (p) {
      var sr = snapSeries(p);
      if (!sr.ys.length) return "";
      var last = sr.ys.length - 1;
      return "Change of c_n over [" + sr.xs[last] / 2 + ", " + sr.xs[last] + "]: " + fmt(sr.ys[last], 3) +
             "; largest " + fmt(Math.max.apply(null, sr.ys), 3) + ".";
    },
  };

  function shares(p, s) {
    var r = row(p, s), nc = p.classes.nCommon[p.cls], tot = 0, out = [];
    for (var k = nc; k < p.S0; k++) tot += r[k];
    for (k = nc; k < p.S0; k++) out.push(r[k] / tot);
    return out;
  }

  VIEWS.bars = {
    title: "bars", height: 0.58, min: 240, max: 320,
    draw: function (p, ctx, box, th) {
      var s = p.rec.recorded - 1, sh = shares(p, s), sh0 = shares(p, 0), xs = range0(sh.length);
      var ent = p.rec.entropy[s], v = p.values;
      var ax = new Axes(ctx, box, { xlim: [-0.7, sh.length - 0.3], ylim: [0, Math.max.apply(null, sh.concat(sh0)) * 1.12],
        noxgrid: true, noxticks: true, xlabel: ["distinct tokens of class " + p.cls + ", by increasing P(l|n)", "distinct tokens by P"],
        ylabel: "share of c_n", title: ["\u03b7_Y/\u03b7_Z = " + fmt(v.eta_y / v.eta_z) + ", step " + s +
        ": entropy " + ent.toFixed(2), "entropy " + ent.toFixed(2)] }, th);
      ax.frame();
      ax.bars(xs, sh, th.c0, 0.7);
      ax.line(xs, sh0, { color: th.fg, dots: xs, marker: 2.8 });
      ax.legend([{ label: "share at step " + s, color: th.c0, band: true },
                 { label: "at step 0", color: th.fg, dot: true }], "nw", [[xs, sh], [xs, sh0], [xs, sh.map(function () { return 0; })]]);
    },
    describe: function (p) {
      var s = p.rec.recorded - 1, sh = shares(p, s);
      return "At step " + s + " the most frequent distinct token holds " + fmt(sh[sh.length - 1] * 100, 3) +
             "% of class " + p.cls + "'s distinct-token attention; entropy " + p.rec.entropy[s].toFixed(2) + ".";
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
    this.views = cfg.views;
    this.cls = cfg.cls || 0;
    this.jobId = 0; this.runs = 0; this.tInput = null; this.rec = null;
    this.runner = new Runner(this.onSlice.bind(this));
    this.build();
  }

  Panel.prototype.snapSteps = function () {
    var steps = this.values.steps, out = {};
    (this.cfg.cn_steps || []).forEach(function (s) { if (s <= steps) out[s] = 1; });
    out[steps] = 1;
    return Object.keys(out).map(Number).sort(function (a, b) { return a - b; });
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
    this.status = document.createElement("div");
    this.status.className = "yz-status";
    this.status.setAttribute("aria-live", "polite");
    ui.appendChild(this.status);
    var fb = el.querySelector(".yzlive-fallback");
    if (fb) fb.hidden = true;
    el.appendChild(ui);
    el.setAttribute("data-yzlive-runs", "0");
    el.setAttribute("data-yzlive-state", "starting");
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
    this.start("load");
  };

  Panel.prototype.set = function (name, value, how) {
    this.values[name] = value;
    if (name === "num_last" || name === "num_distinct") this.classes = null;
    this.tInput = now();
    this.start(how);
  };

  Panel.prototype.dataSpec = function () {
    var d = {}, v = this.values;
    for (var k in this.cfg.data) d[k] = this.cfg.data[k];
    if (v.num_last !== undefined) d.numLast = v.num_last;
    if (v.num_distinct !== undefined) d.numDistinct = v.num_distinct;
    return d;
  };

  Panel.prototype.start = function () {
    var v = this.values;
    this.classes = YZ.classesFromSpec(this.dataSpec());
    this.cls = Math.min(this.cfg.cls || 0, this.classes.K - 1);
    this.S0 = this.classes.order[this.cls].length;
    this.limit = v.T === Infinity;
    var job = { id: ++this.jobId, data: this.dataSpec(), etaY: v.eta_y, etaZ: v.eta_z, steps: v.steps, batch: v.batch,
                T: this.limit ? "inf" : v.T, seed: v.seed, optimizer: v.optimizer, momentum: v.momentum, init: v.init,
                cls: this.cls, reference: !!this.cfg.reference && !this.limit &&
                  (this.views.indexOf("loss") >= 0 || this.views.indexOf("entropy") >= 0) };
    var steps = v.steps, S0 = this.S0;
    this.rec = { loss: new Float64Array(steps), entropy: new Float64Array(steps + 1), rows: new Float64Array((steps + 1) * S0),
                 refLoss: job.reference ? new Float64Array(steps) : null,
                 refEntropy: job.reference ? new Float64Array(steps + 1) : null, recorded: 0, nLoss: 0 };
    this.tStart = this.tInput === null ? now() : this.tInput;
    this.el.setAttribute("data-yzlive-state", "running");
    this.runner.start(job);
  };

  Panel.prototype.onSlice = function (m) {
    if (m.id !== this.jobId) return;
    if (m.type === "error") {
      this.el.setAttribute("data-yzlive-state", "error");
      this.setStatus("Cannot train: " + m.message, true);
      return;
    }
    var r = this.rec;
    r.loss.set(m.loss, m.fromLoss); r.entropy.set(m.entropy, m.from); r.rows.set(m.rows, m.from * this.S0);
    if (r.refLoss && m.refLoss) { r.refLoss.set(m.refLoss, m.fromLoss); r.refEntropy.set(m.refEntropy, m.from); }
    r.recorded = m.to; r.nLoss = m.toLoss;
    if (!m.done) {
      this.setStatus("training\u2026 step " + m.toLoss + " of " + this.values.steps, false);
      this.requestDraw();
      return;
    }
    this.draw();
    var ms = now() - this.tStart;
    this.runs += 1;
    this.el.setAttribute("data-yzlive-runs", String(this.runs));
    this.el.setAttribute("data-yzlive-ms", ms.toFixed(1));
    this.el.setAttribute("data-yzlive-train-ms", m.ms.toFixed(1));
    this.el.setAttribute("data-yzlive-mode", this.runner.mode);
    var v = this.values, what;
    if (this.limit) what = "expected gradient (T \u2192 \u221e, all " + this.classes.K + " classes)";
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
  };

  Panel.prototype.setStatus = function (text, bad) {
    this.status.textContent = text;
    this.status.className = "yz-status" + (bad ? " yz-bad" : "");
  };

  Panel.prototype.requestDraw = function () {
    var self = this;
    if (this.pending) return;
    this.pending = true;
    (root.requestAnimationFrame || setTimeout)(function () { self.pending = false; self.draw(); });
  };

  Panel.prototype.draw = function () {
    if (!this.rec || this.rec.recorded < 1) return;
    var th = theme(this.el), dpr = root.devicePixelRatio || 1, self = this;
    this.views.forEach(function (v) {
      var cv = self.canvases[v], spec = VIEWS[v], w = cv.clientWidth || cv.parentNode.clientWidth || 600;
      var h = Math.round(Math.min(spec.max, Math.max(spec.min, w * spec.height)));
      if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
        cv.width = Math.round(w * dpr); cv.height = Math.round(h * dpr); cv.style.height = h + "px";
      }
      var ctx = cv.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = th.bg; ctx.fillRect(0, 0, w, h);
      spec.draw(self, ctx, { x: 4, y: 4, w: w - 8, h: h - 8 }, th);
      try { cv.setAttribute("aria-label", spec.title + ". " + spec.describe(self)); } catch (e) { /* partial data */ }
    });
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
