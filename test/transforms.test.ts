// grad, valueAndGrad, vjp and jvp on functions whose derivatives we know in closed form, on both
// backends, and the errors they document for bad inputs. The expected values are computed here
// from the closed forms with V8's Math, so the tolerances only cover last-bit differences between
// the wasm (musl) and V8 transcendental functions and summation order.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  NotANumberError, TapegradError, compile, createTape, finiteDifferenceGradient, grad, gradcheck, hessian, hvp, init, jacobian, jvp, normwiseError, valueAndGrad, vjp, type Var, type Vec,
} from '../src/index.ts';
import { BACKENDS, expectClose, rosenbrock } from './support.ts';
import { heldLargeTape, keptLargeTape, pooledTapes, smallTapePool, transformPool } from '../src/transforms.ts';

beforeAll(async () => {
  await init();
});



function rosenbrockGradient(x: readonly number[]): number[] {
  const n = x.length;
  return x.map((xi, i) => {
    let g = 0;
    if (i + 1 < n) g += -400 * xi * (x[i + 1]! - xi * xi) - 2 * (1 - xi);
    if (i > 0) g += 200 * (xi - x[i - 1]! * x[i - 1]!);
    return g;
  });
}

const ROSENBROCK_POINTS: readonly number[][] = [
  [1, 1],
  [-1.2, 1],
  [0, 0],
  [0.5, -0.3, 1.7, 2, -1.1],
  [1, 1, 1, 1, 1, 1],
];

// f(x) = [x0*x1, sin(x0), exp(x1)], J = [[x1, x0], [cos x0, 0], [0, exp x1]].
const threeOutputs = (x: Var[]): Var[] => [x[0]!.mul(x[1]!), x[0]!.sin(), x[1]!.exp()];

describe.each(BACKENDS)('grad, valueAndGrad, vjp, jvp on closed forms (%s)', (backend) => {
  const options = { backend };

  it('grad of Rosenbrock matches its closed-form gradient, and is exactly 0 at the minimum', () => {
    const g = grad(rosenbrock, options);
    for (const x of ROSENBROCK_POINTS) expectClose(g(x), rosenbrockGradient(x), 1e-15);
    // At (1, ..., 1) every term is 100 * 0^2 + 0^2: every partial is an exact 0.
    expect(Array.from(g([1, 1, 1, 1]))).toEqual([0, 0, 0, 0]);
  });

  it('grad returns a number for a scalar input and a Float64Array for arrays and Float64Arrays', () => {
    const dsin = grad((x: Var) => x.sin(), options);
    const scalar = dsin(0.5);
    expect(typeof scalar).toBe('number');
    expect(scalar).toBeCloseTo(Math.cos(0.5), 15);

    const dsum = grad((x: Var[]) => x[0]!.mul(x[1]!).add(x[1]!), options);
    for (const input of [[3, 4], Float64Array.of(3, 4)]) {
      const g = dsum(input);
      expect(g).toBeInstanceOf(Float64Array);
      // d/dx0 (x0 x1 + x1) = x1, d/dx1 = x0 + 1: exact in floating point.
      expect(Array.from(g)).toEqual([4, 4]);
    }
    // A one-element array is still an array input: the caller gets a Float64Array back.
    const one = grad((x: Var[]) => x[0]!.square(), options)([3]);
    expect(one).toBeInstanceOf(Float64Array);
    expect(Array.from(one)).toEqual([6]);
  });

  it('grad of a function that ignores its input (or returns a number) is exactly zero', () => {
    expect(grad((x: Var[]) => x[0]!.tape.constant(2).exp(), options)([1, 2])).toEqual(new Float64Array(2));
    expect(grad((_x: Var) => 7, options)(3)).toBe(0);
  });

  // A probe: the caught refusal of an async f was followed by an unhandled rejection of its
  // Promise (a stale Var once the tape was reset), which ends a Node process by default.
  it('an async function is refused by name, and its Promise rejects into nothing', async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      const asyncF = async (x: Var): Promise<Var> => { await null; return x.sin(); };
      expect(() => grad(asyncF as unknown as (x: Var) => Var, { backend })(1)).toThrow(/must return a Var or a number, got a Promise: an async function cannot be differentiated/);
      expect(() => compile(asyncF as unknown as (x: Var[]) => Var, { inputs: 1, backend }).value([1])).toThrow(/got a Promise/);
      // finiteDifferenceGradient too (a probe: a rejecting async f ended the process).
      const rejecting = async (): Promise<number> => { throw new Error('boom'); };
      expect(() => finiteDifferenceGradient(rejecting as unknown as (x: Float64Array) => number, [1])).toThrow(/f must return a number, got a Promise: an async function cannot be differentiated/);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', record);
    }
  });

  // A probe: a hole in the function's array of outputs reached the sweep as undefined, refused
  // there under its name ('jvp:' for jacobian).
  it('a hole in the array of outputs is refused by the transform, naming the output', () => {
    // eslint-disable-next-line no-sparse-arrays
    const holed = (x: Var): Var[] => [x, , x] as Var[];
    for (const [what, act] of [
      ['jacobian', () => jacobian(holed, 0.5, options)], ['jacobian', () => jacobian(holed, 0.5, { ...options, mode: 'reverse' })],
      ['vjp', () => vjp(holed, 0.5, [1, 1, 1], options)], ['jvp', () => jvp(holed, 0.5, 1, options)],
    ] as const) {
      expect(act, what).toThrow(new RegExp(`^${what}: output 1 of the function's array must return a Var or a number, got undefined$`));
    }
    expect(Array.from(jacobian((x: Var) => [x, x.square()], 0.5, options).data)).toEqual([1, 1]);
  });

  // A probe: grad(f, options) read the caller's object again at every call, so a value changed
  // after (vector: 'yes', an unknown key, backend: 'gpu') went unchecked or failed by another name.
  it('grad and valueAndGrad keep the options they were given, as checked then', () => {
    const given: Record<string, unknown> = { backend };
    const g = grad((x: Var) => x.square().mul(x), given), vg = valueAndGrad((x: Var) => x.square(), given);
    Object.assign(given, { vector: 'yes', bogus: 1, backend: 'gpu' });
    expect(g(2)).toBe(12);
    expect(vg(3)).toEqual([9, 6]);
  });

  it('valueAndGrad gives f(x) and its gradient from one recording', () => {
    // f = x0^2 x1 + exp(x1): grad = [2 x0 x1, x0^2 + exp(x1)].
    const vg = valueAndGrad((x: Var[]) => x[0]!.square().mul(x[1]!).add(x[1]!.exp()), options);
    const [value, g] = vg([3, -0.5]);
    expect(value).toBeCloseTo(9 * -0.5 + Math.exp(-0.5), 14);
    expectClose(g, [2 * 3 * -0.5, 9 + Math.exp(-0.5)], 1e-15);

    const [v1, g1] = valueAndGrad((x: Var) => x.log().mul(x), options)(2);
    expect(v1).toBeCloseTo(2 * Math.log(2), 15);
    expect(typeof g1).toBe('number');
    expect(g1).toBeCloseTo(Math.log(2) + 1, 15);
  });

  it('vjp with a non-trivial cotangent gives cᵀJ in one call', () => {
    const [x0, x1] = [0.7, -1.3];
    const c = [2, -3, 0.5];
    const expected = [c[0]! * x1 + c[1]! * Math.cos(x0), c[0]! * x0 + c[2]! * Math.exp(x1)];
    expectClose(vjp(threeOutputs, [x0, x1], c, options), expected, 1e-15);
    expectClose(vjp(threeOutputs, Float64Array.of(x0, x1), Float64Array.from(c), options), expected, 1e-15);
    // A zero cotangent on an output drops its row entirely.
    expectClose(vjp(threeOutputs, [x0, x1], [0, 1, 0], options), [Math.cos(x0), 0], 1e-15);
  });

  it('vjp with the same output listed twice adds both cotangents', () => {
    // [y, y, x0] with y = x0 x1 and c = [1, 2, 5]: 3 ∇y + 5 e0 = [3 x1 + 5, 3 x0]
    const f = (x: Var[]): Var[] => {
      const y = x[0]!.mul(x[1]!);
      return [y, y, x[0]!];
    };
    expect(Array.from(vjp(f, [2, 3], [1, 2, 5], options))).toEqual([14, 6]);
    expect(Array.from(jvp(f, [2, 3], [1, -1], options))).toEqual([1, 1, 1]);
  });

  // A probe: the tape added each tangent to +0, so a tangent of -0 on an output that is an input
  // (or selects one) came out +0 from jvp and -0 from the compiled function.
  it('jvp passes a tangent of -0 through to an output that is an input, as a compiled jvp does', async () => {
    const f = (x: Var[]): Var[] => [x[0]!, x[0]!.tape.select(x[1]!.gt(0), x[0]!, x[1]!), x[0]!.mul(2)];
    const compiled = compile(f, { inputs: 2, backend });
    for (const t of [[-0, 1], [-0, -0], [0, -0], [Number.NaN, -0]]) {
      const tape = jvp(f, [1.5, 2], t, options), replayed = compiled.jvp([1.5, 2], t);
      expect(Object.is(tape[0], t[0]), `t = ${t}`).toBe(true);
      expect(Object.is(tape[1], t[0]), `t = ${t}`).toBe(true);
      tape.forEach((v, k) => expect(Object.is(v, replayed[k]), `t = ${t}, output ${k}`).toBe(true));
    }
    // An input listed twice still gets the sum of its tangents.
    const taped = await createTape({ backend });
    const x = taped.variable(1.5);
    expect(Array.from(taped.jvp([x, x], [-0, -0], [x]))).toEqual([-0]);
    expect(Array.from(taped.jvp([x, x], [2, 3], [x.mul(x)]))).toEqual([15]);
    const v = taped.vector([1, 2]);
    expect(Object.is(taped.jvp([v], [-0, 1], [v])[0], -0)).toBe(true);
  });

  it('vjp of a scalar function with a number cotangent is that multiple of the gradient', () => {
    const x = [-1.2, 1, 0.4];
    const expected = rosenbrockGradient(x).map((g) => -2.5 * g);
    expectClose(vjp(rosenbrock, x, -2.5, options), expected, 1e-15);
  });

  it('jvp gives J·t, and a scalar-input jvp takes a number tangent', () => {
    const [x0, x1] = [0.7, -1.3];
    const t = [0.25, -4];
    const expected = [x1 * t[0]! + x0 * t[1]!, Math.cos(x0) * t[0]!, Math.exp(x1) * t[1]!];
    expectClose(jvp(threeOutputs, [x0, x1], t, options), expected, 1e-15);

    // d/dx [x^3, atan(x)] at 2 along 3: [3 * 12, 3 / 5].
    const out = jvp((x: Var) => [x.pow(3), x.atan()], 2, 3, options);
    expectClose(out, [36, 0.6], 1e-15);
  });

  it('jvp and vjp of the same function agree with the closed-form Jacobian entry by entry', () => {
    const x = [0.3, 2.1];
    const J = [[x[1]!, x[0]!], [Math.cos(x[0]!), 0], [0, Math.exp(x[1]!)]];
    for (let k = 0; k < 2; k++) {
      const e = [0, 0];
      e[k] = 1;
      expectClose(jvp(threeOutputs, x, e, options), J.map((row) => row[k]!), 1e-15);
    }
    for (let j = 0; j < 3; j++) {
      const e = [0, 0, 0];
      e[j] = 1;
      expectClose(vjp(threeOutputs, x, e, options), J[j]!, 1e-15);
    }
  });
});

// A probe: f reordering or writing into the array it receives changed the list the gradient was
// taken for, so every transform (and gradcheck) answered silently for other inputs; compile gave
// the right answer. f now gets an array of its own.
describe.each(BACKENDS)('f may reorder or write into the array it receives (%s)', (backend) => {
  it('grad, vjp, jvp, hvp, jacobian, hessian and gradcheck answer for the inputs given', () => {
    const o = { backend };
    const reversed = (x: Var[]): Var => { x.reverse(); return x[0]!.mul(x[1]!.square()); }; // x1·x0²
    expect(Array.from(grad(reversed, o)([2, 3]))).toEqual([12, 4]);
    expect(Array.from(jvp((x: Var[]) => [reversed(x)], [2, 3], [1, 0], o))).toEqual([12]);
    expect(Array.from(vjp((x: Var[]) => [reversed(x)], [2, 3], [1], o))).toEqual([12, 4]);
    expect(Array.from(hvp(reversed, [2, 3], [1, 0], o))).toEqual([6, 4]);
    expect(Array.from(hessian(reversed, [2, 3], o).data)).toEqual([6, 4, 4, 0]);
    expect(Array.from(jacobian((x: Var[]) => [reversed(x)], [2, 3], o).data)).toEqual([12, 4]);
    expect(gradcheck(reversed, [2, 3], o).ok).toBe(true);
    const scaled = (x: Var[]): Var => { x[0] = x[0]!.mul(2); return x[0]!.mul(x[1]!.square()); }; // 2·x0·x1²
    expect(Array.from(grad(scaled, o)([2, 3]))).toEqual([18, 24]);
    expect(Array.from(grad((x: Var[]) => { const a = x.shift()!; x.push(a); return a.mul(x[0]!.square()); }, o)([2, 3]))).toEqual([9, 12]);
    // finiteDifferenceGradient's f likewise (a review: it reordered the stencil's own point).
    const fd = finiteDifferenceGradient((x: Float64Array) => { x.reverse(); return x[0]! + 2 * x[1]! + 3 * x[2]!; }, [1, 2, 3]);
    Array.from(fd).forEach((g, k) => expect(g).toBeCloseTo([3, 2, 1][k]!, 8));
  });
});

describe.each(BACKENDS)('transforms reject bad inputs with the documented errors (%s)', (backend) => {
  const options = { backend };
  const square = (x: Var[]): Var => x[0]!.square().add(x[1]!);

  // A probe: grad of an f that reset its own tape blamed a Var "from an earlier grad, vjp, jvp or
  // hvp call", where f's own reset had made its input stale.
  it('an f that resets the tape it records on is refused by name, and the next call works', () => {
    const resets = (x: Var[]): Var => {
      x[0]!.tape.reset();
      return x[0]!.tape.variable(5).square();
    };
    const calls: [string, () => unknown][] = [
      ['grad', () => grad(resets, options)([2, 3])], ['valueAndGrad', () => valueAndGrad(resets, options)([2, 3])],
      ['vjp', () => vjp(resets, [2, 3], [1], options)], ['jvp', () => jvp(resets, [2, 3], [1, 0], options)],
      ['jacobian', () => jacobian(resets, [2, 3], options)], ['hvp', () => hvp(resets, [2, 3], [1, 0], options)],
      ['hessian', () => hessian(resets, [2, 3], options)], ['gradcheck', () => gradcheck(resets, [2, 3], options)],
    ];
    for (const [name, call] of calls) {
      expect(call, name).toThrow(expect.objectContaining({
        code: 'INVALID_ARGUMENT', message: `${name}: the function reset the tape it records on (tape.reset()), which forgets its inputs; record onto another tape, or return what it computes from the inputs`,
      }));
      expect(Array.from(grad(square, options)([3, 1])), name).toEqual([6, 1]);
    }
  });

  it('a string (or null, or an object) as the point throws NotANumberError', () => {
    const g = grad(square, options);
    expect(() => g('abc' as unknown as number[])).toThrow(NotANumberError);
    expect(() => g('abc' as unknown as number[])).toThrow(/inputs must be a number, an array of numbers or a Float64Array/);
    expect(() => g(null as unknown as number[])).toThrow(NotANumberError);
    expect(() => g({} as unknown as number[])).toThrow(NotANumberError);
    // A string inside the array is caught when the input is recorded.
    expect(() => g([1, 'x'] as unknown as number[])).toThrow(NotANumberError);
  });

  it('a function that returns something other than a Var or a number throws NotANumberError', () => {
    expect(() => grad((() => 'y') as unknown as (x: Var) => Var, options)(1)).toThrow(/the function must return a Var or a number/);
    // Where several outputs may come back, the message lists them all (a probe: "a Var or a number").
    expect(() => jacobian((() => new Float64Array([1, 2])) as unknown as (x: Var[]) => Var[], [1], options)).toThrow(/^jacobian: the function must return a Var, a number, a Vec or an array of Vars and numbers, got an object \(Float64Array\)/);
    // An array where one scalar output is needed names the transform, and a Vec inside an array
    // says to return it on its own (both found by a new-user probe: NOT_A_NUMBER, "a scalar Var").
    expect(() => hvp(((x: Var[]) => [x[0]!, x[1]!]) as unknown as (x: Var[]) => Var, [1, 2], [1, 0], options)).toThrow(/^hvp: the function returned an array of 2; hvp needs one scalar output/);
    expect(() => vjp((x: Var[]) => [x[0]!, x[0]!.tape.vector([1, 2])] as unknown as Var[], [1, 2], [1, 1, 1], options)).toThrow(/^vjp: output 1 of the function's array is a Vec of shape \[2\]; return the Vec on its own/);
    expect(() => vjp((x: Var[]) => [x[0]!, 'y' as unknown as Var], [1, 2], [1, 1], options)).toThrow(NotANumberError);
  });

  it('a cotangent of the wrong length throws INVALID_ARGUMENT naming both counts', () => {
    let caught: unknown;
    try {
      vjp(threeOutputs, [1, 2], [1, 2], options);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(TapegradError);
    expect((caught as TapegradError).code).toBe('INVALID_ARGUMENT');
    expect((caught as Error).message).toMatch(/cotangent has 2 entries but there are 3 outputs/);
  });

  it('a cotangent with non-numbers, or not an array, throws NotANumberError', () => {
    expect(() => vjp(threeOutputs, [1, 2], [1, 'a', 2] as unknown as number[], options)).toThrow(NotANumberError);
    expect(() => vjp(threeOutputs, [1, 2], 'abc' as unknown as number[], options)).toThrow(NotANumberError);
    expect(() => vjp(threeOutputs, [1, 2], null as unknown as number[], options)).toThrow(NotANumberError);
  });

  it('a tangent of the wrong length throws INVALID_ARGUMENT naming both counts', () => {
    expect(() => jvp(threeOutputs, [1, 2], [1, 2, 3], options)).toThrow(/tangent has 3 entries but there are 2 inputs/);
    expect(() => jvp((x: Var) => x.sin(), 1, [1, 2], options)).toThrow(/tangent has 2 entries but there is 1 input$/);
    expect(() => jvp(threeOutputs, [1, 2], [1, 'b'] as unknown as number[], options)).toThrow(NotANumberError);
  });

  it('after any of these errors the next call still gives the right answer', () => {
    const g = grad(square, options);
    expect(() => g('abc' as unknown as number[])).toThrow();
    expect(() => vjp(threeOutputs, [1, 2], [1], options)).toThrow();
    expect(() => jvp(threeOutputs, [1, 2], [1], options)).toThrow();
    expect(Array.from(g([3, 5]))).toEqual([6, 1]);
    expectClose(vjp(threeOutputs, [0.7, -1.3], [1, 0, 0], options), [-1.3, 0.7], 0);
  });
});

// A new-user probe: a bad entry of the point read "input entries must be numbers, got the string
// \"a\"", naming neither the transform nor the entry, and grad(grad(f)) gave no hint.
it('a bad entry of the point names the transform and the entry; a Var there says transforms do not nest', async () => {
  const f = (x: Var[]): Var => x[0]!.mul(x[1]!);
  expect(() => grad(f)([1, 'a' as unknown as number])).toThrow(new NotANumberError('grad: entry 1 of the input must be a number, got the string "a"'));
  expect(() => hvp(f, [1, null as unknown as number], [1, 1])).toThrow('hvp: entry 1 of the input must be a number, got null');
  expect(() => grad((x: Var[]) => grad(f)(x as unknown as number[]) as unknown as Var)([1, 2])).toThrow(/^grad: entry 0 of the input must be a number, got an object \(Var\) \(transforms do not nest: for second derivatives use hvp or hessian\)$/);
  const square = grad((x: Var) => x.square()) as unknown as (x: Var) => Var;
  expect(() => grad(square)(2)).toThrow(/^grad: inputs must be a number, an array of numbers or a Float64Array, got an object \(Var\) \(transforms do not nest/);
  // A Var of another tape returned by f read as an operand of this one's.
  const other = await createTape();
  const alien = other.variable(3);
  expect(() => grad((_x: Var) => alien)(1)).toThrow(/^grad: the function returned Var #\d+ of another tape, not one computed from its inputs$/);
  // Options given to the returned function were ignored.
  const g = grad(f) as unknown as (x: number[], options: object) => Float64Array;
  expect(() => g([1, 2], { backend: 'js' })).toThrow(new TapegradError('INVALID_ARGUMENT', 'grad(f)(x) takes no options: pass them to grad(f, options)'));
  // What Array.prototype.map passes after the point (an index, the array) is fine (a review).
  const df = grad((x: Var) => x.sin());
  expect([0, 0.5].map(df)).toEqual([1, Math.cos(0.5)]);
  expect([0].map(valueAndGrad((x: Var) => x.square()))).toEqual([[0, 0]]);
});

// createTape rejects an unknown backend with INVALID_ARGUMENT; the transforms should say the same
// rather than fail inside their tape pool with a TypeError ("reading 'pop'").
it('a transform given an unknown backend name throws INVALID_ARGUMENT', () => {
  const f = (x: Var[]): Var => x[0]!.square();
  for (const call of [() => grad(f, { backend: 'gpu' as 'js' })([1]), () => jvp(f, [1], [1], { backend: 'gpu' as 'js' })]) {
    expect(call).toThrow(TapegradError);
    expect(call).toThrow(/option 'backend' must be one of 'wasm', 'js'/);
  }
});

// Found by a new-user probe: the transforms' pool kept every tape it ever made, at its peak: one
// grad of an 8 M-op function held 400 MB, and 50 nested transforms 2 GB, for the rest of the
// process. It keeps at most transformPool.tapes tapes of at most transformPool.bytes each.
describe.each(BACKENDS)('the transforms\' tape pool stays bounded (%s)', (backend) => {
  it('nested transforms leave at most transformPool.tapes tapes, and a tape past its bytes is not kept', () => {
    const nested = (depth: number) => (x: Var): Var => (depth === 0 ? x.sin() : x.mul(grad(nested(depth - 1), { backend })(x.value)));
    expect(grad(nested(12), { backend })(0.5)).toBeTypeOf('number');
    expect(pooledTapes(backend).length).toBeLessThanOrEqual(transformPool.tapes);
    expect(pooledTapes(backend).length).toBeGreaterThan(0);
    const before = transformPool.bytes;
    try {
      // A bound below any tape's memory: the tape a call used is dropped, the pool keeps the rest.
      transformPool.bytes = 0;
      const kept = pooledTapes(backend).length;
      expect(grad((x: Var) => x.exp(), { backend })(1)).toBe(Math.exp(1));
      expect(pooledTapes(backend).length).toBe(kept - 1);
    } finally {
      transformPool.bytes = before;
    }
    expect(grad((x: Var) => x.square(), { backend })(3)).toBe(6);
    expect(pooledTapes(backend).every((t) => t.memoryBytes <= transformPool.bytes)).toBe(true);
  });

  // A probe: a tape past the pool's bytes was dropped, and each call of a large function made a
  // 32 MiB tape and grew it again (3 M nodes: 116 ms a call against 48 on a tape kept). It is kept
  // weakly, and the next call takes it first.
  it('a tape past the pool\'s bytes is kept weakly, and the next call takes it', () => {
    const before = transformPool.bytes;
    try {
      transformPool.bytes = 0;
      expect(grad((x: Var) => x.exp(), { backend })(1)).toBe(Math.exp(1));
      const kept = keptLargeTape(backend);
      expect(kept).toBeDefined();
      expect(grad((x: Var) => x.sin(), { backend })(1)).toBe(Math.cos(1));
      expect(keptLargeTape(backend)).toBe(kept);
      // Taken out while a call holds it: a nested call gets another tape.
      const outer = (x: Var): Var => x.mul(grad((y: Var) => y.square(), { backend })(x.value));
      expect(grad(outer, { backend })(3)).toBe(6);
    } finally {
      transformPool.bytes = before;
    }
  });

  // A soak probe: every call took the large tape first, small ones too, holding it through their
  // job, so a service's steady small calls kept a large function's memory for good. Once the hold
  // after the last large recording has ended, only a call after one that recorded past the
  // pool's bytes takes it.
  it('after the hold, small calls after a large one leave the large tape alone; a large one after it takes it', async () => {
    const before = { ...transformPool };
    try {
      transformPool.bytes = 4000;
      transformPool.holdMs = 0;
      const big = (x: Var): Var => { let y = x; for (let k = 0; k < 400; k++) y = y.mul(1.0001).sin(); return y; };
      let seen: unknown = null;
      const spy = (f: (x: Var) => Var) => (x: Var): Var => { seen = x.tape; return f(x); };
      grad(big, { backend })(0.5);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const kept = keptLargeTape(backend);
      expect(kept).toBeDefined();
      expect(heldLargeTape(backend)).toBeUndefined();
      grad(spy(big), { backend })(0.5);
      expect(seen).toBe(kept);
      await new Promise((resolve) => setTimeout(resolve, 5));
      // The call right after a large one takes it (it may be large again); the next ones do not.
      grad(spy((x) => x.square()), { backend })(3);
      expect(seen).toBe(kept);
      grad(spy((x) => x.square()), { backend })(3);
      expect(seen).not.toBe(kept);
      expect(grad((x: Var) => x.square(), { backend })(3)).toBe(6);
    } finally {
      Object.assign(transformPool, before);
    }
  });

  // A probe: a vector function recording 37-61 MiB grew its tape to 64.1 MiB, past the pool's
  // 64 MiB, and since it had not recorded past them, its tape was neither pooled nor held: every
  // call made and grew a new one (3-8x the time on a kept tape). Scaled down to a bound of 8 MiB.
  it('a call that grows its tape past the pool\'s bytes without recording that much hands its tape to the next', () => {
    const before = { ...transformPool };
    try {
      transformPool.bytes = 8 * 2 ** 20;
      const tapes: unknown[] = [];
      const x = new Float64Array(240_000).fill(0.5);
      const f = (v: Vec): Var => { tapes.push(v.tape); return v.mul(v).sum(); };
      for (let call = 0; call < 3; call++) {
        const g = grad(f, { backend, vector: true })(x) as Float64Array;
        expect(g[0]).toBe(1);
        expect(g[239_999]).toBe(1);
      }
      const tape = tapes[0] as Var['tape'];
      expect(tape.memoryBytes).toBeGreaterThan(transformPool.bytes);
      expect(tapes[1]).toBe(tape);
      expect(tapes[2]).toBe(tape);
    } finally {
      Object.assign(transformPool, before);
    }
  });

  // A probe: a loop alternating a large call with a small one (a training step, then a
  // regularizer's grad) made a new large tape at every large call, after a small one, and the
  // WeakRefs kept them all to the loop's end (105 MB a step). Within the hold every call takes
  // the held tape, so the loop has one large tape, and it goes to the collector after the hold.
  it('a loop alternating large and small calls keeps one large tape, held for holdMs', async () => {
    const before = { ...transformPool };
    try {
      transformPool.bytes = 4000;
      transformPool.holdMs = 20;
      const big = (x: Var): Var => { let y = x; for (let k = 0; k < 400; k++) y = y.mul(1.0001).sin(); return y; };
      const tapes = new Set<unknown>();
      let value = 0.5;
      for (let step = 0; step < 6; step++) {
        const g = grad((x: Var) => { tapes.add(x.tape); return big(x); }, { backend })(value);
        value -= 1e-3 * (g + grad((x: Var) => x.square(), { backend })(value));
      }
      expect(tapes.size).toBe(1);
      expect(heldLargeTape(backend)).toBe([...tapes][0]);
      await new Promise((resolve) => setTimeout(resolve, 40));
      expect(heldLargeTape(backend)).toBeUndefined();
      // Kept weakly since (or collected): the next large call takes it if it is there.
      expect(grad(big, { backend })(0.5)).toBeCloseTo(grad(big, { backend: backend === 'wasm' ? 'js' : 'wasm' })(0.5), 12);
    } finally {
      Object.assign(transformPool, before);
    }
  });

  // A probe: past the pool's count every call made a new tape of the default 32 MiB, and grads
  // nested five deep took 19 ms a call on wasm against 17 µs four deep. Deeper levels take small
  // tapes from a pool of their own, made once.
  it('levels past the pool take small tapes, kept and reused by the next call', () => {
    // d/dx of x·g(x) where g = d/dx of the level below: level 0 is sin, so level 1 is x·cos x's
    // derivative and so on, computed by hand below.
    const nested = (depth: number) => (x: Var): Var => (depth === 0 ? x.sin() : x.mul(grad(nested(depth - 1), { backend })(x.value)));
    const byHand = (depth: number, x: number): number => {
      // f_d(x) = x·f'_{d-1}(x) with f_{d-1}' evaluated as a number (a constant to level d).
      const fPrime = (d: number, u: number): number => (d === 0 ? Math.cos(u) : byHand(d, u));
      return depth === 0 ? Math.cos(x) : fPrime(depth - 1, x);
    };
    const f = grad(nested(8), { backend });
    expect(f(0.5)).toBeCloseTo(byHand(8, 0.5), 12);
    const small = pooledTapes(backend, true).slice();
    expect(small.length).toBeGreaterThanOrEqual(8 + 1 - transformPool.tapes);
    expect(small.every((t) => t.memoryBytes <= smallTapePool.bytes)).toBe(true);
    expect(f(0.25)).toBeCloseTo(byHand(8, 0.25), 12);
    expect(pooledTapes(backend, true)).toEqual(small);
    expect(pooledTapes(backend, true).every((t, k) => t === small[k])).toBe(true);
  });
});
