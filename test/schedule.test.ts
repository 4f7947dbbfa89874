// The scheduled replay (assembly/schedule.ts): a compiled tape that does not fold into generated
// code replays by runs of one op and stored partials, and computes exactly what the interpreter
// computes, bit for bit, by every method (value, gradient, vjp, jvp, hvp, batches), at any
// inputs: NaN, ±Infinity and -0 among them. Here the planner's size limit is lowered so that
// small random tapes take that path too.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, fromBytes, init, select, type Var } from '../src/index.ts';
import { scheduleLimits } from '../src/wasm/backend.ts';
import { planSizes } from '../src/wasm/codegen/plan.ts';
import { anyInput, bothWays, checkRandomDags, expectSameBits } from './replay-ways.ts';

const defaults = { ...planSizes }, limits = { ...scheduleLimits };

beforeAll(async () => {
  await init();
  // No tape folds into code, and every one is scheduled, however regular its ops.
  planSizes.maxSlots = 0;
  scheduleLimits.minMispredicted = 0;
});

afterAll(() => {
  Object.assign(planSizes, defaults);
  Object.assign(scheduleLimits, limits);
});

// Every kind of node the schedule treats on its own: add, sub, mul, neg, square (their own
// loops), select and where (data-dependent targets), comparisons read as guards, zero-gradient
// ops (no reverse step), unary and binary rules through the rule switch, sin and cos of one
// operand side by side (whose partials the interpreter reads from each other), constants.
function mixed(seed: number, length: number) {
  return (x: Var[]): Var => {
    let state = seed >>> 0;
    const next = (): number => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state >>> 8;
    };
    const nodes: Var[] = x.slice();
    const pick = (): Var => nodes[nodes.length - 1 - (next() % Math.min(nodes.length, 12))]!;
    if (x[0]!.gt(0).value) nodes.push(x[0]!.log1p());
    while (nodes.length < length) {
      const a = pick(), b = pick();
      const k = next() % 16;
      const v = k === 0 ? a.add(b) : k === 1 ? a.sub(b) : k === 2 ? a.mul(b) : k === 3 ? a.neg() : k === 4 ? a.square().mul(0.25)
        : k === 5 ? select(a.gt(b), a, b.mul(0.5)) : k === 6 ? a.floor().add(b.sign()).add(a.stopGradient())
        : k === 7 ? a.tanh() : k === 8 ? a.abs().add(1).sqrt() : k === 9 ? a.div(b.square().add(1))
        : k === 10 ? a.sin().mul(a.cos()) : k === 11 ? a.max(b) : k === 12 ? a.mul(0.5).atan2(b)
        : k === 13 ? a.sigmoid() : k === 14 ? a.hypot(b).sub(1) : a.mul(next() / 2 ** 24 - 0.5);
      nodes.push(v);
    }
    let out = nodes[nodes.length - 1]!;
    for (let k = 2; k < 8; k++) out = out.add(nodes[nodes.length - k]!);
    return out;
  };
}

describe('scheduled replay', () => {
  it('random DAGs over every op replay exactly like the interpreter, at any inputs', () => {
    checkRandomDags('scheduled', 60);
  });

  it('selects, guards, zero-gradient ops and trig pairs replay exactly like the interpreter', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 }),
        fc.integer({ min: 20, max: 600 }),
        fc.array(anyInput, { minLength: 9, maxLength: 9 }),
        (seed, length, xs) => {
          const at = [0.3, -0.4, 0.5];
          const ways = bothWays(mixed(seed, length), 3, at);
          expect(ways.generated.generatedSweeps).toBe('scheduled');
          ways.check(Float64Array.from(at));
          // Some rows cross the guard on x[0] > 0: both record again, and schedule again.
          ways.check(Float64Array.from(xs), 3);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a vjp of several outputs seeds below the top of the tape', () => {
    const f = (x: Var[]): Var[] => {
      const a = x[0]!.mul(x[1]!).sin(), b = a.square().add(x[1]!.tanh());
      return [b, a, a.mul(b).sub(x[0]!)];
    };
    const scheduled = compile(f, { inputs: 2, at: [0.5, 2] });
    const interpreted = compile(f, { inputs: 2, at: [0.5, 2], codegen: false });
    expect(scheduled.generatedSweeps).toBe('scheduled');
    for (const x of [[0.5, 2], [-1.5, 0.25], [NaN, 1]]) {
      for (const w of [[1, 0, 0], [0, 1, 0], [0.5, -2, 3]]) {
        expectSameBits(scheduled.vjp(x, w), interpreted.vjp(x, w), `vjp at ${x} along ${w}`);
      }
    }
  });

  // A probe: a term t·p of the tangent sweeps was left out where t was 0, not where p was, so an
  // infinite tangent times a zero partial was NaN (numerics.test.ts has the engines' other paths).
  it('a zero partial passes no tangent, not even an infinite one, as in the interpreter', () => {
    const f = (x: Var[]): Var => x[0]!.sqrt().neg().add(x[0]!.mul(x[0]!.sqrt())).add(x[0]!.sqrt().sub(1).relu()).mul(x[1]!);
    for (const backend of ['wasm', 'js'] as const) {
      const scheduled = compile(f, { inputs: 2, at: [0.5, 2], backend });
      const interpreted = compile(f, { inputs: 2, at: [0.5, 2], codegen: false, backend });
      if (backend === 'wasm') expect(scheduled.generatedSweeps).toBe('scheduled');
      expect(scheduled.jvp([0, 2], [1, 0])[0]).toBe(-Infinity);
      expect(scheduled.jvp([0, 2], [0, 1])[0]).toBe(0);
      expectSameBits(scheduled.jvp([0, 2], [1, 1]), interpreted.jvp([0, 2], [1, 1]), `${backend} jvp`);
      expectSameBits(scheduled.hvp([0, 2], [0, 1]), interpreted.hvp([0, 2], [0, 1]), `${backend} hvp`);
    }
  });

  it('says so, and codegen: "require" accepts it; codegen: false keeps the interpreter', () => {
    const f = mixed(5, 300);
    const g = compile(f, { inputs: 3, at: [0.3, -0.4, 0.5], codegen: 'require' });
    expect(g.generatedSweeps).toBe('scheduled');
    expect(g.generatedSweepsReason).toMatch(/does not fold into at most \d+ nodes of code.*; its replays run a schedule instead/);
    expect(compile(f, { inputs: 3, at: [0.3, -0.4, 0.5], codegen: false }).generatedSweeps).toBe('none');
    expect(compile(f, { inputs: 3, at: [0.3, -0.4, 0.5], backend: 'js' }).generatedSweeps).toBe('none');
  });

  it('a tape whose ops follow a pattern stays interpreted, one without is scheduled, and each says why', () => {
    scheduleLimits.minMispredicted = limits.minMispredicted;
    try {
      // 400 repetitions of one 9-op step: the interpreter's jump predicts it.
      const loop = (x: Var[]): Var => {
        let y = x[0]!;
        for (let k = 0; k < 400; k++) y = y.mul(x[1]!).add(x[2]!).sin().mul(0.5).sub(y.square().mul(0.1));
        return y;
      };
      const regular = compile(loop, { inputs: 3, at: [0.3, -0.4, 0.5] });
      expect(regular.generatedSweeps).toBe('none');
      expect(regular.generatedSweepsReason).toMatch(/follow a pattern the interpreter's jump predicts, so the interpreter replays it/);
      const random = compile(mixed(9, 3000), { inputs: 3, at: [0.3, -0.4, 0.5] });
      expect(random.generatedSweeps).toBe('scheduled');
      const x = [0.2, 0.7, -0.1];
      expectSameBits(regular.gradient(x), compile(loop, { inputs: 3, at: [0.3, -0.4, 0.5], codegen: false }).gradient(x), 'the regular tape');
    } finally {
      scheduleLimits.minMispredicted = 0;
    }
  });

  it('leaves out the nodes no output or guard depends on, with the same results; checkNaN keeps every node', () => {
    // Nodes 3-5 (after the three inputs) lead nowhere; log x[1] is NaN for x[1] < 0.
    const f = (x: Var[]): Var => {
      void x[1]!.log().mul(x[0]!).exp();
      return mixed(13, 300)(x);
    };
    const at = [0.3, 0.4, 0.5], x = [0.2, -2, -0.1];
    const scheduled = compile(f, { inputs: 3, at }), interpreted = compile(f, { inputs: 3, at, codegen: false });
    expect(scheduled.generatedSweeps).toBe('scheduled');
    const g = scheduled.gradient(x);
    expectSameBits(g, interpreted.gradient(x), 'gradient');
    expectSameBits([scheduled.value(x) as number], [interpreted.value(x) as number], 'value');
    expectSameBits(scheduled.hvp(x, [1, -1, 0.5]), interpreted.hvp(x, [1, -1, 0.5]), 'hvp');
    const val = (h: typeof scheduled): Float64Array => h.recorded!.tape.engine.views.val;
    // The interpreter computed log(-2); the schedule never did: the recording's log(0.4) stays.
    expect(val(interpreted)[3]).toBeNaN();
    expect(val(scheduled)[3]).toBe(Math.log(0.4));
    // checkNaN reads every value, so its replays compute them all and find the NaN, as the
    // interpreter's do.
    const checked = compile(f, { inputs: 3, at, checkNaN: true });
    expect(checked.generatedSweeps).toBe('scheduled');
    const message = (h: typeof scheduled): string => {
      try {
        h.gradient(x);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    const expected = message(compile(f, { inputs: 3, at, checkNaN: true, codegen: false }));
    expect(expected).toMatch(/log/);
    expect(message(checked)).toBe(expected);
    expectSameBits(checked.gradient(at), interpreted.gradient(at), 'gradient with checkNaN, finite');
  });

  // A probe: an hvp (the scheduled forward, then the interpreter's reverse with tangents) read the
  // partial of a sin from a cos beside it that no output needed and the schedule had left out:
  // its value of an earlier call, a wrong Hessian with a right gradient.
  it('computes a sin or cos no output needs where its trig sibling is needed, whose partial reads it', () => {
    const shapes: [string, (x: Var[]) => Var][] = [
      ['unused cos after', (x) => { const s = x[0]!.sin(); void x[0]!.cos(); return s.square(); }],
      ['unused cos before', (x) => { void x[0]!.cos(); return x[0]!.sin().square(); }],
      ['unused sin after', (x) => { const c = x[0]!.cos(); void x[0]!.sin(); return c.mul(x[1]!).square(); }],
      ['unused sin before', (x) => { void x[0]!.sin(); return x[0]!.cos().mul(x[1]!).square(); }],
    ];
    for (const [what, head] of shapes) {
      const f = (x: Var[]): Var => head(x).add(mixed(29, 300)(x));
      const at = [0.1, 0.2, 0.3], x = [1, 2, -0.5], v = [1, 0.5, -1];
      const scheduled = compile(f, { inputs: 3, at }), interpreted = compile(f, { inputs: 3, at, codegen: false });
      expect(scheduled.generatedSweeps, what).toBe('scheduled');
      expectSameBits(scheduled.hvp(x, v), interpreted.hvp(x, v), `${what}: hvp`);
      expectSameBits(scheduled.hvpBatch([...x, ...at], 2, [...v, ...v]), interpreted.hvpBatch([...x, ...at], 2, [...v, ...v]), `${what}: hvpBatch`);
      expectSameBits(scheduled.gradient(x), interpreted.gradient(x), `${what}: gradient`);
    }
  });

  it('a function that records a new input inside is refused, on both engines', () => {
    for (const backend of ['wasm', 'js'] as const) {
      const f = (x: Var[]): Var => x[0]!.mul(x[0]!.tape.variable(3)).add(x[1]!);
      expect(() => compile(f, { inputs: 2, at: [0.5, 0.25], backend })).toThrow(/recorded a new input \(node #2, input/);
      const g = compile(f, { inputs: 2, backend });
      expect(() => g.gradientBatch([1, 0, 1, 0], 2)).toThrow(/Use a constant/);
      // Nothing was kept: the next call records again, and refuses again.
      expect(() => g.gradient([1, 0])).toThrow(/recorded a new input/);
    }
  });

  it('a loaded function schedules its tape, and stays within its memory limit', () => {
    const f = mixed(11, 2000);
    const original = compile(f, { inputs: 3, at: [0.3, -0.4, 0.5], codegen: false });
    const bytes = original.toBytes();
    const loaded = fromBytes(bytes);
    expect(loaded.generatedSweeps).toBe('scheduled');
    const x = [0.25, 0.5, -0.75];
    expectSameBits(loaded.gradient(x), original.gradient(x), 'gradient of the loaded function');
    // Room for the tape and its tangents (41 bytes a node) but not for a schedule (up to 56 more,
    // with the scheduler's scratch): the interpreter, which says so.
    const tight = fromBytes(bytes, { maxMemoryBytes: original.size * 60 });
    expect(tight.generatedSweeps).toBe('none');
    expect(tight.generatedSweepsReason).toMatch(/maxMemoryBytes leaves no room for a schedule/);
    expectSameBits(tight.gradient(x), original.gradient(x), 'gradient without a schedule');
    // Room for both: scheduled, and an hvp still finds room for its tangents.
    const roomy = fromBytes(bytes, { maxMemoryBytes: original.size * 100 });
    expect(roomy.generatedSweeps).toBe('scheduled');
    expectSameBits(roomy.hvp(x, [1, -1, 0.5]), original.hvp(x, [1, -1, 0.5]), 'hvp of the scheduled function');
  });
});
