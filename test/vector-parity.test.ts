// The wasm core (both builds: scalar and SIMD) and the JS engine run the vector rules loop for
// loop in the same order, so they agree bit for bit on every op that calls no transcendental
// (+ − × ÷ sqrt, sum, dot, matvec, matmul, the permutations…), in values, gradients, tangents and
// Hessian-vector products; and within 1e-12 relative where the op calls musl (wasm) or V8 (JS).
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape, compile, type Var, type Vec } from '../src/index.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';
import { allCases, bits, recordVector, relativeError, type VectorCase } from './vector-cases.ts';
import { tapeOn } from './support.ts';

const VARIANTS = simdAvailable() ? (['scalar', 'simd'] as const) : (['scalar'] as const);
const cases = allCases();

/** Value, gradient, a tangent and a Hessian-vector product of a case, in one array. */
function results(tape: Tape, c: VectorCase): number[] {
  const { input, output } = recordVector(tape, c);
  const direction = c.x.map((_, k) => 1 - 0.375 * (k % 3));
  return [
    output.value,
    ...tape.gradient(output, [input]),
    ...tape.jvp([input], direction, [output]),
    ...tape.hvp(output, [input], direction),
  ];
}

describe.each(VARIANTS)('wasm (%s core) and js agree on every vector op', (variant) => {
  let wasm: Tape, js: Tape;
  beforeAll(async () => {
    wasm = new Tape(new WasmBackend(await loadCoreModule(variant)));
    js = await tapeOn('js');
  });

  it.each(cases.map((c): [string, VectorCase] => [c.name, c]))('%s', (_, c) => {
    const w = results(wasm, c), j = results(js, c);
    if (c.transcendental) expect(relativeError(w, j), `${c.name}: wasm [${w}] js [${j}]`).toBeLessThanOrEqual(1e-12);
    else expect(bits(w), `${c.name}: wasm [${w}] js [${j}]`).toEqual(bits(j));
  });

  it('the bit-identical cases cover + − × ÷ sqrt, sum, dot, matvec, matmul', () => {
    const exact = cases.filter((c) => !c.transcendental).map((c) => c.name);
    for (const name of ['add: vector ⊕ vector', 'sub: matrix [2, 3] ⊕ vector [3]', 'mul: vector ⊕ scalar Var', 'div: number ⊕ vector', 'sqrt elementwise', 'sum', 'dot', 'matvec [2, 3] · [3]', 'matmul [2,3] · [3,4]', 'matmul [3,6] · [6,2]']) {
      expect(exact, name).toContain(name);
    }
  });

  it('long vectors: sums, dots and products of 1000 elements, bit for bit', () => {
    // Long enough for every lane and tail of the 4-way sums and the SIMD loops; values of mixed
    // sign and magnitude, so a change of summation order would show in the last bits.
    const n = 1001;
    const x = Array.from({ length: n }, (_, k) => Math.sin(k * 12.9898) * 10 ** ((k % 7) - 3));
    const run = (tape: Tape): number[] => {
      tape.reset();
      const v = tape.vector(x);
      const A = v.slice(0, 1000).reshape([25, 40]);
      const y = v.sum()
        .add(v.dot(v.slice(0, n).abs().sqrt()))
        .add(A.matvec(v.slice(1, 41)).sum())
        .add(A.T.matmul(A).sum().mul(1e-3))
        .add(v.mul(v.get(3)).div(v.get(5).square().add(2)).sub(v).mean());
      return [y.value, ...tape.gradient(y, [v])];
    };
    const w = run(wasm), j = run(js);
    expect(Number.isFinite(w[0]!)).toBe(true);
    expect(bits(w)).toEqual(bits(j));
  });

  // A contraction's rows take their terms one l at a time, ascending, four at a pass (axpy4 in
  // assembly/vector.ts and src/js/vector.ts): the same bits as a plain loop adding one term after
  // another, which this test writes out for matmul's value C = A·B and dB = Aᵀ·gC, and matvec's
  // dx = Aᵀ·g, with inner sizes that leave 0 to 3 terms after the passes of four.
  it.each([[9, 7, 3], [10, 8, 5], [7, 11, 2], [6, 4, 6]])('contractions in ascending order, four terms a pass (%i × %i · %i)', (m, k, p) => {
    const value = (i: number): number => Math.sin(i * 3.7 + 0.3) * 10 ** ((i % 5) - 2);
    const A0 = Array.from({ length: m * k }, (_, i) => value(i)), B0 = Array.from({ length: k * p }, (_, i) => value(i + 101));
    const seed = Array.from({ length: m * p }, (_, i) => value(i + 307)), g = Array.from({ length: m }, (_, i) => value(i + 503));
    // Each sum from its first term, in ascending order of the summed index.
    const C = Array.from({ length: m * p }, (_, q) => { const i = Math.floor(q / p), j = q % p; let s = A0[i * k]! * B0[j]!; for (let l = 1; l < k; l++) s += A0[i * k + l]! * B0[l * p + j]!; return s; });
    const dB = Array.from({ length: k * p }, (_, q) => { const l = Math.floor(q / p), j = q % p; let s = A0[l]! * seed[j]!; for (let i = 1; i < m; i++) s += A0[i * k + l]! * seed[i * p + j]!; return s; });
    const dx = Array.from({ length: k }, (_, l) => { let s = A0[l]! * g[0]!; for (let i = 1; i < m; i++) s += A0[i * k + l]! * g[i]!; return s; });
    for (const tape of [wasm, js]) {
      tape.reset();
      const A = tape.constantVector(A0).reshape([m, k]), B = tape.vector(B0).reshape([k, p]), x = tape.vector(B0.slice(0, k));
      const product = A.matmul(B), y = A.matvec(x);
      expect(bits(product.value)).toEqual(bits(C));
      expect(bits(tape.vjp([product], seed, [B]))).toEqual(bits(dB));
      expect(bits(tape.vjp([y], g, [x]))).toEqual(bits(dx));
    }
  });

  // The core's tangent sweeps take add, sub, mul, neg and square in loops of their own per op,
  // their zero tests as masks (bench/vector-costs.ts): the same sums and skips as the rule, so a
  // zero, infinite or NaN tangent, a zero or infinite value and a broadcast scalar (whose terms
  // sum across elements) give the JS engine's bits in jvp and hvp, recorded and compiled.
  it('tangents of the cheap ops with zero, infinite and NaN tangents and values, bit for bit', () => {
    const n = 37;
    const x = Array.from({ length: n }, (_, k) => (k % 11 === 3 ? 0 : k % 13 === 5 ? -0 : k === 17 ? Infinity : Math.sin(k * 7.1) * 2 ** ((k % 5) - 2)));
    const bodies = [
      (v: Vec, s: Var): Var => {
        const p = v.square().sub(v.mul(s)), q = v.neg().add(s).square();
        return p.mul(q.add(1)).sub(q.mul(3)).add(v.mul(v)).sum().add(s.square());
      },
      // Zero adjoints (sign(v)² is 0 where v is ±0) under infinite and NaN tangents: the rule
      // skips those terms, where 0·∞ would be NaN.
      (v: Vec, s: Var): Var => v.square().mul(v.sign().square()).add(v.mul(s).mul(v.sign().square())).sum(),
    ];
    const directions = [
      Array.from({ length: n + 1 }, (_, k) => (k % 3 === 0 ? 0 : k % 3 === 1 ? -1.5 : 0.25)),
      Array.from({ length: n + 1 }, (_, k) => (k === 3 || k === 4 ? Infinity : k === 5 || k === 9 ? NaN : k === 14 ? -Infinity : k % 4 === 0 ? 0 : 1)),
      Array.from({ length: n + 1 }, () => 0),
    ];
    const run = (tape: Tape): number[] => bodies.flatMap((body) => directions.flatMap((dir) => {
      tape.reset();
      const v = tape.vector(x), s = tape.variable(0.75);
      const y = body(v, s);
      return [...tape.jvp([v, s], dir, [y]), ...tape.hvp(y, [v, s], dir)];
    }));
    const compiled = (backend: 'wasm' | 'js'): number[] => bodies.flatMap((body) => {
      const f = compile((v: Vec) => body(v.slice(0, n), v.get(n)), { inputs: n + 1, vector: true, backend });
      return directions.flatMap((dir) => [...f.jvp([...x, 0.75], dir), ...f.hvp([...x, 0.75], dir)]);
    });
    const w = run(wasm), j = run(js);
    expect(w.some((e) => Number.isNaN(e)) && w.some((e) => Number.isFinite(e) && e !== 0)).toBe(true);
    expect(w.map(shown)).toEqual(j.map(shown));
    if (variant === 'simd') expect(compiled('wasm').map(shown)).toEqual(compiled('js').map(shown));
  });
});

// A result as the test compares it: NaN as one value (its sign and payload are the hardware's), -0
// apart from +0.
function shown(v: number): number | string {
  return Number.isNaN(v) ? 'NaN' : Object.is(v, -0) ? '-0' : v;
}

