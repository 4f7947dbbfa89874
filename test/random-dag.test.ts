// Random graphs (test/dag-arbitrary.ts): wasm and JS agree, both match central differences, and
// the reverse sweep is deterministic and linear in its seed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTape, finiteDifferenceGradient, normwiseError, type Tape } from '../src/index.ts';
import { dagArbitrary, dagValue, recordDag, type Dag, type RecordedDag } from './dag-arbitrary.ts';
import { BACKENDS } from './support.ts';

// One tape per backend, reset before every graph: also exercises reuse across graph shapes.
const tapes = { wasm: await createTape(), js: await createTape({ backend: 'js' }) } as const;
const differencing = await createTape({ backend: 'js' });

function gradientOn(tape: Tape, dag: Dag, seed = 1): { value: number; gradient: Float64Array } {
  tape.reset();
  const { inputs, output } = recordDag(tape, dag);
  return { value: output.value, gradient: tape.gradient(output, inputs, seed) };
}

/** Every node's adjoint (inputs first), as raw bits, so -0 and NaN payloads count too. */
function adjointBits(recorded: RecordedDag): BigUint64Array {
  const all = [...recorded.inputs, ...recorded.nodes];
  return new BigUint64Array(Float64Array.from(all, (v) => v.grad).buffer);
}

describe('random DAGs', () => {
  it('stay in [-1, 1] at every node (what makes the difference checks below meaningful)', () => {
    fc.assert(
      fc.property(dagArbitrary(), (dag) => {
        tapes.js.reset();
        for (const v of recordDag(tapes.js, dag).nodes) expect(Math.abs(v.value)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 100 },
    );
  });

  it('wasm and js gradients agree to 1e-12 and both match 6-point central differences to 1e-7', () => {
    fc.assert(
      fc.property(dagArbitrary(), (dag) => {
        const wasm = gradientOn(tapes.wasm, dag);
        const js = gradientOn(tapes.js, dag);
        expect(Math.abs(wasm.value - js.value)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(js.value)));
        expect(normwiseError(wasm.gradient, js.gradient).error).toBeLessThanOrEqual(1e-12);
        const numeric = finiteDifferenceGradient((p) => dagValue(differencing, dag, p), dag.inputs);
        expect(normwiseError(wasm.gradient, numeric).error).toBeLessThan(1e-7);
        expect(normwiseError(js.gradient, numeric).error).toBeLessThan(1e-7);
      }),
      { numRuns: 200 },
    );
  });

  it.each(BACKENDS)('backward twice gives bit-identical adjoints at every node, also after a sweep from elsewhere (%s)', (backend) => {
    const tape = tapes[backend];
    fc.assert(
      fc.property(dagArbitrary(), fc.nat(), (dag, pick) => {
        tape.reset();
        const recorded = recordDag(tape, dag);
        tape.backward(recorded.output);
        const first = adjointBits(recorded);
        tape.backward(recorded.output);
        expect(adjointBits(recorded)).toEqual(first);
        // A sweep from another node leaves adjoints behind that the next sweep must clear.
        tape.backward(recorded.nodes[pick % recorded.nodes.length]!, 3);
        tape.backward(recorded.output);
        expect(adjointBits(recorded)).toEqual(first);
      }),
      { numRuns: 100 },
    );
  });

  it.each(BACKENDS)('seed 2^k scales the gradient by exactly 2^k (%s)', (backend) => {
    const tape = tapes[backend];
    fc.assert(
      fc.property(dagArbitrary(), fc.integer({ min: -64, max: 64 }), (dag, k) => {
        const s = 2 ** k;
        const unit = gradientOn(tape, dag).gradient;
        const scaled = gradientOn(tape, dag, s).gradient;
        // Scaling by 2^k commutes with every product and sum of the sweep while nothing leaves
        // the normal range. A contribution that underflows in one sweep (even to 0: inputs can be
        // as small as 5e-324) is ~2^-1000 in the other and vanishes below the last bit of its
        // component, unless the component is itself that small in either sweep: skip those.
        const tiny = (g: Float64Array, scale: number) => g.some((v) => v !== 0 && Math.abs(v) < scale * 2 ** -900);
        fc.pre(!tiny(unit, 1) && !tiny(scaled, s));
        expect(scaled).toEqual(unit.map((g) => g * s));
      }),
      { numRuns: 100 },
    );
  });
});
