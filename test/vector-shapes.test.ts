// Broadcasting and shapes: what each op returns (values and shape), NumPy's trailing-shape rule
// without stretching of size-1 dimensions, and every shape error: a ShapeError (code 'SHAPE')
// naming the op and both shapes, after which the tape is unchanged (nothing recorded, no elements
// taken) and works as before. Both engines.
import { describe, expect, it } from 'vitest';
import {
  NotANumberError, ShapeError, TapegradError, Vec, broadcastShapes, where, type Shape, type Tape, type Var,
} from '../src/index.ts';
import { BACKENDS, tapeOn } from './support.ts';
import { thrownWithoutRecording } from './vector-cases.ts';

/** The tape after an error: same nodes, same elements, and a fresh computation still works. */
function expectUnchanged(tape: Tape, size: number, elements: number): void {
  expect(tape.size, 'nothing recorded').toBe(size);
  expect(tape.elementCount, 'no elements taken').toBe(elements);
  const v = tape.vector([1, 2, 3]);
  const y = v.mul(v).sum();
  expect(y.value).toBe(14);
  expect(Array.from(tape.gradient(y, [v]))).toEqual([2, 4, 6]);
}

/** The action throws a ShapeError for `op` with `shapes`, whose message starts with the op and
 *  shows every shape (unless `named` is false: then `message` says what it names instead), and
 *  leaves the tape as it was. */
function expectShapeError(tape: Tape, action: () => unknown, op: string, shapes: Shape[], message: RegExp, named = true): ShapeError {
  const size = tape.size, elements = tape.elementCount;
  const error = thrownWithoutRecording(tape, action, op);
  expect(error, `${op}: expected a ShapeError`).toBeInstanceOf(ShapeError);
  const e = error as ShapeError;
  expect(e).toBeInstanceOf(TapegradError);
  expect(e.code).toBe('SHAPE');
  expect(e.name).toBe('ShapeError');
  expect(e.op).toBe(op);
  expect(e.shapes.map((s) => [...s])).toEqual(shapes);
  if (named) {
    expect(e.message).toMatch(new RegExp(`^${op}: `));
    for (const s of shapes) expect(e.message).toContain(`[${s.join(', ')}]`);
  }
  expect(e.message).toMatch(message);
  expectUnchanged(tape, size, elements);
  return e;
}

describe('broadcastShapes: the trailing-shape rule', () => {
  it('equal shapes, scalars and trailing parts broadcast; nothing else does', () => {
    expect(broadcastShapes('add', [[3], [3]])).toEqual([3]);
    expect(broadcastShapes('add', [[], [4]])).toEqual([4]);
    expect(broadcastShapes('add', [[2, 3], []])).toEqual([2, 3]);
    expect(broadcastShapes('add', [[2, 3], [3]])).toEqual([2, 3]);
    expect(broadcastShapes('add', [[3], [2, 3]])).toEqual([2, 3]);
    expect(broadcastShapes('select', [[3], [2, 3], []])).toEqual([2, 3]);
    expect(broadcastShapes('neg', [[]])).toEqual([]);
    // No stretching of 1s: [1] is not [3], [2, 1] is not [2, 3], and leading parts do not count.
    for (const shapes of [[[1], [3]], [[2, 1], [2, 3]], [[2, 3], [2]], [[3], [4]], [[2, 3], [3, 2]]] as Shape[][]) {
      expect(() => broadcastShapes('mul', shapes)).toThrow(ShapeError);
    }
    // A shape no op would take is refused as reshape refuses it (a probe got [2, -3] back).
    for (const bad of [[2, -3], [1.5], [NaN]] as Shape[]) {
      expect(() => broadcastShapes('add', [bad])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^add: a shape is an array of non-negative integers/) }));
    }
    // Shapes that are no arrays, or no array of shapes: raw TypeErrors before (a probe).
    for (const shapes of [[[2, 3], 3], [null], [undefined], [{ length: 1 }]] as unknown as Shape[][]) {
      expect(() => broadcastShapes('add', shapes)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^add: a shape is an array of non-negative integers/) }));
    }
    for (const shapes of [undefined, 3, 'ab', { 0: [3] }] as unknown as Shape[][]) {
      expect(() => broadcastShapes('add', shapes)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^add: broadcastShapes takes an array of shapes/) }));
    }
    // A dimension that is no number is NotANumberError, as tape.vector names it (a BigInt or a
    // Symbol threw a raw TypeError from the shape's product, taken before the check: a probe).
    for (const dim of [2n, Symbol('d'), '2']) {
      expect(() => broadcastShapes('add', [[dim as unknown as number], [2]])).toThrow(expect.objectContaining({ name: 'NotANumberError', message: expect.stringMatching(/^add: a shape is an array of non-negative integers/) }));
    }
  });
});

describe.each(BACKENDS)('broadcasting and result shapes (%s)', (backend) => {
  it('elementwise results: values and shapes of every broadcasting form', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3]);
    const M = tape.vector([10, 20, 30, 40, 50, 60], [2, 3]);
    const s = tape.variable(0.5);
    const T = tape.vector(Array.from({ length: 12 }, (_, k) => 100 + k), [2, 2, 3]);
    const cases: [Vec, Shape, number[]][] = [
      [v.add(v), [3], [2, 4, 6]],
      [v.mul(s), [3], [0.5, 1, 1.5]],
      [v.sub(2), [3], [-1, 0, 1]],
      [v.div([2, 4, 8]), [3], [0.5, 0.5, 0.375]],
      [M.add(v), [2, 3], [11, 22, 33, 41, 52, 63]],
      [v.sub(M), [2, 3], [-9, -18, -27, -39, -48, -57]],
      [M.mul(M), [2, 3], [100, 400, 900, 1600, 2500, 3600]],
      [M.max(25), [2, 3], [25, 25, 30, 40, 50, 60]],
      [M.pow(0.5).square(), [2, 3], [10, 20, 30, 40, 50, 60].map((x) => Math.sqrt(x) ** 2)],
      [v.gt(2), [3], [0, 0, 1]],
      [tape.select(v.gt(1.5), M, 0), [2, 3], [0, 20, 30, 0, 50, 60]],
      [where(v.lt(3), v, s) as Vec, [3], [1, 2, 0.5]],
      [tape.select(M.gt(35), v, s), [2, 3], [0.5, 0.5, 0.5, 1, 2, 3]],
      // Over three dimensions two operands may be shorter than the result, with different lengths.
      [tape.select([1, 0, 1], M, T), [2, 2, 3], [10, 101, 30, 40, 104, 60, 10, 107, 30, 40, 110, 60]],
      [tape.select(M.gt(35), v, T), [2, 2, 3], [100, 101, 102, 1, 2, 3, 106, 107, 108, 1, 2, 3]],
      [tape.select(v.gt(1), T, M), [2, 2, 3], [10, 101, 102, 40, 104, 105, 10, 107, 108, 40, 110, 111]],
      [T.add(M), [2, 2, 3], [110, 121, 132, 143, 154, 165, 116, 127, 138, 149, 160, 171]],
    ];
    for (const [r, shape, values] of cases) {
      expect(r.shape).toEqual(shape);
      expect(r.size).toBe(values.length);
      expect(Array.from(r.value)).toEqual(values);
    }
    // The row vector's gradient sums over the rows; the scalar's over every element.
    const y = M.mul(v).add(s).sum();
    expect(Array.from(tape.gradient(y, [v, s, M]))).toEqual([50, 70, 90, 6, 1, 2, 3, 1, 2, 3]);
    // Through the tiled select: v's adjoint gathers both rows of both blocks.
    const z = tape.select(M.gt(35), v, T).mul(T).sum();
    expect(Array.from(tape.gradient(z, [v, M, T]))).toEqual([
      103 + 109, 104 + 110, 105 + 111, // v: the T it meets, in both blocks
      0, 0, 0, 0, 0, 0, // M: only the condition
      200, 202, 204, 1, 2, 3, 212, 214, 216, 1, 2, 3, // T: 2T where T was taken, else v
    ]);
  });

  it('array ops: result shapes and values', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3]);
    const M = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const expectVec = (r: Vec, shape: Shape, values: number[]): void => {
      expect(r.shape).toEqual(shape);
      expect(Array.from(r.value)).toEqual(values);
    };
    expectVec(M.matvec(v), [2], [14, 32]);
    expectVec(M.matmul(v), [2], [14, 32]);
    expectVec(tape.vector([1, -1]).vecmat(M), [3], [-3, -3, -3]);
    expectVec(tape.vector([1, -1]).matmul(M), [3], [-3, -3, -3]);
    expectVec(M.matmul(M.T), [2, 2], [14, 32, 32, 77]);
    expectVec(M.T.matmul(M), [3, 3], [17, 22, 27, 22, 29, 36, 27, 36, 45]);
    expectVec(M.transpose(), [3, 2], [1, 4, 2, 5, 3, 6]);
    expect(v.transpose()).toBe(v);
    expectVec(v.outer([1, 10]), [3, 2], [1, 10, 2, 20, 3, 30]);
    expectVec(tape.vector([1, 2, 3, 4], [2, 2]).trmv([1, 1]), [2], [1, 7]);
    expectVec(tape.vector([1, 2, 3, 4], [2, 2]).trmv([1, 1], { lower: false }), [2], [3, 4]);
    // The product of the masked matrix (README): an infinite x entry meets the other triangle's
    // zeros, NaN in the row that leaves it out (BLAS's dtrmv gives 4 there).
    expectVec(tape.vector([1, 0, 3, 4], [2, 2]).trmv([Infinity, 1], { lower: false }), [2], [Infinity, NaN]);
    // The reductions' identities on an empty vector (README; NumPy raises).
    expect([tape.vector([]).max().value, tape.vector([]).min().value]).toEqual([-Infinity, Infinity]);
    expectVec(M.reshape([3, 2]), [3, 2], [1, 2, 3, 4, 5, 6]);
    expect(M.reshape([6]).id).toBe(M.id);
    expectVec(v.slice(1), [2], [2, 3]);
    expectVec(v.slice(-2, -1), [1], [2]);
    expectVec(v.slice(2, 1), [0], []);
    expectVec(v.slice(-10, 10), [3], [1, 2, 3]);
    // The reductions take no axis (NumPy's and JAX's do): one given is refused, not ignored (a
    // new-user probe's M.sum(1) summed every element).
    const withAxis = M as unknown as Record<'sum' | 'mean' | 'logSumExp' | 'softmax' | 'logSoftmax', (axis: number) => unknown>;
    for (const reduce of [() => withAxis.sum(1), () => withAxis.mean(0), () => withAxis.logSumExp(1), () => withAxis.softmax(1), () => withAxis.logSoftmax(-1)]) {
      expect(reduce).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^\w+: takes no axis, it reduces every element \(for a matrix's rows.*; got number -?\d there/) }));
    }
    expect(M.sum().value).toBe(21);
    // The handle API's reductions alike (a probe's h.vec.sum(M, 1) summed every element).
    const hv = tape.handles.vec as unknown as Record<'sum' | 'logSumExp', (h: number, axis: number) => number>;
    for (const reduce of [() => hv.sum(M.id, 1), () => hv.logSumExp(M.id, 0)]) {
      expect(reduce).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^(sum|logSumExp): takes no axis, it reduces every element \(for a matrix's rows.*; got number \d there/) }));
    }
    expect(tape.handles.value(tape.handles.vec.sum(M.id))).toBe(21);
    // NumPy's extra arguments elsewhere, ignored before (a NumPy user's probe): refused, and a
    // matrix's gather, which picked elements where rows were meant.
    const loose = M as unknown as { get(i: number, j: number): Var; norm(ord: number): Var; sumSquares(axis: number): Var; gather(i: number[], axis?: number): Vec };
    const looseV = v as unknown as { slice(a: number, b: number, step: number): Vec; gather(i: number[], axis: number): Vec };
    const looseTape = tape as unknown as { stack(parts: Vec[], axis: number): Vec; concat(parts: Vec[], axis: number): Vec };
    for (const [call, message] of [
      [() => loose.get(1, 2), /^get: takes one index, row-major/], [() => loose.norm(1), /^norm: takes no order or axis/], [() => loose.sumSquares(1), /^sumSquares: takes no axis/],
      [() => looseV.slice(0, 3, 2), /^slice: takes start and end, no step/], [() => looseV.gather([0], 0), /^gather: takes the indices alone/],
      [() => looseTape.stack([v, v], 1), /^stack: takes no axis/], [() => looseTape.concat([M, M], 1), /^concat: takes no axis/],
    ] as const) expect(call).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) }));
    expect(() => loose.gather([2, 0])).toThrow(expect.objectContaining({ code: 'SHAPE', message: expect.stringMatching(/^gather: expects a vector, got shape \[2, 3\] \(reshape it first/) }));
    expectVec(M.reshape([6]).gather([5, 0]), [2], [6, 1]);
    // An Array method's callback passes the element's index as a second argument, which the
    // message names (a review: it spoke of a second index nobody wrote).
    expect(() => [0, 2].map(v.get as unknown as (i: number, j: number) => Var, v)).toThrow(/^get: takes one index, row-major .*; got number 0 there \(map, forEach and the other Array methods pass their callback the element's index too/);
    expect([0, 2].map((i) => v.get(i).value)).toEqual([1, 3]);
    // Bounds clamped to the vector, as Array.prototype.slice (README).
    expectVec(v.slice(2, 5), [1], [3]);
    expectVec(v.slice(5), [0], []);
    expectVec(v.gather([2, 2, 0]), [3], [3, 3, 1]);
    expectVec(tape.concat([v, 7, tape.variable(8), v.slice(0, 1)]), [6], [1, 2, 3, 7, 8, 1]);
    expectVec(tape.concat([M, tape.vector([7, 8, 9], [1, 3])]), [3, 3], [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expectVec(tape.stack([v, v.neg()]), [2, 3], [1, 2, 3, -1, -2, -3]);
    expectVec(tape.stack([1, tape.variable(2), 3]), [3], [1, 2, 3]);
    // Nothing to stack: an empty vector (README says so; NumPy raises).
    expectVec(tape.stack([]), [0], []);
    // Matrices as NumPy stacks them, along a new first axis (they were joined end to end: two
    // [2, 3] gave [4, 3], a new-user probe).
    expectVec(tape.stack([M, M.neg()]), [2, 2, 3], [1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, -6]);
    expectVec(tape.stack([tape.vector([1, 2], [2, 1]), tape.vector([3, 4], [2, 1])]), [2, 2, 1], [1, 2, 3, 4]);
    expectVec(tape.vector([1, 2, 3, 4, 5, 6], [3, 2]), [3, 2], [1, 2, 3, 4, 5, 6]);
    expectVec(tape.constantVector([5, 6], [1, 2]), [1, 2], [5, 6]);
    expect(M.get(4).value).toBe(5);
    expect(M.get(-1).value).toBe(6);
    expect(v.mean().value).toBe(2);
    expect(tape.vector([3, 4]).norm().value).toBe(5);
    expect(M.size).toBe(6);
    expect(M.length).toBe(6);
  });
});

describe.each(BACKENDS)('every shape error is a ShapeError that records nothing (%s)', (backend) => {
  it('elementwise ops with shapes that do not broadcast', async () => {
    const tape = await tapeOn(backend);
    const v3 = tape.vector([1, 2, 3]), v4 = tape.vector([1, 2, 3, 4]);
    const M = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const N = tape.vector([1, 2, 3, 4, 5, 6], [3, 2]);
    const C = tape.vector([1, 2], [2, 1]);
    expectShapeError(tape, () => v3.add(v4), 'add', [[3], [4]], /do not broadcast/);
    expectShapeError(tape, () => v4.mul(v3), 'mul', [[4], [3]], /do not broadcast/);
    const v2 = tape.vector([1, 2]);
    expectShapeError(tape, () => M.sub(v2), 'sub', [[2, 3], [2]], /trailing/);
    expectShapeError(tape, () => M.div(N), 'div', [[2, 3], [3, 2]], /do not broadcast/);
    expectShapeError(tape, () => v3.pow(v4), 'pow', [[3], [4]], /do not broadcast/);
    expectShapeError(tape, () => v3.atan2([1, 2]), 'atan2', [[3], [2]], /do not broadcast/);
    expectShapeError(tape, () => v3.max(v4), 'max', [[3], [4]], /do not broadcast/);
    const v1 = tape.vector([5]);
    expectShapeError(tape, () => v1.add(v3), 'add', [[1], [3]], /do not broadcast/);
    // A column [2, 1] does not stretch; the message says how to get the elementwise intent.
    expectShapeError(tape, () => C.add(v2), 'add', [[2, 1], [2]], /reshape the \[2, 1\] operand to \[2\]/);
    // Against a matrix of as many rows a column means a value per row, which the reshape alone
    // would add per column (a probe followed it there): the hint is the transpose, in the
    // operands' order, and it gives the per-row result.
    expectShapeError(tape, () => M.sub(C), 'sub', [[2, 3], [2, 1]], /m\.T\.sub\(c\.reshape\(\[2\]\)\)\.T/);
    expectShapeError(tape, () => C.sub(M), 'sub', [[2, 1], [2, 3]], /c\.reshape\(\[2\]\)\.sub\(m\.T\)\.T/);
    expect(Array.from(M.T.sub(C.reshape([2])).T.value)).toEqual([0, 1, 2, 2, 3, 4]);
    // A flat array of the matrix's every element (a new-user probe): the reshape it needs.
    const flatHint = /for the matrix's 6 elements in row order, reshape that operand to \[2, 3\] \(a constant: tape\.constantVector\(values, \[2, 3\]\)\)$/;
    expectShapeError(tape, () => M.mul(new Float64Array(6)), 'mul', [[2, 3], [6]], flatHint);
    const v6 = tape.vector([1, 2, 3, 4, 5, 6]);
    expectShapeError(tape, () => v6.add(N), 'add', [[6], [3, 2]], /reshape that operand to \[3, 2\] \(a constant: tape\.constantVector\(values, \[3, 2\]\)\)$/);
    expect(Array.from(M.mul(tape.constantVector(new Float64Array(6).fill(2), [2, 3])).value)).toEqual([2, 4, 6, 8, 10, 12]);
    const c3 = v3.gt(1), c4 = v4.gt(0);
    expectShapeError(tape, () => tape.select(v3, v4, 0), 'select', [[3], [4], []], /do not broadcast/);
    expectShapeError(tape, () => tape.select(c3, 1, [1, 2]), 'select', [[3], [], [2]], /do not broadcast/);
    expectShapeError(tape, () => where(c4, v3, 1), 'select', [[4], [3], []], /do not broadcast/);
    // The handle API's elementwise rule: lengths equal, scalar, or a divisor.
    const h = tape.handles.vec;
    expectShapeError(tape, () => h.add(v3.id, v4.id), 'add', [[3], [4]], /^add: lengths 3 and 4 do not broadcast \(each must divide the next longer one\)$/, false);
    const k3 = h.constant([1, 2, 3]);
    expectShapeError(tape, () => h.mul(v4.id, k3), 'mul', [[3], [4]], /lengths 3 and 4 do not broadcast/, false);
  });

  // A probe: every elementwise method was a function named by its descriptor's key, `value`, so
  // the stack of a shape error through v.add(w) read `at Vec.value`.
  it('a stack trace names the elementwise method, on Vecs and vector handles', async () => {
    const tape = await tapeOn(backend);
    const v3 = tape.vector([1, 2, 3]), v4 = tape.vector([1, 2, 3, 4]);
    const stackOf = (call: () => unknown): string => {
      try {
        call();
      } catch (e) {
        return String((e as Error).stack);
      }
      return '';
    };
    expect(stackOf(() => v3.add(v4))).toMatch(/at Vec\.add /);
    expect(stackOf(() => tape.handles.vec.mul(v3.id, v4.id))).toMatch(/at VectorHandleApi\.mul /);
    for (const name of ['exp', 'add', 'pow', 'atan2'] as const) {
      expect(Vec.prototype[name].name).toBe(name);
      expect(tape.handles.vec[name].name).toBe(name);
    }
  });

  it('matmul, dot, matvec, vecmat, outer and trmv with shapes that do not fit', async () => {
    const tape = await tapeOn(backend);
    const v2 = tape.vector([1, 2]), v3 = tape.vector([1, 2, 3]);
    const M = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const S = tape.vector([1, 2, 3, 4], [2, 2]);
    expectShapeError(tape, () => M.matmul(M), 'matmul', [[2, 3], [2, 3]], /inner dimensions/);
    expectShapeError(tape, () => M.matmul(v2), 'matmul', [[2, 3], [2]], /inner dimensions/);
    expectShapeError(tape, () => v3.matmul(M), 'matmul', [[3], [2, 3]], /inner dimensions/);
    expectShapeError(tape, () => v3.matmul(v3), 'matmul', [[3], [3]], /do not fit \(two vectors: use dot\)/);
    expectShapeError(tape, () => M.matmul([1, 2]), 'matmul', [[2, 3], [2]], /inner dimensions/);
    expectShapeError(tape, () => M.reshape([1, 2, 3]).matmul(v3), 'matmul', [[1, 2, 3], [3]], /do not fit \(it takes operands of 1 or 2 dimensions\)/);
    expectShapeError(tape, () => v3.dot(v2), 'dot', [[3], [2]], /lengths differ/);
    expectShapeError(tape, () => v3.dot([1, 2, 3, 4]), 'dot', [[3], [4]], /lengths differ/);
    // A matrix and a vector of another length: the message points at matvec (a probe).
    expectShapeError(tape, () => M.dot(v3), 'dot', [[2, 3], [3]], /lengths differ, shapes \[2, 3\] and \[3\]: use matvec or matmul for a matrix$/);
    expectShapeError(tape, () => v3.dot(v2), 'dot', [[3], [2]], /lengths differ, shapes \[3\] and \[2\]$/);
    expectShapeError(tape, () => M.dot([1, 2, 3, 4, 5, 6]), 'dot', [[2, 3], [6]], /shapes differ.*matvec or matmul/);
    expectShapeError(tape, () => M.dot(M.reshape([3, 2])), 'dot', [[2, 3], [3, 2]], /shapes differ/);
    // Same shapes: the sum of the elementwise product.
    expect(M.dot(M).value).toBe(91);
    expectShapeError(tape, () => v3.matvec(v3), 'matvec', [[3], [3]], /expects a matrix \[m, k\] and a vector \[k\]/);
    expectShapeError(tape, () => M.matvec(M), 'matvec', [[2, 3], [2, 3]], /expects a matrix/);
    expectShapeError(tape, () => M.matvec(v2), 'matvec', [[2, 3], [2]], /expects a matrix/);
    expectShapeError(tape, () => M.matvec([1, 2]), 'matvec', [[2, 3], [2]], /expects a matrix/);
    expectShapeError(tape, () => M.vecmat(M), 'vecmat', [[2, 3], [2, 3]], /expects a vector \[m\] and a matrix \[m, k\]/);
    expectShapeError(tape, () => v2.vecmat(v2), 'vecmat', [[2], [2]], /expects a vector/);
    expectShapeError(tape, () => v3.vecmat(M), 'vecmat', [[3], [2, 3]], /expects a vector/);
    expectShapeError(tape, () => M.outer(v3), 'outer', [[2, 3], [3]], /two vectors/);
    expectShapeError(tape, () => v3.outer(M), 'outer', [[3], [2, 3]], /two vectors/);
    expectShapeError(tape, () => M.trmv(v3), 'trmv', [[2, 3], [3]], /square matrix/);
    expectShapeError(tape, () => S.trmv(v3), 'trmv', [[2, 2], [3]], /square matrix/);
    expectShapeError(tape, () => v2.trmv(v2), 'trmv', [[2], [2]], /square matrix/);
    expectShapeError(tape, () => S.trmv([1, 2, 3], { lower: false }), 'trmv', [[2, 2], [3]], /square matrix/);
    // The handle API takes the dimensions: its errors name the op and the operand whose handle
    // holds another number of elements (they said "shape: shape [2] …").
    const h = tape.handles.vec;
    expectShapeError(tape, () => h.matvec(M.id, v3.id, 3, 2), 'matvec', [[2], [3]], /^matvec: vector \[k\] = \[2\] holds 2 elements, vector handle -\d+ has 3$/, false);
    expectShapeError(tape, () => h.matvec(M.id, v2.id, 2, 2), 'matvec', [[2, 2], [6]], /^matvec: matrix \[m, k\] = \[2, 2\] holds 4 elements, vector handle -\d+ has 6$/, false);
    expectShapeError(tape, () => h.matmul(M.id, v3.id, 2, 3, 2), 'matmul', [[3, 2], [3]], /^matmul: matrix \[k, p\] = \[3, 2\] holds 6 elements, vector handle -\d+ has 3$/, false);
    expectShapeError(tape, () => h.toVec(M.id, [4]), 'toVec', [[4], [6]], /^toVec: shape \[4\] holds 4 elements, vector handle -\d+ has 6$/, false);
  });

  it('reshape, vector and constantVector to a wrong size; slice and transpose of the wrong rank', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3, 4, 5, 6]);
    // These name the shape asked for and the element count there is.
    expectShapeError(tape, () => v.reshape([4, 2]), 'reshape', [[4, 2], [6]], /^reshape: shape \[4, 2\] holds 8 elements, the data has 6$/, false);
    expectShapeError(tape, () => v.reshape([5]), 'reshape', [[5], [6]], /^reshape: shape \[5\] holds 5 elements, the data has 6$/, false);
    expectShapeError(tape, () => tape.vector([1, 2, 3], [2, 2]), 'vector', [[2, 2], [3]], /^vector: shape \[2, 2\] holds 4 elements, the data has 3$/, false);
    expectShapeError(tape, () => tape.constantVector([1, 2, 3], [2]), 'constantVector', [[2], [3]], /^constantVector: shape \[2\] holds 2 elements, the data has 3$/, false);
    // A dimension that is no non-negative integer (NumPy's -1 included) is no shape at all: the
    // message shows the shape given (it said "got an array").
    // A dimension that is no number at all is a NotANumberError, as README's table says of every
    // place a number is expected (a probe).
    for (const [shape, shown, code] of [[[-1, 2], '[-1, 2]', 'INVALID_ARGUMENT'], [[1.5, 4], '[1.5, 4]', 'INVALID_ARGUMENT'], [['2', 3], '[the string "2", 3]', 'NOT_A_NUMBER']] as const) {
      const e = thrownWithoutRecording(tape, () => v.reshape(shape as unknown as Shape), 'reshape');
      expect(e).toBeInstanceOf(TapegradError);
      expect(e).not.toBeInstanceOf(ShapeError);
      expect((e as TapegradError).code).toBe(code);
      expect((e as Error).message).toBe(`reshape: a shape is an array of non-negative integers, got ${shown}`);
    }
    expect(() => tape.vector([1, 2], 2 as unknown as Shape)).toThrow(/^vector: a shape is an array of non-negative integers, got number 2$/);
    expectShapeError(tape, () => v.reshape([2, 3]).slice(1), 'slice', [[2, 3]], /expects a vector/);
    expectShapeError(tape, () => v.reshape([1, 2, 3]).transpose(), 'transpose', [[1, 2, 3]], /expects a matrix/);
  });

  it('a Vec where a scalar Var is needed, and a scalar where a Vec is needed', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3]);
    const x = tape.variable(2);
    const asVar = v as unknown as Var;
    // The op or method that refused it is named (a probe: in a long expression the message named
    // none), with the shape and what to do instead.
    const scalar = (op: string): RegExp => new RegExp(`^${op}: expected a scalar Var here, got a Vec of shape \\[3\\]; take \\.get\\(i\\), \\.sum\\(\\) or another reduction${
      ['backward', 'gradient', 'hvp'].includes(op) ? '' : ` \\(${op}\\(s, v\\) broadcasts s\\)`}$`);
    expectShapeError(tape, () => tape.backward(asVar), 'backward', [[3]], scalar('backward'));
    expectShapeError(tape, () => x.add(asVar), 'add', [[3]], scalar('add'));
    expectShapeError(tape, () => x.pow(asVar), 'pow', [[3]], scalar('pow'));
    expectShapeError(tape, () => asVar.value && x.mul(asVar), 'mul', [[3]], scalar('mul'));
    expectShapeError(tape, () => tape.gradient(asVar, [x]), 'gradient', [[3]], scalar('gradient'));
    expectShapeError(tape, () => tape.hvp(asVar, [x], [1]), 'hvp', [[3]], scalar('hvp'));
    expectShapeError(tape, () => tape.handles.toVar(x.id).sub(asVar), 'sub', [[3]], scalar('sub'));
    // A Vec where an array of numbers is wanted read as an array of undefined entries (a probe).
    for (const call of [() => tape.vector(v as unknown as number[]), () => tape.constantVector(v as unknown as number[]), () => v.gather(v as unknown as number[])]) {
      expect(call).toThrow(/got an object \(Vec\)$/);
    }
    // An array in a select needs a Vec beside it, a Var is not enough: said so, naming select.
    const s = tape.variable(1);
    expect(() => tape.select([1, 0, 1] as unknown as Vec, s, 0)).toThrow(/^select: an array needs a Vec beside it \(only a Vec makes select elementwise\), got an array as cond$/);
    // A scalar where a Vec operand is needed.
    expectShapeError(tape, () => v.dot(x as unknown as Vec), 'dot', [[3], []], /^dot: expects a Vec, got a scalar Var$/, false);
    expectShapeError(tape, () => v.matmul(x as unknown as Vec), 'matmul', [[3], []], /^matmul: expects a Vec, got a scalar Var$/, false);
    expectShapeError(tape, () => v.outer(x as unknown as Vec), 'outer', [[3], []], /^outer: expects a Vec, got a scalar Var$/, false);
    expectShapeError(tape, () => tape.handles.vec.sum(x.id), 'sum', [[]], /^sum: handle \d+ is a scalar; a vector handle is expected here$/, false);
  });

  it('stack of vectors of different lengths, concat of a matrix with a vector or a scalar', async () => {
    const tape = await tapeOn(backend);
    const v2 = tape.vector([1, 2]), v3 = tape.vector([1, 2, 3]);
    const M = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const x = tape.variable(1);
    expectShapeError(tape, () => tape.stack([v3, v2]), 'stack', [[3], [2]], /every operand needs shape \[3\]/);
    expectShapeError(tape, () => tape.stack([v2, v2, v3]), 'stack', [[2], [2], [3]], /every operand needs shape \[2\]/);
    expectShapeError(tape, () => tape.stack([v3, x as unknown as Vec]), 'stack', [[3], []], /every operand needs shape \[3\]/);
    const Mt = M.transpose();
    expectShapeError(tape, () => tape.stack([M, Mt]), 'stack', [[2, 3], [3, 2]], /^stack: every operand needs shape \[2, 3\], got \[2, 3\], \[3, 2\]$/);
    // A Vec among scalars is no stack of scalars (it was joined in).
    expectShapeError(tape, () => tape.stack([x, v2] as unknown as Vec[]), 'stack', [[], [2]], /^stack: every operand needs shape \[\], got \[\], \[2\]$/);
    expectShapeError(tape, () => tape.concat([M, v3]), 'concat', [[2, 3], [3]], /cannot join a matrix and a vector/);
    // In the other order too (a probe: "rows of shape [] and [3] do not stack").
    expectShapeError(tape, () => tape.concat([v3, M]), 'concat', [[3], [2, 3]], /^concat: cannot join a matrix and a vector or scalar \(shapes \[3\], \[2, 3\]\)$/);
    expectShapeError(tape, () => tape.concat([x, M]), 'concat', [[], [2, 3]], /cannot join a matrix and a vector or scalar/);
    expectShapeError(tape, () => tape.concat([M, x]), 'concat', [[2, 3], []], /cannot join a matrix and a scalar/);
    expectShapeError(tape, () => tape.concat([M, 1]), 'concat', [[2, 3], []], /cannot join a matrix and a scalar/);
    const row = tape.vector([1, 2], [1, 2]);
    expectShapeError(tape, () => tape.concat([M, row]), 'concat', [[2, 3], [1, 2]], /rows of shape \[3\] and \[2\] do not stack/);
  });

  it('out-of-range indices are INVALID_ARGUMENT errors that record nothing', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3]);
    for (const action of [() => v.get(3), () => v.get(-4), () => v.get(1.5), () => v.gather([0, 3]), () => v.gather([-4]), () => v.gather([0.5]), () => v.slice(0.5)]) {
      const size = tape.size, elements = tape.elementCount;
      expect(action).toThrow(TapegradError);
      try { action(); } catch (e) { expect((e as TapegradError).code).toBe('INVALID_ARGUMENT'); }
      expectUnchanged(tape, size, elements);
    }
    // A fractional index is not out of range: the message says what is wrong with it.
    expect(() => v.get(1.5)).toThrow(/^get: the index must be an integer, got number 1\.5$/);
    expect(() => tape.handles.vec.get(v.id, 0.5)).toThrow(/^get: the index must be an integer, got number 0\.5$/);
    expect(() => v.get(3)).toThrow(/^get\(3\): index out of range for 3 elements$/);
    expect(() => v.get(-4)).toThrow(/^get\(-4\): index out of range for 3 elements$/);
    expect(() => v.gather([0, 0.5])).toThrow(/^gather: index number 0\.5 at position 1 is not an integer$/);
    expect(() => v.gather([0, 3])).toThrow(/^gather: index number 3 at position 1 is out of range for 3 elements$/);
    expect(() => v.gather([-1, -4])).toThrow(/^gather: index number -4 at position 1 is out of range for 3 elements$/);
    // An index that is no number is NOT_A_NUMBER, a symbol's too (get threw a TypeError comparing it).
    for (const action of [() => v.get(Symbol('i') as never), () => tape.handles.vec.get(v.id, Symbol('i') as never), () => v.gather([Symbol('i') as never])]) {
      const size = tape.size, elements = tape.elementCount;
      expect(action).toThrow(NotANumberError);
      expectUnchanged(tape, size, elements);
    }
    // Negative indices count from the end in get, slice and gather alike (a probe: gather refused -1).
    const g = v.gather([-1, 0, -3, -2]);
    expect([...g.value]).toEqual([3, 1, 1, 2]);
    expect(v.get(-1).value).toBe(3);
    expect([...tape.gradient(g.dot([1, 10, 100, 1000]), [v])]).toEqual([110, 1000, 1]);
  });
});

// A probe: computed Vecs had plain shape arrays, shared by their elementwise results, and a shape
// changed in place made the ops read past the elements (a trap of the core, garbage on the JS
// engine). Every Vec's shape is frozen now, the ones a caller passes as before.
describe.each(BACKENDS)('every shape is frozen (%s)', (backend) => {
  it('computed Vecs included, and a write to one throws', async () => {
    const tape = await tapeOn(backend);
    const A = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const v = tape.vector([1, 2, 3]);
    const made: [string, Vec][] = [
      ['vector', A], ['T', A.T], ['exp', A.T.exp()], ['matvec', A.matvec(v)], ['slice', v.slice(1)], ['gather', v.gather([0, 0])],
      ['stack', tape.stack([v, v])], ['concat', tape.concat([v, v])], ['outer', v.outer(v)], ['matmul', A.matmul(A.T)],
      ['reshape', v.reshape([3, 1])], ['add', A.add(v)], ['softmax', v.softmax()], ['handles.vec', tape.handles.vec.toVec(v.id)],
    ];
    for (const [name, vec] of made) {
      expect(Object.isFrozen(vec.shape), name).toBe(true);
      expect(() => { (vec.shape as number[])[0] = 7; }, name).toThrow(TypeError);
    }
    expect(Array.from(A.T.exp().matvec(tape.vector([1, 1])).value)).toEqual([Math.E + Math.exp(4), Math.exp(2) + Math.exp(5), Math.exp(3) + Math.exp(6)]);
  });
});
