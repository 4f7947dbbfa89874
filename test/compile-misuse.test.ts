// Compiled functions used in ways that used to give wrong numbers without a word: f throwing
// while it records again, gradients of functions with several outputs or a Vec out, and an `at`
// point of the wrong length. Each must throw a clear error or give what a fresh recording gives.
import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledFunction, HandleApi, Tape, TapegradError, compile, createTape, grad, init, valueAndGrad, type Var, Vec } from '../src/index.ts';
import { VectorHandleApi } from '../src/vector.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

const code = (f: () => unknown): string | undefined => {
  try {
    f();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

describe.each(BACKENDS)('compiled functions on %s', (backend) => {
  it('record again after f throws while recording again, and give what a fresh recording gives', () => {
    const body = (x: Var[]): Var => {
      if (x[0]!.lt(0).value) throw new Error('negative input');
      return x[0]!.square().mul(x[0]!.sin());
    };
    const f = compile(body, { inputs: 1, backend });
    const gradOf = grad((x: Var[]) => x[0]!.square().mul(x[0]!.sin()), { backend });
    const reference = (x: number[]): number[] => Array.from(gradOf(x));
    const referenceValue = (x: number[]): number => valueAndGrad((v: Var[]) => v[0]!.square().mul(v[0]!.sin()), { backend })(x)[0] as number;
    expect(Array.from(f.gradient([2]))).toEqual(reference([2]));
    // The guard fails at -1: f records again there and throws part-way.
    expect(() => f.gradient([-1])).toThrow('negative input');
    for (const x of [3, 0.5, 2]) {
      expect(f.value([x])).toBe(referenceValue([x]));
      expect(Array.from(f.gradient([x]))).toEqual(reference([x]));
      const [value, g] = f.valueAndGradient([x]);
      expect(value).toBe(referenceValue([x]));
      expect(Array.from(g)).toEqual(reference([x]));
    }
    expect(Array.from(f.gradientBatch([3, 0.5], 2))).toEqual([...reference([3]), ...reference([0.5])]);
    expect(f.size).toBe(6);
  });

  // A probe: a function whose large recording failed kept that tape's memory (400 MB while it
  // held 10 nodes), with nothing to release it but dropping the function.
  it('a large recording that fails leaves its memory to the garbage collector', () => {
    let huge = true;
    const f = compile((x: Var[]) => {
      let z = x[0]!;
      for (let k = 0; k < (huge ? 2e6 : 3); k++) z = z.mul(1.0000001).add(x[0]!);
      if (huge) throw new Error('rejected');
      return z;
    }, { inputs: 1, backend });
    expect(() => f.gradient([1])).toThrow('rejected');
    huge = false;
    expect(f.gradient([1])[0]).toBeGreaterThan(3);
    expect(f.recorded!.tape.memoryBytes).toBeLessThanOrEqual(64 * 2 ** 20);
    // toBytes after such a failure says it failed, not that nothing was recorded (a review).
    huge = true;
    const g = compile((x: Var[]) => {
      let z = x[0]!;
      for (let k = 0; k < 2e6; k++) z = z.mul(1.0000001).add(x[0]!);
      throw new Error('rejected');
    }, { inputs: 1, backend });
    expect(() => g.gradient([1])).toThrow('rejected');
    expect(() => g.toBytes()).toThrow(/^toBytes: its last recording failed/);
  });

  it('record again after f reads a value it may not, and after it throws on the first call', () => {
    let calls = 0;
    const f = compile((x: Var[]) => {
      calls++;
      if (calls === 1) throw new RangeError('first call fails');
      return x[0]!.exp();
    }, { inputs: 1, backend });
    expect(() => f.value([0])).toThrow('first call fails');
    expect(f.size).toBe(0);
    expect(f.generatedSweepsReason).toBe('nothing recorded yet');
    // toBytes says why there is nothing to store (it said "call the compiled function once").
    expect(() => f.toBytes()).toThrow(/^toBytes: its last recording failed \(f threw, or recorded what compile refuses\)/);
    expect(() => compile((x: Var[]) => x[0]!, { inputs: 1, backend }).toBytes()).toThrow(/^toBytes: nothing recorded yet: call the compiled function once/);
    expect(f.value([0])).toBe(1);
    expect(Array.from(f.gradient([1]))).toEqual([Math.exp(1)]);
  });

  it('refuse gradients and hvp of a function with several outputs or a Vec out', () => {
    const two = compile((x: Var[]) => [x[0]!.mul(x[1]!), x[0]!.sin()], { inputs: 2, backend });
    expect(Array.from(two.value([1, 2]))).toEqual([2, Math.sin(1)]);
    for (const [name, call] of [
      ['gradient', () => two.gradient([1, 2])],
      ['valueAndGradient', () => two.valueAndGradient([1, 2])],
      ['gradientBatch', () => two.gradientBatch([1, 2], 1)],
      ['valueAndGradientBatch', () => two.valueAndGradientBatch([1, 2], 1)],
      ['hvp', () => two.hvp([1, 2], [1, 0])],
      ['hvpBatch', () => two.hvpBatch([1, 2], 1, [1, 0])],
    ] as const) {
      expect(code(call), name).toBe('INVALID_ARGUMENT');
      const said = name.endsWith('Batch') ? `${name}, row 0: needs` : `${name} needs`;
      expect(call, name).toThrow(`${said} a function with one scalar output; this one returns 2 outputs: use vjp`);
    }
    // vjp is the way: the gradient of a weighted sum of the outputs.
    expect(Array.from(two.vjp([1, 2], [1, 0]))).toEqual([2, 1]);
    expect(Array.from(two.vjp([1, 2], [0, 1]))).toEqual([Math.cos(1), 0]);

    const vec = compile((v: Vec) => v.exp().mul(v.sum()), { inputs: 3, vector: true, backend });
    for (const call of [() => vec.gradient([0.1, 0.2, 0.3]), () => vec.valueAndGradient([0.1, 0.2, 0.3]), () => vec.hvp([0.1, 0.2, 0.3], [1, 0, 0])]) {
      expect(call).toThrow('one scalar output; this one returns 3 outputs');
    }
    // A Vec function with a scalar out keeps its gradients.
    const sum = compile((v: Vec) => v.square().sum(), { inputs: 3, vector: true, backend });
    expect(Array.from(sum.gradient([1, 2, 3]))).toEqual([2, 4, 6]);
    expect(Array.from(sum.hvp([1, 2, 3], [1, 0, 0]))).toEqual([2, 0, 0]);
    // One output in an array is one scalar output.
    const one = compile((x: Var[]) => [x[0]!.mul(x[1]!)], { inputs: 2, backend });
    expect(Array.from(one.gradient([3, 4]))).toEqual([4, 3]);
  });

  it('refuse a function that resets the tape it records on', () => {
    // Found by a new-user probe: the replay wrote the inputs over the constants recorded after
    // the reset (10 became 56), and the bytes did not load.
    const resets = (x: Var[]): Var => {
      const t = x[0]!.tape;
      t.reset();
      return t.constant(5).mul(t.constant(2));
    };
    for (const codegen of [true, false]) {
      const f = compile(resets, { inputs: 2, backend, codegen });
      expect(code(() => f.value([7, 8]))).toBe('INVALID_ARGUMENT');
      expect(() => f.gradient([7, 8])).toThrow(/^compile: the function reset the tape it records on/);
      expect(f.recorded).toBeNull();
    }
    const v = compile((x: Vec) => { x.tape.reset(); return x.tape.constantVector([1, 2]).sum(); }, { inputs: 2, backend, vector: true });
    expect(code(() => v.value([7, 8]))).toBe('INVALID_ARGUMENT');
  });

  it('record again when a program reset its tape and recorded there after f, and refuse toBytes until then', () => {
    // f's Vars hold the compiled function's tape: a probe reset it, recorded another program
    // there, and the next gradient replayed that program ([1, 1] for sin(x0 x1) at (0.5, 3)).
    for (const codegen of [true, false]) {
      let tape: Var['tape'] | null = null;
      const f = compile((x: Var[]) => { tape = x[0]!.tape; return x[0]!.mul(x[1]!).sin(); }, { inputs: 2, backend, codegen });
      f.gradient([1, 2]);
      tape!.reset();
      const a = tape!.variable(10);
      expect(a.mul(a).add(1).value).toBe(101);
      expect(() => f.toBytes()).toThrow(/^toBytes: its tape was reset since it recorded/);
      const want = [Math.cos(1.5) * 3, Math.cos(1.5) * 0.5];
      expect(Array.from(f.gradient([0.5, 3]))).toEqual(want);
      expect(f.value([0.5, 3])).toBe(Math.sin(1.5));
      expect(f.toBytes().length).toBeGreaterThan(0);
    }
  });

  it('record again for jvp, hvp and their batches after a program reset the tape, its generated tangent sweeps or not', () => {
    // A probe: once hvp had generated the tangent sweeps, jvp, hvp, jvpBatch and hvpBatch ran
    // them over the other program's nodes (its input 5 read 0.3, its 38 read sin(0.12)).
    const x = [0.3, 0.4], t = [1, 0];
    const cos = Math.cos(0.12), sin = Math.sin(0.12);
    const calls: [string, (f: CompiledFunction) => number[]][] = [
      ['jvp', (f) => Array.from(f.jvp(x, t))],
      ['hvp', (f) => Array.from(f.hvp(x, t))],
      ['jvpBatch', (f) => Array.from(f.jvpBatch(x, 1, t))],
      ['hvpBatch', (f) => Array.from(f.hvpBatch(x, 1, t))],
    ];
    const jvp = [cos * 0.4];
    // d/dx of (cos(x0 x1) x1, cos(x0 x1) x0) along (1, 0).
    const hvp = [-sin * 0.4 * 0.4, cos - sin * 0.3 * 0.4];
    for (const codegen of [true, false]) {
      for (const [name, call] of calls) {
        let tape: Var['tape'] | null = null;
        const f = compile((v: Var[]) => { tape = v[0]!.tape; return v[0]!.mul(v[1]!).sin(); }, { inputs: 2, backend, codegen });
        f.hvp([1, 2], [1, 0]);
        const tp = tape!;
        tp.reset();
        const a = tp.variable(5), b = tp.variable(7);
        const y = a.mul(b).add(3);
        const got = call(f), want = name.startsWith('jvp') ? jvp : hvp;
        expect(got.length).toBe(want.length);
        for (let k = 0; k < got.length; k++) expect(got[k], `${name}, codegen ${codegen}`).toBeCloseTo(want[k]!, 14);
        // The program's Vars went stale with the new recording, instead of reading f's numbers.
        expect(() => y.value, `${name}, codegen ${codegen}`).toThrow(/recorded before tape\.reset\(\)/);
      }
    }
  });

  it('refuse toBytes from inside f while it records (the bytes of a half-written tape did not load)', () => {
    let inside = false;
    let refused: unknown = null;
    const f = compile((x: Var[]) => {
      const y = x[0]!.gt(0).value ? x[0]!.mul(x[1]!) : x[0]!.square().mul(x[1]!);
      if (inside) {
        try { f.toBytes(); } catch (e) { refused = e; }
      }
      return y;
    }, { inputs: 2, backend });
    f.gradient([1, 2]);
    inside = true;
    expect(Array.from(f.gradient([-1, 2]))).toEqual([-4, 1]);
    inside = false;
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^toBytes: the function is recording/) });
    expect(f.toBytes().length).toBeGreaterThan(0);
  });

  it('record nothing for a batch of no rows, even as their first call', () => {
    // Found by a new-user probe: gradientBatch([], 0) as the first call recorded f at an empty
    // input list and kept that recording (a sum of squares then gave 1 and [1, 0] at [1, 2]).
    const sumSq = (x: Var[]): Var => x.reduce<Var | number>((acc, v) => v.square().add(acc), 0) as Var;
    const f = compile(sumSq, { inputs: 2, backend });
    expect(Array.from(f.gradientBatch([], 0))).toEqual([]);
    const [values, grads] = f.valueAndGradientBatch([], 0);
    expect([values.length, grads.length]).toEqual([0, 0]);
    expect(f.recorded).toBeNull();
    expect(f.value([1, 2])).toBe(5);
    expect(Array.from(f.gradient([1, 2]))).toEqual([2, 4]);
    const g = compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend, checkNaN: true });
    expect(Array.from(g.gradientBatch([], 0))).toEqual([]);
    expect(g.recorded).toBeNull();
  });

  it('refuse a cotangent or direction entry that is not a number, single row or batch', () => {
    // vjp, jvp and hvp wrote them into the tape as they were: '2' counted as 2, undefined as NaN.
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!).add(x[2]!.sin()), { inputs: 3, backend });
    const x = [1, 2, 3];
    for (const bad of ['2', undefined, null]) {
      expect(code(() => f.vjp(x, [bad as unknown as number]))).toBe('NOT_A_NUMBER');
      expect(code(() => f.vjpBatch(x, 1, [bad as unknown as number]))).toBe('NOT_A_NUMBER');
      for (const d of [[1, bad, 0], [bad, 0, 0]] as unknown as number[][]) {
        expect(code(() => f.jvp(x, d))).toBe('NOT_A_NUMBER');
        expect(code(() => f.hvp(x, d))).toBe('NOT_A_NUMBER');
        expect(code(() => f.jvpBatch(x, 1, d))).toBe('NOT_A_NUMBER');
      }
    }
    expect(() => f.hvp(x, [1, 'abc' as unknown as number, 0])).toThrow("hvp: the direction's entry 1 must be a number, got");
    // After the first jvp and hvp (the generated tangent sweeps' fused path on wasm) too.
    expect(f.jvp(x, [1, 0, 0])[0]).toBe(2);
    expect(code(() => f.jvp(x, [1, '0' as unknown as number, 0]))).toBe('NOT_A_NUMBER');
    expect(code(() => f.hvp(x, [1, '0' as unknown as number, 0]))).toBe('NOT_A_NUMBER');
    expect(Array.from(f.hvp(x, [1, 0, 0]))).toEqual([0, 1, 0]);
    expect(Array.from(f.vjp(x, [2]))).toEqual([4, 2, 2 * Math.cos(3)]);
  });

  it("check the 'at' point against inputs", () => {
    const sum = (x: Var[]): Var => x.reduce((s, v) => s.add(v));
    for (const at of [[1, 2, 3], [1], []]) {
      expect(code(() => compile(sum, { inputs: 2, at, backend }))).toBe('INVALID_ARGUMENT');
      expect(() => compile(sum, { inputs: 2, at, backend })).toThrow(`compile: the 'at' point has ${at.length} entries, expected 2`);
    }
    expect(code(() => compile(sum, { inputs: 2, at: [1, 'x' as unknown as number], backend }))).toBe('NOT_A_NUMBER');
    // Named by compile, not by the recording's `variables:` (a lifecycle probe).
    expect(() => compile(sum, { inputs: 2, at: [1, 2n as unknown as number], backend })).toThrow(/^compile: the 'at' point: entry 1 must be a number, got bigint 2$/);
    expect(compile(sum, { inputs: 2, at: [1, 2], backend }).value([1, 1])).toBe(2);
  });

  // A probe: "the input has 1 entries, expected 2" said not which call; a compiled function
  // called on Vars (inside grad) said only "must be a number"; gradientBatch and
  // valueAndGradientBatch named no row for a function without one scalar output, as hvpBatch did.
  it('errors name the call, Vars get a hint, and every batch names row 0 for outputs it cannot take', () => {
    const c = compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend });
    expect(() => c.gradient([1])).toThrow(/^gradient: the input has 1 entries, expected 2$/);
    expect(() => c.valueAndGradient([1, 2, 3])).toThrow(/^valueAndGradient: the input has 3 entries, expected 2$/);
    expect(() => c.value([1])).toThrow(/^value: the input has 1 entries/);
    expect(() => c.hvp([1, 2], [1])).toThrow(/^hvp: the direction has 1 entries, expected 2$/);
    expect(() => c.jvp([1, 2], [1])).toThrow(/^jvp: the tangent has 1 entries, expected 2$/);
    expect(() => c.vjp([1, 2], [1, 2])).toThrow(/^vjp: the cotangent has 2 entries, expected 1$/);
    expect(() => c.jvp([1], [1, 2])).toThrow(/^jvp: the input has 1 entries/);
    expect(() => grad((x: Var[]) => c.value(x as unknown as number[]) as unknown as Var, { backend })([1, 2]))
      .toThrow(/^value: input 0 must be a number, got .*Var.*: a compiled function takes numbers .* call the function it compiles\)$/);
    // f's output refused as every other fault of f while it records (a probe read a bare "a
    // compiled function must return...").
    const word = compile((() => 'y') as unknown as (x: Var[]) => Var, { inputs: 1, backend });
    expect(() => word.gradient([1])).toThrow(/^compile: the function must return a Var, a number or an array of them, got the string "y"/);
    const twoOutputs = (x: Var[]): Var[] => (x[0]!.gt(0).value ? [x[0]!.mul(2)] : [x[0]!.mul(3), x[0]!.sin()]);
    for (const call of ['gradientBatch', 'valueAndGradientBatch', 'hvpBatch'] as const) {
      const f = compile(twoOutputs, { inputs: 1, backend });
      const run = (): unknown => (call === 'hvpBatch' ? f.hvpBatch([-1, 1], 2, [1, 1]) : f[call]([-1, 1], 2));
      expect(run).toThrow(new RegExp(`^${call}, row 0: needs a function with one scalar output; this one returns 2 outputs`));
      expect(Array.from(f.gradient([2]))).toEqual([2]);
    }
  });

  // A review: a tangent's or cotangent's entries were checked, then read again to use, and a
  // getter answering 1 and then 2n threw a raw TypeError.
  it('tangents and cotangents are read once, each entry checked as it is copied', () => {
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend });
    const turning = (): ArrayLike<number> => {
      let reads = 0;
      return { length: 2, 0: 1, get 1() { return reads++ === 0 ? 0.5 : 2n; } } as unknown as ArrayLike<number>;
    };
    const x = [0.3, 0.7];
    const expected = { jvp: Array.from(f.jvp(x, [1, 0.5])), hvp: Array.from(f.hvp(x, [1, 0.5])), vjp: Array.from(f.vjp(x, [0.5])) };
    for (let round = 0; round < 2; round++) {
      expect(Array.from(f.jvp(x, turning()))).toEqual(expected.jvp);
      expect(Array.from(f.hvp(x, turning()))).toEqual(expected.hvp);
      expect(Array.from(f.vjp(x, { length: 1, get 0() { return 0.5; } } as ArrayLike<number>))).toEqual(expected.vjp);
    }
  });

  // A review: a direction's getter that resized x's buffer to nothing left wasm's generated
  // tangent sweep reading a shrunk x (NaN, where the JS engine had read x first and was right),
  // and every batch's rows NaN on both engines.
  it("x is read before the direction; a batch whose X a direction's getter shrank is refused", () => {
    const resizable = (values: number[]): Float64Array => {
      const Resizable = ArrayBuffer as unknown as new (n: number, o: { maxByteLength: number }) => ArrayBuffer;
      const buffer = new Resizable(8 * values.length, { maxByteLength: 8 * values.length });
      const X = new Float64Array(buffer);
      X.set(values);
      return X;
    };
    const shrinking = (X: Float64Array, n: number): ArrayLike<number> => {
      const o: Record<string, unknown> = { length: n };
      for (let k = 0; k < n; k++) Object.defineProperty(o, k, { get() { (X.buffer as unknown as { resize(n: number): void }).resize(0); return 1; } });
      return o as unknown as ArrayLike<number>;
    };
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend });
    // Twice each: the first jvp and hvp make the generated tangent sweeps the second ones run.
    for (let round = 0; round < 2; round++) {
      const jx = resizable([1, 2]), hx = resizable([1, 2]);
      expect(Array.from(f.jvp(jx, shrinking(jx, 2)))).toEqual(Array.from(f.jvp([1, 2], [1, 1])));
      expect(Array.from(f.hvp(hx, shrinking(hx, 2)))).toEqual(Array.from(f.hvp([1, 2], [1, 1])));
    }
    for (const call of ['jvpBatch', 'hvpBatch', 'vjpBatch'] as const) {
      const X = resizable([1, 2, 1, 2]);
      const D = shrinking(X, call === 'vjpBatch' ? 2 : 4);
      expect(() => f[call](X, 2, D), call).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: `${call}: 2 rows of 2 inputs need at least 4 numbers, got 0` }));
    }
    expect(Array.from(f.gradient([1, 2]))).toEqual(Array.from(compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend }).gradient([1, 2])));
  });

  // A probe: a direction's getter that called the same compiled function at another point made
  // jvp, vjp and hvp answer at that point (x was written before the direction was read), and
  // the kept row and entry buffers could be written over by the inner call.
  it('a getter among the arguments that calls the function again is refused, and nothing is lost', () => {
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!).mul(x[0]!), { inputs: 2, backend });
    const x = [1, 2];
    const expected = { jvp: Array.from(f.jvp(x, [1, 0])), vjp: Array.from(f.vjp(x, [1])), hvp: Array.from(f.hvp(x, [1, 0])), gradient: Array.from(f.gradient(x)) };
    const calling = (first: number, length = 2): ArrayLike<number> =>
      ({ length, get 0() { f.gradient([10, 20]); return first; }, 1: 0 }) as unknown as ArrayLike<number>;
    const refused = /called again while a call of it read its arguments/;
    expect(() => f.jvp(x, calling(1))).toThrow(refused);
    expect(() => f.vjp(x, calling(1, 1))).toThrow(refused);
    expect(() => f.hvp(x, calling(1))).toThrow(refused);
    expect(() => f.gradient({ length: 2, get 0() { f.value([5, 5]); return 1; }, 1: 2 } as unknown as ArrayLike<number>)).toThrow(refused);
    expect(Array.from(f.jvp(x, [1, 0]))).toEqual(expected.jvp);
    expect(Array.from(f.vjp(x, [1]))).toEqual(expected.vjp);
    expect(Array.from(f.hvp(x, [1, 0]))).toEqual(expected.hvp);
    expect(Array.from(f.gradient(x))).toEqual(expected.gradient);
    // Another compiled function from a getter is fine.
    const g = compile((y: Var[]) => y[0]!.square(), { inputs: 1, backend });
    expect(Array.from(f.jvp(x, { length: 2, get 0() { g.gradient([3]); return 1; }, 1: 0 } as unknown as ArrayLike<number>))).toEqual(expected.jvp);
  });

  // A probe: from JavaScript `new CompiledFunction()` made an object that failed later.
  // out was checked before x was read, so an accessor of x that shrank or detached out's buffer
  // gave a gradient cut short, or a raw TypeError (a probe); every call now reads x first.
  it("an out resized or detached while x is read is INVALID_ARGUMENT, in every call that takes one", () => {
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!).sin(), { inputs: 2, backend });
    const expected = f.gradient([1, 2]);
    type Call = (x: ArrayLike<number>, out: Float64Array) => unknown;
    const calls: [string, Call][] = [
      ['gradient', (x, out) => f.gradient(x, out)],
      ['valueAndGradient', (x, out) => f.valueAndGradient(x, out)],
      ['hvp', (x, out) => f.hvp(x, [1, 1], out)],
      ['vjp', (x, out) => f.vjp(x, [1], out)],
      ['gradientBatch', (x, out) => f.gradientBatch(x, 1, out)],
    ];
    for (const [name, call] of calls) {
      // A resizable buffer (ES2024; the project's lib is older).
      const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(length: number): void };
      const buffer = new Resizable(16, { maxByteLength: 64 }), out = new Float64Array(buffer);
      const shrinking = new Proxy([1, 2], { get: (t, k) => (k === '1' && buffer.resize(8), Reflect.get(t, k)) });
      expect(() => call(shrinking, out), name).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(new RegExp(`^${name}: out must be a Float64Array of at least 2 numbers, got .* of length 1$`)) }));
      const detached = new Float64Array(2);
      const detaching = new Proxy([1, 2], { get: (t, k) => (k === '1' && structuredClone(detached.buffer, { transfer: [detached.buffer] }), Reflect.get(t, k)) });
      expect(() => call(detaching, detached), name).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
      expect(f.gradient([1, 2])).toEqual(expected);
    }
  });

  it('a CompiledFunction is not made with new', () => {
    const Made = CompiledFunction as unknown as new (...args: unknown[]) => unknown;
    expect(() => new Made()).toThrow(/^a CompiledFunction comes from compile\(f, \{ inputs \}\) or fromBytes\(bytes\)$/);
    expect(() => new Made(null, 2, backend, false)).toThrow(TapegradError);
    // Tape too (a probe: `new Tape()` threw a raw TypeError from a WeakSet).
    const MadeTape = Tape as unknown as new (...args: unknown[]) => unknown;
    expect(() => new MadeTape()).toThrow(/^a Tape comes from createTape or createTapeSync$/);
    expect(() => new MadeTape()).toThrow(TapegradError);
    // And Vec (a probe: a raw TypeError reading `base` of undefined).
    const MadeVec = Vec as unknown as new (...args: unknown[]) => unknown;
    expect(() => new MadeVec()).toThrow(/^a Vec comes from a tape's vector ops/);
    expect(() => new MadeVec()).toThrow(TapegradError);
    // With an object that is no tape, every read of the Vec was a raw TypeError.
    expect(() => new MadeVec({}, 0, [1])).toThrow(/^a Vec comes from a tape's vector ops/);
  });

  // A probe: `new HandleApi(x)` with a Var (or nothing) made an API whose first call was a raw
  // TypeError; README has `new HandleApi(tape)` as one more `tape.handles`.
  it('new HandleApi and VectorHandleApi take a Tape, and name what they got instead', async () => {
    const tape = await createTape({ backend }), x = tape.variable(2);
    for (const [Api, name] of [[HandleApi, 'HandleApi'], [VectorHandleApi, 'VectorHandleApi']] as const) {
      const Made = Api as unknown as new (tape: unknown) => unknown;
      expect(() => new Made(x)).toThrow(`new ${name}(tape) takes a Tape (from createTape or createTapeSync), got a Var (its tape is x.tape)`);
      for (const bad of [undefined, {}, null]) expect(() => new Made(bad)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(new RegExp(`^new ${name}\\(tape\\) takes a Tape`)) }));
    }
    const h = new HandleApi(tape);
    expect(h.value(h.mul(x.id, x.id))).toBe(4);
    expect(new VectorHandleApi(tape).value(tape.handles.vec.variable([1, 2]))).toEqual(Float64Array.of(1, 2));
  });

  // More inputs than a tape holds failed allocating the input row: a bare RangeError.
  it('refuse more inputs than a tape holds', () => {
    const sum = (x: Var[]): Var => x.reduce((s, v) => s.add(v));
    for (const inputs of [1e12, 2 ** 28 + 1]) {
      for (const vector of [false, true]) {
        let error: unknown;
        try {
          compile(sum as never, { inputs, vector, backend });
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(TapegradError);
        expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', message: `compile needs { inputs: n } with 1 <= n <= 268435456, got number ${inputs}` });
      }
    }
    expect(compile(sum, { inputs: 2, backend }).value([1, 2])).toBe(3);
  });

  // A probe's first try, compile(f) with no options, got a TypeError reading expectedNodes.
  it('refuse a missing options object as a missing inputs count', () => {
    const square = ((x: Var[]) => x[0]!.square()) as never;
    expect(() => (compile as (f: unknown) => unknown)(square)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'compile needs { inputs: n } with 1 <= n <= 268435456, got undefined' }),
    );
    expect(() => compile(square, null as never)).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'compile: options must be an object, got null' }),
    );
  });
});

// value(x, out) and jvp(x, t, out) filled a short out as far as it went, and took a plain array.
it.each(BACKENDS)('value and jvp check their out array as the other methods do (%s)', (backend) => {
  const f = compile((x: Var[]) => [x[0]!.mul(x[1]!), x[0]!.sin(), x[1]!.exp()], { inputs: 2, backend });
  for (const bad of [new Float64Array(2), [0, 0, 0] as unknown as Float64Array, new Int32Array(3) as unknown as Float64Array]) {
    expect(() => f.value([1, 2], bad)).toThrow('value: out must be a Float64Array of at least 3 numbers');
    expect(() => f.jvp([1, 2], [1, 0], bad)).toThrow('jvp: out must be a Float64Array of at least 3 numbers');
  }
  const out = new Float64Array(3);
  expect(f.value([1, 2], out)).toBe(out);
  expect(Array.from(out)).toEqual([2, Math.sin(1), Math.exp(2)]);
  expect(Array.from(f.jvp([1, 2], [1, 0], out))).toEqual([2, Math.cos(1), 0]);
});

// A probe: a Var that escaped f stayed live on the compiled function's tape, and recording
// through it grew the recording (size 3 to 203, its bytes 88 to 2,688); a transform's escaped
// Vars go stale. The recording is closed to more nodes now; escaped Vars still read.
describe.each(BACKENDS)('a compiled recording takes no more nodes (%s)', (backend) => {
  it('recording through an escaped Var is INVALID_ARGUMENT, and the function is unchanged', () => {
    let kept: Var | undefined;
    const f = compile((x: Var[]) => {
      kept = x[0]!;
      return x[0]!.mul(x[1]!).sin();
    }, { inputs: 2, backend });
    const g = Array.from(f.gradient([2, 3]));
    const size = f.size, bytes = f.toBytes().length;
    const tape = kept!.tape;
    for (const record of [() => kept!.mul(1.5), () => kept!.square(), () => tape.handles.exp(kept!.id), () => tape.constant(2), () => tape.variables([1]), () => tape.vector([1, 2])]) {
      expect(record).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/compiled function's recording, which takes no more nodes/) }));
    }
    expect([f.size, f.toBytes().length]).toEqual([size, bytes]);
    // A refused vector op takes no elements either (a review: stack's regions grew first, as it
    // reserves its elements before its nodes).
    const elementCapacity = tape.engine.elementCapacity;
    expect(() => tape.stack(new Array<Var>(20_000).fill(kept!))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(tape.engine.elementCapacity).toBe(elementCapacity);
    expect(Array.from(f.gradient([2, 3]))).toEqual(g);
    expect(kept!.value).toBe(2);
    // A re-record (a guard's, or after a reset of that tape) opens it for f, and closes it again.
    tape.reset();
    expect(Array.from(f.gradient([2, 3]))).toEqual(g);
    expect(() => kept!.mul(2)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
