// The public gradcheck (6-point stencil + tangent/reverse duality) over every differentiable op,
// on both backends, at points where each op is smooth. The finer grid with edge cases lives in
// op-gradients.test.ts; this file checks that the user-facing checker agrees op by op.
import { beforeAll, describe, expect, it } from 'vitest';
import { SCALAR_OP_TABLE, gradcheck, init, type Var } from '../src/index.ts';
import { ZERO_GRADIENT_OPS } from '../src/ops.ts';
import { BACKENDS, tapeOn } from './support.ts';

beforeAll(async () => {
  await init();
});

// Points inside each op's smooth domain (where it has one narrower than the reals).
const UNARY_POINTS: Record<string, number[]> = {
  sqrt: [0.3, 2.5], cbrt: [-2.5, 0.7], log: [0.3, 4], log1p: [-0.5, 3], log2: [0.3, 4], log10: [0.3, 4],
  asin: [-0.6, 0.4], acos: [-0.6, 0.4], atanh: [-0.6, 0.4], acosh: [1.5, 3], recip: [-2, 0.7],
  abs: [-1.5, 0.8], relu: [-1.5, 0.8], tan: [-0.7, 1.1],
  // ndtri's domain is [0, 1]: at -1.3 its gradient is NaN, which passed while NaN agreed with NaN.
  ndtri: [0.3, 0.85],
};
const BINARY_POINTS: Record<string, [number, number][]> = {
  pow: [[1.5, 2.3], [0.7, -1.2]], div: [[1.5, -2.3], [-0.7, 0.4]], min: [[1.5, -2.3], [-0.7, 0.4]],
  max: [[1.5, -2.3], [-0.7, 0.4]], hypot: [[1.5, -2.3], [-0.7, 0.4]],
};
const ZERO_GRADIENT = new Set<string>(ZERO_GRADIENT_OPS);
const unary = SCALAR_OP_TABLE.filter(([n, k]) => k === 1 && n !== 'arg' && !ZERO_GRADIENT.has(n)).map(([n]) => n);
const binary = SCALAR_OP_TABLE.filter(([n, k]) => k === 2 && n !== 'powConst' && !ZERO_GRADIENT.has(n)).map(([n]) => n);

describe.each(BACKENDS)('gradcheck of every op (%s)', (backend) => {
  it.each(unary)('%s', (op) => {
    for (const x of UNARY_POINTS[op] ?? [-1.3, 0.6]) {
      const r = gradcheck((v: Var) => (v[op as 'exp'] as () => Var)(), x, { backend });
      expect(r.ok, `${op} at ${x}: error ${r.error}, duality ${r.dualityError}`).toBe(true);
      expect(r.dualityError).toBeLessThanOrEqual(1e-12);
    }
  });

  it.each([...binary, 'powConst'])('%s', (op) => {
    for (const [x, y] of BINARY_POINTS[op] ?? [[1.5, -2.3], [-0.7, 0.4]]) {
      const r = op === 'powConst'
        ? gradcheck((a: Var) => a.abs().add(0.5).pow(y!), x!, { backend })
        : gradcheck(([a, b]: Var[]) => (a![op as 'add'] as (o: Var) => Var)(b!), [x!, y!], { backend });
      expect(r.ok, `${op} at (${x}, ${y}): error ${r.error}`).toBe(true);
    }
  });

  it('select and the zero-gradient ops', () => {
    expect(gradcheck(([c, a, b]: Var[]) => c!.tape.select(c!.gt(0), a!.sin(), b!.exp()), [0.5, 0.3, -0.2], { backend }).ok).toBe(true);
    for (const op of ZERO_GRADIENT) {
      const r = gradcheck(([a, b]: Var[]) => (op === 'lt' || op === 'le' || op === 'gt' || op === 'ge' || op === 'eq'
        ? (a![op] as (o: Var) => Var)(b!) : (a![op as 'floor'] as () => Var)()).add(a!.mul(0)), [0.3, 0.8], { backend });
      expect(r.analytic.every((g) => g === 0), op).toBe(true);
    }
  });

  it('constants never receive gradient or tangent, even when listed as inputs', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(3), c = tape.constant(2);
    const y = x.mul(c).add(c.square());
    expect(Array.from(tape.gradient(y, [x, c]))).toEqual([2, 0]);
    tape.backward(y);
    expect(c.grad).toBe(0);
    expect(tape.handles.grad(c.id)).toBe(0);
    expect(Array.from(tape.jvp([x, c], [1, 1], [y]))).toEqual([2]);
    expect(Array.from(tape.hvp(y, [x, c], [1, 1]))).toEqual([0, 0]);
  });
});
