// Vectors and matrices on the tape: a Vec is one array-valued node (n values and n adjoints in the
// engine's element regions), so an op over n elements is one node and one dispatch. Elementwise
// ops broadcast as NumPy does for trailing shapes; reductions return scalar Vars; matrices are
// row-major with a shape. The rules live in assembly/vector.ts and src/js/vector.ts.
import type { BinaryOps, UnaryOps } from './op-docs.ts';
import { NotANumberError, ShapeError, TapegradError, VEC_BRAND, checkHeld, countOf, describe, extraArgument, isArrayLike, newFloat64, typedArrayKind, unreadableError, unreadableView } from './errors.ts';
import { BINARY_OPS, ELEMENTWISE, Op, UNARY_OPS, type BinaryOpName, type UnaryOpName } from './ops.ts';
import { readOptions } from './options.ts';
import { Tape, Var, tapeArgument } from './tape.ts';

const {
  arg: ARG, select: SELECT, pow: POW, powConst: POW_CONST, vparam: VPARAM, vget: VGET, vsum: VSUM,
  vmax: VMAX, vmin: VMIN, vlogSumExp: VLSE, vdot: VDOT, vinput: VINPUT, vconst: VCONST, vmatmul: VMATMUL,
  vtranspose: VTRANSPOSE, vslice: VSLICE, vconcat: VCONCAT, vgather: VGATHER,
} = Op;

/** Anything an elementwise op takes besides a Vec: a scalar Var, a number, or a constant array
 *  (a plain array or Float64Array, recorded as one constant node). */
export type VecOperand = Vec | Var | number | ArrayLike<number>;

/** Shape of an array: [] for a scalar, [n] for a vector, [rows, cols] for a matrix. */
export type Shape = readonly number[];

/** @internal Elements of an array of `shape`. (A loop: reduce's callback allocated on a path
 *  every Vec operand takes, vindex's.) */
export function sizeOf(shape: Shape): number {
  let size = 1;
  for (let k = 0; k < shape.length; k++) size *= shape[k]!;
  return size;
}
const show = (shape: readonly (number | string)[]): string => `[${shape.join(', ')}]`;

/** `operand` and `data` let a caller that is given dimensions (the handle API) name the operand
 *  and its handle in the message. */
function checkShape(shape: Shape, n: number | null, what: string, operand = 'shape', data = 'the data'): Shape {
  // Read once, a hole as undefined: `some` skips holes, and [6, ,] passed as a shape whose
  // transpose had no elements (a probe); an accessor read again could change between the check
  // and the copy.
  // (At most 64 dimensions read: a sparse `new Array(2 ** 31)` would be copied whole.)
  const dims: unknown[] | undefined = Array.isArray(shape) && shape.length <= 64 ? Array.from(shape) : undefined;
  if (dims === undefined || dims.some((d) => !Number.isInteger(d) || (d as number) < 0)) {
    // No dimension is inferred: NumPy's -1 is refused with the rest. A dimension that is no
    // number at all is a NotANumberError, as everywhere a number is expected.
    const message = `${what}: a shape is an array of non-negative integers, got ${dims ? show(dims.map((d) => (typeof d === 'number' ? d : describe(d)))) : describe(shape)}`;
    throw dims?.some((d) => typeof d !== 'number') ? new NotANumberError(message) : new TapegradError('INVALID_ARGUMENT', message);
  }
  const checked = dims as number[];
  if (n !== null && sizeOf(checked) !== n) throw new ShapeError(`${what}: ${operand} ${show(checked)} holds ${sizeOf(checked)} elements, ${data} has ${n}`, what, [checked, [n]]);
  return Object.freeze(checked);
}

/** A reduction given an axis, which it does not take (NumPy's and JAX's do; a new-user probe's
 *  `M.sum(1)` summed every element, silently). */
function noAxis(name: string, axis: unknown): TapegradError {
  return extraArgument(`${name}: takes no axis, it reduces every element (for a matrix's rows take each row, M.reshape([m * n]).slice(r * n, (r + 1) * n), or for row sums M.matvec(ones))`, axis);
}

/** NumPy's rule for trailing shapes: equal, a scalar, or the shorter shape is the other's tail. */
export function broadcastShapes(op: string, shapes: readonly Shape[]): Shape {
  // Shapes from a caller are checked as reshape checks them ([2, -3] came back as a result; a
  // shape that was no array, or shapes that were none, threw a raw TypeError).
  if (!Array.isArray(shapes)) throw new TapegradError('INVALID_ARGUMENT', `${op}: broadcastShapes takes an array of shapes, got ${describe(shapes)}`);
  // Each checked before any is multiplied out (a BigInt dimension threw a raw TypeError from the
  // product: a probe), and the checked copies compared.
  return trailingBroadcast(op, Array.from(shapes, (s) => checkShape(s, null, op)));
}

function trailingBroadcast(op: string, shapes: readonly Shape[]): Shape {
  let out: Shape = [];
  for (const s of shapes) {
    if (s.length > out.length) {
      if (!endsWith(s, out)) throw broadcastError(op, shapes);
      out = s;
    } else if (!endsWith(out, s)) {
      throw broadcastError(op, shapes);
    }
  }
  return out;
}

function endsWith(long: Shape, tail: Shape): boolean {
  for (let k = 1; k <= tail.length; k++) if (long[long.length - k] !== tail[tail.length - k]) return false;
  return true;
}

function broadcastError(op: string, shapes: readonly Shape[]): ShapeError {
  // NumPy would stretch a trailing 1 ([n, 1] with [n] gives [n, n]); here that is an error, and
  // the usual intent is the reshape.
  const column = shapes.find((s) => s.length === 2 && s[1] === 1);
  // Against a matrix of as many rows, a column means a value per row, which [n] would add per
  // column instead (a probe followed the reshape hint there): the transpose does it.
  const perRow = column && shapes.some((s) => s.length === 2 && s[0] === column[0] && s[1] !== 1);
  // A flat array of a matrix's every element (a new-user probe): the shape it needs.
  const matrix = shapes.find((s) => s.length === 2), flat = shapes.find((s) => s.length === 1);
  const hint = !column ? (matrix && flat && flat[0] === matrix[0]! * matrix[1]! ? `; for the matrix's ${flat[0]} elements in row order, reshape that operand to [${matrix.join(', ')}] (a constant: tape.constantVector(values, [${matrix.join(', ')}]))` : '')
    : perRow ? `; for a value per row, transpose: ${shapes[0] === column ? `c.reshape([${column[0]}]).${op}(m.T).T` : `m.T.${op}(c.reshape([${column[0]}])).T`}`
    : `; for elementwise use, reshape the [${column[0]}, 1] operand to [${column[0]}] (no node is recorded)`;
  return new ShapeError(
    `${op}: shapes ${shapes.map(show).join(' and ')} do not broadcast (each must be a scalar, equal, or the other's trailing part, as [m, n] with [n])${hint}`,
    op, shapes,
  );
}

/** A resolved elementwise operand: node index and shape ([] for scalars). */
interface Resolved { index: number; shape: Shape }

// `count`: an array's length as the checks read it, which its constant records (a review: read
// again, a Proxy's that changed had an op recorded over the shape checked and a constant of
// another length, dot giving 50 for 140).
function resolve(tape: Tape, o: VecOperand, op: string, count = countOf(o)): Resolved {
  if (o instanceof Vec) return { index: tape.vindex(o, op), shape: o.shape };
  if (o instanceof Var) return { index: tape.index(o, op), shape: [] };
  if (typeof o === 'number') {
    tape.reserveNodes(1);
    return { index: tape.constantIndex(o), shape: [] };
  }
  if (count >= 0) return { index: tape.recordVectorLeaf(VCONST, o as ArrayLike<number>, count), shape: [count] };
  throw new NotANumberError(`${op}: expected a Vec, a Var, a number or an array of numbers, got ${describe(o)}`);
}

function checkEntries(values: ArrayLike<number>, n: number, op: string): void {
  // Here, before anything records: checked where its constant recorded, a typed array holding
  // other than n entries was refused after the operands before it had recorded theirs (a review).
  if (typedArrayKind(values) !== undefined) checkHeld(values as unknown as ArrayBufferView, n, op);
  for (let k = 0; k < n; k++) {
    if (typeof values[k] !== 'number') throw new NotANumberError(`${op}: array entries must be numbers, got ${describe(values[k])} at index ${k}`);
  }
}

/** Nodes and elements an operand records when resolved: a number is a constant node, an array a
 *  constant vector (its vmeta and vconst nodes, and its elements). */
function recordCost(o: unknown, count: number): [nodes: number, elements: number] {
  if (typeof o === 'number') return [1, 0];
  if (o instanceof Vec || o instanceof Var) return [0, 0];
  return [2, count];
}

/** Checks every operand before recording anything (constants included), so a bad operand or a
 *  shape error leaves the tape as it was. */
function precheck(tape: Tape, operands: readonly VecOperand[], op: string, counts: number[]): Shape {
  const shapes: Shape[] = [];
  for (const o of operands) {
    // An array's length read once (see resolve), into `counts` (-1 for anything else).
    const n = o instanceof Vec || o instanceof Var ? -1 : countOf(o);
    counts.push(n);
    if (o instanceof Vec) { tape.vindex(o, op); shapes.push(o.shape); }
    else if (o instanceof Var) { tape.index(o, op); shapes.push([]); }
    else if (typeof o === 'number') shapes.push([]);
    else if (n >= 0) { checkEntries(o as ArrayLike<number>, n, op); shapes.push([n]); }
    else throw new NotANumberError(`${op}: expected a Vec, a Var, a number or an array of numbers, got ${describe(o)}`);
  }
  return trailingBroadcast(op, shapes);
}

/** @internal Records scalar op `s` elementwise over the operands (one to three). */
export function elementwise(tape: Tape, s: number, name: string, operands: readonly VecOperand[]): Vec {
  const simple = s === SELECT ? null : elementwiseSimple(tape, s, name, operands);
  if (simple !== null) return simple;
  const counts: number[] = [];
  const shape = precheck(tape, operands, name, counts);
  const n = sizeOf(shape);
  // The engines repeat every shorter operand with one period. Only select, over three or more
  // dimensions, can meet two shorter lengths (c [k] with a [m, k] over [l, m, k]): the shorter
  // one is then tiled to the other's length first (a gather, or a longer constant array).
  const length = (o: VecOperand, j: number): number => (o instanceof Vec ? o.size : o instanceof Var || typeof o === 'number' ? 0 : counts[j]!);
  const period = Math.max(0, ...operands.map(length).filter((l) => l < n));
  const tiles = operands.map((o, j) => {
    const l = length(o, j);
    return l === 0 || l >= period ? null : Array.from({ length: period }, (_, k) => k % l);
  });
  const ready = operands.map((o, j) => (tiles[j] && !(o instanceof Vec) ? tiles[j]!.map((k) => (o as ArrayLike<number>)[k]!) : o));
  // Room for the operands' constants (and gathers) and the op together, so a full tape records none.
  let nodes = s === SELECT ? 3 : 2, elements = n;
  ready.forEach((o, j) => {
    const [k, e] = recordCost(o, tiles[j] ? period : counts[j]!);
    const gather = tiles[j] && o instanceof Vec;
    nodes += k + (gather ? 4 : 0);
    elements += e + (gather ? 2 * period : 0);
  });
  tape.reserveVector(nodes, elements);
  for (let j = 0; j < ready.length; j++) {
    const o = ready[j]!;
    if (tiles[j] && o instanceof Vec) ready[j] = o.gatherElements(tiles[j]!);
  }
  const [a, b, c] = ready.map((o, j) => resolve(tape, o, name, tiles[j] ? countOf(o) : counts[j]));
  let i: number;
  if (s === SELECT) i = tape.recordVector(ELEMENTWISE + s, a!.index, b!.index, n, [ARG], [c!.index, c!.index]);
  else i = tape.recordVector(ELEMENTWISE + s, a!.index, (b ?? a)!.index, n);
  return new Vec(tape, i, frozen(shape));
}

/** The commonest case in one pass, or null: a Vec, then nothing, a Vec of its shape, a Var or a
 *  number (no broadcasting of vectors, no arrays: the general path checks and records those). */
function elementwiseSimple(tape: Tape, s: number, name: string, operands: readonly VecOperand[]): Vec | null {
  const a = operands[0], b = operands.length > 1 ? operands[1] : a;
  if (!(a instanceof Vec) || operands.length > 2) return null;
  const ia = tape.vindex(a, name);
  const n = tape.elementLength(ia);
  let ib: number;
  if (b instanceof Vec) {
    ib = tape.vindex(b, name);
    if (!sameShape(a.shape, b.shape)) return null;
  } else if (b instanceof Var) ib = tape.index(b, name);
  else if (b instanceof Float64Array && ArrayBuffer.isView(b) && b.length === n && a.shape.length === 1) {
    // A Float64Array of a vector's length, the constant vector the general path records with
    // the same nodes, without its checks of shapes in arrays (8.5 times a number operand there,
    // 1.7 KB an op: a new-user probe).
    tape.reserveVector(4, 2 * n);
    return new Vec(tape, tape.recordVector(ELEMENTWISE + s, ia, tape.recordVectorLeaf(VCONST, b, n), n), a.shape);
  } else if (typeof b !== 'number') return null;
  // Room for the op (and a number's constant node) first, so a full tape records nothing.
  tape.reserveVector(typeof b === 'number' ? 3 : 2, n);
  if (typeof b === 'number') ib = tape.constantIndex(b);
  return new Vec(tape, tape.recordVector(ELEMENTWISE + s, ia, ib!, n), a.shape);
}

// Element i of vector node v as a scalar node (negative i counts from the end); returns its handle.
function recordGet(t: Tape, v: number, i: number): number {
  // Checked before any comparison: a symbol's threw a TypeError (a probe).
  if (typeof i !== 'number') throw new NotANumberError(`get: the index must be an integer, got ${describe(i)}`);
  const n = t.elementLength(v);
  const k = i < 0 ? n + i : i;
  if (!Number.isInteger(i)) throw new TapegradError('INVALID_ARGUMENT', `get: the index must be an integer, got ${describe(i)}`);
  if (k < 0 || k >= n) throw new TapegradError('INVALID_ARGUMENT', `get(${i}): index out of range for ${n} elements`);
  t.reserveNodes(1);
  return t.record(VGET, v, k);
}

function scalarOut(tape: Tape, op: number, ia: number, ib: number): Var {
  return new Var(tape, tape.record(op, ia, ib));
}

/**
 * An array-valued node of a tape: n values (row-major with `shape`) and, after a reverse sweep,
 * n adjoints. Every op of the table is a method applied elementwise (`v.exp()`, `v.mul(w)`, with
 * broadcasting); reductions (`sum`, `dot`, `logSumExp`…) return scalar Vars.
 */
export class Vec {
  /** [n] for a vector, [rows, cols] for a matrix. */
  // Declared, not a class field, as Var's are: a field's initializer runs in the constructor.
  declare readonly shape: Shape;

  /** @internal */
  constructor(
    /** The tape this Vec was recorded on. */
    readonly tape: Tape,
    index: number,
    shape: Shape,
  ) {
    // Private in the declarations; from JavaScript `new Vec()` threw a raw TypeError (a probe), as
    // `new Tape()` did. Made-up arguments make a Vec no reader takes (StaleHandleError).
    // (An object that is no tape, `new Vec({}, 0, [1])`, made a Vec whose every read was a raw
    // TypeError.)
    if (tape === null || typeof tape !== 'object' || typeof tape.vindex !== 'function') throw new TapegradError('INVALID_ARGUMENT', "a Vec comes from a tape's vector ops (tape.vector, tape.constantVector, a Vec's methods)");
    this.id = ~(index + tape.base);
    // Frozen by every caller (checkShape copies a caller's, `frozen` takes an op's own array): ops
    // trust a Vec's shape, and one changed in place (a computed Vec's, which its elementwise
    // results share) read past the elements (a probe: a trap of the core, and garbage on the JS
    // engine). Checked here, it cost every op about 30 ns (a review).
    this.shape = shape;
    Object.freeze(this);
  }

  /** The vector handle (a negative integer), usable with `tape.handles.vec`. */
  readonly id: number;

  /** Number of elements. */
  get size(): number {
    return this.tape.elementLength(this.tape.vindex(this, 'size'));
  }

  /** Number of elements (as `size`). */
  get length(): number {
    return this.tape.elementLength(this.tape.vindex(this, 'length'));
  }

  /** The values (a copy, row-major). */
  get value(): Float64Array {
    return this.tape.vectorValues(this.tape.vindex(this, 'value'));
  }

  /** d(seed * output)/d(this) per element from the last complete reverse sweep (a copy). */
  get grad(): Float64Array {
    return this.tape.vectorGrads(this.tape.vindex(this, 'grad'));
  }

  /** Element i as a scalar Var (row-major index for matrices; negative counts from the end). */
  get(i: number, j?: never): Var {
    // M.get(1, 2) read flat element 1 (a NumPy user's probe): one index, row-major.
    if (j !== undefined) throw extraArgument('get: takes one index, row-major (element i * columns + j of a matrix)', j);
    const t = this.tape, v = t.vindex(this, 'get');
    return new Var(t, recordGet(t, v, i));
  }

  /** Elements [start, end) of a vector (end defaults to the length; negative counts from the end). */
  slice(start: number, end?: number, step?: never): Vec {
    // NumPy's step was ignored: x.slice(0, 4, 2) gave all four (a probe).
    if (step !== undefined) throw extraArgument('slice: takes start and end, no step (gather takes any indices)', step);
    const t = this.tape, v = t.vindex(this, 'slice'), n = t.elementLength(v);
    if (this.shape.length > 1) throw new ShapeError(`slice: expects a vector, got shape ${show(this.shape)} (reshape it first)`, 'slice', [this.shape]);
    const from = clampIndex(start, n, 'start'), to = end === undefined ? n : clampIndex(end, n, 'end');
    const len = Math.max(0, to - from);
    return new Vec(t, t.recordVector(VSLICE, v, from, len), frozen([len]));
  }

  /** The same elements with another shape (no node recorded). */
  reshape(shape: Shape): Vec {
    const t = this.tape, v = t.vindex(this, 'reshape');
    return new Vec(t, v, checkShape(shape, t.elementLength(v), 'reshape'));
  }

  /** x[indices[k]] for each k of a vector (indices: integers in range, negative ones counting
   *  from the end, as `get`'s; the gather is one node). */
  gather(indices: ArrayLike<number>, axis?: never): Vec {
    if (axis !== undefined) throw extraArgument('gather: takes the indices alone, of a vector\'s elements', axis);
    // A matrix's elements row-major were picked where a NumPy user expects its rows (a probe's
    // X.gather([2, 0]) of a [3, 2] gave [5, 1]... as two numbers): refused, as slice refuses it.
    if (this.shape.length > 1) {
      throw new ShapeError(`gather: expects a vector, got shape ${show(this.shape)} (reshape it first to pick elements; for rows, slice each row of the reshaped vector and stack them)`, 'gather', [this.shape]);
    }
    return this.gatherElements(indices);
  }

  /** @internal gather over the elements row-major, of any shape (broadcasting tiles with it). */
  gatherElements(indices: ArrayLike<number>): Vec {
    const t = this.tape, base = t.base, v = t.vindex(this, 'gather'), n = t.elementLength(v);
    if (!isArrayLike(indices)) throw new NotANumberError(`gather: indices must be an array of integers, got ${describe(indices)}`);
    // An empty view whose buffer is gone gathered nothing, silently (a review).
    if (indices.length === 0 && unreadableView(indices)) throw unreadableError('gather: the indices');
    // Each index read once, into the copy the node records: read again after the checks, an
    // accessor could hand the node another index, or reset the tape in between (a probe's gather
    // then recorded on the reset tape and read its old memory).
    const count = indices.length, picked = newFloat64(count, 'gather');
    for (let k = 0; k < count; k++) {
      const j = indices[k]!;
      if (!Number.isInteger(j) || j < -n || j >= n) {
        const message = `gather: index ${describe(j)} at position ${k} ${Number.isInteger(j) ? `is out of range for ${n} elements` : 'is not an integer'}`;
        // Something else than a number is NOT_A_NUMBER, as README's errors table says of indices.
        throw typeof j === 'number' ? new TapegradError('INVALID_ARGUMENT', message) : new NotANumberError(message);
      }
      // The node holds the indices from the start (a probe's get(-1) took the last element and
      // gather([-1]) was refused).
      picked[k] = j < 0 ? n + j : j;
    }
    t.checkNotResetSince(base, 'gather');
    t.reserveVector(4, 2 * count);
    const idx = t.recordVectorLeaf(VCONST, picked);
    return new Vec(t, t.recordVector(VGATHER, v, idx, count), frozen([count]));
  }

  /** Σ x, over every element (no axis: see README for a matrix's rows). */
  sum(axis?: never): Var {
    if (axis !== undefined) throw noAxis('sum', axis);
    return this.reduce(VSUM, 'sum');
  }
  /** Σ x / n, over every element. */
  mean(axis?: never): Var {
    if (axis !== undefined) throw noAxis('mean', axis);
    // The composites check their Vec under their own name (a stale one's error named the op they
    // call first), and reserve what all their nodes take first: a failure part-way left orphans.
    this.tape.vindex(this, 'mean');
    this.tape.reserveVector(3, 0);
    return this.sum().div(this.size);
  }
  /** With no argument: the largest element (t tied maxima get 1/t of the gradient each; NaN if
   *  any is NaN). With one: the elementwise maximum (as the scalar op, ties split 1/2). */
  max(): Var;
  max(other: VecOperand): Vec;
  max(other?: VecOperand): Var | Vec {
    return other === undefined ? this.reduce(VMAX, 'max') : elementwise(this.tape, Op.max, 'max', [this, other]);
  }

  /** With no argument: the smallest element (ties as max); with one, the elementwise minimum. */
  min(): Var;
  min(other: VecOperand): Vec;
  min(other?: VecOperand): Var | Vec {
    return other === undefined ? this.reduce(VMIN, 'min') : elementwise(this.tape, Op.min, 'min', [this, other]);
  }
  /** log Σ exp(x), stable (the max is taken inside); one node whose adjoint is the softmax. */
  logSumExp(axis?: never): Var {
    if (axis !== undefined) throw noAxis('logSumExp', axis);
    return this.reduce(VLSE, 'logSumExp');
  }
  /** Σ x². */
  sumSquares(axis?: never): Var {
    if (axis !== undefined) throw noAxis('sumSquares', axis);
    return this.dot(this);
  }
  /** Euclidean norm sqrt(Σ x²) (its gradient at 0 is 0, as for x.square().sum().sqrt(): the
   *  zero partials 2x are skipped, so sqrt'(0) = Infinity never meets them). */
  norm(ord?: never): Var {
    // NumPy's ord or axis was ignored: the L2 norm of everything (a probe).
    if (ord !== undefined) throw extraArgument('norm: takes no order or axis, it is sqrt(Σ x²) over every element (abs().sum() is the 1-norm, abs().max() the ∞-norm)', ord);
    this.tape.vindex(this, 'norm');
    this.tape.reserveVector(2, 0);
    return this.sumSquares().sqrt();
  }
  /** x − logSumExp(x), as (x − m) − logSumExp(x − m) with m the largest element (whose gradient
   *  is stopped: the result does not move with it), so that the rounding of the log-sum-exp at
   *  large logits does not reach every entry, as x − logSumExp(x) would. */
  logSoftmax(axis?: never): Vec {
    if (axis !== undefined) throw noAxis('logSoftmax', axis);
    this.tape.reserveVector(7, 2 * this.tape.elementLength(this.tape.vindex(this, 'logSoftmax')));
    const shifted = this.shiftedByMax();
    return shifted.sub(shifted.logSumExp());
  }
  /** exp(x − m) / Σ exp(x − m), m as in logSoftmax: entries sum to 1 to rounding at any scale
   *  (exp(x − logSumExp(x)) gave 0.47 and 0.47 for logits 1e15, 1e15). */
  softmax(axis?: never): Vec {
    if (axis !== undefined) throw noAxis('softmax', axis);
    this.tape.reserveVector(9, 3 * this.tape.elementLength(this.tape.vindex(this, 'softmax')));
    const e = this.shiftedByMax().exp();
    return e.div(e.sum());
  }
  private shiftedByMax(): Vec { return this.sub(this.max().stopGradient()); }

  /** Σ x_k y_k over two arrays of the same shape: vectors, or matrices (the sum of their
   *  elementwise product); one node. A matrix and a vector are `matvec`/`matmul`. */
  dot(other: Vec | ArrayLike<number>): Var {
    const t = this.tape, v = t.vindex(this, 'dot');
    const b = this.operandShape(other, 'dot');
    if (sizeOf(b) !== this.size) throw new ShapeError(`dot: lengths differ, shapes ${show(this.shape)} and ${show(b)}${this.shape.length > 1 || b.length > 1 ? ': use matvec or matmul for a matrix' : ''}`, 'dot', [this.shape, b]);
    // Equal sizes are not enough: a [2, 3] matrix with a [6] vector is no inner product (NumPy's
    // dot refuses it too).
    if (!sameShape(this.shape, b)) throw new ShapeError(`dot: shapes differ, ${show(this.shape)} and ${show(b)}: reshape one, or use matvec or matmul`, 'dot', [this.shape, b]);
    const [k, e] = recordCost(other, sizeOf(b));
    t.reserveVector(k + 1, e);
    return scalarOut(t, VDOT, v, t.vindex(this.operandVec(other, b)));
  }

  /** Matrix product as NumPy's `@`: [m,k]·[k,p] → [m,p], [m,k]·[k] → [m], [m]·[m,k] → [k]. */
  matmul(other: Vec | ArrayLike<number>): Vec {
    this.tape.vindex(this, 'matmul');
    return this.product(other, this.operandShape(other, 'matmul'));
  }

  // matmul of an operand whose shape `b` operandShape gave (matvec, vecmat and trmv checked it
  // under their names: matmul's checks again read an array's entries twice, and trmv's its length
  // again after its mask had recorded, a review).
  private product(other: Vec | ArrayLike<number>, b: Shape): Vec {
    const t = this.tape, a = this.shape;
    let dims: [m: number, k: number, p: number, shape: Shape];
    if (a.length === 2 && b.length === 2 && a[1] === b[0]) dims = [a[0]!, a[1]!, b[1]!, [a[0]!, b[1]!]];
    else if (a.length === 2 && b.length === 1 && a[1] === b[0]) dims = [a[0]!, a[1]!, 1, [a[0]!]];
    else if (a.length === 1 && b.length === 2 && a[0] === b[0]) dims = [1, a[0]!, b[1]!, [b[1]!]];
    else throw new ShapeError(`matmul: shapes ${show(a)} and ${show(b)} do not fit (${a.length === 1 && b.length === 1 ? 'two vectors: use dot' : a.length > 2 || b.length > 2 || a.length === 0 || b.length === 0 ? 'it takes operands of 1 or 2 dimensions' : 'inner dimensions must agree'})`, 'matmul', [a, b]);
    const [m, k, p, shape] = dims;
    const [kc, e] = recordCost(other, sizeOf(b));
    t.reserveVector(kc + 3, e + m * p);
    return this.contract(this.operandVec(other, b), m, k, p, shape);
  }

  /** A·x for a matrix A [m, k] and a vector x [k]. */
  matvec(x: Vec | ArrayLike<number>): Vec {
    // This Vec checked under the call's name first: matmul's check named matmul (a probe).
    this.tape.vindex(this, 'matvec');
    const b = this.operandShape(x, 'matvec');
    if (this.shape.length !== 2 || b.length !== 1 || this.shape[1] !== b[0]) {
      throw new ShapeError(`matvec: expects a matrix [m, k] and a vector [k], got ${show(this.shape)} and ${show(b)}`, 'matvec', [this.shape, b]);
    }
    return this.product(x, b);
  }

  /** xᵀ·A for a vector x [m] and a matrix A [m, k]. */
  vecmat(a: Vec | ArrayLike<number>): Vec {
    this.tape.vindex(this, 'vecmat');
    const b = this.operandShape(a, 'vecmat');
    if (this.shape.length !== 1 || b.length !== 2 || this.shape[0] !== b[0]) {
      throw new ShapeError(`vecmat: expects a vector [m] and a matrix [m, k], got ${show(this.shape)} and ${show(b)}`, 'vecmat', [this.shape, b]);
    }
    return this.product(a, b);
  }

  /** x yᵀ: [m] and [p] → [m, p]. */
  outer(other: Vec | ArrayLike<number>): Vec {
    this.tape.vindex(this, 'outer');
    const b = this.operandShape(other, 'outer');
    if (this.shape.length !== 1 || b.length !== 1) throw new ShapeError(`outer: expects two vectors, got ${show(this.shape)} and ${show(b)}`, 'outer', [this.shape, b]);
    const [k, e] = recordCost(other, b[0]!);
    this.tape.reserveVector(k + 3, e + this.shape[0]! * b[0]!);
    return this.contract(this.operandVec(other, b), this.shape[0]!, 1, b[0]!, [this.shape[0]!, b[0]!]);
  }

  /** L·x with L [m, m] triangular: only the lower (default) or upper triangle of L is used. */
  trmv(x: Vec | ArrayLike<number>, options: { lower?: boolean | undefined } = {}): Vec {
    options = readOptions(options, 'trmv', { lower: 'boolean' });
    this.tape.vindex(this, 'trmv');
    const b = this.operandShape(x, 'trmv');
    const m = this.shape[0]!;
    if (this.shape.length !== 2 || this.shape[1] !== m || b.length !== 1 || b[0] !== m) {
      throw new ShapeError(`trmv: expects a square matrix [m, m] and a vector [m], got ${show(this.shape)} and ${show(b)}`, 'trmv', [this.shape, b]);
    }
    // The mask (a constant), the triangle selected from the matrix (select, so the other triangle
    // is never read: a NaN there stays out, and its gradient is exactly 0), x if it is an array,
    // and the product.
    const [k, e] = recordCost(x, m);
    this.tape.reserveVector(2 + 1 + 3 + k + 3, 2 * m * m + e + m);
    // x recorded first: its entries read again after the mask had recorded, a Proxy's could fail
    // with the mask and select left recorded (a review).
    const xv = this.operandVec(x, b), lower = options.lower ?? true;
    const mask = new Float64Array(m * m);
    for (let r = 0; r < m; r++) for (let c = 0; c < m; c++) mask[r * m + c] = (lower ? c <= r : c >= r) ? 1 : 0;
    return this.tape.select(this.tape.constantVector(mask, [m, m]), this, 0).product(xv, b);
  }

  /** The transpose of a matrix (a vector is returned as it is). */
  transpose(): Vec {
    const t = this.tape, v = t.vindex(this, 'transpose');
    if (this.shape.length < 2) return this;
    if (this.shape.length > 2) throw new ShapeError(`transpose: expects a matrix, got shape ${show(this.shape)}`, 'transpose', [this.shape]);
    const [m, k] = this.shape as [number, number];
    return new Vec(t, t.recordVector(VTRANSPOSE, v, v, m * k, [VPARAM], [m, k]), frozen([k, m]));
  }

  /** Alias of `transpose`. */
  get T(): Vec {
    return this.transpose();
  }

  /** `Vec(#n, shape [2, 3])`: its node's number (`~id`) and its shape. */
  toString(): string {
    return `Vec(#${~this.id}, shape ${show(this.shape)})`;
  }

  /** `Vec(#id, shape […])`, as `toString` (a Var's says why); its numbers are `v.value`. */
  toJSON(): string {
    return this.toString();
  }

  /** How Node's console and util.inspect show it (as Var's). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }

  private reduce(op: number, name: string): Var {
    const t = this.tape, v = t.vindex(this, name);
    t.reserveNodes(1);
    return scalarOut(t, op, v, v);
  }

  /** The shape of a Vec or array operand, checked without recording anything. */
  private operandShape(o: Vec | ArrayLike<number>, op: string): Shape {
    if (o instanceof Vec) {
      this.tape.vindex(o, op);
      return o.shape;
    }
    if (o instanceof Var) throw new ShapeError(`${op}: expects a Vec, got a scalar Var`, op, [this.shape, []]);
    // The length read once: the constant operandVec records has it (see resolve).
    const n = countOf(o);
    if (n >= 0) {
      checkEntries(o, n, op);
      return [n];
    }
    throw new NotANumberError(`${op}: expected a Vec or an array of numbers, got ${describe(o)}`);
  }

  /** The operand as a Vec (an array is recorded as a constant vector of the `shape` operandShape
   *  gave it). */
  private operandVec(o: Vec | ArrayLike<number>, shape: Shape): Vec {
    if (o instanceof Vec) return o;
    return new Vec(this.tape, this.tape.recordVectorLeaf(VCONST, o, shape[0]!), frozen(shape));
  }

  private contract(w: Vec, m: number, k: number, p: number, shape: Shape): Vec {
    const t = this.tape;
    return new Vec(t, t.recordVector(VMATMUL, t.vindex(this, 'matmul'), t.vindex(w, 'matmul'), m * p, [VPARAM], [m, k]), frozen(shape));
  }
}

Object.defineProperty(Vec.prototype, VEC_BRAND, { value: true });

function clampIndex(i: number, n: number, what: string): number {
  if (typeof i !== 'number') throw new NotANumberError(`slice: ${what} must be an integer, got ${describe(i)}`);
  if (!Number.isInteger(i)) throw new TapegradError('INVALID_ARGUMENT', `slice: ${what} must be an integer, got ${describe(i)}`);
  return Math.min(n, Math.max(0, i < 0 ? n + i : i));
}

// The op methods, elementwise, with the scalar ops' documentation (op-docs.ts); max and min
// are the class's own (reductions without an operand, or elementwise with one).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Vec extends UnaryOps<[], Vec>, Omit<BinaryOps<[y: VecOperand], Vec>, 'max' | 'min'> {}

// An op method named after its op: named by the descriptor's key, each was `value`, and a stack
// trace through `v.add(w)` read `at Vec.value` (a probe).
function opMethod(name: string, method: (this: never, ...operands: never[]) => unknown): PropertyDescriptor {
  Object.defineProperty(method, 'name', { value: name });
  return { value: method, writable: true, configurable: true };
}

for (const name of UNARY_OPS) {
  const code = Op[name];
  Object.defineProperty(Vec.prototype, name, opMethod(name, function (this: Vec): Vec { return elementwise(this.tape, code, name, [this]); }));
}
for (const name of BINARY_OPS) {
  const code = Op[name];
  if (name === 'max' || name === 'min') continue; // reductions with no argument, see the class
  Object.defineProperty(Vec.prototype, name, opMethod(name, function (this: Vec, other: VecOperand): Vec {
    // x.pow(2.5): a constant exponent never touches log x, as for scalars.
    const op = code === POW && typeof other === 'number' ? POW_CONST : code;
    return elementwise(this.tape, op, name, [this, other]);
  }));
}

/** @internal Concatenation of scalars and vectors (flattened, or along rows of matrices). */
export function concatOn(tape: Tape, parts: readonly (Vec | Var | number)[], what: string): Vec {
  if (!Array.isArray(parts)) throw new NotANumberError(`${what}: expected an array, got ${describe(parts)}`);
  let n = 0, rows = 0;
  let tail: Shape | null = null;
  let constants = 0;
  for (const p of parts) {
    if (p instanceof Vec) {
      tape.vindex(p, what);
      n += p.size;
      const t = p.shape.slice(1);
      if (p.shape.length >= 2) {
        // After vectors or scalars (tail []), the same error as before them (a probe: "rows of shape []").
        if (tail !== null && !sameShape(tail, t)) throw new ShapeError(`${what}: ${tail.length ? `rows of shape ${show(tail)} and ${show(t)} do not stack` : 'cannot join a matrix and a vector or scalar'} (shapes ${showAll(parts)})`, what, parts.map(shapeOf));
        tail = t;
        rows += p.shape[0]!;
      } else {
        rows += p.size;
        if (tail !== null && tail.length > 0) throw new ShapeError(`${what}: cannot join a matrix and a vector (shapes ${showAll(parts)})`, what, parts.map(shapeOf));
        tail = [];
      }
    } else if (p instanceof Var) {
      tape.index(p, what); n++; rows++;
      if (tail !== null && tail.length > 0) throw new ShapeError(`${what}: cannot join a matrix and a scalar (shapes ${showAll(parts)})`, what, parts.map(shapeOf));
      tail = [];
    } else if (typeof p === 'number') {
      n++; rows++; constants++;
      if (tail !== null && tail.length > 0) throw new ShapeError(`${what}: cannot join a matrix and a scalar (shapes ${showAll(parts)})`, what, parts.map(shapeOf));
      tail = [];
    } else {
      throw new NotANumberError(`${what}: expected Vecs, Vars or numbers, got ${describe(p)}`);
    }
  }
  const carriers = (parts.length + 1) >> 1;
  tape.reserveVector(constants + carriers + 2, n);
  const ids = parts.map((p) => (p instanceof Vec ? tape.vindex(p) : p instanceof Var ? tape.index(p) : tape.constantIndex(p)));
  const ops: number[] = [], pairs: number[] = [];
  for (let c = 0; c < carriers; c++) {
    ops.push(ARG);
    pairs.push(ids[2 * c]!, ids[2 * c + 1] ?? ids[2 * c]!);
  }
  const i = tape.recordVector(VCONCAT, parts.length, 0, n, ops, pairs);
  return new Vec(tape, i, frozen(tail !== null && tail.length > 0 ? [rows, ...tail] : [n]));
}

// An op's own shape array, frozen for its Vec (a shape that is frozen already stays as it is).
const frozen = (shape: Shape): Shape => (Object.isFrozen(shape) ? shape : Object.freeze(shape as number[]));

// A loop: `every` over the frozen shapes took about 60 ns an op (a review).
function sameShape(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return false;
  return true;
}

function shapeOf(p: unknown): Shape {
  return p instanceof Vec ? p.shape : [];
}

function showAll(parts: readonly unknown[]): string {
  return parts.map((p) => show(shapeOf(p))).join(', ');
}

/** @internal */
export function vectorOf(tape: Tape, op: number, values: ArrayLike<number>, shape: Shape | undefined, what: string): Vec {
  // The length read once (see countOf).
  const n = countOf(values);
  if (n < 0) throw new NotANumberError(`${what}: expected an array of numbers or a Float64Array, got ${describe(values)}`);
  const s = shape === undefined ? [n] : checkShape(shape, n, what);
  // Room first, as variables makes it (the ops' constants are reserved with the op): a vector
  // past the limits was read whole before its CapacityError (a probe: 10^8 entries read for 29 s
  // into a tape of 10 KB).
  tape.reserveVector(2, n);
  return new Vec(tape, tape.recordVectorLeaf(op, values, n), frozen(s));
}

// ───────────────────────────── handles ─────────────────────────────

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface VectorHandleApi extends UnaryOps<[h: number], number>, BinaryOps<[h1: number, h2: number], number> {}

/**
 * Vector handles: negative integers naming array-valued nodes, for code that records without
 * objects. Elementwise ops take vector handles and scalar handles (broadcast); a shorter vector
 * repeats over a longer one whose length it divides. Matrices are described by their dimensions.
 */
export class VectorHandleApi {
  /** The tape these vector handles name nodes of. */
  declare readonly tape: Tape;
  constructor(tape: Tape) {
    // As HandleApi's: anything but a Tape failed at the first call with a raw TypeError (a probe).
    if (!(tape instanceof Tape)) throw new TapegradError('INVALID_ARGUMENT', `new VectorHandleApi(tape) takes a Tape (from createTape or createTapeSync), got ${tapeArgument(tape)}`);
    this.tape = tape;
  }

  /** An input vector; returns its handle. */
  variable(values: ArrayLike<number>): number { return this.handle(vectorOf(this.tape, VINPUT, values, undefined, 'vector')); }
  /** A constant vector; returns its handle. */
  constant(values: ArrayLike<number>): number { return this.handle(vectorOf(this.tape, VCONST, values, undefined, 'constant vector')); }
  /** Element k as a scalar handle. */
  get(h: number, k: number): number { return recordGet(this.tape, this.tape.vindexOfHandle(h, 'get'), k); }
  /** Number of elements. */
  length(h: number): number { return this.tape.elementLength(this.tape.vindexOfHandle(h, 'length')); }
  /** Σ of the elements, as a scalar handle (no axis: see README for a matrix's rows). */
  sum(h: number, axis?: never): number { return this.reduce(VSUM, h, 'sum', axis); }
  /** With one handle the largest element (a scalar handle); with two the elementwise maximum. */
  max(h: number, h2?: number): number { return h2 === undefined ? this.reduce(VMAX, h, 'max') : this.elementwise2(Op.max, 'max', h, h2); }
  /** With one handle the smallest element (a scalar handle); with two the elementwise minimum. */
  min(h: number, h2?: number): number { return h2 === undefined ? this.reduce(VMIN, h, 'min') : this.elementwise2(Op.min, 'min', h, h2); }
  /** log Σ exp of the elements, stable (the max is taken inside), as a scalar handle. */
  logSumExp(h: number, axis?: never): number { return this.reduce(VLSE, h, 'logSumExp', axis); }
  /** Σ x_k y_k of two vectors of the same length (ShapeError otherwise), as a scalar handle. */
  dot(h1: number, h2: number): number {
    const t = this.tape, a = t.vindexOfHandle(h1, 'dot'), b = t.vindexOfHandle(h2, 'dot');
    if (t.elementLength(a) !== t.elementLength(b)) return this.scalar(this.wrap(h1, undefined, 'dot').dot(this.wrap(h2, undefined, 'dot')));
    t.reserveVector(1, 0);
    return t.record(VDOT, a, b);
  }
  /** A [m, k] times x [k] → [m]. */
  matvec(a: number, x: number, m: number, k: number): number {
    return this.handle(this.wrap(a, [m, k], 'matvec', 'matrix [m, k] =').matvec(this.wrap(x, [k], 'matvec', 'vector [k] =')));
  }
  /** A [m, k] times B [k, p] → [m, p]. */
  matmul(a: number, b: number, m: number, k: number, p: number): number {
    return this.handle(this.wrap(a, [m, k], 'matmul', 'matrix [m, k] =').matmul(this.wrap(b, [k, p], 'matmul', 'matrix [k, p] =')));
  }
  /** `cond ? ifTrue : ifFalse` per element; any of the three may be a scalar handle. */
  select(cond: number, ifTrue: number, ifFalse: number): number {
    // As the other elementwise ops: a shorter vector repeats over a longer one it divides.
    return this.elementwise(SELECT, 'select', [cond, ifTrue, ifFalse]);
  }
  /** The values (a copy). */
  value(h: number): Float64Array { return this.tape.vectorValues(this.tape.vindexOfHandle(h, 'value')); }
  /** The adjoints from the last reverse sweep (a copy). */
  grad(h: number): Float64Array { return this.tape.vectorGrads(this.tape.vindexOfHandle(h, 'grad')); }
  /** Wraps a vector handle as a Vec (shape [n] unless given). */
  toVec(h: number, shape?: Shape): Vec { return this.wrap(h, shape); }

  private wrap(h: number, shape?: Shape, op = 'toVec', operand?: string): Vec {
    const i = this.tape.vindexOfHandle(h, op);
    const n = this.tape.elementLength(i);
    return new Vec(this.tape, i, shape === undefined ? frozen([n]) : checkShape(shape, n, op, operand, `vector handle ${h}`));
  }
  /** A vector handle as a Vec, a scalar handle as a Var (for broadcasting); its errors name op
   *  `s` and, for a number, say to record it first, as the scalar handles' do (a probe read
   *  "toVar:", and no hint, from h.vec.mul(v, 3)). */
  private any(h: number, op: string, s: number): Vec | Var {
    if (typeof h === 'number' && h < 0) return this.wrap(h, undefined, op);
    this.tape.indexOfHandle(h, s);
    return new Var(this.tape, h);
  }
  // The node Vec's reduction records, with no Vec and no Var made for it. An axis is refused as
  // Vec's reductions refuse it (a probe's h.vec.sum(M, 1) summed every element).
  private reduce(op: number, h: number, name: string, axis?: unknown): number {
    if (axis !== undefined) throw noAxis(name, axis);
    const t = this.tape, v = t.vindexOfHandle(h, name);
    t.reserveNodes(1);
    return t.record(op, v, v);
  }
  private handle(v: Vec): number { return v.id; }
  private scalar(v: Var): number { return v.id; }

  /** @internal A unary op, or a binary one of a vector handle and a vector handle of its length
   *  or a scalar handle: the node the general path below records, without wrapping the operands
   *  in Vecs (which cost 82-192 bytes and 0.7-1 µs an op, ten times a Vec op). */
  elementwise2(s: number, name: string, h1: number, h2: number): number {
    if (typeof h1 === 'number' && typeof h2 === 'number' && (h1 < 0 || (h1 >= 0 && h2 < 0))) {
      const t = this.tape;
      let ia: number, ib: number, n: number;
      if (h1 < 0) {
        ia = ib = t.vindexOfHandle(h1, name);
        n = t.elementLength(ia);
        if (h2 >= 0) ib = t.indexOfHandle(h2, s);
        else if (h2 !== h1) {
          ib = t.vindexOfHandle(h2, name);
          if (t.elementLength(ib) !== n) return this.elementwise(s, name, [h1, h2]);
        }
      } else {
        // A scalar handle, then a vector handle: the general path records the same node.
        ia = t.indexOfHandle(h1, s);
        ib = t.vindexOfHandle(h2, name);
        n = t.elementLength(ib);
      }
      t.reserveVector(2, n);
      return ~(t.recordVector(ELEMENTWISE + s, ia, ib, n) + t.base);
    }
    return this.elementwise(s, name, h1 === h2 ? [h1] : [h1, h2]);
  }

  /** @internal Elementwise op over handles: lengths equal, scalar, or a divisor (repeated). */
  elementwise(s: number, name: string, hs: readonly number[]): number {
    const operands = hs.map((h) => this.any(h, name, s));
    // The longest vector's length, 0 included (an empty vector with scalars is an empty result).
    const sizes = operands.flatMap((o) => (o instanceof Vec ? [o.size] : []));
    // Scalars alone made a 1-element vector (found by a new-user probe).
    if (sizes.length === 0) throw new ShapeError(`${name}: no vector handle among the operands; tape.handles.${name} takes scalar handles`, name, []);
    // Each length a divisor of the next: length l_j is [l_j / l_(j-1), ..., l_2 / l_1, l_1], the
    // trailing part of every longer one's (a shorter operand presented as [n / len, len] alone
    // refused three lengths 2, 4, 8).
    const lengths = [...new Set(sizes)].sort((a, b) => a - b);
    for (let j = 1; j < lengths.length; j++) {
      if (lengths[j - 1] === 0 || lengths[j]! % lengths[j - 1]! !== 0) {
        throw new ShapeError(`${name}: lengths ${lengths[j - 1]} and ${lengths[j]} do not broadcast (each must divide the next longer one)`, name, [[lengths[j - 1]!], [lengths[j]!]]);
      }
    }
    const final = operands.map((o) => {
      if (!(o instanceof Vec)) return o;
      const shape = [];
      for (let j = lengths.indexOf(o.size), len = o.size; j >= 0; len = lengths[--j]!) shape.push(j > 0 ? len / lengths[j - 1]! : len);
      return o.reshape(shape);
    });
    return this.handle(elementwise(this.tape, s, name, final));
  }
}

for (const name of UNARY_OPS) {
  const code = Op[name];
  Object.defineProperty(VectorHandleApi.prototype, name, opMethod(name, function (this: VectorHandleApi, h: number): number { return this.elementwise2(code, name, h, h); }));
}
for (const name of BINARY_OPS) {
  const code = Op[name];
  if (name === 'max' || name === 'min') continue; // reductions with one handle, see the class
  Object.defineProperty(VectorHandleApi.prototype, name, opMethod(name, function (this: VectorHandleApi, h1: number, h2: number): number {
    return this.elementwise2(code, name, h1, h2);
  }));
}

