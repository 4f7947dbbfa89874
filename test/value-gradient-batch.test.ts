// valueAndGradientBatch: values and gradients for many rows in one call into the core, bit for
// bit what row-by-row valueAndGradient gives, on every path a batch can take: generated sweeps,
// the two-row SIMD kernel, the scalar kernel, the JS engine, vector tapes, and rows where a guard
// fails (the function records again there).
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, init, type CompileOptions, type Var, type Vec } from '../src/index.ts';

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
  });
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
