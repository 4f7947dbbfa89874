// { codegen: 'require' } before the code generator has loaded: the call is refused, and
// whenGenerated waits for the generator although the refusal kept no recording. Its own file:
// vitest gives each file fresh modules, so the generator starts unloaded (as in
// codegen-lazy.test.ts).
import { expect, it } from 'vitest';
import { compile, init, type Var } from '../src/index.ts';

// A new-user probe: whenGenerated resolved at once after the refusal, and the next call was
// refused again until a timer or init() gave the generator time.
it('after a refusal while the generator loads, whenGenerated waits for it and the next call answers from generated code', async () => {
  await init({ codegen: false });
  const f = (x: Var[]): Var => x[0]!.sin().mul(x[1]!);
  const required = compile(f, { inputs: 2, codegen: 'require' });
  expect(() => required.value([1, 2])).toThrow(/but the code generator is still loading/);
  await required.whenGenerated();
  // The refusal's reason no longer holds (a probe read "still loading" here).
  expect(required.generatedSweepsReason).toBe('nothing recorded yet');
  expect(required.value([1, 2])).toBe(compile(f, { inputs: 2, codegen: false }).value([1, 2]));
  expect(required.generatedSweeps).toBe('active');
});
