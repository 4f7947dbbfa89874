// Prints the README's benchmark tables (markdown) from a results file, so the README states
// exactly what a run measured: `npx tsx bench/table.ts [bench/results/latest.json]`.
import { readFileSync } from 'node:fs';
import type { ChildResult } from './protocol.ts';

interface Results {
  generated: string;
  /** Processes per cell (bench/run.ts --processes; absent: one). */
  processes?: number;
  /** bench/run.ts --quick or not. */
  mode?: 'quick' | 'full';
  machine: { cpu: string; cores: number; memoryBytes: number; node: string; platform: string };
  loadAverage?: { before: number[]; after: number[] } | unknown;
  results: (ChildResult & { gradientsPerSecond?: number })[];
  ratios?: { workload: string; what: string; value: number; target: string; met: boolean | null }[];
}

const file = process.argv[2] ?? 'bench/results/latest.json';
const data = JSON.parse(readFileSync(file, 'utf8')) as Results;
const byKey = new Map(data.results.map((r) => [`${r.workload}/${r.impl}`, r]));

// Time per gradient at the workload's full n (peers run smaller are scaled, marked ~).
function time(workload: string, impl: string): number | null {
  const r = byKey.get(`${workload}/${impl}`);
  if (!r || r.status !== 'ok' || r.medianMs === undefined) return null;
  const scale = r.nominalN && r.n && r.nominalN !== r.n ? r.nominalN / r.n : 1;
  return r.medianMs * scale;
}

function scaled(workload: string, impl: string): boolean {
  const r = byKey.get(`${workload}/${impl}`);
  return !!r && !!r.nominalN && r.nominalN !== r.n;
}

function fmtMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 10) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toPrecision(2);
}

function ratio(a: number | null, b: number | null): string {
  return a === null || b === null ? '–' : (a / b).toFixed(a / b >= 10 ? 0 : 2);
}

const workloads = ['chain', 'rosenbrock', 'rosenbrock-1e4', 'advection-lw', 'advection-toon', 'mlp', 'lse', 'lse-1e4', 'lse-1.28e6', 'llsq', 'llsq-16392', 'logreg', 'gmm', 'ode', 'tiny']
  .filter((w) => data.results.some((r) => r.workload === w));
const ours = ['wasm-var', 'wasm-handle', 'js-var', 'js-handle', 'wasm-replay', 'js-replay'];
const peers = ['micrograd', 'tfjs-cpu', 'tfjs-wasm', 'jax-eager', 'jax-jit'];

const { machine } = data;
console.log(
  `Measured ${data.generated.slice(0, 10)} on ${machine.cpu}, ${machine.cores} cores, ` +
    `${Math.round(machine.memoryBytes / 2 ** 30)} GiB, Node ${machine.node} (\`${data.mode === 'quick' ? 'npm run bench:quick' : 'npm run bench'}\`, ` +
    `${(data.processes ?? 1) > 1 ? `the median of ${data.processes} processes` : 'one process'} per implementation, ` +
    // The runs each child times (bench/child.ts, FULL and QUICK).
    `median of ${data.mode === 'quick' ? '5–8' : '7–25'} runs after warm-up in each; times per gradient, tiny: per 20,000 gradients).\n`,
);

console.log('| workload | plain (no AD) | wasm Var | wasm handles | JS Var | JS handles | wasm replay | JS replay | record+reverse / plain (Var, handles) | replay / plain |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const w of workloads) {
  const plain = time(w, 'plain');
  const cells = ours.map((i) => {
    const t = time(w, i);
    return t === null ? '–' : fmtMs(t);
  });
  const replay = time(w, 'wasm-replay');
  console.log(
    `| ${w} | ${plain === null ? '–' : fmtMs(plain)} | ${cells.join(' | ')} | ` +
      `${ratio(time(w, 'wasm-var'), plain)}, ${ratio(time(w, 'wasm-handle'), plain)} | ${ratio(replay, plain)} |`,
  );
}

console.log('\nwasm core vs pure-JS mode (speed-up, record + reverse; replay):\n');
console.log('| workload | Var API | handles | replay |');
console.log('| --- | ---: | ---: | ---: |');
for (const w of workloads) {
  console.log(
    `| ${w} | ${ratio(time(w, 'js-var'), time(w, 'wasm-var'))} | ${ratio(time(w, 'js-handle'), time(w, 'wasm-handle'))} | ` +
      `${ratio(time(w, 'js-replay'), time(w, 'wasm-replay'))} |`,
  );
}

// ───────────── where the time goes in a scalar run: record, forward, reverse per tape node ─────────────
// Only from results that split the phases (scalar runs that read the value before the reverse
// sweep): an older results file prints no such table.
const PHASE_IMPLS = [['wasm-var', 'wasm Var'], ['wasm-handle', 'wasm handles'], ['js-var', 'JS Var'], ['js-handle', 'JS handles']] as const;

/** A run's phase medians in ns per node of its own tape, or null where it has no split. */
function phasesPerNode(workload: string, impl: string): { record: number; forward: number; reverse: number } | null {
  const r = byKey.get(`${workload}/${impl}`);
  const nodes = r?.info?.tapeNodes;
  if (!r || r.status !== 'ok' || typeof nodes !== 'number' || !(nodes > 0)) return null;
  const { recordMedianMs: rec, forwardMedianMs: fwd, reverseMedianMs: rev } = r;
  if (rec === undefined || fwd === undefined || rev === undefined) return null;
  return { record: (rec * 1e6) / nodes, forward: (fwd * 1e6) / nodes, reverse: (rev * 1e6) / nodes };
}

function fmtNs(ns: number): string {
  if (ns >= 10) return ns.toFixed(0);
  if (ns >= 1) return ns.toFixed(1);
  return ns <= 0 ? '0' : ns.toPrecision(1);
}

const phaseWorkloads = workloads.filter((w) => PHASE_IMPLS.some(([impl]) => phasesPerNode(w, impl) !== null));
if (phaseWorkloads.length) {
  console.log(
    '\nWhere the time goes: record, forward, reverse, ns per node (medians). Cells: `record / forward / reverse (total)`, ' +
      'each phase\'s median × 10⁶ / the run\'s tape nodes. Record: the JS façade writing op codes and operands (and constants); ' +
      'forward: the value sweep; reverse: clearing adjoints, the reverse sweep, reading the gradient. Nodes: the Var and handle tapes\':\n',
  );
  console.log(`| workload | nodes (Var, handles) | ${PHASE_IMPLS.map(([, label]) => label).join(' | ')} |`);
  console.log(`| --- | ---: |${PHASE_IMPLS.map(() => ' ---: |').join('')}`);
  for (const w of phaseWorkloads) {
    const nodes = (impl: string): string => {
      const n = byKey.get(`${w}/${impl}`)?.info?.tapeNodes;
      if (typeof n !== 'number') return '–';
      return n >= 1e6 ? `${(n / 1e6).toPrecision(3)}M` : n >= 1e3 ? `${(n / 1e3).toPrecision(3)}k` : String(n);
    };
    const cells = PHASE_IMPLS.map(([impl]) => {
      const p = phasesPerNode(w, impl);
      return p === null ? '–' : `${fmtNs(p.record)} / ${fmtNs(p.forward)} / ${fmtNs(p.reverse)} (${fmtNs(p.record + p.forward + p.reverse)})`;
    });
    console.log(`| ${w} | ${nodes('wasm-var')}, ${nodes('wasm-handle')} | ${cells.join(' | ')} |`);
  }
}

console.log('\nReplay (`compile`, forward + reverse in one call into the engine): generated sweeps, the wasm interpreter, and the JS mode:\n');
console.log('| workload | plain (no AD) | generated | interpreted | JS mode | generated / plain | interpreted / plain | generated vs interpreted | generated vs JS mode |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const w of workloads) {
  const plain = time(w, 'plain'), generated = time(w, 'wasm-replay'), interpreted = time(w, 'wasm-replay-interpreted'), js = time(w, 'js-replay');
  if (generated === null) continue;
  const show = (t: number | null): string => (t === null ? '–' : fmtMs(t));
  console.log(
    `| ${w} | ${show(plain)} | ${show(generated)} | ${show(interpreted)} | ${show(js)} | ${ratio(generated, plain)} | ${ratio(interpreted, plain)} | ` +
      `${ratio(interpreted, generated)} | ${ratio(js, generated)} |`,
  );
}

console.log('\nPeers, time per gradient over tapegrad wasm (handles): above 1, tapegrad is faster (~: run at a smaller n, scaled):\n');
console.log(`| workload | ${peers.join(' | ')} |`);
console.log(`| --- |${peers.map(() => ' ---: |').join('')}`);
for (const w of workloads) {
  const base = time(w, 'wasm-handle');
  const cells = peers.map((p) => {
    const r = byKey.get(`${w}/${p}`);
    if (r && r.status !== 'ok') return r.status === 'gradient-mismatch' ? 'wrong gradient' : 'n/a';
    const t = time(w, p);
    return t === null ? '–' : `${scaled(w, p) ? '~' : ''}${ratio(t, base)}`;
  });
  console.log(`| ${w} | ${cells.join(' | ')} |`);
}

// ───────────── vector forms (Vec API), side by side with the plain function and the peers ─────────────
const vecWorkloads = workloads.filter((w) => byKey.has(`${w}/wasm-vec`) || byKey.has(`${w}/wasm-vec-replay`));
if (vecWorkloads.length) {
  const show = (t: number | null, w?: string, impl?: string): string => (t === null ? '–' : `${w && impl && scaled(w, impl) ? '~' : ''}${fmtMs(t)}`);
  console.log(
    '\nVector forms (Vec API: one node per array op), ms per gradient: recorded afresh each run (`vec`) or compiled once and ' +
      'replayed (`vec replay`), beside the plain function, the scalar handle API and the vectorised peers. Ratios: vec / plain, ' +
      'replay / plain, the wasm core\'s speed-up over the pure-JS mode, and peers\' time over wasm vec (above 1: tapegrad is faster):\n',
  );
  console.log(
    '| workload | plain (no AD) | wasm vec | JS vec | wasm vec replay | JS vec replay | wasm handles (scalar) | jax-js jit(grad) | TF.js wasm | ' +
      'vec / plain | replay / plain | wasm vs JS (vec, replay) | jax-jit / vec | tfjs-wasm / vec |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  // lse is compared on GradBench's primitive form (max, sub, exp, sum, log: the `-literal`
  // implementations), as its README asks, in the row `lse (primitive form)`; the one-node built-in
  // logSumExp gets a row of its own below it, `lse (built-in logSumExp, info)`.
  const vecRows: [string, string, string][] = [];
  for (const w of vecWorkloads) {
    if (byKey.has(`${w}/wasm-vec-literal`) && w.startsWith('lse')) {
      vecRows.push([w, `${w} (primitive form)`, '-literal'], [w, `${w} (built-in logSumExp, info)`, '']);
    } else vecRows.push([w, w, '']);
  }
  for (const [w, label, form] of vecRows) {
    const plain = time(w, 'plain'), vec = time(w, `wasm-vec${form}`), jsVec = time(w, `js-vec${form}`);
    const replay = time(w, `wasm-vec${form}-replay`), jsReplay = time(w, `js-vec${form}-replay`);
    const peer = (p: string): string => {
      const r = byKey.get(`${w}/${p}`);
      if (r && r.status !== 'ok') return r.status === 'gradient-mismatch' ? 'wrong gradient' : 'n/a';
      return `${scaled(w, p) ? '~' : ''}${ratio(time(w, p), vec)}`;
    };
    console.log(
      `| ${label} | ${show(plain)} | ${show(vec)} | ${show(jsVec)} | ${show(replay)} | ${show(jsReplay)} | ${show(time(w, 'wasm-handle'))} | ` +
        `${show(time(w, 'jax-jit'), w, 'jax-jit')} | ${show(time(w, 'tfjs-wasm'), w, 'tfjs-wasm')} | ${ratio(vec, plain)} | ${ratio(replay, plain)} | ` +
        `${ratio(jsVec, vec)}, ${ratio(jsReplay, replay)} | ${peer('jax-jit')} | ${peer('tfjs-wasm')} |`,
    );
  }
  console.log('\nWhere a vector run goes (wasm vec, medians in ms: recording, forward sweep, tape.gradient) and what the tape holds:\n');
  console.log('| workload | record | forward | reverse | nodes | vector nodes | elements | B per element | tape B (nodes too) per element | tape MB |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const w of vecWorkloads) {
    const r = byKey.get(`${w}/wasm-vec`);
    if (!r || r.status !== 'ok') continue;
    const info = r.info ?? {};
    const num = (k: string): number | undefined => (typeof info[k] === 'number' ? (info[k] as number) : undefined);
    const ms = (v: number | undefined): string => (v === undefined ? '–' : fmtMs(v));
    const bpe = num('tapeBytesPerElement');
    console.log(
      `| ${w} | ${ms(r.recordMedianMs)} | ${ms(r.forwardMedianMs)} | ${ms(r.reverseMedianMs)} | ${num('tapeNodes') ?? '–'} | ${num('vectorNodes') ?? '–'} | ` +
        `${num('elements') ?? '–'} | ${num('elementBytes') ?? '–'} | ${bpe === undefined ? '–' : bpe.toFixed(2)} | ` +
        `${num('tapeBytes') === undefined ? '–' : (num('tapeBytes')! / 2 ** 20).toFixed(2)} |`,
    );
  }
  const literal = vecWorkloads.filter((w) => byKey.has(`${w}/wasm-vec-literal`));
  for (const w of literal) {
    console.log(
      `\n${w}, GradBench's literal form (x.max() recorded, then sub, exp, sum, log, add): wasm ${fmtMs(time(w, 'wasm-vec-literal') ?? NaN)} ms ` +
        `(${ratio(time(w, 'wasm-vec-literal'), time(w, 'plain'))}× plain; replay ${ratio(time(w, 'wasm-vec-literal-replay'), time(w, 'plain'))}×), ` +
        `JS mode ${ratio(time(w, 'js-vec-literal'), time(w, 'wasm-vec-literal'))}× slower; the one-node logSumExp: ${ratio(time(w, 'wasm-vec'), time(w, 'plain'))}× plain.`,
    );
  }
}

const rate = (impl: string): string => {
  const r = byKey.get(`tiny/${impl}`);
  return r?.gradientsPerSecond ? `${(r.gradientsPerSecond / 1e6).toFixed(2)} M/s` : '–';
};
if (byKey.has('tiny/plain') || [...byKey.keys()].some((k) => k.startsWith('tiny/'))) console.log(
  `\nTiny function (20 nodes, 3 inputs), gradients per second on one core: plain value only ${rate('plain')}; ` +
    `wasm Var API ${rate('wasm-var')}, handles ${rate('wasm-handle')}, replay \`gradient(x, out)\` ${rate('wasm-replay')} ` +
    `(interpreted ${rate('wasm-replay-interpreted')}), ` +
    `\`gradientBatch\` ${rate('wasm-batch')} (generated sweeps; interpreted: SIMD kernel ${rate('wasm-batch-simd')}, scalar kernel ${rate('wasm-batch-scalar')}); ` +
    `Hessian-vector products by \`hvpBatch\` ${rate('wasm-hvp-batch')} (JS mode ${rate('js-hvp-batch')}); JS mode replay ${rate('js-replay')}; ` +
    `micrograd-style ${rate('micrograd')}.`,
);
const hvp = time('rosenbrock-1e4', 'wasm-hvp'), g = time('rosenbrock-1e4', 'wasm-replay'), gi = time('rosenbrock-1e4', 'wasm-replay-interpreted');
const jsHvp = time('rosenbrock-1e4', 'js-hvp'), jsG = time('rosenbrock-1e4', 'js-replay');
if (hvp !== null || jsHvp !== null) console.log(
  `\nHessian-vector product on Rosenbrock n = 10^4 (replayed, generated sweeps): ${hvp === null ? '–' : fmtMs(hvp)} ms on wasm, ` +
    `${ratio(hvp, g)}× a generated gradient, ${ratio(hvp, gi)}× an interpreted one (JS mode: ${ratio(jsHvp, jsG)}× its gradient).`,
);

// The targets the run judged (bench/run.ts sets them): how many it met, and every one it missed.
const judged = (data.ratios ?? []).filter((r) => r.met !== null);
if (judged.length > 0) {
  const missed = judged.filter((r) => !r.met);
  console.log(`\nTargets judged in this run: ${judged.length - missed.length} of ${judged.length} met.` + (missed.length ? ' Missed:\n' : ''));
  if (missed.length) {
    console.log('| workload | measure | value | target |');
    console.log('| --- | --- | ---: | --- |');
    for (const r of missed) console.log(`| ${r.workload} | ${r.what} | ${r.value.toFixed(r.value >= 10 ? 1 : 2)} | ${r.target} |`);
  }
}
