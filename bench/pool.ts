// Scaling of `tapegrad/pool`: gradientBatch of the 20-node tiny function (bench/workloads.ts) over
// a large batch, on the main thread and on pools of 1..N worker threads, wasm and the JS mode;
// and the start-up cost of a registered function in the workers.
//   npm run build && tsx bench/pool.ts [--rows=200000] [--runs=15] [--out=bench/results/pool.json]
// Inputs and outputs are shared memory allocated once, as a service that reuses its buffers
// would; every pool result is checked against the main thread's bit for bit before timing.
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile, init, type Var } from 'tapegrad';
import { createPool, sharedFloat64 } from 'tapegrad/pool';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const ROWS = Number(arg('rows') ?? 200_000);
const RUNS = Number(arg('runs') ?? 15);
const OUT = arg('out') ?? join(here, 'results', 'pool.json');
const CORES = availableParallelism();

/** sin(xy) + tanh(yz)·exp(−x²) + log1p(z²)/(1 + y²) − cos(x + y + z): the tiny workload. */
export function tiny([x, y, z]: Var[]): Var {
  return x!.mul(y!).sin()
    .add(y!.mul(z!).tanh().mul(x!.square().neg().exp()))
    .add(z!.square().log1p().div(y!.square().add(1)))
    .sub(x!.add(y!).add(z!).cos());
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const same = (a: Float64Array, b: Float64Array): boolean =>
  a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;

async function timeRuns(run: () => unknown): Promise<number> {
  for (let k = 0; k < 3; k++) await run();
  const times: number[] = [];
  for (let k = 0; k < RUNS; k++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  return median(times);
}

interface Row { backend: 'wasm' | 'js'; where: string; threads: number; ms: number; rowsPerSecond: number; speedup: number; efficiency: number }

await init();
const X = sharedFloat64(ROWS * 3);
for (let i = 0; i < X.length; i++) X[i] = 2 * Math.sin(1.7 * i + 0.3);
const out = sharedFloat64(ROWS * 3);
const rows: Row[] = [];
const startup: { threads: number; registerToFirstResultMs: number; workerLoadMs: number[]; generatedSweeps: string[] }[] = [];

for (const backend of ['wasm', 'js'] as const) {
  const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3], backend });
  const want = f.gradientBatch(X, ROWS);
  const mainMs = await timeRuns(() => f.gradientBatch(X, ROWS, out));
  rows.push({ backend, where: 'main thread', threads: 0, ms: mainMs, rowsPerSecond: ROWS / mainMs * 1e3, speedup: NaN, efficiency: NaN });
  let oneWorker = NaN;
  for (let threads = 1; threads <= CORES; threads++) {
    const pool = await createPool({ threads, backend });
    // Workers start with the pool; a throwaway registration waits for all of them to be up, so
    // the figure below is the registration's cost, not the thread start.
    await pool.register(f);
    const t = performance.now();
    const g = await pool.register(f);
    await g.gradientBatch(X, threads * pool.minRowsPerTask, out);
    if (backend === 'wasm') {
      startup.push({ threads, registerToFirstResultMs: performance.now() - t, workerLoadMs: g.workerLoads.map((l) => l.ms), generatedSweeps: g.workerLoads.map((l) => l.generatedSweeps) });
    }
    const got = await g.gradientBatch(X, ROWS);
    if (!same(got, want)) throw new Error(`${backend}, ${threads} workers: the pool's gradients differ from the main thread's`);
    const ms = await timeRuns(() => g.gradientBatch(X, ROWS, out));
    if (threads === 1) oneWorker = ms;
    rows.push({ backend, where: `${threads} worker${threads > 1 ? 's' : ''}`, threads, ms, rowsPerSecond: ROWS / ms * 1e3, speedup: oneWorker / ms, efficiency: oneWorker / ms / threads });
    await pool.close();
  }
}

console.log(`gradientBatch of the 20-node function, ${ROWS} rows, median of ${RUNS}; ${CORES} cores (${cpus()[0]?.model}), load average ${loadavg()[0]!.toFixed(2)}`);
console.log('| backend | where | ms | rows/s | speed-up over 1 worker | efficiency |');
for (const r of rows) {
  console.log(`| ${r.backend} | ${r.where} | ${r.ms.toFixed(2)} | ${(r.rowsPerSecond / 1e6).toFixed(2)} M | ${Number.isNaN(r.speedup) ? '–' : r.speedup.toFixed(2)} | ${Number.isNaN(r.efficiency) ? '–' : r.efficiency.toFixed(2)} |`);
}
for (const s of startup) {
  console.log(`start-up, ${s.threads} worker(s): register to first result ${s.registerToFirstResultMs.toFixed(2)} ms; load in each worker ${s.workerLoadMs.map((m) => m.toFixed(2)).join(', ')} ms; sweeps ${s.generatedSweeps.join(', ')}`);
}
writeFileSync(OUT, JSON.stringify({
  generated: new Date().toISOString(), machine: { cpu: cpus()[0]?.model, cores: CORES, node: process.version }, loadAverage: loadavg(),
  rows: ROWS, runs: RUNS, results: rows, startup,
}, null, 2) + '\n');
console.log(`wrote ${OUT}`);
