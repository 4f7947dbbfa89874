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

