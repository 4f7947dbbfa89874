// tape.handles.vec: vector handles (negative integers) in, handles out. variable / constant,
// every elementwise op by name (scalar handles broadcast; a shorter vector repeats over a longer
// one whose length it divides), the reductions to scalar handles, matvec / matmul with their
// dimensions, get, select, value and grad. Recording through handles gives bit for bit what the
// same program gives through Vec methods. Both engines.
import { describe, expect, it } from 'vitest';
import { BINARY_OPS, UNARY_OPS, type BinaryOpName, type UnaryOpName } from '../src/ops.ts';
import * as api from '../src/index.ts';
import { ShapeError, TapegradError, type Tape, type Var, type Vec } from '../src/index.ts';
import { bits } from './vector-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

const X = [0.3, -0.7, 1.2, 0.45, -1.1, 0.8];
const Y = [1.5, 0.25, -0.6, 2.2, 0.9, -0.35];

// A tape's recorded nodes: op codes and both operands.
function nodes(tape: Tape): number[][] {
  const t = tape as unknown as { count: number; opV: Uint8Array; aV: Int32Array; bV: Int32Array };
  return [[...t.opV.subarray(0, t.count)], [...t.aV.subarray(0, t.count)], [...t.bV.subarray(0, t.count)]];
}

describe.each(BACKENDS)('the vector handle API (%s)', (backend) => {
  it('variable and constant return negative integer handles; value, length and grad read them', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const x = h.variable(X), c = h.constant(Float64Array.from(Y));
    for (const handle of [x, c]) expect(Number.isInteger(handle) && handle < 0).toBe(true);
    expect(x).not.toBe(c);
    expect(Array.from(h.value(x))).toEqual(X);
    expect(Array.from(h.value(c))).toEqual(Y);
    expect(h.length(x)).toBe(6);
    // value is a copy: writing into it changes nothing.
    h.value(x)[0] = 99;
    expect(h.value(x)[0]).toBe(0.3);
    expect(() => h.grad(x)).toThrow(TapegradError);
    const y = h.dot(x, c);
    tape.handles.backward(y);
    expect(Array.from(h.grad(x))).toEqual(Y);
    expect(Array.from(h.grad(c))).toEqual([0, 0, 0, 0, 0, 0]); // constants get no gradient
    // A Vec's id is its handle, and toVec wraps a handle as a Vec (shape [n] unless given).
    const v = h.toVec(x);
    expect(v.id).toBe(x);
    expect(v.shape).toEqual([6]);
    expect(h.toVec(x, [2, 3]).shape).toEqual([2, 3]);
    expect(tape.vector([1, 2]).id).toBeLessThan(0);
    expect(() => h.toVec(x, [4])).toThrow(ShapeError);
  });

  it('an empty vector handle goes through elementwise ops, with scalars too, as an empty Vec does', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const v = h.vec.variable([]);
    for (const y of [h.vec.exp(v), h.vec.add(v, h.variable(2)), h.vec.mul(h.constant(3), v)]) expect(h.vec.length(y)).toBe(0);
    const s = h.vec.sum(h.vec.exp(v));
    expect(h.value(s)).toBe(0);
    h.backward(s);
    expect(Array.from(h.vec.grad(v))).toEqual([]);
    // An empty vector with a longer one still does not broadcast.
    expect(() => h.vec.add(v, h.vec.variable([1, 2]))).toThrow(/^add: lengths 0 and 2 do not broadcast/);
  });

  it('a vector handle where a scalar one is needed is a ShapeError naming the vector readers', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const a = h.vec.variable([1, 2]);
    const s = h.vec.sum(a);
    // Named by the call (a probe: these said op 'scalar' and no call).
    for (const [action, op] of [[() => h.value(a), 'value'], [() => h.grad(a), 'grad'], [() => h.backward(a), 'backward'], [() => h.gradient(s, [a]), 'gradient'], [() => h.gradient(a, [s]), 'gradient'], [() => h.toVar(a), 'toVar']] as const) {
      const size = tape.size;
      expect(action).toThrow(ShapeError);
      expect(action).toThrow(expect.objectContaining({ op, message: expect.stringMatching(new RegExp(`^${op}: handle ${a} is a vector, where a scalar handle is needed`)) }));
      expect(tape.size).toBe(size);
    }
    // An op's operand: the error names the op, in the message and as `op` (a probe: "scalar").
    const x = h.variable(2);
    for (const [action, op] of [[() => h.exp(a), 'exp'], [() => h.add(x, a), 'add'], [() => h.mul(a, x), 'mul'], [() => h.powConst(a, 2), 'powConst'], [() => h.select(x, a, x), 'select']] as const) {
      const size = tape.size;
      expect(action).toThrow(expect.objectContaining({ name: 'ShapeError', op, message: expect.stringMatching(new RegExp(`^${op}: handle ${a} is a vector, where a scalar handle is needed`)) }));
      expect(tape.size).toBe(size);
    }
    // A scalar where a vector handle is read: named by the reader.
    for (const [action, op] of [[() => h.vec.sum(x), 'sum'], [() => h.vec.value(x), 'value'], [() => h.vec.dot(a, x), 'dot'], [() => h.vec.get(x, 0), 'get']] as const) {
      expect(action).toThrow(expect.objectContaining({ name: 'ShapeError', op, message: `${op}: handle ${x} is a scalar; a vector handle is expected here` }));
    }
    // Not a vector: -1.5 and stale negative integers keep the handle errors.
    expect(() => h.value(-1.5)).toThrow(TapegradError);
    expect(() => h.value(-1.5)).not.toThrow(ShapeError);
  });

  // A probe: a negative or fractional length was taken as a count (a negative number of inputs
  // recorded; a fractional one made every later handle fractional, for the tape's life).
  it('an array-like whose length is no count is no array: nothing recorded, the tape as it was', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const x = h.variable(3), v = h.vec.variable([1, 2, 3]);
    for (const length of [-1, -0.5, 1.5, NaN, Infinity, 2 ** 53]) {
      const bad = { length } as unknown as number[];
      for (const call of [() => h.variables(bad), () => h.variables(bad, new Int32Array(1)), () => tape.variables(bad), () => h.vec.variable(bad), () => tape.vector(bad), () => tape.constantVector(bad)]) {
        const size = tape.size;
        expect(call).toThrow(expect.objectContaining({ name: 'NotANumberError' }));
        expect(tape.size).toBe(size);
      }
    }
    expect(h.value(x)).toBe(3);
    expect(Array.from(h.vec.value(v))).toEqual([1, 2, 3]);
    tape.reset();
    expect(Number.isInteger(tape.base)).toBe(true);
    const hs = h.variables([1, 2]);
    expect(h.value(hs[1]!)).toBe(2);
  });

  // A probe: checkNaN's `node` of a vector op was ~handle, a number the API refuses.
  it('checkNaN names a vector op by its vector handle', async () => {
    const tape = await tapeOn(backend, { checkNaN: true });
    const h = tape.handles;
    const lv = h.vec.log(h.vec.variable([1, -1]));
    expect(() => h.vec.value(lv)).toThrow(expect.objectContaining({ name: 'NonFiniteError', node: lv, op: 'log[]', message: expect.stringMatching(new RegExp(`at vector handle ${lv} \\(a vector\\) produced NaN at element 1`)) }));
  });

  it("ids the API never hands out as scalar handles (a vector's node, a carrier) are refused where a handle is read", async () => {
    // Found by a new-user probe: ~vh, the vmeta carrier before it and a select's arg carrier
    // (sel - 1) passed as scalar handles; value gave 0, and gradient a previous sweep's leftovers.
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const x = h.variable(3);
    const vh = h.vec.variable([1, 2, 3]);
    const sel = h.select(h.gt(x, h.constant(0)), x, h.square(x));
    const y = h.add(h.vec.sum(h.vec.mul(vh, vh)), sel);
    // Each named by the call that read it (a README audit found these alone naming none).
    for (const id of [~vh, ~vh - 1, sel - 1]) {
      for (const [call, read] of [['value', () => h.value(id)], ['grad', () => h.grad(id)], ['backward', () => h.backward(id)], ['gradient', () => h.gradient(y, [x, id])], ['toVar', () => h.toVar(id)]] as const) {
        expect(read).toThrow(TapegradError);
        expect(read).toThrow(id === ~vh ? new RegExp(`^${call}: handle ${id} is the node of vector handle ${vh}, where a scalar handle is needed`) : new RegExp(`^${call}: handle ${id} is no value: it carries operands for the node after it`));
      }
    }
    expect(() => h.value(~vh)).toThrow(expect.objectContaining({ name: 'ShapeError', op: 'value' }));
    // The tape is as it was: the real gradient.
    expect(Array.from(h.gradient(y, [x]))).toEqual([1]);
    expect(Array.from(h.vec.grad(vh))).toEqual([2, 4, 6]);
    // A stale vector handle where a scalar one is read says it is stale.
    tape.reset();
    expect(() => h.value(vh)).toThrow(new RegExp(`^value: vector handle ${vh} was recorded before tape.reset\\(\\)`));
  });

  it.each(UNARY_OPS)('unary %s by name equals the Vec method, bit for bit', async (op: UnaryOpName) => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const point = X.map((x) => (op === 'acosh' ? 1.5 + Math.abs(x) : ['sqrt', 'log', 'log2', 'log10'].includes(op) ? Math.abs(x) + 0.1 : ['asin', 'acos', 'atanh'].includes(op) ? x / 2 : x));
    const x = h.variable(point);
    const y = h[op](x);
    const s = h.sum(y);
    tape.handles.backward(s);
    const viaHandles = [...h.value(y), tape.handles.value(s), ...h.grad(x)];
    const v = tape.vector(point);
    const z = (v[op] as () => Vec)().sum();
    const viaVec = [...(v[op] as () => Vec)().value, z.value, ...tape.gradient(z, [v])];
    expect(bits(viaHandles)).toEqual(bits(viaVec));
  });

  it.each(BINARY_OPS)('binary %s by name: vector ⊕ vector, vector ⊕ scalar, scalar ⊕ vector', async (op: BinaryOpName) => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const a = X.map((x) => Math.abs(x) + 0.2); // positive bases for pow
    const x = h.vec.variable(a), y = h.vec.variable(Y), s = h.variable(0.75);
    for (const [first, second, expectValues] of [
      [x, y, (f: (p: number, q: number) => number) => a.map((p, k) => f(p, Y[k]!))],
      [x, s, (f: (p: number, q: number) => number) => a.map((p) => f(p, 0.75))],
      [s, x, (f: (p: number, q: number) => number) => a.map((p) => f(0.75, p))],
    ] as const) {
      const r = h.vec[op](first, second);
      expect(r).toBeLessThan(0);
      // Per element the scalar op on the same values.
      const scalar = (p: number, q: number): number => {
        const pv = tape.variable(p), qv = tape.variable(q);
        return ((pv as unknown as Record<string, (o: Var) => Var>)[op]!).call(pv, qv).value;
      };
      expect(bits(h.vec.value(r))).toEqual(bits(expectValues(scalar)));
    }
  });

  it('a shorter vector repeats over a longer one whose length it divides', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const long = h.variable([1, 2, 3, 4, 5, 6]);
    const three = h.variable([10, 20, 30]), two = h.variable([100, 200]);
    expect(Array.from(h.value(h.add(long, three)))).toEqual([11, 22, 33, 14, 25, 36]);
    expect(Array.from(h.value(h.mul(two, long)))).toEqual([100, 400, 300, 800, 500, 1200]);
    const y = h.sum(h.mul(long, three));
    tape.handles.backward(y);
    expect(Array.from(h.grad(three))).toEqual([1 + 4, 2 + 5, 3 + 6]);
    expect(Array.from(h.grad(long))).toEqual([10, 20, 30, 10, 20, 30]);
    expect(() => h.add(long, h.variable([1, 2, 3, 4]))).toThrow(ShapeError);
    // Three lengths, each dividing the next (a probe found 2, 4, 8 refused): the Vec API's select
    // of shapes [2], [2, 2] and [2, 2, 2], values and gradients.
    const c = h.constant([1, 0]), four = h.variable([1, 2, 3, 4]), eight = h.variable([10, 20, 30, 40, 50, 60, 70, 80]);
    const picked = h.select(c, four, eight);
    expect(Array.from(h.value(picked))).toEqual([1, 20, 3, 40, 1, 60, 3, 80]);
    tape.handles.backward(h.dot(picked, h.constant([1, 2, 3, 4, 5, 6, 7, 8])));
    const vecs = tape.select(h.toVec(c), h.toVec(four).reshape([2, 2]), h.toVec(eight).reshape([2, 2, 2]));
    expect(Array.from(h.value(picked))).toEqual(Array.from(vecs.value));
    expect([Array.from(h.grad(four)), Array.from(h.grad(eight))]).toEqual([[1 + 5, 0, 3 + 7, 0], [0, 2, 0, 4, 0, 6, 0, 8]]);
    // Lengths that both divide the longest but not each other name the pair.
    expect(() => h.select(c, h.variable([1, 2, 3]), h.variable([1, 2, 3, 4, 5, 6]))).toThrow(/lengths 2 and 3 do not broadcast/);
  });

  it('reductions return scalar handles: sum, dot, max, min, logSumExp, get', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const value = (k: number): number => tape.handles.value(k);
    const x = h.variable(X), y = h.variable(Y);
    expect(value(h.sum(x))).toBe(tape.vector(X).sum().value);
    expect(value(h.dot(x, y))).toBe(tape.vector(X).dot(Y).value);
    expect(value(h.max(x))).toBe(1.2);
    expect(value(h.min(x))).toBe(-1.1);
    expect(value(h.logSumExp(x))).toBe(tape.vector(X).logSumExp().value);
    expect(value(h.get(x, 2))).toBe(1.2);
    expect(value(h.get(x, -1))).toBe(0.8);
    const g = h.get(x, 4);
    const z = tape.handles.mul(g, h.max(x));
    tape.handles.backward(z);
    expect(Array.from(h.grad(x))).toEqual([0, 0, -1.1, 0, 1.2, 0]);
  });

  it('matvec and matmul take the dimensions; wrong ones are ShapeErrors', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const A = h.variable([1, 2, 3, 4, 5, 6]);
    const x = h.variable([1, 0, -1]);
    const y = h.matvec(A, x, 2, 3);
    expect(Array.from(h.value(y))).toEqual([-2, -2]);
    const B = h.constant([1, 2, 3, 4, 5, 6]);
    const C = h.matmul(A, B, 2, 3, 2);
    expect(Array.from(h.value(C))).toEqual([22, 28, 49, 64]);
    expect(Array.from(h.value(h.matmul(A, B, 3, 2, 3)))).toEqual([9, 12, 15, 19, 26, 33, 29, 40, 51]);
    tape.handles.backward(h.sum(C));
    // d/dA_ij Σ_(i,k) (A B)_ik = Σ_k B_jk
    expect(Array.from(h.grad(A))).toEqual([3, 7, 11, 3, 7, 11]);
    const size = tape.size;
    expect(() => h.matvec(A, x, 3, 2)).toThrow(ShapeError); // x has 3 elements, not 2
    expect(() => h.matmul(A, B, 2, 2, 3)).toThrow(ShapeError); // A has 6 elements, not 4
    expect(tape.size).toBe(size);
  });

  it('select with any mix of vector and scalar handles', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles.vec;
    const x = h.variable([-1, 2, -3, 4]);
    const cond = h.gt(x, tape.handles.constant(0));
    const s = tape.handles.variable(10);
    const r = h.select(cond, h.log(x), s);
    expect(Array.from(h.value(r))).toEqual([10, Math.log(2), 10, Math.log(4)]);
    tape.handles.backward(h.sum(r));
    expect(Array.from(h.grad(x))).toEqual([0, 0.5, 0, 0.25]);
    expect(tape.handles.grad(s)).toBe(2);
    expect(Array.from(h.value(h.select(s, x, s)))).toEqual([-1, 2, -3, 4]);
    // A shorter vector repeats over a longer one it divides, as in the other elementwise ops (it
    // was a ShapeError; found by a new-user probe), with the Vec API's values and gradients.
    const c2 = h.constant([1, 0]), a = h.variable([1, 2, 3, 4]), b = h.variable([-1, -2, -3, -4]);
    const picked = h.select(c2, a, b);
    expect(Array.from(h.value(picked))).toEqual([1, -2, 3, -4]);
    tape.handles.backward(h.dot(picked, h.constant([1, 2, 3, 4])));
    const va = tape.handles.vec.toVec(a), vb = tape.handles.vec.toVec(b);
    const viaVecs = tape.select(tape.handles.vec.toVec(c2).reshape([2]), va.reshape([2, 2]), vb.reshape([2, 2]));
    expect(Array.from(viaVecs.value)).toEqual([1, -2, 3, -4]);
    expect([Array.from(h.grad(a)), Array.from(h.grad(b))]).toEqual([[1, 0, 3, 0], [0, 2, 0, 4]]);
    // Scalar handles alone are the scalar API's: a ShapeError, nothing recorded (it made a
    // 1-element vector).
    const size = tape.size;
    for (const call of [() => h.exp(s), () => h.add(s, s), () => h.select(s, s, s)]) {
      expect(call).toThrow(ShapeError);
      expect(call).toThrow(/^(exp|add|select): no vector handle among the operands; tape\.handles\.(exp|add|select) takes scalar handles/);
    }
    expect(tape.size).toBe(size);
  });

  // The unary and binary ops, the reductions and get record without wrapping their operands in
  // Vecs (which cost 82-192 bytes and 0.7-1 µs an op): the same nodes as the Vec methods, node
  // for node, and the same errors.
  it('ops by name record the nodes the Vec methods record', async () => {
    const viaHandles = await tapeOn(backend), viaVecs = await tapeOn(backend);
    const h = viaHandles.handles, hv = h.vec;
    const x = hv.variable(X), y = hv.variable(Y), s = h.variable(0.75);
    const vx = viaVecs.vector(X), vy = viaVecs.vector(Y), vs = viaVecs.variable(0.75);
    const outHandles: number[] = [], outVecs: (Vec | Var)[] = [];
    for (const op of UNARY_OPS) { outHandles.push(hv[op](x)); outVecs.push((vx[op] as () => Vec)()); }
    for (const op of BINARY_OPS) {
      const method = (a: Vec, b: Vec | Var): Vec => (a[op] as unknown as (o: Vec | Var) => Vec).call(a, b);
      // A scalar first: the free function, which takes a Var before a Vec (a review: the fast
      // path took the vector first only).
      const scalarFirst = (): Vec => (api as unknown as Record<string, (a: Var, b: Vec) => Vec>)[op]!(vs, vx);
      outHandles.push(hv[op](x, y), hv[op](x, s), hv[op](y, y), hv[op](s, x));
      outVecs.push(method(vx, vy), method(vx, vs), method(vy, vy), scalarFirst());
    }
    outHandles.push(hv.sum(x), hv.max(y), hv.min(x), hv.logSumExp(y), hv.dot(x, y), hv.dot(y, y), hv.get(x, 2), hv.get(y, -1));
    outVecs.push(vx.sum(), vy.max(), vx.min(), vy.logSumExp(), vx.dot(vy), vy.dot(vy), vx.get(2), vy.get(-1));
    expect(nodes(viaHandles)).toEqual(nodes(viaVecs));
    const indices = (ids: number[], base: number): number[] => ids.map((id) => (id < 0 ? ~id : id) - base);
    expect(indices(outHandles, viaHandles.base)).toEqual(indices(outVecs.map((o) => o.id), viaVecs.base));
    // The errors of the general path: lengths that do not broadcast, a stale handle, a scalar
    // handle where a vector one is needed, a handle of no node.
    const count = viaHandles.size;
    expect(() => hv.add(x, hv.variable([1, 2, 3, 4]))).toThrow(/add: lengths 4 and 6 do not broadcast/);
    expect(() => hv.dot(x, hv.variable([1, 2]))).toThrow(/dot: lengths differ/);
    expect(() => hv.exp(s)).toThrow(ShapeError);
    expect(() => hv.sum(s)).toThrow(/sum: handle .* is a scalar/);
    expect(() => hv.get(x, 6)).toThrow(/get\(6\): index out of range for 6 elements/);
    expect(() => hv.mul(x, 12345)).toThrow(TapegradError);
    expect(viaHandles.size).toBe(count + 4); // the two variables above, two nodes each
    viaHandles.reset();
    expect(() => hv.exp(x)).toThrow(/vector handle -?\d+ was recorded before tape.reset\(\)/);
    expect(() => hv.sum(x)).toThrow(/was recorded before tape.reset\(\)/);
  });

  // A probe: a Float64Array operand took the general path (8.5 times a number operand, 1.7 KB an
  // op); the common case records the constant vector and the op directly, the same nodes.
  it('a Float64Array operand of a vector\'s length records what constantVector and the op record', async () => {
    const direct = await tapeOn(backend), explicit = await tapeOn(backend);
    const w = Float64Array.from(Y);
    const a = direct.vector(X), b = explicit.vector(X);
    const ys = [a.mul(w), a.sub(w), a.pow(w.map(Math.abs)), a.max(w)];
    const zs = [b.mul(explicit.constantVector(w)), b.sub(explicit.constantVector(w)), b.pow(explicit.constantVector(w.map(Math.abs))), b.max(explicit.constantVector(w))];
    expect(nodes(direct)).toEqual(nodes(explicit));
    expect(ys.map((y) => bits(y.value))).toEqual(zs.map((z) => bits(z.value)));
    expect(ys.every((y) => y.shape.length === 1 && y.shape[0] === X.length)).toBe(true);
    // Other lengths and matrices keep the general path's broadcasting and errors.
    expect(() => a.mul(new Float64Array(4))).toThrow(ShapeError);
    expect(Array.from(direct.vector([1, 2, 3, 4], [2, 2]).mul(Float64Array.from([10, 100])).value)).toEqual([10, 200, 30, 400]);
  });

  it('a program through handles equals the same program through Vecs, bit for bit', async () => {
    const record = (tape: Tape, viaHandles: boolean): number[] => {
      tape.reset();
      if (viaHandles) {
        const s = tape.handles, h = s.vec;
        const x = h.variable(X), w = h.constant(Y);
        const hidden = h.tanh(h.add(h.matvec(h.variable([0.5, -0.25, 1, 0.75, -0.5, 0.25]), h.toVec(x).slice(0, 3).id, 2, 3), h.get(x, 5)));
        const loss = s.add(h.logSumExp(hidden), h.dot(h.mul(x, w), x));
        s.backward(loss);
        return [s.value(loss), ...h.grad(x)];
      }
      const x = tape.vector(X);
      const W = tape.vector([0.5, -0.25, 1, 0.75, -0.5, 0.25], [2, 3]);
      const hidden = W.matvec(x.slice(0, 3)).add(x.get(5)).tanh();
      const loss = hidden.logSumExp().add(x.mul(Y).dot(x));
      tape.backward(loss);
      return [loss.value, ...x.grad];
    };
    const tape = await tapeOn(backend);
    expect(bits(record(tape, true))).toEqual(bits(record(tape, false)));
  });
});
