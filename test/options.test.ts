// Every options object is checked where it enters: an unknown key (a typo, or another function's
// option such as gradcheck's tolerance on compile) or a value outside its set is INVALID_ARGUMENT naming the
// function, the option and what it takes. Arrays of numbers are arrays, never strings; batch
// lengths name what was expected and what came.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  TapegradError, compile, createTape, defineFunction, fromBytes, gradcheck, grad, hessian, hvp, init, jacobian, jvp, valueAndGrad, vjp,
  type Var, type Vec,
} from '../src/index.ts';

beforeAll(async () => {
  await init();
});

function expectInvalid(call: () => unknown, message: RegExp): void {
  let error: unknown = null;
  try {
    call();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(TapegradError);
  expect((error as TapegradError).code).toBe('INVALID_ARGUMENT');
  expect((error as Error).message).toMatch(message);
}

const f = (x: Var[]): Var => x[0]!.square().add(x[1]!);

describe('options', () => {
  it('unknown options are refused, naming the function and what it takes', async () => {
    expectInvalid(() => compile(f, { inputs: 2, checknan: true } as never), /^compile: unknown option 'checknan' \(it takes inputs, backend/);
    expectInvalid(() => grad(f, { backnd: 'js' } as never), /^grad: unknown option 'backnd'/);
    expectInvalid(() => valueAndGrad(f, { backnd: 'js' } as never), /^valueAndGrad: unknown option 'backnd'/);
    expectInvalid(() => vjp(f, [1, 2], [1], { mode: 'forward' } as never), /^vjp: unknown option 'mode'/);
    expectInvalid(() => jvp(f, [1, 2], [1, 0], { strict: true } as never), /^jvp: unknown option 'strict'/);
    expectInvalid(() => hvp(f, [1, 2], [1, 0], { tolerance: 1 } as never), /^hvp: unknown option 'tolerance'/);
    expectInvalid(() => hessian(f, [1, 2], { at: [1] } as never), /^hessian: unknown option 'at'/);
    expectInvalid(() => gradcheck(([a, b]: Var[]) => a!.mul(b!), [1, 2], { rtol: 1e-6 } as never), /^gradcheck: unknown option 'rtol'/);
    expectInvalid(() => fromBytes(compile(f, { inputs: 2, at: [1, 2] }).toBytes(), { strict: false } as never), /^fromBytes: unknown option 'strict'/);
    await expect(createTape({ checkNan: true } as never)).rejects.toThrow(/^createTape: unknown option 'checkNan'/);
    await expect(init({ codeGen: false } as never)).rejects.toThrow(/^init: unknown option 'codeGen'/);
  });

  it('init({ module }) takes tapegrad\'s core only, and a refused module leaves the loaded core in place', async () => {
    // Found by a new-user probe: any module was adopted, and every wasm tape after it failed with
    // a raw TypeError, init() again included.
    const empty = new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
    await expect(init({ module: empty })).rejects.toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: "init({ module }): not tapegrad's core (no export 'memory'); the loaded core stays" }),
    );
    const tape = await createTape();
    const x = tape.variable(3);
    expect(tape.gradient(x.square(), [x])[0]).toBe(6);
    expect(grad((v: Var) => v.sin())(0)).toBe(1);
  });

  it('values outside their set are refused (jacobian mode, backends, flags)', () => {
    // The example: mode 'bogus' used to run the auto mode silently.
    expectInvalid(() => jacobian((x: Var[]) => [x[0]!.mul(2), x[1]!], [1, 2], { mode: 'bogus' as 'auto' }), /^jacobian: option 'mode' must be one of 'auto', 'forward', 'reverse', got the string "bogus"/);
    expectInvalid(() => compile(f, { inputs: 2, backend: 'gpu' as 'js' }), /option 'backend' must be one of 'wasm', 'js', 'auto'/);
    expectInvalid(() => grad(f, { backend: 'webgpu' as 'js' }), /^grad: option 'backend' must be one of 'wasm', 'js', 'auto'/);
    expectInvalid(() => compile(f, { inputs: 2, strict: 'yes' as unknown as boolean }), /option 'strict' must be a boolean, got the string "yes"/);
    expectInvalid(() => valueAndGrad(f, { vector: 1 as unknown as boolean }), /option 'vector' must be a boolean, got number 1/);
    expectInvalid(() => compile(f, 'fast' as never), /^compile: options must be an object/);
  });

  // A probe: only own keys were checked, but the functions read through the prototype, so an
  // inherited or getter 'mode' of 'bogus' ran the auto mode and an inherited order 5 was ignored.
  it('values are checked as the functions read them: inherited and getter ones too', () => {
    expectInvalid(() => jacobian((x: Var[]) => [x[0]!], [1], Object.create({ mode: 'bogus' }) as object), /^jacobian: option 'mode' must be one of/);
    const getter = new (class { get mode(): string { return 'bogus'; } })();
    expectInvalid(() => jacobian((x: Var[]) => [x[0]!], [1], getter as object), /^jacobian: option 'mode' must be one of/);
    expectInvalid(() => jacobian((x: Var[]) => [x[0]!], [1], Object.create({ step: () => 1 }) as object), /^jacobian: unknown option 'step'/);
    expect(jacobian((x: Var[]) => [x[0]!.mul(3)], [1], Object.create({ mode: 'reverse' }) as object).mode).toBe('reverse');
    // Keys the rules object inherits are no options (a review: toString and constructor passed).
    expectInvalid(() => jacobian((x: Var[]) => [x[0]!], [1], { toString: 5 } as object), /^jacobian: unknown option 'toString'/);
  });

  // A probe: the transforms checked their options and read them again, so a getter's second
  // value was used unchecked (vjp gave f a Vec after vector: false passed the check) and an error
  // named createTapeSync. Every function now reads each option once.
  it('each option is read once: the value checked is the value used', async () => {
    const flipping = (key: string, first: unknown, later: unknown): object => {
      let reads = 0;
      return Object.defineProperty({}, key, { enumerable: true, get: () => (++reads > 1 ? later : first) });
    };
    const seen: string[] = [];
    const sum = (x: Var[] | Vec): Var => {
      seen.push(Array.isArray(x) ? 'Var[]' : 'Vec');
      return Array.isArray(x) ? x[0]!.add(x[1]!) : x.sum();
    };
    const calls: [string, () => unknown][] = [
      ['vjp', () => vjp(sum as never, [1, 2], [1], flipping('vector', false, true))],
      ['jvp', () => jvp(sum as never, [1, 2], [1, 0], flipping('vector', false, true))],
      ['jacobian', () => jacobian(sum as never, [1, 2], flipping('vector', false, true))],
      ['hvp', () => hvp(sum as never, [1, 2], [1, 0], flipping('vector', false, true))],
      ['hessian', () => hessian(sum as never, [1, 2], flipping('vector', false, true))],
      ['gradcheck', () => gradcheck(sum as never, [1, 2], flipping('vector', false, true))],
      ['grad', () => (grad(sum as never, flipping('vector', false, true)) as unknown as (x: number[]) => unknown)([1, 2])],
    ];
    for (const [name, call] of calls) {
      seen.length = 0;
      call();
      expect(seen.every((s) => s === 'Var[]'), `${name}: ${seen}`).toBe(true);
    }
    for (const [name, call] of [
      ['vjp', () => vjp(f, [1, 2], [1], flipping('backend', 'js', 'nope'))],
      ['hessian', () => hessian(f, [1, 2], flipping('backend', 'js', 'nope'))],
      ['gradcheck', () => gradcheck(f, [1, 2], flipping('backend', 'js', 'nope'))],
    ] as const) {
      expect(call, name).not.toThrow();
    }
    const compiled = compile(f, Object.defineProperty({ inputs: 2 }, 'backend', { enumerable: true, get: ((n = 0) => () => (++n > 1 ? 'nope' : 'js'))() }) as never);
    expect(Array.from(compiled.gradient([1, 2]))).toEqual([2, 1]);
    const tape = await createTape(flipping('backend', 'js', 'nope') as never);
    expect(tape.backend).toBe('js');
  });

  it("backend 'auto' is taken wherever a backend is: wasm where the runtime has WebAssembly (here), as createTape's", async () => {
    const x = [0.7, -1.3];
    const same = (a: ArrayLike<number>, b: ArrayLike<number>): void => expect(Array.from(a)).toEqual(Array.from(b));
    same(grad(f, { backend: 'auto' })(x), grad(f)(x));
    same(valueAndGrad(f, { backend: 'auto' })(x)[1], grad(f)(x));
    same(vjp(f, x, [2], { backend: 'auto' }), vjp(f, x, [2]));
    same(jvp(f, x, [1, 0], { backend: 'auto' }), jvp(f, x, [1, 0]));
    same(hvp(f, x, [1, 0], { backend: 'auto' }), hvp(f, x, [1, 0]));
    same(hessian(f, x, { backend: 'auto' }).data, hessian(f, x).data);
    same(jacobian((v: Var[]) => [v[0]!.mul(v[1]!)], x, { backend: 'auto' }).data, jacobian((v: Var[]) => [v[0]!.mul(v[1]!)], x).data);
    expect(gradcheck(f, x, { backend: 'auto' }).ok).toBe(true);
    const compiled = compile(f, { inputs: 2, backend: 'auto', at: x });
    expect(compiled.recorded!.tape.backend).toBe('wasm');
    same(compiled.gradient(x), grad(f)(x));
    const loaded = fromBytes(compiled.toBytes(), { backend: 'auto' });
    expect(loaded.recorded!.tape.backend).toBe('wasm');
    same(loaded.gradient(x), grad(f)(x));
    expect((await createTape({ backend: 'auto' })).backend).toBe('wasm');
  });

  it('known options still work, and undefined values are as if absent', () => {
    expect([...jacobian((x: Var[]) => [x[0]!.mul(2), x[1]!], [1, 2], { mode: 'reverse', backend: 'js' }).data]).toEqual([2, 0, 0, 1]);
    expect([...grad(f, { backend: undefined })([3, 1])]).toEqual([6, 1]);
  });
});

describe('inputs', () => {
  it('a string is not an array of numbers anywhere', async () => {
    const tape = await createTape();
    expect(() => tape.variables('hello' as never)).toThrow(/expected an array of numbers, got the string "hello"/);
    expect(() => grad(f)('hello' as never)).toThrow(/got the string "hello"/);
    expect(() => jvp(f, [1, 2], 'ab' as never)).toThrow(/got the string "ab"/);
    expect(() => gradcheck((a: Var[]) => a[0]!.square(), 'hi' as never)).toThrow(/got the string "hi"/);
    expect(() => compile(f, { inputs: 2 }).gradient('ab' as never)).toThrow(/got the string "ab"/);
  });

  it('a missing value says undefined once', async () => {
    const tape = await createTape();
    expect(() => tape.variable(undefined as never)).toThrow(/got undefined$/);
  });

  it('gradientBatch: any array of numbers, and a short one is INVALID_ARGUMENT naming both lengths', () => {
    const g = compile(f, { inputs: 2 });
    expect([...g.gradientBatch([1, 2, 3, 4], 2)]).toEqual([2, 1, 6, 1]);
    expect([...g.gradientBatch(new Float64Array([1, 2, 3, 4]), 2)]).toEqual([2, 1, 6, 1]);
    // The example: 5 numbers for 3 rows of 2 inputs.
    expectInvalid(() => g.gradientBatch(new Float64Array(5), 3), /3 rows of 2 inputs need at least 6 numbers, got 5/);
    expect(() => g.gradientBatch([1, 'x', 3, 4] as never, 2)).toThrow(/entry 1 must be a number, got the string "x"/);
  });
});

it('a number for a { vector: true } transform is refused by name, not met as a TypeError in f', () => {
  for (const [name, call] of [
    ['grad', () => grad((v: Vec) => v.sum(), { vector: true })(3 as never)],
    ['valueAndGrad', () => valueAndGrad((v: Vec) => v.sum(), { vector: true })(3 as never)],
    ['hvp', () => hvp((v: Vec) => v.sum(), 3 as never, [1], { vector: true })],
  ] as const) {
    let error: unknown = null;
    try {
      call();
    } catch (e) {
      error = e;
    }
    expect((error as TapegradError).code, name).toBe('NOT_A_NUMBER');
    expect((error as Error).message).toBe(`${name}: with { vector: true } the input must be an array of numbers (one Vec), got the number 3`);
  }
});

it('trmv and defineFunction check their options objects', async () => {
  const tape = await createTape();
  const L = tape.vector([1, 2, 3, 4]).reshape([2, 2]);
  expectInvalid(() => L.trmv([1, 1], { lowr: true } as never), /^trmv: unknown option 'lowr' \(it takes lower\)/);
  expectInvalid(() => L.trmv([1, 1], { lower: 1 } as never), /^trmv: option 'lower' must be a boolean/);
  expect(Array.from(L.trmv([1, 1], { lower: false }).value)).toEqual([3, 4]);
  expect(Array.from(L.trmv([1, 1]).value)).toEqual([1, 7]);
  const rule = { name: 'twice', forward: (xs: Float64Array) => 2 * xs[0]!, vjp: (_xs: Float64Array, _y: number, g: number) => [2 * g] };
  expectInvalid(() => defineFunction({ ...rule, jpv: () => 0 } as never), /^defineFunction: unknown option 'jpv' \(it takes name, forward, vjp, jvp, vjpTangent\)/);
  expectInvalid(() => defineFunction({ ...rule, jvp: 2 } as never), /^defineFunction: option 'jvp' must be a function/);
  const twice = defineFunction(rule);
  tape.reset();
  const x = tape.variable(3);
  tape.backward(twice(x));
  expect(x.grad).toBe(2);
});
