// Replay keeps wasm memory flat: once the tape and its scratch area exist, a million replay
// calls (and batches, tangent sweeps and re-records) grow nothing, and the values stay right.
// Memory is compared as the wasm memory size (`tape.memoryBytes`), which only ever grows.
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, createTape, init, type CompiledFunction, type Tape, type Var } from '../src/index.ts';

let reference: Tape;

beforeAll(async () => {
  await init();
  reference = await createTape();
});

/** About 100 nodes over 4 inputs: arithmetic, transcendental and a select. */
function hundredNodes(x: Var[]): Var {
  let y = x[0]!;
  for (let k = 0; k < 7; k++) {
    const xi = x[k % 4]!;
    y = y.mul(xi).sin().add(xi.square().mul(0.25)).sub(y.tanh().mul(0.5));
    y = y.tape.select(y.gt(xi), y, xi.mul(y));
  }
  return y;
}

/** A fresh recording's gradient at x, on the reference tape. */
function freshGradient(x: ArrayLike<number>, f: (x: Var[]) => Var = hundredNodes): Float64Array {
  reference.reset();
  const inputs = reference.variables(x);
  return reference.gradient(f(inputs), inputs);
}

function memoryOf(f: CompiledFunction): number {
  return f.recorded!.tape.memoryBytes;
}

function expectSameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    if (!Object.is(actual[k], expected[k])) throw new Error(`${what}[${k}]: got ${actual[k]}, expected ${expected[k]}`);
  }
}

/** The i-th input point: varies every call, repeats every 1000. */
function pointInto(x: Float64Array, i: number): void {
  const t = (i % 1000) * 1e-3;
  x[0] = 0.3 + t;
  x[1] = -0.7 + 0.5 * t;
  x[2] = 1.1 - t;
  x[3] = 0.05 + 0.25 * t;
}

describe('wasm memory stays flat under replay', () => {
  it('10^6 calls of gradient(x, out) on a ~100-node function', () => {
    const f = compile(hundredNodes, { inputs: 4, at: [0.3, -0.7, 1.1, 0.05] });
    expect(f.size).toBeGreaterThanOrEqual(90);
    expect(f.size).toBeLessThanOrEqual(130);
    const x = new Float64Array(4);
    const out = new Float64Array(4);
    for (let i = 0; i < 1000; i++) {
      pointInto(x, i);
      f.gradient(x, out);
    }
    const memory = memoryOf(f);
    const size = f.size;
    const started = performance.now();
    for (let i = 0; i < 1_000_000; i++) {
      pointInto(x, i);
      if (f.gradient(x, out) !== out) throw new Error(`call ${i} did not return the caller's array`);
      if (i % 99_991 === 0) {
        // Spot checks: a fresh recording at the same point, bit for bit, and no growth so far.
        expectSameBits(out, freshGradient(x), `call ${i}`);
        expect(memoryOf(f), `memory at call ${i}`).toBe(memory);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    // Not asserted (the machine is shared): reported with the test output.
    console.log(`10^6 gradient(x, out) calls of a ${size}-node function: ${seconds.toFixed(2)} s`);
    pointInto(x, 123_456);
    expectSameBits(f.gradient(x, out), freshGradient(x), 'last call');
    expect(memoryOf(f)).toBe(memory);
    expect(f.size).toBe(size);
    expect(f.rerecords).toBe(0);
  });

  it('10^4 batches of 100 rows, SIMD and scalar kernel', () => {
    for (const simd of [true, false]) {
      const f = compile(hundredNodes, { inputs: 4, at: [0.3, -0.7, 1.1, 0.05], simd });
      const rows = 100;
      const X = new Float64Array(rows * 4);
      const G = new Float64Array(rows * 4);
      const x = new Float64Array(4);
      const fill = (call: number): void => {
        for (let r = 0; r < rows; r++) {
          pointInto(x, call + r);
          X.set(x, r * 4);
        }
      };
      fill(0);
      f.gradientBatch(X, rows, G);
      const memory = memoryOf(f);
      for (let call = 0; call < 10_000; call++) {
        fill(call);
        f.gradientBatch(X, rows, G);
        if (call % 2_477 === 0) {
          for (const r of [0, 1, rows - 1]) expectSameBits(G.subarray(r * 4, r * 4 + 4), freshGradient(X.subarray(r * 4, r * 4 + 4)), `simd ${simd}, call ${call}, row ${r}`);
          expect(memoryOf(f)).toBe(memory);
        }
      }
      expect(memoryOf(f)).toBe(memory);
    }
  });

  it('10^5 calls mixing valueAndGradient, hvp, jvp and vjp', () => {
    const f = compile(hundredNodes, { inputs: 4, at: [0.3, -0.7, 1.1, 0.05] });
    const x = new Float64Array(4);
    const out = new Float64Array(4);
    const v = new Float64Array([1, -1, 0.5, 2]);
    const one = new Float64Array(1);
    const run = (i: number): void => {
      pointInto(x, i);
      f.valueAndGradient(x, out);
      f.hvp(x, v, out);
      f.jvp(x, v, one);
      f.vjp(x, [1], out);
    };
    for (let i = 0; i < 100; i++) run(i);
    const memory = memoryOf(f);
    for (let i = 0; i < 100_000; i++) run(i);
    expect(memoryOf(f)).toBe(memory);
    pointInto(x, 777);
    expectSameBits(f.gradient(x, out), freshGradient(x), 'after mixed calls');
  });

  it('10^4 re-records (a guard flipping every call) reuse the same tape memory', () => {
    const guarded = (x: Var[]): Var => (x[0]!.gt(0).value ? hundredNodes(x) : hundredNodes(x).mul(x[1]!).exp());
    const f = compile(guarded, { inputs: 4, at: [0.3, -0.7, 1.1, 0.05] });
    const x = new Float64Array(4);
    const out = new Float64Array(4);
    const at = (i: number): Float64Array => {
      pointInto(x, i);
      if (i % 2 === 1) x[0] = -x[0]!;
      return x;
    };
    for (let i = 0; i < 10; i++) f.gradient(at(i), out);
    const memory = memoryOf(f);
    for (let i = 10; i < 10_010; i++) {
      f.gradient(at(i), out);
      if (i % 997 === 0) expectSameBits(out, freshGradient(x, guarded), `re-record ${i}`);
    }
    expect(f.rerecords).toBe(10_009);
    expect(memoryOf(f)).toBe(memory);
  });
});
