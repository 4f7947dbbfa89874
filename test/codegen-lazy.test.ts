// The code generator is a chunk of its own that init() loads. With `init({ codegen: false })` (or
// before it has arrived) a compiled function interprets its tape, loads the generator on first
// use, and switches to generated sweeps once they are installed; results are the same
// throughout. Its own file: vitest gives each file fresh modules, so the generator starts unloaded.
import { expect, it } from 'vitest';
import { compile, init, type Var } from '../src/index.ts';

it('compile before the code generator is loaded: interpreted, then generated, bit-identical', async () => {
  await init({ codegen: false });
  const f = (x: Var[]): Var => {
    let y = x[0]!;
    for (let k = 0; k < 200; k++) y = y.mul(x[1]!).add(x[0]!.sin()).mul(0.5);
    return y;
  };
  // 'require' refuses to answer from the interpreter while the generator loads (a new-user probe:
  // it replayed interpreted), with the reason; the first compile below starts the load.
  const required = compile(f, { inputs: 2, codegen: 'require' });
  expect(() => required.value([0.25, 1.5])).toThrow(/^compile: generated sweeps are required \(\{ codegen: 'require' \}\), but the code generator is still loading/);
  // With `at` compile itself records and is refused, returning nothing to wait on: it says how
  // to wait (it said only that the generator was loading: an async-lifecycle probe).
  expect(() => compile(f, { inputs: 2, at: [0.5, 0.75], codegen: 'require' })).toThrow(
    /still loading.*; with 'at', compile returns no function to wait on: await init\(\) first, which loads it, or compile without 'at' and await f\.whenGenerated\(\)$/,
  );
  const compiled = compile(f, { inputs: 2, at: [0.5, 0.75] });
  expect(compiled.generatedSweeps).toBe('pending');
  const before = Array.from(compiled.gradient([0.25, 1.5]));
  await compiled.whenGenerated();
  expect(compiled.generatedSweeps).toBe('active');
  const after = Array.from(compiled.gradient([0.25, 1.5]));
  const interpreted = Array.from(compile(f, { inputs: 2, at: [0.5, 0.75], codegen: false }).gradient([0.25, 1.5]));
  expect(before.every((g, k) => Object.is(g, interpreted[k]))).toBe(true);
  expect(after.every((g, k) => Object.is(g, interpreted[k]))).toBe(true);
  // Loaded now: the next compiled function is generated at once, and the required one records
  // and answers.
  expect(compile(f, { inputs: 2, at: [0.5, 0.75] }).generatedSweeps).toBe('active');
  expect(Array.from(required.gradient([0.25, 1.5])).every((g, k) => Object.is(g, interpreted[k]))).toBe(true);
  expect(required.generatedSweeps).toBe('active');
});
