// How the core grows a tape's node regions (assembly/layout.ts, reserve): by doubling, except
// that the first growth past the pages memory already has takes what they hold (a grow detaches
// the views' buffer, see test/array-buffer-detach.test.ts), after which the doubling goes on from
// the power of two below, never in small steps (each growth moves the whole tape).
import { describe, expect, it } from 'vitest';
import { instantiateCore, loadCoreModule } from '../src/wasm/loader.ts';

describe('tape growth', () => {
  it('doubles, fills the initial pages once, then doubles from 2^20 on, on every build of the core', async () => {
    for (const variant of ['simd', 'scalar'] as const) {
      const core = instantiateCore(await loadCoreModule(variant));
      const initialBytes = core.memory.buffer.byteLength;
      const capacities: number[] = [];
      let capacity = core.reserve(1, 0, 2 ** 28);
      capacities.push(capacity);
      while (capacity < 4_000_000) {
        capacity = core.reserve(capacity + 1, 0, 2 ** 28);
        capacities.push(capacity);
      }
      const filled = capacities[capacities.indexOf(2 ** 20) + 1]!;
      // What the initial pages hold beside the static data: 25 bytes a node.
      expect(filled).toBeGreaterThan(2 ** 20);
      expect(filled).toBeLessThanOrEqual(initialBytes / 25);
      expect(filled).toBeGreaterThan(initialBytes / 25 - 70_000);
      expect(filled % 8).toBe(0);
      const powers = capacities.filter((c) => c !== filled);
      expect(powers).toEqual(powers.map((_, k) => 1024 * 2 ** k));
      expect(capacities.slice(-3)).toEqual([filled, 2 ** 21, 2 ** 22]);
    }
  });

  it('keeps to the tape\'s limit: a limit below what the pages hold is the capacity', async () => {
    const core = instantiateCore(await loadCoreModule('scalar'));
    expect(core.reserve(1_100_000, 0, 1_200_000)).toBe(1_200_000);
    expect(core.reserve(1_300_000, 0, 1_200_000)).toBe(0);
  });
});
