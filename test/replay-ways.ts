// Two compiled copies of one function, one replayed by the interpreter (codegen off) and one the
// default way (generated code, or a schedule for a tape too large to fold), and a check that
// every method agrees bit for bit: values and derivatives, Object.is per component (-0 and NaN
// count). Shared by test/codegen.test.ts and test/schedule.test.ts.
import fc from 'fast-check';
import { expect } from 'vitest';
import { compile, type CompilableFunction, type CompiledFunction } from '../src/index.ts';
import { dagArbitrary, dagSum } from './dag-arbitrary.ts';

export function expectSameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    if (!Object.is(actual[k], expected[k])) throw new Error(`${what}[${k}]: generated ${actual[k]}, interpreted ${expected[k]}`);
  }
}

export const special = fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 1, -1, 5e-324, 1e300);
export const anyInput = fc.oneof(fc.double({ min: -2, max: 2, noNaN: true }), special, fc.double());

/** Both ways of replaying f, and a check that every method agrees bit for bit at x. */
// Fills the memory after the tape with NaN, where the tangent regions will go once a jvp or hvp
// adds them: generated sweeps must read no tangent slot they did not write.
export function dirtyAfterTape(f: CompiledFunction): void {
  const engine = f.recorded!.tape.engine as unknown as { scratchFor(bytes: number): number; core: { memory: WebAssembly.Memory }; capacity: number };
  const bytes = 32 * engine.capacity;
  const at = engine.scratchFor(bytes);
  new Float64Array(engine.core.memory.buffer, at, bytes / 8).fill(NaN);
}

export function bothWays(f: CompilableFunction, inputs: number, at: ArrayLike<number>) {
  const generated = compile(f, { inputs, at });
  const interpreted = compile(f, { inputs, at, codegen: false });
  dirtyAfterTape(generated);
  return {
    generated,
    interpreted,
    check(x: Float64Array, rows = 1): void {
      const row = x.subarray(0, inputs);
      expectSameBits([generated.value(row) as number], [interpreted.value(row) as number], 'value');
      expectSameBits(generated.gradient(row), interpreted.gradient(row), 'gradient');
      const [v1, g1] = generated.valueAndGradient(row);
      const [v2, g2] = interpreted.valueAndGradient(row);
      expectSameBits([v1, ...g1], [v2, ...g2], 'valueAndGradient');
      expectSameBits(generated.vjp(row, [-1.5]), interpreted.vjp(row, [-1.5]), 'vjp');
      const direction = Float64Array.from({ length: inputs }, (_, k) => (k % 3) - 1);
      // hvp before jvp: the first hvp makes the tangent sweeps and runs them one by one (clearing
      // every adjoint first); later ones run the fused sweep.
      const turned = Float64Array.from({ length: inputs }, (_, k) => ((k + 1) % 3) - 0.5);
      expectSameBits(generated.hvp(row, turned), interpreted.hvp(row, turned), 'hvp');
      // A different direction for jvp: the generated sweeps seed only the inputs' tangents
      // (they write every other slot they read), so a stale tangent would show here.
      expectSameBits(generated.jvp(row, direction), interpreted.jvp(row, direction), 'jvp');
      // Directions holding -0, ±Infinity and NaN (the inputs, turned): the generated tangent
      // sweeps leave out the interpreter's tests that cannot change a result, and these would
      // show one that can.
      const wild = Float64Array.from({ length: inputs }, (_, k) => x[(k + 1) % x.length]!);
      expectSameBits(generated.jvp(row, wild), interpreted.jvp(row, wild), 'jvp along special values');
      expectSameBits(generated.hvp(row, wild), interpreted.hvp(row, wild), 'hvp along special values');
      expectSameBits(generated.hvp(row, direction), interpreted.hvp(row, direction), 'hvp after hvp');
      if (rows > 1) {
        // Batches: generated code row by row on long tapes, the SIMD kernel on short ones;
        // either way the rows must equal the interpreter's.
        const X = x.subarray(0, rows * inputs);
        // hvp row after row: each reverse tangent sweep leaves the adjoints it read at +0 for
        // the next, which then clears only the inputs'.
        const V = X.slice().reverse();
        expectSameBits(generated.hvpBatch(X, rows, V), interpreted.hvpBatch(X, rows, V), `hvpBatch of ${rows} rows`);
        // One interpreted batch for both comparisons: a batch that crosses a guard records again,
        // and rerecords must count the same calls on both sides.
        const want = interpreted.gradientBatch(X, rows);
        expectSameBits(generated.gradientBatch(X, rows), want, `gradientBatch of ${rows} rows`);
        expectSameBits(compile(f, { inputs, at, simd: false }).gradientBatch(X, rows), want, `scalar gradientBatch of ${rows} rows`);
      }
      expect(generated.rerecords).toBe(interpreted.rerecords);
    },
  };
}


/** Random DAGs over every op, both ways, at their own point and at any inputs (3 rows): the
 *  replay the default way is `sweeps` ('active': generated code, 'scheduled'). */
export function checkRandomDags(sweeps: 'active' | 'scheduled', numRuns: number): void {
  fc.assert(
    fc.property(
      dagArbitrary({ maxNodes: 200, maxInputs: 6 }),
      fc.array(anyInput, { minLength: 24, maxLength: 24 }),
      (dag, xs) => {
        const ways = bothWays(dagSum(dag), dag.inputs.length, dag.inputs);
        expect(ways.generated.generatedSweeps).toBe(sweeps);
        ways.check(Float64Array.from(dag.inputs));
        ways.check(Float64Array.from(xs), 3);
      },
    ),
    { numRuns },
  );
}
