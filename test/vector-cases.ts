// The vector ops as test cases, each twice: written with vector ops on one Vec, and written with
// scalar Var ops on one Var per element (the same terms in the same order: the sums below take the
// core's order, four interleaved partial sums s_r over k ≡ r mod 4, combined (s0 + s2) + (s1 + s3)).
// The vector-*.test.ts files run this catalogue through gradcheck, against the scalar twin, across
// engines and through every sweep. Each case reduces its result to one scalar with distinct
// weights per element, so every element's gradient is checked, not only their sum.
import { expect } from 'vitest';
import { BINARY_OPS, UNARY_OPS, type BinaryOpName, type UnaryOpName } from '../src/ops.ts';
import {
  add, atan2, div, eq, ge, gt, hypot, le, lt, max, min, mul, pow, sub, where, type Tape, type Var, type Vec,
} from '../src/index.ts';
import { ZERO_GRADIENT_OPS } from './op-cases.ts';

export { BINARY_OPS, UNARY_OPS };

export interface VectorCase {
  /** Names the op and the form, e.g. 'mul: matrix [2, 3] ⊕ vector [3]'. */
  name: string;
  /** The point: the one input vector. */
  x: readonly number[];
  /** f of one Vec, with vector ops. */
  vec: (x: Vec) => Var;
  /** The same f with scalar Var ops, one Var per element of x. */
  scalar: (xs: Var[]) => Var;
  /** The twin gives bit-identical values and gradients (elementwise ops, permutations, one-term
   *  sums): the same rules in the same order. Otherwise within 1e-13 relative. */
  exact: boolean;
  /** Calls a transcendental (musl in wasm, V8 in JS): the engines agree to 1e-12 relative, not
   *  bit for bit. */
  transcendental: boolean;
  /** Zero-gradient op whose value still moves (stopGradient): central differences see a slope
   *  the tape rightly does not. */
  noFiniteDifferences?: boolean;
}

// ─────────────── scalar twins of the reductions ───────────────

function plus(a: Var | null, b: Var | null): Var | null {
  return a && b ? a.add(b) : a ?? b;
}

/** Σ terms in the vector sum's order: 4 interleaved partial sums, (s0 + s2) + (s1 + s3). An
 *  empty partial sum is +0 there; adding +0 changes no nonzero term, so it is left out here. */
export function sum4(terms: readonly Var[]): Var {
  if (terms.length === 0) throw new Error('sum4 of nothing');
  const s: (Var | null)[] = [null, null, null, null];
  terms.forEach((t, k) => { s[k % 4] = plus(s[k % 4]!, t); });
  return plus(plus(s[0]!, s[2]!), plus(s[1]!, s[3]!))!;
}

/** Σ a_k b_k in the same order. */
export function dot4(a: readonly Var[], b: readonly (Var | number)[]): Var {
  return sum4(a.map((x, k) => x.mul(b[k]!)));
}

/** C = A B for row-major A [m, k] and B [k, p] as Vars: each entry a dot4. */
export function matmul4(A: readonly Var[], B: readonly Var[], m: number, k: number, p: number): Var[] {
  const C: Var[] = [];
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < p; j++) {
      C.push(dot4(A.slice(i * k, i * k + k), Array.from({ length: k }, (_, l) => B[l * p + j]!)));
    }
  }
  return C;
}

/** The transpose of row-major M [m, k]. */
export function transpose<T>(M: readonly T[], m: number, k: number): T[] {
  return Array.from({ length: m * k }, (_, q) => M[(q % m) * k + Math.floor(q / m)]!);
}

/** Elementwise f over n elements, recorded from the last element to the first: the reverse sweep
 *  then visits them first to last and adds into a broadcast operand in ascending element order,
 *  as the vector rule does, so even that operand's gradient is bit-identical. */
export function mapDescending(n: number, f: (k: number) => Var): Var[] {
  const out = new Array<Var>(n);
  for (let k = n - 1; k >= 0; k--) out[k] = f(k);
  return out;
}

// ─────────────── reduction of a result to one scalar ───────────────

/** Distinct exact weights (multiples of 1/4), so each element's gradient is its own. */
export function weights(n: number): number[] {
  return Array.from({ length: n }, (_, k) => 1 + 0.25 * ((k * 3) % 7) - 0.75);
}

/** Σ w_k v_k for a Vec (elementwise mul by a constant array, then sum). */
export function reduceVec(v: Vec): Var {
  return v.reshape([v.size]).mul(weights(v.size)).sum();
}

/** Σ w_k v_k for the scalar twin. */
export function reduceVars(vs: readonly Var[]): Var {
  const w = weights(vs.length);
  return sum4(vs.map((v, k) => v.mul(w[k]!)));
}

function tapeOf(xs: readonly Var[]): Tape {
  return xs[0]!.tape;
}

// ─────────────── elementwise ops ───────────────

/** Five points inside each unary op's smooth domain (five: the sums then have a tail). */
export const UNARY_POINTS: Record<string, number[]> = {
  sqrt: [0.3, 2.5, 1.1, 0.7, 4], cbrt: [-2.5, 0.7, 1.3, -0.4, 2],
  log: [0.3, 4, 1.5, 0.8, 2.2], log2: [0.3, 4, 1.5, 0.8, 2.2], log10: [0.3, 4, 1.5, 0.8, 2.2],
  log1p: [-0.5, 3, 0.2, 1.5, -0.2], asin: [-0.6, 0.4, 0.1, -0.2, 0.7], acos: [-0.6, 0.4, 0.1, -0.2, 0.7],
  atanh: [-0.6, 0.4, 0.1, -0.2, 0.7], acosh: [1.5, 3, 1.2, 2.2, 4], recip: [-2, 0.7, 1.5, -0.6, 3],
  abs: [-1.5, 0.8, 0.3, -0.4, 1.2], relu: [-1.5, 0.8, 0.3, -0.4, 1.2], tan: [-0.7, 1.1, 0.3, -0.2, 0.5],
  ndtri: [0.2, 0.7, 0.05, 0.5, 0.93], normLogCdf: [-3.1, 0.6, -0.25, -8, 1.1],
};
const DEFAULT_POINTS = [-1.3, 0.6, 0.25, -0.4, 1.1];

/** Unary ops that call no transcendental: IEEE-exact in both engines. */
const EXACT_UNARY = new Set<string>(['neg', 'recip', 'square', 'sqrt', 'abs', 'relu', 'floor', 'ceil', 'round', 'sign', 'stopGradient']);
/** Binary ops that call no transcendental. */
const EXACT_BINARY = new Set<string>(['add', 'sub', 'mul', 'div', 'min', 'max', 'lt', 'le', 'gt', 'ge', 'eq']);
export const ZERO_GRADIENT = new Set<string>(ZERO_GRADIENT_OPS);

type UnaryMethod = (this: Var | Vec) => Var & Vec;
type BinaryMethod = (this: Var | Vec, other: unknown) => Var & Vec;
const unaryOf = (v: Var | Vec, op: UnaryOpName): Var & Vec => ((v as unknown as Record<string, unknown>)[op] as UnaryMethod).call(v);
const binaryOf = (v: Var | Vec, op: BinaryOpName, o: unknown): Var & Vec => ((v as unknown as Record<string, unknown>)[op] as BinaryMethod).call(v, o);

export function unaryCases(): VectorCase[] {
  return UNARY_OPS.map((op) => ({
    name: `${op} elementwise`,
    x: UNARY_POINTS[op] ?? DEFAULT_POINTS,
    vec: (x: Vec) => reduceVec(unaryOf(x, op)),
    scalar: (xs: Var[]) => reduceVars(mapDescending(xs.length, (k) => unaryOf(xs[k]!, op))),
    exact: true,
    transcendental: !EXACT_UNARY.has(op),
    noFiniteDifferences: op === 'stopGradient',
  }));
}

// Operands for the broadcasting forms. Positive bases (pow), nonzero denominators, no ties
// (min, max: every pair at least 0.15 apart), away from the origin (atan2, hypot).
const A = [1.3, 0.6, 2.1, 0.45, 1.7];
const B = [-0.8, 1.9, 0.7, -1.4, 2.3];
const S = 0.9; // a scalar Var
const C = 1.15; // a number
const CONSTANTS = [0.55, -1.2, 1.45, 0.8, -0.35];
const M = [1.3, 0.6, 2.1, 0.45, 1.7, 0.95]; // [2, 3]
const R = [0.8, 1.9, 1.5]; // [3]

/** The free functions of the binary ops, which take a Vec as either operand. */
const FREE = { add, sub, mul, div, pow, atan2, min, max, hypot, lt, le, gt, ge, eq } as unknown as Record<BinaryOpName, (a: unknown, b: unknown) => Vec>;

/** Every broadcasting form of a binary op: [name, x, vector form, scalar twin]. */
function binaryForms(op: BinaryOpName): Array<[string, number[], (x: Vec) => Var, (xs: Var[]) => Var]> {
  const n = A.length;
  const handles = (x: Vec) => x.tape.handles;
  return [
    ['vector ⊕ vector', [...A, ...B],
      (x) => reduceVec(binaryOf(x.slice(0, n), op, x.slice(n))),
      (xs) => reduceVars(mapDescending(n, (k) => binaryOf(xs[k]!, op, xs[n + k]!)))],
    ['vector ⊕ scalar Var', [...A, S],
      (x) => reduceVec(binaryOf(x.slice(0, n), op, x.get(n))),
      (xs) => reduceVars(mapDescending(n, (k) => binaryOf(xs[k]!, op, xs[n]!)))],
    ['vector ⊕ number', A,
      (x) => reduceVec(binaryOf(x, op, C)),
      (xs) => reduceVars(mapDescending(n, (k) => binaryOf(xs[k]!, op, C)))],
    // A scalar first: Var methods take no Vec (x.add(v) is a ShapeError); the free functions and
    // the handle API do.
    ['number ⊕ vector', A,
      (x) => reduceVec(FREE[op](C, x)),
      (xs) => { const c = tapeOf(xs).constant(C); return reduceVars(mapDescending(n, (k) => binaryOf(c, op, xs[k]!))); }],
    ['scalar Var ⊕ vector', [...A, S],
      (x) => reduceVec(FREE[op](x.get(n), x.slice(0, n))),
      (xs) => reduceVars(mapDescending(n, (k) => binaryOf(xs[n]!, op, xs[k]!)))],
    ['number ⊕ vector (handle API)', A,
      (x) => { const h = handles(x); return reduceVec(h.vec.toVec(h.vec[op](h.constant(C), x.id))); },
      (xs) => { const c = tapeOf(xs).constant(C); return reduceVars(mapDescending(n, (k) => binaryOf(c, op, xs[k]!))); }],
    ['scalar Var ⊕ vector (handle API)', [...A, S],
      (x) => { const h = handles(x); return reduceVec(h.vec.toVec(h.vec[op](x.get(n).id, x.slice(0, n).id))); },
      (xs) => reduceVars(mapDescending(n, (k) => binaryOf(xs[n]!, op, xs[k]!)))],
    ['matrix [2, 3] ⊕ vector [3]', [...M, ...R],
      (x) => reduceVec(binaryOf(x.slice(0, 6).reshape([2, 3]), op, x.slice(6))),
      (xs) => reduceVars(mapDescending(6, (k) => binaryOf(xs[k]!, op, xs[6 + (k % 3)]!)))],
    ['vector [3] ⊕ matrix [2, 3]', [...M, ...R],
      (x) => reduceVec(binaryOf(x.slice(6), op, x.slice(0, 6).reshape([2, 3]))),
      (xs) => reduceVars(mapDescending(6, (k) => binaryOf(xs[6 + (k % 3)]!, op, xs[k]!)))],
    ['vector ⊕ constant array', A,
      (x) => reduceVec(binaryOf(x, op, CONSTANTS)),
      (xs) => { const t = tapeOf(xs); return reduceVars(mapDescending(n, (k) => binaryOf(xs[k]!, op, t.constant(CONSTANTS[k]!)))); }],
  ];
}

export function binaryCases(): VectorCase[] {
  const cases: VectorCase[] = [];
  for (const op of BINARY_OPS) {
    for (const [form, x, vec, scalar] of binaryForms(op)) {
      cases.push({ name: `${op}: ${form}`, x, vec, scalar, exact: true, transcendental: !EXACT_BINARY.has(op) });
    }
  }
  // x.pow(number) records powConst, as for Vars: negative bases with an integer exponent too.
  for (const c of [2.5, 3, -1]) {
    const x = c === 2.5 ? A : [-1.3, 0.6, -2.1, 0.45, 1.7];
    cases.push({
      name: `powConst: vector ^ ${c}`, x,
      vec: (v) => reduceVec(v.pow(c)),
      scalar: (xs) => reduceVars(mapDescending(xs.length, (k) => xs[k]!.pow(c))),
      exact: true, transcendental: true,
    });
  }
  return cases;
}

/** select / where, elementwise, with broadcast branches; points away from the switch. */
export function selectCases(): VectorCase[] {
  const X = [-1, 2, -3, 0.5, 4];
  return [
    {
      name: 'where(x > 0, log x, x): the untaken log is NaN',
      x: X,
      vec: (x) => reduceVec(where(x.gt(0), x.log(), x)),
      scalar: (xs) => reduceVars(mapDescending(xs.length, (k) => where(xs[k]!.gt(0), xs[k]!.log(), xs[k]!))),
      exact: true, transcendental: true,
    },
    {
      name: 'select(x > s, x, s): a scalar Var branch',
      x: [...X, 0.7],
      vec: (x) => reduceVec(x.tape.select(x.slice(0, 5).gt(x.get(5)), x.slice(0, 5).square(), x.get(5))),
      scalar: (xs) => reduceVars(mapDescending(5, (k) => xs[0]!.tape.select(xs[k]!.gt(xs[5]!), xs[k]!.square(), xs[5]!))),
      exact: true, transcendental: false,
    },
    {
      name: 'select(c, 2, x): a number branch, a constant array condition',
      x: X,
      vec: (x) => reduceVec(x.tape.select([1, 0, 0, 1, 0], 2, x.mul(x))),
      scalar: (xs) => reduceVars(mapDescending(xs.length, (k) => xs[0]!.tape.select([1, 0, 0, 1, 0][k]!, 2, xs[k]!.mul(xs[k]!)))),
      exact: true, transcendental: false,
    },
    {
      name: 'select on matrix [2, 3] with a row condition [3]',
      x: [...M.map((v, k) => (k % 2 ? -v : v)), ...R],
      vec: (x) => { const m = x.slice(0, 6).reshape([2, 3]); return reduceVec(x.tape.select(x.slice(6).gt(1.6), m.exp(), m.sin())); },
      scalar: (xs) => reduceVars(mapDescending(6, (k) => xs[0]!.tape.select(xs[6 + (k % 3)]!.gt(1.6), xs[k]!.exp(), xs[k]!.sin()))),
      exact: true, transcendental: true,
    },
    {
      // Two operands shorter than the result, of different lengths: [3] is tiled to [6] first.
      name: 'select over [2, 2, 3]: condition [2, 3], branches [3] and [2, 2, 3]',
      x: [...M, ...M.map((v) => -v), 0.3, -0.6, 0.9, 0.5, -0.7, 1.2, -0.3, 0.9, -1.1],
      vec: (x) => reduceVec(x.tape.select(x.slice(15).reshape([2, 3]).gt(0), x.slice(12, 15).exp(), x.slice(0, 12).reshape([2, 2, 3]).sin())),
      scalar: (xs) => reduceVars(mapDescending(12, (q) => xs[0]!.tape.select(xs[15 + (q % 6)]!.gt(0), xs[12 + (q % 3)]!.exp(), xs[q]!.sin()))),
      exact: false, transcendental: true,
    },
  ];
}

// ─────────────── the array ops ───────────────

const X8 = [0.7, -1.2, 0.35, 1.9, -0.45, 1.05, -0.8, 0.25];
const X6 = [0.7, -1.2, 0.35, 1.9, -0.45, 1.05];

/** A case from its two forms. */
function arrayCase(name: string, x: readonly number[], vec: (x: Vec) => Var, scalar: (xs: Var[]) => Var, flags: { exact?: boolean; transcendental?: boolean } = {}): VectorCase {
  return { name, x, vec, scalar, exact: flags.exact ?? false, transcendental: flags.transcendental ?? false };
}

/** A [m, k] · B [k, p] with both matrices in x (A first). */
function matmulCase(m: number, k: number, p: number, shapes?: [number[], number[]]): VectorCase {
  const x = Array.from({ length: m * k + k * p }, (_, q) => Math.sin(1.7 * q + 0.3) * 1.5);
  const [sa, sb] = shapes ?? [[m, k], [k, p]];
  return arrayCase(
    `matmul ${JSON.stringify(sa)} · ${JSON.stringify(sb)}`, x,
    (v) => reduceVec(v.slice(0, m * k).reshape(sa).matmul(v.slice(m * k).reshape(sb))),
    (xs) => reduceVars(matmul4(xs.slice(0, m * k), xs.slice(m * k), m, k, p)),
    { exact: m * k * p === 1 },
  );
}

export function arrayCases(): VectorCase[] {
  const lse = (xs: readonly Var[]): Var => {
    const m = Math.max(...xs.map((v) => v.value));
    return sum4(xs.map((v) => v.sub(m).exp())).log().add(m);
  };
  return [
    arrayCase('get (also from the end)', X6, (x) => x.get(2).mul(x.get(-1)).add(x.get(0)), (xs) => xs[2]!.mul(xs[5]!).add(xs[0]!), { exact: true }),
    arrayCase('get on a matrix (row-major)', X6, (x) => x.reshape([2, 3]).get(4).sin(), (xs) => xs[4]!.sin(), { exact: true, transcendental: true }),
    arrayCase('slice', X8, (x) => reduceVec(x.slice(1, 6)), (xs) => reduceVars(xs.slice(1, 6)), { exact: true }),
    arrayCase('slice from the end', X8, (x) => reduceVec(x.slice(-3)), (xs) => reduceVars(xs.slice(-3)), { exact: true }),
    arrayCase('concat of vectors, a Var and a number', X6,
      (x) => reduceVec(x.tape.concat([x.slice(0, 2), x.get(3), 1.5, x.slice(2).exp()])),
      (xs) => reduceVars([xs[0]!, xs[1]!, xs[3]!, xs[0]!.tape.constant(1.5), ...xs.slice(2).map((v) => v.exp())]),
      { exact: true, transcendental: true }),
    arrayCase('concat of matrices along rows', X6,
      (x) => { const c = x.tape.concat([x.slice(0, 4).reshape([2, 2]), x.slice(4).reshape([1, 2])]); return reduceVec(c.matvec([1.5, -0.5])); },
      (xs) => reduceVars([0, 1, 2].map((r) => dot4(xs.slice(2 * r, 2 * r + 2), [1.5, -0.5])))),
    arrayCase('stack of scalars', X6,
      (x) => reduceVec(x.tape.stack([x.get(0), 2, x.get(1).sin(), x.get(4)])),
      (xs) => reduceVars([xs[0]!, xs[0]!.tape.constant(2), xs[1]!.sin(), xs[4]!]),
      { exact: true, transcendental: true }),
    arrayCase('stack of vectors: rows of a matrix', X6,
      (x) => reduceVec(x.tape.stack([x.slice(0, 3), x.slice(3)]).matvec([1, 2, -1])),
      (xs) => reduceVars([dot4(xs.slice(0, 3), [1, 2, -1]), dot4(xs.slice(3), [1, 2, -1])])),
    arrayCase('gather with repeated indices', X6,
      (x) => reduceVec(x.gather([0, 2, 2, 5, 0, 2, 1])),
      (xs) => reduceVars([0, 2, 2, 5, 0, 2, 1].map((i) => xs[i]!)), { exact: true }),
    arrayCase('gather counting from the end, as get does', X6,
      (x) => reduceVec(x.gather([-1, 0, -6, 3, -1])),
      (xs) => reduceVars([5, 0, 0, 3, 5].map((i) => xs[i]!)), { exact: true }),
    arrayCase('reshape (no node) then transpose', X6,
      (x) => reduceVec(x.reshape([2, 3]).transpose()),
      (xs) => reduceVars(transpose(xs, 2, 3)), { exact: true }),
    arrayCase('transpose [3, 2] → [2, 3] via .T, times a vector', X6,
      (x) => reduceVec(x.reshape([3, 2]).T.matvec([0.5, -1.5, 2])),
      (xs) => { const t = transpose(xs, 3, 2); return reduceVars([dot4(t.slice(0, 3), [0.5, -1.5, 2]), dot4(t.slice(3), [0.5, -1.5, 2])]); }),
    arrayCase('sum', X8, (x) => x.sum(), (xs) => sum4(xs), { exact: true }),
    arrayCase('sum of one element', [0.7], (x) => x.sum().mul(3), (xs) => xs[0]!.mul(3), { exact: true }),
    arrayCase('sum of products (sum after mul)', X8, (x) => x.mul(x.sin()).sum(), (xs) => sum4(mapDescending(xs.length, (k) => xs[k]!.mul(xs[k]!.sin()))), { exact: true, transcendental: true }),
    arrayCase('mean', X8, (x) => x.mean(), (xs) => sum4(xs).div(xs.length), { exact: true }),
    // Each element of a dot gets one term (g·b_k, as the twin's mul): exact, like its sum.
    arrayCase('dot', X8, (x) => x.slice(0, 4).dot(x.slice(4)), (xs) => dot4(xs.slice(0, 4), xs.slice(4)), { exact: true }),
    arrayCase('dot of 7 terms with a constant array', X8.slice(0, 7), (x) => x.dot([1, -2, 0.5, 3, -1, 0.25, 2]), (xs) => dot4(xs, [1, -2, 0.5, 3, -1, 0.25, 2]), { exact: true }),
    arrayCase('dot of one element', [0.7, -1.3], (x) => x.slice(0, 1).dot(x.slice(1)), (xs) => xs[0]!.mul(xs[1]!), { exact: true }),
    arrayCase('sumSquares', X8, (x) => x.sumSquares(), (xs) => dot4(xs, xs), { exact: true }),
    arrayCase('norm', X8, (x) => x.norm(), (xs) => dot4(xs, xs).sqrt(), { exact: true }),
    arrayCase('max (no ties)', X8, (x) => x.max().mul(x.get(0)), (xs) => xs.reduce((a, b) => a.max(b)).mul(xs[0]!), { exact: true }),
    arrayCase('min (no ties)', X8, (x) => x.min().mul(x.get(0)), (xs) => xs.reduce((a, b) => a.min(b)).mul(xs[0]!), { exact: true }),
    arrayCase('logSumExp', X8, (x) => x.logSumExp(), lse, { transcendental: true }),
    arrayCase('logSumExp of huge inputs (1000 + x)', X8.map((v) => 1000 + v), (x) => x.logSumExp(), lse, { transcendental: true }),
    arrayCase('logSumExp of one element', [0.7], (x) => x.logSumExp(), lse, { exact: true, transcendental: true }),
    arrayCase('softmax', X6, (x) => reduceVec(x.softmax()), (xs) => { const l = lse(xs); return reduceVars(mapDescending(xs.length, (k) => xs[k]!.sub(l).exp())); }, { transcendental: true }),
    arrayCase('logSoftmax', X6, (x) => reduceVec(x.logSoftmax()), (xs) => { const l = lse(xs); return reduceVars(mapDescending(xs.length, (k) => xs[k]!.sub(l))); }, { transcendental: true }),
    arrayCase('matvec [2, 3] · [3]', [...X6, 0.3, -0.9, 1.4],
      (x) => reduceVec(x.slice(0, 6).reshape([2, 3]).matvec(x.slice(6))),
      (xs) => reduceVars(matmul4(xs.slice(0, 6), xs.slice(6), 2, 3, 1))),
    arrayCase('vecmat [2] · [2, 3]', [0.3, -0.9, ...X6],
      (x) => reduceVec(x.slice(0, 2).vecmat(x.slice(2).reshape([2, 3]))),
      (xs) => reduceVars(matmul4(xs.slice(0, 2), xs.slice(2), 1, 2, 3))),
    matmulCase(2, 3, 4),
    matmulCase(1, 5, 1),
    matmulCase(5, 1, 4),
    matmulCase(1, 1, 1),
    matmulCase(3, 6, 2),
    matmulCase(2, 3, 1, [[2, 3], [3]]),
    matmulCase(1, 3, 2, [[3], [3, 2]]),
    arrayCase('Gram matrix Mᵀ M (one operand twice)', X6,
      (x) => { const m = x.reshape([3, 2]); return reduceVec(m.T.matmul(m)); },
      (xs) => reduceVars(matmul4(transpose(xs, 3, 2), xs, 2, 3, 2))),
    arrayCase('outer [3] ⊗ [2]', [0.3, -0.9, 1.4, 0.6, -1.1],
      (x) => reduceVec(x.slice(0, 3).outer(x.slice(3))),
      (xs) => reduceVars([0, 1, 2].flatMap((i) => [0, 1].map((j) => xs[i]!.mul(xs[3 + j]!)))), { exact: true }),
    ...[true, false].map((lower) => arrayCase(`trmv (${lower ? 'lower' : 'upper'})`, [...X6, 0.9, -0.4, 1.6].slice(0, 9).concat([0.3, -0.9, 1.4]),
      (x) => reduceVec(x.slice(0, 9).reshape([3, 3]).trmv(x.slice(9), { lower })),
      (xs) => reduceVars([0, 1, 2].map((r) => {
        const cols = [0, 1, 2].filter((c) => (lower ? c <= r : c >= r));
        return cols.map((c) => xs[r * 3 + c]!.mul(xs[9 + c]!)).reduce((a, b) => a.add(b));
      })))),
  ];
}

/** Every case of the catalogue. */
export function allCases(): VectorCase[] {
  return [...unaryCases(), ...binaryCases(), ...selectCases(), ...arrayCases()];
}

/** Records a case on `tape` (reset first): the input Vec, the output. */
export function recordVector(tape: Tape, c: VectorCase, x: ArrayLike<number> = c.x): { input: Vec; output: Var } {
  tape.reset();
  const input = tape.vector(x);
  return { input, output: c.vec(input) };
}

/** Records the scalar twin of a case on `tape` (reset first): the input Vars, the output. */
export function recordScalar(tape: Tape, c: VectorCase, x: ArrayLike<number> = c.x): { inputs: Var[]; output: Var } {
  tape.reset();
  const inputs = tape.variables(x);
  return { inputs, output: c.scalar(inputs) };
}

/** max_k |a_k - b_k| / max_k |b_k| (1 when b is all zeros: then an absolute error); NaN at the
 *  same place on both sides agrees. */
export function relativeError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Infinity;
  let scale = 0, error = 0;
  for (let k = 0; k < b.length; k++) if (Number.isFinite(b[k]!)) scale = Math.max(scale, Math.abs(b[k]!));
  if (scale === 0) scale = 1;
  for (let k = 0; k < b.length; k++) {
    const x = a[k]!, y = b[k]!;
    if (Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)) || x === y) continue;
    error = Math.max(error, Number.isFinite(x - y) ? Math.abs(x - y) / scale : Infinity);
  }
  return error;
}

/** The raw bits, so -0 and NaN payloads count in equality. */
export function bits(xs: ArrayLike<number>): BigUint64Array {
  return new BigUint64Array(Float64Array.from(xs).buffer);
}

/** Runs `action`, which must throw, and checks that it recorded nothing (no node, no element);
 *  returns what it threw, for the caller's checks of the error itself. */
export function thrownWithoutRecording(tape: Tape, action: () => unknown, what: string): unknown {
  const size = tape.size, elements = tape.elementCount;
  let error: unknown = null;
  try {
    action();
  } catch (e) {
    error = e;
  }
  expect(error, `${what}: expected an error`).not.toBeNull();
  expect(tape.size, `${what}: nothing recorded`).toBe(size);
  expect(tape.elementCount, `${what}: no elements taken`).toBe(elements);
  return error;
}

/** Each number as text, -0 apart from +0 (every NaN alike): for bit-for-bit comparisons whose
 *  failures read well. */
export function numberTexts(xs: ArrayLike<number>): string[] {
  return Array.from(xs, (x) => (Object.is(x, -0) ? '-0' : String(x)));
}
