// The grid of points and the per-op data the op tests share: where each op is smooth (for the
// finite-difference checks), which ops must agree bit for bit across backends, and one way to
// record any op of the table on a tape.
import { SCALAR_OP_TABLE, type OpName, type Tape, type UnaryOpName, type Var } from '../src/index.ts';
import { ZERO_GRADIENT_OPS } from '../src/ops.ts';

export { ZERO_GRADIENT_OPS };

/** Finite points for the finite-difference checks: 0, -0, ±1, tiny, huge, and a few interior
 *  points so every op has some points inside its domain. */
export const GRID: readonly number[] = [
  0, -0, 1, -1, 0.5, -0.5, 0.9, -0.9, 1.5, 2, -2, 3.7, -3.7, 10, -10,
  1e-300, -1e-300, 5e-324, -5e-324, 1e300, -1e300,
];

/** Where sin, cos and tan switch argument reduction (Cody-Waite below 2^20·π/2, a table of 2/π
 *  bits above), with odd significands: AssemblyScript 0.28 reads one word before that table for
 *  2^20·π/2 <= |x| < 2^22, and the stray bits only matter where they meet low significand bits. */
export const REDUCTION_EDGES: readonly number[] = [
  2 ** 20 * 1.5, 2 ** 20 * 1.75 + 2 ** -32, -(2 ** 21 - 2 ** -32), 2 ** 22 - 2 ** -31, 1e22, 2 ** 1023,
];

/** The grid plus NaN, ±Infinity and the points where ops overflow or leave their domain. */
export const EDGE_GRID: readonly number[] = [
  ...GRID, NaN, Infinity, -Infinity, 709.78, 709.79, -745.2, 30, -30,
  1 - 2 ** -53, 1 + 2 ** -52, -1 - 2 ** -52, Math.PI / 2, 2.5, -2.5, ...REDUCTION_EDGES,
];

/** Constant exponents for powConst: integers (where negative bases are fine), fractions, 0, 1. */
export const POW_CONST_EXPONENTS: readonly number[] = [0, 1, 2, 3, -1, -2, 0.5, 2.5, -1.5];

/** The step finiteDifferenceGradient takes by default; its stencil reaches 3 steps either side. */
export const step = (x: number): number => Math.cbrt(Number.EPSILON) * Math.max(1, Math.abs(x));
const STENCIL_OFFSETS = [-3, -2, -1, 1, 2, 3];

/** An open region where an op is smooth; a point is checked only if its whole stencil lies in
 *  one region (so the stencil never straddles a kink, a cut or a domain edge). */
export type Region = (...xs: number[]) => boolean;

const everywhere: Region = () => true;
const positive: Region = (x) => x! > 0;
const negative: Region = (x) => x! < 0;
const inside = (lo: number, hi: number): Region => (x) => x! > lo && x! < hi;
// Trigonometric ops: the stencil must resolve the period.
const moderate = (x: number): boolean => Math.abs(x) < 1e3;
const noOverflow = (f: (...xs: number[]) => number): Region => (...xs) => Math.abs(f(...xs)) < 1e300;

// lgamma and digamma: smooth between consecutive non-positive integers (their poles).
const BETWEEN_POLES: Region[] = Array.from({ length: 20 }, (_, k) => inside(-k - 1, -k));

// The test of the tables checks at run time that these and ZERO_GRADIENT_OPS cover every op.
type SmoothUnary = Exclude<UnaryOpName, 'floor' | 'ceil' | 'round' | 'sign' | 'stopGradient'>;
type SmoothBinary = 'add' | 'sub' | 'mul' | 'div' | 'pow' | 'atan2' | 'min' | 'max' | 'hypot';

/** Where each differentiable unary op is smooth. */
export const UNARY_REGIONS: Record<SmoothUnary, Region[]> = {
  neg: [everywhere],
  recip: [positive, negative],
  square: [noOverflow((x) => x * x)],
  sqrt: [positive],
  cbrt: [positive, negative],
  exp: [(x) => x < 700],
  expm1: [(x) => x < 700],
  log: [positive],
  log1p: [(x) => x > -1],
  log2: [positive],
  log10: [positive],
  sin: [moderate],
  cos: [moderate],
  tan: [(x) => moderate(x) && Math.cos(x) > 0.05, (x) => moderate(x) && Math.cos(x) < -0.05],
  asin: [inside(-1, 1)],
  acos: [inside(-1, 1)],
  atan: [everywhere],
  sinh: [inside(-700, 700)],
  cosh: [inside(-700, 700)],
  tanh: [everywhere],
  asinh: [everywhere],
  acosh: [(x) => x > 1],
  atanh: [inside(-1, 1)],
  abs: [positive, negative],
  sigmoid: [everywhere],
  softplus: [everywhere],
  relu: [positive, negative],
  erf: [everywhere],
  erfc: [everywhere],
  normCdf: [everywhere],
  normLogCdf: [(x) => Math.abs(x) < 1e150],
  ndtri: [inside(0, 1)],
  lgamma: [positive, ...BETWEEN_POLES],
  digamma: [positive, ...BETWEEN_POLES],
};

/** Where each differentiable binary op is smooth, over (x, z). */
export const BINARY_REGIONS: Record<SmoothBinary, Region[]> = {
  add: [everywhere],
  sub: [everywhere],
  mul: [noOverflow((x, z) => x * z)],
  div: [(x, z) => z > 0 && Math.abs(x / z) < 1e300, (x, z) => z < 0 && Math.abs(x / z) < 1e300],
  pow: [(x, z) => x > 0 && Math.abs(z * Math.log(x)) < 700],
  // atan2(x, z) jumps across the ray x = 0, z < 0 and is singular at the origin.
  atan2: [(x) => x > 0, (x) => x < 0, (_x, z) => z > 0],
  min: [(x, z) => x < z, (x, z) => x > z],
  max: [(x, z) => x < z, (x, z) => x > z],
  // Smooth except at the origin; near it, with the other operand tiny, it behaves like |x|.
  hypot: [(x) => x > 0, (x) => x < 0, (_x, z) => z > 0, (_x, z) => z < 0],
};

/** Points some unary ops need besides GRID: ndtri's domain is [0, 1], and the special functions'
 *  tails and negative axes are where their approximations change. */
export const UNARY_EXTRA_POINTS: Partial<Record<SmoothUnary, readonly number[]>> = {
  ndtri: [0.1, 0.025, 1e-10, 1e-300, 0.999, 0.3, 0.075, 0.925],
  normLogCdf: [-20, -38, -100, -1e4, 8, 30],
  normCdf: [-20, -37, 8],
  erfc: [5, 20, -5],
  lgamma: [-2.5, -7.3, 1e-8, 50, 1e10],
  digamma: [-2.5, -7.3, 1e-8, 50, 1e10],
};

/** Where x^c, c a constant, is smooth in x. */
export function powConstRegions(c: number): Region[] {
  const bounded: Region = (x) => x === 0 || Math.abs(c * Math.log(Math.abs(x))) < 700;
  if (!Number.isInteger(c)) return [(x) => x > 0 && bounded(x)];
  if (c >= 0) return [bounded];
  return [(x) => x > 0 && bounded(x), (x) => x < 0 && bounded(x)];
}

/** select(c, a, b) jumps where c crosses 0. */
export const SELECT_REGIONS: Region[] = [positive, negative];

/** True where every point of the finite-difference stencil around `point` lies in one region. */
export function smoothAt(regions: readonly Region[], point: readonly number[]): boolean {
  return regions.some((inRegion) => stencil(point).every((p) => inRegion(...p)));
}

function stencil(point: readonly number[]): number[][] {
  const out = [point.slice()];
  point.forEach((x, k) => {
    for (const j of STENCIL_OFFSETS) {
      const p = point.slice();
      p[k] = x + j * step(x);
      out.push(p);
    }
  });
  return out;
}

/** Ops whose value and gradient are IEEE-exact in both engines (no libm call): the backends
 *  must agree bit for bit. Everything else calls a transcendental (musl in wasm, V8's own in
 *  JS) and may differ in the last bits. */
export const EXACT_OPS: ReadonlySet<OpName> = new Set<OpName>([
  'add', 'sub', 'mul', 'div', 'neg', 'recip', 'square', 'sqrt', 'abs', 'min', 'max', 'relu',
  ...ZERO_GRADIENT_OPS, 'select',
]);

/** Every built-in op a user can record, with its arity. Leaves and arg nodes carry no rule, and
 *  `custom` runs a rule the user supplies. */
export const RECORDABLE_OPS = SCALAR_OP_TABLE.filter(([name]) => !['const', 'input', 'arg', 'custom'].includes(name));

/** Records `op` on its operands; powConst takes its exponent as a plain number. */
export function recordOp(tape: Tape, op: OpName, xs: readonly Var[], exponent = 0): Var {
  if (op === 'powConst') return xs[0]!.pow(exponent);
  if (op === 'select') return tape.select(xs[0]!, xs[1]!, xs[2]!);
  const method = (xs[0] as unknown as Record<string, (o?: Var) => Var>)[op];
  if (typeof method !== 'function') throw new Error(`no Var method for ${op}`);
  return method.call(xs[0], xs[1]);
}

/** Value and gradient of `op` at `point` on `tape`. */
export function valueAndGradient(tape: Tape, op: OpName, point: readonly number[], exponent = 0): number[] {
  tape.reset();
  const xs = tape.variables(point);
  const y = recordOp(tape, op, xs, exponent);
  return [y.value, ...tape.gradient(y, xs)];
}

/** Object.is, except that any two NaNs are the same. */
export function sameNumber(a: number, b: number): boolean {
  return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
}

/** Every pair of the grid (x, z). */
export function pairs(grid: readonly number[]): number[][] {
  return grid.flatMap((x) => grid.map((z) => [x, z]));
}

/** Prints -0 as -0 in failure messages. */
export function show(x: number): string {
  return Object.is(x, -0) ? '-0' : String(x);
}
