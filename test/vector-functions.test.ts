// The free functions (exp, mul, pow, where…) take Vecs too: with a Vec among the operands they
// record the same elementwise node as the method, broadcasting a scalar Var or a number.
import { beforeAll, describe, expect, it } from 'vitest';
import { add, createTape, exp, init, max, mul, pow, sub, tanh, where, type Var } from '../src/index.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

describe.each(BACKENDS)('free functions on Vecs (%s)', (backend) => {
  it('match the methods bit for bit, in value and gradient', async () => {
    const run = async (free: boolean): Promise<[number, number[], number]> => {
      const t = await createTape({ backend });
      const v = t.vector([0.5, -1.5, 2]);
      const s = t.variable(0.75);
      const y = free
        ? sub(mul(s, exp(v)), pow(v, 2)).add(tanh(v)).add(mul(2, v)).add(where(v.gt(0), v, s)).sum()
        : v.exp().mul(s).sub(v.pow(2)).add(v.tanh()).add(v.mul(2)).add(t.select(v.gt(0), v, s)).sum();
      const g = t.gradient(y, [v, s]);
      return [y.value, [...g.slice(0, 3)], g[3]!];
    };
    expect(await run(true)).toEqual(await run(false));
  });

  // README: a free function reads exactly its operands, so the array methods' extra arguments
  // (index, array) are not read: reduce(add) sums, map(exp) maps.
  it('take reduce and map, whose extra arguments they do not read', async () => {
    const tape = await createTape({ backend });
    const xs = tape.variables([1, 2, 3]);
    const total = xs.reduce(add);
    expect(total.value).toBe(6);
    expect(Array.from(tape.gradient(total, xs))).toEqual([1, 1, 1]);
    expect(xs.map(exp).map((v) => v.value)).toEqual([Math.exp(1), Math.exp(2), Math.exp(3)]);
    expect((max as (...operands: number[]) => number)(1, 2, 3)).toBe(2);
  });

  it('a scalar Var with a Vec on the right broadcasts instead of failing', async () => {
    const t = await createTape({ backend });
    const v = t.vector([1, 2, 3]);
    const s = t.variable(2);
    const y = mul(s, v);
    expect([...y.value]).toEqual([2, 4, 6]);
    t.backward(y.sum());
    expect([...v.grad]).toEqual([2, 2, 2]);
    expect(s.grad).toBe(6);
  });
});

describe.each(BACKENDS)('trmv reads one triangle only (%s)', (backend) => {
  it('a NaN or Infinity in the other triangle stays out of the value and the gradient', async () => {
    const t = await createTape({ backend });
    const L = t.vector([2, NaN, 3, 4], [2, 2]);
    const x = t.vector([1, -1]);
    const y = L.trmv(x).sum();
    expect(y.value).toBe(2 * 1 + (3 * 1 + 4 * -1));
    t.backward(y);
    expect([...L.grad]).toEqual([1, 0, 1, -1]);
    expect([...x.grad]).toEqual([2 + 3, 4]);
    const U = t.vector([2, 3, Infinity, 4], [2, 2]);
    const z = U.trmv(x, { lower: false }).sum();
    expect(z.value).toBe(2 * 1 + 3 * -1 + 4 * -1);
  });
});

// What README says of reductions over a matrix and of norm's range (a new-user probe asked).
describe.each(BACKENDS)('softmax over a matrix, and norm unscaled (%s)', (backend) => {
  it('softmax and logSoftmax normalise over every element of a matrix, as logSumExp reduces', async () => {
    const tape = await createTape({ backend });
    const M = tape.vector([1, 2, 3, 4], [2, 2]);
    const s = M.softmax().value, ls = M.logSoftmax().value, lse = M.logSumExp().value;
    expect(s.reduce((p, q) => p + q, 0)).toBeCloseTo(1, 15);
    for (let k = 0; k < 4; k++) {
      expect(s[k]).toBeCloseTo(Math.exp(k + 1 - lse), 15);
      expect(ls[k]).toBeCloseTo(k + 1 - lse, 14);
    }
    // Row by row as README says: each row as a vector, their softmaxes stacked.
    const flat = M.reshape([4]);
    const rows = tape.stack([flat.slice(0, 2).softmax(), flat.slice(2, 4).softmax()]);
    expect(rows.shape).toEqual([2, 2]);
    const e = Math.exp(1);
    for (const [k, want] of [[0, 1 / (1 + e)], [1, e / (1 + e)], [2, 1 / (1 + e)], [3, e / (1 + e)]] as const) expect(rows.value[k]).toBeCloseTo(want, 15);
  });

  it('norm is sqrt(Σ x²) as written: it underflows and overflows where hypot scales', async () => {
    const tape = await createTape({ backend });
    const tiny = tape.vector([1e-200, 1e-200]), huge = tape.vector([1e200, 1e200]);
    expect(tiny.norm().value).toBe(0);
    expect(huge.norm().value).toBe(Infinity);
    expect(tape.variable(1e-200).hypot(tape.variable(1e-200)).value).toBeCloseTo(Math.SQRT2 * 1e-200, 214);
    expect(tape.variable(1e200).hypot(tape.variable(1e200)).value).toBe(Math.SQRT2 * 1e200);
  });
});
