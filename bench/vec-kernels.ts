// Cost of each vector op's rules, per element, on both engines: where a Vec API run's sweeps go.
//   npx tsx bench/vec-kernels.ts [--n=100000] [--backend=wasm,js]
// For each op the tape holds its inputs, the op, and (for an array result) a sum of it. Forward:
// the engine's forward sweep over the op's nodes alone. Reverse: a whole reverse sweep (clearing
// the adjoints, the sum's rule, the op's rule) minus the same sweep over a tape whose op is
// replaced by an input of the op's size. Medians of batches, in ns per element of the op's
// result (reductions and contractions: per element of their largest operand).
import { createTape, init, type BackendKind, type Tape, type Var, type Vec } from '../src/index.ts';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const N = Number(arg('n') ?? 100_000);
const BACKENDS = (arg('backend') ?? 'wasm,js').split(',') as BackendKind[];

interface Case {
  name: string;
  /** Elements the op's cost is counted per. */
  per: number;
  /** Records the inputs (before `mark()`), then the op; returns its result. */
  record(t: Tape, mark: () => void): Vec | Var;
  /** Shape of the op's result, for the baseline (an input of that size instead of the op). */
  outSize: number;
}

function data(n: number, seed: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = 0.5 + 0.4 * Math.sin(0.37 * i + seed);
  return out;
}

const X = data(N, 0.1), Y = data(N, 0.7);
const unary = (name: string, f: (x: Vec) => Vec): Case => ({
  name, per: N, outSize: N,
  record(t, mark) { const x = t.vector(X); mark(); return f(x); },
});
const binary = (name: string, f: (x: Vec, y: Vec) => Vec): Case => ({
  name, per: N, outSize: N,
  record(t, mark) { const x = t.vector(X), y = t.vector(Y); mark(); return f(x, y); },
});
const reduction = (name: string, f: (x: Vec, y: Vec) => Var): Case => ({
  name, per: N, outSize: 0,
  record(t, mark) { const x = t.vector(X), y = t.vector(Y); mark(); return f(x, y); },
});
// Contractions at the workloads' shapes: [m, k] times [k] or [k, p].
const matvec = (m: number, k: number, constantMatrix: boolean): Case => ({
  name: `matvec [${m}, ${k}]${constantMatrix ? ' (constant A)' : ''}`, per: m * k, outSize: m,
  record(t, mark) {
    const A = data(m * k, 0.3), v = data(k, 0.9);
    const a = constantMatrix ? t.constantVector(A, [m, k]) : t.vector(A, [m, k]);
    const x = t.vector(v);
    mark();
    return a.matvec(x);
  },
});
const matmul = (m: number, k: number, p: number, constantLeft: boolean): Case => ({
  name: `matmul [${m}, ${k}]·[${k}, ${p}]${constantLeft ? ' (constant left)' : ''}`, per: m * k * p, outSize: m * p,
  record(t, mark) {
    const a = constantLeft ? t.constantVector(data(m * k, 0.3), [m, k]) : t.vector(data(m * k, 0.3), [m, k]);
    const b = t.vector(data(k * p, 0.9), [k, p]);
    mark();
    return a.matmul(b);
  },
});

const CASES: Case[] = [
  binary('add(Vec)', (x, y) => x.add(y)),
  binary('sub(Vec)', (x, y) => x.sub(y)),
  binary('mul(Vec)', (x, y) => x.mul(y)),
  binary('div(Vec)', (x, y) => x.div(y)),
  unary('mul(number)', (x) => x.mul(100)),
  unary('sub(number)', (x) => x.sub(1)),
  unary('add(scalar Var)', (x) => x.add(x.get(0))),
  binary('max(Vec)', (x, y) => x.max(y)),
  unary('square', (x) => x.square()),
  unary('neg', (x) => x.neg()),
  unary('exp', (x) => x.exp()),
  unary('log', (x) => x.log()),
  unary('tanh', (x) => x.tanh()),
  unary('softplus', (x) => x.softplus()),
  unary('relu', (x) => x.sub(0.7).relu()),
  unary('slice(1)', (x) => x.slice(1)),
  { name: 'transpose [n/25, 25]', per: N, outSize: N, record(t, mark) { const x = t.vector(X, [N / 25, 25]); mark(); return x.transpose(); } },
  reduction('sum()', (x) => x.sum()),
  reduction('max()', (x) => x.max()),
  reduction('logSumExp()', (x) => x.logSumExp()),
  reduction('dot(Vec)', (x, y) => x.dot(y)),
  reduction('sumSquares()', (x) => x.sumSquares()),
  matvec(1024, 128, true),
  matvec(2000, 20, true),
  matmul(100, 2, 16, true),
  matmul(100, 16, 16, false),
  matmul(1000, 10, 250, true),
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/** ms per call of fn, median of batches. */
function time(fn: () => void): number {
  for (let i = 0; i < 5; i++) fn();
  const t0 = performance.now();
  let k = 0;
  while (performance.now() - t0 < 30) { fn(); k++; }
  const batch = Math.max(1, Math.ceil(k / 10));
  const samples: number[] = [];
  for (let s = 0; s < 11; s++) {
    const a = performance.now();
    for (let i = 0; i < batch; i++) fn();
    samples.push((performance.now() - a) / batch);
  }
  return median(samples);
}

/** Forward time of the op's nodes and reverse time of the whole tape, for a recording. */
function measure(t: Tape, record: (t: Tape, mark: () => void) => Vec | Var, pad = 0): { fwd: number; rev: number } {
  t.reset();
  let from = 0;
  const out = record(t, () => { from = t.size; });
  const to = t.size;
  // An unused input as large as the baseline's stand-in, so both tapes clear as many adjoints.
  if (pad > 0) t.vector(new Float64Array(pad));
  const root = 'shape' in out ? (out as Vec).sum() : (out as Var);
  const y = root.value; // evaluates everything once
  if (!Number.isFinite(y)) throw new Error('non-finite value');
  const engine = t.engine;
  const count = t.size;
  const rootIndex = count - 1;
  const fwd = time(() => engine.forward(from, to));
  const rev = time(() => engine.reverse(rootIndex, 1, count));
  return { fwd, rev };
}

async function main(): Promise<void> {
  await init();
  console.log(`ns per element (n = ${N}); forward: the op's rule; reverse: the op's rule, net of clearing adjoints and the sum after it\n`);
  const rows: string[][] = [['op', ...BACKENDS.flatMap((b) => [`${b} fwd`, `${b} rev`])]];
  const tapes = new Map<BackendKind, Tape>();
  for (const b of BACKENDS) tapes.set(b, await createTape({ backend: b }));
  for (const c of CASES) {
    const cells: string[] = [c.name];
    for (const b of BACKENDS) {
      const t = tapes.get(b)!;
      const op = measure(t, c.record, c.outSize);
      // Baseline: the same inputs and, instead of the op, an input of the op's size (summed).
      const base = measure(t, (tt, mark) => {
        let dummy: Vec | Var | null = null;
        c.record(tt, () => {
          mark();
          dummy = c.outSize > 0 ? tt.vector(new Float64Array(c.outSize).fill(0.5)) : null;
        });
        return dummy ?? tt.constant(0).add(0);
      });
      // The baseline tape holds the op too (after the stand-in), but the reverse sweep from the
      // stand-in's sum never reaches it (its adjoint stays 0); the op's tape carries an unused
      // input of the stand-in's size, so both clear the same number of adjoints.
      cells.push(((op.fwd * 1e6) / c.per).toFixed(2), (((op.rev - base.rev) * 1e6) / c.per).toFixed(2));
    }
    rows.push(cells);
  }
  const widths = rows[0]!.map((_, k) => Math.max(...rows.map((r) => r[k]!.length)));
  for (const r of rows) console.log(r.map((cell, k) => (k === 0 ? cell.padEnd(widths[k]!) : cell.padStart(widths[k]!))).join('  '));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
