// Each vector op against the same computation written with scalar Var ops on a separate tape
// (vector-cases.ts writes both): values and gradients bit for bit where the twin takes the same
// terms in the same order (elementwise ops, dot and sum in the 4-way order, permutations, one-term
// sums), else within 1e-13 relative. Both engines.
import { describe, expect, it } from 'vitest';
import { allCases, bits, recordScalar, recordVector, relativeError, type VectorCase } from './vector-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

const cases = allCases();

describe.each(BACKENDS)('vector ops equal their scalar-op twins (%s)', (backend) => {
  const tapes = Promise.all([tapeOn(backend), tapeOn(backend)]);

  it.each(cases.map((c): [string, VectorCase] => [c.name, c]))('%s', async (_, c) => {
    const [vt, st] = await tapes;
    const v = recordVector(vt, c);
    const s = recordScalar(st, c);
    const vg = vt.gradient(v.output, [v.input]);
    const sg = st.gradient(s.output, s.inputs);
    if (c.exact) {
      expect(bits([v.output.value]), `${c.name}: value ${v.output.value} vs ${s.output.value}`).toEqual(bits([s.output.value]));
      expect(bits(vg), `${c.name}: gradient [${vg}] vs [${sg}]`).toEqual(bits(sg));
    } else {
      expect(relativeError([v.output.value], [s.output.value]), `${c.name}: value`).toBeLessThanOrEqual(1e-13);
      expect(relativeError(vg, sg), `${c.name}: gradient [${vg}] vs [${sg}]`).toBeLessThanOrEqual(1e-13);
    }
  });

  it('the exact cases include every elementwise + − × ÷ form and the one-element reductions', () => {
    const exact = new Set(cases.filter((c) => c.exact).map((c) => c.name));
    for (const op of ['add', 'sub', 'mul', 'div']) {
      for (const form of ['vector ⊕ vector', 'vector ⊕ scalar Var', 'vector ⊕ number', 'number ⊕ vector', 'scalar Var ⊕ vector', 'matrix [2, 3] ⊕ vector [3]', 'vector ⊕ constant array']) {
        expect(exact.has(`${op}: ${form}`), `${op}: ${form}`).toBe(true);
      }
    }
    for (const name of ['sum of one element', 'dot of one element', 'logSumExp of one element', 'matmul [1,1] · [1,1]']) expect(exact.has(name), name).toBe(true);
  });
});
