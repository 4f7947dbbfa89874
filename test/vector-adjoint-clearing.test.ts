// Element adjoints are cleared lazily: a sweep zeroes a vector's adjoints when a rule first sends
// it adjoint, and never touches constants. These pin the consequences: a vector the last sweep
// did not reach reads as zero gradient (never a previous sweep's leftovers), on every path that
// reads element adjoints.
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, createTape, init, type Vec } from '../src/index.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

describe.each(BACKENDS)('lazily cleared element adjoints (%s)', (backend) => {
  it('a vector the last sweep did not reach has zero gradient, not the previous sweep\'s', async () => {
    const t = await createTape({ backend });
    const v = t.vector([1, 2, 3]);
    const w = t.vector([4, 5]);
    const y1 = v.square().sum();
    const y2 = w.exp().sum();
    t.backward(y1);
    expect([...v.grad]).toEqual([2, 4, 6]);
    expect([...w.grad]).toEqual([0, 0]);
    t.backward(y2);
    expect([...v.grad]).toEqual([0, 0, 0]);
    expect([...w.grad]).toEqual([Math.exp(4), Math.exp(5)]);
    expect([...t.gradient(y1, [w, v])]).toEqual([0, 0, 2, 4, 6]);
    expect([...t.vjp([y2], [1], [v])]).toEqual([0, 0, 0]);
    expect([...t.hvp(y2, [v, w], [1, 1, 1, 0, 0])]).toEqual([0, 0, 0, 0, 0]);
  });

  it('a Vec output seeded by vjp starts from zero each time', async () => {
    const t = await createTape({ backend });
    const v = t.vector([1, 2]);
    const y = v.mul(3);
    expect([...t.vjp([y], [1, 1], [v])]).toEqual([3, 3]);
    expect([...t.vjp([y], [2, -1], [v])]).toEqual([6, -3]);
  });

  it('a constant vector reached by a rule still reports zero gradient', async () => {
    const t = await createTape({ backend });
    const c = t.constantVector([1, 2, 3]);
    const x = t.variable(2);
    const y = c.sum().mul(x).add(c.max());
    expect([...t.gradient(y, [c, x])]).toEqual([0, 0, 0, 6]);
    expect([...c.grad]).toEqual([0, 0, 0]);
  });

  it('compiled: an input vector the output does not depend on has zero gradient, row after row', () => {
    const f = compile((x: Vec) => (x.get(0).gt(0).value ? x.square().sum() : x.tape.constantVector([1, 2]).sum()), { inputs: 2, vector: true, backend });
    expect([...f.gradient([1, 2])]).toEqual([2, 4]);
    expect([...f.gradient([-1, 2])]).toEqual([0, 0]); // re-recorded on the other branch
    expect([...f.gradientBatch(new Float64Array([-3, 1, -2, 5]), 2)]).toEqual([0, 0, 0, 0]);
    expect([...f.hvp([-1, 2], [1, 0])]).toEqual([0, 0]);
    expect([...f.vjp([-1, 2], [1])]).toEqual([0, 0]);
  });
});
