// The warm-up that has V8 optimise the core's forward and reverse sweeps when a tape first grows
// large (src/wasm/warm.ts): on each build of the core it computes what the JS engine computes on
// its tape, so a warm-up that ran the wrong tape, or stopped early, shows here rather than as a
// slower first gradient; and a tape that triggers it records and differentiates as any other.
import { describe, expect, it } from 'vitest';
import { createTape } from '../src/index.ts';
import { instantiateCore, loadCoreModule } from '../src/wasm/loader.ts';
import { WARM_AT, isWarmed, warmCore, warmTape } from '../src/wasm/warm.ts';

describe('core warm-up', () => {
  it('computes, on every build of the core, the gradient the JS engine computes on its tape', async () => {
    const tape = await createTape({ backend: 'js' });
    const { op, a, b, leafValues } = warmTape();
    tape.load(op, a, b, leafValues);
    const h = tape.handles, first = tape.base;
    h.backward(first + tape.size - 1);
    const expected = h.grad(first) + h.grad(first + 1);
    expect(Number.isFinite(expected) && expected !== 0).toBe(true);
    for (const variant of ['simd', 'scalar'] as const) {
      // Transcendental ops differ in the last bits between the engines (numerics policy).
      expect(warmCore(instantiateCore(await loadCoreModule(variant)))).toBeCloseTo(expected, 12);
    }
  });

  it('runs when a tape first grows past WARM_AT nodes, and leaves that tape as any other: values and gradients equal the JS engine', async () => {
    const run = async (backend: 'wasm' | 'js'): Promise<number[]> => {
      const tape = await createTape({ backend });
      const x = tape.variables(Array.from({ length: WARM_AT }, (_, i) => 1 + i / WARM_AT));
      let s = tape.constant(0);
      for (let i = 0; i + 1 < x.length; i++) s = s.add(x[i + 1]!.sub(x[i]!.square()).square());
      tape.backward(s);
      return [s.value, x[0]!.grad, x[WARM_AT >> 1]!.grad, x[WARM_AT - 1]!.grad];
    };
    const module = await loadCoreModule();
    const wasm = await run('wasm');
    expect(isWarmed(module)).toBe(true);
    expect(wasm).toEqual(await run('js'));
  });
});
