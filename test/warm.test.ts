// The warm-up that has V8 optimise the core's forward and reverse sweeps when a tape first grows
// large (src/wasm/warm.ts): on each build of the core it computes what the JS engine computes on
// its tape, so a warm-up that ran the wrong tape, or stopped early, shows here rather than as a
// slower first gradient; and a tape that triggers it records and differentiates as any other.
import { describe, expect, it } from 'vitest';
import { compile, createTape, type Var } from '../src/index.ts';
import { Op } from '../src/ops.ts';
import { jsPasses, planSearch } from '../src/wasm/codegen/plan.ts';
import { instantiateCore, loadCoreModule } from '../src/wasm/loader.ts';
import { WARM_AT, isWarmed, plannerWarmTape, warmCore, warmPlanner, warmTape } from '../src/wasm/warm.ts';
import { knownBodyCuts } from './support.ts';

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
  // The code generator's passes, warmed when a compiled function's recording first grows past
  // WARM_AT: on every build they find on their tape the segments and repeats the planner's JS
  // finds (at the warm-up's search sizes), so a warm-up that ran the wrong tape or stopped
  // early shows here.
  it("runs the code generator's passes, on every build of the core, finding what the planner's JS finds on their tape", async () => {
    const { op, a, b, inputs } = plannerWarmTape();
    const count = op.length;
    const tape = await createTape({ backend: 'js' });
    tape.load(op, a, b, new Float64Array(op.filter((code) => code <= Op.input).length).fill(0.5));
    const sizes = { ...planSearch };
    Object.assign(planSearch, { maxPeriod: 256, chunk: 4096 });
    try {
      const js = jsPasses(tape.engine.views, inputs, count);
      const segments = js.segmentsOf(inputs, count, Infinity)!;
      const repeats = Array.from(js.repeatsOf(segments, inputs, new Uint8Array(count))).filter((r) => r >= 0).length;
      // Loops, short runs between them and samples cut at known bodies, most of them repeats:
      // every pass has work to do.
      expect(segments.length).toBeGreaterThan(150);
      expect(knownBodyCuts(segments).length).toBeGreaterThan(20);
      expect(repeats).toBeGreaterThan(segments.length / 2);
      for (const variant of ['simd', 'scalar'] as const) {
        expect(warmPlanner(instantiateCore(await loadCoreModule(variant)))).toEqual({ segments: segments.length, repeats });
      }
    } finally {
      Object.assign(planSearch, sizes);
    }
  });

  it("warms the code generator's passes for a compiled function's recording past WARM_AT, not for a tape's, and the function computes what the interpreter does", async () => {
    const module = await loadCoreModule();
    // A tape past WARM_AT (a test above) warmed the sweeps only.
    expect(isWarmed(module)).toBe(true);
    expect(isWarmed(module, true)).toBe(false);
    const n = WARM_AT;
    const fn = (x: Var[]): Var => {
      let s = x[0]!.mul(0);
      for (let i = 0; i < n; i++) s = s.add(x[i % 4]!.mul(1 + i / n).sin());
      return s;
    };
    const at = [0.1, 0.2, 0.3, 0.4];
    const generated = compile(fn, { inputs: 4, codegen: true });
    const gradient = generated.gradient(at);
    expect(isWarmed(module, true)).toBe(true);
    expect(Array.from(gradient)).toEqual(Array.from(compile(fn, { inputs: 4, codegen: false }).gradient(at)));
  });
});
