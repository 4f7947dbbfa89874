// Batched and SIMD replay give exactly what row-by-row replay gives. The SIMD kernel runs two rows
// per pass in f64x2 lanes and claims bit-identity with the scalar kernel (same operations, same
// order, skipped contributions added as -0); the 'scalar' core build has no SIMD kernel at all.
// So gradientBatch with the SIMD kernel, with the scalar kernel, with generated sweeps, repeated
// gradient(x, out), and these on the scalar build must agree bit for bit (Object.is per component), for any input: NaN, Infinity and
// -0 included, any row count, and ops that take the per-lane path (min, max, abs, relu,
// transcendental ones) as well as select.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, init, type CompilableFunction, type CompiledFunction as Compiled, type Var } from '../src/index.ts';
import { CompiledFunction } from '../src/compile.ts';
import { Tape } from '../src/tape.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';
import { dagArbitrary, dagSum } from './dag-arbitrary.ts';

let simdModule: WebAssembly.Module;
let scalarModule: WebAssembly.Module;

beforeAll(async () => {
  // init() first: the first module loaded becomes the default that compile() uses.
  await init();
  simdModule = await loadCoreModule('simd');
  scalarModule = await loadCoreModule('scalar');
});

/** A compiled function on a given core build. compile() always uses the default build; a
 *  CompiledFunction records on the tape of its current recording, so it is handed an empty one
 *  on a tape over the chosen module. */
function compileOnCore(module: WebAssembly.Module, f: CompilableFunction, inputs: number, at: ArrayLike<number>, simd: boolean, codegen = true): Compiled {
  const tape = new Tape(new WasmBackend(module));
  const empty = { tape, inputs, outputs: new Int32Array(0), guards: new Int32Array(0), expected: new Float64Array(0), vectorInput: false, outputNodes: new Int32Array(0) };
  const compiled = new CompiledFunction(f, inputs, 'wasm', false, empty, simd, null, codegen);
  compiled.record(at);
  return compiled;
}

/** select, comparisons as data, min/max/abs/relu/floor/ceil and the arithmetic ops with a vector
 *  instruction. No `.value` is read, so no guard: any input replays on the recorded tape. */
function piecewise(x: Var[]): Var {
  const [a, b, c] = x as [Var, Var, Var];
  const t = a.tape;
  let y = t.select(a.gt(b), a.mul(b), b.sub(c));
  y = y.add(a.min(c)).add(b.max(c).mul(a)).add(c.abs().mul(b)).add(a.sub(b).relu());
  y = y.add(t.select(c.le(0), a.square(), b.sqrt())).add(t.select(a.eq(c), 1, c.recip()));
  y = y.add(a.floor().mul(b)).add(c.ceil().mul(a)).add(a.div(b)).add(b.neg().mul(c));
  y = y.add(t.select(b.lt(a).add(c.ge(b)), a.max(b).min(c), a.stopGradient().mul(c)));
  return y.mul(y.abs().min(3)).sub(a.max(a));
}

/** Ops without a vector instruction: the per-lane scalar rule inside the SIMD kernel. */
function transcendental(x: Var[]): Var {
  const [a, b, c] = x as [Var, Var, Var];
  let y = a.sin().mul(b.exp()).add(c.log()).add(a.pow(b)).add(b.atan2(c)).add(c.tanh().mul(a));
  y = y.add(a.sigmoid().mul(b.softplus())).add(a.hypot(c)).add(b.cbrt().mul(c.cos()));
  y = y.add(a.expm1().sub(b.log1p())).add(c.asinh().mul(a.atan())).add(b.pow(2.5)).add(a.round().mul(c.sign()));
  return y.add(a.mul(b).sinh().div(c.cosh())).add(a.acos().add(b.asin()).mul(c.atanh())).add(c.acosh().add(a.log2()).add(b.log10()));
}


function expectSameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    if (!Object.is(actual[k], expected[k])) throw new Error(`${what}[${k}]: got ${actual[k]}, expected ${expected[k]}`);
  }
}

/** Any double, with the special values often enough to pair them up in one row. */
const special = fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 1, -1, 5e-324, -5e-324, 1.7976931348623157e308);
const anyInput = fc.oneof(fc.double(), special, fc.double({ min: -3, max: 3, noNaN: true }));

/** Every way of computing the gradients of `rows` rows of X, which must all agree. */
function allWays(f: CompilableFunction, n: number, at: ArrayLike<number>) {
  const ways = {
    simd: compile(f, { inputs: n, at, simd: true, codegen: false }),
    scalarKernel: compile(f, { inputs: n, at, simd: false, codegen: false }),
    generated: compile(f, { inputs: n, at }),
    rowByRow: compile(f, { inputs: n, at }),
    scalarBuild: compileOnCore(scalarModule, f, n, at, true),
    scalarBuildRows: compileOnCore(scalarModule, f, n, at, true, false),
    simdBuild: compileOnCore(simdModule, f, n, at, true, false),
  };
  return (X: Float64Array, rows: number): void => {
    const reference = new Float64Array(rows * n);
    const out = new Float64Array(n);
    for (let r = 0; r < rows; r++) {
      expect(ways.rowByRow.gradient(X.subarray(r * n, (r + 1) * n), out)).toBe(out);
      reference.set(out, r * n);
    }
    const G = new Float64Array(rows * n).fill(12345);
    expect(ways.simd.gradientBatch(X, rows, G)).toBe(G);
    expectSameBits(G, reference, `simd kernel, ${rows} rows`);
    expectSameBits(ways.scalarKernel.gradientBatch(X, rows), reference, `scalar kernel, ${rows} rows`);
    expectSameBits(ways.generated.gradientBatch(X, rows), reference, `generated sweeps, ${rows} rows`);
    expectSameBits(ways.simdBuild.gradientBatch(X, rows), reference, `simd build (explicit), ${rows} rows`);
    expectSameBits(ways.scalarBuild.gradientBatch(X, rows), reference, `scalar build, ${rows} rows`);
    for (let r = 0; r < rows; r++) {
      expectSameBits(ways.scalarBuildRows.gradient(X.subarray(r * n, (r + 1) * n)), reference.subarray(r * n, (r + 1) * n), `scalar build, row ${r}`);
    }
    for (const way of Object.values(ways)) expect(way.rerecords).toBe(0);
  };
}

const batchArbitrary = (n: number) =>
  fc.integer({ min: 1, max: 11 }).chain((rows) => fc.tuple(fc.constant(rows), fc.array(anyInput, { minLength: rows * n, maxLength: rows * n })));

describe('the cores under test', () => {
  it('the default core is the SIMD build and uses the two-row kernel; the scalar build has none', () => {
    expect(simdAvailable()).toBe(true);
    const f = compile(piecewise, { inputs: 3, at: [1, 2, 3] });
    const engine = f.recorded!.tape.engine as WasmBackend;
    expect(engine.simd).toBe(true);
    expect(typeof engine.core.gradientBatchSimd).toBe('function');
    expect(compile(piecewise, { inputs: 3, at: [1, 2, 3], simd: false }).recorded!.tape.engine).toHaveProperty('simd', false);
    const scalar = compileOnCore(scalarModule, piecewise, 3, [1, 2, 3], true).recorded!.tape.engine as WasmBackend;
    expect(scalar.core.gradientBatchSimd).toBeUndefined();
  });

  it('a batch runs the SIMD kernel on an interpreted tape, and the generated sweeps where there are some', () => {
    const X = Float64Array.from({ length: 12 }, (_, k) => 0.5 + k / 7);
    for (const codegen of [false, true]) {
      const f = compile(piecewise, { inputs: 3, at: [1, 2, 3], codegen });
      const core = (f.recorded!.tape.engine as WasmBackend).core;
      const kernel = core.gradientBatchSimd!;
      let calls = 0;
      core.gradientBatchSimd = (...args) => {
        calls++;
        return kernel(...args);
      };
      f.gradientBatch(X, 4);
      expect(f.generatedSweeps).toBe(codegen ? 'active' : 'none');
      expect(calls).toBe(codegen ? 0 : 1);
    }
  });
});

describe('the SIMD kernel follows the section-4 rules of the scalar kernel', () => {
  // Pins a bug: commit 8c9da9e changed the scalar partials of div (NaN for 0/0, Inf/Inf, NaN/y)
  // and sqrt (0.5/|y|, so sqrt'(-0) = +Inf) in assembly/ops.ts, but assembly/simd.ts keeps its own
  // inline copies of the old rules (1/z and 0.5/y), so a pair of rows in the SIMD kernel gets
  // a finite or -Infinity gradient where row-by-row replay gets NaN or +Infinity.
  it('x / y with a NaN quotient gives NaN gradients, and sqrt at -0 gives +Infinity, in a batch too', () => {
    const quotient = (x: Var[]) => x[0]!.div(x[1]!);
    const root = (x: Var[]) => x[0]!.sqrt().add(x[1]!);
    const cases: [CompilableFunction, number[], number[]][] = [
      // [f, two rows, expected gradients]: the second row is ordinary, so the pair goes through
      // the SIMD kernel; the expected values are the policy's (NaN where 0/0 has no derivative,
      // +Infinity for sqrt'(0)) and what the scalar kernel gives.
      [quotient, [0, 0, 1, 2], [NaN, NaN, 0.5, -0.25]],
      [quotient, [Infinity, Infinity, 1, 2], [NaN, NaN, 0.5, -0.25]],
      [quotient, [NaN, 2, 1, 2], [NaN, NaN, 0.5, -0.25]],
      [root, [-0, 2, 1, 2], [Infinity, 1, 0.5, 1]],
    ];
    for (const [f, rows, expected] of cases) {
      const X = Float64Array.from(rows);
      expectSameBits(compile(f, { inputs: 2, at: [1, 2], simd: false }).gradientBatch(X, 2), expected, `scalar kernel at ${rows}`);
      expectSameBits(compile(f, { inputs: 2, at: [1, 2], simd: true, codegen: false }).gradientBatch(X, 2), expected, `SIMD kernel at ${rows}`);
    }
  });
});

describe('batched and SIMD replay equal row-by-row replay, bit for bit', () => {
  it('select, comparisons, min/max/abs/relu/floor/ceil and arithmetic, at any inputs', () => {
    const check = allWays(piecewise, 3, [0.5, -1.5, 2]);
    fc.assert(fc.property(batchArbitrary(3), ([rows, xs]) => check(Float64Array.from(xs), rows)), { numRuns: 300 });
  });

  it('transcendental ops (per-lane path), at any inputs', () => {
    const check = allWays(transcendental, 3, [0.5, 0.25, 2]);
    fc.assert(fc.property(batchArbitrary(3), ([rows, xs]) => check(Float64Array.from(xs), rows)), { numRuns: 300 });
  });

  it('random DAGs over every op', () => {
    fc.assert(
      fc.property(
        dagArbitrary({ maxNodes: 120, maxInputs: 6 }),
        fc.integer({ min: 1, max: 9 }),
        fc.array(anyInput, { minLength: 54, maxLength: 54 }),
        (dag, rows, xs) => {
          const n = dag.inputs.length;
          allWays(dagSum(dag), n, dag.inputs)(Float64Array.from(xs.slice(0, rows * n)), rows);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('rows where only one lane of a pair is special (NaN, Infinity, -0 next to ordinary values)', () => {
    const check = allWays(piecewise, 3, [0.5, -1.5, 2]);
    const checkT = allWays(transcendental, 3, [0.5, 0.25, 2]);
    const specials = [NaN, Infinity, -Infinity, -0, 0];
    for (const s of specials) {
      for (let slot = 0; slot < 6; slot++) {
        const X = Float64Array.from([0.75, 1.25, -0.5, 0.3, -2, 1.5]);
        X[slot] = s;
        check(X, 2);
        checkT(X, 2);
      }
    }
  });

  it('0, 1, 2, 3 and many rows; odd chunk boundaries inside one call', () => {
    const check = allWays(transcendental, 3, [0.5, 0.25, 2]);
    const checkP = allWays(piecewise, 3, [0.5, -1.5, 2]);
    // 3 inputs: the backend splits a batch into chunks of 2^20 / 48 = 21845 rows, an odd number,
    // so the second chunk's pairs start at an odd row of the caller's array.
    const rows = 50_001;
    const X = Float64Array.from({ length: rows * 3 }, (_, k) => Math.sin(k * 0.37) * 3 + (k % 7 === 0 ? -0 : 0));
    for (const r of [0, 1, 2, 3, 7]) {
      check(X, r);
      checkP(X, r);
    }
    check(X, rows);
    checkP(X, rows);
  });

  it('a batch after hvp (tangent regions allocated, scratch moved) still matches', () => {
    const check = allWays(transcendental, 3, [0.5, 0.25, 2]);
    const f = compile(transcendental, { inputs: 3, at: [0.5, 0.25, 2] });
    const X = Float64Array.from([0.5, 0.25, 2, 0.1, 0.2, 0.3, -1, 2, 3]);
    const before = f.gradientBatch(X, 3);
    f.hvp([0.5, 0.25, 2], [1, 0, 0]);
    expectSameBits(f.gradientBatch(X, 3), before, 'after hvp');
    check(X, 3);
  });
});
