// select / where, comparisons and stopGradient: the branch not taken gets exactly zero gradient
// even where its value (or its derivative) is NaN or Infinity, in the reverse sweep, the tangent
// sweep and forward-over-reverse; comparisons are 0/1 with zero gradient; stopGradient passes the
// value and blocks every derivative. Expected values are the derivatives of the branch taken,
// written in closed form.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createTape, grad, hessian, hvp, init, jacobian, jvp, select, stopGradient, valueAndGrad, vjp, where,
  type Var,
} from '../src/index.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

// sqrt(|x|) written with both branches recorded: the other branch is sqrt of a negative number.
const sqrtAbs = (x: Var): Var => select(x.gt(0), x.sqrt(), x.neg().sqrt());

describe.each(BACKENDS)('select / where with NaN and Infinity in the branch not taken (%s)', (backend) => {
  const options = { backend };

  it('select(x > 0, sqrt x, sqrt -x): finite, exact gradient on both sides', () => {
    // d/dx sqrt(|x|) = sign(x) / (2 sqrt|x|): ±1/4 at ±4, ±1 at ±1/4.
    for (const [x, value, slope] of [[4, 2, 0.25], [-4, 2, -0.25], [0.25, 0.5, 1], [-0.25, 0.5, -1]]) {
      const [v, g] = valueAndGrad(sqrtAbs, options)(x!);
      expect(v).toBe(value);
      expect(g).toBe(slope);
    }
  });

  it('where(x > 0, log x, x) at -1 and 2 (the classic NaN-gradient trap)', () => {
    const f = (x: Var): Var => where(x.gt(0), x.log(), x);
    expect(valueAndGrad(f, options)(-1)).toEqual([-1, 1]);
    const [v, g] = valueAndGrad(f, options)(2);
    expect(v).toBeCloseTo(Math.log(2), 15);
    expect(g).toBe(0.5);
    // The other order: where(x > 0, x, log x) at 2 takes x; log 2 is computed but not used.
    expect(valueAndGrad((x: Var) => where(x.gt(0), x, x.log()), options)(2)).toEqual([2, 1]);
  });

  it('select(x < 1, x², x · Infinity): the infinite branch does not leak, even at x = 0 (0 · Inf = NaN)', () => {
    const f = (x: Var): Var => select(x.lt(1), x.square(), x.mul(1 / 0));
    expect(valueAndGrad(f, options)(0)).toEqual([0, 0]);
    expect(valueAndGrad(f, options)(0.5)).toEqual([0.25, 1]);
    // x / 0 and 0 / 0 in the untaken branch, selected away by a constant-false condition.
    const g = (x: Var): Var => select(x.tape.constant(0), x.div(0).add(x.sub(x).div(0)), x.mul(3));
    expect(valueAndGrad(g, options)(2)).toEqual([6, 3]);
  });

  it('a NaN condition counts as false, as documented', () => {
    const f = (x: Var): Var => select(x.tape.constant(NaN), x.log(), x.mul(5));
    expect(valueAndGrad(f, options)(-3)).toEqual([-15, 5]);
  });

  it('the untaken branch gets zero gradient while sharing subexpressions with the taken one', () => {
    // u = x² feeds both branches: the NaN branch log(-u) must not add anything to u's adjoint.
    const f = (x: Var): Var => {
      const u = x.square();
      return select(u.gt(0), u.mul(3), u.neg().log());
    };
    expect(grad(f, options)(-2)).toBe(-12); // d/dx 3x² = 6x
    expect(grad(f, options)(3)).toBe(18);
    expect(Array.from(jvp(f, 3, 1, options))).toEqual([18]);
    expect(Array.from(hvp(f, -2, 1, options))).toEqual([6]);
  });

  it('through jvp: the tangent of the branch taken, never the NaN one', () => {
    for (const [x, slope] of [[4, 0.25], [-4, -0.25]]) {
      expect(Array.from(jvp(sqrtAbs, x!, 2, options))).toEqual([2 * slope!]);
    }
    const forward = jacobian((x: Var[]) => [sqrtAbs(x[0]!), select(x[1]!.lt(0), x[1]!.mul(-1), x[1]!.log())], [-4, 4], { backend, mode: 'forward' });
    expect(Array.from(forward.data)).toEqual([-0.25, 0, 0, 0.25]);
  });

  it('through hvp and hessian: the second derivative of the branch taken', () => {
    // d²/dx² sqrt|x| = -1 / (4 |x|^{3/2}): -1/32 at ±4.
    for (const x of [4, -4]) {
      expect(Array.from(hvp(sqrtAbs, x, 1, options))).toEqual([-1 / 32]);
      expect(Array.from(hessian(sqrtAbs, x, options).data)).toEqual([-1 / 32]);
    }
    // The select feeding a nonlinear op: its adjoint has a tangent that must reach the branch
    // taken. exp(u), u = sqrt|x|: f'' = e^u (u'² + u'') = e² (1/16 - 1/32) = e²/32 at ±4.
    for (const x of [4, -4]) {
      const [second] = hvp((v: Var) => sqrtAbs(v).exp(), x, 1, options);
      expect(Math.abs(second! - Math.exp(2) / 32)).toBeLessThanOrEqual(1e-15 * (Math.exp(2) / 32));
    }
    // Two inputs, one branch per input: H = diag(d²/da² log a, d²/db² b³) = diag(-1/a², 6b).
    const f = (x: Var[]): Var => {
      const [a, b] = x as [Var, Var];
      return (select(a.gt(0), a.log(), a.neg().log())).add(select(b.lt(2), b.pow(3), b.mul(1 / 0)));
    };
    expect(Array.from(hessian(f, [-2, 1.5], options).data)).toEqual([-0.25, 0, 0, 9]);
    expect(Array.from(hvp(f, [-2, 1.5], [4, -1], options))).toEqual([-1, -9]);
  });

  it('vjp and jvp through select match the closed form at random points (both branches exercised)', () => {
    // log|x| with both logs recorded: whichever branch is not taken is the log of a negative number.
    const logAbs = (x: Var): Var => where(x.lt(0), x.neg().log(), x.log());
    const f = (x: Var): Var[] => [sqrtAbs(x), logAbs(x)];
    const nonzero = fc.double({ min: -10, max: 10, noNaN: true }).filter((x) => Math.abs(x) >= 1e-100);
    fc.assert(
      fc.property(nonzero, fc.double({ min: -3, max: 3, noNaN: true }), fc.double({ min: -3, max: 3, noNaN: true }), (x, c0, c1) => {
        const dSqrt = Math.sign(x) / (2 * Math.sqrt(Math.abs(x)));
        const dLog = 1 / x;
        const row = vjp(f, x, [c0, c1], options)[0]!;
        const expected = c0 * dSqrt + c1 * dLog;
        expect(Math.abs(row - expected)).toBeLessThanOrEqual(1e-14 * (Math.abs(c0 * dSqrt) + Math.abs(c1 * dLog)));
        const column = jvp(f, x, 1, options);
        expect(Number.isFinite(column[0]!) && Number.isFinite(column[1]!)).toBe(true);
        expect(Math.abs(column[0]! - dSqrt)).toBeLessThanOrEqual(1e-15 * Math.abs(dSqrt));
        expect(Math.abs(column[1]! - dLog)).toBeLessThanOrEqual(1e-15 * Math.abs(dLog));
      }),
      { numRuns: 200 },
    );
  });
});

describe.each(BACKENDS)('comparisons (%s)', (backend) => {
  const options = { backend };
  const compare = {
    lt: (a: number, b: number) => a < b,
    le: (a: number, b: number) => a <= b,
    gt: (a: number, b: number) => a > b,
    ge: (a: number, b: number) => a >= b,
    eq: (a: number, b: number) => a === b,
  } as const;
  const names = Object.keys(compare) as (keyof typeof compare)[];

  it('lt, le, gt, ge, eq are 1 or 0, and their gradient is exactly zero', async () => {
    const tape = await createTape(options);
    for (const [a0, b0] of [[1, 2], [2, 1], [3, 3], [-0, 0], [NaN, 1], [Infinity, Infinity]] as const) {
      for (const name of names) {
        tape.reset();
        const a = tape.variable(a0), b = tape.variable(b0);
        const y = a[name](b);
        expect(y.value, `${a0} ${name} ${b0}`).toBe(compare[name](a0, b0) ? 1 : 0);
        expect(Array.from(tape.gradient(y, [a, b]))).toEqual([0, 0]);
        expect(Array.from(tape.jvp([a, b], [1, 1], [y]))).toEqual([0]);
        expect(Array.from(tape.hvp(y, [a, b], [1, 1]))).toEqual([0, 0]);
      }
    }
  });

  it('a comparison used as a 0/1 factor contributes nothing to the gradient (x · [x > 0] is relu)', () => {
    const relu = (x: Var): Var => x.mul(x.gt(0));
    expect(valueAndGrad(relu, options)(3)).toEqual([3, 1]);
    expect(valueAndGrad(relu, options)(-3)).toEqual([-0, 0]);
    expect(Array.from(jvp(relu, 3, 2, options))).toEqual([2]);
    expect(Array.from(hvp(relu, 3, 1, options))).toEqual([0]);
  });
});

describe.each(BACKENDS)('stopGradient (%s)', (backend) => {
  const options = { backend };

  it('passes the value unchanged, NaN and Infinity included', async () => {
    const tape = await createTape(options);
    for (const x of [1.5, -0, NaN, Infinity, -Infinity, 5e-324]) {
      tape.reset();
      expect(Object.is(tape.variable(x).stopGradient().value, x)).toBe(true);
    }
  });

  it('blocks the gradient: d/dx [x · sg(x)] = sg(x), not 2x', () => {
    const f = (x: Var): Var => x.mul(stopGradient(x));
    expect(valueAndGrad(f, options)(3)).toEqual([9, 3]);
    expect(grad((x: Var) => stopGradient(x.exp()), options)(1)).toBe(0);
    // Gradients flow around the stop through other paths: d/dx [sg(x²) + x³] = 3x².
    expect(grad((x: Var) => x.square().stopGradient().add(x.pow(3)), options)(2)).toBe(12);
  });

  it('blocks the tangent in jvp and the Jacobian in both modes', () => {
    const f = (x: Var[]): Var[] => [x[0]!.mul(x[1]!.stopGradient()), x[0]!.stopGradient().sin()];
    expect(Array.from(jvp(f, [2, 5], [1, 1], options))).toEqual([5, 0]);
    for (const mode of ['forward', 'reverse'] as const) {
      expect(Array.from(jacobian(f, [2, 5], { backend, mode }).data)).toEqual([5, 0, 0, 0]);
    }
  });

  it('blocks second derivatives in hvp: d²/dx² [sg(x) · x² / 2] = sg(x)', () => {
    const f = (x: Var): Var => x.stopGradient().mul(x.square()).mul(0.5);
    expect(Array.from(hvp(f, 3, 1, options))).toEqual([3]);
    expect(Array.from(hessian((x: Var[]) => x[0]!.mul(x[1]!).stopGradient().add(x[0]!.mul(x[1]!)), [2, 7], options).data)).toEqual([0, 1, 1, 0]);
  });
});
