// A trap in the wasm core (a WebAssembly.RuntimeError) is recovered: the façade replaces the
// instance with a fresh one, throws TapegradError 'CORE_TRAP' with the trap as its cause, and the
// tape starts over as after a reset. Traps are injected through the public objects the way a
// memory-corrupting bug would cause one: an operand id in the engine's views is pointed past the
// end of linear memory before the core reads it. (The JS backend has no traps: the same
// corruption reads `undefined` from a typed array, so these tests are wasm-only.)
import { beforeAll, describe, expect, it } from 'vitest';
import {
  Op, StaleHandleError, TapegradError, compile, createTape, defineFunction, fromBytes, init, type CompiledFunction, type Tape,
  type Var,
} from '../src/index.ts';
import type { WasmBackend } from '../src/wasm/backend.ts';

beforeAll(async () => {
  await init();
});

// An operand id whose value slot (8 bytes per id) lies 1 GiB into memory, and its SIMD lane slot
// (16 bytes per id) 2 GiB in: past the memory of every tape here (the largest grows to about
// 40 MB). Not 2^28: times 16 that is 2^32, which wraps around the 32-bit address space to an
// address inside memory, so the SIMD kernel would silently read the wrong slot instead of trapping.
const PAST_THE_END = 2 ** 27;

// A wasm function (valBase, adjBase) => void that traps: `unreachable`.
const TRAPPING = new WebAssembly.Instance(new WebAssembly.Module(Uint8Array.from([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 6, 1, 96, 2, 127, 127, 0, 3, 2, 1, 0, 7, 5, 1, 1, 102, 0, 0, 10, 5, 1, 3, 0, 0, 11,
]))).exports.f as () => void;

function trapOf(action: () => unknown): TapegradError {
  let caught: unknown = null;
  try {
    action();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(TapegradError);
  const error = caught as TapegradError;
  expect(error.code).toBe('CORE_TRAP');
  expect(error.cause).toBeInstanceOf(WebAssembly.RuntimeError);
  return error;
}

/** Points the first operand of node `v` past the end of memory. */
function corrupt(tape: Tape, v: Var): void {
  tape.engine.views.a[tape.index(v)] = PAST_THE_END;
}

// f(x1, x2) = sin(x1 x2) + e^x1, with its gradient and Hessian in closed form.
function recordF(tape: Tape, x1: number, x2: number): { x: Var[]; product: Var; f: Var } {
  const x = tape.variables([x1, x2]);
  const product = x[0]!.mul(x[1]!);
  return { x, product, f: product.sin().add(x[0]!.exp()) };
}
const fValue = (x1: number, x2: number): number => Math.sin(x1 * x2) + Math.exp(x1);
const fGradient = (x1: number, x2: number): number[] => [x2 * Math.cos(x1 * x2) + Math.exp(x1), x1 * Math.cos(x1 * x2)];
const fHessian = (x1: number, x2: number): number[][] => {
  const s = Math.sin(x1 * x2), c = Math.cos(x1 * x2);
  return [[-x2 * x2 * s + Math.exp(x1), c - x1 * x2 * s], [c - x1 * x2 * s, -x1 * x1 * s]];
};

/** Components agree to 1e-13 relative: the core's sin/cos/exp and V8's may differ in the last bit. */
function expectClose(got: ArrayLike<number>, want: readonly number[]): void {
  expect(got.length).toBe(want.length);
  want.forEach((w, k) => expect(Math.abs(got[k]! - w)).toBeLessThanOrEqual(1e-13 * Math.max(1, Math.abs(w))));
}

describe('core traps (wasm)', () => {
  it('100 traps in a row are each recovered, whichever core call traps; the 101st call is right', async () => {
    const tape = await createTape({ backend: 'wasm' });
    const engine = tape.engine as WasmBackend;
    // Each core entry point the façade wraps, trapped in turn. The corruption is applied after the
    // values are computed where the call under test must get past the forward sweep first.
    const calls: Array<(r: ReturnType<typeof recordF>) => unknown> = [
      (r) => r.f.value,
      (r) => tape.backward(r.f),
      (r) => tape.gradient(r.f, r.x),
      (r) => tape.vjp([r.f], [1], r.x),
      (r) => tape.jvp(r.x, [1, 0], [r.f]),
      (r) => tape.hvp(r.f, r.x, [0, 1]),
      (r) => tape.handles.backward(r.f.id),
    ];
    for (let k = 0; k < 100; k++) {
      tape.reset();
      const r = recordF(tape, 0.5 + k / 100, -1.25);
      if (k % calls.length !== 0) r.f.value;
      corrupt(tape, r.f);
      trapOf(() => calls[k % calls.length]!(r));
      expect(engine.traps).toBe(k + 1);
      expect(tape.size).toBe(0);
    }
    const r = recordF(tape, 0.75, 2.5);
    expect(Math.abs(r.f.value - fValue(0.75, 2.5))).toBeLessThan(1e-14);
    expectClose(tape.gradient(r.f, r.x), fGradient(0.75, 2.5));
    expectClose(tape.hvp(r.f, r.x, [1, 0]), fHessian(0.75, 2.5)[0]!);
    expect(engine.traps).toBe(100);
  });

  it('the trap message names the fault and says the tape was reset', async () => {
    const tape = await createTape({ backend: 'wasm' });
    const r = recordF(tape, 1, 2);
    corrupt(tape, r.f);
    const error = trapOf(() => r.f.value);
    expect(error.name).toBe('TapegradError');
    expect(error.message).toMatch(/trapped/);
    expect(error.message).toMatch(/reset/);
    expect(error.message).toContain((error.cause as Error).message);
  });

  it('a Var or handle recorded before a trap is stale afterwards', async () => {
    const tape = await createTape({ backend: 'wasm' });
    const h = tape.handles;
    const r = recordF(tape, 1, 2);
    tape.backward(r.f);
    const before = r.f.value;
    const hx = h.variable(3);
    const hy = h.exp(hx);
    corrupt(tape, r.f);
    trapOf(() => tape.backward(r.f));
    // `before` was read from the old instance: a number, untouched by the trap.
    expect(Math.abs(before - fValue(1, 2))).toBeLessThan(1e-14);
    const fresh = tape.variable(1);
    const uses: Array<() => unknown> = [
      () => r.x[0]!.value, () => r.f.grad, () => r.x[1]!.add(fresh), () => fresh.mul(r.product),
      () => tape.backward(r.f), () => tape.gradient(fresh, [r.x[0]!]), () => h.value(hx), () => h.exp(hy),
      () => h.backward(hy), () => h.add(h.variable(1), hx),
    ];
    for (const use of uses) expect(use).toThrow(StaleHandleError);
    expect(fresh.value).toBe(1);
  });

  it('a trap in one tape leaves every other tape, and its graph, intact', async () => {
    const victim = await createTape({ backend: 'wasm' });
    const bystanders = [await createTape({ backend: 'wasm' }), await createTape({ backend: 'js' })];
    const graphs = bystanders.map((t) => recordF(t, 0.25, 3));
    graphs.forEach((g) => g.f.value);
    const r = recordF(victim, 1, 2);
    corrupt(victim, r.f);
    trapOf(() => victim.backward(r.f));
    bystanders.forEach((t, k) => {
      expect(t.size).toBe(6);
      expectClose(t.gradient(graphs[k]!.f, graphs[k]!.x), fGradient(0.25, 3));
      expect((t.engine as Partial<WasmBackend>).traps ?? 0).toBe(0);
    });
  });

  // Errors that are not traps (a custom rule that throws) leave the instance and the tape alone.
  it('an error thrown by JS code during a sweep is not a trap: it passes through and the tape keeps its graph', async () => {
    const failing = defineFunction({
      name: 'failing',
      forward: (xs) => xs[0]! * 2,
      vjp: () => {
        throw new RangeError('rule failed');
      },
    });
    const tape = await createTape({ backend: 'wasm' });
    const x = tape.variable(3);
    const y = failing(x);
    expect(y.value).toBe(6);
    expect(() => tape.backward(y)).toThrow(RangeError);
    expect((tape.engine as WasmBackend).traps).toBe(0);
    expect(x.value).toBe(3);
    // The instance was not replaced: the graph is still there and differentiable around the rule.
    const z = x.mul(x).add(y.stopGradient());
    tape.backward(z);
    expect(x.grad).toBe(6);
    expect(z.value).toBe(15);
  });
});

describe('a compiled function whose core traps records again on its next call (wasm)', () => {
  const at = [0.75, -1.5];
  const [x1, x2] = at as [number, number];
  const g = fGradient(x1, x2);
  const H = fHessian(x1, x2);
  const f = (x: Var[]): Var => x[0]!.mul(x[1]!).sin().add(x[0]!.exp());

  /** Corrupts the operand of the compiled tape's sin node (which the interpreters read), and
   *  puts a trapping function in the slots of the generated sweeps (which never read operands:
   *  theirs are compiled in). */
  function corruptCompiled(c: CompiledFunction): void {
    const tape = c.recorded!.tape;
    const { op, a } = tape.engine.views;
    const sin = Array.from(op.subarray(0, tape.size)).indexOf(Op.sin);
    expect(sin).toBeGreaterThan(0);
    a[sin] = PAST_THE_END;
    if (c.generatedSweeps === 'active') {
      const table = (tape.engine as WasmBackend).core.table;
      // Forward and reverse; tangent, reverse tangent and hvp's fused forward tangent sweep.
      for (let slot = 1; slot <= 5; slot++) table.set(slot, TRAPPING);
    }
  }

  const methods: Array<[string, (c: CompiledFunction) => number[], () => number[]]> = [
    ['value', (c) => [c.value(at) as number], () => [fValue(x1, x2)]],
    ['gradient', (c) => Array.from(c.gradient(at)), () => g],
    ['valueAndGradient', (c) => { const [v, d] = c.valueAndGradient(at); return [v, ...d]; }, () => [fValue(x1, x2), ...g]],
    // Four rows: the batched kernel (SIMD where the core has it) runs the replay.
    ['gradientBatch', (c) => Array.from(c.gradientBatch(Float64Array.from([...at, ...at, ...at, ...at]), 4)), () => [...g, ...g, ...g, ...g]],
    ['vjp', (c) => Array.from(c.vjp(at, [-2])), () => g.map((d) => -2 * d)],
    ['jvp', (c) => Array.from(c.jvp(at, [1, 3])), () => [g[0]! + 3 * g[1]!]],
    ['hvp', (c) => Array.from(c.hvp(at, [0, 1])), () => [H[0]![1]!, H[1]![1]!]],
  ];

  it.each(methods.flatMap(([name, call, expected]) => [true, false].map((codegen) => [name, codegen, call, expected] as const)))('%s (codegen: %s)', (_name, codegen, call, expected) => {
    const compiled = compile(f, { inputs: 2, codegen });
    expectClose(call(compiled), expected());
    corruptCompiled(compiled);
    trapOf(() => call(compiled));
    expectClose(call(compiled), expected());
    // Twice: the new recording is replayed, not recorded once more.
    expectClose(call(compiled), expected());
    // A trap is not a branch change.
    expect(compiled.rerecords).toBe(0);
  });

  it('also when loaded from bytes (no JS source to record from: it reloads the bytes)', () => {
    const loaded = fromBytes(compile(f, { inputs: 2, at }).toBytes());
    expectClose(loaded.gradient(at), g);
    for (let k = 0; k < 3; k++) {
      corruptCompiled(loaded);
      trapOf(() => loaded.gradient(at));
      expectClose(loaded.gradient(at), g);
    }
  });
});

describe('views are never stale across growth', () => {
  // x = 0.5; early nodes e_k = x * k (k = 1..500), then a chain y <- y + x of n links, then
  // out = y + sum e_k. Every value and partial sum is a multiple of 0.5 below 2^53: the closed
  // forms are exact in floating point, so equality is exact.
  async function growAndCheck(tape: Tape, n: number): Promise<void> {
    const h = tape.handles;
    const x = tape.variable(0.5);
    const early: Var[] = [];
    for (let k = 1; k <= 500; k++) early.push(x.mul(k));
    // Read now: evaluated (and any cached view taken) while the tape is small.
    const earlyValues = early.map((e) => e.value);
    earlyValues.forEach((v, k) => expect(v).toBe(0.5 * (k + 1)));
    const startCapacity = tape.engine.capacity;
    let y = x;
    for (let k = 0; k < n; k++) {
      y = y.add(x);
      // Read an early value now and then while the tape grows under it.
      if ((k & 0xffff) === 0) expect(early[k % 500]!.value).toBe(0.5 * ((k % 500) + 1));
    }
    expect(tape.engine.capacity).toBeGreaterThanOrEqual(64 * startCapacity);
    let out = y;
    for (const e of early) out = out.add(e);
    const sumK = (500 * 501) / 2;
    expect(y.value).toBe(0.5 * (n + 1));
    expect(out.value).toBe(0.5 * (n + 1 + sumK));
    tape.backward(out);
    expect(x.grad).toBe(n + 1 + sumK);
    early.forEach((e, k) => {
      expect(e.value).toBe(0.5 * (k + 1));
      expect(e.grad).toBe(1);
      expect(h.value(e.id)).toBe(0.5 * (k + 1));
      expect(h.grad(e.id)).toBe(1);
    });
    // Tangents add regions and move the tape once more.
    expect(Array.from(tape.jvp([x], [1], [out, early[9]!]))).toEqual([n + 1 + sumK, 10]);
    expect(early[499]!.value).toBe(250);
    expect(Array.from(tape.hvp(out, [x], [1]))).toEqual([0]);
    expect(x.grad).toBe(n + 1 + sumK);
  }

  it.each(['wasm', 'js'] as const)('%s: from 1k to 1M nodes, early Vars read right values and gradients', async (backend) => {
    const tape = await createTape({ backend });
    await growAndCheck(tape, 1_000_000);
  });

  it('wasm: also on the fresh instance after a trap, grown again to 1M nodes', async () => {
    const tape = await createTape({ backend: 'wasm' });
    await growAndCheck(tape, 1_000_000);
    const r = recordF(tape, 1, 2);
    corrupt(tape, r.f);
    trapOf(() => tape.backward(r.f));
    // The fresh instance starts small again: the views must follow it, not the old memory.
    expect(tape.engine.capacity).toBeLessThan(1_000_000);
    await growAndCheck(tape, 1_000_000);
  });
});

// A review: a trap in a reverse sweep resets the tape, but the sweep's failure path then put the
// sweep before it back to run again, and .grad on a new recording ran that old sweep over new
// nodes (486 for a Var never swept). After a trap there is no gradient until the next sweep.
describe('a trap in a reverse sweep leaves no gradient to run again', () => {
  it('backward after a complete one: NO_GRADIENT on the new recording, not the old sweep', async () => {
    const tape = await createTape();
    const { f } = recordF(tape, 0.5, 2);
    tape.backward(f);
    const { f: g, product } = recordF(tape, 0.7, 1.5);
    expect(g.value).toBeCloseTo(fValue(0.7, 1.5), 14); // the forward sweep done: the trap is the reverse's
    corrupt(tape, product);
    trapOf(() => tape.backward(g));
    expect(tape.size).toBe(0);
    const x = tape.variable(3);
    let y = x;
    for (let k = 0; k < 5; k++) y = y.mul(x);
    expect(() => x.grad).toThrow(expect.objectContaining({ code: 'NO_GRADIENT' }));
    tape.backward(y);
    expect(x.grad).toBe(6 * 3 ** 5);
  });
});
