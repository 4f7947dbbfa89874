// The wasm core (both builds: scalar and SIMD) and the JS engine run the vector rules loop for
// loop in the same order, so they agree bit for bit on every op that calls no transcendental
// (+ − × ÷ sqrt, sum, dot, matvec, matmul, the permutations…), in values, gradients, tangents and
// Hessian-vector products; and within 1e-12 relative where the op calls musl (wasm) or V8 (JS).
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape } from '../src/index.ts';
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
});
