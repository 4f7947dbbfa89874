// Every misuse throws its documented error class with a message that says what went wrong, and
// the tape keeps working afterwards.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  CapacityError, ForeignHandleError, InvalidHandleError, NotANumberError, StaleHandleError,
  TapegradError, add, atan2, compile, createTape, createTapeSync, div, eq, ge, gt, hvp, hypot, init, jacobian, jvp, le, lt, max, min, mul,
  finiteDifferenceGradient, fromBytes, grad, gradcheck, normwiseError, pow, sub, vjp, where, type Tape, type Var, type Vec,
} from '../src/index.ts';
import { pooledTapes } from '../src/transforms.ts';
import { firstHandle } from '../src/tape.ts';
import { BACKENDS, tapeOn } from './support.ts';

type ErrorClass = new (...args: never[]) => TapegradError;

function thrownBy(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, none was thrown');
}

function expectError(action: () => unknown, kind: ErrorClass, code: TapegradError['code'], message: RegExp): TapegradError {
  const error = thrownBy(action);
  expect(error).toBeInstanceOf(kind);
  expect((error as TapegradError).code).toBe(code);
  expect((error as TapegradError).name).toBe(kind.name);
  expect((error as Error).message).toMatch(message);
  return error as TapegradError;
}

/** log(x1) + x1 x2 - sin(x2) at (2, 5) has gradient (1/2 + 5, 2 - cos 5), on either API. */
function expectUsable(tape: Tape): void {
  const x1 = tape.variable(2), x2 = tape.variable(5);
  const f = x1.log().add(x1.mul(x2)).sub(x2.sin());
  const g = tape.gradient(f, [x1, x2]);
  expect(g[0]).toBe(5.5);
  expect(g[1]).toBeCloseTo(2 - Math.cos(5), 14);
  const h = tape.handles;
  const hx = h.variable(3);
  const hy = h.mul(h.exp(hx), hx);
  h.backward(hy);
  expect(h.grad(hx)).toBeCloseTo(4 * Math.exp(3), 12);
}

// Things that are not numbers, and how the message should name them.
const NOT_NUMBERS: ReadonlyArray<[unknown, RegExp]> = [
  ['1', /string "1"/], [undefined, /undefined/], [{}, /object/], [null, /null/], [1n, /bigint 1/],
  [[1], /array/], [true, /boolean true/],
];

describe.each(BACKENDS)('errors (%s)', (backend) => {
  it('a Var used after reset() throws StaleHandleError, wherever it is used', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(2);
    const y = x.exp();
    tape.backward(y);
    tape.reset();
    const z = tape.variable(1);
    const uses: Array<() => unknown> = [
      () => x.value, () => y.grad, () => x.sin(), () => x.add(z), () => z.mul(y), () => x.pow(2),
      () => tape.backward(y), () => tape.gradient(z, [x]), () => tape.gradient(x, [z]),
      () => tape.select(x, z, 1), () => tape.select(z, 1, y),
    ];
    for (const use of uses) expectError(use, StaleHandleError, 'STALE_HANDLE', /before tape\.reset\(\)/);
    expectUsable(tape);
  });

  it('a Var from another tape throws ForeignHandleError, on the same backend or the other', async () => {
    const tape = await tapeOn(backend);
    for (const otherBackend of BACKENDS) {
      const other = await tapeOn(otherBackend);
      const alien = other.variable(3);
      const x = tape.variable(2);
      const uses: Array<() => unknown> = [
        () => x.add(alien), () => x.pow(alien), () => x.atan2(alien), () => tape.backward(alien),
        () => tape.gradient(x, [alien]), () => tape.select(alien, x, 1), () => tape.select(x, alien, 1),
      ];
      for (const use of uses) expectError(use, ForeignHandleError, 'FOREIGN_HANDLE', /another tape/);
      // And the other way round: the alien's tape rejects ours.
      expectError(() => alien.mul(x), ForeignHandleError, 'FOREIGN_HANDLE', /another tape/);
      expectUsable(other);
    }
    expectUsable(tape);
  });

  it('a non-number value throws NotANumberError naming what it got: variable, constant, operands, seed', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    for (const [bad, named] of NOT_NUMBERS) {
      const x = tape.variable(2);
      const f = x.square();
      const hx = h.variable(1);
      const uses: Array<() => unknown> = [
        () => tape.variable(bad as number), () => tape.constant(bad as number),
        () => tape.variables([1, bad as number]),
        () => x.add(bad as number), () => x.mul(bad as number), () => x.pow(bad as number),
        () => x.hypot(bad as number), () => tape.select(bad as number, x, 1), () => tape.select(x, bad as number, 1),
        () => h.variable(bad as number), () => h.constant(bad as number), () => h.powConst(hx, bad as number),
      ];
      // An undefined seed is an omitted seed (default 1), as for any optional parameter.
      if (bad !== undefined) {
        uses.push(() => tape.backward(f, bad as number), () => tape.gradient(f, [x], bad as number), () => h.backward(hx, bad as number));
      }
      for (const use of uses) expectError(use, NotANumberError, 'NOT_A_NUMBER', named);
    }
    const x = tape.variable(2);
    tape.backward(x.mul(3), undefined);
    expect(x.grad).toBe(3);
    expectUsable(tape);
  });

  // A probe: entries were checked, then read again to copy them, and an accessor ran between.
  // A getter recording a Var took the first input's node (inputs [100, 2, 3], y 209); a valueOf
  // growing the element regions sent a vector's copy to the old ones ([1, 0, 0]); an entry that
  // turned BigInt threw a raw TypeError with a vector's nodes recorded.
  it('array-likes are read once, each entry checked as it is copied', async () => {
    const tape = await tapeOn(backend);
    const side: Var[] = [];
    const withGetter = (): ArrayLike<number> => ({ length: 3, 0: 1, 2: 3, get 1() { side.push(tape.variable(100)); return 2; } });
    for (const record of [(xs: ArrayLike<number>) => tape.variables(xs), (xs: ArrayLike<number>) => Array.from(tape.handles.variables(xs), (h) => tape.handles.toVar(h))]) {
      tape.reset();
      side.length = 0;
      const out = record(withGetter());
      const y = out[0]!.mul(out[1]!).add(out[2]!.square());
      tape.backward(y);
      expect([out.map((v) => v.value), y.value, out.map((v) => v.grad)]).toEqual([[1, 2, 3], 11, [2, 1, 6]]);
      expect(side.map((v) => v.value)).toEqual([100]);
      expect(side.some((v) => out.some((o) => o.id === v.id))).toBe(false);
    }
    tape.reset();
    let reads = 0;
    const moving = { length: 3, 0: 1, 2: 3, get 1() { reads++; tape.vector(new Float64Array(200_000).fill(0.5)); return 2; } };
    expect(Array.from(tape.vector(moving).value)).toEqual([1, 2, 3]);
    expect(reads).toBe(1);
    let calls = 0;
    const turning = { length: 2, 0: 1, get 1() { return calls++ === 0 ? 2 : 3n; } } as unknown as number[];
    for (const make of [() => tape.vector(turning), () => tape.constantVector(turning), () => tape.variables(turning)]) {
      calls = 0;
      const size = tape.size;
      const v = make() as { value: unknown } | Var[];
      expect(Array.isArray(v) ? v.map((x) => x.value) : Array.from(v.value as Float64Array)).toEqual([1, 2]);
      expect(tape.size).toBeGreaterThan(size);
      calls = 1;
      const before = tape.size;
      expect(thrownBy(make)).toBeInstanceOf(NotANumberError);
      expect(tape.size).toBe(before);
    }
  });

  // A worker_threads probe: an array whose buffer was transferred away (or a fixed view over a
  // resizable buffer shrunk under it) reads as empty, and copying it was V8's raw TypeError, after
  // a vector's nodes were recorded; the transforms and a batch of no rows alike.
  it('an array whose buffer is detached or out of bounds is INVALID_ARGUMENT, naming the call, and records nothing', async () => {
    const tape = await tapeOn(backend);
    const kept = tape.variable(2), y = kept.mul(kept);
    const detached = (): Float64Array => {
      const a = new Float64Array(3);
      structuredClone(a.buffer, { transfer: [a.buffer] });
      return a;
    };
    const gone = /^(.*): the array's buffer is detached or out of bounds \(transferred to a worker, or a resizable buffer shrunk under it\); pass an array whose buffer is still here$/;
    const vec = tape.vector([1, 2]), indices = Int32Array.of(0, 1);
    structuredClone(indices.buffer, { transfer: [indices.buffer] });
    const size = tape.size;
    const calls: [string, () => unknown][] = [
      ['variables: input', () => tape.variables(detached())],
      ['vector', () => tape.vector(detached())],
      ['constant vector', () => tape.constantVector(detached())],
      ['handles.variables: input', () => tape.handles.variables(detached())],
      ['grad: the input', () => grad((x: Var[]) => x[0]!, { backend })(detached())],
      ['jacobian: the input', () => jacobian((x: Var[]) => [x[0]!], detached(), { backend })],
      ['gradientBatch: 0 rows of 2 inputs', () => compile((x: Var[]) => x[0]!.mul(x[1]!), { inputs: 2, backend }).gradientBatch(detached(), 0)],
      ['finiteDifferenceGradient: the point', () => finiteDifferenceGradient((x: Float64Array) => x.length, detached())],
      ['gather: the indices', () => vec.gather(indices)],
      ['normwiseError: g', () => normwiseError(detached(), [])],
      ['handles.gradient: the handles', () => tape.handles.gradient(y.id, detached())],
      // A browser probe: these said "has 0 entries", and fromBytes "truncated: 0 bytes".
      ['gradient: the input', () => compile((x: Var[]) => x[0]!.mul(x[1]!), { inputs: 2, backend }).gradient(detached())],
      ['hvp: the direction', () => compile((x: Var[]) => x[0]!.mul(x[1]!), { inputs: 2, backend }).hvp([1, 2], detached())],
      ['jvp: the tangent', () => jvp((x: Var[]) => x[0]!.mul(x[1]!), [1, 2], detached(), { backend })],
      ['fromBytes', () => { const bytes = compile((x: Var[]) => x[0]!.sin(), { inputs: 1, backend, at: [1] }).toBytes(); structuredClone(bytes.buffer, { transfer: [bytes.buffer] }); return fromBytes(bytes, { backend }); }],
    ];
    // A fixed view over a resizable buffer (ES2024; the project's lib is older), shrunk under it.
    const Resizable = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer & { resize(length: number): void };
    const resizable = new Resizable(24, { maxByteLength: 64 }), fixed = new Float64Array(resizable, 8, 2);
    resizable.resize(8);
    calls.push(['variables: input', () => tape.variables(fixed)]);
    for (const [what, call] of calls) {
      expect(call, what).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(gone) }));
      let message = '';
      try { call(); } catch (e) { message = (e as Error).message; }
      expect(gone.exec(message)?.[1], what).toBe(what);
      expect(tape.size, what).toBe(size);
    }
    // An empty array of its own is no error.
    expect(tape.variables(new Float64Array(0))).toEqual([]);
    expect(tape.gradient(y, [kept])[0]).toBe(4);
  });

  // A probe: an entry's getter that reset the tape part-way through vjp, jvp, hvp or gather let
  // the call go on with the nodes it had checked, and read the reset tape's memory (no error; the
  // engines returned different numbers, gather a live Vec of zeros).
  it('an argument whose accessor resets the tape is refused, and the tape records again', async () => {
    const tape = await tapeOn(backend);
    const resetting = <T,>(items: readonly T[]): T[] => {
      const list = items.slice();
      Object.defineProperty(list, items.length - 1, { get() { tape.reset(); return items[items.length - 1]; } });
      return list;
    };
    const fresh = (): [Var, Var, Var] => {
      tape.reset();
      const a = tape.variable(2), b = tape.variable(3);
      return [a, b, a.mul(b).mul(a)];
    };
    const calls: [string, (a: Var, b: Var, y: Var) => unknown][] = [
      ['vjp', (a, b, y) => tape.vjp([y], [1], resetting([a, b]))],
      ['vjp', (a, b, y) => tape.vjp([y], resetting([1]), [a, b])],
      ['jvp', (a, b, y) => tape.jvp(resetting([a, b]), [1, 0], [y])],
      ['jvp', (a, b, y) => tape.jvp([a, b], resetting([1, 0]), [y])],
      ['hvp', (a, b, y) => tape.hvp(y, resetting([a, b]), [1, 0])],
      ['hvp', (a, b, y) => tape.hvp(y, [a, b], resetting([1, 0]))],
      ['gradient', (a, b, y) => tape.gradient(y, resetting([a, b]))],
    ];
    for (const [name, call] of calls) {
      const [a, b, y] = fresh();
      expectError(() => call(a, b, y), StaleHandleError, 'STALE_HANDLE', new RegExp(`^${name}: `));
      const [a2, b2, y2] = fresh();
      expect(Array.from(tape.vjp([y2], [1], [a2, b2]))).toEqual([12, 4]);
      expect(Array.from(tape.jvp([a2, b2], [1, 0], [y2]))).toEqual([12]);
      expect(Array.from(tape.hvp(y2, [a2, b2], [1, 0]))).toEqual([6, 4]);
    }
    tape.reset();
    const v = tape.vector([10, 20, 30]);
    expectError(() => v.gather(resetting([0, 2])), StaleHandleError, 'STALE_HANDLE', /^gather: .*reset/);
    expect(tape.size).toBe(0);
    // An index read once: the getter's second value never reaches the node.
    let reads = 0;
    const moving = { length: 2, 0: 0, get 1() { return reads++ === 0 ? -1 : 5; } };
    const w = tape.vector([10, 20, 30]);
    expect(Array.from(w.gather(moving).value)).toEqual([10, 30]);
    expect(reads).toBe(1);
    expectUsable(tape);
  });

  // A probe: `some` skips holes, so [6, ,] passed as a shape; its transpose had no elements and
  // summed to 0 (21 expected), and its bytes did not load.
  it('a shape with a hole is refused as a dimension that is no number', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([1, 2, 3, 4, 5, 6]);
    // eslint-disable-next-line no-sparse-arrays
    const holey = [6, , ] as unknown as number[];
    expect(holey.length).toBe(2);
    expectError(() => v.reshape(holey), NotANumberError, 'NOT_A_NUMBER', /^reshape: .*\[6, undefined\]/);
    // eslint-disable-next-line no-sparse-arrays
    expectError(() => tape.constantVector([1, 2, 3], [1, , 3] as unknown as number[]), NotANumberError, 'NOT_A_NUMBER', /shape/);
    expect(v.reshape([6, 1]).T.sum().value).toBe(21);
    // A review: read whole, a sparse array of 2^31 slots would have been copied; past 64
    // dimensions a shape is refused unread.
    expectError(() => v.reshape(new Array(2 ** 31)), TapegradError, 'INVALID_ARGUMENT', /^reshape: a shape is an array of non-negative integers, got an array/);
    expectUsable(tape);
  });

  // A probe: with the number first, a stale or foreign Var's message named no op; the transforms'
  // missing directions and a compiled function's output of another tape named no call.
  it('messages begin with the op or call: number-first free functions, directions, compiled outputs', async () => {
    const tape = await tapeOn(backend);
    const stale = tape.variable(1);
    tape.reset();
    tape.variable(0);
    const free = { add, sub, mul, div, pow, atan2, min, max, hypot, lt, le, gt, ge, eq } as Record<string, (c: number, y: Var) => unknown>;
    for (const [name, f] of Object.entries(free)) expectError(() => f(2, stale), StaleHandleError, 'STALE_HANDLE', new RegExp(`^${name}: Var #`));
    const id = (x: Var[]): Var => x[0]!;
    expectError(() => jvp(id, [1], undefined as unknown as number[]), NotANumberError, 'NOT_A_NUMBER', /^jvp: the tangent must be/);
    expectError(() => vjp(id, [1], undefined as unknown as number[]), NotANumberError, 'NOT_A_NUMBER', /^vjp: the cotangent must be/);
    expectError(() => hvp(id, [1], undefined as unknown as number[]), NotANumberError, 'NOT_A_NUMBER', /^hvp: the direction must be/);
    const other = await tapeOn(backend), foreign = other.variable(1);
    expectError(() => compile(() => foreign, { inputs: 1, backend }).gradient([1]), ForeignHandleError, 'FOREIGN_HANDLE', /^compile: the function's output: Var #/);
    expectUsable(tape);
  });

  // A new-user probe's JAX and plain-JavaScript habits: each message says what to write instead.
  it('habits from other libraries get messages that say what to write', async () => {
    const tape = await tapeOn(backend), x = tape.variable(2);
    const boolean = /^select: the condition is boolean (true|false), as a JavaScript comparison such as x > 0 gives, which compares values off the tape: record it with x\.gt\(0\), or choose the branch with \?:$/;
    for (const call of [() => where((x.value > 0) as unknown as Var, x, x.neg()), () => where(true as unknown as number, 1, 2), () => tape.select(true as unknown as Var, x, 0)]) {
      expectError(call, NotANumberError, 'NOT_A_NUMBER', boolean);
    }
    // JSON gives a Var's and a Vec's text, as String does (a raw TypeError about the tape's
    // circular structure before; an error instead would end a program logging with %j).
    expect(JSON.stringify({ loss: x })).toBe(`{"loss":"Var(#${x.id})"}`);
    const v = tape.vector([1, 2]);
    expect(JSON.stringify([v])).toBe(`["Vec(#${~v.id}, shape [2])"]`);
    expectError(() => grad((v: Var) => [v.square()] as unknown as Var, { backend })(3), TapegradError, 'INVALID_ARGUMENT', /^grad: the function returned an array of 1; grad needs one scalar output: return the Var itself \(y, not \[y\]\)$/);
    // On either side of the op, and for compile too; not for a Var kept from a finished transform.
    const captured = (who: string, kind = 'Var'): RegExp => new RegExp(`belongs to another tape .*: f uses a ${kind} of the caller's tape beside its own, and ${who} records f on a tape of its own; make the caller's value an input of f, or use its number \\(\\.value\\)$`);
    expectError(() => grad((v: Var) => v.mul(x), { backend })(3), ForeignHandleError, 'FOREIGN_HANDLE', captured('the transform'));
    // A Vec is named as one (it said "a Var").
    const W = tape.vector([1, 2]);
    expectError(() => grad((u: Vec) => u.mul(W).sum(), { backend, vector: true })([3, 4]), ForeignHandleError, 'FOREIGN_HANDLE', captured('the transform', 'Vec'));
    expectError(() => grad((v: Var) => x.mul(v), { backend })(3), ForeignHandleError, 'FOREIGN_HANDLE', captured('the transform'));
    expectError(() => compile((v: Var[]) => v[0]!.mul(x), { inputs: 1, backend }).gradient([3]), ForeignHandleError, 'FOREIGN_HANDLE', captured('compile'));
    // A transform nested in a transform's f (a GradBench probe's saddle): not the advice to use
    // .value, which made the outer derivative 0, but that transforms do not nest.
    const nested = /belongs to another tape .*: transforms do not nest \(an inner transform's f used a Var of an enclosing one, or one kept from an earlier transform\), and its \.value would be a constant, whose derivative is 0; for second order use hvp, hessian, or a custom function whose rules call transforms$/;
    expectError(() => grad((u: Var) => grad((w: Var) => u.mul(w.square()), { backend })(1), { backend })(3), ForeignHandleError, 'FOREIGN_HANDLE', nested);
    expectError(() => grad((u: Var) => grad((w: Var) => w.square().mul(u), { backend })(1), { backend })(3), ForeignHandleError, 'FOREIGN_HANDLE', nested);
    let kept: Var | null = null;
    grad((v: Var) => (kept = v).square(), { backend })(3);
    expectError(() => x.mul(kept!), ForeignHandleError, 'FOREIGN_HANDLE', /operands must come from the same tape$/);
    expectError(() => compile((v: Var[]) => Math.sin(v[0]!.value) as unknown as Var, { inputs: 1, backend }).gradient([1]), TapegradError, 'INVALID_ARGUMENT', /for arithmetic use the ops \(x\.sin\(\), x\.mul\(2\)\): Math functions and operators on a Var compute on its value\.$/);
    expectUsable(tape);
  });

  it('a number where a Var is expected is not reported as if a number would do', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(2);
    for (const use of [() => tape.backward(2 as unknown as Var), () => tape.gradient(x, [2 as unknown as Var])]) {
      const error = expectError(use, NotANumberError, 'NOT_A_NUMBER', /Var/);
      expect(error.message).not.toMatch(/or a number, got number/);
    }
    expectUsable(tape);
  });

  it('NaN and Infinity are numbers: accepted as values, operands and seeds, and propagate', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(NaN);
    const y = x.mul(2);
    tape.backward(y);
    expect(y.value).toBeNaN();
    expect(x.grad).toBe(2);

    const big = tape.variable(Infinity);
    const e = big.exp();
    tape.backward(e);
    expect(e.value).toBe(Infinity);
    expect(big.grad).toBe(Infinity);

    const z = tape.variable(3);
    const sum = z.add(NaN).add(tape.constant(-Infinity)).add(z.mul(Infinity));
    expect(sum.value).toBeNaN();
    tape.backward(sum);
    expect(z.grad).toBe(Infinity);
    tape.backward(z.mul(2), NaN);
    expect(z.grad).toBeNaN();
    tape.backward(z.mul(2), -Infinity);
    expect(z.grad).toBe(-Infinity);

    const h = tape.handles;
    const hn = h.variable(NaN);
    expect(h.value(h.powConst(hn, Infinity))).toBeNaN();
    expectUsable(tape);
  });

  it('the handle API rejects unknown and non-integer handles with InvalidHandleError', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const hx = h.variable(2);
    const hy = h.sin(hx);
    h.backward(hy);
    for (const bad of [hy + 1, hy + 1000, -1, hx + 0.5, NaN, Infinity, -Infinity, 2 ** 40]) {
      const uses: Array<() => unknown> = [
        () => h.value(bad), () => h.grad(bad), () => h.backward(bad), () => h.exp(bad), () => h.add(bad, hx),
        () => h.mul(hx, bad), () => h.powConst(bad, 2), () => h.select(hx, bad, hy), () => h.toVar(bad),
      ];
      for (const use of uses) expectError(use, InvalidHandleError, 'INVALID_HANDLE', /handle/);
    }
    expect(h.grad(hx)).toBeCloseTo(Math.cos(2), 15);
    expectUsable(tape);
  });

  it('the handle API rejects handles from before reset() with StaleHandleError', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const old = h.variable(2);
    const oldY = h.exp(old);
    tape.reset();
    const fresh = h.variable(1);
    const uses: Array<() => unknown> = [
      () => h.value(old), () => h.grad(oldY), () => h.backward(oldY), () => h.exp(old), () => h.add(fresh, old),
      () => h.powConst(old, 2), () => h.select(fresh, old, fresh), () => h.toVar(old),
    ];
    for (const use of uses) expectError(use, StaleHandleError, 'STALE_HANDLE', /before tape\.reset\(\)/);
    expectUsable(tape);
  });

  // The first tape of a process once handed out 0, 1, 2…: h.mul(x, 1), meant as x times 1, read
  // the second input. And a number below the live range that this tape never handed out was
  // reported as recorded before reset().
  it('small numbers are no handles, and a handle this tape never had is not called stale', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    expectError(() => h.value(0), InvalidHandleError, 'INVALID_HANDLE', /it holds no nodes yet/);
    const x = h.variable(5);
    h.variable(7);
    for (const small of [0, 1, 2, 3]) expectError(() => h.mul(x, small), InvalidHandleError, 'INVALID_HANDLE', /not a node of this tape/);
    tape.reset();
    const fresh = h.variable(1);
    expectError(() => h.exp(x), StaleHandleError, 'STALE_HANDLE', /before tape\.reset\(\)/);
    expectError(() => h.exp(x - 1), InvalidHandleError, 'INVALID_HANDLE', new RegExp(`live handles are ${fresh}\\.\\.${fresh}`));
    expectError(() => h.vec.exp(~(x - 1)), InvalidHandleError, 'INVALID_HANDLE', /not a vector handle of this tape/);
    expectUsable(tape);
  });

  // indexOfHandle subtracts before it checks the type, so '3', null, true and [3] coerce to the
  // numbers 3, 0, 1 and 3 and are taken as live handles.
  it('a handle that is not a number is rejected, not coerced', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const handles = [h.variable(1), h.variable(2), h.variable(3)];
    for (const bad of [String(handles[1]), [handles[1]], null, true, { valueOf: () => handles[1] }]) {
      for (const use of [() => h.value(bad as number), () => h.exp(bad as number), () => h.add(handles[0]!, bad as number)]) {
        expectError(use, NotANumberError, 'NOT_A_NUMBER', /expected a handle/);
      }
    }
    expectUsable(tape);
  });

  it('the handle API rejects a handle from the next tape', async () => {
    const tape = await tapeOn(backend);
    const next = await tapeOn(backend);
    const mine = tape.handles.variable(1);
    const theirs = next.handles.variable(2);
    // Which side of this tape's range the other's handles fall on depends on how many tapes came
    // before (their offsets are scattered): above it they are not nodes of this tape, below it
    // they may be from before a reset or from another tape. Either way they are refused.
    expect(() => tape.handles.exp(theirs)).toThrow(/not a node of this tape|or on another tape/);
    expect(() => next.handles.exp(mine)).toThrow(/not a node of this tape|or on another tape/);
    expectUsable(tape);
    expectUsable(next);
  });

  // Tapes start their handle ranges at scattered offsets; a regular stride once made every 48th
  // tape hand out the same handles, so a raw handle of one was taken as a node of the other.
  it('the handle API rejects a handle from a tape created 48 tapes later', async () => {
    const tape = await tapeOn(backend);
    const mine = tape.handles.variable(1);
    const between = [];
    for (let k = 0; k < 47; k++) between.push(await tapeOn('js'));
    const later = await tapeOn(backend);
    later.handles.variable(2);
    expect(() => later.handles.value(mine)).toThrow(TapegradError);
    expect(() => tape.handles.exp(later.handles.variable(3))).toThrow(TapegradError);
    expect(between).toHaveLength(47);
  });

  // A probe: the golden ratio's multiples of Fibonacci serials lie next to integers, and the
  // 514,229th tape of a process started its range at handle 700 (the 102,334,155th at 0), where
  // h.mul(x, 1000) took the number as node 300. Ranges start from 2^20, as restarted ones do.
  it('no tape starts its handle range below 2^20, the Fibonacci serials included', () => {
    const fibonacci = [1, 2];
    while (fibonacci.length < 45) fibonacci.push(fibonacci.at(-1)! + fibonacci.at(-2)!);
    for (const serial of [...fibonacci, ...Array.from({ length: 1000 }, (_, k) => k + 1)]) {
      expect(firstHandle(serial), `serial ${serial}`).toBeGreaterThanOrEqual(2 ** 20);
      expect(firstHandle(serial), `serial ${serial}`).toBeLessThan(2 ** 30 - 2 ** 28);
    }
    expect(firstHandle(514_229) - firstHandle(514_228)).not.toBe(0);
  });

  it('maxNodes: filling the tape throws CapacityError naming the limit; after reset() it works again', async () => {
    const maxNodes = 5000;
    const tape = await tapeOn(backend, { maxNodes });
    const start = tape.variable(0.5);
    let x = start;
    const full = expectError(() => {
      for (;;) x = x.sin();
    }, CapacityError, 'CAPACITY', /maxNodes = 5000/);
    expect((full as CapacityError).limit).toBe(maxNodes);
    expect(full.message).toMatch(/reset\(\)/);
    expect(tape.size).toBe(maxNodes);
    // The nodes recorded before the limit are intact.
    tape.backward(x);
    let v = 0.5, dv = 1;
    for (let k = 1; k < maxNodes; k++) {
      dv *= Math.cos(v);
      v = Math.sin(v);
    }
    expect(Math.abs(x.value - v) / v).toBeLessThan(1e-12);
    expect(Math.abs(start.grad - dv) / dv).toBeLessThan(1e-12);
    expectError(() => x.cos(), CapacityError, 'CAPACITY', /maxNodes/);
    expectError(() => tape.variables([1]), CapacityError, 'CAPACITY', /maxNodes/);
    expectError(() => tape.handles.variable(1), CapacityError, 'CAPACITY', /maxNodes/);
    tape.reset();
    expectUsable(tape);
  });

  it('maxMemoryBytes: filling the tape throws CapacityError naming the limit; after reset() it works again', async () => {
    const maxMemoryBytes = 100_000;
    const tape = await tapeOn(backend, { maxMemoryBytes });
    const h = tape.handles;
    let hx = h.variable(1);
    expectError(() => {
      for (;;) hx = h.cos(hx);
    }, CapacityError, 'CAPACITY', /maxMemoryBytes = 100000/);
    expect(tape.size).toBe(Math.floor(maxMemoryBytes / tape.nodeBytes));
    expect(tape.size * tape.nodeBytes).toBeLessThanOrEqual(maxMemoryBytes);
    // The whole budget is usable again, not just what was left.
    tape.reset();
    hx = h.variable(1);
    while (tape.size < Math.floor(maxMemoryBytes / tape.nodeBytes)) hx = h.cos(hx);
    tape.reset();
    expectUsable(tape);
  });

  // CapacityError documents "Nothing was recorded", but an op with a number operand records the
  // constant first and only then finds no room for the op itself.
  it('a CapacityError leaves the tape as it was, also for an op with a number operand', async () => {
    const tape = await tapeOn(backend, { maxNodes: 8 });
    let x = tape.variable(1);
    while (tape.size < 7) x = x.sin();
    expectError(() => x.add(2), CapacityError, 'CAPACITY', /maxNodes = 8/);
    expect(tape.size).toBe(7);
    expectError(() => tape.handles.powConst(x.id, 2), CapacityError, 'CAPACITY', /maxNodes = 8/);
    expect(tape.size).toBe(7);
    expectError(() => tape.select(x, 1, 2), CapacityError, 'CAPACITY', /maxNodes = 8/);
    expect(tape.size).toBe(7);
  });

  it("reading a gradient before any backward throws TapegradError 'NO_GRADIENT'", async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const x = tape.variable(2);
    const hx = h.variable(3);
    expectError(() => x.grad, TapegradError as ErrorClass, 'NO_GRADIENT', /backward/);
    expectError(() => h.grad(hx), TapegradError as ErrorClass, 'NO_GRADIENT', /backward/);
    tape.backward(x.square());
    expect(x.grad).toBe(4);
    // A reset forgets the sweep too.
    tape.reset();
    const y = tape.variable(2);
    expectError(() => y.grad, TapegradError as ErrorClass, 'NO_GRADIENT', /backward/);
    expectUsable(tape);
  });

  it('gradient(y, wrt, seed, out) writes into out, zeros included; a short or wrong out is refused', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(2), v = tape.vector([1, 2, 3]), c = tape.constantVector([4, 5]);
    const y = v.mul(x).sum().add(x.square());
    const expected = tape.gradient(y, [x, v, c], 2);
    const out = new Float64Array(7).fill(NaN);
    expect(tape.gradient(y, [x, v, c], 2, out)).toBe(out);
    expect(Array.from(out)).toEqual([...expected, NaN]);
    expect(Array.from(expected)).toEqual([2 * (6 + 4), 4, 4, 4, 0, 0]);
    expectError(() => tape.gradient(y, [x, v, c], 1, new Float64Array(5)), TapegradError as ErrorClass, 'INVALID_ARGUMENT', /at least 6 numbers, got an object \(Float64Array\) of length 5/);
    expectError(() => tape.gradient(y, [x], 1, [0] as never), TapegradError as ErrorClass, 'INVALID_ARGUMENT', /Float64Array/);
    expectUsable(tape);
  });
});

// A process of its own: the first tape it creates.
it("the first tape of a process hands out no small handles (h.mul(x, 1) is not x times x's neighbour)", () => {
  const script = `
const { createTape } = await import('./dist/index.js');
const h = (await createTape()).handles;
const x = h.variable(5);
h.variable(7);
try { h.mul(x, 1); console.log('accepted', x); } catch (e) { console.log(e.code, x); }`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../', import.meta.url)), encoding: 'utf8' });
  expect(child.stderr).toBe('');
  const [code, first] = child.stdout.trim().split(' ');
  expect(code).toBe('INVALID_HANDLE');
  expect(Number(first)).toBeGreaterThan(1000);
});

// They were NOT_A_NUMBER, and a fractional maxNodes was taken.
it('limits out of range are INVALID_ARGUMENT naming the option, on createTape and fromBytes', async () => {
  const { createTape, createTapeSync, fromBytes, compile, init } = await import('../src/index.ts');
  await init();
  const bytes = compile((x: Var[]) => x[0]!.exp(), { inputs: 1, at: [0] }).toBytes();
  for (const [name, value] of [['maxNodes', -1], ['maxNodes', 0], ['maxNodes', NaN], ['maxNodes', 1.5], ['maxMemoryBytes', -5], ['maxMemoryBytes', NaN], ['maxMemoryBytes', 0.5]] as const) {
    for (const backend of BACKENDS) {
      const error = await createTape({ backend, [name]: value }).then(() => null, (e: unknown) => e);
      expect(error, `${name}: ${value}`).toBeInstanceOf(TapegradError);
      expect((error as TapegradError).code).toBe('INVALID_ARGUMENT');
      // Named by the call, as every option's error is (a probe: these alone named none).
      expect((error as Error).message).toBe(`createTape: ${name} must be a positive integer (or Infinity), got number ${value}`);
      expect(() => createTapeSync({ backend, [name]: value })).toThrow(`createTapeSync: ${name} must be a positive integer`);
      expect(() => fromBytes(bytes, { backend, [name]: value })).toThrow(`fromBytes: ${name} must be a positive integer`);
    }
  }
  // A limit below one node (a probe: 1 to 24 bytes were taken, and the first variable's
  // CapacityError advised a reset that could not help).
  for (const backend of BACKENDS) {
    for (const value of [1, 24]) {
      const error = await createTape({ backend, maxMemoryBytes: value }).then(() => null, (e: unknown) => e);
      expect((error as TapegradError).code, `${backend} ${value}`).toBe('INVALID_ARGUMENT');
      expect((error as Error).message).toBe(`createTape: maxMemoryBytes = ${value} holds no node: a node takes 25 bytes`);
      expect(() => fromBytes(bytes, { backend, maxMemoryBytes: value })).toThrow(`fromBytes: maxMemoryBytes = ${value} holds no node`);
    }
    expect((await createTape({ backend, maxMemoryBytes: 25 })).variable(3).value).toBe(3);
  }
  const tape = await createTape({ maxNodes: Infinity, maxMemoryBytes: 1 << 20 });
  expect(tape.variable(2).exp().value).toBe(Math.exp(2));
});

// MissingRuleError and the GRADCHECK_FAILED code were missing from the table.
it("README's Errors table has a row for every code and every error class, with the class's code", async () => {
  const api = await import('../src/index.ts');
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const table = readme.slice(readme.indexOf('### Errors'), readme.indexOf('### Memory'));
  const rows = [...table.matchAll(/^\| `(\w+)`[^|]*\| `(\w+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
  const source = readFileSync(new URL('../src/errors.ts', import.meta.url), 'utf8');
  const codes = [.../export type TapegradErrorCode = ([^\n]+)/.exec(source)![1]!.matchAll(/'(\w+)'/g)].map((m) => m[1]!);
  expect(codes).toContain('GRADCHECK_FAILED');
  expect(new Set(rows.map((r) => r.split(' ')[1]))).toEqual(new Set(codes));
  const classes = (Object.values(api) as unknown[]).filter((v): v is new (message: string) => TapegradError => typeof v === 'function' && v.prototype instanceof TapegradError);
  expect(classes.map((c) => c.name)).toContain('MissingRuleError');
  for (const Class of classes) expect(rows, Class.name).toContain(`${Class.name} ${new Class('m').code}`);
});

// A probe: non-numbers as slice bounds, gather indices, a batch's row count or among a stack's
// Vecs were INVALID_ARGUMENT (or a ShapeError showing them as scalars), where README's errors
// table promises NOT_A_NUMBER for anything but a number where one is expected, an index
// included; numbers that are no integers stay INVALID_ARGUMENT.
describe.each(BACKENDS)('non-numbers as indices and counts are NOT_A_NUMBER (%s)', (backend) => {
  it('slice, gather, stack, a batch\'s rows', async () => {
    const { compile, init } = await import('../src/index.ts');
    await init();
    const tape = await tapeOn(backend);
    const v = tape.vector([10, 20, 30, 40]);
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!), { inputs: 2, backend });
    const size = tape.size;
    const notNumbers: [string, () => unknown][] = [
      ['slice', () => v.slice('1' as never)], ['slice', () => v.slice(0, 2n as never)], ['gather', () => v.gather(['1'] as never)],
      ['gather', () => v.gather([undefined] as never)], ['stack', () => tape.stack([v, 'a'] as never)], ['stack', () => tape.stack([v, null] as never)],
      ['gradientBatch', () => f.gradientBatch([1, 2], '1' as never)],
    ];
    for (const [name, action] of notNumbers) expectError(action, NotANumberError, 'NOT_A_NUMBER', new RegExp(`^${name}: `));
    for (const [name, action] of [['slice', () => v.slice(1.5)], ['gather', () => v.gather([1.5])], ['gradientBatch', () => f.gradientBatch([1, 2], 1.5)]] as const) {
      expectError(action, TapegradError, 'INVALID_ARGUMENT', new RegExp(`^${name}: `));
    }
    expect(tape.size).toBe(size);
    expect(Array.from(v.slice(1, 3).value)).toEqual([20, 30]);
  });
});

// Probes: a bad operand's error named no op or call ('expected a Var or a number, got the string
// "2"'), offered numbers where none are taken, and a Var kept from an earlier transform call was
// 'recorded before tape.reset()', a reset the user never called.
describe.each(BACKENDS)('errors name the op or call, and what it takes (%s)', (backend) => {
  it('operands, lists of nodes, seeds, a transform\'s stale Var', async () => {
    const { add, grad } = await import('../src/index.ts');
    const tape = await tapeOn(backend);
    const a = tape.variable(2), v = tape.vector([1, 2]), y = v.sum();
    const cases: [() => unknown, ErrorClass, TapegradError['code'], RegExp][] = [
      [() => a.pow('2' as never), NotANumberError, 'NOT_A_NUMBER', /^pow: expected a Var or a number, got the string "2"$/],
      [() => add(a, [1, 2] as never), NotANumberError, 'NOT_A_NUMBER', /^add: expected a Var or a number, got an array$/],
      [() => tape.select(a, a, undefined as never), NotANumberError, 'NOT_A_NUMBER', /^select: expected a Var or a number, got undefined$/],
      [() => (tape.backward as (o?: unknown) => void)(), NotANumberError, 'NOT_A_NUMBER', /^backward: expected a Var, got undefined$/],
      [() => tape.hvp(a.square(), [a], [1], null as never), NotANumberError, 'NOT_A_NUMBER', /^hvp: the seed must be a number, got null$/],
      [() => tape.gradient(y, v as never), NotANumberError, 'NOT_A_NUMBER', /^gradient: expected an array of Vars and Vecs, got an object \(Vec\)$/],
      [() => tape.gradient(y, [v, undefined as never]), NotANumberError, 'NOT_A_NUMBER', /^gradient: expected a Var or a Vec, got undefined$/],
      [() => tape.gradient(y, [5 as never]), NotANumberError, 'NOT_A_NUMBER', /^gradient: expected a Var of this tape here, got the number 5$/],
      [() => tape.vjp([v], [1], [v]), TapegradError, 'INVALID_ARGUMENT', /^vjp: cotangent has 1 entry but there are 2 outputs$/],
    ];
    for (const [action, kind, code, message] of cases) expectError(action, kind, code, message);
    let kept: Var | undefined;
    grad((x: Var) => (kept = x).square(), { backend })(2);
    expectError(() => grad((x: Var) => kept!.mul(x), { backend })(3), StaleHandleError, 'STALE_HANDLE', /^mul: Var #\d+ was recorded before tape\.reset\(\) \(a transform resets its tape after each call: it is from an earlier call of a transform or gradcheck\)/);
    // Returned as an output, it is named by the transform, not by the sweep it would reach (a
    // probe read 'jvp:' from jacobian and 'gradient:' from grad).
    expectError(() => jacobian((x: Var) => [x, kept!], 1, { backend }), StaleHandleError, 'STALE_HANDLE', /^jacobian: Var #\d+ was recorded before tape\.reset\(\)/);
    expectError(() => grad(() => kept!, { backend })(1), StaleHandleError, 'STALE_HANDLE', /^grad: Var #\d+ was recorded before tape\.reset\(\)/);
    expect(Array.from(tape.gradient(y, [v]))).toEqual([1, 1]);
  });
});

// A browser probe: Chromium lets a page hold about 125 WebAssembly memories at once, one per wasm
// tape or compiled function, and the next tape was a raw RangeError, 'auto' included.
describe('a runtime that allocates no more WebAssembly memories', () => {
  it("makes 'wasm' a CapacityError that says why, and 'auto' the JS mode", async () => {
    await init();
    const Memory = WebAssembly.Memory;
    (WebAssembly as { Memory: unknown }).Memory = function refusing(): never {
      throw new RangeError('WebAssembly.Memory(): could not allocate memory');
    };
    try {
      expect(() => createTapeSync()).toThrow(expect.objectContaining({ name: 'CapacityError', code: 'CAPACITY', message: expect.stringMatching(/no WebAssembly\.Memory for another wasm tape .*browsers cap them.*backend: 'auto' }$/) }));
      await expect(createTape()).rejects.toThrow(CapacityError);
      expect(createTapeSync({ backend: 'auto' }).backend).toBe('js');
      expect((await createTape({ backend: 'auto' })).backend).toBe('js');
      expect(() => compile((x: Var[]) => x[0]!.square(), { inputs: 1 }).gradient([3])).toThrow(CapacityError);
      // With expectedNodes too: no memory at all is one too many, not one too large (a browser
      // probe at the page's cap read "expect fewer nodes", which did not help).
      expect(() => createTapeSync({ expectedNodes: 4_000_000 })).toThrow(expect.objectContaining({ code: 'CAPACITY', message: expect.stringMatching(/^no WebAssembly\.Memory for another wasm tape .*browsers cap them/) }));
      expect(createTapeSync({ backend: 'auto', expectedNodes: 4_000_000 }).backend).toBe('js');
      // So do the calls that make their own tapes when given 'auto' (they threw that CapacityError,
      // which advised 'auto': a browser probe): transforms and gradcheck with no pooled wasm tape
      // left, a compiled function's recording, fromBytes.
      for (const small of [false, true]) (pooledTapes('wasm', small) as Tape[]).length = 0;
      const f = (x: Var[]): Var => x[0]!.mul(x[1]!).sin();
      const want = grad(f, { backend: 'js' })([1, 2]);
      expect(Array.from(grad(f, { backend: 'auto' })([1, 2]))).toEqual(Array.from(want));
      expect(Array.from(hvp(f, [1, 2], [1, 0], { backend: 'auto' }))).toEqual(Array.from(hvp(f, [1, 2], [1, 0], { backend: 'js' })));
      expect(gradcheck(f, [1, 2], { backend: 'auto' }).ok).toBe(true);
      expect(Array.from(compile(f, { inputs: 2, backend: 'auto' }).gradient([1, 2]))).toEqual(Array.from(want));
      const bytes = compile(f, { inputs: 2, backend: 'js', at: [1, 2] }).toBytes();
      expect(Array.from(fromBytes(bytes, { backend: 'auto' }).gradient([1, 2]))).toEqual(Array.from(want));
      expect(() => fromBytes(bytes, { backend: 'wasm' })).toThrow(CapacityError);
    } finally {
      (WebAssembly as { Memory: unknown }).Memory = Memory;
    }
    expect(createTapeSync().backend).toBe('wasm');
    // Where only the memory expectedNodes asks for is refused, the message says that instead.
    (WebAssembly as { Memory: unknown }).Memory = function refusingLarge(descriptor: WebAssembly.MemoryDescriptor): WebAssembly.Memory {
      if (descriptor.initial > 1024) throw new RangeError('WebAssembly.Memory(): could not allocate memory');
      return new Memory(descriptor);
    };
    try {
      expect(() => createTapeSync({ expectedNodes: 4_000_000 })).toThrow(expect.objectContaining({ code: 'CAPACITY', message: expect.stringMatching(/^the runtime gave no WebAssembly\.Memory of 115 MiB for expectedNodes .*expect fewer nodes/) }));
      expect(createTapeSync().backend).toBe('wasm');
    } finally {
      (WebAssembly as { Memory: unknown }).Memory = Memory;
    }
  });
});
