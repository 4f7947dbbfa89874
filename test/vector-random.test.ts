// Random vector programs (fast-check, fixed seed, in the test names): one or two input vectors of
// length n, a sequence of vector ops over earlier results (elementwise unary and binary ops with
// every broadcasting form, reductions, matvec / vecmat / matmul, slice + concat, gather, select,
// stack of scalars, matrix ⊕ row), ending in a scalar. The wasm and JS engines agree to 1e-12 and
// both match central differences (1e-7 normwise) wherever no kink is within reach of the stencil.
//
// The elementwise steps reuse the bounded recipes of dag-arbitrary.ts (each keeps [-1, 1] in
// [-1, 1] with partials summing to at most 1), applied to Vecs; the other steps are scaled the
// same way, so values stay in range however long the program and the differences stay meaningful.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTape, div, finiteDifferenceGradient, mul, normwiseError, sub, type Tape, type Var, type Vec } from '../src/index.ts';
import { DAG_OPS, type DagOpName } from './dag-arbitrary.ts';

const SEED = 20_261_130;

type Recipe = (x: Vec, z: Vec | Var) => Vec;
const RECIPES = DAG_OPS as unknown as Record<DagOpName, Recipe>;
const UNARY: DagOpName[] = ['neg', 'recip', 'square', 'sqrt', 'cbrt', 'powConst', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'acosh', 'atanh', 'sigmoid', 'softplus', 'erf', 'erfc', 'normCdf', 'normLogCdf', 'ndtri', 'lgamma', 'digamma'];
const BINARY: DagOpName[] = ['add', 'sub', 'mul', 'div', 'pow', 'atan2', 'hypot'];

interface Step {
  kind: number;
  /** Operand picks (taken modulo the pool sizes, counting back from the newest). */
  a: number;
  b: number;
  /** Picks the recipe, the constants, the slice point, the indices. */
  k: number;
}

interface Program {
  n: number;
  x1: number[];
  x2: number[] | null;
  steps: Step[];
}

const KINDS = 14;
// Inputs in [-1, 1]: mostly generic values (a hash of an integer: fast-check's doubles favour 0,
// ±1 and the extremes, where ties and the norm's singularity would leave little to difference),
// sometimes exactly those edge values.
const unit = fc.oneof(
  { weight: 5, arbitrary: fc.integer().map((i) => Math.sin(i * 12.9898 + 0.5)) },
  { weight: 1, arbitrary: fc.constantFrom(0, -0, 1, -1, 0.5, 5e-324, -1e-300) },
);

const programArbitrary: fc.Arbitrary<Program> = fc.integer({ min: 1, max: 9 }).chain((n) =>
  fc.record({
    n: fc.constant(n),
    x1: fc.array(unit, { minLength: n, maxLength: n }),
    x2: fc.option(fc.array(unit, { minLength: n, maxLength: n }), { nil: null }),
    steps: fc.array(fc.record({ kind: fc.integer({ min: 0, max: KINDS - 1 }), a: fc.nat(), b: fc.nat(), k: fc.nat() }), { minLength: 1, maxLength: 24 }),
  }));

/** A deterministic constant in [-1, 1] from integers (the program's own data, not randomness). */
const constant = (...ks: number[]): number => Math.sin(ks.reduce((s, k, i) => s + k * (1.37 + i), 0.5));

interface Recorded {
  inputs: Vec[];
  output: Var;
  /** Smallest distance to a kink met (a select's two sides, a max's top two, a norm's 0). */
  margin: number;
}

/** Records the program at x1 (and x2) on `tape`, reset first. */
function record(tape: Tape, p: Program, x1: ArrayLike<number> = p.x1, x2: ArrayLike<number> | null = p.x2): Recorded {
  tape.reset();
  const n = p.n;
  const inputs = [tape.vector(x1), ...(x2 ? [tape.vector(x2)] : [])];
  const vecs: Vec[] = [...inputs];
  const scalars: Var[] = [inputs[0]!.get(n - 1)];
  let margin = Infinity;
  const pick = <T>(pool: T[], i: number): T => pool[pool.length - 1 - (i % pool.length)]!;
  const near = (xs: Float64Array, ys: Float64Array | number): void => {
    for (let j = 0; j < xs.length; j++) margin = Math.min(margin, Math.abs(xs[j]! - (typeof ys === 'number' ? ys : ys[j]!)));
  };
  // How far the extreme is from the runner-up (0 at a tie, even between copies of one element,
  // which would be no kink: the check is cautious).
  const gap = (xs: Float64Array): number => {
    const sorted = Array.from(xs).sort((u, v) => v - u);
    return sorted.length > 1 ? Math.min(sorted[0]! - sorted[1]!, sorted[sorted.length - 2]! - sorted[sorted.length - 1]!) : Infinity;
  };
  const constants = (k: number, len: number, scale = 1): number[] => Array.from({ length: len }, (_, j) => constant(k, j) * scale);
  for (const { kind, a, b, k } of p.steps) {
    const x = pick(vecs, a), z = pick(vecs, b), s = pick(scalars, b);
    let v: Vec | null = null, r: Var | null = null;
    switch (kind) {
      case 0: v = RECIPES[UNARY[k % UNARY.length]!](x, x); break;
      case 1: v = RECIPES[BINARY[k % BINARY.length]!](x, z); break;
      case 2: v = RECIPES[BINARY[k % BINARY.length]!](x, s); break; // vector ⊕ scalar Var
      case 3: v = RECIPES[BINARY[k % BINARY.length]!](x, tape.constantVector(constants(k, n))); break;
      case 4: {
        const w = constants(k, n);
        switch (k % 8) {
          case 0: r = x.mean(); break;
          case 1: r = x.dot(z).div(n); break;
          case 2: r = x.logSumExp().sub(Math.log(n)).add(1).mul(0.5); break;
          case 3: r = x.max(); margin = Math.min(margin, gap(x.value)); break;
          case 4: r = x.min(); margin = Math.min(margin, gap(x.value)); break;
          case 5: r = x.get(k % n); break;
          case 6: r = x.softmax().dot(z); break;
          default: r = x.norm().div(Math.sqrt(n)).sub(x.dot(w).div(n)); margin = Math.min(margin, Math.sqrt(x.sumSquares().value)); break;
        }
        break;
      }
      case 5: v = tape.constantVector(constants(k, n * n, 1 / n), [n, n]).matvec(x); break;
      case 6: v = x.vecmat(tape.constantVector(constants(k, n * n, 1 / n), [n, n])); break;
      case 7: {
        // Variable matrices on both sides: the outer product as a [n, 1] · [1, n] matmul, its
        // transpose, then a product with a constant [n, 1] matrix.
        const outer = x.reshape([n, 1]).matmul(z.reshape([1, n]));
        v = (k % 2 ? outer.T : outer).matmul(tape.constantVector(constants(k, n, 1 / n), [n, 1])).reshape([n]);
        break;
      }
      case 8: { const c = k % n; v = tape.concat([x.slice(c), z.slice(0, c)]); break; }
      case 9: v = x.gather(Array.from({ length: n }, (_, j) => (k * (j + 1) * 7 + j) % n)); break;
      // max(x, z) by select: continuous, with a kink where x = z (none when z is x itself).
      case 10: v = tape.select(x.gt(z), x, z); if (x !== z) near(x.value, z.value); break;
      case 11: v = tape.stack(Array.from({ length: n }, (_, j) => (j % 3 === 2 ? constant(k, j) : pick(scalars, a + j)))); break;
      case 13: {
        // A scalar first (free functions): a Var or a number ⊕ the vector.
        switch (k % 4) {
          case 0: v = mul(sub(s, x), 0.5); break;
          case 1: v = mul(s, x); break;
          case 2: v = div(s, x.add(3)); break;
          default: v = mul(sub(constant(k), x), 0.5);
        }
        break;
      }
      default: {
        // matrix [n / c, c] ⊕ row [c], when n has such a factor; else vector ⊕ a constant vector.
        const c = [3, 2].find((f) => n % f === 0 && n > f);
        if (c === undefined) { v = RECIPES[BINARY[k % BINARY.length]!](x, tape.constantVector(constants(k, n))); break; }
        v = RECIPES[BINARY[k % BINARY.length]!](x.reshape([n / c, c]), z.slice(0, c).reshape([c]) as Vec).reshape([n]);
      }
    }
    if (v) {
      expect(v.shape).toEqual([n]);
      vecs.push(v);
    } else scalars.push(r!);
  }
  // Every result reaches the output: the vectors through weighted means, the scalars as they are.
  let output = scalars[0]!;
  for (let j = 1; j < scalars.length; j++) output = output.add(scalars[j]!);
  vecs.slice(inputs.length).forEach((v, j) => { output = output.add(v.dot(constants(j, n, 1 / n))); });
  return { inputs, output, margin };
}

/** Equal to 1e-12 relative (absolute below 1), or the same non-finite value. */
const close = (a: number, b: number): boolean =>
  Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b));

const tapes = { wasm: await createTape(), js: await createTape({ backend: 'js' }) } as const;
const differencing = await createTape({ backend: 'js' });

function run(tape: Tape, p: Program): { value: number; gradient: Float64Array; tangent: number; margin: number } {
  const { inputs, output, margin } = record(tape, p);
  const gradient = tape.gradient(output, inputs);
  const direction = Array.from(gradient, (_, k) => 1 - 0.3 * (k % 5));
  return { value: output.value, gradient, tangent: tape.jvp(inputs, direction, [output])[0]!, margin };
}

describe(`random vector programs (fast-check seed ${SEED})`, () => {
  it(`wasm and js agree to 1e-12, and both match central differences to 1e-7 (seed ${SEED})`, () => {
    let checked = 0, nearKinks = 0;
    fc.assert(
      fc.property(programArbitrary, (p) => {
        const w = run(tapes.wasm, p), j = run(tapes.js, p);
        expect(Number.isFinite(j.value), 'the program stays finite').toBe(true);
        expect(close(w.value, j.value), `value ${w.value} vs ${j.value}`).toBe(true);
        expect(normwiseError(w.gradient, j.gradient).error).toBeLessThanOrEqual(1e-12);
        expect(close(w.tangent, j.tangent), `tangent ${w.tangent} vs ${j.tangent}`).toBe(true);
        // The stencil moves each input by up to 3h ≈ 2e-5; a kink that close would be crossed.
        // (So would the norm's singularity at 0, where gradients may be infinite.)
        if (j.margin < 1e-3) { nearKinks++; return; }
        // The tangent sweep is the reverse sweep's dual: <J t, 1> = <t, Jᵀ 1>.
        const dual = Array.from(j.gradient).reduce((s, g, k) => s + g * (1 - 0.3 * (k % 5)), 0);
        expect(close(j.tangent, dual), `tangent ${j.tangent} vs <t, gradient> ${dual}`).toBe(true);
        checked++;
        const x = [...p.x1, ...(p.x2 ?? [])];
        const numeric = finiteDifferenceGradient((q) => {
          const r = record(differencing, p, q.subarray(0, p.n), p.x2 ? q.subarray(p.n) : null);
          return r.output.value;
        }, x);
        const { error, worst } = normwiseError(j.gradient, numeric);
        expect(error, `component ${worst}: ${j.gradient[worst]} vs ${numeric[worst]}`).toBeLessThan(1e-7);
        expect(normwiseError(w.gradient, numeric).error).toBeLessThan(1e-7);
      }),
      { numRuns: 200, seed: SEED },
    );
    // The finite-difference check ran on most programs, not only the kink-free few.
    expect(checked).toBeGreaterThan(4 * nearKinks);
  });

  it(`the programs use every kind of step (seed ${SEED})`, () => {
    const kinds = new Set<number>();
    const sizes = new Set<number>();
    for (const p of fc.sample(programArbitrary, { numRuns: 200, seed: SEED })) {
      p.steps.forEach((s) => kinds.add(s.kind));
      sizes.add(p.n);
    }
    expect(kinds.size).toBe(KINDS);
    expect(sizes.size).toBe(9);
  });
});
