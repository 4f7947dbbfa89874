// Free-function forms of the op table: `exp(v)`, `mul(a, b)`. On plain numbers they compute the
// plain value with the same rules, so one function body serves numbers, Vars and Vecs (with a
// Vec among the operands they run elementwise, broadcasting as the Vec methods do). Numbers are
// told apart first: the instanceof tests before them made an op on numbers 17-20 ns against
// 0.2-0.9 for the operator (3.5 now; a probe's N-body through free functions ran 20x its plain
// form).
import { forwardRule } from './js/rules.ts';
import { BINARY_OPS, Op, UNARY_OPS, type BinaryOpName, type UnaryOpName } from './ops.ts';
import { NotANumberError, booleanCondition, describe } from './errors.ts';
import { Var, type Operand } from './tape.ts';
import { Vec, elementwise, type VecOperand } from './vector.ts';

// What a function of operands typed by a type parameter returns (`function sq<T extends Operand>(x:
// T) { return mul(x, x) }` is a number for numbers, a Var for Vars: one body serves both).
// Of several operands: any typed a Var makes a Var (the op records a node), else numbers alone a
// number (a types probe: `add(mul(x, x), 1)` in a generic model was an Operand for a Var x). An
// operand typed `any` (JSON.parse's) counts as a number: it passes both tests, and is a number
// far more often (a review: `add(data.a, 1)` typed a Var), so it is no Var here; and asked of the
// operands together, a Var beside it made a number (a probe: `mul(v, k)` for a `k: any`).
type IsVar<T> = 0 extends 1 & T ? false : [T] extends [Var] ? true : false;
type Combined<T extends Operand, U extends Operand, W extends Operand = number> =
  true extends IsVar<T> | IsVar<U> | IsVar<W> ? Var : [T | U | W] extends [number] ? number : Operand;
// One generic signature: a function passed as a callback is typed by its last overload, and
// `xs.map(exp)` of Vars was a (Vec | Operand)[] while unary functions had overloads (a new-user
// probe). Distributive, so that an operand of a generic function has its constraint's kind
// (`tanh(x).sum()` for x: T extends Vec, `exp(sub(m, 3))` an Operand for m: T extends Operand);
// `any` gives Operand | Vec (an outer test sending `any` to Var made `tanh(x)` of x: T extends Vec
// a Var | Vec: a review).
type Unary<T> = T extends Vec ? Vec : T extends number ? number : T extends Var ? Var : Operand;
type UnaryFunction = <T extends Operand | Vec>(x: T) => Unary<T>;
type BinaryFunction = {
  (x: Vec, y: VecOperand): Vec; (x: VecOperand, y: Vec): Vec;
  (x: Var, y: Operand): Var; (x: Operand, y: Var): Var; (x: number, y: number): number;
  <T extends Operand, U extends Operand>(x: T, y: U): Combined<T, U>; (x: Operand | Vec, y: Operand | Vec): Operand | Vec;
};

function unary(name: UnaryOpName): UnaryFunction {
  const code = Op[name];
  return ((x: Operand | Vec) => {
    if (typeof x === 'number') return forwardRule(code, x, 0, 0);
    // The tape's own method with the op's code, not `x[name]()`: the functions' closures share one
    // feedback vector, so that call was megamorphic, and a model written with the free functions
    // recorded at 40-50 ns an op against 8-10 through the methods (a probe).
    if (x instanceof Var) return x.tape.recordUnary(code, x);
    if (x instanceof Vec) return elementwise(x.tape, code, name, [x]);
    throw new NotANumberError(`${name}: expected a Var, a Vec or a number, got ${describe(x)}`);
  }) as UnaryFunction;
}

function binary(name: BinaryOpName): BinaryFunction {
  const code = Op[name];
  return ((x: VecOperand, y: VecOperand) => {
    if (typeof x === 'number' && typeof y === 'number') return forwardRule(code, x, y, 0);
    // A Var first, before the tests for a Vec (which a Var beside a Vec still reaches): 19 against
    // 40 ns an op on a chain of add, mul and exp.
    if (x instanceof Var && !(y instanceof Vec)) return x.tape.recordBinary(code, x, y as Operand);
    const v = x instanceof Vec ? x : y instanceof Vec ? y : null;
    if (v) return elementwise(v.tape, code === Op.pow && typeof y === 'number' ? Op.powConst : code, name, [x, y]);
    if (y instanceof Var) {
      if (typeof x === 'number') return y.tape.recordNumberBinary(code, x, y);
      throw new NotANumberError(`${name}: expected Vars, Vecs or numbers, got ${describe(x)} and ${describe(y)}`);
    }
    throw new NotANumberError(`${name}: expected Vars, Vecs or numbers, got ${describe(x)} and ${describe(y)}`);
  }) as BinaryFunction;
}

const unaries = Object.fromEntries(UNARY_OPS.map((n) => [n, unary(n)])) as Record<UnaryOpName, UnaryFunction>;
const binaries = Object.fromEntries(BINARY_OPS.map((n) => [n, binary(n)])) as Record<BinaryOpName, BinaryFunction>;

export const {
  neg, recip, square, sqrt, cbrt, exp, expm1, log, log1p, log2, log10, sin, cos, tan, asin, acos,
  atan, sinh, cosh, tanh, asinh, acosh, atanh, abs, sigmoid, softplus, relu, floor, ceil, round,
  sign, stopGradient, erf, erfc, normCdf, normLogCdf, ndtri, lgamma, digamma,
} = unaries;

export const { add, sub, mul, div, pow, atan2, min, max, hypot, lt, le, gt, ge, eq } = binaries;

/** `cond ? ifTrue : ifFalse` (true unless 0 or NaN); the untaken branch gets zero gradient.
 *  With a Vec among the operands, elementwise (see `Tape.select`). */
export function select(cond: Vec, ifTrue: VecOperand, ifFalse: VecOperand): Vec;
export function select(cond: VecOperand, ifTrue: Vec, ifFalse: VecOperand): Vec;
export function select(cond: VecOperand, ifTrue: VecOperand, ifFalse: Vec): Vec;
export function select(cond: Var, ifTrue: Operand, ifFalse: Operand): Var;
export function select(cond: Operand, ifTrue: Var, ifFalse: Operand): Var;
export function select(cond: Operand, ifTrue: Operand, ifFalse: Var): Var;
export function select(cond: number, ifTrue: number, ifFalse: number): number;
export function select<T extends Operand, U extends Operand, W extends Operand>(cond: T, ifTrue: U, ifFalse: W): Combined<T, U, W>;
export function select(cond: Operand | Vec, ifTrue: Operand | Vec, ifFalse: Operand | Vec): Operand | Vec;
export function select(cond: VecOperand, ifTrue: VecOperand, ifFalse: VecOperand): Operand | Vec {
  if (typeof cond === 'boolean') throw booleanCondition(cond);
  if (typeof cond === 'number' && typeof ifTrue === 'number' && typeof ifFalse === 'number') return forwardRule(Op.select, cond, ifTrue, ifFalse);
  // A Vec first: an object is truthy, so forwardRule would silently return ifTrue.
  const v = [cond, ifTrue, ifFalse].find((o): o is Vec | Var => o instanceof Vec || o instanceof Var);
  if (v) return v.tape.select(cond as Vec, ifTrue, ifFalse);
  // Without a Var or Vec there is no tape to hold an array as a constant vector.
  const operands = [cond, ifTrue, ifFalse];
  const bad = operands.findIndex((o) => typeof o !== 'number');
  if (bad >= 0) throw new NotANumberError(`select: expected Vars, Vecs or numbers (an array needs a Vec beside it: only a Vec makes select elementwise), got ${describe(operands[bad])} as ${['cond', 'ifTrue', 'ifFalse'][bad]}`);
  return forwardRule(Op.select, cond as number, ifTrue as number, ifFalse as number);
}

/** Alias of `select`, as in NumPy and JAX. */
export const where = select;
