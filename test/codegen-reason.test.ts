// generatedSweepsReason says why a compiled function interprets its tape, and
// { codegen: 'require' } turns that reason into an error instead of a silent fallback.
import { beforeAll, describe, expect, it } from 'vitest';
import { TapegradError, compile, defineFunction, init, type Var, type Vec } from '../src/index.ts';

beforeAll(async () => {
  await init();
});

const chain = (x: Var[]): Var => {
  let y = x[0]!;
  for (let k = 0; k < 50; k++) y = y.mul(0.9).add(x[1]!).sin();
  return y;
};
const twice = defineFunction({ name: 'twice', forward: (xs) => 2 * xs[0]!, vjp: (_xs, _y, g) => [2 * g] });

describe('why replays are interpreted', () => {
  it('null when generated sweeps are active', () => {
    const f = compile(chain, { inputs: 2, at: [0.5, 0.1] });
    expect(f.generatedSweeps).toBe('active');
    expect(f.generatedSweepsReason).toBeNull();
  });

  it('a reason for each way of falling back', () => {
    expect(compile(chain, { inputs: 2 }).generatedSweepsReason).toBe('nothing recorded yet');
    expect(compile(chain, { inputs: 2, at: [0.5, 0.1], backend: 'js' }).generatedSweepsReason).toMatch(/JS backend/);
    expect(compile(chain, { inputs: 2, at: [0.5, 0.1], codegen: false }).generatedSweepsReason).toMatch(/codegen: false/);
    expect(compile((x: Vec) => x.exp().sum(), { inputs: 3, vector: true, at: [1, 2, 3] }).generatedSweepsReason).toMatch(/vector nodes/);
    expect(compile((x) => twice(x[0]!).add(x[1]!), { inputs: 2, at: [1, 2] }).generatedSweepsReason).toMatch(/custom op/);
  });

  it('checkNaN: no generated sweeps, which keep adjoints in locals where the check cannot see them', () => {
    // A probe's sqrt(abs(x)) at 0 returned the gradient [0] unchecked through generated code,
    // where the interpreter, the schedule and a tape report sqrt's infinite adjoint.
    for (const [f, x, sender] of [
      [(v: Var[]) => v[0]!.abs().sqrt(), [0], 'sqrt'],
      [chain, [0.5, 0.1], null],
    ] as const) {
      const checked = compile(f, { inputs: x.length, checkNaN: true, at: x });
      expect(checked.generatedSweeps).not.toBe('active');
      expect(checked.generatedSweepsReason).toMatch(/^checkNaN reads every value and adjoint, which generated code keeps in locals; /);
      if (sender) expect(() => checked.gradient(x)).toThrow(new RegExp(`^checkNaN: ${sender} at node \\d+ sent a non-finite adjoint`));
      else expect(Array.from(checked.gradient(x))).toEqual(Array.from(compile(f, { inputs: x.length, at: x }).gradient(x)));
    }
  });

  it("{ codegen: 'require' } throws the reason, and never replays the interpreter", () => {
    const custom = compile((x) => twice(x[0]!).add(x[1]!), { inputs: 2, codegen: 'require' });
    for (let k = 0; k < 2; k++) {
      let error: unknown = null;
      try {
        custom.gradient([1, 2]);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(TapegradError);
      expect((error as TapegradError).code).toBe('INVALID_ARGUMENT');
      expect((error as Error).message).toMatch(/generated sweeps are required .*custom op/);
      // The reason stays readable after the refusal (a probe read 'nothing recorded yet').
      expect(custom.generatedSweepsReason).toMatch(/custom op/);
    }
    // What no recording can change refuses at compile, not at every call (a probe).
    expect(() => compile(chain, { inputs: 2, backend: 'js', codegen: 'require' })).toThrow(/generated sweeps are required .*JS backend/);
    expect(() => compile((x: Vec) => x.sum(), { inputs: 2, vector: true, codegen: 'require' })).toThrow(/vector nodes/);
    expect(() => compile((x: Vec) => x.sum(), { inputs: 2, vector: true, codegen: 'require', at: [1, 2] })).toThrow(/vector nodes/);
    const ok = compile(chain, { inputs: 2, codegen: 'require' });
    expect(ok.gradient([0.5, 0.1]).length).toBe(2);
    expect(ok.generatedSweeps).toBe('active');
  });

  // A probe: an input returned as it is (or nothing) was refused as "nothing to replay", though
  // nothing is interpreted either.
  it("{ codegen: 'require' } accepts a function with no node past its inputs", () => {
    const identity = compile((x) => x[1]!, { inputs: 2, codegen: 'require' });
    expect(identity.value([1, 2])).toBe(2);
    expect(Array.from(identity.gradient([1, 2]))).toEqual([0, 1]);
    expect(identity.generatedSweepsReason).toMatch(/no nodes past its inputs/);
    const nothing = compile(() => [], { inputs: 2, codegen: 'require' });
    expect(Array.from(nothing.vjpBatch([1, 2, 3, 4], 2, []))).toEqual([0, 0, 0, 0]);
    // A vector function with nodes to interpret is refused whatever its input count (a review
    // probe: 10 inputs passed the count test).
    for (const inputs of [2, 10]) {
      expect(() => compile((x: Vec) => x.sin().mul(x).sum(), { inputs, vector: true, codegen: 'require' }).gradient(new Float64Array(inputs).fill(1))).toThrow(/vector nodes/);
    }
  });
});
