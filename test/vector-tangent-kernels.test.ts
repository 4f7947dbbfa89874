// The fused runs' tangent kernels (src/wasm/codegen/emit-runs.ts): a jvp's and an hvp's sweeps of
// an elementwise run in one kernel each, with the tangents of nodes whose values the forward sweep
// deferred left out (assembly/vector.ts, "deferred tangents") and the run nodes' adjoints and
// adjoint tangents dropped. What reads them outside the kernels must get the block sweep's bits:
// the façade's jvp of such a node, checkNaN, a compiled function's vector output, a Vec's gradient
// after an hvp. Each case against the same calls with the kernels off, and the JS engine.
import { describe, expect, it } from 'vitest';
import { compile, createTape, init, NonFiniteError, type Tape, type Var, type Vec } from '../src/index.ts';
import type { WasmBackend } from '../src/wasm/backend.ts';

// Longer than a block (RUN_BLOCK = 1024 elements): runs form above it.
const N = 1500;
const data = (seed: number): Float64Array => Float64Array.from({ length: N }, (_, i) => 0.6 + 0.3 * Math.sin(0.37 * i + seed));
const direction = Float64Array.from({ length: N }, (_, i) => (i % 3) - 1);

function sameBits(actual: ArrayLike<number>, expected: ArrayLike<number>): boolean {
  if (actual.length !== expected.length) return false;
  for (let k = 0; k < actual.length; k++) if (!Object.is(actual[k], expected[k])) return false;
  return true;
}

const engineOf = (tape: Tape): WasmBackend => (tape as unknown as { engine: WasmBackend }).engine;
const slotsOf = (engine: WasmBackend): Map<string, number> => (engine as unknown as { runSlots: Map<string, number> }).runSlots;

// A chain whose middle nodes only the chain reads (their values and tangents deferred).
const chain = (x: Vec): { mid: Vec; out: Vec } => {
  const mid = x.mul(1.5).tanh().square();
  return { mid, out: mid.add(x).mul(x).exp() };
};

describe('tangent kernels', async () => {
  await init();

  it('give a deferred intermediate\'s tangent, and every output\'s, as the block sweep does', async () => {
    const run = async (fused: boolean, backend: 'wasm' | 'js' = 'wasm', simd = true): Promise<Float64Array[]> => {
      const tape = await createTape({ backend });
      if (backend === 'wasm') {
        engineOf(tape).setRunFusion(fused);
        // (The scalar kernels, which a runtime without SIMD gets.)
        engineOf(tape).setRunKernelSimd(simd);
      }
      const x = tape.vector(data(0.2));
      const { mid, out } = chain(x);
      const s = out.sum();
      // The sum's tangent first (nothing else read), then the middle node's, then an hvp.
      const first = tape.jvp([x], direction, [s]);
      const again = tape.jvp([x], direction, [s, mid, out]);
      const hvp = tape.hvp(s, [x], direction);
      return [first, again, hvp];
    };
    const fused = await run(true), blocked = await run(false), js = await run(false, 'js'), scalar = await run(true, 'wasm', false);
    fused.forEach((r, k) => expect(sameBits(r, blocked[k]!), `result ${k}`).toBe(true));
    scalar.forEach((r, k) => expect(sameBits(r, blocked[k]!), `scalar kernels, result ${k}`).toBe(true));
    for (let k = 0; k < fused.length; k++) {
      for (let e = 0; e < fused[k]!.length; e++) expect(fused[k]![e]).toBeCloseTo(js[k]![e]!, 10);
    }
  });

  it('ran in kernels: a tangent kernel and a reverse tangent kernel are in their slots', async () => {
    const kernels = async (sweeps: (tape: Tape, x: Vec, s: Var) => void, checkNaN = false): Promise<{ tangent: boolean; reverse: boolean }> => {
      const tape = await createTape({ backend: 'wasm', checkNaN });
      const x = tape.vector(data(0.4));
      const s = chain(x).out.sum();
      sweeps(tape, x, s);
      const keys = [...slotsOf(engineOf(tape))].filter(([, slot]) => slot > 0).map(([key]) => key);
      return { tangent: keys.some((key) => /^(simd|scalar):3[24],/.test(key)), reverse: keys.some((key) => /^(simd|scalar):3[35],/.test(key)) };
    };
    // An hvp whose output is the run's sum leaves the whole run to the reverse tangent kernel
    // (see hvpOutput in assembly/vector.ts): no tangent kernel runs.
    expect(await kernels((tape, x, s) => void tape.hvp(s, [x], direction))).toEqual({ tangent: false, reverse: true });
    // A jvp reads the sum's tangent; so does an hvp under checkNaN, and one of a node reading the sum.
    expect(await kernels((tape, x, s) => void tape.jvp([x], direction, [s]))).toEqual({ tangent: true, reverse: false });
    expect(await kernels((tape, x, s) => void tape.hvp(s.mul(3), [x], direction))).toEqual({ tangent: true, reverse: true });
    expect(await kernels((tape, x, s) => void tape.hvp(s, [x], direction), true)).toEqual({ tangent: true, reverse: true });
  });

  it('give an hvp of the run\'s sum the block sweep\'s bits, with a node after the sum reading it or not', async () => {
    const run = async (fused: boolean, backend: 'wasm' | 'js', after: boolean, simd = true): Promise<Float64Array[]> => {
      const tape = await createTape({ backend });
      if (backend === 'wasm') { engineOf(tape).setRunFusion(fused); engineOf(tape).setRunKernelSimd(simd); }
      const x = tape.vector(data(0.3));
      const { mid, out } = chain(x);
      const s = out.sum();
      // A node after the output that reads it (its tangent is then computed), or one that does not.
      if (after) s.square(); else mid.sum();
      const first = tape.hvp(s, [x], direction);
      // Again on the same recording, and the gradient an hvp leaves.
      const again = tape.hvp(s, [x], direction, 0.5);
      return [first, again, Float64Array.from(tape.gradient(s, [x]))];
    };
    for (const after of [false, true]) {
      const blocked = await run(false, 'wasm', after), js = await run(false, 'js', after);
      for (const simd of [true, false]) {
        const fused = await run(true, 'wasm', after, simd);
        fused.forEach((r, k) => expect(sameBits(r, blocked[k]!), `result ${k}, after ${after}, simd ${simd}`).toBe(true));
      }
      blocked.forEach((r, k) => r.forEach((v, e) => expect(v).toBeCloseTo(js[k]![e]!, 10)));
    }
  });

  it('under checkNaN, name the deferred node whose tangent is not finite, as the block sweep does', async () => {
    const message = async (fused: boolean): Promise<string> => {
      const tape = await createTape({ backend: 'wasm', checkNaN: true });
      engineOf(tape).setRunFusion(fused);
      const xs = data(0.1);
      xs[7] = 0;
      const x = tape.vector(xs);
      // sqrt at 0 with a nonzero tangent: an infinite tangent in the middle of the run.
      const s = x.sqrt().add(1).mul(x).add(x).sum();
      const t = new Float64Array(N).fill(1);
      try {
        tape.jvp([x], t, [s]);
      } catch (error) {
        expect(error).toBeInstanceOf(NonFiniteError);
        // (Handles differ from tape to tape.)
        return (error as Error).message.replace(/handle -?\d+/g, 'handle h');
      }
      return 'no error';
    };
    const fused = await message(true);
    expect(fused).toMatch(/sqrt/);
    expect(fused).toBe(await message(false));
  });

  it('under checkNaN, keep the adjoint tangents an hvp checks, with the same results', async () => {
    const run = async (fused: boolean): Promise<Float64Array> => {
      const tape = await createTape({ backend: 'wasm', checkNaN: true });
      engineOf(tape).setRunFusion(fused);
      const x = tape.vector(data(0.7));
      const s = chain(x).out.sum();
      tape.hvp(s, [x], direction);
      // What a sweep leaves unwritten must not be read (checkNaN reads every adjoint tangent).
      engineOf(tape).views.xtanAdj!.fill(NaN);
      return tape.hvp(s, [x], direction);
    };
    expect(sameBits(await run(true), await run(false))).toBe(true);
  });

  it('give an intermediate\'s gradient after an hvp (its adjoints dropped, swept again)', async () => {
    const run = async (fused: boolean): Promise<Float64Array[]> => {
      const tape = await createTape({ backend: 'wasm' });
      engineOf(tape).setRunFusion(fused);
      const x = tape.vector(data(0.9));
      const { mid, out } = chain(x);
      const s = out.sum();
      const hvp = tape.hvp(s, [x], direction);
      return [hvp, tape.gradient(s, [mid, x])];
    };
    const fused = await run(true), blocked = await run(false);
    fused.forEach((r, k) => expect(sameBits(r, blocked[k]!), `result ${k}`).toBe(true));
  });

  it('give a compiled vector function\'s jvp and hvp as the block sweep does, a vector output included', async () => {
    const x0 = data(1.3);
    const run = (fused: boolean): Float64Array[] => {
      const scalar = compile((x: Vec) => chain(x).out.sum(), { inputs: N, vector: true });
      // Its output a node only the run after it reads (deferred), as is its tangent.
      const vector = compile((x: Vec) => {
        const { mid, out } = chain(x);
        out.sum();
        return mid;
      }, { inputs: N, vector: true });
      for (const f of [scalar, vector]) {
        f.record(x0);
        engineOf((f as unknown as { recording: { tape: Tape } }).recording.tape).setRunFusion(fused);
      }
      return [scalar.jvp(x0, direction), scalar.hvp(x0, direction), vector.jvp(x0, direction)];
    };
    const fused = run(true), blocked = run(false);
    fused.forEach((r, k) => expect(sameBits(r, blocked[k]!), `result ${k}`).toBe(true));
  });

  // The replay before a compiled hvp leaves a run summed into the output to the reverse tangent
  // kernel, and that value uncomputed (NaN in the recording: hvp does not return it); hvpBatch
  // with values, and every later call, computes it.
  it('give a compiled hvp without its output\'s value, and hvpBatch\'s values and later calls with it', async () => {
    const rows = [data(0.4), data(1.1)];
    const X = new Float64Array(2 * N);
    rows.forEach((x, r) => X.set(x, r * N));
    const V = new Float64Array(2 * N);
    V.set(direction);
    V.set(direction.map((d) => -0.5 * d), N);
    const run = (backend: 'wasm' | 'js', fused: boolean): { hvps: Float64Array[]; values: Float64Array; value: number; outputValue: number } => {
      const f = compile((x: Vec) => chain(x).out.sum(), { inputs: N, vector: true, backend });
      f.record(rows[0]!);
      const tape = (f as unknown as { recording: { tape: Tape; outputs: Int32Array } }).recording;
      if (backend === 'wasm') engineOf(tape.tape).setRunFusion(fused);
      const hvps = [f.hvp(rows[1]!, direction)];
      const outputValue = (tape.tape as unknown as { engine: { views: { val: Float64Array } } }).engine.views.val[tape.outputs[0]!]!;
      const values = new Float64Array(2);
      hvps.push(f.hvpBatch(X, 2, V, undefined, values));
      hvps.push(f.hvp(rows[0]!, direction));
      return { hvps, values, value: f.valueAndGradient(rows[1]!)[0] as number, outputValue };
    };
    const fused = run('wasm', true), blocked = run('wasm', false), js = run('js', false);
    expect(fused.outputValue).toBeNaN();
    expect(Number.isFinite(blocked.outputValue)).toBe(true);
    fused.hvps.forEach((r, k) => expect(sameBits(r, blocked.hvps[k]!), `hvp ${k}`).toBe(true));
    expect(sameBits(fused.values, blocked.values)).toBe(true);
    expect(Object.is(fused.value, blocked.value)).toBe(true);
    for (let r = 0; r < 2; r++) expect(fused.values[r]).toBeCloseTo(js.values[r]!, 9);
    fused.hvps.forEach((r, k) => r.forEach((v, e) => expect(v).toBeCloseTo(js.hvps[k]![e]!, 8)));
  });

  it('under checkNaN, give a compiled function\'s hvp with its adjoint tangents kept', () => {
    const x0 = data(1.7);
    const run = (fused: boolean): Float64Array => {
      const f = compile((x: Vec) => chain(x).out.sum(), { inputs: N, vector: true, checkNaN: true });
      f.record(x0);
      const engine = engineOf((f as unknown as { recording: { tape: Tape } }).recording.tape);
      engine.setRunFusion(fused);
      f.hvp(x0, direction);
      engine.views.xtanAdj!.fill(NaN);
      return f.hvp(x0, direction);
    };
    expect(sameBits(run(true), run(false))).toBe(true);
  });
});

describe('tangent kernels where a run has no kernel', async () => {
  await init();

  // A stencil's two slices, absorbed by the reverse tangent kernel (their totals go straight to
  // the parent's adjoints and adjoint tangents), or swept by their own rules where that kernel is
  // not ready (still compiling in a browser): the block sweep's bits either way, and the JS
  // engine's to rounding.
  it('absorb a stencil\'s slices into the reverse tangent kernel, or sweep them block by block', async () => {
    const stencil = (tape: Tape): Float64Array[] => {
      const x = tape.vector(data(0.9));
      const p = x.slice(0, N - 1), q = x.slice(1);
      const s = q.sub(p.square()).square().mul(100).add(p.neg().add(1).square()).sum();
      const v = direction.slice(0, N);
      return [tape.hvp(s, [x], v), tape.hvp(s, [x], v, 0.5), Float64Array.from(tape.gradient(s, [x]))];
    };
    const run = async (fused: boolean, backend: 'wasm' | 'js' = 'wasm', refuse = false, simd = true): Promise<{ results: Float64Array[]; absorbed: boolean }> => {
      const tape = await createTape({ backend });
      if (backend === 'js') return { results: stencil(tape), absorbed: false };
      const engine = engineOf(tape);
      engine.setRunFusion(fused);
      engine.setRunKernelSimd(simd);
      const patched = engine as unknown as { fuseRun(sig: number, words: number): number; core: { memory: WebAssembly.Memory } };
      const original = patched.fuseRun.bind(engine);
      // Kind 33 (and 35, with a sum): a reverse tangent kernel.
      if (refuse) patched.fuseRun = (sig, words) => ((new Int32Array(patched.core.memory.buffer, sig, 1)[0]! & 33) === 33 ? 0 : original(sig, words));
      engine.views.xtanAdj?.fill(NaN);
      const results = stencil(tape);
      // Absorbed slices are operand kinds -16 and -17 in the reverse tangent kernel's signature.
      const absorbed = [...slotsOf(engine)].some(([key, slot]) => slot > 0 && /^(simd|scalar):35,.*,-1[67],/.test(key));
      return { results, absorbed };
    };
    const blocked = await run(false), js = await run(false, 'js');
    for (const simd of [true, false]) {
      const fused = await run(true, 'wasm', false, simd), refused = await run(true, 'wasm', true, simd);
      expect(fused.absorbed, `absorbed, simd ${simd}`).toBe(true);
      expect(refused.absorbed).toBe(false);
      fused.results.forEach((r, k) => expect(sameBits(r, blocked.results[k]!), `result ${k}, simd ${simd}`).toBe(true));
      refused.results.forEach((r, k) => expect(sameBits(r, blocked.results[k]!), `without the kernel, result ${k}, simd ${simd}`).toBe(true));
    }
    blocked.results.forEach((r, k) => r.forEach((v, e) => expect(v).toBeCloseTo(js.results[k]![e]!, 8)));
  });

  // A select in the run (the kernels leave it to the block sweep), a sum after it taken in.
  it('give the block sweep\'s results, a sum after the run included', async () => {
    const run = async (fused: boolean): Promise<Float64Array[]> => {
      const tape = await createTape({ backend: 'wasm' });
      engineOf(tape).setRunFusion(fused);
      const x = tape.vector(data(2.1));
      const y = x.mul(1.5).tanh();
      const s = tape.select(x.lt(0.7), y.square(), y.exp()).mul(x).add(x).sum();
      return [tape.jvp([x], direction, [s]), tape.hvp(s, [x], direction), tape.gradient(s, [x])];
    };
    const fused = await run(true), blocked = await run(false);
    fused.forEach((r, k) => expect(sameBits(r, blocked[k]!), `result ${k}`).toBe(true));
  });
});
