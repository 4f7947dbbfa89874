// Cost per node of a fresh recording, phase by phase, on mixed scalar code (issue 13's
// measurements): record (the façade writing nodes), forward (the first read of the output's
// value), reverse (backward and reading every gradient), for the Var API on both engines from
// 10^3 to 10^7 nodes and the handle API at 10^5 and 10^6 (and 9·10^6 on wasm, with and without
// `expectedNodes`); plus the transcendental chain through the Var API over the plain function.
// Processes per (case, engine, size), nothing carried over between them; each row is the one of
// median total among PROCESSES (see main).
//
//   npx tsx bench/per-node.ts                 # everything (~13 min: 3 processes a row), writes bench/results/per-node.{json,md}
//   npx tsx bench/per-node.ts --quick         # fewer sizes and runs, prints only
//   npx tsx bench/per-node.ts --quick --only=wasm,handle   # the rows whose case/API/engine match
//   npx tsx bench/per-node.ts --child=<json>  # one measurement (what the parent spawns)
//   DETACH=1 npx tsx bench/per-node.ts ...    # each process detaches one ArrayBuffer first, as
//     loading the SIMD core did before src/wasm/loader.ts's inflate (V8 then checks every typed-array access)
import { execFileSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { GCProfiler } from 'node:v8';
import { writeFileSync, mkdirSync } from 'node:fs';
import { createTape, type BackendKind, type Tape, type Var } from '../src/index.ts';
import { RESULT_MARKER, median } from './protocol.ts';
import { CHAIN_H, CHAIN_X0, rosenbrockMixedHandles, rosenbrockMixedVars } from './workloads.ts';

// 'var-reused': the Var API with the input Vars of one recording reused by the next
// (`tape.variables(x, reuse)`), so a recording keeps no new objects.
type Api = 'handle' | 'var' | 'var-reused';
interface Job {
  case: 'mixed' | 'chain';
  api: Api | 'plain';
  backend: BackendKind;
  /** Rosenbrock terms (mixed) or chain steps. */
  n: number;
  runs: number;
  /** The tape made with `expectedNodes` for its recording (room from the start: on wasm a
   *  memory that never grows). */
  expected?: boolean;
}

interface Measured {
  job: Job;
  nodes: number;
  recordNs: number;
  forwardNs: number;
  reverseNs: number;
  totalNs: number;
  /** Plain function, ns per step (chain) */
  plainNs?: number;
  /** The first run of the process (cold: nothing optimised yet, the core loaded just before). */
  firstRecordNs: number;
  firstForwardNs: number;
  firstReverseNs: number;
  /** jvp and hvp on the recorded tape, ns per node (mixed, handles). */
  jvpNs?: number;
  hvpNs?: number;
  runs: number;
  minorGcPerRun: number;
  minorGcMsPerRun: number;
  majorGcPerRun: number;
  majorGcMsPerRun: number;
  check: number;
}

const WARM_MS = 500;
/** Processes per row (see main). */
const PROCESSES = 3;
const TIMED_MS = 1500;
const MAX_RUNS = 3000;


function point(n: number): Float64Array {
  const x = new Float64Array(n + 1);
  for (let i = 0; i <= n; i++) x[i] = 0.5 + 0.4 * Math.sin(0.37 * i + 0.1);
  return x;
}

function chainVar(tape: Tape, n: number): { x0: Var; x: Var } {
  const x0 = tape.variable(CHAIN_X0);
  return { x0, x: chainSteps(x0, n) };
}

// The loop alone, returning its Var (see rosenbrockMixedTerms in workloads.ts: the object built
// after it made V8 deoptimise on every call).
function chainSteps(x: Var, n: number): Var {
  for (let k = 0; k < n; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(CHAIN_H));
  return x;
}

function chainPlain(n: number): number {
  let x = CHAIN_X0;
  for (let k = 0; k < n; k++) x = x + CHAIN_H * (Math.sin(x) * Math.exp(Math.cos(x)) - Math.log1p(x * x));
  return x;
}

async function child(job: Job): Promise<Measured> {
  const gc = { minor: 0, minorMs: 0, major: 0, majorMs: 0 };
  // v8.GCProfiler, not a PerformanceObserver of 'gc' entries: those arrive asynchronously, and
  // some processes reported none at all (0 scavenges on 9e5 Var nodes, where the others had 2.2).
  const profiler = new GCProfiler();
  if (process.env.DETACH) {
    const buffer = new ArrayBuffer(8);
    structuredClone(buffer, { transfer: [buffer] });
  }
  // Nine nodes a term and the input.
  const tape = await createTape({ backend: job.backend, ...(job.expected ? { expectedNodes: 9 * job.n + 4 } : {}) });
  const x = point(job.n);
  const xs = new Int32Array(x.length);
  const grads = new Float64Array(x.length);
  let check = 0;
  let plain: number | undefined;
  let lastOut = -1;
  const reused: Var[] = [];
  const runOnce = (): [number, number, number] => {
    const t0 = performance.now();
    tape.reset();
    let t1: number, t2: number;
    if (job.case === 'chain') {
      const { x0, x: out } = chainVar(tape, job.n);
      t1 = performance.now();
      check = out.value;
      t2 = performance.now();
      tape.backward(out);
      grads[0] = x0.grad;
    } else if (job.api === 'handle') {
      const s = rosenbrockMixedHandles(tape, x, xs);
      lastOut = s;
      t1 = performance.now();
      check = tape.handles.value(s);
      t2 = performance.now();
      tape.handles.gradient(s, xs, 1, grads);
    } else {
      const { xs: vs, s } = rosenbrockMixedVars(tape, x, job.api === 'var-reused' ? reused : undefined);
      t1 = performance.now();
      check = s.value;
      t2 = performance.now();
      grads.set(tape.gradient(s, vs));
    }
    const t3 = performance.now();
    return [t1 - t0, t2 - t1, t3 - t2];
  };
  if (job.case === 'chain') {
    const plainTimes: number[] = [];
    for (let r = 0; r < job.runs + 3; r++) {
      const t0 = performance.now();
      check += chainPlain(job.n) * 0;
      plainTimes.push(performance.now() - t0);
    }
    plain = median(plainTimes.slice(3)) * 1e6 / job.n;
  }
  const first = runOnce();
  // Warm-up and timed runs by count and by time, so small tapes run often enough for the JIT
  // and the medians, and large ones at least `runs` times.
  for (let r = 0, t0 = performance.now(); r < 3 || performance.now() - t0 < WARM_MS; r++) runOnce();
  const rec: number[] = [], fwd: number[] = [], rev: number[] = [], tot: number[] = [];
  profiler.start();
  for (let t0 = performance.now(); rec.length < job.runs || (performance.now() - t0 < TIMED_MS && rec.length < MAX_RUNS);) {
    const [a, b, c] = runOnce();
    rec.push(a); fwd.push(b); rev.push(c); tot.push(a + b + c);
  }
  const runs = rec.length;
  for (const { gcType, cost } of profiler.stop().statistics) {
    // cost: µs. Incremental marking steps and weak callbacks belong to the major collections.
    if (gcType === 'Scavenge' || gcType === 'MinorMarkCompact') { gc.minor++; gc.minorMs += cost / 1000; }
    else if (gcType === 'MarkSweepCompact') { gc.major++; gc.majorMs += cost / 1000; }
    else gc.majorMs += cost / 1000;
  }
  const nodes = tape.size;
  const ns = (ms: number): number => (ms * 1e6) / nodes;
  // The tangent sweeps on the last recording (handles): a jvp, and an hvp (tangent sweep, then
  // the reverse sweep with tangents), each whole call per node.
  let second: { jvpNs: number; hvpNs: number } | undefined;
  if (job.case === 'mixed' && job.api === 'handle') {
    const inputs = Array.from(xs, (h) => tape.handles.toVar(h));
    const out = tape.handles.toVar(lastOut);
    const v = new Float64Array(inputs.length).fill(1);
    const time = (f: () => void): number => {
      const t: number[] = [];
      for (let r = 0, t0 = performance.now(); r < 5 || (performance.now() - t0 < TIMED_MS / 3 && r < MAX_RUNS); r++) {
        const a = performance.now();
        f();
        t.push(performance.now() - a);
      }
      return ns(median(t.slice(2)));
    };
    second = { jvpNs: time(() => tape.jvp(inputs, v, [out])), hvpNs: time(() => tape.hvp(out, inputs, v)) };
  }
  return {
    job, nodes,
    recordNs: ns(median(rec)), forwardNs: ns(median(fwd)), reverseNs: ns(median(rev)), totalNs: ns(median(tot)),
    firstRecordNs: ns(first[0]), firstForwardNs: ns(first[1]), firstReverseNs: ns(first[2]),
    ...(plain !== undefined ? { plainNs: plain } : {}),
    ...second,
    runs,
    minorGcPerRun: gc.minor / runs, minorGcMsPerRun: gc.minorMs / runs,
    majorGcPerRun: gc.major / runs, majorGcMsPerRun: gc.majorMs / runs,
    check,
  };
}

function jobs(quick: boolean): Job[] {
  const out: Job[] = [];
  const runsFor = (terms: number): number => (quick ? 5 : terms >= 1e6 ? 5 : terms >= 1e5 ? 9 : 15);
  for (const backend of ['wasm', 'js'] as const) {
    // Handles: 9 nodes per term (8 ops and the input); 1.25e4 and 1.25e5 terms are about 10^5 and 10^6 nodes.
    for (const terms of quick ? [12_500] : [12_500, 125_000]) out.push({ case: 'mixed', api: 'handle', backend, n: terms, runs: runsFor(terms) });
    // Past 1.3 M nodes a wasm tape grows its memory, unless made for its size.
    if (backend === 'wasm') for (const terms of quick ? [] : [1_000_000]) {
      out.push({ case: 'mixed', api: 'handle', backend, n: terms, runs: runsFor(terms) });
      out.push({ case: 'mixed', api: 'handle', backend, n: terms, runs: runsFor(terms), expected: true });
    }
    for (const terms of quick ? [100, 12_500] : [100, 1_000, 10_000, 100_000, 1_000_000]) out.push({ case: 'mixed', api: 'var', backend, n: terms, runs: runsFor(terms) });
    const reusedTerms = backend === 'wasm' ? [100, 1_000, 10_000, 100_000, 1_000_000] : [100_000, 1_000_000];
    for (const terms of quick ? [100_000] : reusedTerms) out.push({ case: 'mixed', api: 'var-reused', backend, n: terms, runs: runsFor(terms) });
    out.push({ case: 'chain', api: 'var', backend, n: quick ? 30_000 : 300_000, runs: quick ? 5 : 9 });
  }
  return out;
}

const apiName = (api: Job['api']): string => (api === 'var' ? 'Var' : api === 'var-reused' ? 'Var, inputs reused' : 'handles');

function table(results: Measured[]): string {
  const lines: string[] = [];
  lines.push('| API | engine | nodes | record | forward | reverse | total | ns per term | minor GCs / run (ms) | major GCs / run (ms) |');
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const f = (x: number): string => x.toFixed(x >= 10 ? 1 : 2);
  for (const r of results.filter((m) => m.job.case === 'mixed')) {
    lines.push(
      `| ${apiName(r.job.api)}${r.job.expected ? ', expectedNodes' : ''} | ${r.job.backend} | ${r.nodes.toLocaleString('en-US')} | ${f(r.recordNs)} | ${f(r.forwardNs)} | ` +
        `${f(r.reverseNs)} | **${f(r.totalNs)}** | ${f((r.totalNs * r.nodes) / r.job.n)} | ${f(r.minorGcPerRun)} (${f(r.minorGcMsPerRun)}) | ${f(r.majorGcPerRun)} (${f(r.majorGcMsPerRun)}) |`,
    );
  }
  lines.push('');
  lines.push('| first run of a process | engine | nodes | record | forward | reverse | total | total, later runs |');
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results.filter((m) => m.job.case === 'mixed' && m.nodes > 1e5)) {
    const total = r.firstRecordNs + r.firstForwardNs + r.firstReverseNs;
    lines.push(
      `| ${apiName(r.job.api)}${r.job.expected ? ', expectedNodes' : ''} | ${r.job.backend} | ${r.nodes.toLocaleString('en-US')} | ${f(r.firstRecordNs)} | ${f(r.firstForwardNs)} | ` +
        `${f(r.firstReverseNs)} | **${f(total)}** | ${f(r.totalNs)} |`,
    );
  }
  const second = results.filter((m) => m.jvpNs !== undefined);
  if (second.length) {
    lines.push('');
    lines.push('| jvp and hvp on the recorded tape (handles) | engine | nodes | jvp, ns/node | hvp, ns/node |');
    lines.push('| --- | --- | ---: | ---: | ---: |');
    for (const r of second) lines.push(`| mixed${r.job.expected ? ', expectedNodes' : ''} | ${r.job.backend} | ${r.nodes.toLocaleString('en-US')} | ${f(r.jvpNs!)} | ${f(r.hvpNs!)} |`);
  }
  const chains = results.filter((m) => m.job.case === 'chain');
  if (chains.length) {
    lines.push('');
    lines.push('| transcendental chain, Var API | engine | nodes | ns per step | plain function, ns per step | Var / plain |');
    lines.push('| --- | --- | ---: | ---: | ---: | ---: |');
    for (const r of chains) {
      const perStep = (r.totalNs * r.nodes) / r.job.n;
      lines.push(`| ${r.job.n.toLocaleString('en-US')} steps | ${r.job.backend} | ${r.nodes.toLocaleString('en-US')} | ${f(perStep)} | ${f(r.plainNs!)} | **${(perStep / r.plainNs!).toFixed(2)}** |`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const childArg = process.argv.find((a) => a.startsWith('--child='));
  if (childArg) {
    const result = await child(JSON.parse(childArg.slice(8)) as Job);
    process.stdout.write(`${RESULT_MARKER}${JSON.stringify(result)}\n`);
    return;
  }
  const quick = process.argv.includes('--quick');
  // --only=wasm,handle keeps the jobs whose case, API and engine include every word given.
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7).split(',') ?? [];
  const selected = jobs(quick).filter((j) => only.every((w) => [j.case, j.api, j.backend].includes(w as never)));
  // Every job runs in PROCESSES processes, the passes over all jobs one after another (so that a
  // slow spell of the machine spreads over the rows), and each row is the process whose total is
  // the median: on the bench VM single processes of one build moved by up to 40%.
  const passes = quick ? 1 : PROCESSES;
  const byJob: Measured[][] = selected.map(() => []);
  for (let pass = 0; pass < passes; pass++) {
    selected.forEach((job, k) => {
      const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/per-node.ts', `--child=${JSON.stringify(job)}`], {
        encoding: 'utf8', maxBuffer: 1 << 24,
      });
      const line = out.split('\n').find((l) => l.startsWith(RESULT_MARKER));
      if (!line) throw new Error(`no result from ${JSON.stringify(job)}:\n${out}`);
      const r = JSON.parse(line.slice(RESULT_MARKER.length)) as Measured;
      byJob[k]!.push(r);
      console.error(`${r.job.case} ${r.job.api} ${r.job.backend} ${r.nodes} nodes: record ${r.recordNs.toFixed(2)}, forward ${r.forwardNs.toFixed(2)}, reverse ${r.reverseNs.toFixed(2)}, total ${r.totalNs.toFixed(2)} ns/node`);
    });
  }
  const results = byJob.map((rs) => [...rs].sort((a, b) => a.totalNs - b.totalNs)[rs.length >> 1]!);
  const md = table(results);
  console.log(md);
  if (!quick && only.length === 0) {
    const machine = `${cpus()[0]?.model.trim()}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/per-node.json', `${JSON.stringify({ generated: new Date().toISOString(), machine, results }, null, 1)}\n`);
    writeFileSync('bench/results/per-node.md', `Measured ${new Date().toISOString().slice(0, 10)} on ${machine} (\`npx tsx bench/per-node.ts\`; ns per node, medians; per row the process of median total among ${PROCESSES}).\n\n${md}\n`);
  }
}

await main();
