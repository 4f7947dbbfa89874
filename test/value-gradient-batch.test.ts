// valueAndGradientBatch: values and gradients for many rows in one call into the core, bit for
// bit what row-by-row valueAndGradient gives, on every path a batch can take: generated sweeps,
// the two-row SIMD kernel, the scalar kernel, the JS engine, vector tapes, and rows where a guard
// fails (the function records again there).
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, init, type CompiledFunction, type CompileOptions, type Var, type Vec } from '../src/index.ts';

beforeAll(async () => {
  await init();
});

const piecewise = (x: Var[]): Var => {
  const [a, b, c] = x as [Var, Var, Var];
  return a.tape.select(a.gt(b), a.mul(b).sin(), c.exp()).add(b.square().mul(c)).sub(a.max(c));
};
const guarded = (x: Var[]): Var => (x[0]!.gt(0).value ? x[0]!.square().mul(x[1]!) : x[0]!.neg().sin().add(x[2]!));
const ROWS = 9;
const X = Float64Array.from({ length: ROWS * 3 }, (_, k) => Math.sin(1.7 * k + 0.3) * 2);

describe('valueAndGradientBatch equals row-by-row valueAndGradient, bit for bit', () => {
  const variants: [string, CompileOptions][] = [
    ['wasm, generated sweeps', { inputs: 3 }],
    ['wasm, SIMD kernel', { inputs: 3, codegen: false }],
    ['wasm, scalar kernel', { inputs: 3, codegen: false, simd: false }],
    ['js', { inputs: 3, backend: 'js' }],
  ];
  for (const [name, options] of variants) {
    for (const [fname, f] of [['piecewise', piecewise], ['guarded (records again across the branch)', guarded]] as const) {
      it(`${name}: ${fname}`, () => {
        const batched = compile(f, options as never);
        const [values, grads] = batched.valueAndGradientBatch(X, ROWS);
        const single = compile(f, options as never);
        for (let r = 0; r < ROWS; r++) {
          const [v, g] = single.valueAndGradient(X.subarray(3 * r, 3 * r + 3));
          expect(Object.is(values[r], v), `row ${r} value ${values[r]} vs ${v}`).toBe(true);
          expect([...grads.subarray(3 * r, 3 * r + 3)], `row ${r}`).toEqual([...g]);
        }
      });
    }
  }

  it('vector tapes, and out arrays reused without allocation', () => {
    const f = compile((x: Vec) => x.mul(x.slice(1).sum()).logSumExp(), { inputs: 3, vector: true });
    const out = new Float64Array(ROWS * 3), values = new Float64Array(ROWS);
    const [v, g] = f.valueAndGradientBatch(Array.from(X), ROWS, out, values);
    expect(v).toBe(values);
    expect(g).toBe(out);
    for (let r = 0; r < ROWS; r++) {
      const [value, grad] = f.valueAndGradient(X.subarray(3 * r, 3 * r + 3));
      expect(values[r]).toBe(value);
      expect([...out.subarray(3 * r, 3 * r + 3)]).toEqual([...grad]);
    }
  });

  it('lengths are checked, naming both', () => {
    const f = compile(piecewise, { inputs: 3 });
    expect(() => f.valueAndGradientBatch(new Float64Array(5), 2)).toThrow(/2 rows of 3 inputs need at least 6 numbers, got 5/);
    expect(() => f.valueAndGradientBatch(X, 2, undefined, new Float64Array(1))).toThrow(/at least 2 numbers/);
    // X is checked before the output is allocated: a huge row count was a RangeError of the
    // allocation (a new-user probe), in gradientBatch too.
    for (const batch of [() => f.valueAndGradientBatch([1, 2, 3], 1e10), () => f.gradientBatch([1, 2, 3], 1e10), () => f.hvpBatch([1, 2, 3], 1e10, [1, 1, 1])]) {
      expect(batch).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/: 10000000000 rows of 3 inputs need at least 30000000000 numbers, got 3$/) }));
    }
    expect(f.gradientBatch(X, 1).length).toBe(3);
    // An X that claims more entries than a typed array holds: the copy the call makes of it is a
    // CapacityError, not a raw RangeError (a pool probe's side note).
    const claims = { length: 2 ** 31 * 3 } as unknown as number[];
    for (const batch of [() => f.gradientBatch(claims, 2 ** 31), () => f.valueAndGradientBatch(claims, 2 ** 31)]) {
      expect(batch).toThrow(expect.objectContaining({ name: 'CapacityError', code: 'CAPACITY', message: expect.stringMatching(/Batch: 2147483648 rows of 3 inputs: 6442450944 numbers \(51539607552 bytes\) are more than the runtime allocates$/) }));
    }
  });

  // A probe: null was a new array for gradientBatch and a refusal for the others, and a bad
  // `values` read as "the output array".
  it('a missing or short out or values is refused naming the call and the argument, null too', () => {
    const f = compile(piecewise, { inputs: 3 });
    const bad = null as unknown as Float64Array;
    expect(() => f.gradientBatch(X, 1, bad)).toThrow('gradientBatch: out must be a Float64Array of at least 3 numbers, got null (leave it out for a new array)');
    expect(() => f.valueAndGradientBatch(X, 1, undefined, bad)).toThrow('valueAndGradientBatch: values must be a Float64Array of at least 1 number, got null');
    expect(() => f.jvpBatch(X, 2, X, new Float64Array(2), new Float64Array(1))).toThrow('jvpBatch: values must be a Float64Array of at least 2 numbers, got an object (Float64Array) of length 1');
    expect(() => f.vjpBatch(X, 1, [1], undefined, bad)).toThrow(/^vjpBatch: values must be/);
    expect(() => f.hvpBatch(X, 1, X, bad)).toThrow(/^hvpBatch: out must be/);
    expect(() => f.gradient([1, 2, 3], bad)).toThrow(/^gradient: out must be/);
  });

  // A pool probe: out and values over the same rows gave the pool's numbers and one thread's
  // apart; each call writes them in an order of its own, so the overlap is refused.
  it('out and values sharing memory are refused, naming the call; side by side in one buffer they work', () => {
    const f = compile(piecewise, { inputs: 3 });
    const s = new Float64Array(40);
    const message = (call: string): string => `${call}: out and values share memory; give them arrays apart`;
    expect(() => f.valueAndGradientBatch(X, 2, s.subarray(0, 6), s.subarray(5, 7))).toThrow(message('valueAndGradientBatch'));
    expect(() => f.jvpBatch(X, 2, X, s.subarray(0, 2), s.subarray(1, 3))).toThrow(message('jvpBatch'));
    expect(() => f.hvpBatch(X, 2, X, s.subarray(0, 6), s.subarray(0, 2))).toThrow(message('hvpBatch'));
    expect(() => f.vjpBatch(X, 2, [1, 1], s.subarray(0, 6), s.subarray(4, 6))).toThrow(message('vjpBatch'));
    const [values, G] = f.valueAndGradientBatch(X, 2, s.subarray(0, 6), s.subarray(6, 8));
    const [values1, G1] = f.valueAndGradientBatch(X, 2);
    expect(Array.from(values)).toEqual(Array.from(values1));
    expect(Array.from(G)).toEqual(Array.from(G1));
  });
});

// Results written over the rows they are computed from (out sharing X's or V's memory): a probe
// found the JS engine's gradients and every engine's vjpBatch reading rows already overwritten.
describe('batch outputs over their own input rows', () => {
  const f = (x: Var[]): Var => x[0]!.mul(x[1]!).add(x[1]!.square());
  for (const backend of ['wasm', 'js'] as const) {
    it(backend, () => {
      const g = compile(f, { inputs: 2, backend });
      const rows = [1, 2, 3, 4, 5, 6];
      const expected = g.gradientBatch(rows, 3);
      expect(Array.from(expected)).toEqual([2, 5, 4, 11, 6, 17]);
      // H = [[0, 1], [1, 2]] everywhere: H·(1, 0) = (0, 1).
      const calls: [string, (buf: Float64Array) => Float64Array, ArrayLike<number>][] = [
        ['gradientBatch', (buf) => g.gradientBatch(buf.subarray(0, 6), 3, buf.subarray(2, 8)), expected],
        ['valueAndGradientBatch', (buf) => g.valueAndGradientBatch(buf.subarray(0, 6), 3, buf.subarray(2, 8))[1], expected],
        ['vjpBatch', (buf) => g.vjpBatch(buf.subarray(0, 6), 3, [1, 1, 1], buf.subarray(2, 8)), expected],
        ['hvpBatch', (buf) => g.hvpBatch(buf.subarray(0, 6), 3, [1, 0, 1, 0, 1, 0], buf.subarray(2, 8)), [0, 1, 0, 1, 0, 1]],
        ['gradientBatch in place', (buf) => g.gradientBatch(buf.subarray(0, 6), 3, buf.subarray(0, 6)), expected],
      ];
      for (const [name, call, want] of calls) {
        const buf = new Float64Array([...rows, 0, 0]);
        expect([name, ...call(buf)]).toEqual([name, ...Array.from(want)]);
      }
      // The values too, over the rows.
      const buf = new Float64Array([...rows, 0, 0]);
      const [values] = g.valueAndGradientBatch(buf.subarray(0, 6), 3, undefined, buf.subarray(1, 4));
      expect(Array.from(values)).toEqual([6, 28, 66]);
      // Directions overwritten by jvpBatch's results.
      const t = new Float64Array([1, 0, 0, 1, 1, 1]);
      expect(Array.from(g.jvpBatch(rows, 3, t, t.subarray(1, 4)))).toEqual([2, 11, 23]);
      // One shared memory through two buffer objects (a clone, as a buffer posted twice arrives),
      // which JavaScript cannot tell from two memories: the rows are copied first (a probe got
      // NaN rows, computed from the gradients written over them).
      for (const [name, call, want] of calls) {
        const shared = new Float64Array(new SharedArrayBuffer(64));
        shared.set([...rows, 0, 0]);
        const clone = new Float64Array(structuredClone(shared.buffer));
        expect(clone.buffer).not.toBe(shared.buffer);
        const got = call === calls[4]![1] ? g.gradientBatch(shared.subarray(0, 6), 3, clone.subarray(0, 6)) : callOver(name, shared, clone);
        expect([name, ...got]).toEqual([name, ...Array.from(want)]);
      }
      function callOver(name: string, x: Float64Array, o: Float64Array): Float64Array {
        const X = x.subarray(0, 6), out = o.subarray(2, 8);
        if (name === 'gradientBatch') return g.gradientBatch(X, 3, out);
        if (name === 'valueAndGradientBatch') return g.valueAndGradientBatch(X, 3, out)[1];
        if (name === 'vjpBatch') return g.vjpBatch(X, 3, [1, 1, 1], out);
        return g.hvpBatch(X, 3, [1, 0, 1, 0, 1, 0], out);
      }
    });
  }
});

describe('vjpBatch, jvpBatch and hvpBatch equal their row-by-row forms, bit for bit', () => {
  const vector = (x: Var[]): Var[] => [x[0]!.mul(x[1]!).sin(), x[2]!.exp().mul(x[0]!), x[1]!.sub(x[2]!)];
  for (const backend of ['wasm', 'js'] as const) {
    it(backend, () => {
      const f = compile(vector, { inputs: 3, backend });
      const g = compile(guarded, { inputs: 3, backend });
      const D = Float64Array.from({ length: ROWS * 3 }, (_, k) => Math.cos(0.9 * k));
      const vjps = f.vjpBatch(X, ROWS, D), jvps = f.jvpBatch(X, ROWS, D), hvps = g.hvpBatch(X, ROWS, D);
      const single = compile(vector, { inputs: 3, backend }), singleG = compile(guarded, { inputs: 3, backend });
      for (let r = 0; r < ROWS; r++) {
        const x = X.subarray(3 * r, 3 * r + 3), d = D.subarray(3 * r, 3 * r + 3);
        expect([...vjps.subarray(3 * r, 3 * r + 3)], `vjp row ${r}`).toEqual([...single.vjp(x, d)]);
        expect([...jvps.subarray(3 * r, 3 * r + 3)], `jvp row ${r}`).toEqual([...single.jvp(x, d)]);
        expect([...hvps.subarray(3 * r, 3 * r + 3)], `hvp row ${r}`).toEqual([...singleG.hvp(x, d)]);
      }
      expect(() => g.hvpBatch(X, ROWS, new Float64Array(4))).toThrow(/hvpBatch: 9 rows of 3 direction entries need at least 27 numbers, got 4/);
    });

    it(`${backend}: with values, each row's function values too`, () => {
      const f = compile(vector, { inputs: 3, backend });
      const g = compile(guarded, { inputs: 3, backend });
      const D = Float64Array.from({ length: ROWS * 3 }, (_, k) => Math.sin(0.4 * k + 1));
      const vjpValues = new Float64Array(ROWS * 3), jvpValues = new Float64Array(ROWS * 3), hvpValues = new Float64Array(ROWS);
      const vjps = f.vjpBatch(X, ROWS, D, undefined, vjpValues);
      const jvps = f.jvpBatch(X, ROWS, D, undefined, jvpValues);
      const hvps = g.hvpBatch(X, ROWS, D, undefined, hvpValues);
      const single = compile(vector, { inputs: 3, backend }), singleG = compile(guarded, { inputs: 3, backend });
      for (let r = 0; r < ROWS; r++) {
        const x = X.subarray(3 * r, 3 * r + 3), d = D.subarray(3 * r, 3 * r + 3);
        const value = single.value(x) as Float64Array;
        expect([...vjpValues.subarray(3 * r, 3 * r + 3)], `vjp values row ${r}`).toEqual([...value]);
        expect([...jvpValues.subarray(3 * r, 3 * r + 3)], `jvp values row ${r}`).toEqual([...value]);
        expect(Object.is(hvpValues[r], singleG.value(x)), `hvp value row ${r}`).toBe(true);
        // The directions' results are the same as without values.
        expect([...vjps.subarray(3 * r, 3 * r + 3)]).toEqual([...single.vjp(x, d)]);
        expect([...jvps.subarray(3 * r, 3 * r + 3)]).toEqual([...single.jvp(x, d)]);
        expect([...hvps.subarray(3 * r, 3 * r + 3)]).toEqual([...singleG.hvp(x, d)]);
      }
      expect(() => g.hvpBatch(X, ROWS, D, undefined, new Float64Array(ROWS - 1))).toThrow(/at least 9 numbers, got .* of length 8/);
      expect(() => f.jvpBatch(X, ROWS, D, undefined, new Float64Array(ROWS))).toThrow(/at least 27 numbers/);
    });
  }
});

const errorOf = (action: () => unknown): { code?: string; message: string } => {
  try {
    action();
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('did not throw');
};

describe.each(['wasm', 'js'] as const)('batch arguments and output counts (%s)', (backend) => {
  // jvpBatch recorded f at the first row before it checked the rows, and named 1 row for X.
  it('jvpBatch and hvpBatch check rows, X and the directions before f first records', () => {
    let calls = 0;
    const body = (x: Var[]): Var[] => {
      calls++;
      return [x[0]!.mul(x[1]!)];
    };
    const f = compile(body, { inputs: 2, backend });
    const bad: [() => unknown, string][] = [
      [() => f.jvpBatch([1], 2, [1, 1, 1, 1]), 'jvpBatch: 2 rows of 2 inputs need at least 4 numbers, got 1'],
      [() => f.jvpBatch([1, 1, 1], 2, [1, 1, 1, 1]), 'jvpBatch: 2 rows of 2 inputs need at least 4 numbers, got 3'],
      [() => f.jvpBatch([1, 1, 1, 1], 1.5, [1, 1, 1, 1]), 'jvpBatch: rows must be a non-negative integer, got number 1.5'],
      [() => f.jvpBatch([1, 1, 1, 1], 2, [1, 1, 1]), 'jvpBatch: 2 rows of 2 direction entries need at least 4 numbers, got 3'],
      [() => f.hvpBatch([1, 1, 1, 1], 2, [1]), 'hvpBatch: 2 rows of 2 direction entries need at least 4 numbers, got 1'],
    ];
    for (const [call, message] of bad) expect(errorOf(call)).toMatchObject({ code: 'INVALID_ARGUMENT', message });
    expect(calls).toBe(0);
    expect(Array.from(f.jvpBatch([1, 2, 3, 4], 2, [1, 0, 0, 1]))).toEqual([2, 3]);
    expect(calls).toBe(1);
    // One output: its rows of one entry each, in the singular (a probe read "1 cotangent entries").
    expect(errorOf(() => f.vjpBatch([1, 2, 3, 4], 2, [1]))).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'vjpBatch: 2 rows of 1 cotangent entry need at least 2 numbers, got 1' });
  });

  // A guard recorded f again with another output count mid-batch: jvpBatch gave rows laid out
  // for the old count without a word.
  it('a row where f, recorded again, returns another number of outputs throws, naming the row and both counts', () => {
    const twoThenOne = (x: Var[]): Var[] => (x[0]!.gt(0).value ? [x[0]!.mul(3), x[0]!.mul(5)] : [x[0]!.mul(7)]);
    const cases: [string, (f: CompiledFunction) => unknown, number, number][] = [
      ['jvpBatch', (f) => f.jvpBatch([1, -1], 2, [1, 1], undefined, new Float64Array(4)), 1, 2],
      ['jvpBatch', (f) => f.jvpBatch([-1, 2, -2], 3, [1, 1, 1], undefined, new Float64Array(6)), 2, 1],
      ['vjpBatch', (f) => f.vjpBatch([1, -1], 2, [1, 1, 1, 1], undefined, new Float64Array(4)), 1, 2],
      ['vjpBatch', (f) => f.vjpBatch([-1, 2], 2, [1, 1]), 2, 1],
    ];
    for (const [what, batch, now, before] of cases) {
      const f = compile(twoThenOne, { inputs: 1, backend });
      expect(errorOf(() => batch(f))).toMatchObject({
        code: 'INVALID_ARGUMENT', message: `${what}, row 1: f, recorded again here, returns ${now} output${now === 1 ? '' : 's'}, not the batch's ${before}`,
      });
      // Usable after: rows of either branch, one at a time, and batches of the branch recorded last
      // (a batch is laid out for the recording it starts with).
      expect(Array.from(f.jvp([4], [1]))).toEqual([3, 5]);
      expect(Array.from(f.jvpBatch([4, 5], 2, [1, 1]))).toEqual([3, 5, 3, 5]);
      expect(Array.from(f.vjpBatch([4, 5], 2, [1, 1, 1, 0]))).toEqual([8, 3]);
      expect(Array.from(f.jvp([-2], [1]))).toEqual([7]);
      expect(Array.from(f.jvpBatch([-2, -3], 2, [1, 1]))).toEqual([7, 7]);
      // A batch is laid out for its first row's output count, whatever call came before (a probe:
      // it took the last recording's, and refused rows whose count was the same throughout).
      f.value([4]);
      expect(Array.from(f.jvpBatch([-2, -3], 2, [1, 1]))).toEqual([7, 7]);
      f.value([4]);
      expect(Array.from(f.vjpBatch([-2, -3], 2, [1, 2]))).toEqual([7, 14]);
      f.value([-4]);
      expect(Array.from(f.vjpBatch([4, 5], 2, [1, 1, 1, 0]))).toEqual([8, 3]);
    }
    // hvpBatch's and the gradients' rows are laid out for one scalar output: a row whose recording
    // has two is refused, naming it. After it (the recording has two outputs), rows where f has
    // one work again: the gradients refused them from the recording alone, before replaying.
    const oneThenTwo = (x: Var[]): Var | Var[] => (x[0]!.gt(0).value ? x[0]!.square() : [x[0]!.mul(7), x[0]!]);
    const h = compile(oneThenTwo, { inputs: 1, backend });
    const values = new Float64Array(2);
    const e = errorOf(() => h.hvpBatch([1, -1], 2, [1, 1], undefined, values));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.message.startsWith('hvpBatch, row 1: needs a function with one scalar output; this one returns 2 outputs')).toBe(true);
    expect(Array.from(values)).toEqual([1, 0]);
    // hvp's values are one per row, whatever the recording the batch starts from returns.
    expect(Array.from(h.hvpBatch([3, 4], 2, [1, 1], undefined, values))).toEqual([2, 2]);
    expect(Array.from(values)).toEqual([9, 16]);
    for (const what of ['gradientBatch', 'valueAndGradientBatch'] as const) {
      const g = compile(oneThenTwo, { inputs: 1, backend });
      const e = errorOf(() => g[what]([1, 2, -1], 3));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.message.startsWith(`${what}, row 2: needs a function with one scalar output; this one returns 2 outputs`)).toBe(true);
      expect(Array.from(g.gradientBatch([3, 4], 2))).toEqual([6, 8]);
      g.value([-1]);
      expect(Array.from(g.gradient([3]))).toEqual([6]);
      g.value([-1]);
      expect(g.valueAndGradientBatch([3], 1).map((a) => a[0])).toEqual([9, 6]);
    }
  });
});

// After its first row, a directional batch runs its rows through the engine's sweeps with none of
// the per-row calls around them (jvpBatch and hvpBatch through the generated forward-tangent
// sweep, vjpBatch through the replay and the reverse sweep), falling back to the call at a row
// whose guards fail: the same bits as calls row by row, through stretches of one branch and
// changes between them, and the same errors, naming the same rows.
describe('directional batches past their first row', () => {
  const RUN_ROWS = 120;
  // Runs of rows on one side of 0, of lengths 1 to 7, so the rows between branch changes run
  // through the sweeps and a change lands at every offset of a run.
  const X2 = Float64Array.from({ length: RUN_ROWS * 3 }, (_, k) => {
    const r = Math.floor(k / 3), run = Math.floor(Math.sqrt(2 * r));
    return (run % 2 === 0 ? 1 : -1) * (0.3 + 0.25 * Math.abs(Math.sin(1.3 * k)));
  });
  const D2 = Float64Array.from({ length: RUN_ROWS * 3 }, (_, k) => Math.cos(0.7 * k) * (k % 5 === 0 ? 0 : 1));
  const twoOutputs = (x: Var[]): Var[] => {
    const [a, b, c] = x as [Var, Var, Var];
    const y = a.gt(0).value ? a.mul(b).sin().add(c.tanh()) : a.neg().sqrt().mul(c).sub(b.exp());
    return [y.mul(a).add(c.square()), b.log1p().mul(y)];
  };
  const variants: [string, CompileOptions][] = [
    ['wasm, generated sweeps', { inputs: 3 }],
    ['wasm, interpreted', { inputs: 3, codegen: false }],
    ['js', { inputs: 3, backend: 'js' }],
  ];
  for (const [name, options] of variants) {
    it(`${name}: the same bits and values as row-by-row calls`, () => {
      const f = compile(twoOutputs, options as never), g = compile(guarded, options as never);
      const jvpValues = new Float64Array(RUN_ROWS * 2), vjpValues = new Float64Array(RUN_ROWS * 2), hvpValues = new Float64Array(RUN_ROWS);
      const V = D2.subarray(0, RUN_ROWS * 2);
      const jvps = f.jvpBatch(X2, RUN_ROWS, D2, undefined, jvpValues);
      const vjps = f.vjpBatch(X2, RUN_ROWS, V, undefined, vjpValues);
      const hvps = g.hvpBatch(X2, RUN_ROWS, D2, undefined, hvpValues);
      const single = compile(twoOutputs, options as never), singleG = compile(guarded, options as never);
      for (let r = 0; r < RUN_ROWS; r++) {
        const x = X2.subarray(3 * r, 3 * r + 3), d = D2.subarray(3 * r, 3 * r + 3);
        expect([...jvps.subarray(2 * r, 2 * r + 2)], `jvp row ${r}`).toEqual([...single.jvp(x, d)]);
        expect([...vjps.subarray(3 * r, 3 * r + 3)], `vjp row ${r}`).toEqual([...single.vjp(x, V.subarray(2 * r, 2 * r + 2))]);
        expect([...hvps.subarray(3 * r, 3 * r + 3)], `hvp row ${r}`).toEqual([...singleG.hvp(x, d)]);
        const value = single.value(x) as Float64Array;
        expect([...jvpValues.subarray(2 * r, 2 * r + 2)], `jvp values row ${r}`).toEqual([...value]);
        expect([...vjpValues.subarray(2 * r, 2 * r + 2)], `vjp values row ${r}`).toEqual([...value]);
        expect(Object.is(hvpValues[r], singleG.value(x)), `hvp value row ${r}`).toBe(true);
      }
      // Each branch change recorded f again: once a change in the calls (jvp, vjp and value at one
      // row), once a change and batch here (the jvp batch, then the vjp batch).
      expect(single.rerecords).toBeGreaterThan(10);
      expect(f.rerecords).toBeGreaterThanOrEqual(2 * single.rerecords);
    });
  }

  // A function of no outputs: the core's batch reads no seeds as a gradient's seed of 1, and gave
  // row 1 the gradient of node 0 (the full suite's codegen-reason test).
  for (const backend of ['wasm', 'js'] as const) {
    it(`${backend}: vjpBatch of a function with no outputs, or an input as its output`, () => {
      expect(Array.from(compile(() => [], { inputs: 2, backend }).vjpBatch([1, 2, 3, 4, 5, 6], 3, []))).toEqual([0, 0, 0, 0, 0, 0]);
      const input = compile((x: Var[]) => [x[1]!], { inputs: 2, backend });
      expect(Array.from(input.vjpBatch([1, 2, 3, 4, 5, 6], 3, [7, 8, 9]))).toEqual([0, 7, 0, 8, 0, 9]);
    });
  }

  it('on wasm with generated sweeps the rows after the first go through the fused sweeps, stopping at each branch change', async () => {
    const { WasmBackend } = await import('../src/wasm/backend.ts');
    // Three runs of 20 rows: the recorded branch, the other, the recorded one again.
    const rows = 60, X = Float64Array.from({ length: 3 * rows }, (_, k) => (Math.floor(k / 60) === 1 ? -1 : 1) * (0.3 + 0.25 * Math.abs(Math.sin(1.3 * k))));
    const D = Float64Array.from({ length: 3 * rows }, (_, k) => Math.cos(0.7 * k));
    const fused = WasmBackend.prototype.forwardTangentRows;
    let swept = 0, stops = 0;
    WasmBackend.prototype.forwardTangentRows = function (this: InstanceType<typeof WasmBackend>, ...args: Parameters<typeof fused>) {
      const done = fused.apply(this, args);
      swept += done - args[2];
      if (done < args[3]) stops++;
      return done;
    };
    try {
      for (const kind of ['jvp', 'hvp'] as const) {
        swept = stops = 0;
        // 'require': every recording generated (by default the one after the first change, which
        // came before its recording had paid for its generation, would be interpreted).
        const f = compile(guarded, { inputs: 3, codegen: 'require' }), single = compile(guarded, { inputs: 3 });
        const batch = kind === 'jvp' ? f.jvpBatch(X, rows, D) : f.hvpBatch(X, rows, D);
        // Row 0 and the first row of each change by the call, the rest through the sweeps.
        expect([swept, stops, f.rerecords], kind).toEqual([rows - 3, 2, 2]);
        expect(f.generatedSweeps).toBe('active');
        for (let r = 0; r < rows; r++) {
          const x = X.subarray(3 * r, 3 * r + 3), d = D.subarray(3 * r, 3 * r + 3);
          if (kind === 'jvp') expect(Object.is(batch[r], single.jvp(x, d)[0]), `jvp row ${r}`).toBe(true);
          else expect([...batch.subarray(3 * r, 3 * r + 3)], `hvp row ${r}`).toEqual([...single.hvp(x, d)]);
        }
      }
    } finally {
      WasmBackend.prototype.forwardTangentRows = fused;
    }
  });

  for (const [name, options] of variants) {
    it(`${name}: a strict function's branch change among such rows names its row`, () => {
      const f = compile(guarded, { ...options, strict: true } as never);
      // Rows 0-6 on the recorded branch, row 7 on the other.
      const X = Float64Array.from({ length: 24 }, (_, k) => (k === 21 ? -0.5 : 0.5 + 0.01 * k)), D = new Float64Array(24).fill(1);
      for (const [what, batch] of [
        ['jvpBatch', () => f.jvpBatch(X, 8, D)], ['hvpBatch', () => f.hvpBatch(X, 8, D)], ['vjpBatch', () => f.vjpBatch(X, 8, D)],
      ] as const) {
        const e = errorOf(batch);
        expect(e.code, what).toBe('BRANCH_CHANGED');
        expect(e.message.startsWith(`${what}, row 7: a comparison recorded at node`), e.message).toBe(true);
        // Usable after, and right.
        const x = X.subarray(0, 3);
        expect(Array.from(f.jvpBatch(x, 1, D.subarray(0, 3)))).toEqual(Array.from(f.jvp(x, D.subarray(0, 3))));
        // vjpBatch's seeds do not outlive it: a gradient batch after it seeds 1 (on wasm the
        // core holds them during the batch).
        expect(Array.from(f.gradientBatch(X, 7))).toEqual(Array.from({ length: 7 }, (_, r) => Array.from(f.gradient(X.subarray(3 * r, 3 * r + 3)))).flat());
      }
    });
  }
});
