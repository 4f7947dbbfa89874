// Misuse never corrupts a tape. Random misuse attempts (stale Vars and handles, Vars and handles of
// other tapes, malformed handles, non-numbers where numbers go, as values, operands, seeds,
// cotangents and tangents) are interleaved with building a correct graph on the same tape. Each
// attempt throws the documented TapegradError subclass with the right code and records nothing;
// at the end the graph's values and gradients are bit for bit those of the same graph recorded on
// a fresh tape.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ForeignHandleError, InvalidHandleError, NotANumberError, StaleHandleError, TapegradError, defineFunction,
  type Tape, type Var,
} from '../src/index.ts';
import { DAG_OPS, DAG_OP_NAMES, operandIndex, recordDag, type DagNode } from './dag-arbitrary.ts';
import { BACKENDS, tapeOn } from './support.ts';

type Code = TapegradError['code'];
const CLASS_OF: Partial<Record<Code, new (...args: never[]) => TapegradError>> = {
  STALE_HANDLE: StaleHandleError,
  FOREIGN_HANDLE: ForeignHandleError,
  INVALID_HANDLE: InvalidHandleError,
  NOT_A_NUMBER: NotANumberError,
};

const pair = defineFunction({
  name: 'pair',
  forward: (xs) => xs[0]! * xs[1]!,
  vjp: (xs, _y, g) => [g * xs[1]!, g * xs[0]!],
});

// ---- What a misuse passes ----

/** Something that is not a number (nor a Var). */
const notANumber = fc.oneof(
  fc.string(), fc.constant(undefined), fc.constant(null), fc.boolean(), fc.bigInt(), fc.object(),
  fc.array(fc.double(), { maxLength: 3 }), fc.constant({ valueOf: () => 1 }), fc.constant(Symbol('s')),
  fc.constant(() => 1),
);

/** A number that is no handle of any tape: not an integer, negative, or beyond every handle
 *  range (ranges lie below 2^30). Never 0 or -0: 0 is a live handle of the first tape. */
const malformedHandle = fc.oneof(
  fc.constantFrom(NaN, Infinity, -Infinity, 0.5, -1, 2 ** 30 + 7, 2 ** 40, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE),
  fc.double({ min: 1e-9, max: 2 ** 31, noNaN: true }).filter((x) => !Number.isInteger(x)),
  fc.integer({ min: -(2 ** 31), max: -1 }),
  fc.integer({ min: 2 ** 30, max: 2 ** 31 - 1 }),
);

/** A bad operand, described by kind so the expected error can be derived. */
type Bad =
  | { kind: 'stale'; pick: number }
  | { kind: 'foreign'; pick: number }
  | { kind: 'notANumber'; value: unknown }
  | { kind: 'malformed'; value: number };

const badVar: fc.Arbitrary<Bad> = fc.oneof(
  fc.nat().map((pick) => ({ kind: 'stale' as const, pick })),
  fc.nat().map((pick) => ({ kind: 'foreign' as const, pick })),
  notANumber.map((value) => ({ kind: 'notANumber' as const, value })),
);
const badHandle: fc.Arbitrary<Bad> = fc.oneof(badVar, malformedHandle.map((value) => ({ kind: 'malformed' as const, value })));
const badNumber: fc.Arbitrary<Bad> = notANumber.map((value) => ({ kind: 'notANumber' as const, value }));

// Where the bad thing goes. Var slots take a Var (numbers too where a constant would do);
// handle slots a raw handle; number slots a value, seed, cotangent or tangent.
const VAR_USES = [
  'backward', 'gradientOf', 'gradientWrt', 'add', 'pow', 'atan2', 'selectCond', 'selectTrue', 'selectFalse',
  'custom', 'vjpOutput', 'vjpWrt', 'jvpInput', 'hvpOutput',
] as const;
// Uses of the bad Var itself (its methods and getters): only a stale Var is misused there (a Var
// of another tape is fine on its own tape).
const STALE_USES = ['receiver', 'value', 'grad'] as const;
const HANDLE_USES = ['hSin', 'hAddLeft', 'hAddRight', 'hValue', 'hGrad', 'hBackward', 'hToVar', 'hSelect', 'hPowConst'] as const;
const NUMBER_USES = [
  'variable', 'constant', 'variablesFirst', 'addNumber', 'powNumber', 'hVariable', 'hConstant', 'hPowConstExponent',
  'seedBackward', 'seedGradient', 'seedHandles', 'seedHvp', 'cotangent', 'tangent', 'hvpVector',
] as const;

type Misuse =
  | { slot: 'var'; use: (typeof VAR_USES)[number] | (typeof STALE_USES)[number]; bad: Bad; a: number; b: number }
  | { slot: 'handle'; use: (typeof HANDLE_USES)[number]; bad: Bad; a: number; b: number }
  | { slot: 'number'; use: (typeof NUMBER_USES)[number]; bad: Bad; a: number; b: number };

const misuse: fc.Arbitrary<Misuse> = fc.oneof(
  fc.record({ slot: fc.constant('var' as const), use: fc.constantFrom(...VAR_USES), bad: badVar, a: fc.nat(), b: fc.nat() }),
  fc.record({
    slot: fc.constant('var' as const), use: fc.constantFrom(...STALE_USES),
    bad: fc.nat().map((pick): Bad => ({ kind: 'stale', pick })), a: fc.nat(), b: fc.nat(),
  }),
  fc.record({ slot: fc.constant('handle' as const), use: fc.constantFrom(...HANDLE_USES), bad: badHandle, a: fc.nat(), b: fc.nat() }),
  fc.record({ slot: fc.constant('number' as const), use: fc.constantFrom(...NUMBER_USES), bad: badNumber, a: fc.nat(), b: fc.nat() }),
);

type Action = { type: 'build'; node: DagNode } | { type: 'misuse'; misuse: Misuse } | { type: 'read'; pick: number; sweep: boolean };

// About two misuses per build step, and now and then a read or a sweep of the graph so far.
const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constantFrom(...DAG_OP_NAMES), a: fc.nat(), b: fc.nat() }).map((node) => ({ type: 'build' as const, node })) },
  { weight: 13, arbitrary: misuse.map((m) => ({ type: 'misuse' as const, misuse: m })) },
  { weight: 1, arbitrary: fc.record({ pick: fc.nat(), sweep: fc.boolean() }).map((r) => ({ type: 'read' as const, ...r })) },
);

// ---- Running a misuse ----

interface World {
  tape: Tape;
  good: Var[];
  stale: Var[];
  foreign: Var[];
}

/** The bad thing as a value to pass: a Var where a Var goes, its raw id where a handle goes. */
function materialize(world: World, bad: Bad, asHandle: boolean): unknown {
  switch (bad.kind) {
    case 'stale': {
      const v = world.stale[bad.pick % world.stale.length]!;
      return asHandle ? v.id : v;
    }
    case 'foreign': {
      const v = world.foreign[bad.pick % world.foreign.length]!;
      return asHandle ? v.id : v;
    }
    default:
      return bad.value;
  }
}

/** The codes the documentation allows for this misuse. */
function expectedCodes(m: Misuse): Code[] {
  const { bad } = m;
  if (bad.kind === 'notANumber') return ['NOT_A_NUMBER'];
  if (bad.kind === 'malformed') return ['INVALID_HANDLE'];
  if (bad.kind === 'stale') return ['STALE_HANDLE'];
  // A raw handle of another tape lies outside this tape's live range, below it or above it.
  return m.slot === 'handle' ? ['STALE_HANDLE', 'INVALID_HANDLE'] : ['FOREIGN_HANDLE'];
}

function attempt(world: World, m: Misuse): void {
  const { tape, good } = world;
  const h = tape.handles;
  const x = good[m.a % good.length]!, z = good[m.b % good.length]!;
  // jvp and hvp take inputs (good starts with the tape's inputs): a computed node is refused.
  const input = good[0]!;
  const bad = materialize(world, m.bad, m.slot === 'handle');
  const B = bad as never;
  switch (m.use) {
    // Var slots
    case 'backward': tape.backward(B); break;
    case 'gradientOf': tape.gradient(B, [x]); break;
    case 'gradientWrt': tape.gradient(x, [z, B]); break;
    case 'add': x.add(B); break;
    case 'pow': x.pow(B); break;
    case 'atan2': x.atan2(B); break;
    case 'selectCond': tape.select(B, x, z); break;
    case 'selectTrue': tape.select(x, B, z); break;
    case 'selectFalse': tape.select(x, z, B); break;
    case 'custom': pair(x, B); break;
    case 'vjpOutput': tape.vjp([x, B], [1, 2], [z]); break;
    case 'vjpWrt': tape.vjp([x], [1], [B]); break;
    case 'jvpInput': tape.jvp([B], [1], [x]); break;
    case 'hvpOutput': tape.hvp(B, [input], [1]); break;
    case 'receiver': (B as Var).sin(); break;
    case 'value': (B as Var).value; break;
    case 'grad': (B as Var).grad; break;
    // Handle slots
    case 'hSin': h.sin(B); break;
    case 'hAddLeft': h.add(B, x.id); break;
    case 'hAddRight': h.add(x.id, B); break;
    case 'hValue': h.value(B); break;
    case 'hGrad': h.grad(B); break;
    case 'hBackward': h.backward(B); break;
    case 'hToVar': h.toVar(B); break;
    case 'hSelect': h.select(x.id, B, z.id); break;
    case 'hPowConst': h.powConst(B, 2); break;
    // Number slots
    case 'variable': tape.variable(B); break;
    case 'constant': tape.constant(B); break;
    case 'variablesFirst': tape.variables([B, 1]); break;
    case 'addNumber': x.add(B); break;
    case 'powNumber': x.pow(B); break;
    case 'hVariable': h.variable(B); break;
    case 'hConstant': h.constant(B); break;
    case 'hPowConstExponent': h.powConst(x.id, B); break;
    case 'seedBackward': tape.backward(x, B ?? null!); break;
    case 'seedGradient': tape.gradient(x, [z], B ?? null!); break;
    case 'seedHandles': h.backward(x.id, B ?? null!); break;
    case 'seedHvp': tape.hvp(x, [input], [1], B ?? null!); break;
    case 'cotangent': tape.vjp([x], [B], [z]); break;
    case 'tangent': tape.jvp([input], [B], [z]); break;
    case 'hvpVector': tape.hvp(x, [input], [B]); break;
  }
}

// An undefined seed is an omitted seed (the default, 1): the seed slots above pass null instead,
// which is as much not a number and must be rejected the same way.

/** Runs one misuse; returns a message if it did not throw as documented or changed the tape. */
function check(world: World, m: Misuse): string | null {
  const before = world.tape.size;
  let error: unknown = null;
  try {
    attempt(world, m);
  } catch (e) {
    error = e;
  }
  const codes = expectedCodes(m);
  const what = `${m.use}(${m.bad.kind}${'value' in m.bad ? ` ${describeBad(m.bad.value)}` : ''})`;
  if (error === null) return `${what} did not throw`;
  if (!(error instanceof TapegradError)) return `${what} threw ${String(error)}, not a TapegradError`;
  if (!codes.includes(error.code)) return `${what} threw code ${error.code}, expected ${codes.join(' or ')}`;
  if (!(error instanceof CLASS_OF[error.code]!) || error.name !== CLASS_OF[error.code]!.name) return `${what} threw ${error.name} for ${error.code}`;
  if (world.tape.size !== before) return `${what} recorded ${world.tape.size - before} nodes before throwing`;
  return null;
}

function describeBad(value: unknown): string {
  try {
    return typeof value === 'symbol' ? value.toString() : typeof value === 'bigint' ? `${value}n` : JSON.stringify(value) ?? String(value);
  } catch {
    return typeof value;
  }
}

const bitsOf = (xs: readonly number[]): BigUint64Array => new BigUint64Array(Float64Array.from(xs).buffer);

const attempts: Record<string, number> = {};
afterAll(() => {
  console.log(`[misuse-fuzz] misuse attempts, each rejected as documented: ${JSON.stringify(attempts)}`);
});

describe.each(BACKENDS)('misuse fuzz (%s)', (backend) => {
  it('10^4 misuse attempts interleaved with a correct graph: documented errors, nothing recorded, the graph intact', async () => {
    attempts[backend] = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 1, maxLength: 4 }),
        // Long runs (misuse between many steps), free to shrink to the few actions that matter.
        fc.array(action, { minLength: 1, maxLength: 200, size: 'max' }),
        async (inputs, actions) => {
          const tape = await tapeOn(backend);
          // Stale Vars: recorded (and swept) on this tape before a reset.
          const old = tape.variables([1, 2]);
          const oldY = old[0]!.mul(old[1]!).exp();
          tape.backward(oldY);
          const stale = [...old, oldY];
          tape.reset();
          // Foreign Vars: of another tape of each backend.
          const others = [await tapeOn('wasm'), await tapeOn('js')];
          const foreign = others.flatMap((o) => {
            const v = o.variable(3);
            return [v, v.sin()];
          });
          // The correct graph: recordDag's node order, built step by step.
          const good: Var[] = tape.variables(inputs);
          const nodes: DagNode[] = [];
          const world: World = { tape, good, stale, foreign };
          const build = (node: DagNode): void => {
            const n = good.length;
            good.push(DAG_OPS[node.op](good[operandIndex(n, node.a)]!, good[operandIndex(n, node.b)]!));
            nodes.push(node);
          };
          build({ op: 'sin', a: 0, b: 0 });
          const problems: string[] = [];
          for (const act of actions) {
            if (act.type === 'build') build(act.node);
            else if (act.type === 'read') {
              const v = good[act.pick % good.length]!;
              if (act.sweep) tape.backward(v);
              else v.value;
            } else {
              attempts[backend]!++;
              const problem = check(world, act.misuse);
              if (problem) problems.push(problem);
            }
          }
          expect(problems).toEqual([]);

          // The graph built in between is what a fresh tape makes of it.
          const built = { inputs, nodes };
          const fresh = await tapeOn(backend);
          const want = recordDag(fresh, built);
          fresh.backward(want.output);
          let output = good[inputs.length]!;
          for (let k = inputs.length + 1; k < good.length; k++) output = output.add(good[k]!);
          tape.backward(output);
          expect(tape.size).toBe(fresh.size);
          const all = (vars: Var[], out: Var) => [...vars, out];
          expect(bitsOf(all(good, output).map((v) => v.value))).toEqual(bitsOf(all([...want.inputs, ...want.nodes], want.output).map((v) => v.value)));
          expect(bitsOf(all(good, output).map((v) => v.grad))).toEqual(bitsOf(all([...want.inputs, ...want.nodes], want.output).map((v) => v.grad)));
          // The foreign tapes were not touched either.
          for (const o of others) expect(o.size).toBe(2);
        },
      ),
      { numRuns: 200, seed: 7_777 },
    );
    expect(attempts[backend]).toBeGreaterThanOrEqual(10_000);
  });
});

// FAILING (minor bug): a rejected call can leave nodes behind. tape.select records a constant for
// each number operand as it reaches it, and tape.variables records the inputs one by one, so a bad
// operand after a number leaves stray nodes on the tape. Results are unaffected (nothing refers
// to them), but the tape grows with each rejected call and "misuse records nothing" does not hold.
describe.each(BACKENDS)('a rejected call records nothing (%s)', (backend) => {
  it('select with a number operand before the bad one, variables([1, bad]), custom(x, 2, bad)', async () => {
    const calls: ReadonlyArray<[string, (t: Tape, x: Var) => unknown]> = [
      ['select(1, bad, x)', (t, x) => t.select(1, 'bad' as never, x)],
      ['select(x, 2, bad)', (t, x) => t.select(x, 2, 'bad' as never)],
      ['variables([1, bad])', (t) => t.variables([1, 'bad' as never])],
      ['custom(x, 2, bad)', (_t, x) => pair(x, 2, 'bad' as never)],
    ];
    const leaks: string[] = [];
    for (const [label, call] of calls) {
      const tape = await tapeOn(backend);
      const x = tape.variable(1);
      expect(() => call(tape, x)).toThrow(NotANumberError);
      if (tape.size !== 1) leaks.push(`${label} left ${tape.size - 1} node(s)`);
    }
    expect(leaks).toEqual([]);
  });
});
