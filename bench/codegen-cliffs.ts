// The costs of generated sweeps on tapes that used to fall off a cliff: a large loop body with an
// inner loop, the scalar GMM objective (3.4 M nodes), a non-periodic tape, losses whose
// per-sample bodies take one of two shapes by the data or by a guard, rows of as many features
// as the data say, a softmax loss whose labels pick a logit, a table whose points read the
// parameters their segment selects, polynomials of as many terms as the data say, and attention
// pooling over sequences of as many steps as the data say. Each (case, mode)
// runs in its own process, so no JIT state or heap carries over:
//   npx tsx bench/codegen-cliffs.ts                 # every case, generated and interpreted, a table
//   npx tsx bench/codegen-cliffs.ts --case=gmm --mode=generated   # one child (prints JSON)
//   npx tsx bench/codegen-cliffs.ts --sweep=straight              # straight code by length and function size
//   npx tsx bench/codegen-cliffs.ts --sweep=schedule              # the schedule against the interpreter
//   npx tsx bench/codegen-cliffs.ts --sweep=training              # gradient descent through guards that change path
//   npx tsx bench/codegen-cliffs.ts --case=gmm --mode=predict     # the schedule's predictor on a case
// Per case: recording alone (interpreted run), the first call with codegen (record + plan + emit +
// compile), the generation alone, the next 20 gradients (mean ns/node), the steady state (median
// ns/node of a window of gradients once V8 has settled, see child) and peak RSS against the interpreted run.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { compile, createTape, init, type Var } from '../src/index.ts';
import { codegenDeferral } from '../src/compile.ts';
import { WasmBackend, scheduleLimits } from '../src/wasm/backend.ts';
import { nestNeeds, planSizes, planSweeps, type SweepPlan } from '../src/wasm/codegen/plan.ts';
import { emitSweeps } from '../src/wasm/codegen/module.ts';
import { median } from './protocol.ts';
import { LOGREG_D, STRAIGHT_INPUTS, gmmData, gmmObjectiveVar, gmmPlain, logregData, logregPlain, mulberry32, straightTape } from './workloads.ts';

type CaseId = 'gmm' | 'nested' | 'straight' | 'straight-live' | 'branchy' | 'branchy-10k' | 'huber' | 'ragged' | 'softmax' | 'lookup' | 'horner' | 'attention';
const CASES: CaseId[] = ['gmm', 'nested', 'straight', 'straight-live', 'branchy', 'branchy-10k', 'huber', 'ragged', 'softmax', 'lookup', 'horner', 'attention'];

// plain: the function without AD on plain numbers (the non-periodic tape has none: its ops are
// drawn while recording).
interface Case { fn: (x: Var[]) => Var; inputs: number; x: Float64Array; what: string; plain?: (x: Float64Array) => number }

// The GMM objective as the bench's Var form records it, as a function of the 1650 parameters
// for compile.
function gmmCase(): Case {
  const g = gmmData(1000);
  const fn = (ps: Var[]): Var => gmmObjectiveVar(g, ps);
  return { fn, inputs: g.p.length, x: g.p, what: 'GMM objective, d = 10, K = 25, n = 1000 (scalar Var form)', plain: (x) => gmmPlain(x, g) };
}

// An outer loop of 300 iterations whose body (4,963 nodes as compile records it, a node per
// number) holds an inner loop of 24 iterations of 182 nodes (itself a loop of 25 seven-node
// steps and a few nodes), between straight
// stretches of other code.
function nestedCase(): Case {
  const inputs = 400;
  const fn = (x: Var[]): Var => {
    let s = x[0]!.mul(0);
    for (let t = 0; t < 300; t++) {
      let u = x[t]!.sin().add(s.mul(1e-3));
      for (let j = 0; j < 60; j++) u = u.mul(x[t + j]!).tanh().add(j * 1e-3);
      let acc = u;
      for (let j = 0; j < 24; j++) {
        let v = acc.mul(0.5).add(x[3 * j]!);
        for (let r = 0; r < 25; r++) v = v.mul(0.999).add(x[j + r]!.mul(1e-3)).abs().sqrt();
        acc = acc.add(v.square().mul(1e-3));
      }
      for (let j = 0; j < 50; j++) acc = acc.exp().mul(1e-2).add(u.mul(j * 1e-3)).log1p();
      s = s.add(acc);
    }
    return s;
  };
  const plain = (x: Float64Array): number => {
    let s = x[0]! * 0;
    for (let t = 0; t < 300; t++) {
      let u = Math.sin(x[t]!) + s * 1e-3;
      for (let j = 0; j < 60; j++) u = Math.tanh(u * x[t + j]!) + j * 1e-3;
      let acc = u;
      for (let j = 0; j < 24; j++) {
        let v = acc * 0.5 + x[3 * j]!;
        for (let r = 0; r < 25; r++) v = Math.sqrt(Math.abs(v * 0.999 + x[j + r]! * 1e-3));
        acc = acc + v * v * 1e-3;
      }
      for (let j = 0; j < 50; j++) acc = Math.log1p(Math.exp(acc) * 1e-2 + u * (j * 1e-3));
      s = s + acc;
    }
    return s;
  };
  const x = Float64Array.from({ length: inputs }, (_, i) => 0.1 + 0.001 * i);
  return { fn, inputs, x, what: 'outer loop of 300 iterations, ~3.9k-node body holding an inner loop of 24 × 155 nodes', plain };
}

// The logistic-regression loss of the bench's logreg workload (2,000 × 20) written as issue 12
// quotes it, with a branch on each label: the per-sample bodies come in two shapes, interleaved
// by the data, so no loop spans the samples.
// (branchy-10k: 10,000 samples, whose short straight runs between loops pass MAX_SLOTS: see SHORT_RUN.)
function branchyCase(n = 2000): Case {
  const { X, y, p } = logregData(n);
  const d = LOGREG_D;
  const fn = (w: Var[]): Var => {
    let loss = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      let z = w[d]!;
      for (let j = 0; j < d; j++) z = z.add(w[j]!.mul(X[i * d + j]!));
      loss = loss.add(y[i] === 1 ? z.softplus().sub(z) : z.softplus());
    }
    return loss;
  };
  // The bench's plain logreg: the same per-sample work without the branch (and the mean).
  return { fn, inputs: d + 1, x: p, what: `logistic regression, ${n.toLocaleString('en-US')} × 20, a branch on each label`, plain: (q) => logregPlain(q, X, y, n) };
}

// A Huber loss of a linear model, 1,000 samples × 5 features: each sample's branch is a guard on
// its residual (`a.le(delta)`), so the per-sample bodies come in two shapes chosen by the values,
// and training moves samples between them (a re-record per change of path).
function huberData(n: number, d: number): { X: Float64Array; Y: Float64Array } {
  const rand = mulberry32(11);
  const X = Float64Array.from({ length: n * d }, () => 2 * rand() - 1);
  // Mostly small noise, a fifth of the samples outliers: both branches are taken throughout.
  const Y = Float64Array.from({ length: n }, (_, i) => {
    let y = 0.2;
    for (let j = 0; j < d; j++) y += X[i * d + j]! * (j + 1) * 0.3;
    return y + (rand() < 0.2 ? 3 : 0.05) * (rand() - 0.5);
  });
  return { X, Y };
}

function huberCase(n = 1000): Case {
  const d = 5, delta = 0.25;
  const { X, Y } = huberData(n, d);
  const fn = (p: Var[]): Var => {
    let s = p[d]!.mul(0);
    for (let i = 0; i < n; i++) {
      let z = p[d]!;
      for (let j = 0; j < d; j++) z = z.add(p[j]!.mul(X[i * d + j]!));
      const res = z.sub(Y[i]!);
      const a = res.abs();
      s = s.add(a.le(delta).value ? res.square().mul(0.5) : a.sub(0.5 * delta).mul(delta));
    }
    return s.div(n);
  };
  const plain = (p: Float64Array): number => {
    let s = 0;
    for (let i = 0; i < n; i++) {
      let z = p[d]!;
      for (let j = 0; j < d; j++) z += p[j]! * X[i * d + j]!;
      const res = z - Y[i]!, a = Math.abs(res);
      s += a <= delta ? 0.5 * res * res : delta * (a - 0.5 * delta);
    }
    return s / n;
  };
  return { fn, inputs: d + 1, x: new Float64Array(d + 1), what: `Huber loss, ${n.toLocaleString('en-US')} × ${d}, a guard on each residual`, plain };
}

// Least squares over sparse rows: 1,500 rows of 5-29 features (as many as the data say), each
// row's inner loop its own length, the running sum as far back as the row before was long.
function raggedCase(n = 1500): Case {
  const rand = mulberry32(7), width = 30;
  const lengths = Array.from({ length: n }, () => 5 + Math.floor(rand() * 25));
  const X = Float64Array.from({ length: n * width }, () => rand() - 0.5), Y = Float64Array.from({ length: n }, () => rand() - 0.5);
  const fn = (w: Var[]): Var => {
    let s = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      let z = w[width - 1]!;
      for (let j = 0; j < lengths[i]!; j++) z = z.add(w[j]!.mul(X[i * width + j]!));
      s = s.add(z.sub(Y[i]!).square());
    }
    return s;
  };
  const plain = (w: Float64Array): number => {
    let s = 0;
    for (let i = 0; i < n; i++) {
      let z = w[width - 1]!;
      for (let j = 0; j < lengths[i]!; j++) z += w[j]! * X[i * width + j]!;
      s += (z - Y[i]!) ** 2;
    }
    return s;
  };
  return { fn, inputs: width, x: Float64Array.from({ length: width }, (_, k) => 0.02 * k - 0.3), what: `sparse least squares, ${n.toLocaleString('en-US')} rows of 5-29 features`, plain };
}

// Softmax regression: per sample a loop over the classes (the sample's features recorded at each),
// the log of the sum of their exps, minus the logit its label picks.
function softmaxCase(n = 800, classes = 5, d = 3): Case {
  const rand = mulberry32(5);
  const X = Float64Array.from({ length: n * d }, () => rand() - 0.5), labels = Int32Array.from({ length: n }, () => Math.floor(rand() * classes));
  const fn = (w: Var[]): Var => {
    let loss = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      const logits: Var[] = [];
      for (let c = 0; c < classes; c++) {
        let z = w[classes * d + c]!;
        for (let j = 0; j < d; j++) z = z.add(w[c * d + j]!.mul(X[i * d + j]!));
        logits.push(z);
      }
      let sum = logits[0]!.exp();
      for (let c = 1; c < classes; c++) sum = sum.add(logits[c]!.exp());
      loss = loss.add(sum.log().sub(logits[labels[i]!]!));
    }
    return loss;
  };
  const plain = (w: Float64Array): number => {
    let loss = 0;
    const logits = new Float64Array(classes);
    for (let i = 0; i < n; i++) {
      let sum = 0;
      for (let c = 0; c < classes; c++) {
        let z = w[classes * d + c]!;
        for (let j = 0; j < d; j++) z += w[c * d + j]! * X[i * d + j]!;
        logits[c] = z;
        sum += Math.exp(z);
      }
      loss += Math.log(sum) - logits[labels[i]!]!;
    }
    return loss;
  };
  return { fn, inputs: classes * (d + 1), x: Float64Array.from({ length: classes * (d + 1) }, (_, k) => 0.05 * k - 0.3), what: `softmax regression, ${n.toLocaleString('en-US')} samples × ${d} features, ${classes} classes`, plain };
}

// A piecewise-linear table of 10 segments fitted to 3,000 points by least squares: each point
// reads the two parameters its segment selects (the same code, inputs at another place).
function lookupCase(n = 3000, segments = 10): Case {
  const rand = mulberry32(3);
  const X = Float64Array.from({ length: n }, () => rand() * segments * 0.999), Y = Float64Array.from({ length: n }, () => rand());
  const fn = (w: Var[]): Var => {
    let loss = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      const k = Math.floor(X[i]!), t = X[i]! - k;
      loss = loss.add(w[k]!.mul(1 - t).add(w[k + 1]!.mul(t)).sub(Y[i]!).square());
    }
    return loss;
  };
  const plain = (w: Float64Array): number => {
    let loss = 0;
    for (let i = 0; i < n; i++) {
      const k = Math.floor(X[i]!), t = X[i]! - k;
      loss += (w[k]! * (1 - t) + w[k + 1]! * t - Y[i]!) ** 2;
    }
    return loss;
  };
  return { fn, inputs: segments + 1, x: Float64Array.from({ length: segments + 1 }, (_, k) => 0.1 * k), what: `piecewise-linear table of ${segments} segments, ${n.toLocaleString('en-US')} points`, plain };
}

// Polynomials of as many terms as the data say (2-7 per sample, Horner's scheme) fitted to 2,000
// points: each sample's inner loop is too short to pay for itself alone, its count the data's.
function hornerCase(n = 2000, terms = 8): Case {
  const rand = mulberry32(13);
  const degrees = Int32Array.from({ length: n }, () => 1 + Math.floor(rand() * 6));
  const X = Float64Array.from({ length: n }, () => 2 * rand() - 1), Y = Float64Array.from({ length: n }, () => rand());
  const fn = (w: Var[]): Var => {
    let loss = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      let p = w[degrees[i]!]!;
      for (let k = degrees[i]! - 1; k >= 0; k--) p = p.mul(X[i]!).add(w[k]!);
      loss = loss.add(p.sub(Y[i]!).square());
    }
    return loss;
  };
  const plain = (w: Float64Array): number => {
    let loss = 0;
    for (let i = 0; i < n; i++) {
      let p = w[degrees[i]!]!;
      for (let k = degrees[i]! - 1; k >= 0; k--) p = p * X[i]! + w[k]!;
      loss += (p - Y[i]!) ** 2;
    }
    return loss;
  };
  return { fn, inputs: terms, x: Float64Array.from({ length: terms }, (_, k) => 0.3 - 0.05 * k), what: `polynomials of 2-7 terms as the data say, ${n.toLocaleString('en-US')} points`, plain };
}

// Attention pooling over 600 sequences of 3-14 steps (as many as the data say): per sequence a
// score per step, the sum of their exps, and the values weighted by them; the loops over the
// steps read the scores at a distance the sequence's length decides.
function attentionCase(n = 600): Case {
  const rand = mulberry32(17);
  const lengths = Int32Array.from({ length: n }, () => 3 + Math.floor(rand() * 12));
  const X = Float64Array.from({ length: 16 * n }, () => rand() - 0.5), Y = Float64Array.from({ length: n }, () => rand());
  const fn = (w: Var[]): Var => {
    let loss = w[0]!.mul(0);
    for (let i = 0; i < n; i++) {
      const scores: Var[] = [];
      for (let t = 0; t < lengths[i]!; t++) scores.push(w[0]!.mul(X[16 * i + t]!).add(w[1]!));
      let sum = scores[0]!.exp();
      for (let t = 1; t < lengths[i]!; t++) sum = sum.add(scores[t]!.exp());
      let pooled = scores[0]!.exp().mul(X[16 * i]!);
      for (let t = 1; t < lengths[i]!; t++) pooled = pooled.add(scores[t]!.exp().mul(X[16 * i + t]!));
      loss = loss.add(pooled.div(sum).mul(w[2]!).sub(Y[i]!).square());
    }
    return loss;
  };
  const plain = (w: Float64Array): number => {
    let loss = 0;
    const scores = new Float64Array(16);
    for (let i = 0; i < n; i++) {
      for (let t = 0; t < lengths[i]!; t++) scores[t] = w[0]! * X[16 * i + t]! + w[1]!;
      let sum = Math.exp(scores[0]!);
      for (let t = 1; t < lengths[i]!; t++) sum += Math.exp(scores[t]!);
      let pooled = Math.exp(scores[0]!) * X[16 * i]!;
      for (let t = 1; t < lengths[i]!; t++) pooled += Math.exp(scores[t]!) * X[16 * i + t]!;
      loss += ((pooled / sum) * w[2]! - Y[i]!) ** 2;
    }
    return loss;
  };
  return { fn, inputs: 3, x: Float64Array.of(0.3, 0.4, 0.5), what: `attention pooling over ${n.toLocaleString('en-US')} sequences of 3-14 steps`, plain };
}

// The non-periodic tape of bench/workloads.ts (straightTape).
function straightCase(ops = 100_000, live = false): Case {
  const inputs = STRAIGHT_INPUTS;
  const x = Float64Array.from({ length: inputs }, (_, i) => 0.05 * i - 0.7);
  return { fn: straightTape(ops, live), inputs, x, what: `non-periodic tape of ${ops} random ops on recent nodes${live ? ', every node reaching the output' : ''}` };
}

function caseOf(id: CaseId, ops: number): Case {
  // --samples=n: the branchy loss at n samples (the table dispatcher's threshold was measured so).
  const samples = arg('samples');
  return id === 'gmm' ? gmmCase() : id === 'nested' ? nestedCase() : id === 'branchy' ? branchyCase(samples ? Number(samples) : undefined) : id === 'branchy-10k' ? branchyCase(10_000) : id === 'huber' ? huberCase()
    : id === 'ragged' ? raggedCase() : id === 'softmax' ? softmaxCase() : id === 'lookup' ? lookupCase() : id === 'horner' ? hornerCase() : id === 'attention' ? attentionCase() : straightCase(ops, id === 'straight-live');
}

const now = (): number => performance.now();

// Nodes of generated code, functions per sweep and the most slot locals in one function.
function planFacts(f: { recorded: { tape: { engine: unknown } } | null }): Record<string, number> {
  const plan = (f.recorded?.tape.engine as { plan?: SweepPlan | null }).plan;
  if (!plan) return {};
  const functions = [...plan.parts, ...plan.shapes.map(({ body }) => [body])];
  return { codeNodes: plan.size, functions: functions.length, slotLocals: Math.max(...functions.map((p) => nestNeeds(p).slotLocals)) };
}

async function child(id: CaseId, mode: 'generated' | 'interpreted'): Promise<void> {
  await init();
  // The sweep over straight-code sizes (--sweep=straight) sets the planner's sizes per child.
  const ops = Number(arg('ops') ?? 100_000);
  planSizes.maxSlots = Number(arg('max') ?? planSizes.maxSlots);
  // A raised limit measures generating that much code at the first call, which a function
  // otherwise leaves until its replays have paid for it (codegenDeferral).
  if (arg('max')) codegenDeferral.codeNodes = Infinity;
  planSizes.straightChunk = Number(arg('chunk') ?? planSizes.straightChunk);
  planSizes.functionNodes = Number(arg('fn') ?? planSizes.functionNodes);
  // --force-schedule (with --max=0): every tape scheduled, however predictable its ops.
  if (arg('force-schedule')) scheduleLimits.minMispredicted = 0;
  const c = caseOf(id, ops);
  let generateMs = 0;
  const original = WasmBackend.prototype.generateSweeps;
  WasmBackend.prototype.generateSweeps = function (this: WasmBackend, ...args: Parameters<typeof original>) {
    const t = now();
    try {
      return original.apply(this, args);
    } finally {
      generateMs += now() - t;
    }
  };
  const f = compile(c.fn, { inputs: c.inputs, codegen: mode === 'generated' });
  const out = new Float64Array(c.inputs);
  let t = now();
  f.record(c.x);
  const recordMs = now() - t;
  const size = f.size;
  t = now();
  f.gradient(c.x, out);
  const firstMs = now() - t;
  const next: number[] = [];
  for (let r = 0; r < 20; r++) {
    t = now();
    f.gradient(c.x, out);
    next.push(now() - t);
  }
  // The median time of calls to `call` over a window of 0.75 s (at least 5 calls).
  const windowMedian = (call: () => void): number => {
    const times: number[] = [];
    for (const stop = now() + 750; now() < stop || times.length < 5;) {
      t = now();
      call();
      times.push(now() - t);
    }
    return times.sort((p, q) => p - q)[times.length >> 1]!;
  };
  // Steady state: such windows of gradients, until one's median is within 5% of the one before
  // (at most 12 s). A large module tiers up function by function, and while it does its replays
  // can run far slower than in baseline code (83,750 nodes of straight code: 50-250 ns/node for
  // about a second before settling at 5.3), which one fixed 1.5 s window reported as the steady
  // state.
  const gradient = (): void => void f.gradient(c.x, out);
  let previous = windowMedian(gradient), steadyMs = windowMedian(gradient);
  for (const stop = now() + 10_500; Math.abs(steadyMs - previous) > 0.05 * steadyMs && now() < stop;) {
    previous = steadyMs;
    steadyMs = windowMedian(gradient);
  }
  const ns = (ms: number): number => (ms * 1e6) / size;
  // --directional: a jvp's and an hvp's time too (after 20 of each to warm up).
  let jvpNsPerNode: number | undefined, hvpNsPerNode: number | undefined;
  if (arg('directional')) {
    const t = Float64Array.from({ length: c.inputs }, (_, k) => (k % 3) - 1);
    const jvp = (): void => void f.jvp(c.x, t), hvp = (): void => void f.hvp(c.x, t, out);
    for (let r = 0; r < 20; r++) { jvp(); hvp(); }
    jvpNsPerNode = ns(windowMedian(jvp));
    hvpNsPerNode = ns(windowMedian(hvp));
  }
  // The plain function per tape node, timed in the interpreted child only.
  let plainNsPerNode: number | undefined;
  if (c.plain && mode === 'interpreted') {
    const plain = c.plain;
    let sink = 0;
    for (let r = 0; r < 20; r++) sink += plain(c.x);
    plainNsPerNode = ns(windowMedian(() => void (sink += plain(c.x))));
    if (!Number.isFinite(sink)) throw new Error(`${id}: the plain function is not finite`);
  }
  console.log(JSON.stringify({
    plainNsPerNode,
    id, mode, size, recordMs, generateMs, firstMs,
    firstNsPerNode: ns(firstMs),
    next20NsPerNode: ns(next.reduce((s, v) => s + v, 0) / next.length),
    firstReplaysNs: next.map((v) => Math.round(ns(v) * 10) / 10),
    steadyNsPerNode: ns(steadyMs), jvpNsPerNode, hvpNsPerNode,
    rssMB: process.resourceUsage().maxRSS / 1024,
    generated: f.generatedSweeps, reason: f.generatedSweepsReason, ...planFacts(f),
  }));
}

// Generation split into planning, emitting and compiling, best of 5 (the first includes warm-up
// of the generator's own JS), and the first plan by step: the passes in the core (use counts,
// the loop search, which body repeats which), then describing, folding and the rest in JS.
async function phases(id: CaseId): Promise<void> {
  await init();
  planSizes.maxSlots = Number(arg('max') ?? planSizes.maxSlots);
  const c = caseOf(id, Number(arg('ops') ?? 100_000));
  const f = compile(c.fn, { inputs: c.inputs, codegen: false });
  f.record(c.x);
  const { tape } = f.recorded!;
  const best = { plan: Infinity, emit: Infinity, compile: Infinity };
  let wasmBytes = 0;
  const firstPlan: number[] = [];
  const firstSteps: Record<string, number> = {};
  const bestSteps: Record<string, number> = {};
  // Fresh pages cost a fault each (about 2 µs on the bench VM): minor page faults per step.
  const firstFaults: Record<string, number> = {};
  const faults = (): number => process.resourceUsage().minorPageFault;
  for (let k = 0; k < 5; k++) {
    let t = now();
    let stepStart = t, faultsAt = faults();
    const lap = (step: string): void => {
      bestSteps[step] = Math.min(bestSteps[step] ?? Infinity, now() - stepStart);
      if (k === 0) {
        firstSteps[step] = now() - stepStart;
        firstFaults[step] = faults() - faultsAt;
      }
      stepStart = now();
      faultsAt = faults();
    };
    // As generateSweeps does it: the whole-tape passes in the core.
    const passes = (tape.engine as WasmBackend).plannerPasses(c.inputs, tape.size)!;
    lap('uses');
    const plan = planSweeps(tape.engine.views, c.inputs, tape.size, f.recorded!.outputs, passes, planSizes.maxSlots, lap);
    lap('rest');
    best.plan = Math.min(best.plan, now() - t);
    if (k === 0) firstPlan.push(now() - t);
    if (!plan) continue;
    t = now();
    const bytes = emitSweeps(plan, 'replay');
    wasmBytes = bytes.length;
    best.emit = Math.min(best.emit, now() - t);
    if (k === 0) firstPlan.push(now() - t);
    t = now();
    new WebAssembly.Module(bytes);
    best.compile = Math.min(best.compile, now() - t);
  }
  console.log(JSON.stringify({ id, size: tape.size, ...best, firstPlan: firstPlan[0], firstEmit: firstPlan[1], firstSteps, bestSteps, firstFaults, wasmBytes }));
}

// Each (case, mode) runs RUNS times, the modes alternating, and each figure is the median (5: on
// the bench VM single runs of one build moved by up to 40% in a day, and 3 were not enough): the
// machine may be shared, and a load spike in one child would otherwise decide a ratio.
const RUNS = 5;

const machine = (): string => `${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version}`;

function parent(only: CaseId[]): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const rows: string[] = [], reasons: string[] = [];
  type Result = Record<string, number> & { generated: string; reason: string | null };
  for (const id of only) {
    const run = (mode: string): Result => {
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'codegen-cliffs.ts'), `--case=${id}`, `--mode=${mode}`], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`${id} ${mode} failed:\n${r.stderr}`);
      const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as Result;
      console.error(JSON.stringify(result));
      return result;
    };
    const gs: Result[] = [], is: Result[] = [];
    for (let k = 0; k < RUNS; k++) {
      gs.push(run('generated'));
      is.push(run('interpreted'));
    }
    const g = (key: string): number => median(gs.map((r) => r[key]!));
    const i = (key: string): number => median(is.map((r) => r[key]!));
    // Recording alone: the interpreted runs' (codegen: false), so that what a compiled function
    // does for its generator while it records (warm.ts warms the generator's passes there)
    // counts against the first call, not in the recording it is divided by.
    const recording = i('recordMs');
    const plain = is[0]!.plainNsPerNode === undefined ? undefined : i('plainNsPerNode');
    const first = g('recordMs') / recording;
    const f = (v: number, digits = 1): string => v.toFixed(digits);
    const code = gs[0]!.generated === 'active' ? `${gs[0]!.codeNodes} in ${gs[0]!.functions} functions`
      : gs[0]!.generated === 'scheduled' ? 'none: scheduled' : 'none: interpreted';
    if (gs[0]!.reason) reasons.push(`${id}: ${gs[0]!.reason}`);
    rows.push(
      `| ${id} | ${(g('size') / 1e6).toFixed(2)} M | ${code} | ${f(recording, 0)} ms | ${f(g('generateMs'), 0)} ms | ${f(first, 2)}× ` +
      `| ${f(g('next20NsPerNode'), 2)} (${f(i('next20NsPerNode'), 2)}) | ${f(g('steadyNsPerNode'), 2)} (${f(i('steadyNsPerNode'), 2)}) ` +
      `| ${plain === undefined ? '–' : `${f(plain, 2)} (${f(g('steadyNsPerNode') / plain, 2)}×)`} | ${f(g('rssMB'), 0)} MB (${f(g('rssMB') / i('rssMB'), 2)}×) |`,
    );
  }
  const out = [
    `Medians of ${RUNS} runs per mode, one process each, ${new Date().toISOString().slice(0, 10)}, on ${machine()}. ` +
      'ns/node: per gradient (forward + reverse) per tape node; interpreted in parentheses; the plain function (no AD) per node of its tape. ' +
      'Recording: with codegen off; first call: recording, the generator\'s warm-up and generation.\n',
    '| tape | nodes | nodes of code | recording | generation | first call ÷ recording | gradients 2–21, ns/node | steady, ns/node | plain function, ns/node (steady ÷ plain) | peak RSS (× interpreted) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    ...reasons.map((r) => `\n${r}`),
  ].join('\n');
  console.log(out);
  // README's table (npm run readme) comes from the run over every case.
  if (only.length === CASES.length) writeFileSync(join(here, 'results', 'codegen-cliffs.md'), `${out}\n`);
}

// Generated straight-line code against the interpreter by tape length (the limit lifted), and
// by body and function size at one length: the measurements behind MAX_SLOTS, STRAIGHT_CHUNK and
// FUNCTION_NODES.
function straightSweep(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  type Result = Record<string, number>;
  const run = (args: string[]): Result => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'codegen-cliffs.ts'), '--case=straight', ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`straight ${args.join(' ')} failed:\n${r.stderr}`);
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as Result;
    console.error(JSON.stringify({ args, ...result, firstReplaysNs: undefined }));
    return result;
  };
  const f = (v: number, digits = 1): string => v.toFixed(digits);
  const length = ['| ops | nodes | recording | generation | gradients 2–21, ns/node | steady, ns/node | steady, generated / interpreted |', '| --- | --- | --- | --- | --- | --- | --- |'];
  const print = (lines: string[], line: string): void => { lines.push(line); console.log(line); };
  length.forEach((l) => console.log(l));
  for (const ops of [3000, 6000, 12000, 40000]) {
    const gs: Result[] = [], is: Result[] = [];
    for (let k = 0; k < RUNS; k++) {
      gs.push(run([`--ops=${ops}`, '--max=100000000', '--mode=generated']));
      is.push(run([`--ops=${ops}`, '--mode=interpreted']));
    }
    const g = (key: string): number => median(gs.map((r) => r[key]!)), i = (key: string): number => median(is.map((r) => r[key]!));
    const recording = median(gs.map((r) => r.recordMs! - r.generateMs!));
    print(length,
      `| ${ops} | ${gs[0]!.size} | ${f(recording, 0)} ms | ${f(g('generateMs'), 0)} ms | ${f(g('next20NsPerNode'), 1)} (${f(i('next20NsPerNode'), 1)}) ` +
      `| ${f(g('steadyNsPerNode'), 2)} (${f(i('steadyNsPerNode'), 2)}) | ${f(g('steadyNsPerNode') / i('steadyNsPerNode'), 2)} |`,
    );
  }
  const sizes = ['| body nodes | function nodes | first call, µs/node | gradients 2–21, ns/node | steady, ns/node |', '| --- | --- | --- | --- | --- |'];
  console.log(`\n${sizes.join('\n')}`);
  for (const [chunk, fn] of [[128, 128], [128, 512], [128, 2048], [512, 512], [1024, 1024], [4096, 4096], [16384, 16384]]) {
    const gs: Result[] = [];
    for (let k = 0; k < RUNS; k++) gs.push(run(['--ops=12000', '--max=100000000', `--chunk=${chunk}`, `--fn=${fn}`, '--mode=generated']));
    const m = (key: string): number => median(gs.map((r) => r[key]!));
    print(sizes, `| ${chunk} | ${fn} | ${f(m('firstNsPerNode') / 1000, 2)} | ${f(m('next20NsPerNode'), 2)} | ${f(m('steadyNsPerNode'), 2)} |`);
  }
  // README's two tables (npm run readme).
  writeFileSync(join(here, 'results', 'codegen-straight-length.md'), `${length.join('\n')}\n`);
  writeFileSync(join(here, 'results', 'codegen-straight-size.md'), `${sizes.join('\n')}\n`);
}

// The schedule against the interpreter: the straight tape by length (on this machine's caches),
// and the loop tapes forced onto it (the policy keeps them interpreted). Medians of 3 runs.
function scheduleSweep(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  type Result = Record<string, number> & { generated: string };
  const run = (args: string[]): Result => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'codegen-cliffs.ts'), ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${args.join(' ')} failed:\n${r.stderr}`);
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as Result;
    console.error(JSON.stringify({ args, ...result, firstReplaysNs: undefined, reason: undefined }));
    return result;
  };
  const f = (v: number, digits = 2): string => v.toFixed(digits);
  const lines = [
    `Medians of 3 runs per mode, one process each, ${new Date().toISOString().slice(0, 10)}, on ${machine()}. ns/node per gradient; "forced": a tape the policy interprets, scheduled anyway.\n`,
    '| tape | nodes | replay | schedule built with the plan, ms | first call ÷ recording | gradients 2–21, ns/node | steady, ns/node (interpreted) | steady, scheduled / interpreted | peak RSS (× interpreted) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const rows: [string, string[]][] = [
    // The live variant by length: the bench's own tape leads nowhere from more of its nodes the
    // longer it is (57% at 100k ops, nearly all at 1000k), which the schedule leaves out.
    ['straight, 100k ops', ['--case=straight', '--ops=100000']],
    ...[100_000, 300_000, 1_000_000, 2_000_000].map((ops): [string, string[]] => [`straight-live, ${ops / 1000}k ops`, ['--case=straight-live', `--ops=${ops}`]]),
    ...(['branchy', 'nested', 'gmm'] as const).map((id): [string, string[]] => [`${id}, forced`, [`--case=${id}`, '--max=0', '--force-schedule=1']]),
  ];
  lines.forEach((l) => console.log(l));
  const directional: string[] = [];
  for (const [label, args] of rows) {
    const gs: Result[] = [], is: Result[] = [];
    const straight = label.startsWith('straight');
    const extra = straight ? ['--directional=1'] : [];
    for (let k = 0; k < 3; k++) {
      gs.push(run([...args, ...extra, '--mode=generated']));
      is.push(run([...args.filter((a) => !a.startsWith('--max') && !a.startsWith('--force')), ...extra, '--mode=interpreted']));
    }
    const g = (key: string): number => median(gs.map((r) => r[key]!)), i = (key: string): number => median(is.map((r) => r[key]!));
    const first = median(gs.map((r) => r.recordMs! / (r.recordMs! - r.generateMs!)));
    const line = `| ${label} | ${(g('size') / 1e6).toFixed(2)} M | ${gs[0]!.generated} | ${f(g('generateMs'), 0)} | ${f(first)}× | ${f(g('next20NsPerNode'))} (${f(i('next20NsPerNode'))}) ` +
      `| ${f(g('steadyNsPerNode'))} (${f(i('steadyNsPerNode'))}) | ${f(g('steadyNsPerNode') / i('steadyNsPerNode'))} | ${f(g('rssMB') / i('rssMB'))}× |`;
    lines.push(line);
    console.log(line);
    if (straight) directional.push(`| ${label} | ${f(g('jvpNsPerNode'))} (${f(i('jvpNsPerNode'))}) | ${f(g('hvpNsPerNode'))} (${f(i('hvpNsPerNode'))}) |`);
  }
  lines.push('', '| jvp and hvp | jvp, ns/node (interpreted) | hvp, ns/node (interpreted) |', '| --- | --- | --- |', ...directional);
  writeFileSync(join(here, 'results', 'codegen-schedule.md'), `${lines.join('\n')}\n`);
}

// Gradient descent on the huber case, 400 steps from 0 at a rate of 0.5: training moves samples
// across the guard's threshold, so a compiled function records again on some steps (about one in
// eight) and keeps its recording on the rest. --way=generated|interpreted: compile with codegen
// on or off; --way=tape: a fresh recording per step on a tape of one's own (the Var API).
async function trainingChild(way: 'generated' | 'interpreted' | 'tape'): Promise<void> {
  await init();
  const c = huberCase();
  const steps = 400;
  const p = new Float64Array(c.inputs), g = new Float64Array(c.inputs);
  let step: () => void;
  let f: ReturnType<typeof compile> | null = null;
  if (way === 'tape') {
    const tape = await createTape();
    step = () => {
      tape.reset();
      const xs = tape.variables(p);
      tape.gradient(c.fn(xs), xs, 1, g);
    };
  } else {
    const fn = f = compile(c.fn, { inputs: c.inputs, codegen: way === 'generated' });
    step = () => void fn.gradient(p, g);
  }
  const times: number[] = [];
  const start = now();
  for (let k = 0; k < steps; k++) {
    const t = now();
    step();
    times.push(now() - t);
    for (let j = 0; j < c.inputs; j++) p[j]! -= 0.5 * g[j]!;
  }
  const totalMs = now() - start;
  console.log(JSON.stringify({
    way, steps, totalMs, firstMs: times[0], slowestLaterMs: Math.max(...times.slice(1)), rerecords: f?.rerecords ?? 0,
    loss: c.plain!(p), params: Array.from(p), generated: f?.generatedSweeps ?? 'none', reason: f?.generatedSweepsReason ?? null,
  }));
}

function trainingSweep(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  type Result = Record<string, number> & { generated: string };
  const runs: Record<string, Result[]> = { generated: [], interpreted: [], tape: [] };
  for (let k = 0; k < RUNS; k++) {
    for (const way of Object.keys(runs)) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', join(here, 'codegen-cliffs.ts'), '--mode=training', `--way=${way}`], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`training ${way} failed:\n${r.stderr}`);
      const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as Result;
      console.error(JSON.stringify(result));
      runs[way]!.push(result);
    }
  }
  const ends = new Set(Object.values(runs).flat().map((r) => JSON.stringify(r.params)));
  if (ends.size !== 1) throw new Error(`training: the ways ended at different parameters: ${[...ends].join(', ')}`);
  const label = { generated: 'compile (codegen on)', interpreted: 'compile, `{ codegen: false }`', tape: 'a fresh tape per step (Var API)' } as Record<string, string>;
  const lines = [
    `Medians of ${RUNS} runs per way, one process each, ${new Date().toISOString().slice(0, 10)}, on ${machine()}. ` +
      `Gradient descent on the huber tape (${huberCase().what}), 400 steps; every way ends at the same parameters, bit for bit (loss ${median(runs.tape!.map((r) => r.loss)).toPrecision(6)}).\n`,
    '| way | 400 steps | first step | slowest later step | re-records |',
    '| --- | --- | --- | --- | --- |',
    ...Object.entries(runs).map(([way, rs]) => {
      const m = (key: string): number => median(rs.map((r) => r[key]!));
      return `| ${label[way]} | ${m('totalMs').toFixed(0)} ms | ${m('firstMs').toFixed(1)} ms | ${m('slowestLaterMs').toFixed(1)} ms | ${way === 'tape' ? '–' : m('rerecords')} |`;
    }),
  ];
  console.log(lines.join('\n'));
  writeFileSync(join(here, 'results', 'codegen-training.md'), `${lines.join('\n')}\n`);
}

// The share of a case's ops that the schedule's predictor (assembly/schedule.ts, survey: the op
// last seen after the same three ops, in a hashed table of 4,096) guesses wrong.
async function predict(id: CaseId): Promise<void> {
  await init();
  const c = caseOf(id, Number(arg('ops') ?? 100_000));
  const f = compile(c.fn, { inputs: c.inputs, codegen: false });
  f.record(c.x);
  const { op } = f.recorded!.tape.engine.views;
  const table = new Uint8Array(4096);
  let history = 0, misses = 0;
  for (let i = c.inputs; i < f.size; i++) {
    const slot = Math.imul(history, 0x9e3779b1) >>> 20;
    if (table[slot] !== op[i]) {
      misses++;
      table[slot] = op[i]!;
    }
    history = ((history << 6) ^ op[i]!) & 0x3ffff;
  }
  console.log(JSON.stringify({ id, size: f.size, mispredicted: misses / (f.size - c.inputs) }));
}

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const caseArg = arg('case'), modeArg = arg('mode');
if (modeArg === 'phases') await phases(caseArg as CaseId);
else if (modeArg === 'training') await trainingChild(arg('way') as 'generated' | 'interpreted' | 'tape');
else if (modeArg === 'predict') await predict(caseArg as CaseId);
else if (modeArg) await child(caseArg as CaseId, modeArg as 'generated' | 'interpreted');
else if (arg('sweep') === 'straight') straightSweep();
else if (arg('sweep') === 'schedule') scheduleSweep();
else if (arg('sweep') === 'training') trainingSweep();
else parent(caseArg ? (caseArg.split(',') as CaseId[]) : CASES);
