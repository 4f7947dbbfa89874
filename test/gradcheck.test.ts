// gradcheck: passes (ok, dualityError ~ 0) on correct functions, including random DAGs and a full
// custom rule; fails, naming the worst input, on a deliberately wrong custom rule, and throws
// with raise: true. Both backends.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { GradcheckError, MissingRuleError, NotANumberError, TapegradError, defineFunction, finiteDifferenceGradient, gradcheck, init, normwiseError, select, type Var, type Vec } from '../src/index.ts';
import { DAG_OPS, dagArbitrary, operandIndex, type Dag } from './dag-arbitrary.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

// The bug gradcheck must catch: d/dx sin x written as sin x instead of cos x. Its jvp makes the
// same mistake, so the tangent and reverse sweeps agree and only finite differences can tell.
const wrongSin = defineFunction({
  name: 'wrongSin',
  forward: (xs) => Math.sin(xs[0]!),
  vjp: (xs, _y, g) => [g * Math.sin(xs[0]!)],
  jvp: (xs, _y, ts) => ts[0]! * Math.sin(xs[0]!),
});
// The other way round: a correct vjp with a wrong jvp. Finite differences agree with the reverse
// sweep, only the duality check <J t, 1> = <t, Jᵀ 1> can tell.
const wrongJvpSin = defineFunction({
  name: 'wrongJvpSin',
  forward: (xs) => Math.sin(xs[0]!),
  vjp: (xs, _y, g) => [g * Math.cos(xs[0]!)],
  jvp: (xs, _y, ts) => ts[0]! * Math.sin(xs[0]!),
});
// A correct rule with the minimum defineFunction asks for: forward and vjp (jvp is optional).
const minimalSin = defineFunction({
  name: 'minimalSin',
  forward: (xs) => Math.sin(xs[0]!),
  vjp: (xs, _y, g) => [g * Math.cos(xs[0]!)],
});

const rosenbrock = (x: Var[]): Var => {
  let sum = x[1]!.sub(x[0]!.square()).square().mul(100).add(x[0]!.neg().add(1).square());
  for (let i = 1; i + 1 < x.length; i++) sum = sum.add(x[i + 1]!.sub(x[i]!.square()).square().mul(100).add(x[i]!.neg().add(1).square()));
  return sum;
};

function dagOutput(dag: Dag) {
  return (x: Var[]): Var => {
    const values: Var[] = [...x];
    let sum: Var | undefined;
    for (const { op, a, b } of dag.nodes) {
      const n = values.length;
      const v = DAG_OPS[op](values[operandIndex(n, a)]!, values[operandIndex(n, b)]!);
      values.push(v);
      sum = sum ? sum.add(v) : v;
    }
    return sum!;
  };
}

// Rosenbrock and a mix of transcendental ops: correct functions for the first- and second-order checks.
const CORRECT_CASES: [(x: Var[]) => Var, number[]][] = [
  [rosenbrock, [-1.2, 1, 0.5, 2]],
  [([a, b, c]) => a!.mul(b!).sin().add(b!.exp().mul(c!.log1p())).add(a!.atan2(c!.add(2))), [0.3, -0.8, 1.4]],
  [([a, b]) => a!.tanh().pow(b!.sigmoid()).add(a!.hypot(b!)), [0.6, -2.2]],
];

describe.each(BACKENDS)('gradcheck on correct functions (%s)', (backend) => {
  it('passes on Rosenbrock and a mix of transcendental ops, with dualityError ~ 0', () => {
    for (const [f, x] of CORRECT_CASES) {
      const r = gradcheck(f, x, { backend });
      expect(r.ok).toBe(true);
      expect(r.error).toBeLessThanOrEqual(1e-7);
      expect(r.dualityError).toBeLessThanOrEqual(1e-14);
      expect(r.analytic.length).toBe(x.length);
      expect(r.numeric.length).toBe(x.length);
    }
  });

  it('its numeric gradient is the 6-point central difference (Rosenbrock closed form to 1e-8)', () => {
    const x = [-1.2, 1];
    const exact = [-400 * x[0]! * (x[1]! - x[0]! ** 2) - 2 * (1 - x[0]!), 200 * (x[1]! - x[0]! ** 2)];
    const r = gradcheck(rosenbrock, x, { backend });
    for (let k = 0; k < 2; k++) {
      expect(Math.abs(r.numeric[k]! - exact[k]!) / Math.max(1, Math.abs(exact[k]!))).toBeLessThanOrEqual(1e-8);
      expect(r.analytic[k]).toBeCloseTo(exact[k]!, 10);
    }
    // and it agrees with the public finiteDifferenceGradient on the plain-number function
    const plain = (p: Float64Array): number => 100 * (p[1]! - p[0]! ** 2) ** 2 + (1 - p[0]!) ** 2;
    const fd = finiteDifferenceGradient(plain, x);
    for (let k = 0; k < 2; k++) expect(Math.abs(r.numeric[k]! - fd[k]!)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(fd[k]!)));
  });

  it('passes on random DAGs (fast-check)', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxInputs: 8, maxNodes: 120 }), (dag) => {
        const r = gradcheck(dagOutput(dag), dag.inputs, { backend });
        expect(r.error, `worst input ${r.worst}`).toBeLessThanOrEqual(1e-7);
        expect(r.dualityError).toBeLessThanOrEqual(1e-12);
        expect(r.ok).toBe(true);
      }),
      { numRuns: 150 },
    );
  });

  // Found by a probe: both sweeps are exact for a linear function, yet terms near 1e8 that cancel
  // to about 0 round by 1e-8 in the reverse sum, which dualityError divided by max(1, |forward|).
  it('passes on terms that cancel: dualityError is relative to their size', () => {
    const r = gradcheck((x: Var[]) => x[0]!.mul(1.6280415289703132).sub(x[1]!.mul(1.006185)).mul(108650000), [0.3, 0.7], { backend });
    expect(r.dualityError).toBeLessThanOrEqual(1e-12);
    expect(r.ok).toBe(true);
  });

  it('passes on a correct custom rule, with or without raise', () => {
    const lse = defineFunction({
      name: 'lse2',
      forward: (xs) => Math.max(xs[0]!, xs[1]!) + Math.log1p(Math.exp(-Math.abs(xs[0]! - xs[1]!))),
      vjp: (xs, y, g) => [g * Math.exp(xs[0]! - y), g * Math.exp(xs[1]! - y)],
      jvp: (xs, y, ts) => Math.exp(xs[0]! - y) * ts[0]! + Math.exp(xs[1]! - y) * ts[1]!,
    });
    const f = ([a, b]: Var[]): Var => lse(a!.mul(b!), b!.sin()).mul(a!);
    expect(gradcheck(f, [0.4, -1.1], { backend }).ok).toBe(true);
    expect(gradcheck(f, [0.4, -1.1], { backend, raise: true }).ok).toBe(true);
  });
});

// A probe: a function of size 1e7 failed an exact gradient at 8e-7, and x0·x1 + x1² at [1e6, 1]
// its second order at 6e-7, both far under the stencil's rounding; and sqrt at -1 passed.
describe.each(BACKENDS)('gradcheck judges beyond the finite differences\' rounding (%s)', (backend) => {
  it('a correct gradient of a large function passes, first and second order', () => {
    expect(gradcheck((x: Var) => x.add(1e7), 1, { backend }).ok).toBe(true);
    const f = (z: Var[]): Var => z[0]!.mul(z[1]!).add(z[1]!.square());
    for (const at of [[1e6, 1], [1e9, 1]]) expect(gradcheck(f, at, { backend, order: 2 }).ok, `at ${at}`).toBe(true);
    expect(gradcheck((z: Var[]) => z[0]!.square().mul(z[1]!).add(z[1]!.log()), [1e5, 1], { backend, order: 2 }).ok).toBe(true);
    // Subnormal values round to the least subnormal, not relatively (a probe: a step of 5e-324 at
    // 1e-310 made the differences 2 for a gradient of 3, and a correct gradient failed).
    expect(gradcheck((x: Var) => x.mul(3), 1e-310, { backend, step: () => 5e-324 }).ok).toBe(true);
    expect(gradcheck((x: Var) => x.mul(3.5), 1e-310, { backend, step: () => 5e-320 }).ok).toBe(true);
  });
  it('a wrong one at the same size still fails, the message giving the rounding', () => {
    const off = defineFunction({ name: 'off', forward: (xs) => xs[0]! * xs[0]! + 1e7, vjp: (xs, _y, g) => [g * 2.001 * xs[0]!], jvp: (xs, _y, ts) => 2.001 * xs[0]! * ts[0]! });
    const r = gradcheck((x: Var) => off(x), 3, { backend });
    expect(r.ok).toBe(false);
    expect(() => gradcheck((x: Var) => off(x), 3, { backend, raise: true })).toThrow(/^gradcheck failed: normwise error .* whose rounding there is up to \d/);
  });
  it('a NaN gradient never passes, and f must return a number', () => {
    expect(gradcheck((x: Var) => x.sqrt(), -1, { backend }).ok).toBe(false);
    // NaN values on one side of the stencil: a NaN finite difference against a finite gradient
    // (its rounding estimate is NaN too, which must not excuse it).
    const edge = gradcheck((x: Var) => select(x.gt(1 + 1e-7), x.mul(0).log().mul(0), 0).add(x), 1, { backend });
    expect([edge.ok, edge.error, Number.isNaN(edge.numeric[0])]).toEqual([false, Infinity, true]);
    expect(() => gradcheck((x: Var) => x.log(), -1, { backend, raise: true })).toThrow('gradcheck failed: the gradient is NaN at input 0');
    expect(() => finiteDifferenceGradient(() => null as unknown as number, [2])).toThrow(NotANumberError);
    expect(() => finiteDifferenceGradient(() => '4' as unknown as number, 2)).toThrow('finiteDifferenceGradient: f must return a number, got the string "4"');
    // An array of one output is what grad calls it, INVALID_ARGUMENT (it was NOT_A_NUMBER here: a probe).
    const arrayOut = (x: Var[]): Var => [x[0]!.square()] as unknown as Var;
    expect(() => gradcheck(arrayOut, [1], { backend })).toThrow(/^gradcheck: the function returned an array of 1; gradcheck needs one scalar output/);
    expect(() => gradcheck(arrayOut, [1], { backend })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as never);
  });
});

it('gradcheck and finiteDifferenceGradient refuse a step that is not a finite positive number, and a tolerance below 0 or NaN', () => {
  // Found by a new-user probe: they gave ok: false with NaN numbers, or failed every check, with no word why.
  const f = (x: Var[]): Var => x[0]!.square().add(x[1]!);
  for (const step of [() => 0, () => NaN, () => -1e-3, () => Infinity]) {
    expect(() => gradcheck(f, [1, 2], { step })).toThrow(/^gradcheck: step\(1, 0\) must return a finite positive number, got/);
    expect(() => finiteDifferenceGradient((x) => x[0]! * x[0]!, [1], { step })).toThrow(/^finiteDifferenceGradient: step\(1, 0\) must return a finite positive number, got/);
  }
  for (const tolerance of [NaN, -1e-7]) expect(() => gradcheck(f, [1, 2], { tolerance })).toThrow(/^gradcheck: tolerance must be a number >= 0/);
  // At a point that is not finite the default step is no number: the message names the point
  // (it named a step function nobody passed).
  for (const bad of [NaN, Infinity, -Infinity]) {
    expect(() => gradcheck(f, [1, bad])).toThrow(new RegExp(`^gradcheck: input 1 is ${bad}, not a finite point$`));
    expect(() => finiteDifferenceGradient((x) => x * x, bad)).toThrow(new RegExp(`^finiteDifferenceGradient: input 0 is ${bad}, not a finite point$`));
  }
  expect(gradcheck(f, [1, 2], { tolerance: 0.1 }).ok).toBe(true);
});

// Found by a probe: the stencil ran before f was recorded at x, and under finiteDifferenceGradient's
// name, so these named x + h or the wrong function.
describe.each(BACKENDS)('gradcheck errors name gradcheck and the caller\'s point (%s)', (backend) => {
  it('a number with vector: true shows the number given, not x + h', () => {
    const call = (): unknown => gradcheck((v: Vec) => v.sum(), 2 as never, { backend, vector: true });
    expect(call).toThrow(NotANumberError);
    expect(call).toThrow(/^gradcheck: with \{ vector: true \} the input must be an array of numbers \(one Vec\), got the number 2$/);
  });

  it('a point that is not finite, and a bad step, under gradcheck\'s name, with order 2 too', () => {
    for (const order of [1, 2] as const) {
      expect(() => gradcheck((x: Var) => x.exp(), NaN, { backend, order })).toThrow(/^gradcheck: input 0 is NaN, not a finite point$/);
      expect(() => gradcheck((x: Var) => x.exp(), 1, { backend, order, step: () => -1 })).toThrow(
        /^gradcheck: step\(1, 0\) must return a finite positive number, got -1$/,
      );
    }
  });

  // A probe: a step that x ± h rounds away gave finite differences of 0 and a rounding bound so
  // large that a gradient twice the true one passed, at both orders.
  it('a step that does not move the input is refused, not taken for a check that passed', () => {
    const twice = defineFunction({
      name: 'twice', forward: ([a]) => a! * a!, vjp: ([a], _y, g) => [g * 4 * a!], jvp: ([a], _y, [t]) => 4 * a! * t!, vjpTangent: (_xs, _y, g, [t]) => [g * 4 * t!],
    });
    for (const order of [1, 2] as const) {
      expect(() => gradcheck((x: Var) => twice(x), 1e7, { backend, order, step: () => 1e-10 })).toThrow(
        /^gradcheck: step\(10000000, 0\) = 1e-10 does not move input 0: 10000000 ± 1e-10 rounds to 10000000$/,
      );
    }
    expect(() => finiteDifferenceGradient((x: number) => x * x, 1e7, { step: () => 1e-10 })).toThrow(/^finiteDifferenceGradient: step\(10000000, 0\) = 1e-10 does not move input 0/);
    expect(gradcheck((x: Var) => twice(x), 1e7, { backend, step: () => 1 }).ok).toBe(false);
  });

  // A probe: f NaN around the point (sqrt at -1) made every finite difference NaN, and raise named
  // input 1, whose gradient was right, instead of input 0, whose gradient is NaN.
  it('a point outside f\'s domain names the input whose gradient is NaN', () => {
    expect(() => gradcheck((x: Var[]) => x[0]!.sqrt().add(x[1]!), [-1, 2], { backend, raise: true })).toThrow(
      /^gradcheck failed: the gradient is NaN at input 0 \(a point outside f's domain checks nothing\)$/,
    );
    // And so does the result's worst (a later probe's named the other input, whose gradient was
    // right and whose finite difference NaN: the normwise error's largest), returned or thrown.
    const f = (x: Var[]): Var => x[0]!.add(x[1]!.log());
    expect(gradcheck(f, [2, -1], { backend })).toMatchObject({ ok: false, worst: 1, error: Infinity });
    let thrown: unknown;
    try {
      gradcheck(f, [2, -1], { backend, raise: true });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ message: expect.stringMatching(/NaN at input 1 /), result: { worst: 1 } });
  });

  // README: a pole a few steps away fails an exact gradient by the stencil's truncation error (a
  // probe), and a smaller step passes.
  it('near a pole the default step fails an exact gradient, a smaller one passes', () => {
    const f = (x: Var): Var => x.log1p();
    expect(gradcheck(f, -1 + 1e-4, { backend }).ok).toBe(false);
    expect(gradcheck(f, -1 + 1e-4, { backend, step: () => 1e-8 }).ok).toBe(true);
  });
});

describe.each(BACKENDS)('gradcheck on wrong rules (%s)', (backend) => {
  it('fails on a custom sin whose vjp returns g·sin x, and names its input as the worst', () => {
    const [x0, x1, x2] = [0.7, -0.4, 0.3];
    const r = gradcheck(([a, b, c]) => a!.mul(b!).add(wrongSin(c!)), [x0, x1, x2], { backend });
    expect(r.ok).toBe(false);
    expect(r.worst).toBe(2);
    expect(r.analytic[2]).toBeCloseTo(Math.sin(x2), 15);
    expect(r.numeric[2]).toBeCloseTo(Math.cos(x2), 9);
    // normwise: |sin - cos| / max(1, max |numeric|), and max |numeric| = cos 0.3 < 1 here
    expect(r.error).toBeCloseTo(Math.cos(x2) - Math.sin(x2), 9);
    // the other components are right
    expect(r.analytic[0]).toBe(x1);
    expect(r.analytic[1]).toBe(x0);
    // its jvp is consistent with its (wrong) vjp, so only finite differences caught it
    expect(r.dualityError).toBeLessThanOrEqual(1e-15);
  });

  it('names whichever input is wrong, scaling the error by the largest gradient', () => {
    const r = gradcheck(([a, b]) => wrongSin(a!).add(b!.mul(10)), [1.2, 5], { backend });
    expect(r.ok).toBe(false);
    expect(r.worst).toBe(0);
    expect(r.error).toBeCloseTo(Math.abs(Math.sin(1.2) - Math.cos(1.2)) / 10, 9);
  });

  it('with raise: true throws a TapegradError naming the input and both values', () => {
    const f = ([a, b, c]: Var[]): Var => a!.mul(b!).add(wrongSin(c!));
    let caught: unknown;
    try {
      gradcheck(f, [0.7, -0.4, 0.3], { backend, raise: true });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TapegradError);
    // A wrong gradient is no bad argument: its own code, not INVALID_ARGUMENT.
    expect((caught as TapegradError).code).toBe('GRADCHECK_FAILED');
    // ...and the result gradcheck would have returned, for code that inspects it (it had no fields).
    expect(caught).toBeInstanceOf(GradcheckError);
    const { result } = caught as GradcheckError;
    expect(result).toEqual(gradcheck(f, [0.7, -0.4, 0.3], { backend }));
    expect([result.ok, result.worst, result.analytic[2], result.numeric[2]]).toEqual([false, 2, Math.sin(0.3), expect.closeTo(Math.cos(0.3), 8)]);
    const message = (caught as Error).message;
    expect(message).toMatch(/gradcheck failed: normwise error \S+, beyond the finite differences. rounding at input 2 /);
    // analytic sin 0.3 = 0.29552..., finite difference cos 0.3 = 0.95533...
    expect(message).toMatch(/analytic 0\.29552\d*, finite difference 0\.95533\d*/);
  });

  it('fails through dualityError on a correct vjp with a wrong jvp', () => {
    const r = gradcheck(([a, b]) => wrongJvpSin(a!).mul(b!), [0.9, 1.5], { backend });
    expect(r.error).toBeLessThanOrEqual(1e-7);
    expect(r.dualityError).toBeGreaterThan(1e-3);
    expect(r.ok).toBe(false);
    expect(() => gradcheck(([a, b]) => wrongJvpSin(a!).mul(b!), [0.9, 1.5], { backend, raise: true })).toThrow(
      expect.objectContaining({ code: 'GRADCHECK_FAILED', message: expect.stringMatching(/tangent sweep disagrees with the reverse sweep/) }),
    );
  });

  it('fails through dualityError on a jvp that returns NaN or an infinity where the reverse sweep is finite', () => {
    for (const bad of [NaN, Infinity]) {
      const sq = defineFunction({ name: 'badJvpSquare', forward: (xs) => xs[0]! * xs[0]!, vjp: (xs, _y, g) => [2 * xs[0]! * g], jvp: () => bad });
      const r = gradcheck((x: Var[]) => sq(x[0]!), [1.5], { backend });
      expect(r.error).toBeLessThanOrEqual(1e-7);
      expect(r.dualityError).toBe(Infinity);
      expect(r.ok).toBe(false);
      expect(() => gradcheck((x: Var[]) => sq(x[0]!), [1.5], { backend, raise: true })).toThrow(/tangent sweep disagrees with the reverse sweep/);
    }
  });

  it('a looser tolerance accepts what the default rejects', () => {
    const f = (a: Var): Var => wrongSin(a).mul(0.001).add(a);
    expect(gradcheck(f, 0.3, { backend }).ok).toBe(false);
    expect(gradcheck(f, 0.3, { backend, tolerance: 1e-3 }).ok).toBe(true);
  });
});

// defineFunction documents jvp as optional ("needed for jvp, forward-mode jacobian and hvp"), and
// checking a hand-written vjp is what gradcheck is for; but gradcheck always runs a tangent sweep
// for dualityError, so on a rule without jvp it throws "has no jvp rule" instead of checking the
// gradient. Suggested fix (src/check.ts): run the duality check only when the tangent sweep can
// run (catch the missing-rule error, or have CustomNodes report it) and report dualityError NaN,
// with ok decided by the finite-difference check alone.
describe.each(BACKENDS)('gradcheck on a custom rule with only forward and vjp (%s)', (backend) => {
  it('checks the gradient instead of throwing for the missing jvp', () => {
    const f = ([a, b]: Var[]): Var => minimalSin(a!).mul(b!);
    let result: ReturnType<typeof gradcheck> | undefined;
    expect(() => {
      result = gradcheck(f, [0.9, 1.5], { backend });
    }).not.toThrow();
    expect(result!.error).toBeLessThanOrEqual(1e-7);
    expect(result!.analytic[0]).toBeCloseTo(Math.cos(0.9) * 1.5, 15);
  });
});

// The direction gradcheck takes: t_k = 1 + frac(k·0.618...).
const direction = (n: number): number[] => Array.from({ length: n }, (_, k) => 1 + ((k * 0.618033988749895) % 1));
// sin(a)·b with its second-order rule vjpTangent = g·H·t, H = [[-sin a·b, cos a], [cos a, 0]]; the
// wrong one drops the cos a·t_b term, which first order and the duality check never run.
const sinTimes = (wrong: boolean) => defineFunction({
  name: wrong ? 'sinTimesWrongCurvature' : 'sinTimes',
  forward: (xs) => Math.sin(xs[0]!) * xs[1]!,
  vjp: (xs, _y, g) => [g * Math.cos(xs[0]!) * xs[1]!, g * Math.sin(xs[0]!)],
  jvp: (xs, _y, ts) => Math.cos(xs[0]!) * xs[1]! * ts[0]! + Math.sin(xs[0]!) * ts[1]!,
  vjpTangent: (xs, _y, g, ts) => [g * (-Math.sin(xs[0]!) * xs[1]! * ts[0]! + (wrong ? 0 : Math.cos(xs[0]!) * ts[1]!)), g * Math.cos(xs[0]!) * ts[0]!],
});

describe.each(BACKENDS)('gradcheck with order: 2 (%s)', (backend) => {
  it('passes on Rosenbrock and a mix of transcendental ops, secondOrderError ~ 0; order 1 leaves it NaN', () => {
    for (const [f, x] of CORRECT_CASES) {
      const r = gradcheck(f, x, { backend, order: 2 });
      expect(r.secondOrderError).toBeLessThanOrEqual(1e-9);
      expect(r.ok).toBe(true);
      expect(gradcheck(f, x, { backend }).secondOrderError).toBeNaN();
    }
  });

  it('passes on random DAGs of every smooth op (fast-check): each op\'s second-order rules against finite differences', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxInputs: 8, maxNodes: 120 }), (dag) => {
        const r = gradcheck(dagOutput(dag), dag.inputs, { backend, order: 2 });
        expect(r.secondOrderError).toBeLessThanOrEqual(1e-7);
        expect(r.ok).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('passes on a correct vjpTangent, and through a Vec with vector: true', () => {
    const f = ([a, b, c]: Var[]): Var => sinTimes(false)(a!.mul(c!), b!.exp()).mul(a!);
    const r = gradcheck(f, [0.4, -0.3, 1.7], { backend, order: 2 });
    expect(r.secondOrderError).toBeLessThanOrEqual(1e-9);
    expect(r.ok).toBe(true);
    const v = gradcheck((x: Vec) => x.exp().mul(x.sin()).sum().log(), [0.2, -0.5, 1.1], { backend, vector: true, order: 2 });
    expect(v.secondOrderError).toBeLessThanOrEqual(1e-9);
    expect(v.ok).toBe(true);
  });

  it('fails on a wrong vjpTangent that order 1 passes, by the dropped term, and raise names the input and both values', () => {
    const [a, b] = [0.4, 1.3];
    const [ta, tb] = direction(2) as [number, number];
    const f = ([x, y]: Var[]): Var => sinTimes(true)(x!, y!);
    const first = gradcheck(f, [a, b], { backend });
    expect(first.ok).toBe(true);
    expect(first.dualityError).toBeLessThanOrEqual(1e-15);
    const r = gradcheck(f, [a, b], { backend, order: 2 });
    expect(r.ok).toBe(false);
    expect(r.error).toBeLessThanOrEqual(1e-7);
    // H·t = (-sin a·b·ta + cos a·tb, cos a·ta); the rule's first entry lacks cos a·tb.
    const exact = [-Math.sin(a) * b * ta + Math.cos(a) * tb, Math.cos(a) * ta];
    expect(r.secondOrderError).toBeCloseTo((Math.cos(a) * tb) / Math.max(1, ...exact.map(Math.abs)), 8);
    // The input the failure names, in the result too (a probe read `worst`, the first order's).
    expect(r.secondOrderWorst).toBe(0);
    expect(first.secondOrderWorst).toBe(-1);
    let caught: unknown;
    try {
      gradcheck(f, [a, b], { backend, order: 2, raise: true });
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TapegradError);
    expect((caught as TapegradError).code).toBe('GRADCHECK_FAILED');
    const message = (caught as Error).message;
    expect(message).toMatch(/^gradcheck failed: hvp off the finite differences of the gradient: normwise error \S+, beyond their rounding at input 0 \(hvp (\S+), finite difference (\S+), whose rounding there is up to \S+\)$/);
    const [, hvpShown, fdShown] = /hvp (\S+), finite difference (\S+),/.exec(message)!;
    expect(Number(hvpShown)).toBeCloseTo(-Math.sin(a) * b * ta, 12);
    expect(Number(fdShown)).toBeCloseTo(exact[0]!, 8);
  });

  it('steps each input by its own step, so inputs of different sizes pass (one step along t failed them)', () => {
    const cases: [(x: Var[]) => Var, number[]][] = [
      [(x) => x[0]!.mul(x[1]!).sin(), [1000, 0.5]],
      [(x) => x[0]!.log().add(x[1]!.log()), [1e4, 1]],
      [(x) => x[1]!.tanh().mul(x[0]!), [1e3, 0.5]],
    ];
    for (const [f, x] of cases) {
      const r = gradcheck(f, x, { backend, order: 2 });
      expect(r.secondOrderError).toBeLessThanOrEqual(1e-9);
      expect(r.ok).toBe(true);
    }
  });

  it('throws the missing rule for a custom function without vjpTangent, which order 1 checks', () => {
    const noCurvature = defineFunction({
      name: 'sinTimesNoVjpTangent',
      forward: (xs) => Math.sin(xs[0]!) * xs[1]!,
      vjp: (xs, _y, g) => [g * Math.cos(xs[0]!) * xs[1]!, g * Math.sin(xs[0]!)],
      jvp: (xs, _y, ts) => Math.cos(xs[0]!) * xs[1]! * ts[0]! + Math.sin(xs[0]!) * ts[1]!,
    });
    const f = ([x, y]: Var[]): Var => noCurvature(x!, y!);
    expect(gradcheck(f, [0.4, 1.3], { backend }).ok).toBe(true);
    expect(() => gradcheck(f, [0.4, 1.3], { backend, order: 2 })).toThrow(
      expect.objectContaining({ name: 'MissingRuleError', functionName: 'sinTimesNoVjpTangent', rule: 'vjpTangent' }),
    );
    expect(() => gradcheck(f, [0.4, 1.3], { backend, order: 2 })).toThrow(MissingRuleError);
  });
});

it('gradcheck takes order 1 or 2 only', () => {
  const f = (x: Var[]): Var => x[0]!.square();
  for (const order of [3, 0, '2', true]) {
    expect(() => gradcheck(f, [1], { order: order as never })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^gradcheck: option 'order' must be one of 1, 2, got /) }),
    );
  }
  expect(gradcheck(f, [1], { order: 1 }).ok).toBe(true);
});

// It compared entry by entry over ref alone: a short g read undefined and reported no error.
it('normwiseError refuses arrays of different lengths, and measures the error of equal ones', () => {
  const short = (): unknown => normwiseError(Float64Array.of(1, 2), Float64Array.of(1));
  expect(short).toThrow(TapegradError);
  expect(short).toThrow('g has 2 entries and ref 1');
  expect(() => normwiseError([1], [1, 5])).toThrow('g has 1 entries and ref 2');
  expect(() => normwiseError(3 as unknown as number[], [1])).toThrow('g must be an array of numbers');
  expect(normwiseError([1, 2.5], [1, 2])).toEqual({ error: 0.25, worst: 1 });
  expect(normwiseError([NaN, 1], [NaN, 1])).toEqual({ error: 0, worst: 0 });
  // A probe: a - b overflowed between two finite extremes, and strings were compared as equal.
  expect(normwiseError([1.7e308], [-1.7e308])).toEqual({ error: 2, worst: 0 });
  // No component, no input to name: -1, as gradcheck's worst of a function of no inputs (0 named
  // one there was none of).
  expect(normwiseError([], [])).toEqual({ error: 0, worst: -1 });
  expect(gradcheck((x: Vec) => x.sum(), [], { vector: true, order: 2 })).toMatchObject({ ok: true, error: 0, worst: -1, secondOrderWorst: -1 });
  expect(() => normwiseError(['a'] as unknown as number[], ['a'] as unknown as number[])).toThrow('normwiseError: entry 0 of g must be a number, got the string "a"');
});
