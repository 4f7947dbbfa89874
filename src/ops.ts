// The op codes, names and arities, in the order of the table in assembly/ops.ts (which holds the
// rules and the notes on each). test/op-table.test.ts compares this list with the one compiled
// into the wasm core, so the two backends cannot drift apart. The Var and handle methods are
// generated from this list too, so a new op is added here and in assembly/ops.ts, nowhere else.
import { TapegradError, describe } from './errors.ts';

const SCALAR_OPS = [
  ['const', 0], ['input', 0], ['arg', 1],
  ['add', 2], ['sub', 2], ['mul', 2], ['div', 2], ['neg', 1], ['recip', 1], ['square', 1],
  ['sqrt', 1], ['cbrt', 1], ['pow', 2], ['powConst', 2],
  ['exp', 1], ['expm1', 1], ['log', 1], ['log1p', 1], ['log2', 1], ['log10', 1],
  ['sin', 1], ['cos', 1], ['tan', 1], ['asin', 1], ['acos', 1], ['atan', 1], ['atan2', 2],
  ['sinh', 1], ['cosh', 1], ['tanh', 1], ['asinh', 1], ['acosh', 1], ['atanh', 1],
  ['abs', 1], ['min', 2], ['max', 2], ['hypot', 2], ['sigmoid', 1], ['softplus', 1], ['relu', 1],
  ['floor', 1], ['ceil', 1], ['round', 1], ['sign', 1], ['stopGradient', 1],
  ['lt', 2], ['le', 2], ['gt', 2], ['ge', 2], ['eq', 2], ['select', 3],
  ['erf', 1], ['erfc', 1], ['normCdf', 1], ['normLogCdf', 1], ['ndtri', 1], ['lgamma', 1], ['digamma', 1],
  ['custom', -1], // n operands, carried by arg nodes; see defineFunction
] as const;

// Array-valued nodes (their rules: assembly/vector.ts). Elementwise forms of the scalar ops are
// not listed: op s applied per element has code ELEMENTWISE + s.
const VECTOR_OPS = [
  ['vmeta', 0], ['vparam', 0], ['vget', 1], ['vsum', 1], ['vmax', 1], ['vmin', 1], ['vlogSumExp', 1],
  ['vdot', 2], ['vinput', 0], ['vconst', 0], ['vmatmul', 2], ['vtranspose', 1], ['vslice', 1],
  ['vconcat', -1], ['vgather', 2],
] as const;

// Frozen, rows and all, as Op is: the library reads them (op names in errors, checkNaN, the
// byte format's checks), and a user's `OP_NAMES.sort()` renamed every op (a probe: log's NaN was
// reported as digamma's, and valid bytes were refused).
for (const row of [...SCALAR_OPS, ...VECTOR_OPS]) Object.freeze(row);
Object.freeze(SCALAR_OPS);

/** The op table: `[name, arity]` rows in op-code order, the scalar ops first, then the vector
 *  ops (arity -1: any number of operands). Frozen. */
export const OP_TABLE = Object.freeze([...SCALAR_OPS, ...VECTOR_OPS] as const);
/** The scalar ops alone (every op a Var records); vector ops follow them in OP_TABLE. Frozen. */
export const SCALAR_OP_TABLE = SCALAR_OPS;

/** Op code of scalar op s applied elementwise to arrays. */
export const ELEMENTWISE = 128;

type Entry = (typeof SCALAR_OPS)[number];
/** The name of a scalar op (the ops a Var records), as in OP_TABLE. */
export type OpName = Entry[0];
/** Ops with one operand that a Var exposes as methods: `v.exp()`. */
export type UnaryOpName = Exclude<Extract<Entry, readonly [string, 1]>[0], 'arg'>;
/** Ops with two operands that a Var exposes as methods taking a Var or a number: `v.mul(2)`.
 *  `pow` records `powConst` when the exponent is a number. */
export type BinaryOpName = Exclude<Extract<Entry, readonly [string, 2]>[0], 'powConst'>;

/** The name of a vector op (an array-valued node). Elementwise forms of the scalar ops have no
 *  name of their own: op s per element has code `ELEMENTWISE + s`. */
export type VectorOpName = (typeof VECTOR_OPS)[number][0];

/** Op names by op code: the first column of OP_TABLE. Frozen. */
export const OP_NAMES: readonly (OpName | VectorOpName)[] = Object.freeze(OP_TABLE.map(([name]) => name));

/** Op codes by name (frozen): `Op.exp` is the code of exp, its index in OP_TABLE. */
export const Op = Object.freeze(
  Object.fromEntries(OP_NAMES.map((name, code) => [name, code])) as { readonly [K in OpName | VectorOpName]: number },
);

/** The name of any op code, elementwise forms included (`exp[]`); `op 200` for a code no op has. */
export function opNameOf(code: number): string {
  // From JavaScript a Symbol was a raw TypeError, and a string or an object named "op abc".
  if (typeof code !== 'number') throw new TapegradError('INVALID_ARGUMENT', `opNameOf: expected an op code (a number), got ${describe(code)}`);
  // Only scalar ops from add to before custom have elementwise forms: 128 + vconcat is no op.
  if (code >= ELEMENTWISE) return code - ELEMENTWISE >= Op.add && code - ELEMENTWISE < Op.custom ? `${OP_NAMES[code - ELEMENTWISE]}[]` : `op ${code}`;
  return OP_NAMES[code] ?? `op ${code}`;
}

export const UNARY_OPS = SCALAR_OPS.filter(([n, k]) => k === 1 && n !== 'arg').map(([n]) => n) as UnaryOpName[];
export const BINARY_OPS = SCALAR_OPS.filter(([n, k]) => k === 2 && n !== 'powConst').map(([n]) => n) as BinaryOpName[];
/** The comparison ops: 0/1 values; compiled functions guard those whose values user code read. */
export const COMPARISON_OPS: ReadonlySet<number> = new Set([Op.lt, Op.le, Op.gt, Op.ge, Op.eq]);
/** Ops whose gradient is zero by definition (they still record, and replay). */
export const ZERO_GRADIENT_OPS: readonly OpName[] = [
  'floor', 'ceil', 'round', 'sign', 'stopGradient', 'lt', 'le', 'gt', 'ge', 'eq',
];
/** 1 at the op codes of ZERO_GRADIENT_OPS: they pass no gradient and no tangent (zeroGradient in
 *  the core's ops.ts, a range of the same codes). */
export const ZERO_GRADIENT = new Uint8Array(256);
for (const name of ZERO_GRADIENT_OPS) ZERO_GRADIENT[Op[name]] = 1;

export type NodeKind = 'scalar' | 'vector' | 'carrier';

/** What a node of op `code` holds: a scalar value, an array (its elements), or nothing of its
 *  own (a carrier of operands for the node after it: arg, vmeta, vparam). */
export function nodeKind(code: number): NodeKind {
  if (code === Op.arg || code === Op.vmeta || code === Op.vparam) return 'carrier';
  return code >= Op.vinput ? 'vector' : 'scalar';
}

// nodeKind per op code, as one load: a gradient checks every input handle, and nodeKind's
// comparisons took half of that loop (2.9 -> 1.7 ns per input on the bench's Rosenbrock).
const SCALAR_VALUED = Uint8Array.from({ length: 256 }, (_, code) => (nodeKind(code) === 'scalar' ? 1 : 0));

/** Whether a node of op `code` holds a scalar value (a handle may name it): nodeKind 'scalar'. */
export function scalarValued(code: number): boolean {
  return SCALAR_VALUED[code] === 1;
}
