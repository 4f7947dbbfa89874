// Branch guards: a comparison whose `.value` the function read while recording decides which
// branch the tape holds. Replaying where it comes out the other way must re-record (counted in
// `rerecords`) and give that branch's gradient, or throw BranchChangedError in strict mode and
// leave the function usable. A comparison used only as a `select` condition is data, not control
// flow: select replays both ways and never re-records.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BranchChangedError, TapegradError, compile, createTape, fromBytes, init, type BackendKind, type Tape, type Var,
} from '../src/index.ts';
import { BACKENDS, countingCompiles } from './support.ts';

beforeAll(async () => {
  await init();
});

/** x0 > 0: x0^2 x1, else -3 x0 x1. Arithmetic only, so the closed forms below are exact. */
function branchy(x: Var[]): Var {
  return x[0]!.gt(0).value ? x[0]!.square().mul(x[1]!) : x[0]!.mul(x[1]!).mul(-3);
}

/** The same two branches, chosen by select: no `.value` is read, so there is no guard. */
function selected(x: Var[]): Var {
  return x[0]!.tape.select(x[0]!.gt(0), x[0]!.square().mul(x[1]!), x[0]!.mul(x[1]!).mul(-3));
}

/** Transcendental branches, for comparisons with a fresh recording. */
function branchyTranscendental(x: Var[]): Var {
  return x[0]!.gt(0).value ? x[0]!.sin().mul(x[1]!.exp()) : x[0]!.mul(x[1]!).atan().add(x[1]!.cos());
}

const positive = (x0: number): boolean => x0 > 0; // NaN, 0 and -0 take the else branch

function closedForm(x0: number, x1: number): { value: number; gradient: [number, number] } {
  return positive(x0)
    ? { value: x0 * x0 * x1, gradient: [2 * x0 * x1, x0 * x0] }
    : { value: x0 * x1 * -3, gradient: [-3 * x1, -3 * x0] };
}

const fresh: Record<BackendKind, Tape> = {} as Record<BackendKind, Tape>;
beforeAll(async () => {
  for (const backend of BACKENDS) fresh[backend] = await createTape({ backend });
});

/** Value and gradient from recording f on a reset tape at p. */
function reference(backend: BackendKind, f: (x: Var[]) => Var, p: ArrayLike<number>) {
  const tape = fresh[backend];
  tape.reset();
  const inputs = tape.variables(p);
  const output = f(inputs);
  return { value: output.value, gradient: tape.gradient(output, inputs), tape, inputs, output };
}

function expectSameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    if (!Object.is(actual[k], expected[k])) throw new Error(`${what}[${k}]: got ${actual[k]}, expected ${expected[k]}`);
  }
}

/** Equal as numbers (NaN equals NaN), with +0 and -0 equal: the sweep skips a partial that is
 *  exactly 0, so a closed form that multiplies by it may differ in the sign of a zero. */
function expectSameValues(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    const a = actual[k]!, e = expected[k]!;
    if (!(a === e || (a !== a && e !== e))) throw new Error(`${what}[${k}]: got ${a}, expected ${e}`);
  }
}

/** Times the side of x0 changes along the sequence, starting from the recorded side. */
function sideChanges(recordedAt: number, x0s: readonly number[]): number {
  let side = positive(recordedAt);
  let changes = 0;
  for (const x0 of x0s) {
    if (positive(x0) !== side) {
      changes++;
      side = positive(x0);
    }
  }
  return changes;
}

const finite = fc.double({ min: -4, max: 4, noNaN: true });
const anyDouble = fc.oneof(finite, fc.constantFrom(NaN, 0, -0, Infinity, -Infinity, 5e-324, -5e-324));

describe.each(BACKENDS)('a guard that comes out the other way re-records (%s)', (backend) => {
  // A probe: a Var that escaped the first recording, read after a guard made the function record
  // again, was "recorded before tape.reset()", a reset the caller never made.
  it('a Var of an earlier recording says the function recorded again', () => {
    let escaped: Var | null = null;
    const f = compile((x: Var[]) => {
      const y = x[0]!.gt(0).value ? x[0]!.sin() : x[0]!.cos();
      escaped ??= y;
      return y.mul(x[1]!);
    }, { inputs: 2, backend });
    f.value([1, 2]);
    expect(escaped!.value).toBe(Math.sin(1));
    f.value([-1, 2]);
    expect(() => escaped!.value).toThrow(expect.objectContaining({
      name: 'StaleHandleError', message: expect.stringMatching(/^value: Var #\d+ was recorded before tape\.reset\(\) \(a compiled function records again where a guard changes path: it is from an earlier recording of it\)/),
    }));
    expect(f.value([-1, 2])).toBe(2 * Math.cos(-1));
  });

  it('compiled at x0 = 1, replayed at x0 = -1: re-records once and returns the other branch gradient', () => {
    const f = compile(branchy, { inputs: 2, backend, at: [1, 2] });
    expectSameValues(f.gradient([1, 2]), closedForm(1, 2).gradient, 'recorded side');
    expect(f.rerecords).toBe(0);
    const out = new Float64Array(2);
    expect(f.gradient([-1, 2], out)).toBe(out);
    expectSameBits(out, [-6, 3], 'at -1');
    expect(f.rerecords).toBe(1);
    // Same side again: the new recording serves it, nothing is recorded.
    expectSameValues(f.gradient([-2.5, 0.5]), closedForm(-2.5, 0.5).gradient, 'at -2.5');
    expect(f.rerecords).toBe(1);
    // Back across: a second re-record.
    expectSameBits(f.gradient([3, -1]), [-6, 9], 'at 3');
    expect(f.rerecords).toBe(2);
  });

  it('every entry point re-records: value, valueAndGradient, vjp, jvp, hvp', () => {
    const f = compile(branchyTranscendental, { inputs: 2, backend, at: [1, 0.5] });
    const points: [number, number][] = [[-1, 0.5], [2, -1], [-0.5, 2], [0.25, 0.75], [-3, -0.5], [1.5, 0.1]];
    const calls = [
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        expect(Object.is(f.value(p), ref.value)).toBe(true);
      },
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        const [v, g] = f.valueAndGradient(p);
        expect(Object.is(v, ref.value)).toBe(true);
        expectSameBits(g, ref.gradient, 'valueAndGradient');
      },
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        expectSameBits(f.vjp(p, [2]), ref.tape.vjp([ref.output], [2], ref.inputs), 'vjp');
      },
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        expectSameBits(f.jvp(p, [0.5, -1]), ref.tape.jvp(ref.inputs, [0.5, -1], [ref.output]), 'jvp');
      },
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        expectSameBits(f.hvp(p, [0.5, -1]), ref.tape.hvp(ref.output, ref.inputs, [0.5, -1]), 'hvp');
      },
      (p: number[]) => {
        const ref = reference(backend, branchyTranscendental, p);
        expectSameBits(f.gradient(p), ref.gradient, 'gradient');
      },
    ];
    // Every point is on the other side of the previous one: each call re-records.
    points.forEach((p, k) => calls[k]!(p));
    expect(f.rerecords).toBe(points.length);
  });

  it('any sequence of inputs: bit-identical to a fresh recording, one re-record per change of side', () => {
    fc.assert(
      fc.property(finite, fc.array(fc.tuple(anyDouble, anyDouble), { minLength: 1, maxLength: 12 }), (at0, points) => {
        const f = compile(branchy, { inputs: 2, backend, at: [at0, 1] });
        const g = compile(branchyTranscendental, { inputs: 2, backend, at: [at0, 1] });
        for (const p of points) {
          const ref = reference(backend, branchy, p);
          const [v, grad] = f.valueAndGradient(p);
          expect(Object.is(v, ref.value)).toBe(true);
          expectSameBits(grad, ref.gradient, 'branchy');
          if (Number.isFinite(p[0]) && Number.isFinite(p[1])) {
            // The closed form holds where no 0 * Infinity is skipped by the sweep's zero rule.
            const exact = closedForm(p[0], p[1]);
            expectSameValues([v, ...grad], [exact.value, ...exact.gradient], 'closed form');
          }
          expectSameBits(g.gradient(p), reference(backend, branchyTranscendental, p).gradient, 'transcendental');
        }
        const expected = sideChanges(at0, points.map((p) => p[0]));
        expect(f.rerecords).toBe(expected);
        expect(g.rerecords).toBe(expected);
      }),
      { numRuns: 200 },
    );
  });

  it('a loop whose trip count depends on guards (Newton square root) replays or re-records as needed', () => {
    // y <- (y + x / y) / 2 until |y^2 - x| <= 1e-12 x: every loop test is a guard.
    const newton = (x: Var[]): Var => {
      let y = x[0]!;
      let steps = 0;
      while (y.mul(y).sub(x[0]!).abs().gt(x[0]!.mul(1e-12)).value && steps++ < 100) y = y.add(x[0]!.div(y)).mul(0.5);
      return y;
    };
    const f = compile(newton, { inputs: 1, backend, at: [2] });
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 1e6, noNaN: true }), (x) => {
        const before = f.rerecords;
        const ref = reference(backend, newton, [x]);
        const [v, g] = f.valueAndGradient([x]);
        expect(Object.is(v, ref.value)).toBe(true);
        expectSameBits(g, ref.gradient, 'newton');
        // Converged: the value is sqrt(x), the derivative of the iteration 1 / (2 sqrt x).
        expect(Math.abs(v - Math.sqrt(x))).toBeLessThanOrEqual(1e-6 * Math.sqrt(x));
        expect(Math.abs(g[0]! - 0.5 / Math.sqrt(x))).toBeLessThanOrEqual(1e-6 / Math.sqrt(x));
        // A replay at the same point never records again.
        expectSameBits(f.gradient([x]), g, 'replayed');
        expect(f.rerecords - before).toBeLessThanOrEqual(1);
      }),
      { numRuns: 100 },
    );
    expect(f.rerecords).toBeGreaterThan(0);
  });
});

describe.each(BACKENDS)('strict mode throws BranchChangedError instead (%s)', (backend) => {
  it('throws with code BRANCH_CHANGED and the guard node, from every entry point', () => {
    const f = compile(branchy, { inputs: 2, backend, strict: true, at: [1, 2] });
    const guard = f.recorded!.guards[0]!;
    const across = [-1, 2];
    const entryPoints: [string, () => unknown][] = [
      ['gradient', () => f.gradient(across)],
      ['value', () => f.value(across)],
      ['valueAndGradient', () => f.valueAndGradient(across)],
      ['vjp', () => f.vjp(across, [1])],
      ['jvp', () => f.jvp(across, [1, 0])],
      ['hvp', () => f.hvp(across, [1, 0])],
      ['gradientBatch', () => f.gradientBatch(new Float64Array([1, 2, -1, 2, 3, 4]), 3)],
    ];
    for (const [name, call] of entryPoints) {
      let thrown: unknown = null;
      try {
        call();
      } catch (e) {
        thrown = e;
      }
      expect(thrown, name).toBeInstanceOf(BranchChangedError);
      expect(thrown, name).toBeInstanceOf(TapegradError);
      const error = thrown as BranchChangedError;
      expect(error.code).toBe('BRANCH_CHANGED');
      expect(error.node).toBe(guard);
      expect(error.message).toMatch(/comes out the other way.*strict/);
    }
    expect(f.rerecords).toBe(0);
  });

  it('still works at inputs on the recorded side after throwing', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(finite, finite), { minLength: 1, maxLength: 8 }), (points) => {
        const f = compile(branchy, { inputs: 2, backend, strict: true, at: [1, 2] });
        const size = f.size;
        for (const p of points) {
          if (positive(p[0])) {
            const exact = closedForm(p[0], p[1]);
            const [v, g] = f.valueAndGradient(p);
            expectSameValues([v, ...g], [exact.value, ...exact.gradient], 'recorded side');
            expectSameValues(f.gradientBatch(new Float64Array([...p, ...p, ...p]), 3), [...exact.gradient, ...exact.gradient, ...exact.gradient], 'batch');
          } else {
            expect(() => f.gradient(p)).toThrow(BranchChangedError);
          }
        }
        expect(f.rerecords).toBe(0);
        expect(f.size).toBe(size);
      }),
      { numRuns: 100 },
    );
  });

  it('loses nothing: after the error toBytes() writes a function fromBytes loads, and so after a loaded one throws', () => {
    const f = compile(branchy, { inputs: 2, backend, strict: true, at: [1, 2] });
    const want = Array.from(f.gradient([3, 4]));
    for (const call of [() => f.gradient([-1, 2]), () => f.gradientBatch(new Float64Array([1, 2, -1, 2]), 2), () => f.hvp([-1, 2], [1, 0])]) {
      expect(call).toThrow(BranchChangedError);
      const loaded = fromBytes(f.toBytes(), { backend });
      expect(Array.from(loaded.gradient([3, 4]))).toEqual(want);
      expect(() => loaded.gradient([-2, 1])).toThrow(BranchChangedError);
      // Named by its call (a probe: it named none); hvp's too.
      expect(() => loaded.gradient([-2, 1])).toThrow(/^gradient: a comparison recorded at node \d+ comes out the other way/);
      expect(() => loaded.hvp([-2, 1], [1, 0])).toThrow(/^hvp: a comparison recorded/);
      // A batch names the row whose guard failed.
      expect(() => loaded.gradientBatch([3, 4, 1, 1, -2, 1], 3)).toThrow(/^gradientBatch, row 2: a comparison recorded at node \d+ comes out the other way/);
      expect(Array.from(fromBytes(loaded.toBytes(), { backend }).gradient([3, 4]))).toEqual(want);
      expect(Array.from(f.gradient([3, 4]))).toEqual(want);
    }
  });
});

describe.each(BACKENDS)('a comparison used only by select is not a guard (%s)', (backend) => {
  it('has no guards, never re-records, and replays both sides correctly', () => {
    const f = compile(selected, { inputs: 2, backend, at: [1, 2] });
    const strict = compile(selected, { inputs: 2, backend, at: [-1, 2], strict: true });
    expect(f.recorded!.guards.length).toBe(0);
    fc.assert(
      fc.property(anyDouble, anyDouble, (x0, x1) => {
        const ref = reference(backend, selected, [x0, x1]);
        for (const g of [f, strict]) {
          const [v, grad] = g.valueAndGradient([x0, x1]);
          expect(Object.is(v, ref.value)).toBe(true);
          expectSameBits(grad, ref.gradient, 'select');
          if (Number.isFinite(x0) && Number.isFinite(x1)) {
            const exact = closedForm(x0, x1);
            expectSameValues([v, ...grad], [exact.value, ...exact.gradient], 'select closed form');
          }
        }
      }),
      { numRuns: 300 },
    );
    expect(f.rerecords).toBe(0);
    expect(strict.rerecords).toBe(0);
  });

  it('gradientBatch over both sides needs no re-record', () => {
    for (const simd of [true, false]) {
      const f = compile(selected, { inputs: 2, backend, at: [1, 2], simd });
      const rows = [[1, 2], [-1, 2], [2, -3], [0, 5], [-0, 1], [-2.5, 0.5], [4, 4]];
      const G = f.gradientBatch(Float64Array.from(rows.flat()), rows.length);
      expectSameValues(G, rows.flatMap(([x0, x1]) => closedForm(x0!, x1!).gradient), `batch (simd ${simd})`);
      expect(f.rerecords).toBe(0);
    }
  });
});

describe.each(BACKENDS)('gradientBatch with rows on both sides of a guard (%s)', (backend) => {
  it.each([true, false])('gives every row its branch gradient and counts the re-records (simd %s)', (simd) => {
    fc.assert(
      fc.property(finite, fc.array(fc.tuple(anyDouble, anyDouble), { minLength: 1, maxLength: 15 }), (at0, rows) => {
        const f = compile(branchy, { inputs: 2, backend, at: [at0, 1], simd });
        const g = compile(branchyTranscendental, { inputs: 2, backend, at: [at0, 1], simd });
        const X = Float64Array.from(rows.flat());
        const out = new Float64Array(2 * rows.length).fill(NaN);
        expect(f.gradientBatch(X, rows.length, out)).toBe(out);
        const G2 = g.gradientBatch(X, rows.length);
        rows.forEach((p, r) => {
          expectSameBits(out.subarray(2 * r, 2 * r + 2), reference(backend, branchy, p).gradient, `row ${r}`);
          if (Number.isFinite(p[0]) && Number.isFinite(p[1])) expectSameValues(out.subarray(2 * r, 2 * r + 2), closedForm(p[0], p[1]).gradient, `row ${r} closed form`);
          expectSameBits(G2.subarray(2 * r, 2 * r + 2), reference(backend, branchyTranscendental, p).gradient, `row ${r} transcendental`);
        });
        const expected = sideChanges(at0, rows.map((p) => p[0]));
        expect(f.rerecords).toBe(expected);
        expect(g.rerecords).toBe(expected);
      }),
      { numRuns: 200 },
    );
  });

  it.each([true, false])('alternating sides over many rows re-records at every row (simd %s)', (simd) => {
    const rows = 101;
    const X = new Float64Array(2 * rows);
    for (let r = 0; r < rows; r++) {
      X[2 * r] = (r % 2 === 0 ? 1 : -1) * (1 + r / 7);
      X[2 * r + 1] = 0.5 + r / 10;
    }
    const f = compile(branchy, { inputs: 2, backend, at: [1, 1], simd });
    const G = f.gradientBatch(X, rows);
    for (let r = 0; r < rows; r++) expectSameValues(G.subarray(2 * r, 2 * r + 2), closedForm(X[2 * r]!, X[2 * r + 1]!).gradient, `row ${r}`);
    // Row 0 is on the recorded side; every later row flips.
    expect(f.rerecords).toBe(rows - 1);
  });
});

describe('re-records between a few structures reuse their generated modules', () => {
  it('alternating branches compile each structure once, with the same results', async () => {
    await init();
    // A probe: every re-record compiled a new module, whose code stayed in V8's code space (RSS
    // +0.5 KB a re-record, without bound). 'require': generated at every re-record (by default
    // a re-record after one that did not pay for its generation is interpreted, see codegen.test.ts).
    const f = compile((x: Var[]) => (x[0]!.gt(0).value ? x[0]!.mul(x[1]!).add(x[1]!.exp()) : x[0]!.sub(x[1]!).sin().mul(x[1]!)), { inputs: 2, codegen: 'require' });
    const reference = compile((x: Var[]) => (x[0]!.gt(0).value ? x[0]!.mul(x[1]!).add(x[1]!.exp()) : x[0]!.sub(x[1]!).sin().mul(x[1]!)), { inputs: 2, codegen: false });
    f.gradient([1, 2]);
    f.gradient([-1, 2]);
    expect(f.generatedSweeps).toBe('active');
    let compiled = -1;
    countingCompiles((count) => {
      for (let k = 0; k < 40; k++) {
        const x = [k % 2 ? 1 + k / 100 : -1 - k / 100, 2];
        expect(Array.from(f.gradient(x))).toEqual(Array.from(reference.gradient(x)));
      }
      compiled = count();
    });
    expect(f.rerecords).toBeGreaterThanOrEqual(40);
    expect(f.generatedSweeps).toBe('active');
    expect(compiled).toBe(0);
  });
});
