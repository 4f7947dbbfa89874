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
  /** Record on `tape` with the Var API, reverse sweep, gradient into g; returns the value.
   *  `phase` (if given) gets the split point between recording and the sweeps. */
  tapeVar(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The same through `tape.handles`. */
  tapeHandle(tape: Tape, g: Float64Array, phase?: Phase): number;
  /** The function of Vars, for record-once/replay-many (compile): where it has a fixed structure.
   *  For throughput workloads, `rows` are the input points of one run (row-major). */
  compiled?: { fn: (x: Var[]) => Var; inputs: number; rows?: Float64Array };
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

export type WorkloadKind = 'chain' | 'rosenbrock' | 'advection-lw' | 'advection-toon' | 'mlp' | 'lse' | 'llsq' | 'tiny';

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
// gradient w.r.t. q_init. The same loops as Adept's benchmark, including its boundary copies.

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
  g.set(tape.gradient(s, q0));
  return s.value;
}

function advectionHandle(tape: Tape, qInit: Float64Array, nt: number, c: number, toon: boolean, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const q0 = new Int32Array(NX);
  for (let i = 0; i < NX; i++) q0[i] = h.variable(qInit[i]!);
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
  h.backward(s);
  for (let i = 0; i < NX; i++) g[i] = h.grad(q0[i]!);
  return h.value(s);
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
// A 2-16-16-1 MLP (tanh hidden layers, linear output) on a two-moons set; micrograd's loss: mean
// hinge relu(1 - y score) + 1e-4 Σ p², then one SGD step p -= 0.05 g. A timed run is one step.

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

/** Uniform(-1, 1) weights and biases, as micrograd's Neuron. */
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
  g.set(tape.gradient(total, ps));
  sgdStep(p, g);
  return total.value;
}

function mlpHandle(tape: Tape, p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const ps = new Int32Array(MLP_PARAMS);
  for (let i = 0; i < MLP_PARAMS; i++) ps[i] = h.variable(p[i]!);
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
  h.backward(total);
  for (let i = 0; i < MLP_PARAMS; i++) g[i] = h.grad(ps[i]!);
  sgdStep(p, g);
  return h.value(total);
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

// ───────────────────────────── log-sum-exp (GradBench lse) ─────────────────────────────
// f(x) = log Σ exp(x_i), computed with the max shift; the gradient is softmax(x). The shift is a
// plain number (a constant on the tape): its derivative cancels exactly.

export function lsePoint(n: number): Float64Array {
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) x[i] = 5 * Math.sin(0.7 * i + 0.3) * Math.cos(0.013 * i);
  return x;
}

function maxOf(x: Float64Array): number {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) if (x[i]! > m) m = x[i]!;
  return m;
}

function lsePlain(x: Float64Array): number {
  const m = maxOf(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) s += Math.exp(x[i]! - m);
  return Math.log(s) + m;
}

function lseHand(x: Float64Array, g: Float64Array): number {
  const m = maxOf(x);
  let s = 0;
  for (let i = 0; i < x.length; i++) {
    const e = Math.exp(x[i]! - m);
    g[i] = e;
    s += e;
  }
  for (let i = 0; i < x.length; i++) g[i]! /= s;
  return Math.log(s) + m;
}

function lseVar(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const xs = tape.variables(x);
  const m = maxOf(x);
  let s = xs[0]!.sub(m).exp();
  for (let i = 1; i < xs.length; i++) s = s.add(xs[i]!.sub(m).exp());
  const f = s.log().add(m);
  if (phase) phase.recordEnd = now();
  g.set(tape.gradient(f, xs));
  return f.value;
}

function lseHandle(tape: Tape, x: Float64Array, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const n = x.length;
  const xs = new Int32Array(n);
  for (let i = 0; i < n; i++) xs[i] = h.variable(x[i]!);
  const m = h.constant(maxOf(x));
  let s = h.exp(h.sub(xs[0]!, m));
  for (let i = 1; i < n; i++) s = h.add(s, h.exp(h.sub(xs[i]!, m)));
  const f = h.add(h.log(s), m);
  if (phase) phase.recordEnd = now();
  h.backward(f);
  for (let i = 0; i < n; i++) g[i] = h.grad(xs[i]!);
  return h.value(f);
}

export const lse: Workload = {
  id: 'lse',
  kind: 'lse',
  title: 'log-sum-exp',
  description: 'GradBench lse: log sum exp(x_i) with the max shift, x_i = 5 sin(0.7 i + 0.3) cos(0.013 i); gradient = softmax',
  size: { full: 100_000, quick: 20_000 },
  sizeUnit: 'values',
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
      reference() {
        const grad = new Float64Array(n);
        return { value: lseHand(x, grad), grad, source: 'hand-written gradient (softmax)' };
      },
    };
  },
};

// ───────────────────────────── linear least squares (GradBench llsq) ─────────────────────────────
// f(x) = ½ Σ_i (sign(t_i) − Σ_j x_j t_i^j)², t_i = −1 + 2i/(n−1), m = 32 coefficients, n points.
// The powers t_i^j are data (built by repeated multiplication, as GradBench's reference does).

export const LLSQ_M = 32;

export function llsqT(i: number, n: number): number {
  return -1 + (i * 2) / (n - 1);
}

export function llsqPoint(m: number): Float64Array {
  const rand = mulberry32(11);
  const x = new Float64Array(m);
  for (let j = 0; j < m; j++) x[j] = rand() - 0.5;
  return x;
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
  return 0.5 * s;
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
  return 0.5 * s;
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
  const f = s!.mul(0.5);
  if (phase) phase.recordEnd = now();
  g.set(tape.gradient(f, xs));
  return f.value;
}

function llsqHandle(tape: Tape, x: Float64Array, n: number, g: Float64Array, phase?: Phase): number {
  tape.reset();
  const h = tape.handles;
  const m = x.length;
  const xs = new Int32Array(m);
  for (let j = 0; j < m; j++) xs[j] = h.variable(x[j]!);
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
  const f = h.mul(s, h.constant(0.5));
  if (phase) phase.recordEnd = now();
  h.backward(f);
  for (let j = 0; j < m; j++) g[j] = h.grad(xs[j]!);
  return h.value(f);
}

export const llsq: Workload = {
  id: 'llsq',
  kind: 'llsq',
  title: 'least squares (m=32)',
  description: 'GradBench llsq: 1/2 sum_i (sign(t_i) - sum_j x_j t_i^j)^2, t_i = -1 + 2i/(n-1), m = 32 coefficients, n points; gradient w.r.t. x',
  size: { full: 10_000, quick: 2_000 },
  sizeUnit: 'points',
  tolerance: 1e-10,
  linearInN: true,
  make(n) {
    const x = llsqPoint(LLSQ_M);
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
      reference() {
        const grad = new Float64Array(LLSQ_M);
        return { value: llsqHand(x, n, grad), grad, source: 'hand-written gradient (GradBench manual form)' };
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
export const WORKLOADS: readonly Workload[] = [chain, rosenbrock, rosenbrock1e4, advectionLW, advectionToon, mlp, lse, llsq, tiny];

export function workloadById(id: string): Workload {
  const w = WORKLOADS.find((w) => w.id === id);
  if (!w) throw new Error(`unknown workload '${id}' (have: ${WORKLOADS.map((w) => w.id).join(', ')})`);
  return w;
}
