// The benchmark workloads, written once here and shared by every implementation's child process.
// Each workload is written out per API (plain numbers, hand-written gradient, tapegrad Vars,
// tapegrad handles) rather than generically over an "arithmetic" object: a generic version would
// route the plain floor through megamorphic calls and make it look slower than it is.
//
// Every hot loop is a top-level function taking its data as parameters: closures below only
// forward to them, and nothing hot reads module-scope bindings.
import type { Tape, Var } from '../src/index.ts';

/** One problem size of a workload, ready to run. Gradients are written into `g` (length = inputs). */
export interface Instance {
  /** Problem inputs (the point the gradient is taken at). */
  readonly x: Float64Array;
  /** What one timed run is, for the table: "1 gradient", "1000 gradients". */
  readonly runLabel: string;
  /** Evaluations of the function per timed run (1 except for throughput workloads). */
  readonly evalsPerRun: number;
  /** The function value only, in plain JS: the floor every AD run is compared with. */
  plain(): number;
  /** Value and gradient by a hand-written derivative, where one is short enough to write. */
  hand?(g: Float64Array): number;
  /** Record on `tape` with the Var API, reverse sweep, gradient into g; returns the value.
   *  `phase` (if given) gets the split point between recording and the sweeps. */
  tapeVar(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The same through `tape.handles`. */
  tapeHandle(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The reference every implementation's gradient is checked against before timing. */
  reference(): Reference;
}

export interface Reference {
  value: number;
  /** Reference gradient (full), or only at `indices` when it comes from finite differences. */
  grad: Float64Array;
  /** Components the reference covers (all when omitted). */
  indices?: number[];
  /** How the reference was obtained, for the results file. */
  source: string;
}

/** Collects the time spent recording vs sweeping (forward values + reverse) in a tapegrad run. */
export interface Phase {
  recordEnd: number;
}

export interface Workload {
  readonly id: string;
  readonly title: string;
  /** What is differentiated, for the results file. */
  readonly description: string;
  /** Problem size for the full and quick runs. */
  readonly size: { full: number; quick: number };
  /** Relative (normwise) tolerance for f64 implementations against the reference. */
  readonly tolerance: number;
  make(n: number): Instance;
}

const now = (): number => performance.now();

// ───────────────────────────── transcendental chain ─────────────────────────────
// x_{k+1} = x_k + 1e-5 (sin x_k · exp(cos x_k) − log1p(x_k²)), x_0 = 0.3; f = x_n.
// The derivative is a product of n factors near 1, so it stays O(1) for any n, and a long
// scalar chain is the worst case for a tape's per-node overhead (no vector op can help).

const CHAIN_H = 1e-5;

function chainPlain(x0: number, n: number): number {
  let x = x0;
  for (let k = 0; k < n; k++) x = x + CHAIN_H * (Math.sin(x) * Math.exp(Math.cos(x)) - Math.log1p(x * x));
  return x;
}

/** Forward mode by hand: carries dx/dx0 with x (O(1) memory). */
function chainHand(x0: number, n: number, g: Float64Array): number {
  let x = x0;
  let d = 1;
  for (let k = 0; k < n; k++) {
    const s = Math.sin(x), c = Math.cos(x), e = Math.exp(c);
    const step = s * e - Math.log1p(x * x);
    const dstep = c * e - s * s * e - (2 * x) / (1 + x * x);
    d = d * (1 + CHAIN_H * dstep);
    x = x + CHAIN_H * step;
  }
  g[0] = d;
  return x;
}

function chainVar(tape: Tape, x0: number, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const input = tape.variable(x0);
  let x: Var = input;
  for (let k = 0; k < n; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(CHAIN_H));
  if (phase) phase.recordEnd = now();
  tape.backward(x);
  g[0] = input.grad;
  return x.value;
}

function chainHandle(tape: Tape, x0: number, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const input = h.variable(x0);
  // The handle API takes handles only, so the constant is recorded once and reused.
  const c = h.constant(CHAIN_H);
  let x = input;
  for (let k = 0; k < n; k++) {
    const t = h.sub(h.mul(h.sin(x), h.exp(h.cos(x))), h.log1p(h.mul(x, x)));
    x = h.add(x, h.mul(c, t));
  }
  if (phase) phase.recordEnd = now();
  h.backward(x);
  g[0] = h.grad(input);
  return h.value(x);
}

export const chain: Workload = {
  id: 'chain',
  title: 'transcendental chain',
  description: 'n steps of x += 1e-5 (sin x exp(cos x) - log1p(x^2)) from x0 = 0.3; d x_n / d x0',
  size: { full: 300_000, quick: 30_000 },
  tolerance: 1e-9,
  make(n) {
    const x = Float64Array.of(0.3);
    return {
      x,
      runLabel: '1 gradient',
      evalsPerRun: 1,
      plain: () => chainPlain(x[0]!, n),
      hand: (g) => chainHand(x[0]!, n, g),
      tapeVar: (tape, g, phase) => chainVar(tape, x[0]!, n, g, phase),
      tapeHandle: (tape, g, phase) => chainHandle(tape, x[0]!, n, g, phase),
      reference() {
        const grad = new Float64Array(1);
        const value = chainHand(x[0]!, n, grad);
        return { value, grad, source: 'hand-written forward-mode derivative' };
      },
    };
  },
};

// ───────────────────────────── Rosenbrock ─────────────────────────────
// f(x) = Σ_{i<n-1} 100 (x_{i+1} − x_i²)² + (1 − x_i)², at a fixed deterministic point.

function rosenbrockPoint(n: number): Float64Array {
  const x = new Float64Array(n);
  // Deterministic, away from the minimum (all ones) so every term has a nonzero gradient.
  for (let i = 0; i < n; i++) x[i] = 0.5 + 0.4 * Math.sin(0.37 * i + 0.1);
  return x;
}

function rosenbrockPlain(x: Float64Array): number {
  const n = x.length;
  let s = 0;
  for (let i = 0; i < n - 1; i++) {
    const xi = x[i]!;
    const t = x[i + 1]! - xi * xi;
    const u = 1 - xi;
    s += 100 * t * t + u * u;
  }
  return s;
}

function rosenbrockHand(x: Float64Array, g: Float64Array): number {
  const n = x.length;
  g.fill(0);
  let s = 0;
  for (let i = 0; i < n - 1; i++) {
    const xi = x[i]!;
    const t = x[i + 1]! - xi * xi;
    const u = 1 - xi;
    s += 100 * t * t + u * u;
    g[i]! += -400 * t * xi - 2 * u;
    g[i + 1]! += 200 * t;
  }
  return s;
}

function rosenbrockVar(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const n = x.length;
  const xs = tape.variables(x);
  let s = tape.constant(0);
  for (let i = 0; i < n - 1; i++) {
    const xi = xs[i]!;
    const t = xs[i + 1]!.sub(xi.square());
    s = s.add(t.square().mul(100)).add(xi.sub(1).square());
  }
  if (phase) phase.recordEnd = now();
  g.set(tape.gradient(s, xs));
  return s.value;
}

function rosenbrockHandle(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const n = x.length;
  const xs = new Int32Array(n);
  for (let i = 0; i < n; i++) xs[i] = h.variable(x[i]!);
  const c100 = h.constant(100);
  const one = h.constant(1);
  let s = h.constant(0);
  for (let i = 0; i < n - 1; i++) {
    const xi = xs[i]!;
    const t = h.sub(xs[i + 1]!, h.square(xi));
    s = h.add(h.add(s, h.mul(c100, h.square(t))), h.square(h.sub(one, xi)));
  }
  if (phase) phase.recordEnd = now();
  h.backward(s);
  for (let i = 0; i < n; i++) g[i] = h.grad(xs[i]!);
  return h.value(s);
}

function rosenbrockWorkload(id: string, full: number, quick: number): Workload {
  return {
    id,
    title: `Rosenbrock n=${full.toExponential().replace('e+', 'e')}`,
    description: 'sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 at x_i = 0.5 + 0.4 sin(0.37 i + 0.1); full gradient',
    size: { full, quick },
    tolerance: 1e-12,
    make(n) {
      const x = rosenbrockPoint(n);
      return {
        x,
        runLabel: '1 gradient',
        evalsPerRun: 1,
        plain: () => rosenbrockPlain(x),
        hand: (g) => rosenbrockHand(x, g),
        tapeVar: (tape, g, phase) => rosenbrockVar(tape, x, g, phase),
        tapeHandle: (tape, g, phase) => rosenbrockHandle(tape, x, g, phase),
        reference() {
          const grad = new Float64Array(n);
          const value = rosenbrockHand(x, grad);
          return { value, grad, source: 'hand-written gradient' };
        },
      };
    },
  };
}

export const rosenbrock = rosenbrockWorkload('rosenbrock', 100_000, 20_000);

/** Every workload, in table order. */
export const WORKLOADS: readonly Workload[] = [chain, rosenbrock];

export function workloadById(id: string): Workload {
  const w = WORKLOADS.find((w) => w.id === id);
  if (!w) throw new Error(`unknown workload '${id}' (have: ${WORKLOADS.map((w) => w.id).join(', ')})`);
  return w;
}
