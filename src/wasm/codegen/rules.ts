// The per-op rule tables of the emitters: which ops map to one wasm instruction, which are
// comparisons, which have zero gradient, the first partials spelled out in wasm (and the tangent
// sweeps' variant), the ops with linear partials, the partials' directional derivatives, and the
// indices of the core's rule functions the module imports for every other op.
import { Op } from '../../ops.ts';
import {
  type Bytes, W_If, W_Else, W_End, W_Void, W_F64Eq, W_F64Ne, W_F64Lt, W_F64Gt, W_F64Le, W_F64Ge, W_F64Abs, W_F64Neg,
  W_F64Add, W_F64Sub, W_F64Mul, W_F64Div, W_Select, W_I32And, W_I32Or, W_Call,
} from './wasm.ts';

// Imported functions, in import order: the core's rules.
export const FN_FORWARD = 0, FN_PARTIALS = 1, FN_PARTIAL_Z = 2, FN_PARTIALS_TANGENT = 3, FN_PARTIAL_Z_TANGENT = 4;

export const NATIVE_BINARY: Partial<Record<number, number>> = {
  [Op.add]: W_F64Add, [Op.sub]: W_F64Sub, [Op.mul]: W_F64Mul, [Op.div]: W_F64Div,
};
export const COMPARISON: Partial<Record<number, number>> = {
  [Op.lt]: W_F64Lt, [Op.le]: W_F64Le, [Op.gt]: W_F64Gt, [Op.ge]: W_F64Ge, [Op.eq]: W_F64Eq,
};

// The locals a partials emitter sets (pa, pb) or may use as scratch (c).
type Locals = { pa: number; pb: number; c: number };
type Emit = () => void;
// x in L.c: x > edge ? (inside) : x == edge ? Infinity : NaN, into pa (the log family). Both
// sides of a select are computed; neither can trap.
function beyondEdge(fn: Bytes, L: Locals, edge: number, inside: () => void): void {
  inside();
  fn.f64Const(Infinity); fn.f64Const(NaN);
  fn.get(L.c); fn.f64Const(edge); fn.byte(W_F64Eq);
  fn.byte(W_Select);
  fn.get(L.c); fn.f64Const(edge); fn.byte(W_F64Gt);
  fn.byte(W_Select);
  fn.set(L.pa);
}

// 1 / x, then / divisor, with x in L.c.
const reciprocalOfX = (fn: Bytes, L: Locals, divisor?: number) => (): void => {
  fn.f64Const(1); fn.get(L.c); fn.byte(W_F64Div);
  if (divisor !== undefined) { fn.f64Const(divisor); fn.byte(W_F64Div); }
};

// min and max: pa = first wins ? 1 : e, pb = second wins ? 1 : e, where e = x == z ? 0.5 (a tie
// splits) : NaN if either is NaN, else 0 (pickFirst in assembly/ops.ts).
function kinkPartials(fn: Bytes, x: Emit, z: Emit, L: Locals, firstWins: number, secondWins: number): void {
  x(); fn.set(L.c); z(); fn.set(L.pb);
  fn.f64Const(0.5);
  fn.f64Const(NaN); fn.f64Const(0);
  fn.get(L.c); fn.get(L.c); fn.byte(W_F64Ne); fn.get(L.pb); fn.get(L.pb); fn.byte(W_F64Ne); fn.byte(W_I32Or);
  fn.byte(W_Select);
  fn.get(L.c); fn.get(L.pb); fn.byte(W_F64Eq);
  fn.byte(W_Select);
  fn.set(L.pa); // e, for now
  fn.f64Const(1); fn.get(L.pa); fn.get(L.c); fn.get(L.pb); fn.byte(firstWins); fn.byte(W_Select);
  fn.f64Const(1); fn.get(L.pa); fn.get(L.pb); fn.get(L.c); fn.byte(secondWins); fn.byte(W_Select);
  fn.set(L.pb);
  fn.set(L.pa);
}

// Partials spelled out in wasm, exactly as `partials` in assembly/ops.ts writes them (same
// operations, same order): they set the locals pa (and pb for binary ops).
export const NATIVE_PARTIAL: Partial<Record<number, (fn: Bytes, x: Emit, z: Emit, y: Emit, L: Locals) => void>> = {
  // -1
  [Op.neg]: (fn, _x, _z, _y, L) => { fn.f64Const(-1); fn.set(L.pa); },
  // -y * y
  [Op.recip]: (fn, _x, _z, y, L) => { y(); fn.byte(W_F64Neg); y(); fn.byte(W_F64Mul); fn.set(L.pa); },
  // 2 * x
  [Op.square]: (fn, x, _z, _y, L) => { fn.f64Const(2); x(); fn.byte(W_F64Mul); fn.set(L.pa); },
  // sgn x: x > 0 ? 1 : x < 0 ? -1 : x * 0
  [Op.abs]: (fn, x, _z, _y, L) => {
    fn.f64Const(1);
    fn.f64Const(-1);
    x(); fn.tee(L.c); fn.f64Const(0); fn.byte(W_F64Mul);
    fn.get(L.c); fn.f64Const(0); fn.byte(W_F64Lt);
    fn.byte(W_Select);
    fn.get(L.c); fn.f64Const(0); fn.byte(W_F64Gt);
    fn.byte(W_Select);
    fn.set(L.pa);
  },
  // x > 0 ? 1 : x == x ? 0 : NaN
  [Op.relu]: (fn, x, _z, _y, L) => {
    fn.f64Const(1);
    fn.f64Const(0); fn.f64Const(NaN); x(); fn.tee(L.c); fn.get(L.c); fn.byte(W_F64Eq); fn.byte(W_Select);
    fn.get(L.c); fn.f64Const(0); fn.byte(W_F64Gt);
    fn.byte(W_Select);
    fn.set(L.pa);
  },
  [Op.min]: (fn, x, z, _y, L) => kinkPartials(fn, x, z, L, W_F64Lt, W_F64Lt),
  [Op.max]: (fn, x, z, _y, L) => kinkPartials(fn, x, z, L, W_F64Gt, W_F64Gt),
  // x > 0 ? 1 / x : x == 0 ? Infinity : NaN; log2 and log10 divide 1 / x by ln 2, ln 10
  [Op.log]: (fn, x, _z, _y, L) => { x(); fn.set(L.c); beyondEdge(fn, L, 0, reciprocalOfX(fn, L)); },
  [Op.log2]: (fn, x, _z, _y, L) => { x(); fn.set(L.c); beyondEdge(fn, L, 0, reciprocalOfX(fn, L, Math.LN2)); },
  // log10Partial in assembly/ops.ts: 1 / x / LN10 where finite, else LOG10E / x (pa is scratch
  // until beyondEdge sets it).
  [Op.log10]: (fn, x, _z, _y, L) => {
    x(); fn.set(L.c);
    beyondEdge(fn, L, 0, () => {
      reciprocalOfX(fn, L, Math.LN10)(); fn.tee(L.pa);
      fn.f64Const(Math.LOG10E); fn.get(L.c); fn.byte(W_F64Div);
      fn.get(L.pa); fn.f64Const(Infinity); fn.byte(W_F64Lt);
      fn.byte(W_Select);
    });
  },
  // x > -1 ? 1 / (1 + x) : x == -1 ? Infinity : NaN
  [Op.log1p]: (fn, x, _z, _y, L) => {
    x(); fn.set(L.c);
    beyondEdge(fn, L, -1, () => { fn.f64Const(1); fn.f64Const(1); fn.get(L.c); fn.byte(W_F64Add); fn.byte(W_F64Div); });
  },
  // 1 + y * y
  [Op.tan]: (fn, _x, _z, y, L) => { fn.f64Const(1); y(); fn.tee(L.c); fn.get(L.c); fn.byte(W_F64Mul); fn.byte(W_F64Add); fn.set(L.pa); },
  // u = 1 + x * x; u == Infinity && x finite ? 1 / x / x : 1 / u (u in pa until the end)
  [Op.atan]: (fn, x, _z, _y, L) => {
    x(); fn.set(L.c);
    fn.f64Const(1); fn.get(L.c); fn.get(L.c); fn.byte(W_F64Mul); fn.byte(W_F64Add); fn.set(L.pa);
    fn.f64Const(1); fn.get(L.c); fn.byte(W_F64Div); fn.get(L.c); fn.byte(W_F64Div);
    fn.f64Const(1); fn.get(L.pa); fn.byte(W_F64Div);
    fn.get(L.pa); fn.f64Const(Infinity); fn.byte(W_F64Eq);
    fn.get(L.c); fn.get(L.c); fn.byte(W_F64Sub); fn.f64Const(0); fn.byte(W_F64Eq); fn.byte(W_I32And);
    fn.byte(W_Select); fn.set(L.pa);
  },
  // 1 / (3 * y * y)
  [Op.cbrt]: (fn, _x, _z, y, L) => {
    fn.f64Const(1); fn.f64Const(3); y(); fn.tee(L.c); fn.byte(W_F64Mul); fn.get(L.c); fn.byte(W_F64Mul); fn.byte(W_F64Div); fn.set(L.pa);
  },
  // |y| < 0.5 ? 1 - y * y : the core's rule (q(2 - q) with q = 1 - |tanh x| by exp, where 1 - y²
  // would cancel)
  [Op.tanh]: (fn, x, _z, y, L) => {
    y(); fn.tee(L.c); fn.byte(W_F64Abs); fn.f64Const(0.5); fn.byte(W_F64Lt);
    fn.byte(W_If); fn.byte(W_Void);
    fn.f64Const(1); fn.get(L.c); fn.get(L.c); fn.byte(W_F64Mul); fn.byte(W_F64Sub); fn.set(L.pa);
    fn.byte(W_Else);
    fn.i32Const(Op.tanh); x(); fn.f64Const(0); fn.get(L.c); fn.byte(W_Call); fn.u32(FN_PARTIALS); fn.set(L.pa);
    fn.byte(W_End);
  },
  // 0.5 / |y|
  [Op.sqrt]: (fn, _x, _z, y, L) => { fn.f64Const(0.5); y(); fn.byte(W_F64Abs); fn.byte(W_F64Div); fn.set(L.pa); },
  // y
  [Op.exp]: (fn, _x, _z, y, L) => { y(); fn.set(L.pa); },
  // y != y ? (NaN, NaN) : (1 / z, -y / z)
  [Op.div]: (fn, _x, z, y, L) => {
    y(); fn.tee(L.c); fn.get(L.c); fn.byte(W_F64Ne);
    fn.byte(W_If); fn.byte(W_Void);
    fn.f64Const(NaN); fn.set(L.pa); fn.f64Const(NaN); fn.set(L.pb);
    fn.byte(W_Else);
    fn.get(L.c); fn.byte(W_F64Neg); z(); fn.byte(W_F64Div); fn.set(L.pb);
    fn.f64Const(1); z(); fn.byte(W_F64Div); fn.set(L.pa);
    fn.byte(W_End);
  },
};

// Ops whose partials have no directional derivative (partialsTangent returns 0 and leaves
// partialZTangent 0): the piecewise-linear ones.
export const LINEAR = new Set<number>([Op.add, Op.sub, Op.neg, Op.abs, Op.min, Op.max, Op.relu]);

// The directional derivatives of the partials, as `partialsTangent` in assembly/ops.ts writes
// them (same operations, same order). Each leaves dpa on the stack; mul and div first leave dpb
// under it.
export interface Operands { x: Emit; z: Emit; y: Emit; tx: Emit; tz: Emit; ty: Emit }
export const SECOND_ORDER: Partial<Record<number, (fn: Bytes, o: Operands) => void>> = {
  // dpb = tx, dpa = tz
  [Op.mul]: (fn, o) => { o.tx(); o.tz(); },
  // dpb = ((tz != 0 && y != 0 ? y (tz / z) : 0) - ty) / z, dpa = y != y ? NaN : tz != 0 ? -tz / z / z : 0
  [Op.div]: (fn, o) => {
    o.y(); o.tz(); o.z(); fn.byte(W_F64Div); fn.byte(W_F64Mul); fn.f64Const(0);
    o.tz(); fn.f64Const(0); fn.byte(W_F64Ne); o.y(); fn.f64Const(0); fn.byte(W_F64Ne); fn.byte(W_I32And); fn.byte(W_Select);
    o.ty(); fn.byte(W_F64Sub); o.z(); fn.byte(W_F64Div);
    fn.f64Const(NaN);
    o.tz(); fn.byte(W_F64Neg); o.z(); fn.byte(W_F64Div); o.z(); fn.byte(W_F64Div); fn.f64Const(0); o.tz(); fn.f64Const(0); fn.byte(W_F64Ne); fn.byte(W_Select);
    o.y(); o.y(); fn.byte(W_F64Ne); fn.byte(W_Select);
  },
  // -2 y ty
  [Op.recip]: (fn, o) => { fn.f64Const(-2); o.y(); fn.byte(W_F64Mul); o.ty(); fn.byte(W_F64Mul); },
  // 2 tx
  [Op.square]: (fn, o) => { fn.f64Const(2); o.tx(); fn.byte(W_F64Mul); },
  // -0.5 ty / (y y)
  [Op.sqrt]: (fn, o) => { fn.f64Const(-0.5); o.ty(); fn.byte(W_F64Mul); o.y(); o.y(); fn.byte(W_F64Mul); fn.byte(W_F64Div); },
  // ty
  [Op.exp]: (_fn, o) => o.ty(),
};

// The SECOND_ORDER formulas whose product of a tangent and a second partial can meet 0·∞ (div by
// an infinite z, sqrt and recip where the partial underflows): where a tangent is infinite or NaN
// the core's partialsTangent computes them, a term per operand (assembly/ops.ts says why), as the
// interpreter does, bit for bit. (exp's ty is that product already; mul and square have none.)
export const SECOND_ORDER_BY_CORE_PAST_FINITE = new Set<number>([Op.div, Op.recip, Op.sqrt]);

/** Leaves 1 where the tangent tx, or tz of a binary op, is infinite or NaN (t − t is NaN there,
 *  and so is a sum with it). A unary op's tz is its tx. */
export function emitNonFiniteTangents(fn: Bytes, tx: Emit, tz: Emit | null): void {
  tx(); tx(); fn.byte(W_F64Sub);
  if (tz) { tz(); tz(); fn.byte(W_F64Sub); fn.byte(W_F64Add); }
  fn.f64Const(0); fn.byte(W_F64Ne);
}

/** dpa (and dpb of div) of an op SECOND_ORDER spells, stored by the setters, as the core's
 *  partialsTangent gives them: the core's rule past a finite tangent where the formula multiplies
 *  one into a second partial that can be 0, and 0 where every operand's tangent is 0 where the
 *  formula gives 0·∞ or 0/0 there (recip and sqrt at 0, div by 0; mul, square and exp give 0).
 *  `binary`: tz is its own operand's (a unary op's is its tx). `zeroDpb`: a caller that reads dpb
 *  of an op without one gets 0 there. Both tangent emitters take it from here. */
export function emitSecondOrder(
  fn: Bytes, op: number, o: Operands, binary: boolean, setDpa: Emit, setDpb: Emit, zeroDpb: boolean,
): void {
  const byCore = SECOND_ORDER_BY_CORE_PAST_FINITE.has(op);
  if (byCore) {
    emitNonFiniteTangents(fn, o.tx, binary ? o.tz : null);
    fn.byte(W_If); fn.byte(W_Void);
    emitCoreSecondOrder(fn, op, o, setDpa, setDpb);
    fn.byte(W_Else);
  }
  // It leaves dpa on the stack, with dpb under it for div.
  SECOND_ORDER[op]!(fn, o);
  setDpa();
  if (op === Op.div) setDpb();
  else if (zeroDpb) { fn.f64Const(0); setDpb(); }
  if (byCore) {
    o.tx(); fn.f64Const(0); fn.byte(W_F64Eq);
    if (binary) { o.tz(); fn.f64Const(0); fn.byte(W_F64Eq); fn.byte(W_I32And); }
    fn.byte(W_If); fn.byte(W_Void);
    fn.f64Const(0); setDpa();
    if (op === Op.div || zeroDpb) { fn.f64Const(0); setDpb(); }
    fn.byte(W_End);
    fn.byte(W_End);
  }
}

/** The core's partialsTangent of `op`: dpa, then dpb, each stored by its setter. */
export function emitCoreSecondOrder(fn: Bytes, op: number, o: Operands, setDpa: Emit, setDpb: Emit): void {
  fn.i32Const(op); o.x(); o.z(); o.y(); o.tx(); o.tz(); o.ty();
  fn.byte(W_Call); fn.u32(FN_PARTIALS_TANGENT); setDpa();
  fn.byte(W_Call); fn.u32(FN_PARTIAL_Z_TANGENT); setDpb();
}

// pa, pb for the tangent sweeps: add/sub/mul here, then the same as the reverse sweep.
export const TANGENT_PARTIAL: Partial<Record<number, (fn: Bytes, x: Emit, z: Emit, y: Emit, L: Locals) => void>> = {
  ...NATIVE_PARTIAL,
  [Op.add]: (fn, _x, _z, _y, L) => { fn.f64Const(1); fn.set(L.pa); fn.f64Const(1); fn.set(L.pb); },
  [Op.sub]: (fn, _x, _z, _y, L) => { fn.f64Const(1); fn.set(L.pa); fn.f64Const(-1); fn.set(L.pb); },
  [Op.mul]: (fn, x, z, _y, L) => { z(); fn.set(L.pa); x(); fn.set(L.pb); },
};
