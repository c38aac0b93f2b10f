// Node driver for tests/test_live.py: reads a JSON request (file named by argv[2], or the
// engine file in argv[3]), runs the live engine, prints a JSON answer.
"use strict";
const fs = require("fs");
const path = require("path");
const req = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const YZ = require(process.argv[3] || path.join(__dirname, "..", "..", "scansnap", "js", "yzlive.js"));

const arr = (a) => Array.from(a);

function classes(spec) {
  const c = YZ.classesFromSpec(spec);
  return { K: c.K, M: c.M, probs: arr(c.probs), query: arr(c.query), next: arr(c.next),
           order: c.order.map(arr), nCommon: c.nCommon, distinct: c.distinct.map(arr) };
}

function trainBatches(spec) {
  // the Python side's batches, replayed; Y, Z and the gradients kept at spec.record steps
  const M = spec.M, Y = Float64Array.from(spec.Y0), Z = Float64Array.from(spec.Z0);
  const opt = new YZ.Optimizer(spec.optimizer, M * M, spec);
  const gY = new Float64Array(M * M), gZ = new Float64Array(M * M);
  const keep = new Set(spec.record), out = { loss: [], rec: {} };
  spec.batches.forEach((b, s) => {
    const batch = new YZ.CountBatch(b.query.length, b.tok.length);
    batch.query.set(b.query); batch.label.set(b.label); batch.off.set(b.off);
    batch.tok.set(b.tok); batch.cnt.set(b.cnt); batch.logs();
    out.loss.push(YZ.lossGrad(M, Y, Z, batch, gY, gZ, null, null));
    const r = keep.has(s) ? { gY: arr(gY), gZ: arr(gZ) } : null;
    opt.step([Y, Z], [gY, gZ], [spec.etaY, spec.etaZ]);
    if (r) { r.Y = arr(Y); r.Z = arr(Z); out.rec[s] = r; }
  });
  return out;
}

function sampler(spec) {
  // aggregate counts over spec.batches batches: per class, how often drawn and each token's count
  const c = YZ.classesFromSpec(spec.data), s = new YZ.Sampler(c, spec.seed);
  const cls = new Array(c.K).fill(0), tok = [...Array(c.K)].map(() => new Array(c.M).fill(0));
  let badLength = 0, batch = null;
  for (let i = 0; i < spec.batches; i++) {
    batch = s.sample(spec.B, spec.T, batch);
    for (let b = 0; b < spec.B; b++) {
      const n = batch.cls[b];
      cls[n]++;
      let len = 0;
      for (let j = batch.off[b]; j < batch.off[b + 1]; j++) { tok[n][batch.tok[j]] += batch.cnt[j]; len += batch.cnt[j]; }
      if (len !== spec.T - 1 || batch.query[b] !== c.query[n] || batch.label[b] !== c.next[n]) badLength++;
    }
  }
  return { cls, tok, bad: badLength };
}

function run(spec) {
  // whole runs of the panel's engine (its own sampler): loss and entropy per step, per seed
  return spec.seeds.map((seed) => {
    const r = new YZ.Run(Object.assign({}, spec.job, { seed }));
    while (!r.done()) r.stepOnce();
    return { loss: arr(r.loss), entropy: arr(r.entropy), rows: arr(r.rows), S0: r.S0,
             refLoss: r.ref ? arr(r.ref.loss) : null, diverged: r.diverged };
  });
}

function theory(spec) {
  return {
    h: spec.ts.map((t) => YZ.hClosed(t, spec.M, spec.etaY)),
    gamma: spec.ts.map((t) => YZ.gamma(t, spec.M, spec.K, spec.etaY)),
    gammaCont: spec.ts.map((t) => YZ.gamma(t, spec.M, spec.K, spec.etaY, false)),
    omega1: YZ.omega1(spec.M),
    t0: YZ.transitionTime(spec.M, spec.K, spec.etaY),
    tau: spec.ts.map((t) => YZ.clockTau(t, spec.beta || 0)),
    clockSteps: spec.ts.map((t) => YZ.clockSteps(t, spec.beta || 0)),
  };
}

function errors(spec) {
  // each bad job must throw; report the messages
  return spec.jobs.map((job) => {
    try { new YZ.Run(job); return null; } catch (e) { return String(e.message); }
  });
}

const modes = {
  classes: (q) => classes(q.data),
  init: (q) => { const r = YZ.initYZ(q.M, q.init, q.seed); return { Y: arr(r.Y), Z: arr(r.Z) }; },
  train_batches: trainBatches,
  expected: (q) => {
    const c = YZ.classesFromSpec(q.data), r = YZ.expectedGradients(c, Float64Array.from(q.Y), Float64Array.from(q.Z));
    return { dY: arr(r.dY), dZ: arr(r.dZ), loss: r.loss };
  },
  population: (q) => { const r = YZ.populationSteps(q); return { loss: r.loss, Y: arr(r.Y), Z: arr(r.Z) }; },
  entropy: (q) => {
    const c = YZ.classesFromSpec(q.data), Z = Float64Array.from(q.Z);
    return { entropy: YZ.distinctEntropy(c, Z), cn: arr(YZ.attentionLimit(c, Z, q.cls, c.order[q.cls])) };
  },
  sampler, run, theory, errors,
  worker_source: () => ({ length: YZ.workerSource().length }),
};

if (!modes[req.mode]) throw new Error("unknown mode " + req.mode);
process.stdout.write(JSON.stringify(modes[req.mode](req)));
