// The benchmark workloads, written once here and shared by every implementation's child process.
// Each workload is written out per API (plain numbers, hand-written gradient, tapegrad Vars,
// tapegrad handles) rather than generically over an "arithmetic" object: a generic version would
// route the plain floor through megamorphic calls and make it look slower than it is.
//
// Every hot loop is a top-level function taking its data as parameters: closures below only
// forward to them, and nothing hot reads module-scope bindings.
import { readFileSync } from 'node:fs';
import type { Tape, Var, Vec } from '../src/index.ts';

/** One problem size of a workload, ready to run. Gradients are written into `g` (length = inputs). */
export interface Instance {
  /** The workload family (peers switch on it) and the problem size the instance was made for. */
  readonly kind: WorkloadKind;
  readonly n: number;
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
  /** Record on `tape` with the Var API, read the output's value (the forward sweep: values are
   *  computed lazily, on the first read), reverse sweep, gradient into g; returns the value.
   *  `phase` (if given) gets the end of recording and of the forward sweep (tiny, which records
   *  many small tapes per run, sets neither). */
  tapeVar(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The same through `tape.handles`. */
  tapeHandle(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The function of Vars, for record-once/replay-many (compile): where it has a fixed structure.
   *  For throughput workloads, `rows` are the input points of one run (row-major). */
  compiled?: { fn: (x: Var[]) => Var; inputs: number; rows?: Float64Array };
  /** Vector form (Vec API): the same function of the inputs as one Vec, one node per array op.
   *  `tapeVec` records it afresh each run; replay compiles `vec.fn` with `{ vector: true }`. */
  vec?: VecForm;
  /** A second vector form worth reporting beside the first (lse: GradBench's literal
   *  max/exp/sum/log, where `vec` is the one-node logSumExp). */
  vecAlt?: VecForm;
  /** Record `vec` on `tape` (reset first), reverse sweep, gradient into g (the scalar form's
   *  order); returns the value. `phase` gets the end of recording and of the forward sweep. */
  tapeVec?(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The same for `vecAlt`. */
  tapeVecAlt?(tape: Tape, g: Float64Array, phase?: Phase): number;
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

/** Splits a tapegrad run into recording, the forward sweep and the reverse sweep: the run sets
 *  `recordEnd` when recording is done, then reads the output's value (which runs the forward sweep,
 *  or costs ~nothing if values were computed while recording) and sets `forwardEnd`; the rest, up
 *  to the end of the run, is the reverse sweep with clearing adjoints and reading the gradient. */
export interface Phase {
  recordEnd: number;
  /** End of the forward sweep (values), where a run times it apart from the reverse sweep. */
  forwardEnd?: number;
}

/** A workload written with the Vec API. Constant data (matrices, labels, index tables) are
 *  Float64Arrays prepared once, outside the timed runs; `fn` records them on its tape with
 *  `tape.constantVector` (or as array operands), which copies them: on a fresh recording every
 *  run that copy is timed, in replay it happened once, at compile time. */
export interface VecForm {
  /** How the function is written, for the results file. */
  readonly how: string;
  readonly fn: (x: Vec) => Var;
  /** After each gradient (the MLP's SGD step on the inputs). */
  readonly step?: (g: Float64Array) => void;
}

/** One run of a vector form on a fresh recording: the inputs as one input Vec, `form.fn`, then
 *  `tape.gradient(f, [x], 1, g)` (the elements of x, flat, in order, into the run's gradient
 *  array as a loop computing many gradients would: the plain and hand-written forms allocate
 *  nothing either). The value is read before the gradient so the forward sweep is timed apart
 *  from the reverse sweep. */
export function vecRecordRun(tape: Tape, x: Float64Array, form: VecForm, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const v = tape.vector(x);
  const f = form.fn(v);
  if (phase) phase.recordEnd = now();
  const value = f.value;
  if (phase) phase.forwardEnd = now();
  tape.gradient(f, [v], 1, g);
  form.step?.(g);
  return value;
}

/** The instance fields of a workload's vector form(s). */
function vecFields(x: Float64Array, vec: VecForm, vecAlt?: VecForm): Pick<Instance, 'vec' | 'vecAlt' | 'tapeVec' | 'tapeVecAlt'> {
  return {
    vec,
    tapeVec: (tape, g, phase) => vecRecordRun(tape, x, vec, g, phase),
    ...(vecAlt ? { vecAlt, tapeVecAlt: (tape: Tape, g: Float64Array, phase?: Phase) => vecRecordRun(tape, x, vecAlt, g, phase) } : {}),
  };
}

export type WorkloadKind = 'chain' | 'rosenbrock' | 'advection-lw' | 'advection-toon' | 'mlp' | 'lse' | 'llsq' | 'logreg' | 'gmm' | 'ode' | 'tiny';

export interface Workload {
  readonly id: string;
  readonly kind: WorkloadKind;
  readonly title: string;
  /** What is differentiated, for the results file. */
  readonly description: string;
  /** Problem size for the full and quick runs, and what n counts. */
  readonly size: { full: number; quick: number };
  readonly sizeUnit: string;
  /** Relative (normwise) tolerance for f64 implementations against the reference. */
  readonly tolerance: number;
  /** Whether the cost is linear in n, so a slow peer may run a smaller n and be scaled up. */
  readonly linearInN: boolean;
  /** Only run when named in `run.ts --only=` (extra sizes of a workload). */
  readonly optIn?: boolean;
  make(n: number): Instance;
}

const now = (): number => performance.now();

// ───────────────────────────── transcendental chain ─────────────────────────────
// x_{k+1} = x_k + 1e-5 (sin x_k · exp(cos x_k) − log1p(x_k²)), x_0 = 0.3; f = x_n.
// The derivative is a product of n factors near 1, so it stays O(1) for any n, and a long
// scalar chain is the worst case for a tape's per-node overhead (no vector op can help).

export const CHAIN_H = 1e-5;
export const CHAIN_X0 = 0.3;

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

function chainFn(input: Var, n: number): Var {
  let x = input;
  for (let k = 0; k < n; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(CHAIN_H));
  return x;
}

function chainVar(tape: Tape, x0: number, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const input = tape.variable(x0);
  const x = chainFn(input, n);
  if (phase) phase.recordEnd = now();
  const value = x.value;
  if (phase) phase.forwardEnd = now();
  tape.backward(x);
  g[0] = input.grad;
  return value;
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
  const value = h.value(x);
  if (phase) phase.forwardEnd = now();
  h.backward(x);
  g[0] = h.grad(input);
  return value;
}

export const chain: Workload = {
  id: 'chain',
  kind: 'chain',
  linearInN: true,
  title: 'transcendental chain',
  description: 'n steps of x += 1e-5 (sin x exp(cos x) - log1p(x^2)) from x0 = 0.3; d x_n / d x0',
  size: { full: 300_000, quick: 30_000 },
  sizeUnit: 'steps',
  tolerance: 1e-9,
  make(n) {
    const x = Float64Array.of(CHAIN_X0);
    return {
      kind: 'chain',
      n,
      x,
      runLabel: '1 gradient',
      evalsPerRun: 1,
      plain: () => chainPlain(x[0]!, n),
      hand: (g) => chainHand(x[0]!, n, g),
      tapeVar: (tape, g, phase) => chainVar(tape, x[0]!, n, g, phase),
      tapeHandle: (tape, g, phase) => chainHandle(tape, x[0]!, n, g, phase),
      compiled: { fn: (v) => chainFn(v[0]!, n), inputs: 1 },
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

export function rosenbrockPoint(n: number): Float64Array {
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

function rosenbrockFn(xs: Var[]): Var {
  let s: Var = xs[0]!.mul(0);
  for (let i = 0; i < xs.length - 1; i++) {
    const xi = xs[i]!;
    s = s.add(xs[i + 1]!.sub(xi.square()).square().mul(100)).add(xi.sub(1).square());
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
  const value = s.value;
  if (phase) phase.forwardEnd = now();
  g.set(tape.gradient(s, xs));
  return value;
}

function rosenbrockHandle(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const n = x.length;
  const xs = h.variables(x);
  const c100 = h.constant(100);
  const one = h.constant(1);
  let s = h.constant(0);
  for (let i = 0; i < n - 1; i++) {
    const xi = xs[i]!;
    const t = h.sub(xs[i + 1]!, h.square(xi));
    s = h.add(h.add(s, h.mul(c100, h.square(t))), h.square(h.sub(one, xi)));
  }
  if (phase) phase.recordEnd = now();
  const value = h.value(s);
  if (phase) phase.forwardEnd = now();
  h.gradient(s, xs, 1, g);
  return value;
}

/** Vector form, as NumPy code writes it: a = x[:-1], b = x[1:], sum(100 (b - a²)² + (a - 1)²)
 *  ((a - 1)² as the scalar form; equal to (1 - a)² bit for bit). */
const ROSENBROCK_VEC: VecForm = {
  how: 'a = x.slice(0, -1), b = x.slice(1); b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum()',
  fn(x) {
    const a = x.slice(0, -1), b = x.slice(1);
    return b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
  },
};

function rosenbrockWorkload(id: string, full: number, quick: number): Workload {
  return {
    id,
    kind: 'rosenbrock',
    linearInN: true,
    title: 'Rosenbrock',
    description: 'sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 at x_i = 0.5 + 0.4 sin(0.37 i + 0.1); full gradient',
    size: { full, quick },
    sizeUnit: 'variables',
    tolerance: 1e-12,
    make(n) {
      const x = rosenbrockPoint(n);
      return {
        kind: 'rosenbrock',
        n,
        x,
        runLabel: '1 gradient',
        evalsPerRun: 1,
        plain: () => rosenbrockPlain(x),
        hand: (g) => rosenbrockHand(x, g),
        tapeVar: (tape, g, phase) => rosenbrockVar(tape, x, g, phase),
        tapeHandle: (tape, g, phase) => rosenbrockHandle(tape, x, g, phase),
        compiled: { fn: rosenbrockFn, inputs: n },
        ...vecFields(x, ROSENBROCK_VEC),
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
export const rosenbrock1e4 = rosenbrockWorkload('rosenbrock-1e4', 10_000, 10_000);

// ───────────────────────────── shared helpers ─────────────────────────────

/** Deterministic PRNG (mulberry32) for benchmark data: the same numbers in every process. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Central differences of f at x along the given components (x is restored afterwards). */
function centralDifferences(f: (x: Float64Array) => number, x: Float64Array, indices: number[], rel: number): Float64Array {
  const out = new Float64Array(indices.length);
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k]!;
    const xi = x[i]!;
    const h = rel * Math.max(1, Math.abs(xi));
    x[i] = xi + h;
    const fp = f(x);
    x[i] = xi - h;
    const fm = f(x);
    x[i] = xi;
    out[k] = (fp - fm) / (2 * h);
  }
  return out;
}

/** A hand-written gradient is only a reference once it agrees with finite differences: throws
 *  (loudly, before anything is timed) when it does not. */
function checkedAgainstFd(name: string, grad: Float64Array, fd: Float64Array, indices: number[], tol: number): void {
  let scale = 1;
  for (const v of fd) scale = Math.max(scale, Math.abs(v));
  for (let k = 0; k < indices.length; k++) {
    const err = Math.abs(grad[indices[k]!]! - fd[k]!) / scale;
    if (!(err <= tol)) {
      throw new Error(
        `${name}: the hand-written reference gradient disagrees with central differences at component ` +
          `${indices[k]}: ${grad[indices[k]!]} vs ${fd[k]} (normwise error ${err} > ${tol})`,
      );
    }
  }
}

function sumSquares(q: Float64Array): number {
  let s = 0;
  for (let i = 0; i < q.length; i++) s += q[i]! * q[i]!;
  return s;
}

// ───────────────────────────── advection (Hogan 2014, the Adept paper) ─────────────────────────────
// Linear advection of q on NX = 100 periodic boxes for nt steps at Courant number c, by the
// Lax-Wendroff scheme (linear) or Toon et al.'s scheme (exp/log per flux). J = Σ q_final²,
// gradient w.r.t. q_init. The same loops as Adept 2's benchmark (benchmark/advection_schemes.h),
// including its boundary copies and its Toon flux without the upwind branch for neighbours equal to
// 1e-6 (commented out there; Adept 1.1's benchmark takes it): here 8 of 198,000 fluxes lie in that
// zone, the near 0/0 the float32 peers return NaN on.

export const NX = 100;
export const COURANT = 0.125;
/** Components the finite-difference check covers. */
export const ADVECTION_FD_COMPONENTS = [0, 1, 2, 33, 50, 97, 98, 99];

export function advectionInit(): Float64Array {
  const q = new Float64Array(NX);
  for (let i = 0; i < NX; i++) q[i] = 1.5 + 0.5 * Math.sin((2 * Math.PI * i) / (NX - 1.5));
  return q;
}

function lwPlainState(qInit: Float64Array, nt: number, c: number, q: Float64Array): void {
  const flux = new Float64Array(NX - 1);
  q.set(qInit);
  for (let j = 0; j < nt; j++) {
    for (let i = 0; i < NX - 1; i++) flux[i] = 0.5 * c * (q[i]! + q[i + 1]! + c * (q[i]! - q[i + 1]!));
    for (let i = 1; i < NX - 1; i++) q[i]! += flux[i - 1]! - flux[i]!;
    q[0] = q[NX - 2]!;
    q[NX - 1] = q[1]!;
  }
}

function toonPlainState(qInit: Float64Array, nt: number, c: number, q: Float64Array, history: Float64Array | null): void {
  const flux = new Float64Array(NX - 1);
  q.set(qInit);
  for (let j = 0; j < nt; j++) {
    if (history) history.set(q, j * NX);
    for (let i = 0; i < NX - 1; i++) {
      const a = q[i]!, b = q[i + 1]!;
      flux[i] = ((Math.exp(c * Math.log(a / b)) - 1) * a * b) / (a - b);
    }
    for (let i = 1; i < NX - 1; i++) q[i]! += flux[i - 1]! - flux[i]!;
    q[0] = q[NX - 2]!;
    q[NX - 1] = q[1]!;
  }
}

/** Adjoint of the boundary copies and the update, shared by both hand-written adjoints: on entry
 *  qb is the adjoint of the state after step j; on exit fb holds the flux adjoints and qb the
 *  identity part of the adjoint of the state before it. */
function advectionAdjointUpdate(qb: Float64Array, fb: Float64Array): void {
  qb[1]! += qb[NX - 1]!;
  qb[NX - 1] = 0;
  qb[NX - 2]! += qb[0]!;
  qb[0] = 0;
  fb.fill(0);
  for (let i = 1; i < NX - 1; i++) {
    fb[i - 1]! += qb[i]!;
    fb[i]! -= qb[i]!;
  }
}

function lwHand(qInit: Float64Array, nt: number, c: number, g: Float64Array): number {
  const q = new Float64Array(NX);
  lwPlainState(qInit, nt, c, q);
  const value = sumSquares(q);
  // The scheme is linear, so its adjoint needs no stored states.
  const da = 0.5 * c * (1 + c), db = 0.5 * c * (1 - c);
  const qb = g;
  for (let i = 0; i < NX; i++) qb[i] = 2 * q[i]!;
  const fb = new Float64Array(NX - 1);
  for (let j = nt - 1; j >= 0; j--) {
    advectionAdjointUpdate(qb, fb);
    for (let i = 0; i < NX - 1; i++) {
      qb[i]! += fb[i]! * da;
      qb[i + 1]! += fb[i]! * db;
    }
  }
  return value;
}

function toonHand(qInit: Float64Array, nt: number, c: number, g: Float64Array): number {
  const q = new Float64Array(NX);
  const history = new Float64Array(nt * NX);
  toonPlainState(qInit, nt, c, q, history);
  const value = sumSquares(q);
  const qb = g;
  for (let i = 0; i < NX; i++) qb[i] = 2 * q[i]!;
  const fb = new Float64Array(NX - 1);
  for (let j = nt - 1; j >= 0; j--) {
    advectionAdjointUpdate(qb, fb);
    const o = j * NX;
    for (let i = 0; i < NX - 1; i++) {
      // F = (P - 1) M with P = (a/b)^c, M = ab/(a - b): dF/da = cP/a M - (P-1) b²/D², dF/db = -cP/b M + (P-1) a²/D².
      const a = history[o + i]!, b = history[o + i + 1]!;
      const D = a - b;
      const P = Math.exp(c * Math.log(a / b));
      const M = (a * b) / D;
      const D2 = D * D;
      qb[i]! += fb[i]! * ((c * P * M) / a - ((P - 1) * b * b) / D2);
      qb[i + 1]! += fb[i]! * ((-c * P * M) / b + ((P - 1) * a * a) / D2);
    }
  }
  return value;
}

function advectionFn(q0: Var[], nt: number, c: number, toon: boolean): Var {
  const q = q0.slice();
  const flux: Var[] = new Array<Var>(NX - 1);
  const halfC = 0.5 * c;
  for (let j = 0; j < nt; j++) {
    for (let i = 0; i < NX - 1; i++) {
      const a = q[i]!, b = q[i + 1]!;
      flux[i] = toon ? a.div(b).log().mul(c).exp().sub(1).mul(a).mul(b).div(a.sub(b)) : a.add(b).add(a.sub(b).mul(c)).mul(halfC);
    }
    for (let i = 1; i < NX - 1; i++) q[i] = q[i]!.add(flux[i - 1]!.sub(flux[i]!));
    q[0] = q[NX - 2]!;
    q[NX - 1] = q[1]!;
  }
  let s = q[0]!.square();
  for (let i = 1; i < NX; i++) s = s.add(q[i]!.square());
  return s;
}

function advectionVar(tape: Tape, qInit: Float64Array, nt: number, c: number, toon: boolean, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const q0 = tape.variables(qInit);
  const s = advectionFn(q0, nt, c, toon);
  if (phase) phase.recordEnd = now();
  const value = s.value;
  if (phase) phase.forwardEnd = now();
  g.set(tape.gradient(s, q0));
  return value;
}

function advectionHandle(tape: Tape, qInit: Float64Array, nt: number, c: number, toon: boolean, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const q0 = h.variables(qInit.subarray(0, NX));
  const q = q0.slice();
  const flux = new Int32Array(NX - 1);
  const cc = h.constant(c), halfC = h.constant(0.5 * c), one = h.constant(1);
  for (let j = 0; j < nt; j++) {
    if (toon) {
      for (let i = 0; i < NX - 1; i++) {
        const a = q[i]!, b = q[i + 1]!;
        const p = h.sub(h.exp(h.mul(h.log(h.div(a, b)), cc)), one);
        flux[i] = h.div(h.mul(h.mul(p, a), b), h.sub(a, b));
      }
    } else {
      for (let i = 0; i < NX - 1; i++) {
        const a = q[i]!, b = q[i + 1]!;
        flux[i] = h.mul(h.add(h.add(a, b), h.mul(h.sub(a, b), cc)), halfC);
      }
    }
    for (let i = 1; i < NX - 1; i++) q[i] = h.add(q[i]!, h.sub(flux[i - 1]!, flux[i]!));
    q[0] = q[NX - 2]!;
    q[NX - 1] = q[1]!;
  }
  let s = h.square(q[0]!);
  for (let i = 1; i < NX; i++) s = h.add(s, h.square(q[i]!));
  if (phase) phase.recordEnd = now();
  const value = h.value(s);
  if (phase) phase.forwardEnd = now();
  h.gradient(s, q0, 1, g);
  return value;
}

/** J = Σ q_final² by the given scheme, in plain f64: the floor, and the function peers differentiate. */
export function advectionPlain(qInit: Float64Array, nt: number, c: number, toon: boolean): number {
  const q = new Float64Array(NX);
  if (toon) toonPlainState(qInit, nt, c, q, null);
  else lwPlainState(qInit, nt, c, q);
  return sumSquares(q);
}

function advectionWorkload(toon: boolean): Workload {
  const scheme = toon ? 'Toon' : 'Lax-Wendroff';
  return {
    id: toon ? 'advection-toon' : 'advection-lw',
    kind: toon ? 'advection-toon' : 'advection-lw',
    title: `advection, ${scheme}`,
    description: `Adept advection test (Hogan 2014), ${scheme} scheme: NX=100, nt steps, Courant 0.125, q_init = 1.5 + 0.5 sin(2 pi i/(NX-1.5)); gradient of sum q_final^2 w.r.t. q_init`,
    size: { full: 2000, quick: 400 },
    sizeUnit: 'time steps',
    // Toon's flux (P - 1) ab/(a - b) is 0/0-like where neighbours nearly coincide (|a - b| gets
    // down to 2e-7 here), and its adjoint amplifies last-bit differences in exp/log: the wasm
    // core's exp/log (musl's) against V8's give ~2e-6 there, both equally right. Lax-Wendroff is
    // linear and agrees to 1e-14.
    tolerance: toon ? 1e-5 : 1e-9,
    linearInN: true,
    make(nt) {
      const x = advectionInit();
      const hand = toon ? toonHand : lwHand;
      return {
        kind: toon ? 'advection-toon' : 'advection-lw',
        n: nt,
        x,
        runLabel: '1 gradient',
        evalsPerRun: 1,
        plain: () => advectionPlain(x, nt, COURANT, toon),
        hand: (g) => hand(x, nt, COURANT, g),
        tapeVar: (tape, g, phase) => advectionVar(tape, x, nt, COURANT, toon, g, phase),
        tapeHandle: (tape, g, phase) => advectionHandle(tape, x, nt, COURANT, toon, g, phase),
        compiled: { fn: (q0) => advectionFn(q0, nt, COURANT, toon), inputs: NX },
        reference() {
          const grad = new Float64Array(NX);
          const value = hand(x, nt, COURANT, grad);
          const idx = ADVECTION_FD_COMPONENTS;
          const fd = centralDifferences((q) => advectionPlain(q, nt, COURANT, toon), x, idx, 1e-6);
          // Central differences of Toon's J carry its rounding noise (see the tolerance above) / h.
          checkedAgainstFd(`advection ${scheme}`, grad, fd, idx, toon ? 1e-4 : 1e-6);
          return { value, grad, source: `hand-written adjoint, itself checked against central differences at q_init[${idx.join(', ')}]` };
        },
      };
    },
  };
}

export const advectionLW = advectionWorkload(false);
export const advectionToon = advectionWorkload(true);

// ───────────────────────────── MLP training step (micrograd's moons demo) ─────────────────────────────
// A 2-16-16-1 MLP on a two-moons set with micrograd's loss: mean hinge relu(1 - y score) + 1e-4
// Σ p², then one SGD step p -= 0.05 g. A timed run is one step. Not micrograd's demo to the letter:
// its hidden layers are ReLU, its biases start at 0 and its rate falls from 1.0; here tanh (every
// op differentiable everywhere, for the gradient checks), uniform biases and a fixed rate.

export const MLP_LAYERS = [2, 16, 16, 1] as const;
export const MLP_ALPHA = 1e-4;
export const MLP_LR = 0.05;
// Flat parameter layout: per layer, the weights row by row (one row per output unit), then biases.
export const W1 = 0, B1 = 32, W2 = 48, B2 = 304, W3 = 320, B3 = 336, MLP_PARAMS = 337;

/** Two interleaving half circles with Gaussian noise 0.1 (as sklearn's make_moons), labels ±1. */
export function moons(n: number, seed = 1): { X: Float64Array; y: Float64Array } {
  const rand = mulberry32(seed);
  const gauss = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const X = new Float64Array(2 * n), y = new Float64Array(n);
  const outer = n >> 1, inner = n - outer;
  for (let k = 0; k < n; k++) {
    const isOuter = k < outer;
    const t = isOuter ? (Math.PI * k) / Math.max(1, outer - 1) : (Math.PI * (k - outer)) / Math.max(1, inner - 1);
    X[2 * k] = (isOuter ? Math.cos(t) : 1 - Math.cos(t)) + 0.1 * gauss();
    X[2 * k + 1] = (isOuter ? Math.sin(t) : 0.5 - Math.sin(t)) + 0.1 * gauss();
    y[k] = isOuter ? -1 : 1;
  }
  return { X, y };
}

/** Uniform(-1, 1) weights, as micrograd's Neuron, and biases (micrograd's start at 0). */
export function mlpInit(seed = 7): Float64Array {
  const rand = mulberry32(seed);
  const p = new Float64Array(MLP_PARAMS);
  for (let i = 0; i < MLP_PARAMS; i++) p[i] = 2 * rand() - 1;
  return p;
}

function mlpLoss(p: Float64Array, X: Float64Array, y: Float64Array, n: number): number {
  const h1 = new Float64Array(16), h2 = new Float64Array(16);
  let data = 0;
  for (let k = 0; k < n; k++) {
    const x0 = X[2 * k]!, x1 = X[2 * k + 1]!;
    for (let u = 0; u < 16; u++) h1[u] = Math.tanh(p[B1 + u]! + p[W1 + 2 * u]! * x0 + p[W1 + 2 * u + 1]! * x1);
    for (let u = 0; u < 16; u++) {
      let acc = p[B2 + u]!;
      for (let v = 0; v < 16; v++) acc += p[W2 + 16 * u + v]! * h1[v]!;
      h2[u] = Math.tanh(acc);
    }
    let score = p[B3]!;
    for (let v = 0; v < 16; v++) score += p[W3 + v]! * h2[v]!;
    data += Math.max(1 - y[k]! * score, 0);
  }
  let reg = 0;
  for (let i = 0; i < MLP_PARAMS; i++) reg += p[i]! * p[i]!;
  return data / n + MLP_ALPHA * reg;
}

/** Backpropagation by hand: loss and its gradient w.r.t. the parameters (no update). */
function mlpHandGradient(p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array): number {
  const h1 = new Float64Array(16), h2 = new Float64Array(16), d2 = new Float64Array(16), d1 = new Float64Array(16);
  g.fill(0);
  let data = 0;
  for (let k = 0; k < n; k++) {
    const x0 = X[2 * k]!, x1 = X[2 * k + 1]!;
    for (let u = 0; u < 16; u++) h1[u] = Math.tanh(p[B1 + u]! + p[W1 + 2 * u]! * x0 + p[W1 + 2 * u + 1]! * x1);
    for (let u = 0; u < 16; u++) {
      let acc = p[B2 + u]!;
      for (let v = 0; v < 16; v++) acc += p[W2 + 16 * u + v]! * h1[v]!;
      h2[u] = Math.tanh(acc);
    }
    let score = p[B3]!;
    for (let v = 0; v < 16; v++) score += p[W3 + v]! * h2[v]!;
    const margin = 1 - y[k]! * score;
    if (!(margin > 0)) continue; // relu'(0) = 0: no gradient from this point
    data += margin;
    const ds = -y[k]! / n;
    g[B3]! += ds;
    for (let u = 0; u < 16; u++) {
      g[W3 + u]! += ds * h2[u]!;
      d2[u] = ds * p[W3 + u]! * (1 - h2[u]! * h2[u]!);
    }
    d1.fill(0);
    for (let u = 0; u < 16; u++) {
      const du = d2[u]!;
      g[B2 + u]! += du;
      for (let v = 0; v < 16; v++) {
        g[W2 + 16 * u + v]! += du * h1[v]!;
        d1[v]! += du * p[W2 + 16 * u + v]!;
      }
    }
    for (let v = 0; v < 16; v++) {
      const dv = d1[v]! * (1 - h1[v]! * h1[v]!);
      g[B1 + v]! += dv;
      g[W1 + 2 * v]! += dv * x0;
      g[W1 + 2 * v + 1]! += dv * x1;
    }
  }
  let reg = 0;
  for (let i = 0; i < MLP_PARAMS; i++) {
    reg += p[i]! * p[i]!;
    g[i]! += 2 * MLP_ALPHA * p[i]!;
  }
  return data / n + MLP_ALPHA * reg;
}

function sgdStep(p: Float64Array, g: Float64Array): void {
  for (let i = 0; i < p.length; i++) p[i]! -= MLP_LR * g[i]!;
}

function mlpVar(tape: Tape, p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const ps = tape.variables(p);
  const h1: Var[] = new Array<Var>(16), h2: Var[] = new Array<Var>(16);
  let data: Var | null = null;
  for (let k = 0; k < n; k++) {
    const x0 = X[2 * k]!, x1 = X[2 * k + 1]!;
    for (let u = 0; u < 16; u++) h1[u] = ps[B1 + u]!.add(ps[W1 + 2 * u]!.mul(x0)).add(ps[W1 + 2 * u + 1]!.mul(x1)).tanh();
    for (let u = 0; u < 16; u++) {
      let acc = ps[B2 + u]!;
      for (let v = 0; v < 16; v++) acc = acc.add(ps[W2 + 16 * u + v]!.mul(h1[v]!));
      h2[u] = acc.tanh();
    }
    let score = ps[B3]!;
    for (let v = 0; v < 16; v++) score = score.add(ps[W3 + v]!.mul(h2[v]!));
    const loss = score.mul(-y[k]!).add(1).relu();
    data = data ? data.add(loss) : loss;
  }
  let reg = ps[0]!.square();
  for (let i = 1; i < MLP_PARAMS; i++) reg = reg.add(ps[i]!.square());
  const total = data!.mul(1 / n).add(reg.mul(MLP_ALPHA));
  if (phase) phase.recordEnd = now();
  const value = total.value;
  if (phase) phase.forwardEnd = now();
  g.set(tape.gradient(total, ps));
  sgdStep(p, g);
  return value;
}

function mlpHandle(tape: Tape, p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const ps = h.variables(p.subarray(0, MLP_PARAMS));
  const h1 = new Int32Array(16), h2 = new Int32Array(16);
  const one = h.constant(1);
  let data = -1;
  for (let k = 0; k < n; k++) {
    const x0 = h.constant(X[2 * k]!), x1 = h.constant(X[2 * k + 1]!);
    for (let u = 0; u < 16; u++) h1[u] = h.tanh(h.add(h.add(ps[B1 + u]!, h.mul(ps[W1 + 2 * u]!, x0)), h.mul(ps[W1 + 2 * u + 1]!, x1)));
    for (let u = 0; u < 16; u++) {
      let acc = ps[B2 + u]!;
      for (let v = 0; v < 16; v++) acc = h.add(acc, h.mul(ps[W2 + 16 * u + v]!, h1[v]!));
      h2[u] = h.tanh(acc);
    }
    let score = ps[B3]!;
    for (let v = 0; v < 16; v++) score = h.add(score, h.mul(ps[W3 + v]!, h2[v]!));
    const loss = h.relu(h.add(h.mul(score, h.constant(-y[k]!)), one));
    data = data < 0 ? loss : h.add(data, loss);
  }
  let reg = h.square(ps[0]!);
  for (let i = 1; i < MLP_PARAMS; i++) reg = h.add(reg, h.square(ps[i]!));
  const total = h.add(h.mul(data, h.constant(1 / n)), h.mul(reg, h.constant(MLP_ALPHA)));
  if (phase) phase.recordEnd = now();
  const value = h.value(total);
  if (phase) phase.forwardEnd = now();
  h.gradient(total, ps, 1, g);
  sgdStep(p, g);
  return value;
}

/** Vector form: the batch as a matrix, H1 = tanh(X W1ᵀ + b1), H2 = tanh(H1 W2ᵀ + b2), score =
 *  H2 w3 + b3, mean hinge relu(1 − y score) + 1e-4 Σ p², the parameters as slices of one input Vec
 *  (the scalar form's layout). X and −y are data, built once. */
function mlpVecForm(p: Float64Array, X: Float64Array, y: Float64Array, n: number): VecForm {
  const negY = Float64Array.from(y, (v) => -v);
  return {
    how: 'W = p.slice(..).reshape([16, k]); h = constantVector(X, [n, 2]).matmul(W1.T).add(b1).tanh(), the same for layer 2, ' +
      'score = h2.matvec(w3).add(b3); score.mul(-y).add(1).relu().sum().mul(1/n).add(p.sumSquares().mul(1e-4)); SGD step after',
    fn(v) {
      const W1m = v.slice(W1, B1).reshape([16, 2]), b1 = v.slice(B1, W2);
      const W2m = v.slice(W2, B2).reshape([16, 16]), b2 = v.slice(B2, W3);
      const w3 = v.slice(W3, B3), b3 = v.get(B3);
      const h1 = v.tape.constantVector(X, [n, 2]).matmul(W1m.T).add(b1).tanh();
      const h2 = h1.matmul(W2m.T).add(b2).tanh();
      const score = h2.matvec(w3).add(b3);
      const data = score.mul(negY).add(1).relu().sum();
      return data.mul(1 / n).add(v.sumSquares().mul(MLP_ALPHA));
    },
    step: (g) => sgdStep(p, g),
  };
}

export const mlp: Workload = {
  id: 'mlp',
  kind: 'mlp',
  title: 'MLP training step',
  description: 'micrograd moons demo: 2-16-16-1 MLP, tanh, hinge loss + 1e-4 L2 on n two-moons points; one step = loss, gradient (337 params), SGD update',
  size: { full: 100, quick: 100 },
  sizeUnit: 'points',
  tolerance: 1e-10,
  linearInN: true,
  make(n) {
    const { X, y } = moons(n);
    const x = mlpInit();
    return {
      kind: 'mlp',
      n,
      x,
      runLabel: '1 training step',
      evalsPerRun: 1,
      plain: () => mlpLoss(x, X, y, n),
      hand(g) {
        const v = mlpHandGradient(x, X, y, n, g);
        sgdStep(x, g);
        return v;
      },
      tapeVar: (tape, g, phase) => mlpVar(tape, x, X, y, n, g, phase),
      tapeHandle: (tape, g, phase) => mlpHandle(tape, x, X, y, n, g, phase),
      ...vecFields(x, mlpVecForm(x, X, y, n)),
      reference() {
        const grad = new Float64Array(MLP_PARAMS);
        const value = mlpHandGradient(x, X, y, n, grad);
        const idx = [0, 1, B1, W2 + 17, B2 + 3, W3, W3 + 15, B3];
        const fd = centralDifferences((p) => mlpLoss(p, X, y, n), x, idx, 1e-6);
        checkedAgainstFd('mlp', grad, fd, idx, 1e-6);
        return { value, grad, source: 'hand-written backpropagation, itself checked against central differences on 8 parameters' };
      },
    };
  },
};

/** The MLP data and initial parameters as peers need them. */
export function mlpData(n: number): { X: Float64Array; y: Float64Array } {
  return moons(n);
}

// ───────────────────────────── GradBench inputs ─────────────────────────────
// GradBench's lse and llsq evals draw their inputs with NumPy's legacy generator:
// np.random.seed(31337), then np.random.rand(size) once per problem size, in the order of the
// eval's size list. The same stream, reproduced here (MT19937 seeded by init_genrand, 53-bit
// doubles from two 32-bit outputs, as NumPy's random_sample), gives the very inputs GradBench
// sends at its sizes.

export const GRADBENCH_SEED = 31337;

/** NumPy's legacy `np.random.seed(seed); np.random.rand()` stream (MT19937). */
export function numpyLegacyRand(seed: number): () => number {
  const N = 624;
  const mt = new Uint32Array(N);
  mt[0] = seed >>> 0;
  for (let i = 1; i < N; i++) {
    const p = mt[i - 1]! ^ (mt[i - 1]! >>> 30);
    mt[i] = (Math.imul(1812433253, p) + i) >>> 0;
  }
  let idx = N;
  const next32 = (): number => {
    if (idx >= N) {
      for (let i = 0; i < N; i++) {
        const y = (mt[i]! & 0x80000000) | (mt[(i + 1) % N]! & 0x7fffffff);
        mt[i] = mt[(i + 397) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      idx = 0;
    }
    let y = mt[idx++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  };
  return () => {
    const a = next32() >>> 5, b = next32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  };
}

/** `count` uniform [0, 1) values from GradBench's stream after `skip` draws. */
function gradbenchUniform(skip: number, count: number): Float64Array {
  const rand = numpyLegacyRand(GRADBENCH_SEED);
  for (let i = 0; i < skip; i++) rand();
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = rand();
  return out;
}

// ───────────────────────────── log-sum-exp (GradBench lse) ─────────────────────────────
// GradBench evals/lse: A = max_i x_i, f(x) = log Σ exp(x_i − A) + A, the max taken inside the
// function (cpp/gradbench/evals/lse.hpp `primal`), so a tape records it (n − 1 max nodes) and
// the reverse sweep goes through it: the adjoint reaching A is 1 − Σ softmax = 0 up to rounding,
// and the gradient is softmax(x), which is also GradBench's manual gradient (tools/manual/lse.cpp).
// Inputs: x = np.random.rand(n) in GradBench's stream (uniform [0, 1)); sizes 2500 · 2^k up to
// 1.28e6 (evals/lse/run.py).

/** GradBench's lse sizes, in the order its eval draws them. */
export const LSE_GRADBENCH_N = [2500, 5000, 10000, 20000, 40000, 80000, 160000, 320000, 640000, 1280000] as const;

/** GradBench's x for n in its size list; for another n, the first n values of the same stream. */
export function lsePoint(n: number): Float64Array {
  const k = (LSE_GRADBENCH_N as readonly number[]).indexOf(n);
  let skip = 0;
  for (let j = 0; j < k; j++) skip += LSE_GRADBENCH_N[j]!;
  return gradbenchUniform(skip, n);
}

function maxOf(x: Float64Array): number {
  let m = x[0]!;
  for (let i = 1; i < x.length; i++) m = Math.max(m, x[i]!);
  return m;
}

function lsePlain(x: Float64Array): number {
  const A = maxOf(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) s += Math.exp(x[i]! - A);
  return Math.log(s) + A;
}

/** GradBench's manual gradient: softmax with the max shift. */
function lseHand(x: Float64Array, g: Float64Array): number {
  const A = maxOf(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) {
    const e = Math.exp(x[i]! - A);
    g[i] = e;
    s += e;
  }
  for (let i = 0; i < x.length; i++) g[i]! /= s;
  return Math.log(s) + A;
}

function lseVar(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const xs = tape.variables(x);
  const n = xs.length;
  let A = xs[0]!;
  for (let i = 1; i < n; i++) A = A.max(xs[i]!);
  let s = xs[0]!.sub(A).exp();
  for (let i = 1; i < n; i++) s = s.add(xs[i]!.sub(A).exp());
  const f = s.log().add(A);
  return valueAndGradientOf(tape, f, xs, g, phase);
}

function lseHandle(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const n = x.length;
  const xs = h.variables(x);
  let A = xs[0]!;
  for (let i = 1; i < n; i++) A = h.max(A, xs[i]!);
  let s = h.exp(h.sub(xs[0]!, A));
  for (let i = 1; i < n; i++) s = h.add(s, h.exp(h.sub(xs[i]!, A)));
  const f = h.add(h.log(s), A);
  if (phase) phase.recordEnd = now();
  const value = h.value(f);
  if (phase) phase.forwardEnd = now();
  h.gradient(f, xs, 1, g);
  return value;
}

/** Vector forms: the one-node logSumExp (max inside the node, adjoint softmax), and GradBench's
 *  literal form with the max recorded as a node of its own and differentiated through. */
const LSE_VEC: VecForm = { how: 'x.logSumExp() (one node)', fn: (x) => x.logSumExp() };
const LSE_VEC_LITERAL: VecForm = {
  how: "GradBench's literal form: A = x.max(); x.sub(A).exp().sum().log().add(A)",
  fn(x) {
    const A = x.max();
    return x.sub(A).exp().sum().log().add(A);
  },
};

function lseWorkload(id: string, full: number, quick: number, optIn: boolean): Workload {
  return {
    id,
    kind: 'lse',
    optIn,
    title: 'log-sum-exp',
    description:
      'GradBench lse: A = max_i x_i (inside the function, recorded), log sum_i exp(x_i - A) + A; ' +
      'x = GradBench\'s np.random.rand(n) (seed 31337); gradient = softmax',
    size: { full, quick },
    sizeUnit: 'values',
    // The adjoint reaching the max, 1 - sum softmax, is rounding (~5e-14 at n = 1.28e6) and lands
    // on the argmax component.
    tolerance: 1e-12,
    linearInN: true,
    make(n) {
      const x = lsePoint(n);
      return {
        kind: 'lse',
        n,
        x,
        runLabel: '1 gradient',
        evalsPerRun: 1,
        plain: () => lsePlain(x),
        hand: (g) => lseHand(x, g),
        tapeVar: (tape, g, phase) => lseVar(tape, x, g, phase),
        tapeHandle: (tape, g, phase) => lseHandle(tape, x, g, phase),
        ...vecFields(x, LSE_VEC, LSE_VEC_LITERAL),
        reference() {
          const grad = new Float64Array(n);
          return { value: lseHand(x, grad), grad, source: 'hand-written gradient (softmax, GradBench tools/manual/lse.cpp)' };
        },
      };
    },
  };
}

/** n = 80,000 in full runs and 20,000 in quick ones, both GradBench sizes (2500 · 2^k), so their
 *  inputs are GradBench's (the stream after the earlier sizes' draws); any other of its sizes with
 *  `run.ts --only=lse --n=...`. */
export const lse = lseWorkload('lse', 80_000, 20_000, false);
/** GradBench's sizes 1e4 and 1.28e6 (its largest), run only when named in --only. */
export const lse1e4 = lseWorkload('lse-1e4', 10_000, 10_000, true);
export const lse128e4 = lseWorkload('lse-1.28e6', 1_280_000, 160_000, true);

// ───────────────────────────── linear least squares (GradBench llsq) ─────────────────────────────
// GradBench evals/llsq (cmpad's llsq_obj): f(x) = ½ Σ_i (s_i − Σ_j x_j t_i^j)², t_i = −1 + 2i/(n−1),
// s_i = sign(t_i); m = 128 coefficients (its only m), n points from 16 to 16392 (its list, with
// 8196 and 16392 as written there). The powers t_i^j are built by repeated multiplication, as in
// cpp/gradbench/evals/llsq.hpp (for |t| < ~0.004 the high powers are subnormal or underflow to 0).
// Inputs: x = np.random.rand(128) in GradBench's stream, drawn once per n in list order.

export const LLSQ_M = 128;
/** GradBench's llsq sizes (points), in the order its eval draws x. */
export const LLSQ_GRADBENCH_N = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8196, 16392] as const;

export function llsqT(i: number, n: number): number {
  return -1 + (i * 2) / (n - 1);
}

/** GradBench's x for n points (its list); for another n, the first draw of the stream. */
export function llsqPoint(n: number, m = LLSQ_M): Float64Array {
  const k = Math.max(0, (LLSQ_GRADBENCH_N as readonly number[]).indexOf(n));
  return gradbenchUniform(k * m, m);
}

/** The n×m matrix of powers t_i^j, row-major, for the vectorised peers. */
export function llsqPowers(n: number, m: number): Float64Array {
  const T = new Float64Array(n * m);
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let acc = 1;
    for (let j = 0; j < m; j++) {
      T[i * m + j] = acc;
      acc *= t;
    }
  }
  return T;
}

function llsqPlain(x: Float64Array, n: number): number {
  const m = x.length;
  let s = 0;
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let r = Math.sign(t);
    let acc = 1;
    for (let j = 0; j < m; j++) {
      r -= x[j]! * acc;
      acc *= t;
    }
    s += r * r;
  }
  return s / 2;
}

function llsqHand(x: Float64Array, n: number, g: Float64Array): number {
  const m = x.length;
  g.fill(0);
  let s = 0;
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let r = Math.sign(t);
    let acc = 1;
    for (let j = 0; j < m; j++) {
      r -= x[j]! * acc;
      acc *= t;
    }
    s += r * r;
    acc = 1;
    for (let j = 0; j < m; j++) {
      g[j]! -= r * acc;
      acc *= t;
    }
  }
  return s / 2;
}

function llsqVar(tape: Tape, x: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const xs = tape.variables(x);
  const m = xs.length;
  let s: Var | null = null;
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let r = tape.constant(Math.sign(t));
    let acc = 1;
    for (let j = 0; j < m; j++) {
      r = r.sub(xs[j]!.mul(acc));
      acc *= t;
    }
    s = s ? s.add(r.square()) : r.square();
  }
  const f = s!.div(2);
  return valueAndGradientOf(tape, f, xs, g, phase);
}

function llsqHandle(tape: Tape, x: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const m = x.length;
  const xs = h.variables(x);
  let s = -1;
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let r = h.constant(Math.sign(t));
    let acc = 1;
    for (let j = 0; j < m; j++) {
      r = h.sub(r, h.mul(xs[j]!, h.constant(acc)));
      acc *= t;
    }
    s = s < 0 ? h.square(r) : h.add(s, h.square(r));
  }
  const f = h.div(s, h.constant(2));
  if (phase) phase.recordEnd = now();
  const value = h.value(f);
  if (phase) phase.forwardEnd = now();
  h.gradient(f, xs, 1, g);
  return value;
}

/** Vector form: the n×m power matrix T (t_i^j by repeated multiplication, as the scalar form)
 *  and s = sign(t) are built inside the function, as GradBench's primal gets only x and n: a fresh
 *  recording builds and copies them every run; a replay recorded them once, at compile time, as
 *  constants (what a compiled replay legitimately keeps). f = ½ Σ (s − T x)². */
function llsqVecForm(n: number): VecForm {
  return {
    how: `T = llsqPowers(n, ${LLSQ_M}), s = sign(t) built in the function (timed); constantVector(s).sub(constantVector(T, [${n}, ${LLSQ_M}]).matvec(x)).square().sum().div(2)`,
    fn(x) {
      const t = x.tape;
      const T = llsqPowers(n, LLSQ_M);
      const s = new Float64Array(n);
      for (let i = 0; i < n; i++) s[i] = Math.sign(llsqT(i, n));
      return t.constantVector(s).sub(t.constantVector(T, [n, LLSQ_M]).matvec(x)).square().sum().div(2);
    },
  };
}

function llsqWorkload(id: string, full: number, quick: number, optIn: boolean): Workload {
  return {
    id,
    kind: 'llsq',
    optIn,
    title: `least squares (m=${LLSQ_M})`,
    description:
      `GradBench llsq: 1/2 sum_i (sign(t_i) - sum_j x_j t_i^j)^2, t_i = -1 + 2i/(n-1), m = ${LLSQ_M} coefficients, n points; ` +
      'x = GradBench\'s np.random.rand(128) (seed 31337); gradient w.r.t. x',
    size: { full, quick },
    sizeUnit: 'points',
    tolerance: 1e-10,
    linearInN: true,
    make(n) {
      const x = llsqPoint(n);
      return {
        kind: 'llsq',
        n,
        x,
        runLabel: '1 gradient',
        evalsPerRun: 1,
        plain: () => llsqPlain(x, n),
        hand: (g) => llsqHand(x, n, g),
        tapeVar: (tape, g, phase) => llsqVar(tape, x, n, g, phase),
        tapeHandle: (tape, g, phase) => llsqHandle(tape, x, n, g, phase),
        ...vecFields(x, llsqVecForm(n)),
        reference() {
          const grad = new Float64Array(LLSQ_M);
          return { value: llsqHand(x, n, grad), grad, source: 'hand-written gradient (GradBench tools/manual/llsq.cpp form)' };
        },
      };
    },
  };
}

export const llsq = llsqWorkload('llsq', 1024, 256, false);
/** GradBench's largest llsq size (16392 points, as its list has it), run only when named. */
export const llsq16392 = llsqWorkload('llsq-16392', 16_392, 2048, true);

// ───────────────────────────── an ODE solve (GradBench ode) ─────────────────────────────
// GradBench evals/ode (cmpad's an_ode), as cpp/gradbench/evals/ode.hpp `primal` computes it:
// y' = F(y) with F(y)_0 = x_0, F(y)_i = x_i y_{i−1}, y(0) = 0, integrated to tf = 2 by s steps
// of classical Runge-Kutta (h = tf/s; y_tmp = y + h k1/2, y + h k2/2, y + h k3; y += h (k1 + 2 k2 +
// 2 k3 + k4)/6, each in that order of operations); the output is the last element of y(tf), the
// gradient is w.r.t. all of x. GradBench's sizes: n ∈ {1000, 10000, 100000} × s ∈ {1, 10, 100},
// x = np.random.rand(n) per combination, drawn in the order of the combinations sorted by n·s
// (evals/ode/run.py; Python's sort is stable, so ties keep n-major order). Here s = 10, n = 10^4
// (2·10^6 scalar tape nodes, about gmm's size), quick n = 10^3 (also one of GradBench's pairs).
// Each RK4 step spreads nonzeros by four indices (y after s steps is nonzero below index 4s only),
// so at every GradBench pair (n > 8s) the last element and its whole gradient are exactly 0; the
// work is the same as for any x, but the gradient check compares zeros: reference() therefore also
// checks the hand-written adjoint against central differences at a small n where they are not.

export const ODE_S = 10;
export const ODE_TF = 2;
export const ODE_GRADBENCH_N = [1000, 10000, 100000] as const;
export const ODE_GRADBENCH_S = [1, 10, 100] as const;

/** GradBench's x for (n, s) in its grid; for another pair, the first n values of the stream. */
export function odePoint(n: number, s = ODE_S): Float64Array {
  const pairs: [number, number][] = [];
  for (const pn of ODE_GRADBENCH_N) for (const ps of ODE_GRADBENCH_S) pairs.push([pn, ps]);
  pairs.sort((a, b) => a[0] * a[1] - b[0] * b[1]); // stable, as Python's sorted
  const k = pairs.findIndex(([pn, ps]) => pn === n && ps === s);
  let skip = 0;
  for (let j = 0; j < k; j++) skip += pairs[j]![0];
  return gradbenchUniform(skip, n);
}

/** z = F(v): z_0 = x_0, z_i = x_i v_{i−1} (ode.hpp's ode_fun). */
function odeF(x: Float64Array, v: Float64Array, z: Float64Array): void {
  z[0] = x[0]!;
  for (let i = 1; i < x.length; i++) z[i] = x[i]! * v[i - 1]!;
}

/** One RK4 step from y into y (k1..k4, tmp: scratch of length n). */
function odeStep(x: Float64Array, h: number, y: Float64Array, k1: Float64Array, k2: Float64Array, k3: Float64Array, k4: Float64Array, tmp: Float64Array): void {
  const n = x.length;
  odeF(x, y, k1);
  for (let i = 0; i < n; i++) tmp[i] = y[i]! + (h * k1[i]!) / 2;
  odeF(x, tmp, k2);
  for (let i = 0; i < n; i++) tmp[i] = y[i]! + (h * k2[i]!) / 2;
  odeF(x, tmp, k3);
  for (let i = 0; i < n; i++) tmp[i] = y[i]! + h * k3[i]!;
  odeF(x, tmp, k4);
  for (let i = 0; i < n; i++) y[i]! += (h * (k1[i]! + 2 * k2[i]! + 2 * k3[i]! + k4[i]!)) / 6;
}

export function odePlain(x: Float64Array, s: number): number {
  const n = x.length, h = ODE_TF / s;
  const y = new Float64Array(n), k1 = new Float64Array(n), k2 = new Float64Array(n), k3 = new Float64Array(n), k4 = new Float64Array(n), tmp = new Float64Array(n);
  for (let step = 0; step < s; step++) odeStep(x, h, y, k1, k2, k3, k4, tmp);
  return y[n - 1]!;
}

/** Adjoint of z = F(v): xb += ∂/∂x, vb += ∂/∂v, for the adjoint zb of z. */
function odeFAdjoint(x: Float64Array, v: Float64Array, zb: Float64Array, xb: Float64Array, vb: Float64Array): void {
  xb[0]! += zb[0]!;
  for (let i = 1; i < x.length; i++) {
    xb[i]! += zb[i]! * v[i - 1]!;
    vb[i - 1]! += zb[i]! * x[i]!;
  }
}

/** Reverse mode by hand through the RK4 steps (the discrete scheme's gradient; GradBench's
 *  tools/manual/ode.cpp returns the exact ODE solution's instead, x_0 ∏ x_i tf^n/n! over x_i,
 *  which differs from it at small n and underflows to 0 at GradBench's n). The states before each
 *  step are kept (s·n numbers); the stages are recomputed from them in the reverse pass. */
function odeHand(x: Float64Array, s: number, g: Float64Array): number {
  const n = x.length, h = ODE_TF / s;
  const ys = new Float64Array(s * n);
  const y = new Float64Array(n), k1 = new Float64Array(n), k2 = new Float64Array(n), k3 = new Float64Array(n), k4 = new Float64Array(n);
  const t2 = new Float64Array(n), t3 = new Float64Array(n), t4 = new Float64Array(n);
  for (let step = 0; step < s; step++) {
    ys.set(y, step * n);
    odeStep(x, h, y, k1, k2, k3, k4, t2);
  }
  const value = y[n - 1]!;
  g.fill(0);
  const yb = new Float64Array(n), kb1 = new Float64Array(n), kb2 = new Float64Array(n), kb3 = new Float64Array(n), kb4 = new Float64Array(n), tb = new Float64Array(n);
  yb[n - 1] = 1;
  for (let step = s - 1; step >= 0; step--) {
    const y0 = ys.subarray(step * n, (step + 1) * n);
    odeF(x, y0, k1);
    for (let i = 0; i < n; i++) t2[i] = y0[i]! + (h * k1[i]!) / 2;
    odeF(x, t2, k2);
    for (let i = 0; i < n; i++) t3[i] = y0[i]! + (h * k2[i]!) / 2;
    odeF(x, t3, k3);
    for (let i = 0; i < n; i++) t4[i] = y0[i]! + h * k3[i]!;
    // y1 = y0 + h (k1 + 2 k2 + 2 k3 + k4)/6: y0 keeps yb (identity), the stages get their shares.
    for (let i = 0; i < n; i++) {
      const c = (h / 6) * yb[i]!;
      kb1[i] = c;
      kb2[i] = 2 * c;
      kb3[i] = 2 * c;
      kb4[i] = c;
    }
    // k4 = F(t4), t4 = y0 + h k3; k3 = F(t3), t3 = y0 + h k2/2; k2 = F(t2), t2 = y0 + h k1/2; k1 = F(y0).
    tb.fill(0);
    odeFAdjoint(x, t4, kb4, g, tb);
    for (let i = 0; i < n; i++) { yb[i]! += tb[i]!; kb3[i]! += h * tb[i]!; }
    tb.fill(0);
    odeFAdjoint(x, t3, kb3, g, tb);
    for (let i = 0; i < n; i++) { yb[i]! += tb[i]!; kb2[i]! += (h / 2) * tb[i]!; }
    tb.fill(0);
    odeFAdjoint(x, t2, kb2, g, tb);
    for (let i = 0; i < n; i++) { yb[i]! += tb[i]!; kb1[i]! += (h / 2) * tb[i]!; }
    odeFAdjoint(x, y0, kb1, g, yb);
  }
  return value;
}

/** The solve on Vars (the operations of ode.hpp, one node each); y(0) = 0 is one constant. */
function odeFn(xs: Var[], s: number): Var {
  const n = xs.length, h = ODE_TF / s;
  const zero = xs[0]!.tape.constant(0);
  const y: Var[] = new Array<Var>(n).fill(zero);
  const k1: Var[] = new Array<Var>(n), k2: Var[] = new Array<Var>(n), k3: Var[] = new Array<Var>(n), k4: Var[] = new Array<Var>(n), tmp: Var[] = new Array<Var>(n);
  const F = (v: Var[], z: Var[]): void => {
    z[0] = xs[0]!;
    for (let i = 1; i < n; i++) z[i] = xs[i]!.mul(v[i - 1]!);
  };
  for (let step = 0; step < s; step++) {
    F(y, k1);
    for (let i = 0; i < n; i++) tmp[i] = y[i]!.add(k1[i]!.mul(h).div(2));
    F(tmp, k2);
    for (let i = 0; i < n; i++) tmp[i] = y[i]!.add(k2[i]!.mul(h).div(2));
    F(tmp, k3);
    for (let i = 0; i < n; i++) tmp[i] = y[i]!.add(k3[i]!.mul(h));
    F(tmp, k4);
    for (let i = 0; i < n; i++) y[i] = y[i]!.add(k1[i]!.add(k2[i]!.mul(2)).add(k3[i]!.mul(2)).add(k4[i]!).mul(h).div(6));
  }
  return y[n - 1]!;
}

// The end of a Var form: recording done, the value (the forward sweep), then the gradient into g.
function valueAndGradientOf(tape: Tape, f: Var, xs: Var[], g: Float64Array, phase?: Phase): number {
  if (phase) phase.recordEnd = now();
  const value = f.value;
  if (phase) phase.forwardEnd = now();
  g.set(tape.gradient(f, xs));
  return value;
}

function odeVar(tape: Tape, x: Float64Array, s: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const xs = tape.variables(x);
  const f = odeFn(xs, s);
  return valueAndGradientOf(tape, f, xs, g, phase);
}

function odeHandle(tape: Tape, x: Float64Array, s: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const n = x.length;
  const xs = h.variables(x);
  const cH = h.constant(ODE_TF / s), c2 = h.constant(2), c6 = h.constant(6);
  const y = new Int32Array(n).fill(h.constant(0));
  const k1 = new Int32Array(n), k2 = new Int32Array(n), k3 = new Int32Array(n), k4 = new Int32Array(n), tmp = new Int32Array(n);
  const F = (v: Int32Array, z: Int32Array): void => {
    z[0] = xs[0]!;
    for (let i = 1; i < n; i++) z[i] = h.mul(xs[i]!, v[i - 1]!);
  };
  for (let step = 0; step < s; step++) {
    F(y, k1);
    for (let i = 0; i < n; i++) tmp[i] = h.add(y[i]!, h.div(h.mul(k1[i]!, cH), c2));
    F(tmp, k2);
    for (let i = 0; i < n; i++) tmp[i] = h.add(y[i]!, h.div(h.mul(k2[i]!, cH), c2));
    F(tmp, k3);
    for (let i = 0; i < n; i++) tmp[i] = h.add(y[i]!, h.mul(k3[i]!, cH));
    F(tmp, k4);
    for (let i = 0; i < n; i++) {
      const sum = h.add(h.add(h.add(k1[i]!, h.mul(k2[i]!, c2)), h.mul(k3[i]!, c2)), k4[i]!);
      y[i] = h.add(y[i]!, h.div(h.mul(sum, cH), c6));
    }
  }
  const f = y[n - 1]!;
  if (phase) phase.recordEnd = now();
  const value = h.value(f);
  if (phase) phase.forwardEnd = now();
  h.gradient(f, xs, 1, g);
  return value;
}

/** Vector form: F(v) = x · concat([1, v[:-1]]) (the shift as a slice and a concat, as GradBench's
 *  JAX tool's roll and where), the stages and the update elementwise, s steps unrolled; y(0) is a
 *  constant vector of zeros (data, built once); the output is y.get(n − 1). */
function odeVecForm(n: number, s: number): VecForm {
  const h = ODE_TF / s;
  const zeros = new Float64Array(n);
  return {
    how: `F(v) = x.mul(concat([1, v.slice(0, -1)])); ${s} steps of y.add(k1.mul(h).div(2)) ... y.add(k1.add(k2.mul(2)).add(k3.mul(2)).add(k4).mul(h).div(6)); y.get(n - 1)`,
    fn(x) {
      const t = x.tape;
      const F = (v: Vec): Vec => x.mul(t.concat([1, v.slice(0, -1)]));
      let y = t.constantVector(zeros);
      for (let step = 0; step < s; step++) {
        const k1 = F(y);
        const k2 = F(y.add(k1.mul(h).div(2)));
        const k3 = F(y.add(k2.mul(h).div(2)));
        const k4 = F(y.add(k3.mul(h)));
        y = y.add(k1.add(k2.mul(2)).add(k3.mul(2)).add(k4).mul(h).div(6));
      }
      return y.get(n - 1);
    },
  };
}

export const ode: Workload = {
  id: 'ode',
  kind: 'ode',
  title: `ODE, RK4 (s=${ODE_S})`,
  description:
    `GradBench ode (cpp/gradbench/evals/ode.hpp): y' = (x_0, x_i y_{i-1}), y(0) = 0, ${ODE_S} classical Runge-Kutta steps to tf = 2; ` +
    'gradient of the last element of y(tf) w.r.t. x; x = GradBench\'s np.random.rand(n) (seed 31337, its (n, s) order)',
  size: { full: 10_000, quick: 1000 },
  sizeUnit: 'values',
  tolerance: 1e-12,
  // Linear in n at fixed s.
  linearInN: true,
  make(n) {
    const s = ODE_S;
    const x = odePoint(n, s);
    return {
      kind: 'ode',
      n,
      x,
      runLabel: '1 gradient',
      evalsPerRun: 1,
      plain: () => odePlain(x, s),
      hand: (g) => odeHand(x, s, g),
      tapeVar: (tape, g, phase) => odeVar(tape, x, s, g, phase),
      tapeHandle: (tape, g, phase) => odeHandle(tape, x, s, g, phase),
      compiled: { fn: (xs) => odeFn(xs, s), inputs: n },
      ...vecFields(x, odeVecForm(n, s)),
      reference() {
        const grad = new Float64Array(n);
        const value = odeHand(x, s, grad);
        // At GradBench's sizes value and gradient are 0 (see above): check the adjoint where they
        // are not, on the first 24 values of x (4s > 23: every component matters).
        // There y_23(tf) is ~1e-26: both sides are scaled by 1/|y_23| so the check is relative.
        const small = x.slice(0, 24), smallGrad = new Float64Array(small.length);
        const unit = 1 / Math.abs(odeHand(small, s, smallGrad));
        for (let i = 0; i < smallGrad.length; i++) smallGrad[i]! *= unit;
        const idx = Array.from(small, (_, i) => i);
        const fd = centralDifferences((q) => odePlain(q, s) * unit, small, idx, 1e-6);
        checkedAgainstFd('ode (n = 24)', smallGrad, fd, idx, 1e-8);
        return { value, grad, source: 'hand-written adjoint of the RK4 steps, itself checked against central differences at n = 24 (all components)' };
      },
    };
  },
};

// ───────────────────────────── logistic regression ─────────────────────────────
// L(w, b) = (1/N) Σ_i softplus(z_i) − y_i z_i, z_i = b + Σ_j X_ij w_j: the mean negative
// log-likelihood of a logistic model, N = 2000 points × 20 features, labels 0/1 drawn from a
// known model; gradient w.r.t. the 21 parameters (w, then b). softplus is the stable
// max(z, 0) + log1p(exp(−|z|)) (tapegrad's softplus op).

export const LOGREG_D = 20;

/** X (N×D, row-major, standard normal), y (0/1 from a logistic model), and the point (w, b). */
export function logregData(n: number, d = LOGREG_D): { X: Float64Array; y: Float64Array; p: Float64Array } {
  const rand = mulberry32(23);
  const gauss = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const X = new Float64Array(n * d);
  for (let i = 0; i < X.length; i++) X[i] = gauss();
  const wTrue = new Float64Array(d);
  for (let j = 0; j < d; j++) wTrue[j] = 0.5 * gauss();
  const bTrue = 0.3;
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let z = bTrue;
    for (let j = 0; j < d; j++) z += X[i * d + j]! * wTrue[j]!;
    y[i] = rand() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  const p = new Float64Array(d + 1);
  for (let j = 0; j < d; j++) p[j] = 0.1 * gauss();
  p[d] = 0.05;
  return { X, y, p };
}

function softplusOf(z: number): number {
  return Math.max(z, 0) + Math.log1p(Math.exp(-Math.abs(z)));
}

export function logregPlain(p: Float64Array, X: Float64Array, y: Float64Array, n: number): number {
  const d = p.length - 1;
  const b = p[d]!;
  let s = 0;
  for (let i = 0; i < n; i++) {
    let z = b;
    for (let j = 0; j < d; j++) z += X[i * d + j]! * p[j]!;
    s += softplusOf(z) - y[i]! * z;
  }
  return s / n;
}

/** dL/dw = (1/N) X^T (sigmoid(z) − y), dL/db = mean(sigmoid(z) − y). */
function logregHand(p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array): number {
  const d = p.length - 1;
  const b = p[d]!;
  g.fill(0);
  let s = 0;
  for (let i = 0; i < n; i++) {
    let z = b;
    for (let j = 0; j < d; j++) z += X[i * d + j]! * p[j]!;
    s += softplusOf(z) - y[i]! * z;
    const e = z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
    const r = (e - y[i]!) / n;
    for (let j = 0; j < d; j++) g[j]! += r * X[i * d + j]!;
    g[d]! += r;
  }
  return s / n;
}

function logregVar(tape: Tape, p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const ps = tape.variables(p);
  const d = p.length - 1;
  const b = ps[d]!;
  let s: Var | null = null;
  for (let i = 0; i < n; i++) {
    let z = b;
    for (let j = 0; j < d; j++) z = z.add(ps[j]!.mul(X[i * d + j]!));
    const term = z.softplus().sub(z.mul(y[i]!));
    s = s ? s.add(term) : term;
  }
  const f = s!.div(n);
  if (phase) phase.recordEnd = now();
  const value = f.value;
  if (phase) phase.forwardEnd = now();
  g.set(tape.gradient(f, ps));
  return value;
}

function logregHandle(tape: Tape, p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const d = p.length - 1;
  const ps = h.variables(p);
  let s = -1;
  for (let i = 0; i < n; i++) {
    let z = ps[d]!;
    for (let j = 0; j < d; j++) z = h.add(z, h.mul(ps[j]!, h.constant(X[i * d + j]!)));
    const term = h.sub(h.softplus(z), h.mul(z, h.constant(y[i]!)));
    s = s < 0 ? term : h.add(s, term);
  }
  const f = h.div(s, h.constant(n));
  if (phase) phase.recordEnd = now();
  const value = h.value(f);
  if (phase) phase.forwardEnd = now();
  h.gradient(f, ps, 1, g);
  return value;
}

/** Vector form: X [n, 20] and y are data; z = X w + b, mean(softplus(z) − y z). */
function logregVecForm(X: Float64Array, y: Float64Array, n: number): VecForm {
  const d = LOGREG_D;
  return {
    how: `w = p.slice(0, ${d}), b = p.get(${d}); z = constantVector(X, [${n}, ${d}]).matvec(w).add(b); z.softplus().sub(z.mul(y)).mean() (X, y built once, copied onto the tape each recording)`,
    fn(p) {
      const z = p.tape.constantVector(X, [n, d]).matvec(p.slice(0, d)).add(p.get(d));
      return z.softplus().sub(z.mul(y)).mean();
    },
  };
}

export const logreg: Workload = {
  id: 'logreg',
  kind: 'logreg',
  title: 'logistic regression',
  description:
    'mean_i softplus(z_i) - y_i z_i, z = X w + b, X: n x 20 standard normal, y in {0,1} from a logistic model (mulberry32 data); ' +
    'gradient w.r.t. w and b (21 parameters)',
  size: { full: 2000, quick: 500 },
  sizeUnit: 'points',
  tolerance: 1e-11,
  linearInN: true,
  make(n) {
    const { X, y, p } = logregData(n);
    return {
      kind: 'logreg',
      n,
      x: p,
      runLabel: '1 gradient',
      evalsPerRun: 1,
      plain: () => logregPlain(p, X, y, n),
      hand: (g) => logregHand(p, X, y, n, g),
      tapeVar: (tape, g, phase) => logregVar(tape, p, X, y, n, g, phase),
      tapeHandle: (tape, g, phase) => logregHandle(tape, p, X, y, n, g, phase),
      ...vecFields(p, logregVecForm(X, y, n)),
      reference() {
        const grad = new Float64Array(LOGREG_D + 1);
        const value = logregHand(p, X, y, n, grad);
        const idx = [0, 1, 7, 13, 19, LOGREG_D];
        const fd = centralDifferences((q) => logregPlain(q, X, y, n), p, idx, 1e-6);
        checkedAgainstFd('logreg', grad, fd, idx, 1e-7);
        return { value, grad, source: 'hand-written gradient, itself checked against central differences on 6 parameters' };
      },
    };
  },
};

// ───────────────────────────── Gaussian mixture model (GradBench gmm) ─────────────────────────────
// GradBench evals/gmm (ADBench's GMM with its fixes), exactly as cpp/gradbench/evals/gmm.hpp
// `objective`: with Qd_k = exp(q_k), S_k = Σ_j q_kj, Q_k lower triangular (diagonal Qd_k, the
// strictly lower part filled column by column from l_k),
//   β_ik = α_k + S_k − ½ ‖Q_k (x_i − μ_k)‖²,
//   F = −N D/2 log 2π + Σ_i logsumexp_k β_ik − N logsumexp(α) + W,
//   W = −Σ_k (½ γ² (‖Qd_k‖² + ‖l_k‖²) − m S_k) + K (n' D (log γ − ½ log 2) − log Γ_D(n'/2)), n' = D + m + 1,
// every logsumexp with its max taken inside (recorded). Gradient w.r.t. (α, μ, q, l): K + 2KD +
// K D(D−1)/2 = 1650 parameters at D = 10, K = 25. GradBench's defaults: N = 1000 points, m = 0,
// γ = 1 (evals/gmm/run.py). Its data come from NumPy's default_rng(31337) (PCG64): x, α, q, l
// standard normal, μ uniform [0, 1): bench/data holds its data for d = 10, K = 25, N = 1000 (the
// first n points for a smaller n); other shapes, and n past 1000, take the same distributions
// from mulberry32 instead, in that order (not GradBench's numbers: GradBench draws all of x first).

export const GMM_D = 10;
export const GMM_K = 25;
export const GMM_M = 0;
export const GMM_GAMMA = 1;

export interface GmmData {
  d: number;
  k: number;
  n: number;
  /** N×D points, row-major. */
  X: Float64Array;
  /** The parameters, packed: α (K), μ (K×D), q (K×D), l (K × D(D−1)/2). */
  p: Float64Array;
  /** Offsets of μ, q and l in p. */
  mu0: number;
  q0: number;
  l0: number;
  lsz: number;
  m: number;
  gamma: number;
}

export function gmmData(n: number, d = GMM_D, k = GMM_K): GmmData {
  if (d === GMM_D && k === GMM_K && n <= GRADBENCH_GMM_N) return gradbenchGmm(n);
  const rand = mulberry32(31337);
  const gauss = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const lsz = (d * (d - 1)) / 2;
  const X = new Float64Array(n * d);
  for (let i = 0; i < X.length; i++) X[i] = gauss();
  const mu0 = k, q0 = k + k * d, l0 = k + 2 * k * d;
  const p = new Float64Array(l0 + k * lsz);
  for (let i = 0; i < k; i++) p[i] = gauss();
  for (let i = mu0; i < q0; i++) p[i] = rand();
  for (let i = q0; i < l0; i++) p[i] = gauss();
  for (let i = l0; i < p.length; i++) p[i] = gauss();
  return { d, k, n, X, p, mu0, q0, l0, lsz, m: GMM_M, gamma: GMM_GAMMA };
}

// GradBench's own input for d = 10, K = 25, n = 1000 (scripts/gmm-input.py draws it as its eval's
// `generate` does, NumPy's default_rng(31337)); a smaller n (the quick run, micrograd) takes its
// first n points with the same parameters. On it the objective is GradBench's reference value.
const GRADBENCH_GMM_N = 1000;
function gradbenchGmm(n: number): GmmData {
  const d = GMM_D, k = GMM_K, lsz = (d * (d - 1)) / 2;
  const file = readFileSync(new URL('./data/gmm-d10-k25-n1000.f64', import.meta.url));
  const all = new Float64Array(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength));
  if (all.length !== GRADBENCH_GMM_N * d + k + 2 * k * d + k * lsz) throw new Error(`bench/data/gmm-d10-k25-n1000.f64 holds ${all.length} numbers: run scripts/gmm-input.py`);
  const X = all.slice(0, n * d);
  const p = all.slice(GRADBENCH_GMM_N * d);
  const mu0 = k, q0 = k + k * d, l0 = k + 2 * k * d;
  return { d, k, n, X, p, mu0, q0, l0, lsz, m: GMM_M, gamma: GMM_GAMMA };
}

/** For the vectorised peers: the lsz × d² 0/1 matrix that scatters l_k (column by column, as
 *  Qtimesx reads it) into the strictly lower part of a row-major d×d matrix: L_k = l_k S. */
export function gmmLowerScatter(d: number): Float64Array {
  const lsz = (d * (d - 1)) / 2;
  const S = new Float64Array(lsz * d * d);
  let idx = 0;
  for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) S[idx++ * d * d + b * d + a] = 1;
  return S;
}

/** log Γ(x) for x a positive integer or half-integer (all the Wishart constant needs), exactly
 *  from Γ(1) = 1, Γ(1/2) = √π and Γ(x + 1) = x Γ(x). */
function lgammaHalfInteger(x: number): number {
  if (!(x > 0) || 2 * x !== Math.round(2 * x)) throw new Error(`lgammaHalfInteger: ${x} is not a positive half-integer`);
  let y = Number.isInteger(x) ? 1 : 0.5;
  let logG = Number.isInteger(x) ? 0 : 0.5 * Math.log(Math.PI);
  for (; y < x; y++) logG += Math.log(y);
  return logG;
}

/** ADBench's log_gamma_distrib(a, p) = log Γ_p(a), the multivariate gamma function. */
function logGammaDistrib(a: number, p: number): number {
  let out = 0.25 * p * (p - 1) * Math.log(Math.PI);
  for (let j = 1; j <= p; j++) out += lgammaHalfInteger(a + 0.5 * (1 - j));
  return out;
}

/** The two constants of F: −N D/2 log 2π, and the Wishart normaliser per component C. */
export function gmmConstants(g: Pick<GmmData, 'd' | 'n' | 'm' | 'gamma'>): { CONSTANT: number; C: number } {
  const nw = g.d + g.m + 1;
  return {
    CONSTANT: -g.n * g.d * 0.5 * Math.log(2 * Math.PI),
    C: nw * g.d * (Math.log(g.gamma) - 0.5 * Math.log(2)) - logGammaDistrib(0.5 * nw, g.d),
  };
}

function logsumexpOf(v: Float64Array): number {
  const mx = maxOf(v);
  let s = 0;
  for (let i = 0; i < v.length; i++) s += Math.exp(v[i]! - mx);
  return Math.log(s) + mx;
}

export function gmmPlain(p: Float64Array, g: GmmData): number {
  const { d, k, n, X, mu0, q0, l0, lsz, m, gamma } = g;
  const { CONSTANT, C } = gmmConstants(g);
  const Qd = new Float64Array(d * k), sumQ = new Float64Array(k);
  for (let i = 0; i < d * k; i++) Qd[i] = Math.exp(p[q0 + i]!);
  for (let c = 0; c < k; c++) for (let j = 0; j < d; j++) sumQ[c]! += p[q0 + c * d + j]!;
  const xc = new Float64Array(d), Qxc = new Float64Array(d), main = new Float64Array(k);
  let slse = 0;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      for (let j = 0; j < d; j++) xc[j] = X[i * d + j]! - p[mu0 + c * d + j]!;
      for (let j = 0; j < d; j++) Qxc[j] = Qd[c * d + j]! * xc[j]!;
      let li = l0 + c * lsz;
      for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) Qxc[b]! += p[li++]! * xc[a]!;
      let sq = Qxc[0]! * Qxc[0]!;
      for (let j = 1; j < d; j++) sq += Qxc[j]! * Qxc[j]!;
      main[c] = p[c]! + sumQ[c]! - 0.5 * sq;
    }
    slse += logsumexpOf(main);
  }
  const lseAlpha = logsumexpOf(p.subarray(0, k));
  let out = 0;
  for (let c = 0; c < k; c++) {
    let frob = Qd[c * d]! * Qd[c * d]!;
    for (let j = 1; j < d; j++) frob += Qd[c * d + j]! * Qd[c * d + j]!;
    let ls = p[l0 + c * lsz]! * p[l0 + c * lsz]!;
    for (let j = 1; j < lsz; j++) ls += p[l0 + c * lsz + j]! * p[l0 + c * lsz + j]!;
    out += 0.5 * gamma * gamma * (frob + ls) - m * sumQ[c]!;
  }
  return CONSTANT + slse - n * lseAlpha + (-out + k * C);
}

/** Value and gradient by hand: with w_ik = softmax_k β_ik and y = Q_k (x_i − μ_k),
 *  ∂β/∂α_k = 1, ∂β/∂q_kj = 1 − y_j (x_i − μ_k)_j Qd_kj, ∂β/∂l_k(a→b) = −y_b (x_i − μ_k)_a,
 *  ∂β/∂μ_k = Q_k^T y; ∂/∂α of −N lse(α) = −N softmax(α); ∂W/∂q_kj = −γ² Qd_kj² + m, ∂W/∂l = −γ² l. */
function gmmHand(p: Float64Array, g: GmmData, grad: Float64Array): number {
  const { d, k, n, X, mu0, q0, l0, lsz, m, gamma } = g;
  const { CONSTANT, C } = gmmConstants(g);
  grad.fill(0);
  const Qd = new Float64Array(d * k), sumQ = new Float64Array(k);
  for (let i = 0; i < d * k; i++) Qd[i] = Math.exp(p[q0 + i]!);
  for (let c = 0; c < k; c++) for (let j = 0; j < d; j++) sumQ[c]! += p[q0 + c * d + j]!;
  const xc = new Float64Array(d * k), Qxc = new Float64Array(d * k), main = new Float64Array(k), qty = new Float64Array(d);
  let slse = 0;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      const o = c * d;
      for (let j = 0; j < d; j++) xc[o + j] = X[i * d + j]! - p[mu0 + o + j]!;
      for (let j = 0; j < d; j++) Qxc[o + j] = Qd[o + j]! * xc[o + j]!;
      let li = l0 + c * lsz;
      for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) Qxc[o + b]! += p[li++]! * xc[o + a]!;
      let sq = Qxc[o]! * Qxc[o]!;
      for (let j = 1; j < d; j++) sq += Qxc[o + j]! * Qxc[o + j]!;
      main[c] = p[c]! + sumQ[c]! - 0.5 * sq;
    }
    const mx = maxOf(main);
    let s = 0;
    for (let c = 0; c < k; c++) s += Math.exp(main[c]! - mx);
    slse += Math.log(s) + mx;
    for (let c = 0; c < k; c++) {
      const w = Math.exp(main[c]! - mx) / s;
      const o = c * d;
      grad[c]! += w;
      // Q^T y, and the q and l adjoints, for y = Qxc of this component.
      for (let j = 0; j < d; j++) {
        qty[j] = Qd[o + j]! * Qxc[o + j]!;
        grad[q0 + o + j]! += w * (1 - Qxc[o + j]! * xc[o + j]! * Qd[o + j]!);
      }
      let li = c * lsz;
      for (let a = 0; a < d; a++) {
        for (let b = a + 1; b < d; b++) {
          qty[a]! += p[l0 + li]! * Qxc[o + b]!;
          grad[l0 + li]! -= w * Qxc[o + b]! * xc[o + a]!;
          li++;
        }
      }
      for (let j = 0; j < d; j++) grad[mu0 + o + j]! += w * qty[j]!;
    }
  }
  const alpha = p.subarray(0, k);
  const lseAlpha = logsumexpOf(alpha);
  for (let c = 0; c < k; c++) grad[c]! -= n * Math.exp(alpha[c]! - lseAlpha);
  let out = 0;
  for (let c = 0; c < k; c++) {
    let frob = 0;
    for (let j = 0; j < d; j++) {
      const e = Qd[c * d + j]!;
      frob += e * e;
      grad[q0 + c * d + j]! += -gamma * gamma * e * e + m;
    }
    for (let j = 0; j < lsz; j++) {
      const v = p[l0 + c * lsz + j]!;
      frob += v * v;
      grad[l0 + c * lsz + j]! -= gamma * gamma * v;
    }
    out += 0.5 * gamma * gamma * frob - m * sumQ[c]!;
  }
  return CONSTANT + slse - n * lseAlpha + (-out + k * C);
}

/** logsumexp of Vars with the max recorded (as ADBench's arr_max inside logsumexp). */
function logsumexpVar(v: Var[]): Var {
  let mx = v[0]!;
  for (let i = 1; i < v.length; i++) mx = mx.max(v[i]!);
  let s = v[0]!.sub(mx).exp();
  for (let i = 1; i < v.length; i++) s = s.add(v[i]!.sub(mx).exp());
  return s.log().add(mx);
}

/** The GMM objective of the parameters `ps` (Vars of one tape), the data as constants: the
 *  Var form the bench records, and bench/codegen-cliffs.ts compiles. */
export function gmmObjectiveVar(g: GmmData, ps: Var[]): Var {
  const { d, k, n, X, mu0, q0, l0, lsz, m, gamma } = g;
  const { CONSTANT, C } = gmmConstants(g);
  const tape = ps[0]!.tape;
  const xs: Var[] = new Array<Var>(n * d);
  for (let i = 0; i < n * d; i++) xs[i] = tape.constant(X[i]!);
  const Qd: Var[] = new Array<Var>(d * k), sumQ: Var[] = new Array<Var>(k);
  for (let i = 0; i < d * k; i++) Qd[i] = ps[q0 + i]!.exp();
  for (let c = 0; c < k; c++) {
    let s = ps[q0 + c * d]!;
    for (let j = 1; j < d; j++) s = s.add(ps[q0 + c * d + j]!);
    sumQ[c] = s;
  }
  const xc: Var[] = new Array<Var>(d), Qxc: Var[] = new Array<Var>(d), main: Var[] = new Array<Var>(k);
  let slse: Var | null = null;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      for (let j = 0; j < d; j++) xc[j] = xs[i * d + j]!.sub(ps[mu0 + c * d + j]!);
      for (let j = 0; j < d; j++) Qxc[j] = Qd[c * d + j]!.mul(xc[j]!);
      let li = l0 + c * lsz;
      for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) Qxc[b] = Qxc[b]!.add(ps[li++]!.mul(xc[a]!));
      let sq = Qxc[0]!.square();
      for (let j = 1; j < d; j++) sq = sq.add(Qxc[j]!.square());
      main[c] = ps[c]!.add(sumQ[c]!).sub(sq.mul(0.5));
    }
    const l = logsumexpVar(main);
    slse = slse ? slse.add(l) : l;
  }
  const lseAlpha = logsumexpVar(ps.slice(0, k));
  let out: Var | null = null;
  for (let c = 0; c < k; c++) {
    let frob = Qd[c * d]!.square();
    for (let j = 1; j < d; j++) frob = frob.add(Qd[c * d + j]!.square());
    let ls = ps[l0 + c * lsz]!.square();
    for (let j = 1; j < lsz; j++) ls = ls.add(ps[l0 + c * lsz + j]!.square());
    const term = frob.add(ls).mul(0.5 * gamma * gamma).sub(sumQ[c]!.mul(m));
    out = out ? out.add(term) : term;
  }
  return slse!.add(CONSTANT).sub(lseAlpha.mul(n)).add(out!.neg().add(k * C));
}

function gmmVar(tape: Tape, p: Float64Array, g: GmmData, grad: Float64Array, phase?: Phase): number {
  tape.reset();
  const ps = tape.variables(p);
  const f = gmmObjectiveVar(g, ps);
  if (phase) phase.recordEnd = now();
  const value = f.value;
  if (phase) phase.forwardEnd = now();
  grad.set(tape.gradient(f, ps));
  return value;
}

function logsumexpHandle(h: Tape['handles'], v: Int32Array): number {
  let mx = v[0]!;
  for (let i = 1; i < v.length; i++) mx = h.max(mx, v[i]!);
  let s = h.exp(h.sub(v[0]!, mx));
  for (let i = 1; i < v.length; i++) s = h.add(s, h.exp(h.sub(v[i]!, mx)));
  return h.add(h.log(s), mx);
}

function gmmHandle(tape: Tape, p: Float64Array, g: GmmData, grad: Float64Array, phase?: Phase): number {
  const { d, k, n, X, mu0, q0, l0, lsz, m, gamma } = g;
  const { CONSTANT, C } = gmmConstants(g);
  tape.reset();
  const h = tape.handles;
  const np_ = p.length;
  const ps = h.variables(p);
  const xs = new Int32Array(n * d);
  for (let i = 0; i < n * d; i++) xs[i] = h.constant(X[i]!);
  const half = h.constant(0.5);
  const Qd = new Int32Array(d * k), sumQ = new Int32Array(k);
  for (let i = 0; i < d * k; i++) Qd[i] = h.exp(ps[q0 + i]!);
  for (let c = 0; c < k; c++) {
    let s = ps[q0 + c * d]!;
    for (let j = 1; j < d; j++) s = h.add(s, ps[q0 + c * d + j]!);
    sumQ[c] = s;
  }
  const xc = new Int32Array(d), Qxc = new Int32Array(d), main = new Int32Array(k);
  let slse = -1;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      for (let j = 0; j < d; j++) xc[j] = h.sub(xs[i * d + j]!, ps[mu0 + c * d + j]!);
      for (let j = 0; j < d; j++) Qxc[j] = h.mul(Qd[c * d + j]!, xc[j]!);
      let li = l0 + c * lsz;
      for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) Qxc[b] = h.add(Qxc[b]!, h.mul(ps[li++]!, xc[a]!));
      let sq = h.square(Qxc[0]!);
      for (let j = 1; j < d; j++) sq = h.add(sq, h.square(Qxc[j]!));
      main[c] = h.sub(h.add(ps[c]!, sumQ[c]!), h.mul(half, sq));
    }
    const l = logsumexpHandle(h, main);
    slse = slse < 0 ? l : h.add(slse, l);
  }
  const lseAlpha = logsumexpHandle(h, ps.subarray(0, k));
  const wishartScale = h.constant(0.5 * gamma * gamma), mC = h.constant(m);
  let out = -1;
  for (let c = 0; c < k; c++) {
    let frob = h.square(Qd[c * d]!);
    for (let j = 1; j < d; j++) frob = h.add(frob, h.square(Qd[c * d + j]!));
    let ls = h.square(ps[l0 + c * lsz]!);
    for (let j = 1; j < lsz; j++) ls = h.add(ls, h.square(ps[l0 + c * lsz + j]!));
    const term = h.sub(h.mul(wishartScale, h.add(frob, ls)), h.mul(mC, sumQ[c]!));
    out = out < 0 ? term : h.add(out, term);
  }
  const likelihood = h.sub(h.add(h.constant(CONSTANT), slse), h.mul(h.constant(n), lseAlpha));
  const f = h.add(likelihood, h.add(h.neg(out), h.constant(k * C)));
  if (phase) phase.recordEnd = now();
  const value = h.value(f);
  if (phase) phase.forwardEnd = now();
  h.gradient(f, ps, 1, grad);
  return value;
}

// Vector form, over points × components with the fewest nodes the Vec API allows (about 50 vector
// nodes, independent of n; the halving tree over K adds a few as K grows: 38 at K = 5, 46 at 25). With Q_k = diag(exp q_k) + L_k,
//   Q_k (x_i − μ_k) = Q_k x_i − Q_k μ_k,
// so all n·K of them are one matmul X [n, d] · Qall [d, K d] (column block k = Q_kᵀ) minus c
// [K d] (c_k = Q_k μ_k, broadcast over the rows). Qall is one gather from concat(exp q, l, 0); c
// is the diagonal blocks of μ [K, d] · Qall, one more gather. Row sums of squares per block are a
// matvec with ones. The logsumexp over components per point needs a row-wise max, which the API
// has not (max() reduces everything, logSumExp too): the [n, K] matrix is transposed, and the max
// over its K rows of n is a halving tree of elementwise max (slices of whole rows), recorded and
// differentiated through, as GradBench's C++ does; then exp(β − m) summed over rows by a vecmat
// with ones. The other formulation, a loop over the n points with slice(...).logSumExp() each,
// records ~4n nodes.

/** Index tables for the vector form (data, built once). */
function gmmVecTables(g: GmmData): { qall: Float64Array; diag: Float64Array; onesD: Float64Array; onesK: Float64Array } {
  const { d, k, lsz } = g;
  // Position of l_k's entry for Q[b][a] (b > a), in the order Qtimesx reads l: a outer, b inner.
  const lpos = new Int32Array(d * d).fill(-1);
  let idx = 0;
  for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) lpos[b * d + a] = idx++;
  // Source vector: [exp q (K d) | l (K lsz) | 0]; Qall[j, k d + r] = Q_k[r, j].
  const zero = k * d + k * lsz;
  const qall = new Float64Array(d * k * d);
  for (let j = 0; j < d; j++) {
    for (let c = 0; c < k; c++) {
      for (let r = 0; r < d; r++) {
        qall[j * k * d + c * d + r] = r === j ? c * d + r : r > j ? k * d + c * lsz + lpos[r * d + j]! : zero;
      }
    }
  }
  // Diagonal blocks of μ Qall [K, K d]: c[k d + r] = (μ Qall)[k, k d + r].
  const diag = new Float64Array(k * d);
  for (let c = 0; c < k; c++) for (let r = 0; r < d; r++) diag[c * d + r] = c * k * d + c * d + r;
  return { qall, diag, onesD: new Float64Array(d).fill(1), onesK: new Float64Array(k).fill(1) };
}

/** Elementwise max over the `rows` rows of a [rows, n] matrix given flat: a halving tree. */
function rowsMax(v: Vec, rows: number, n: number): Vec {
  while (rows > 1) {
    const h = rows >> 1;
    let next = v.slice(0, h * n).max(v.slice(h * n, 2 * h * n));
    if (rows & 1) next = next.reshape([h, n]).max(v.slice(2 * h * n, rows * n)).reshape([h * n]);
    v = next;
    rows = h;
  }
  return v;
}

function gmmVecForm(g: GmmData): VecForm {
  const { d, k, n, X, mu0, q0, l0, m, gamma } = g;
  const { CONSTANT, C } = gmmConstants(g);
  const tb = gmmVecTables(g);
  return {
    how: 'Qall = concat([q.exp(), l, 0]).gather(idx) [d, K d]; c = gather(mu.matmul(Qall)) [K d]; ' +
      'Y = constantVector(X, [n, d]).matmul(Qall).sub(c); beta = alpha.add(S).sub(Y.square() row-block sums .mul(0.5)) [n, K]; ' +
      'per-point logsumexp over K: transpose, halving tree of elementwise max over rows, exp(beta - m), vecmat(ones); alpha.logSumExp()',
    fn(p) {
      const t = p.tape;
      const alpha = p.slice(0, k), mu = p.slice(mu0, q0).reshape([k, d]), q = p.slice(q0, l0), l = p.slice(l0);
      const Qd = q.exp();
      const S = q.reshape([k, d]).matvec(tb.onesD);
      const Qall = t.concat([Qd, l, 0]).gather(tb.qall).reshape([d, k * d]);
      const c = mu.matmul(Qall).reshape([k * k * d]).gather(tb.diag);
      const Y = t.constantVector(X, [n, d]).matmul(Qall).sub(c);
      const sq = Y.square().reshape([n * k, d]).matvec(tb.onesD).reshape([n, k]);
      const beta = alpha.add(S).sub(sq.mul(0.5));
      const B = beta.transpose().reshape([k * n]);
      const mx = rowsMax(B, k, n);
      const E = B.reshape([k, n]).sub(mx).exp();
      const slse = t.constantVector(tb.onesK).vecmat(E).log().add(mx).sum();
      const out = Qd.sumSquares().add(l.sumSquares()).mul(0.5 * gamma * gamma).sub(S.sum().mul(m));
      return slse.add(CONSTANT).sub(alpha.logSumExp().mul(n)).add(out.neg().add(k * C));
    },
  };
}

export const gmm: Workload = {
  id: 'gmm',
  kind: 'gmm',
  title: `GMM (d=${GMM_D}, K=${GMM_K})`,
  description:
    `GradBench gmm objective (cpp/gradbench/evals/gmm.hpp): log posterior of a ${GMM_K}-component Gaussian mixture in d = ${GMM_D} ` +
    `with a Wishart prior (m = ${GMM_M}, gamma = ${GMM_GAMMA}), logsumexp over components, Q = exp(q) diagonal + l strictly lower; ` +
    'n points; gradient w.r.t. alpha, mu, q, l (1650 parameters); GradBench\'s own data (its generate, default_rng(31337)), the first n points',
  size: { full: 1000, quick: 200 },
  sizeUnit: 'points',
  tolerance: 1e-10,
  // Linear in n apart from the K-sized prior and logsumexp(alpha): close enough for scaling.
  linearInN: true,
  make(n) {
    const data = gmmData(n);
    const x = data.p;
    return {
      kind: 'gmm',
      n,
      x,
      runLabel: '1 gradient',
      evalsPerRun: 1,
      plain: () => gmmPlain(x, data),
      hand: (g) => gmmHand(x, data, g),
      tapeVar: (tape, g, phase) => gmmVar(tape, x, data, g, phase),
      tapeHandle: (tape, g, phase) => gmmHandle(tape, x, data, g, phase),
      ...vecFields(x, gmmVecForm(data)),
      reference() {
        const grad = new Float64Array(x.length);
        const value = gmmHand(x, data, grad);
        const valueDirect = gmmPlain(x, data);
        if (!(Math.abs(value - valueDirect) <= 1e-12 * Math.max(1, Math.abs(value)))) {
          throw new Error(`gmm: the hand-written value ${value} differs from the objective ${valueDirect}`);
        }
        const { mu0, q0, l0 } = data;
        const idx = [0, 7, GMM_K - 1, mu0, mu0 + 13, q0 - 1, q0, q0 + 57, l0 - 1, l0, l0 + 44, l0 + 500, x.length - 1];
        const fd = centralDifferences((q) => gmmPlain(q, data), x, idx, 1e-6);
        checkedAgainstFd('gmm', grad, fd, idx, 1e-6);
        return { value, grad, source: 'hand-written gradient, itself checked against central differences on 13 parameters (alpha, mu, q, l)' };
      },
    };
  },
};

// ───────────────────────────── tiny-function throughput ─────────────────────────────
// f(x, y, z) = sin(xy) + tanh(yz) exp(−x²) + log1p(z²)/(1 + y²) − cos(x + y + z): 20 op nodes
// on 3 inputs. A run takes the gradient at n points (cycling through 64 fixed ones), each on a
// fresh recording: what matters here is the fixed cost per gradient, not the per-node cost.
// The gradient checked is the sum over the n points.

export const TINY_POINTS = 64;

export function tinyPoints(): Float64Array {
  const rand = mulberry32(5);
  const p = new Float64Array(3 * TINY_POINTS);
  for (let i = 0; i < p.length; i++) p[i] = 2 * rand() - 1;
  return p;
}

export function tinyF(x: number, y: number, z: number): number {
  return Math.sin(x * y) + Math.tanh(y * z) * Math.exp(-(x * x)) + Math.log1p(z * z) / (1 + y * y) - Math.cos(x + y + z);
}

function tinyPlain(pts: Float64Array, n: number): number {
  let s = 0;
  for (let k = 0; k < n; k++) {
    const o = 3 * (k % TINY_POINTS);
    s += tinyF(pts[o]!, pts[o + 1]!, pts[o + 2]!);
  }
  return s;
}

function tinyHand(pts: Float64Array, n: number, g: Float64Array): number {
  let s = 0, gx = 0, gy = 0, gz = 0;
  for (let k = 0; k < n; k++) {
    const o = 3 * (k % TINY_POINTS);
    const x = pts[o]!, y = pts[o + 1]!, z = pts[o + 2]!;
    const cxy = Math.cos(x * y), th = Math.tanh(y * z), ex = Math.exp(-(x * x));
    const l = Math.log1p(z * z), d = 1 + y * y, sw = Math.sin(x + y + z);
    s += Math.sin(x * y) + th * ex + l / d - Math.cos(x + y + z);
    gx += y * cxy - 2 * x * th * ex + sw;
    gy += x * cxy + z * (1 - th * th) * ex - (l * 2 * y) / (d * d) + sw;
    gz += y * (1 - th * th) * ex + (2 * z) / (1 + z * z) / d + sw;
  }
  g[0] = gx;
  g[1] = gy;
  g[2] = gz;
  return s;
}

function tinyVar(tape: Tape, pts: Float64Array, n: number, g: Float64Array): number {
  let s = 0, gx = 0, gy = 0, gz = 0;
  for (let k = 0; k < n; k++) {
    const o = 3 * (k % TINY_POINTS);
    tape.reset();
    const x = tape.variable(pts[o]!), y = tape.variable(pts[o + 1]!), z = tape.variable(pts[o + 2]!);
    const f = x
      .mul(y).sin()
      .add(y.mul(z).tanh().mul(x.square().neg().exp()))
      .add(z.square().log1p().div(y.square().add(1)))
      .sub(x.add(y).add(z).cos());
    tape.backward(f);
    s += f.value;
    gx += x.grad;
    gy += y.grad;
    gz += z.grad;
  }
  g[0] = gx;
  g[1] = gy;
  g[2] = gz;
  return s;
}

function tinyHandle(tape: Tape, pts: Float64Array, n: number, g: Float64Array): number {
  const h = tape.handles;
  let s = 0, gx = 0, gy = 0, gz = 0;
  for (let k = 0; k < n; k++) {
    const o = 3 * (k % TINY_POINTS);
    tape.reset();
    const x = h.variable(pts[o]!), y = h.variable(pts[o + 1]!), z = h.variable(pts[o + 2]!);
    const a = h.sin(h.mul(x, y));
    const b = h.mul(h.tanh(h.mul(y, z)), h.exp(h.neg(h.square(x))));
    const c = h.div(h.log1p(h.square(z)), h.add(h.square(y), h.constant(1)));
    const f = h.sub(h.add(h.add(a, b), c), h.cos(h.add(h.add(x, y), z)));
    h.backward(f);
    s += h.value(f);
    gx += h.grad(x);
    gy += h.grad(y);
    gz += h.grad(z);
  }
  g[0] = gx;
  g[1] = gy;
  g[2] = gz;
  return s;
}

export const tiny: Workload = {
  id: 'tiny',
  kind: 'tiny',
  title: 'tiny function throughput',
  description: 'f(x,y,z) = sin(xy) + tanh(yz) exp(-x^2) + log1p(z^2)/(1+y^2) - cos(x+y+z) (20 op nodes); a run = n gradients, each on a fresh recording',
  size: { full: 20_000, quick: 5_000 },
  sizeUnit: 'gradients per run',
  tolerance: 1e-11,
  linearInN: true,
  make(n) {
    const pts = tinyPoints();
    return {
      kind: 'tiny',
      n,
      x: new Float64Array(3),
      runLabel: `${n} gradients`,
      evalsPerRun: n,
      plain: () => tinyPlain(pts, n),
      hand: (g) => tinyHand(pts, n, g),
      tapeVar: (tape, g) => tinyVar(tape, pts, n, g),
      tapeHandle: (tape, g) => tinyHandle(tape, pts, n, g),
      compiled: {
        fn: ([x, y, z]) => x!.mul(y!).sin()
          .add(y!.mul(z!).tanh().mul(x!.square().neg().exp()))
          .add(z!.square().log1p().div(y!.square().add(1)))
          .sub(x!.add(y!).add(z!).cos()),
        inputs: 3,
        rows: Float64Array.from({ length: 3 * n }, (_, i) => pts[i % (3 * TINY_POINTS)]!),
      },
      reference() {
        const grad = new Float64Array(3);
        const value = tinyHand(pts, n, grad);
        // The summed hand gradient is as good as the per-point one: check that at a few points.
        for (let k = 0; k < 4; k++) {
          const one = new Float64Array(3);
          tinyHand(pts.subarray(3 * k), 1, one);
          const at = pts.slice(3 * k, 3 * k + 3);
          const fd = centralDifferences((q) => tinyF(q[0]!, q[1]!, q[2]!), at, [0, 1, 2], 1e-6);
          checkedAgainstFd(`tiny (point ${k})`, one, fd, [0, 1, 2], 1e-8);
        }
        return { value, grad, source: 'hand-written gradient summed over the n points, checked against central differences at 4 points' };
      },
    };
  },
};

/** Every workload, in table order. */
export const WORKLOADS: readonly Workload[] = [
  chain, rosenbrock, rosenbrock1e4, advectionLW, advectionToon, mlp, lse, lse1e4, lse128e4, llsq, llsq16392, logreg, gmm, ode, tiny,
];

export function workloadById(id: string): Workload {
  const w = WORKLOADS.find((w) => w.id === id);
  if (!w) throw new Error(`unknown workload '${id}' (have: ${WORKLOADS.map((w) => w.id).join(', ')})`);
  return w;
}

// Rosenbrock with scalar ops, eight per term: sub, square, sub, square, square, mul, add, add
// (bench/per-node.ts, bench/record-floor.ts, bench/record-inlining.ts).
/** Records `x` and the terms on `tape` through the Var API, its numbers passed as operands, as
 *  users write it; returns the inputs and the output. */
export function rosenbrockMixedVars(tape: Tape, x: Float64Array, reuse?: Var[]): { xs: Var[]; s: Var } {
  const xs = tape.variables(x, reuse);
  return { xs, s: rosenbrockMixedTerms(tape, xs) };
}

// The terms' loop in a function of its own that returns the output: with the object above built
// after the loop, V8 (Node 20) optimised the function on-stack in the loop, without feedback for
// what follows it, and then failed there on every later call in about one process of three
// (1,400-1,500 deoptimisations a process, each 0.2-0.4 ms): that measured V8, not the tape. A
// program of that shape pays the same (README, "Cost per node of a fresh recording").
function rosenbrockMixedTerms(tape: Tape, xs: Var[]): Var {
  let s = tape.constant(0);
  for (let i = 0; i + 1 < xs.length; i++) {
    const xi = xs[i]!;
    const t = xs[i + 1]!.sub(xi.square());
    s = s.add(t.square().mul(100)).add(xi.sub(1).square());
  }
  return s;
}

// Handles take handles only, so its numbers are constants recorded once.
/** Records `x` and the terms on `tape` through its handles; returns the output's handle. */
export function rosenbrockMixedHandles(tape: Tape, x: Float64Array, xs: Int32Array): number {
  const h = tape.handles;
  h.variables(x, xs);
  const c100 = h.constant(100), one = h.constant(1);
  let s = h.constant(0);
  for (let i = 0; i + 1 < x.length; i++) {
    const xi = xs[i]!;
    const t = h.sub(xs[i + 1]!, h.square(xi));
    s = h.add(h.add(s, h.mul(c100, h.square(t))), h.square(h.sub(one, xi)));
  }
  return s;
}

// `ops` random ops on random recent nodes or inputs (seeded): no period anywhere. The ops keep
// every value finite and most of them near 1 (sums are halved, the inputs mixed back in): an
// earlier form of this tape overflowed, and nearly all its nodes computed NaN. Its output, the
// sum of the last 19 nodes, depends on 43% of the computed nodes (a node no later one reads
// leads nowhere); with `live` the output also adds up every node no later node read, so that
// every node reaches it (the same ops otherwise, one add per such node more).
export const STRAIGHT_INPUTS = 32;

export function straightTape(ops = 100_000, live = false): (x: Var[]) => Var {
  const inputs = STRAIGHT_INPUTS;
  return (x: Var[]): Var => {
    const rand = mulberry32(12);
    const nodes: Var[] = x.slice();
    // Which nodes a later op read (`picked`: the last pick's node, -1 for an input).
    const read = new Uint8Array(ops);
    let picked = -1;
    const pick = (): Var => {
      if (rand() < 0.25) {
        picked = -1;
        return x[Math.floor(rand() * inputs)]!;
      }
      picked = nodes.length - 1 - Math.floor(rand() * Math.min(nodes.length, 40));
      return nodes[picked]!;
    };
    while (nodes.length < ops) {
      const r = rand();
      const a = pick(), pickedA = picked, b = pick(), pickedB = picked;
      const v = r < 0.3 ? a.add(b).mul(0.5) : r < 0.5 ? a.mul(b) : r < 0.65 ? a.sub(b) : r < 0.8 ? a.mul(rand() - 0.5)
        : r < 0.9 ? a.square().sub(b) : r < 0.95 ? a.tanh() : a.abs().add(1).sqrt().sub(1);
      if (pickedA >= 0) read[pickedA] = 1;
      if (pickedB >= 0 && (r < 0.65 || (r >= 0.8 && r < 0.9))) read[pickedB] = 1;
      nodes.push(v);
    }
    let s = nodes[nodes.length - 1]!;
    for (let k = 2; k < 20; k++) s = s.add(nodes[nodes.length - k]!);
    if (live) for (let k = inputs; k < nodes.length - 19; k++) if (!read[k]) s = s.add(nodes[k]!);
    return s;
  };
}
