// A browser probe: a worker handed a scalar core by init({ module }), in a runtime that would pick
// the SIMD one, downloaded and compiled the SIMD core too at its next init() or createTape, which
// its tapes never used. The variant adopted stays the process's. (A file of its own: the loader's
// state is per module instance, and any earlier init() here would have chosen first.)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { createTape, init } from '../src/index.ts';
import { coreModuleIfLoaded, simdAvailable } from '../src/wasm/loader.ts';

it('a core adopted by init({ module }) is the one every later init() and createTape use', async () => {
  const scalar = await WebAssembly.compile(readFileSync(fileURLToPath(new URL('../build/tapegrad.wasm', import.meta.url))));
  await init({ module: scalar, codegen: false });
  await init({ codegen: false });
  const tape = await createTape();
  expect(tape.variable(2).mul(3).value).toBe(6);
  expect(coreModuleIfLoaded()).toBe(scalar);
  // This runtime would have picked SIMD (so the test would catch the second load).
  expect(simdAvailable()).toBe(true);
  expect(coreModuleIfLoaded('simd')).toBeNull();
});
