/* yzlive.js: the Y/Z model of "Scan and Snap" (Tian, Wang, Chen, Du; NeurIPS 2023) trained
 * in the reader's browser, in float64, with no dependency and no build step.
 *
 * What it computes (equation numbers of arXiv 2305.16380v4):
 *   - the sequence classes of the authors' generator (scansnap.data.make_classes): Syn-Small
 *     is makeClasses(2, 1), Syn-Medium is makeClasses(k, 2);
 *   - a seeded sampler of count batches: the class of each sequence uniform, its T-1
 *     contextual tokens i.i.d. from P(.|n) (Vose alias tables, MT19937);
 *   - the forward pass on token counts, Eq. 1-2 through Eq. 20 (X^T b_T = softmax over the
 *     tokens of z_{x_T,l} + log count_l), on each sequence's present tokens only;
 *   - Lemma 1's closed-form gradients (Eq. 3, App. C Eq. 17-19) of the batch-mean
 *     cross-entropy, as scansnap.model.YZModel.lemma1_grads computes them;
 *   - PyTorch's update rules as scansnap.train.BatchedOptimizer applies them: SGD with
 *     momentum (dampening 0, no Nesterov) and Adam (bias-corrected, eps outside the root),
 *     with separate rates eta_Y and eta_Z;
 *   - the long-sequence limit (T -> infinity, Lemma 2 / Eq. 5-6) averaged over the classes:
 *     the same gradient with the counts replaced by P(l|n), one pseudo-sequence per class
 *     (scansnap.theory.expected_gradients), iterated by the same optimiser
 *     (scansnap.theory.population_steps);
 *   - h(t) of Lemma 6 (Eq. 45), gamma(t) of Eq. 85, omega_1 of Lemma 8 (Eq. 51) and
 *     t_0 = 2 (1 + omega_1) K ln M / eta_Y.
 * tests/test_live.py checks all of it against the Python package to 1e-9 (through Node).
 *
 * Loaded by a <script> it defines window.YZLive; under Node, module.exports. A Web Worker
 * gets the same code from YZLive.workerSource() (the factory's own text), so a page needs
 * the file once and fetches nothing.
 */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.YZLive = api;
})(typeof self !== "undefined" ? self : this, function YZLiveFactory() {
  "use strict";

  var VERSION = "1";

  function fail(msg) { throw new Error("yzlive: " + msg); }

  function checkInt(name, v, lo, hi) {
    if (typeof v !== "number" || !Number.isInteger(v) || v < lo || (hi !== undefined && v > hi)) {
      fail(name + " must be an integer in [" + lo + ", " + (hi === undefined ? "inf" : hi) + "], got " + v);
    }
    return v;
  }

  function checkPositive(name, v) {
    if (typeof v !== "number" || !(v > 0) || !isFinite(v)) fail(name + " must be a positive number, got " + v);
    return v;
  }

  // ------------------------------------------------------------------------------------
  // MT19937, seeded as torch.Generator().manual_seed(seed) seeds its engine
  // ------------------------------------------------------------------------------------

  function MT19937(seed) {
    this.mt = new Uint32Array(624);
    this.i = 624;
    var s = (seed >>> 0);
    this.mt[0] = s;
    for (var j = 1; j < 624; j++) {
      var prev = this.mt[j - 1] ^ (this.mt[j - 1] >>> 30);
      // 1812433253 * prev + j (mod 2^32), in two 16-bit halves to stay exact
      this.mt[j] = ((((prev & 0xffff0000) >>> 16) * 1812433253) << 16) + (prev & 0x0000ffff) * 1812433253 + j;
    }
  }

  MT19937.prototype.twist = function () {
    var mt = this.mt, k, y;
    for (k = 0; k < 227; k++) {
      y = (mt[k] & 0x80000000) | (mt[k + 1] & 0x7fffffff);
      mt[k] = mt[k + 397] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0);
    }
    for (; k < 623; k++) {
      y = (mt[k] & 0x80000000) | (mt[k + 1] & 0x7fffffff);
      mt[k] = mt[k - 227] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0);
    }
    y = (mt[623] & 0x80000000) | (mt[0] & 0x7fffffff);
    mt[623] = mt[396] ^ (y >>> 1) ^ ((y & 1) ? 0x9908b0df : 0);
    this.i = 0;
  };

  MT19937.prototype.u32 = function () {
    if (this.i >= 624) this.twist();
    var y = this.mt[this.i++];
    y ^= (y >>> 11);
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= (y >>> 18);
    return y >>> 0;
  };

  // the next out.length outputs, in order (what u32() would give one at a time)
  MT19937.prototype.fill = function (out) {
    var mt = this.mt, i = this.i, n = out.length, y;
    for (var k = 0; k < n; k++) {
      if (i >= 624) { this.twist(); i = 0; }
      y = mt[i++];
      y ^= (y >>> 11);
      y ^= (y << 7) & 0x9d2c5680;
      y ^= (y << 15) & 0xefc60000;
      y ^= (y >>> 18);
      out[k] = y;
    }
    this.i = i;
    return out;
  };

  // uniform on [0, 1) with 53 random bits (genrand_res53)
  MT19937.prototype.double = function () {
    var a = this.u32() >>> 5, b = this.u32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  };

  // torch's uniform_(from, to) on a float64 tensor: random64() = (u32 << 32) | u32, its low
  // 53 bits / 2^53, times (to - from), plus from (ATen uniform_real_distribution<double>),
  // which the compiler fuses into one fma: one rounding, emulated here
  MT19937.prototype.torchUniform64 = function (from, to) {
    var hi = this.u32(), lo = this.u32();
    var x = ((hi & 0x1fffff) * 4294967296 + lo) / 9007199254740992;
    return fma(x, to - from, from);
  };

  // a*b + c with one rounding (Dekker's exact product, Knuth's two-sum; wrong only when the
  // exact result lies within 2^-105 relative of a rounding midpoint)
  function split(a) { var c = 134217729 * a, h = c - (c - a); return [h, a - h]; }
  function fma(a, b, c) {
    var p = a * b, A = split(a), B = split(b);
    var e = ((A[0] * B[0] - p) + A[0] * B[1] + A[1] * B[0]) + A[1] * B[1];
    var s = p + c, bb = s - p, t = (p - (s - bb)) + (c - bb);
    return s + (t + e);
  }

  // ------------------------------------------------------------------------------------
  // Sequence classes (paper Sec. 3.2; the authors' generator, scansnap.data.make_classes)
  // ------------------------------------------------------------------------------------

  function linspace(a, b, n) {
    var out = new Float64Array(n);
    if (n === 1) { out[0] = a; return out; }
    var step = (b - a) / (n - 1);
    for (var i = 0; i < n; i++) out[i] = i * step + a;
    out[n - 1] = b;
    return out;
  }

  /** Token layout common | distinct blocks | queries | nexts, as make_classes (data.py). */
  function makeClasses(numLast, numNextPerLast, opt) {
    opt = opt || {};
    numLast = checkInt("numLast (queries)", numLast, 1);
    numNextPerLast = checkInt("numNextPerLast", numNextPerLast === undefined ? 1 : numNextPerLast, 1);
    var numCommon = checkInt("numCommon", opt.numCommon === undefined ? 10 : opt.numCommon, 0);
    var numDistinct = checkInt("numDistinct", opt.numDistinct === undefined ? 10 : opt.numDistinct, 0);
    var cw = opt.commonWeight === undefined ? 1.0 : opt.commonWeight;
    var dmin = opt.distinctMin === undefined ? 0.1 : opt.distinctMin;
    var dmax = opt.distinctMax === undefined ? 1.0 : opt.distinctMax;
    if (numCommon + numDistinct === 0) fail("a class needs at least one contextual token");
    if (!(cw > 0) || !(dmin > 0) || !(dmin <= dmax)) fail("weights must be positive with distinctMin <= distinctMax");
    var K = numLast * numNextPerLast;
    var distinct0 = numCommon, query0 = distinct0 + numDistinct * K, next0 = query0 + numLast;
    var M = next0 + K;
    var probs = new Float64Array(K * M);
    var w = linspace(dmin, dmax, numDistinct);
    var query = new Int32Array(K), next = new Int32Array(K);
    for (var n = 0; n < K; n++) {
      var row = n * M, l, sum = 0;
      for (l = 0; l < numCommon; l++) probs[row + l] = cw;
      for (l = 0; l < numDistinct; l++) probs[row + distinct0 + n * numDistinct + l] = w[l];
      for (l = 0; l < M; l++) sum += probs[row + l];
      for (l = 0; l < M; l++) probs[row + l] /= sum;
      query[n] = query0 + Math.floor(n / numNextPerLast);
      next[n] = next0 + n;
    }
    return fromTable(K, M, probs, query, next);
  }

  /** Derived tables: support, common/distinct split, alias tables for sampling. */
  function fromTable(K, M, probs, query, next) {
    var omega = new Int32Array(M), n, l;
    for (n = 0; n < K; n++) for (l = 0; l < M; l++) if (probs[n * M + l] > 0) omega[l]++;
    var support = [], supportP = [], order = [], nCommon = [], distinct = [], alias = [];
    for (n = 0; n < K; n++) {
      var sup = [], com = [], dis = [];
      for (l = 0; l < M; l++) {
        if (probs[n * M + l] > 0) {
          sup.push(l);
          (omega[l] > 1 ? com : dis).push(l);
        }
      }
      // distinct tokens by increasing P(l|n) (ties by token id), as the figures order them
      dis.sort(function (a, b) { return (probs[n * M + a] - probs[n * M + b]) || (a - b); });
      var p = new Float64Array(sup.length);
      for (var k = 0; k < sup.length; k++) p[k] = probs[n * M + sup[k]];
      support.push(Int32Array.from(sup));
      supportP.push(p);
      order.push(Int32Array.from(com.concat(dis)));
      nCommon.push(com.length);
      distinct.push(Int32Array.from(dis));
      alias.push(aliasTable(p));
    }
    return { K: K, M: M, probs: probs, query: query, next: next, omega: omega, support: support,
             supportP: supportP, order: order, nCommon: nCommon, distinct: distinct, alias: alias };
  }

  /** The data spec of a panel or job -> classes. */
  function classesFromSpec(spec) {
    spec = spec || {};
    return makeClasses(spec.numLast === undefined ? 2 : spec.numLast,
                       spec.numNextPerLast === undefined ? 1 : spec.numNextPerLast, spec);
  }

  // ------------------------------------------------------------------------------------
  // Sampling count batches
  // ------------------------------------------------------------------------------------

  /** Vose's alias method over a probability vector (sums to 1). */
  function aliasTable(p) {
    var n = p.length, prob = new Float64Array(n), alias = new Int32Array(n);
    var scaled = new Float64Array(n), small = [], large = [], i;
    for (i = 0; i < n; i++) { scaled[i] = p[i] * n; (scaled[i] < 1 ? small : large).push(i); }
    while (small.length && large.length) {
      var s = small.pop(), g = large.pop();
      prob[s] = scaled[s];
      alias[s] = g;
      scaled[g] = (scaled[g] + scaled[s]) - 1;
      (scaled[g] < 1 ? small : large).push(g);
    }
    while (large.length) { i = large.pop(); prob[i] = 1; alias[i] = i; }
    while (small.length) { i = small.pop(); prob[i] = 1; alias[i] = i; }
    return { n: n, prob: prob, alias: alias };
  }

  /** A reusable count batch in CSR form: sequence i's present tokens are tok[off[i]..off[i+1]). */
  function CountBatch(B, cap) {
    this.B = B;
    this.cls = new Int32Array(B);
    this.query = new Int32Array(B);
    this.label = new Int32Array(B);
    this.off = new Int32Array(B + 1);
    this.tok = new Int32Array(cap);
    this.cnt = new Float64Array(cap);
    this.lcnt = new Float64Array(cap);     // log cnt, filled with cnt
  }

  /** Fill lcnt = log(cnt) (a batch built by hand; the sampler fills it itself). */
  CountBatch.prototype.logs = function () {
    for (var j = 0; j < this.off[this.B]; j++) this.lcnt[j] = Math.log(this.cnt[j]);
    return this;
  };

  /**
   * B sequences of length T: class uniform over K, T-1 contextual tokens i.i.d. from P(.|n).
   * The data stream is sfc32 (Doty-Humphrey's small fast counter generator, 128-bit state,
   * seeded through splitmix32): two to four times faster here than MT19937 per draw, and this
   * stream need not match torch's (the init, which does, uses MT19937 above).
   */
  function Sampler(classes, seed) {
    this.c = classes;
    var maxS = 0;
    for (var n = 0; n < classes.K; n++) maxS = Math.max(maxS, classes.support[n].length);
    this.maxS = maxS;
    this.counts = new Int32Array(maxS);
    var x = seed >>> 0, st = [];
    for (var i = 0; i < 4; i++) {            // splitmix32
      x = (x + 0x9e3779b9) | 0;
      var z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      st.push((z ^ (z >>> 16)) | 0);
    }
    this.st = Int32Array.from(st);
    for (i = 0; i < 16; i++) this.u32();
  }

  Sampler.prototype.u32 = function () {
    var st = this.st, a = st[0], b = st[1], c = st[2], d = st[3];
    var t = ((a + b) | 0) + d | 0;
    st[3] = (d + 1) | 0; st[0] = b ^ (b >>> 9); st[1] = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11); st[2] = (c + t) | 0;
    return t >>> 0;
  };

  Sampler.prototype.sample = function (B, T, batch) {
    var cl = this.c, counts = this.counts, maxS = this.maxS, K = cl.K, lt = this.logTable(T);
    if (!batch || batch.B !== B) batch = new CountBatch(B, B * maxS);
    var st = this.st, a = st[0], b = st[1], c = st[2], d = st[3], r, j = 0;
    var U = 2.3283064365386963e-10;           // 2^-32
    for (var i = 0; i < B; i++) {
      r = ((a + b) | 0) + d | 0; d = (d + 1) | 0; a = b ^ (b >>> 9); b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11); c = (c + r) | 0;
      var n = Math.floor((r >>> 0) * U * K);
      var al = cl.alias[n], S = al.n, prob = al.prob, alias = al.alias, sup = cl.support[n], k;
      for (k = 0; k < S; k++) counts[k] = 0;
      for (var t = 0; t < T - 1; t++) {
        r = ((a + b) | 0) + d | 0; d = (d + 1) | 0; a = b ^ (b >>> 9); b = (c + (c << 3)) | 0;
        c = (c << 21) | (c >>> 11); c = (c + r) | 0;
        // one 32-bit draw: its integer part picks a column of the alias table, its fraction the coin
        var x = (r >>> 0) * U * S, q = Math.floor(x);
        counts[(x - q) < prob[q] ? q : alias[q]]++;
      }
      batch.cls[i] = n;
      batch.query[i] = cl.query[n];
      batch.label[i] = cl.next[n];
      batch.off[i] = j;
      for (k = 0; k < S; k++) {
        if (counts[k] > 0) { batch.tok[j] = sup[k]; batch.cnt[j] = counts[k]; batch.lcnt[j] = lt[counts[k]]; j++; }
      }
    }
    st[0] = a; st[1] = b; st[2] = c; st[3] = d;
    batch.off[B] = j;
    return batch;
  };

  Sampler.prototype.logTable = function (T) {
    if (!this.lt || this.lt.length < T) {
      this.lt = new Float64Array(T);
      for (var k = 1; k < T; k++) this.lt[k] = Math.log(k);
    }
    return this.lt;
  };

  /** The T -> infinity pseudo-batch: one row per class, counts replaced by P(l|n) (Eq. 5). */
  function limitBatch(classes) {
    var K = classes.K, total = 0, n;
    for (n = 0; n < K; n++) total += classes.support[n].length;
    var b = new CountBatch(K, total), j = 0;
    for (n = 0; n < K; n++) {
      b.cls[n] = n; b.query[n] = classes.query[n]; b.label[n] = classes.next[n]; b.off[n] = j;
      for (var k = 0; k < classes.support[n].length; k++) {
        b.tok[j] = classes.support[n][k]; b.cnt[j] = classes.supportP[n][k]; j++;
      }
    }
    b.off[K] = j;
    return b.logs();
  }

  // ------------------------------------------------------------------------------------
  // The model: forward (Eq. 20) and Lemma 1's gradients (Eq. 3)
  // ------------------------------------------------------------------------------------

  /** Y = Z = 0 ("zero") or nn.Linear's U(-1/sqrt M, 1/sqrt M), Y = K1^T, Z = K2 ("default"). */
  function initYZ(M, init, seed) {
    var Y = new Float64Array(M * M), Z = new Float64Array(M * M);
    if (init === "zero") return { Y: Y, Z: Z };
    if (init !== "default") fail("unknown init " + JSON.stringify(init) + ": use 'zero' or 'default'");
    var g = new MT19937(seed), bound = 1 / Math.sqrt(M), i, j;
    for (i = 0; i < M; i++) for (j = 0; j < M; j++) Y[j * M + i] = g.torchUniform64(-bound, bound);  // K1, transposed
    for (i = 0; i < M * M; i++) Z[i] = g.torchUniform64(-bound, bound);
    return { Y: Y, Z: Z };
  }

  function Workspace(M, maxP) {
    this.lg = new Float64Array(M);
    this.c = new Float64Array(maxP);
    this.f = new Float64Array(maxP);
    this.g = new Float64Array(maxP);
  }

  function maxRow(batch) {
    var m = 0;
    for (var i = 0; i < batch.B; i++) m = Math.max(m, batch.off[i + 1] - batch.off[i]);
    return m;
  }

  /**
   * Gradients of the batch-mean cross-entropy (= -J of Eq. 2 on the batch) into gY, gZ
   * (overwritten); returns the loss. Row weights: 1/B, or weights[i] when given.
   * With counts = P(l|n) and weights 1/K this is minus the expected gradient of Lemma 2.
   */
  function lossGrad(M, Y, Z, batch, gY, gZ, ws, weights) {
    gY.fill(0); gZ.fill(0);
    var B = batch.B, off = batch.off, tok = batch.tok, lcnt = batch.lcnt;
    if (!ws || ws.c.length < maxRow(batch) || ws.lg.length !== M) ws = new Workspace(M, maxRow(batch));
    var lg = ws.lg, c = ws.c, f = ws.f, g = ws.g, loss = 0;
    for (var i = 0; i < B; i++) {
      var w = weights ? weights[i] : 1 / B;
      var m = batch.query[i], y = batch.label[i], o = off[i], P = off[i + 1] - o, zrow = m * M, k, j, row;
      // c = X^T b_T = softmax_l(z_{m l} + log count_l) over the present tokens (Eq. 20)
      var mx = -Infinity;
      for (k = 0; k < P; k++) { c[k] = Z[zrow + tok[o + k]] + lcnt[o + k]; if (c[k] > mx) mx = c[k]; }
      var s = 0;
      for (k = 0; k < P; k++) { c[k] = Math.exp(c[k] - mx); s += c[k]; }
      var nv2 = 0;
      for (k = 0; k < P; k++) { c[k] /= s; nv2 += c[k] * c[k]; }
      var nv = Math.sqrt(nv2);
      for (k = 0; k < P; k++) f[k] = c[k] / nv;                 // f = LN(c) (Sec. 3.1)
      // logits = Y^T f, only rows of present tokens contribute
      lg.fill(0);
      for (k = 0; k < P; k++) {
        row = tok[o + k] * M; var fk = f[k];
        for (j = 0; j < M; j++) lg[j] += fk * Y[row + j];
      }
      var lmx = -Infinity;
      for (j = 0; j < M; j++) if (lg[j] > lmx) lmx = lg[j];
      var se = 0, ly = lg[y] - lmx;
      for (j = 0; j < M; j++) { lg[j] = Math.exp(lg[j] - lmx); se += lg[j]; }
      loss += w * (Math.log(se) - ly);                          // -log alpha_y
      // d loss / d logits = w (alpha - e_y); dJ/dY = f (x_{T+1} - alpha)^T (Eq. 3)
      for (j = 0; j < M; j++) lg[j] = w * (lg[j] / se);
      lg[y] -= w;
      for (k = 0; k < P; k++) {
        row = tok[o + k] * M; var fk2 = f[k], gk = 0;
        for (j = 0; j < M; j++) { gk += Y[row + j] * lg[j]; gY[row + j] += fk2 * lg[j]; }
        g[k] = gk;                                              // d loss / d f = Y (...)
      }
      // through LN: P_perp(v) / ||v|| (Eq. 17); then the softmax, diag(c) - c c^T (Eq. 19)
      var fg = 0;
      for (k = 0; k < P; k++) fg += f[k] * g[k];
      var cg = 0;
      for (k = 0; k < P; k++) { g[k] = (g[k] - f[k] * fg) / nv; cg += c[k] * g[k]; }
      for (k = 0; k < P; k++) gZ[zrow + tok[o + k]] += c[k] * (g[k] - cg);  // only row x_T moves (Eq. 4)
    }
    return loss;
  }

  /** E_n[dJ/dY], E_n[dJ/dZ] at T -> infinity, as scansnap.theory.expected_gradients (dJ, not d loss). */
  function expectedGradients(classes, Y, Z) {
    var M = classes.M, gY = new Float64Array(M * M), gZ = new Float64Array(M * M);
    var loss = lossGrad(M, Y, Z, limitBatch(classes), gY, gZ, null, null);
    for (var i = 0; i < M * M; i++) { gY[i] = -gY[i]; gZ[i] = -gZ[i]; }
    return { dY: gY, dZ: gZ, loss: loss };
  }

  // ------------------------------------------------------------------------------------
  // Optimisers: PyTorch's rules, as scansnap.train.BatchedOptimizer
  // ------------------------------------------------------------------------------------

  var OPTIMIZERS = ["sgd", "adam"];

  function Optimizer(method, size, opt) {
    if (OPTIMIZERS.indexOf(method) < 0) fail("unknown optimizer " + JSON.stringify(method) + ": use 'sgd' or 'adam'");
    opt = opt || {};
    this.method = method;
    this.momentum = opt.momentum === undefined ? 0.9 : opt.momentum;
    if (!(this.momentum >= 0 && this.momentum < 1)) fail("momentum must be in [0, 1), got " + this.momentum);
    this.beta1 = opt.beta1 === undefined ? 0.9 : opt.beta1;
    this.beta2 = opt.beta2 === undefined ? 0.999 : opt.beta2;
    this.eps = opt.eps === undefined ? 1e-8 : opt.eps;
    this.t = 0;
    this.m = [new Float64Array(size), new Float64Array(size)];
    this.v = method === "adam" ? [new Float64Array(size), new Float64Array(size)] : null;
  }

  /** One step on params[i] with gradient grads[i] (of the loss) and rate lrs[i]. */
  Optimizer.prototype.step = function (params, grads, lrs) {
    this.t += 1;
    for (var q = 0; q < params.length; q++) {
      var p = params[q], g = grads[q], lr = lrs[q], m = this.m[q], n = p.length, i;
      if (this.method === "sgd") {
        var mu = this.momentum;
        if (mu) {
          for (i = 0; i < n; i++) { m[i] = m[i] * mu + g[i]; p[i] -= lr * m[i]; }
        } else {
          for (i = 0; i < n; i++) p[i] -= lr * g[i];
        }
      } else {
        var v = this.v[q], b1 = this.beta1, b2 = this.beta2, eps = this.eps;
        var bc2 = Math.sqrt(1 - Math.pow(b2, this.t)), a = lr / (1 - Math.pow(b1, this.t));
        for (i = 0; i < n; i++) {
          m[i] += (1 - b1) * (g[i] - m[i]);
          v[i] = v[i] * b2 + (1 - b2) * g[i] * g[i];
          p[i] -= (1 / (Math.sqrt(v[i]) / bc2 + eps)) * m[i] * a;
        }
      }
    }
  };

  // ------------------------------------------------------------------------------------
  // What the views draw: c_n (Eq. 5), the distinct-token entropy (Fig. 6)
  // ------------------------------------------------------------------------------------

  /** c_n of Eq. 5 over tokens `toks` of class n: P(l|n) e^{z_ml}, normalised over supp(n). */
  function attentionLimit(classes, Z, n, toks, out) {
    var M = classes.M, zrow = classes.query[n] * M, sup = classes.support[n], p = classes.supportP[n];
    var mx = -Infinity, k, s = 0;
    for (k = 0; k < sup.length; k++) mx = Math.max(mx, Math.log(p[k]) + Z[zrow + sup[k]]);
    for (k = 0; k < sup.length; k++) s += Math.exp(Math.log(p[k]) + Z[zrow + sup[k]] - mx);
    out = out || new Float64Array(toks.length);
    for (k = 0; k < toks.length; k++) {
      out[k] = Math.exp(Math.log(classes.probs[n * M + toks[k]]) + Z[zrow + toks[k]] - mx) / s;
    }
    return out;
  }

  /** scansnap.metrics.distinct_entropy: entropy of c_n on G_DT(n), renormalised, mean over n. */
  function distinctEntropy(classes, Z) {
    var total = 0;
    for (var n = 0; n < classes.K; n++) total += entropyOfShare(attentionLimit(classes, Z, n, classes.distinct[n]));
    return total / classes.K;
  }

  function entropyOfShare(c) {
    var s = 0, h = 0, k;
    for (k = 0; k < c.length; k++) s += c[k];
    for (k = 0; k < c.length; k++) { var q = c[k] / s; if (q > 0) h -= q * Math.log(q); }
    return h;
  }

  // ------------------------------------------------------------------------------------
  // Theory: Lemma 6 (Eq. 45), Eq. 85, Lemma 8 (Eq. 51), t_0
  // ------------------------------------------------------------------------------------

  /** h(t) solving exp(Mh) + (M-1) M h = M eta_Y t + 1 (Eq. 45), by Newton from above. */
  function hClosed(t, M, etaY) {
    if (t < 0) fail("time t must be >= 0, got " + t);
    var A = M * etaY * t + 1, a = M - 1;
    var u = Math.min(Math.log(A), A / a);   // f(u) >= 0 here and f is convex increasing
    for (var it = 0; it < 100; it++) {
      var e = Math.exp(u), du = (e + a * u - A) / (e + a);
      u -= du;
      if (Math.abs(du) <= 1e-16 * Math.max(1, Math.abs(u))) break;
    }
    return Math.max(u, 0) / M;
  }

  /** Eq. 85: gamma = (M-1)^2 h / ((M-1) + exp(M h)) with h at s = ceil(t/K) (or t/K). */
  function gamma(t, M, K, etaY, discrete) {
    var s = discrete === false ? t / K : Math.ceil(t / K);
    var h = hClosed(s, M, etaY);
    return (M - 1) * (M - 1) * h / ((M - 1) + Math.exp(M * h));
  }

  /** Lemma 8, Eq. 51: omega_1 with w ln M = ln((1+w)(M-1) ln M / M), by bisection. */
  function omega1(M) {
    var L = Math.log(M);
    var gfun = function (w) { return w * L - Math.log((1 + w) * (M - 1) * L / M); };
    var lo = 1e-12, hi = 10, glo = gfun(lo);
    // a root needs (M-1) ln M / M > 1, i.e. M >= 4
    if ((glo > 0) === (gfun(hi) > 0)) fail("omega_1 (Lemma 8) has no root for M = " + M + ": needs M >= 4");
    for (var it = 0; it < 200 && hi - lo > 1e-15 * hi; it++) {
      var mid = 0.5 * (lo + hi), gm = gfun(mid);
      if ((gm > 0) === (glo > 0)) { lo = mid; glo = gm; } else hi = mid;
    }
    return 0.5 * (lo + hi);
  }

  /** t_0 = 2 (1 + omega_1) K ln M / eta_Y: where stage 2 starts (Lemma 9, Theorem 4). */
  function transitionTime(M, K, etaY) {
    return 2 * (1 + omega1(M)) * K * Math.log(M) / checkPositive("eta_y", etaY);
  }

  /** Momentum's clock (theory.momentum_clock): plain-SGD steps covered by s steps of SGD with
   *  momentum beta under a steady gradient, sum_{j<=s} (1 - beta^j)/(1 - beta). */
  function clockTau(s, beta) {
    return beta ? (s - beta * (1 - Math.pow(beta, s)) / (1 - beta)) / (1 - beta) : s;
  }

  /** Its inverse (theory.momentum_clock_steps), linear between whole steps. */
  function clockSteps(t, beta) {
    if (!beta || !(t > 0)) return t;
    var lo = 0, hi = Math.ceil(t);                 // tau(s) >= s: the step is in [0, ceil(t)]
    while (hi - lo > 1) {
      var mid = Math.floor((lo + hi) / 2);
      if (clockTau(mid, beta) >= t) hi = mid; else lo = mid;
    }
    var a = clockTau(hi - 1, beta), b = clockTau(hi, beta);
    return hi - 1 + (t - a) / (b - a);
  }

  // ------------------------------------------------------------------------------------
  // A training run, advanced in slices (a Worker posts each slice; the page draws it)
  // ------------------------------------------------------------------------------------

  var MAX = { steps: 20000, batch: 4096, T: 100000, work: 2e9 };

  /**
   * A run's cost in multiply-adds, roughly: per step, per sequence T-1 draws and about 4 S M
   * for the forward and backward passes (S = the largest support), plus the optimiser's 6 M^2;
   * the T -> infinity reference adds K pseudo-sequences. scansnap.live uses the same formula.
   */
  function workOf(steps, batch, T, K, M, S, reference) {
    var perSeq = 4 * S * M, limit = T === null || T === Infinity || T === "inf";
    var step = (limit ? K * perSeq : batch * (T - 1 + perSeq)) + 6 * M * M;
    if (reference && !limit) step += K * perSeq + 6 * M * M;
    return steps * step;
  }

  function normJob(job) {
    var j = {};
    for (var key in job) j[key] = job[key];
    j.etaY = checkPositive("eta_y", j.etaY);
    j.etaZ = checkPositive("eta_z", j.etaZ);
    j.steps = checkInt("steps", j.steps, 1, MAX.steps);
    j.limit = j.T === null || j.T === Infinity || j.T === "inf";
    if (!j.limit) j.T = checkInt("T (sequence length)", j.T, 2, MAX.T);
    j.batch = checkInt("batch size", j.batch === undefined ? 128 : j.batch, 1, MAX.batch);
    j.seed = checkInt("seed", j.seed === undefined ? 0 : j.seed, 0, 4294967295);
    j.optimizer = j.optimizer || "sgd";
    j.init = j.init || "zero";
    j.cls = j.cls === undefined ? 0 : j.cls;
    return j;
  }

  /**
   * One run. Records after s updates (s = 0..steps): entropy[s], c_n of class `cls` over
   * its tokens (common, then distinct by increasing P) in rows[s]; loss[s] (s < steps) is
   * the batch loss before update s, as scansnap.train.train records it. With `reference`
   * the T -> infinity run from the same init is recorded beside it (refLoss, refEntropy).
   */
  function Run(job) {
    job = normJob(job);
    var cl = job.classes || classesFromSpec(job.data);
    checkInt("class", job.cls, 0, cl.K - 1);
    var maxS = 0;
    for (var n = 0; n < cl.K; n++) maxS = Math.max(maxS, cl.support[n].length);
    var work = workOf(job.steps, job.batch, job.limit ? null : job.T, cl.K, cl.M, maxS, job.reference);
    if (work > MAX.work) {
      fail("this setting is too large to train live (about " + (work / 1e9).toFixed(1) + "e9 operations, limit " +
           (MAX.work / 1e9).toFixed(1) + "e9): use fewer steps, a smaller batch or a shorter T");
    }
    this.job = job;
    this.classes = cl;
    var M = cl.M, S0 = cl.order[job.cls].length, steps = job.steps;
    this.S0 = S0;
    var init = initYZ(M, job.init, job.seed);
    this.Y = init.Y; this.Z = init.Z;
    this.gY = new Float64Array(M * M); this.gZ = new Float64Array(M * M);
    var optOpts = { momentum: job.momentum, beta1: job.beta1, beta2: job.beta2, eps: job.eps };
    this.opt = new Optimizer(job.optimizer, M * M, optOpts);
    this.lb = limitBatch(cl);
    this.sampler = job.limit ? null : new Sampler(cl, job.seed);   // the data stream (not MT19937: no clash with the init)
    this.batch = null;
    this.ws = null;
    this.loss = new Float64Array(steps);
    this.entropy = new Float64Array(steps + 1);
    this.rows = new Float64Array((steps + 1) * S0);
    this.s = 0;
    this.recorded = 0;      // rows/entropy recorded for s < recorded
    this.sentRows = 0;      // what advance() has handed out already
    this.sentLoss = 0;
    this.diverged = null;
    this.ref = null;
    if (job.reference && !job.limit) {
      this.ref = { Y: Float64Array.from(init.Y), Z: Float64Array.from(init.Z),
                   opt: new Optimizer(job.optimizer, M * M, optOpts),
                   loss: new Float64Array(steps), entropy: new Float64Array(steps + 1), ws: null };
    }
    this.record();
  }

  Run.prototype.record = function () {
    var s = this.s, cl = this.classes, S0 = this.S0;
    this.entropy[s] = distinctEntropy(cl, this.Z);
    attentionLimit(cl, this.Z, this.job.cls, cl.order[this.job.cls], this.rows.subarray(s * S0, (s + 1) * S0));
    if (this.ref) this.ref.entropy[s] = distinctEntropy(cl, this.ref.Z);
    this.recorded = s + 1;
  };

  Run.prototype.done = function () { return this.s >= this.job.steps || this.diverged !== null; };

  /** Take one optimisation step (and one of the reference run). */
  Run.prototype.stepOnce = function () {
    var job = this.job, cl = this.classes, M = cl.M, s = this.s, loss;
    var lrs = [job.etaY, job.etaZ];
    if (job.limit) {
      loss = lossGrad(M, this.Y, this.Z, this.lb, this.gY, this.gZ, this.ws, null);
    } else {
      this.batch = this.sampler.sample(job.batch, job.T, this.batch);
      if (!this.ws || this.ws.c.length < this.sampler.maxS) this.ws = new Workspace(M, this.sampler.maxS);
      loss = lossGrad(M, this.Y, this.Z, this.batch, this.gY, this.gZ, this.ws, null);
    }
    this.loss[s] = loss;
    this.opt.step([this.Y, this.Z], [this.gY, this.gZ], lrs);
    if (this.ref) {
      var r = this.ref;
      r.loss[s] = lossGrad(M, r.Y, r.Z, this.lb, this.gY, this.gZ, r.ws, null);
      r.opt.step([r.Y, r.Z], [this.gY, this.gZ], lrs);
    }
    this.s = s + 1;
    if (!isFinite(loss) || !isFinite(this.Z[cl.query[job.cls] * M])) {
      this.diverged = s;
    } else {
      this.record();
      if (!isFinite(this.entropy[s + 1])) this.diverged = s;
    }
  };

  /** Step until done or `ms` milliseconds have passed; returns the new records as a slice. */
  Run.prototype.advance = function (ms, now) {
    now = now || Date.now;
    var t0 = now();
    while (!this.done()) {
      this.stepOnce();
      if (now() - t0 >= ms) break;
    }
    var sl = this.slice(this.sentRows, this.sentLoss);   // everything not sent yet, step 0 included
    this.sentRows = this.recorded;
    this.sentLoss = this.s;
    return sl;
  };

  Run.prototype.slice = function (from, fromLoss) {
    var S0 = this.S0, to = this.recorded, s = this.s;
    var out = {
      from: from, to: to, fromLoss: fromLoss, toLoss: s,
      loss: this.loss.slice(fromLoss, s),
      entropy: this.entropy.slice(from, to),
      rows: this.rows.slice(from * S0, to * S0),
      done: this.done(), diverged: this.diverged,
    };
    if (this.ref) {
      out.refLoss = this.ref.loss.slice(fromLoss, s);
      out.refEntropy = this.ref.entropy.slice(from, to);
    }
    return out;
  };

  /** Train on given count batches (the parity test's path): returns losses and Y, Z after each step. */
  function trainOnBatches(spec) {
    var M = spec.M, Y = Float64Array.from(spec.Y0), Z = Float64Array.from(spec.Z0);
    var opt = new Optimizer(spec.optimizer, M * M, spec);
    var gY = new Float64Array(M * M), gZ = new Float64Array(M * M), out = { loss: [], gY: [], gZ: [], Y: [], Z: [] };
    for (var s = 0; s < spec.batches.length; s++) {
      var b = spec.batches[s], B = b.query.length, batch = new CountBatch(B, b.tok.length);
      batch.query.set(b.query); batch.label.set(b.label); batch.off.set(b.off);
      batch.tok.set(b.tok); batch.cnt.set(b.cnt); batch.logs();
      out.loss.push(lossGrad(M, Y, Z, batch, gY, gZ, null, null));
      out.gY.push(Array.from(gY)); out.gZ.push(Array.from(gZ));
      opt.step([Y, Z], [gY, gZ], [spec.etaY, spec.etaZ]);
      out.Y.push(Array.from(Y)); out.Z.push(Array.from(Z));
    }
    return out;
  }

  /** The T -> infinity dynamics alone: losses and Y, Z after `steps` (scansnap.theory.population_steps). */
  function populationSteps(spec) {
    var cl = spec.classes || classesFromSpec(spec.data), M = cl.M;
    var init = spec.Y0 ? { Y: Float64Array.from(spec.Y0), Z: Float64Array.from(spec.Z0) }
                       : initYZ(M, spec.init || "zero", spec.seed || 0);
    var Y = init.Y, Z = init.Z, lb = limitBatch(cl), opt = new Optimizer(spec.optimizer || "sgd", M * M, spec);
    var gY = new Float64Array(M * M), gZ = new Float64Array(M * M), loss = [];
    for (var s = 0; s < spec.steps; s++) {
      loss.push(lossGrad(M, Y, Z, lb, gY, gZ, null, null));
      opt.step([Y, Z], [gY, gZ], [spec.etaY, spec.etaZ]);
    }
    return { loss: loss, Y: Y, Z: Z };
  }

  // ------------------------------------------------------------------------------------
  // The Worker: its source is this factory's own text, so nothing is fetched
  // ------------------------------------------------------------------------------------

  /** Runs inside the Worker: one job at a time; a slice is posted every `sliceMs`. */
  function workerMain(YZ) {
    var now = function () { return (self.performance || Date).now(); };
    self.onmessage = function (e) {
      var job = e.data, run;
      try {
        run = new YZ.Run(job);
      } catch (err) {
        self.postMessage({ type: "error", id: job.id, message: String(err.message || err) });
        return;
      }
      var t0 = now(), first = true;
      while (true) {
        var sl = run.advance(first ? (job.firstSliceMs || 12) : (job.sliceMs || 40), now);
        first = false;
        sl.type = "slice"; sl.id = job.id; sl.ms = now() - t0;
        var transfer = [sl.loss.buffer, sl.entropy.buffer, sl.rows.buffer];
        if (sl.refLoss) transfer.push(sl.refLoss.buffer, sl.refEntropy.buffer);
        self.postMessage(sl, transfer);
        if (sl.done) break;
      }
    };
  }

  function workerSource() {
    return "var YZLive = (" + YZLiveFactory.toString() + ")();\n(" + workerMain.toString() + ")(YZLive);\n";
  }

  return {
    version: VERSION, MT19937: MT19937, makeClasses: makeClasses, fromTable: fromTable,
    classesFromSpec: classesFromSpec, aliasTable: aliasTable, Sampler: Sampler, CountBatch: CountBatch,
    limitBatch: limitBatch, initYZ: initYZ, lossGrad: lossGrad, expectedGradients: expectedGradients,
    Optimizer: Optimizer, attentionLimit: attentionLimit, distinctEntropy: distinctEntropy,
    entropyOfShare: entropyOfShare, hClosed: hClosed, gamma: gamma, omega1: omega1,
    transitionTime: transitionTime, clockTau: clockTau, clockSteps: clockSteps, Run: Run, MAX: MAX, workOf: workOf, trainOnBatches: trainOnBatches,
    populationSteps: populationSteps, workerSource: workerSource,
  };
});
