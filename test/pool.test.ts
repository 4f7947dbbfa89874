// tapegrad/pool: batch calls split across worker threads equal the single-threaded calls bit for
// bit, rows in order (batches too small to post run on the main thread's copy, alike); workers
// install the main thread's generated sweeps instead of generating their own; errors arrive as
// the library's classes; a worker that dies is replaced and the next call works. The pool's workers run the built library, so this file imports dist/ (which
// `npm test` builds first) rather than src/.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { straightCode } from './support.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BranchChangedError, FormatError, NonFiniteError, NotANumberError, TapegradError, compile, defineFunction, fromBytes, init, type CompiledFunction, type Var, type Vec,
} from '../dist/index.js';
import { GradientPool, PooledFunction, WorkerExitError, createPool, sharedFloat64 } from '../dist/pool/index.js';
import * as distErrors from '../dist/errors.js';

// Where two results first differ, comparing each number's bits as Object.is does (-0 is not 0);
// -1 when they agree everywhere. A NaN's sign bit is not fixed even in one thread (a call's NaNs
// changed sign between its first run and its 3,001st), so any NaN matches any NaN, as in the
// project's other bit-for-bit tests.
function firstDifference(a: Float64Array, b: Float64Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i]) && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  return -1;
}

/** sin(xy) + tanh(yz)·exp(−x²) + log1p(z²)/(1 + y²) − cos(x + y + z), the benchmarks' tiny function. */
const tiny = ([x, y, z]: Var[]): Var =>
  x!.mul(y!).sin().add(y!.mul(z!).tanh().mul(x!.square().neg().exp())).add(z!.square().log1p().div(y!.square().add(1))).sub(x!.add(y!).add(z!).cos());
/** Two outputs, for vjp and jvp. */
const pair = ([x, y, z]: Var[]): Var[] => [x!.mul(y!).add(z!.atan()), x!.sin().mul(z!.exp())];
/** A vector tape (interpreted in every thread): a Vec of 3 outputs. */
const vectorOut = (v: Vec): Vec => v.exp().mul(v.sin()).add(v.sumSquares());

function rows(count: number, width: number, seed: number): Float64Array {
  // Finite values with the odd NaN, ±Infinity and -0: bit-identity must hold for those too.
  const value = fc.oneof({ weight: 30, arbitrary: fc.double({ min: -3, max: 3, noNaN: true }) }, fc.constantFrom(NaN, Infinity, -Infinity, -0));
  return Float64Array.from(fc.sample(value, { numRuns: count * width, seed }));
}

describe.each(['wasm', 'js'] as const)('a pool of 2 workers, %s backend', (backend) => {
  let pool: GradientPool;
  const compiled = (f: (x: Var[]) => Var | Var[], at: number[]): CompiledFunction => compile(f, { inputs: at.length, at, backend });

  beforeAll(async () => {
    await init();
    // Small parts, so even short batches are split, at uneven row boundaries.
    pool = await createPool({ threads: 2, backend, minRowsPerTask: 7 });
  });
  afterAll(async () => {
    await pool.close();
  });

  it('every batch call equals the single-threaded call bit for bit, rows in order', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const g = compiled(pair, [0.5, -1, 2]);
    const pf = await pool.register(f), pg = await pool.register(g);
    for (const n of [1, 2, 13, 301, 4000]) {
      const X = rows(n, 3, n), D = rows(n, 3, n + 1), W = rows(n, 2, n + 2);
      expect(firstDifference(await pf.gradientBatch(X, n), f.gradientBatch(X, n)), `gradientBatch, ${n} rows`).toBe(-1);
      const [values, G] = await pf.valueAndGradientBatch(X, n);
      const [values1, G1] = f.valueAndGradientBatch(X, n);
      expect(firstDifference(values, values1)).toBe(-1);
      expect(firstDifference(G, G1)).toBe(-1);
      expect(firstDifference(await pf.hvpBatch(X, n, D), f.hvpBatch(X, n, D)), `hvpBatch, ${n} rows`).toBe(-1);
      expect(firstDifference(await pg.vjpBatch(X, n, W), g.vjpBatch(X, n, W)), `vjpBatch, ${n} rows`).toBe(-1);
      expect(firstDifference(await pg.jvpBatch(X, n, D), g.jvpBatch(X, n, D)), `jvpBatch, ${n} rows`).toBe(-1);
      // Outputs without `out` in new plain arrays whether the rows went to the workers or stayed
      // on this thread (new shared arrays per call were freed so lazily that RSS kept rising: a
      // probe).
      for (const result of [await pf.gradientBatch(X, n), ...(await pf.valueAndGradientBatch(X, n)), await pf.hvpBatch(X, n, D), await pg.vjpBatch(X, n, W), await pg.jvpBatch(X, n, D)]) {
        expect(result.buffer, `${n} rows`).toBeInstanceOf(ArrayBuffer);
      }
      // With values, as the single-threaded calls take them: plain arrays and shared memory.
      for (const [pooled, single, width] of [
        [(v: Float64Array) => pf.hvpBatch(X, n, D, undefined, v), (v: Float64Array) => f.hvpBatch(X, n, D, undefined, v), 1],
        [(v: Float64Array) => pg.vjpBatch(X, n, W, undefined, v), (v: Float64Array) => g.vjpBatch(X, n, W, undefined, v), 2],
        [(v: Float64Array) => pg.jvpBatch(X, n, D, undefined, v), (v: Float64Array) => g.jvpBatch(X, n, D, undefined, v), 2],
      ] as [(v: Float64Array) => Promise<Float64Array>, (v: Float64Array) => Float64Array, number][]) {
        const want = new Float64Array(n * width), plain = new Float64Array(n * width), shared = sharedFloat64(n * width);
        const result = single(want);
        expect(firstDifference(await pooled(plain), result), `${n} rows`).toBe(-1);
        expect(firstDifference(plain, want), `values, ${n} rows`).toBe(-1);
        await pooled(shared);
        expect(firstDifference(shared, want), `shared values, ${n} rows`).toBe(-1);
      }
    }
  });

  it('inputs as shared memory, plain arrays or Float64Arrays, outputs into shared or plain arrays: the same bits', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 50, X = rows(n, 3, 99), want = f.gradientBatch(X, n);
    const shared = sharedFloat64(n * 3);
    shared.set(X);
    const outShared = sharedFloat64(n * 3), outPlain = new Float64Array(n * 3);
    expect(await pf.gradientBatch(shared, n, outShared)).toBe(outShared);
    expect(firstDifference(outShared, want)).toBe(-1);
    expect(await pf.gradientBatch(Array.from(X), n, outPlain)).toBe(outPlain);
    expect(firstDifference(outPlain, want)).toBe(-1);
  });

  it('copies through scratch it reuses: results in new plain arrays, scratch bounded', async () => {
    // A worker keeps every SharedArrayBuffer it is sent until it collects garbage, which it rarely
    // does: a new buffer for each call's output grew memory by its size per call (a new-user probe).
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 2000, X = rows(n, 3, 7), D = rows(n, 3, 8), want = f.gradientBatch(X, n), wantHv = f.hvpBatch(X, n, D);
    const results = new Set<ArrayBufferLike>();
    // spareScratch is @internal: dist's declarations leave it out.
    const spare = (): { buffers: number; bytes: number } => (pool as unknown as { spareScratch: { buffers: number; bytes: number } }).spareScratch;
    let scratch = spare();
    for (let call = 0; call < 20; call++) {
      const G = await pf.gradientBatch(X, n);
      expect(G.buffer).toBeInstanceOf(ArrayBuffer);
      expect(firstDifference(G, want)).toBe(-1);
      results.add(G.buffer);
      const [values, G2] = await pf.valueAndGradientBatch(Float64Array.from(X), n);
      expect(values.buffer).toBeInstanceOf(ArrayBuffer);
      expect(firstDifference(G2, want)).toBe(-1);
      expect(firstDifference(await pf.hvpBatch(X, n, D), wantHv)).toBe(-1);
      // The scratch of the first round serves every later one.
      if (call === 0) scratch = spare();
      else expect(spare()).toEqual(scratch);
    }
    expect(results.size).toBe(20);
    // Calls at once lease one buffer each; at most two per thread are kept after them.
    await Promise.all(Array.from({ length: 8 }, (_, k) => pf.gradientBatch(X.subarray(0, 3 * (n - 100 * k)), n - 100 * k)));
    expect(spare().buffers).toBeLessThanOrEqual(2 * pool.threads);
  });

  // A review: a waiting call woken to lease, whose buffer the runtime then refused, took the
  // wake-up with it, and the calls behind it (and close()) waited for ever.
  it('a call refused its scratch passes its turn on: the calls waiting behind it run', async () => {
    const one = await createPool({ threads: 1, minRowsPerTask: 1 });
    const Real = globalThis.SharedArrayBuffer;
    try {
      const pf = await one.register(compiled(tiny, [0.1, 0.2, 0.3]));
      const shared = (n: number): Float64Array => new Float64Array(new Real(8 * n)).fill(0.5);
      // A runtime short of memory: no shared buffer of 8 MB or more.
      const refusing = function (size: number) {
        if (size >= 2 ** 23) throw new RangeError('no memory');
        return new Real(size);
      };
      refusing.prototype = Real.prototype;
      globalThis.SharedArrayBuffer = refusing as unknown as SharedArrayBufferConstructor;
      const outcome = (p: Promise<unknown>): Promise<string> => p.then(() => 'ok', (e: unknown) => (e as Error).constructor.name);
      const calls = [
        outcome(pf.gradientBatch(shared(3 * 100_000), 100_000)), outcome(pf.gradientBatch(shared(3 * 100_000), 100_000)),
        outcome(pf.gradientBatch(shared(3 * 400_000), 400_000)), outcome(pf.gradientBatch(shared(3 * 400_000), 400_000)),
        outcome(pf.gradientBatch(shared(30), 10)),
      ];
      const settled = await Promise.race([Promise.all(calls), new Promise((resolve) => setTimeout(() => resolve('pending'), 5000))]);
      expect(settled).toEqual(['ok', 'ok', 'CapacityError', 'CapacityError', 'ok']);
    } finally {
      globalThis.SharedArrayBuffer = Real;
      await one.close();
    }
  });

  // A probe: calls beyond two a thread at once each made a buffer, dropped after them but kept by
  // the workers, so every burst of calls grew memory by their scratch (16 calls of 10^6 rows: 550
  // MB a burst). Now at most two a thread exist; later calls wait for one, with the same results.
  it('makes at most two scratch buffers a thread, however many calls run at once', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 3000, X = rows(n, 3, 11), want = f.gradientBatch(X, n);
    const made = (): number => (pool as unknown as { scratchMade: number }).scratchMade;
    const before = made();
    for (let burst = 0; burst < 3; burst++) {
      const results = await Promise.all(Array.from({ length: 16 }, () => pf.gradientBatch(X, n)));
      for (const G of results) expect(firstDifference(G, want)).toBe(-1);
      expect(made() - before).toBeLessThanOrEqual(2 * pool.threads);
    }
  });

  // A probe: a call copying more than 64 MB leased a new buffer of its size each time, never kept
  // for the next, and the workers held every one they were sent: 1.5 M rows grew RSS by 72 MB a
  // call. Such a call now runs in pieces through one lease of at most the limit (lowered here).
  it('a call that would copy more than the scratch limit runs in pieces through one reused lease, as one thread would', async () => {
    const internal = pool as unknown as { scratchLimit: number; spareScratch: { buffers: number; bytes: number } };
    const f = compiled(tiny, [0.1, 0.2, 0.3]), g = compiled(pair, [0.5, -1, 2]);
    const pf = await pool.register(f), pg = await pool.register(g);
    const saved = internal.scratchLimit;
    internal.scratchLimit = 1 << 16;
    try {
      const n = 4000, X = rows(n, 3, 21), D = rows(n, 3, 22), W = rows(n, 2, 23);
      for (let round = 0; round < 3; round++) {
        expect(firstDifference(await pf.gradientBatch(Array.from(X), n), f.gradientBatch(X, n))).toBe(-1);
        const [values, G] = await pf.valueAndGradientBatch(X, n), [values1, G1] = f.valueAndGradientBatch(X, n);
        expect(firstDifference(values, values1)).toBe(-1);
        expect(firstDifference(G, G1)).toBe(-1);
        const out = new Float64Array(3 * n), hv = f.hvpBatch(X, n, D);
        expect(await pf.hvpBatch(X, n, D, out)).toBe(out);
        expect(firstDifference(out, hv)).toBe(-1);
        expect(firstDifference(await pg.vjpBatch(X, n, W), g.vjpBatch(X, n, W))).toBe(-1);
        expect(firstDifference(await pg.jvpBatch(X, n, D), g.jvpBatch(X, n, D))).toBe(-1);
        // One lease of the limit serves every piece, and is the one kept.
        expect(internal.spareScratch.bytes).toBeLessThanOrEqual(2 * pool.threads * (1 << 16));
      }
      // An output over the input rows (a jvp of 3 outputs per input, `out` over X): later pieces
      // read X as it was, as one thread does (a review probe: they read earlier pieces' results).
      const g3 = compile((x: Var[]) => [x[0]!.sin(), x[0]!.mul(2), x[0]!.square()], { inputs: 1, at: [0.5], backend });
      const p3 = await pool.register(g3);
      const ones = new Float64Array(3000).fill(1);
      for (const make of [(k: number) => new Float64Array(k), (k: number) => sharedFloat64(k)]) {
        const filled = (): Float64Array => { const b = make(9000); for (let r = 0; r < 3000; r++) b[r] = 0.001 * (r + 1); return b; };
        const one = filled(), want = g3.jvpBatch(one.subarray(0, 3000), 3000, ones, one).slice();
        const mine = filled();
        expect(firstDifference(await p3.jvpBatch(mine.subarray(0, 3000), 3000, ones, mine), want)).toBe(-1);
        // The same shared memory through a buffer object of its own (a clone, as a buffer posted
        // twice arrives), which JavaScript cannot tell from another memory: X is read as it was
        // too (a probe got the rows computed from results written over them), in pieces and not.
        if (mine.buffer instanceof SharedArrayBuffer) {
          for (const rowsOf of [3000, 300]) {
            const again = filled(), clone = new Float64Array(structuredClone(again.buffer));
            const expected = g3.jvpBatch(filled().subarray(0, rowsOf), rowsOf, ones, new Float64Array(3 * rowsOf));
            await p3.jvpBatch(again.subarray(0, rowsOf), rowsOf, ones, clone.subarray(0, 3 * rowsOf));
            expect(firstDifference(clone.subarray(0, 3 * rowsOf), expected)).toBe(-1);
          }
        }
      }
      // Errors name the caller's entry and row, in a later piece too.
      const plain: unknown[] = Array.from(X);
      plain[3 * 3000 + 1] = 'x';
      expect(() => f.gradientBatch(plain as number[], n)).toThrow('gradientBatch: 4000 rows of 3 inputs: entry 9001 must be a number, got the string "x"');
      await expect(pf.gradientBatch(plain as number[], n)).rejects.toThrow(expect.objectContaining({ name: 'NotANumberError', message: 'gradientBatch: 4000 rows of 3 inputs: entry 9001 must be a number, got the string "x"' }));
      // Every entry is checked before any piece runs, as one thread checks them before any row:
      // nothing written, and no earlier row's error first (a new-user probe: the pieces before
      // the bad entry wrote their results, or a guard crossed there was the error).
      const untouched = new Float64Array(3 * n).fill(7);
      await expect(pf.gradientBatch(plain as number[], n, untouched)).rejects.toThrow(NotANumberError);
      expect(untouched.every((v) => v === 7)).toBe(true);
      const guarded = compile((x: Var[]) => (x[0]!.gt(0).value ? x[0]!.mul(x[1]!) : x[1]!.sin()), { inputs: 2, at: [1, 1], backend });
      const pgd = await pool.register(guarded);
      const crossing: unknown[] = Array.from({ length: 2 * n }, () => 0.5);
      crossing[2 * 10] = -1;
      crossing[2 * n - 1] = 'oops';
      expect(() => guarded.gradientBatch(crossing as number[], n)).toThrow(NotANumberError);
      await expect(pgd.gradientBatch(crossing as number[], n)).rejects.toThrow(expect.objectContaining({ name: 'NotANumberError', message: `gradientBatch: ${n} rows of 2 inputs: entry ${2 * n - 1} must be a number, got the string "oops"` }));
      const badDirection: unknown[] = Array.from(D);
      badDirection[3 * n - 1] = undefined;
      const untouchedH = new Float64Array(3 * n).fill(7);
      await expect(pf.hvpBatch(X, n, badDirection as number[], untouchedH)).rejects.toThrow(`hvpBatch: ${n} rows of 3 direction entries: entry ${3 * n - 1} must be a number, got undefined`);
      expect(untouchedH.every((v) => v === 7)).toBe(true);
      const logs = compile((x: Var[]) => x[0]!.log(), { inputs: 1, at: [1], backend });
      const pl = await pool.register(logs, { checkNaN: true });
      // 16 bytes a row: pieces of 4096 rows, the bad row in the third.
      const L = new Float64Array(10_000).fill(2);
      L[9000] = -1;
      await expect(pl.gradientBatch(L, 10_000)).rejects.toThrow(/^gradientBatch, row 9000: /);
    } finally {
      internal.scratchLimit = saved;
    }
  });

  // A probe: a null direction through the workers threw a raw TypeError from the worker, where one
  // thread names it; and a scratch the runtime could not allocate a raw RangeError.
  // A probe: out in the same shared memory as X went to the workers as it was, and rows were read
  // after another worker's results overwrote them; and null was "none" for values in the workers,
  // refused on the main thread.
  it('results over their own rows in shared memory, and a null out or values refused, as on one thread', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 40, X = rows(n, 3, 11);
    const want = f.gradientBatch(X, n), wantH = f.hvpBatch(X, n, X);
    const shared = sharedFloat64(3 * n + 3);
    shared.set(X);
    expect(firstDifference(await pf.gradientBatch(shared.subarray(0, 3 * n), n, shared.subarray(3)), want)).toBe(-1);
    shared.set(X);
    expect(firstDifference(await pf.hvpBatch(shared.subarray(0, 3 * n), n, shared.subarray(0, 3 * n), shared.subarray(3)), wantH)).toBe(-1);
    // A registration the workers refused (its limits, checked where it loads) is not kept: it
    // was, for the pool's life (a review probe).
    const held = (): number => (pool as unknown as { registrations: Map<number, unknown> }).registrations.size;
    const before = held();
    await expect(pool.register(f, { maxNodes: 3 })).rejects.toThrow(expect.objectContaining({ name: 'CapacityError', message: expect.stringMatching(/^register: the serialized tape .*; pass register a larger maxNodes$/) }));
    // A limit out of range names register too (a probe: a bare "maxNodes must be ...").
    await expect(pool.register(f, { maxNodes: 0 })).rejects.toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^register: maxNodes must be a positive integer/) }));
    await expect(pool.register(f, { maxMemoryBytes: 10 })).rejects.toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^register: maxMemoryBytes = 10 holds no node/) }));
    expect(held()).toBe(before);
    const bad = null as unknown as Float64Array;
    for (const rowsOf of [n, 2]) {
      await expect(pf.gradientBatch(X, rowsOf, bad)).rejects.toThrow(/^gradientBatch: out must be a Float64Array of at least \d+ numbers, got null/);
      await expect(pf.valueAndGradientBatch(X, rowsOf, undefined, bad)).rejects.toThrow(/^valueAndGradientBatch: values must be/);
      await expect(pf.hvpBatch(X, rowsOf, X, undefined, bad)).rejects.toThrow(/^hvpBatch: values must be/);
    }
  });

  // A probe: out and values over the same shared rows gave other numbers than one thread.
  it('out and values sharing memory are refused as on one thread, on the workers\' path too', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 40, X = rows(n, 3, 9), shared = sharedFloat64(200), plain = new Float64Array(200);
    for (const s of [shared, plain]) {
      await expect(pf.valueAndGradientBatch(X, n, s.subarray(0, 3 * n), s.subarray(3 * n - 5, 4 * n - 5))).rejects.toThrow('valueAndGradientBatch: out and values share memory; give them arrays apart');
      await expect(pf.hvpBatch(X, n, X, s.subarray(0, 3 * n), s.subarray(0, n))).rejects.toThrow('hvpBatch: out and values share memory; give them arrays apart');
    }
  });

  it('a null direction, and a billion rows of nothing, are the errors one thread gives', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const n = 100, X = rows(n, 3, 5);
    for (const call of [() => pf.hvpBatch(X, n, null as unknown as number[]), () => pf.jvpBatch(X, n, null as unknown as number[]), () => pf.vjpBatch(X, n, null as unknown as number[])]) {
      await expect(call()).rejects.toThrow(expect.objectContaining({ name: 'NotANumberError', message: expect.stringMatching(/Batch: 100 rows of \d+ (direction|cotangent) entr(y|ies) need an array of at least \d+ numbers, got null$/) }));
    }
    // A function with custom nodes cannot go to the workers: said by register, not by toBytes.
    const square = defineFunction({ name: 'square', forward: (xs) => xs[0]! ** 2, vjp: (xs, _y, g) => [2 * xs[0]! * g] });
    await expect(pool.register(compile((x: Var[]) => square(x[0]!).add(x[1]!), { inputs: 2, at: [1, 2] }))).rejects.toThrow(/^register: a function with custom functions \(defineFunction\) cannot go to the workers/);
    // A billion rows copy in pieces through bounded scratch: their first entry is the error, as on
    // one thread (the scratch for all of them was a CapacityError before pieces).
    const huge = { length: 3e9 } as unknown as number[];
    const oneThread = (() => { try { f.gradientBatch(huge, 1e9); } catch (e) { return e as Error; } return null; })();
    expect(oneThread).toBeInstanceOf(NotANumberError);
    await expect(pf.gradientBatch(huge, 1e9)).rejects.toThrow(expect.objectContaining({ name: 'NotANumberError', message: oneThread!.message }));
  });

  it('a vector tape (interpreted in the workers) too, with its Vec output', async () => {
    const f = compile(vectorOut, { inputs: 3, vector: true, at: [0.1, 0.2, 0.3], backend });
    const pf = await pool.register(f);
    expect(pf.outputs).toBe(3);
    const n = 40, X = rows(n, 3, 7), D = rows(n, 3, 8);
    expect(firstDifference(await pf.jvpBatch(X, n, D), f.jvpBatch(X, n, D))).toBe(-1);
    expect(firstDifference(await pf.vjpBatch(X, n, D), f.vjpBatch(X, n, D))).toBe(-1);
  });

  it('workers neither record nor generate: each installs the sweeps the main thread generated', async () => {
    const f = compiled(tiny, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    expect(pf.workerLoads.length).toBeGreaterThan(0);
    // A worker's code generator is never loaded, so 'active' right after loading can only be
    // the installed sweeps; the JS backend interprets.
    for (const load of pf.workerLoads) expect(load.generatedSweeps).toBe(backend === 'wasm' ? 'active' : 'none');
    expect(pf.generatedSweeps).toBe(backend === 'wasm' ? 'active' : 'none');
    // checkNaN, which f lacks, replays by a schedule in every thread, and the pool says so (it
    // said 'active', f's: a probe).
    const checked = await pool.register(f, { checkNaN: true });
    for (const load of checked.workerLoads) expect(load.generatedSweeps).toBe(backend === 'wasm' ? 'scheduled' : 'none');
    expect(checked.generatedSweeps).toBe(backend === 'wasm' ? 'scheduled' : 'none');
    // Much straight code, which a function generates once its replays have paid for it: the pool
    // generates it at once (its workers never generate, and interpreted it for the pool's life,
    // an async-lifecycle probe), bit for bit the function's results.
    const straight = compiled(straightCode<Var>(7000), [0.3, -0.2]);
    if (backend === 'wasm') expect(straight.generatedSweepsReason).toMatch(/nodes of straight code, which cost more/);
    const ps = await pool.register(straight);
    for (const load of ps.workerLoads) expect(load.generatedSweeps).toBe(backend === 'wasm' ? 'active' : 'none');
    const Y = rows(64, 2, 11);
    expect(firstDifference(await ps.gradientBatch(Y, 64), straight.gradientBatch(Y, 64))).toBe(-1);
  });

  // A probe: pool.threads = 0 registered functions on no thread, and g.inputs = 4 on a function of
  // 3 gave a batch of 4-number rows, silently.
  it('the pool\'s and a pooled function\'s fields are read-only', async () => {
    const pf = await pool.register(compiled(tiny, [0.1, 0.2, 0.3]));
    for (const [target, name] of [[pool, 'threads'], [pool, 'backend'], [pool, 'minRowsPerTask'], [pf, 'inputs'], [pf, 'outputs'], [pf, 'generatedSweeps'], [pf, 'workerLoads']] as const) {
      const before = (target as unknown as Record<string, unknown>)[name];
      expect(() => { (target as unknown as Record<string, unknown>)[name] = 0; }, name).toThrow(TypeError);
      expect((target as unknown as Record<string, unknown>)[name]).toBe(before);
    }
    expect((await pf.gradientBatch(rows(3, 3, 5), 3)).length).toBe(9);
  });

  it('a tape too long to fold into code is scheduled in every worker, with the main thread\'s results', async () => {
    // 20,000 steps of random ops on recent nodes: no loop, so no generated code (16,384 nodes at most).
    const long = (x: Var[]): Var => {
      const nodes = x.slice();
      let state = 7;
      for (let k = 0; k < 20_000; k++) {
        state = (Math.imul(state, 1103515245) + 12345) >>> 0;
        const a = nodes[nodes.length - 1 - ((state >>> 8) % Math.min(nodes.length, 9))]!, b = nodes[nodes.length - 1 - ((state >>> 16) % nodes.length % 5)]!;
        const pick = state >>> 29;
        nodes.push(pick < 2 ? a.mul(b) : pick < 4 ? a.add(b).mul(0.5) : pick < 5 ? a.tanh() : pick < 6 ? a.sub(b.square()) : a.sin());
      }
      return nodes[nodes.length - 1]!.add(nodes[nodes.length - 2]!);
    };
    const f = compiled(long, [0.1, 0.2, 0.3]);
    const pf = await pool.register(f);
    const want = backend === 'wasm' ? 'scheduled' : 'none';
    expect(f.generatedSweeps).toBe(want);
    expect(pf.generatedSweeps).toBe(want);
    for (const load of pf.workerLoads) expect(load.generatedSweeps).toBe(want);
    const n = 30, X = rows(n, 3, 11);
    expect(firstDifference(await pf.gradientBatch(X, n), f.gradientBatch(X, n))).toBe(-1);
    expect(firstDifference(await pf.gradientBatch(X, n), compile(long, { inputs: 3, at: [0.1, 0.2, 0.3], backend, codegen: false }).gradientBatch(X, n))).toBe(-1);
  });

  it('checkNaN: the compiled function\'s own, or register\'s option for bytes, in every thread, with the single call\'s error', async () => {
    const f = compile((x) => x[0]!.log().mul(x[1]!), { inputs: 2, at: [1, 2], backend, checkNaN: true });
    // Row 17 of 20, in the second worker's part (rows 10..19), and the only row of a batch run on
    // the main thread. The message names the caller's row (it named row 7, within the part).
    const X = Float64Array.from({ length: 40 }, (_, k) => (k === 34 ? -1 : 1 + k));
    const want = (() => { try { f.gradientBatch(X, 20); } catch (e) { return e as NonFiniteError; } })()!;
    expect(want).toBeInstanceOf(NonFiniteError);
    expect(want.message).toMatch(/^gradientBatch, row 17: /);
    for (const pf of [await pool.register(f), await pool.register(f.toBytes(), { checkNaN: true })]) {
      const got = await pf.gradientBatch(X, 20).then(() => null, (e: unknown) => e as NonFiniteError);
      expect(got).toBeInstanceOf(NonFiniteError);
      expect([got!.message, got!.node, got!.op]).toEqual([want.message, want.node, want.op]);
      await expect(pf.gradientBatch(X.subarray(34), 1)).rejects.toThrow(NonFiniteError);
      expect(firstDifference(await pf.gradientBatch(X.subarray(0, 16), 8), f.gradientBatch(X.subarray(0, 16), 8))).toBe(-1);
    }
    // hvp's second-order adjoints are checked too (pow(x, 1.5) at 0: all else finite).
    const p = await pool.register(compile((x) => x[0]!.pow(1.5), { inputs: 1, at: [1], backend, checkNaN: true }));
    const H = Float64Array.from({ length: 20 }, (_, k) => (k === 17 ? 0 : 1 + k));
    await expect(p.hvpBatch(H, 20, new Float64Array(20).fill(1))).rejects.toThrow(/^hvpBatch, row 17: checkNaN: powConst at node 2 produced a non-finite second-order adjoint/);
    // Off: NaN rows, as IEEE says.
    const off = await pool.register(f, { checkNaN: false });
    // Limits for the tape every thread loads, as fromBytes's (a probe: no way to bound untrusted bytes).
    const outer = compile((v: Vec) => v.outer(v).sum(), { inputs: 1500, vector: true, at: new Float64Array(1500), backend });
    await expect(pool.register(outer.toBytes(), { maxMemoryBytes: 16 << 20 })).rejects.toThrow(expect.objectContaining({ name: 'CapacityError' }));
    const small = await pool.register(f.toBytes(), { maxMemoryBytes: 1 << 20, maxNodes: 64 });
    expect(firstDifference(await small.gradientBatch(X.subarray(0, 16), 8), f.gradientBatch(X.subarray(0, 16), 8))).toBe(-1);
    expect(Number.isNaN((await off.gradientBatch(X, 20))[34])).toBe(true);
    await expect(pool.register(f, { checkNan: true } as never)).rejects.toThrow(TapegradError);
  });

  it("a worker's error arrives as the same class, code, message and fields as the single-threaded call's", async () => {
    // A function with a guard, loaded from bytes in the workers: crossing it is a BranchChangedError.
    const guarded = compile((x) => (x[0]!.gt(0).value ? x[0]!.mul(x[1]!) : x[1]!.sin()), { inputs: 2, at: [1, 2], backend });
    const pf = await pool.register(guarded);
    // Row 17 of 20: in the second worker's part, named as the caller counts rows.
    const X = Float64Array.from({ length: 40 }, (_, k) => (k === 34 ? -1 : 1 + (k >> 1)));
    const single = fromBytes(guarded.toBytes(), { backend });
    const want = (() => { try { single.gradientBatch(X, 20); } catch (e) { return e as BranchChangedError; } })()!;
    expect(want).toBeInstanceOf(BranchChangedError);
    expect(want.message).toMatch(/^gradientBatch, row 17: /);
    for (const call of [() => pf.gradientBatch(X, 20), () => pf.hvpBatch(X, 20, X)]) {
      const got = await call().then(() => null, (e: unknown) => e as BranchChangedError);
      expect(got).toBeInstanceOf(BranchChangedError);
      expect(got!.code).toBe('BRANCH_CHANGED');
      expect(got!.message).toBe(want.message.replace(/^gradientBatch/, got!.message.split(',')[0]!));
      expect(got!.message).toMatch(/, row 17: /);
      expect(got!.node).toBe(want.node);
    }
    // A batch too small to post (it runs on the main thread's copy) cannot record again either.
    await expect(pf.gradientBatch([-1, 1], 1)).rejects.toThrow(BranchChangedError);
    // The rows after it still work.
    expect(firstDifference(await pf.gradientBatch(X.subarray(0, 14), 7), single.gradientBatch(X.subarray(0, 14), 7))).toBe(-1);

    const bad = ['1', 2, 3];
    const message = (() => { try { single.gradientBatch(bad as unknown as number[], 1); } catch (e) { return (e as Error).message; } })();
    await expect(pf.gradientBatch(bad as unknown as number[], 1)).rejects.toThrow(NotANumberError);
    await expect(pf.gradientBatch(bad as unknown as number[], 1)).rejects.toThrow(message!);
    await expect(pf.gradientBatch([1, 2, 3], 2)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'gradientBatch: 2 rows of 2 inputs need at least 4 numbers, got 3' });
    await expect(pf.gradientBatch([1, 2], 1.5)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // Lengths before the pool's scratch is leased: a huge row count was a failed allocation.
    await expect(pf.gradientBatch([1, 2], 1e10)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'gradientBatch: 10000000000 rows of 2 inputs need at least 20000000000 numbers, got 2' });
    await expect(pf.hvpBatch(X, 20, [1, 2])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'hvpBatch: 20 rows of 2 direction entries need at least 40 numbers, got 2' });
    // One entry a row, in the singular, as one thread says it (a probe).
    const one = await pool.register(compiled((x: Var[]) => x[0]!.sin(), [0.5]));
    for (const [call, what] of [['jvpBatch', 'direction'], ['vjpBatch', 'cotangent'], ['hvpBatch', 'direction']] as const) {
      await expect(one[call]([1, 2, 3], 3, [1, 2])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: `${call}: 3 rows of 1 ${what} entry need at least 3 numbers, got 2` });
    }
    await expect(pf.gradientBatch([1, 2], 1, new Float64Array(1))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('registering refuses corrupted bytes (FormatError) and anything that is not a function or bytes', async () => {
    const bytes = compiled(tiny, [0.1, 0.2, 0.3]).toBytes();
    bytes[bytes.length - 1]! ^= 1;
    await expect(pool.register(bytes)).rejects.toThrow(FormatError);
    // Named by the call the bytes came to (a probe: 'corrupted: checksum mismatch' named none).
    await expect(pool.register(bytes)).rejects.toThrow(/^register: corrupted: checksum mismatch/);
    await expect(pool.register(new Uint8Array(64))).rejects.toThrow(/^register: not a tapegrad tape/);
    await expect(pool.register('f' as unknown as Uint8Array)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(pool.register(compile(tiny, { inputs: 3, backend }))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' }); // nothing recorded yet (its message: the test from the sources below)
  });
});

describe('worker crashes and closing', () => {
  beforeAll(async () => {
    await init();
  });

  it('a worker that dies mid-call fails that call with WorkerExitError; the pool replaces it and the next call is exact', async () => {
    const pool = await createPool({ threads: 2, minRowsPerTask: 1 });
    try {
      const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
      const pf = await pool.register(f);
      const n = 400_000, X = rows(1000, 3, 5);
      const big = new Float64Array(n * 3);
      for (let k = 0; k < big.length; k += X.length) big.set(X.subarray(0, Math.min(X.length, big.length - k)), k);
      // The call posts its two parts before it returns, one to each idle worker: ending either
      // ends a part in flight.
      const call = pf.gradientBatch(big, n);
      const dying = pool.workers[0]!;
      await dying.terminate();
      const error = await call.then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(WorkerExitError);
      expect(error).toBeInstanceOf(TapegradError);
      expect((error as WorkerExitError).code).toBe('WORKER_EXIT');
      // The replacement knows nothing of the function; the pool sends it with the first task.
      for (let k = 0; k < 3; k++) expect(firstDifference(await pf.gradientBatch(big, n), f.gradientBatch(big, n))).toBe(-1);
      expect(pool.workers.length).toBe(2);
      expect(pool.workers).not.toContain(dying);
    } finally {
      await pool.close();
    }
  });

  // Ends the pool's one worker, then its replacement as soon as it is there (before it has started).
  const endWorkerAndReplacement = async (pool: GradientPool): Promise<void> => {
    const first = pool.workers[0]!;
    await first.terminate();
    let replacement: (typeof pool.workers)[number] | undefined;
    for (let k = 0; k < 5000 && replacement === undefined; k++) {
      await new Promise((resolve) => setImmediate(resolve));
      replacement = pool.workers.find((w) => w !== first);
    }
    expect(replacement).toBeDefined();
    await replacement!.terminate();
  };

  // A probe: after a replacement worker ended while it started, piscina started none (so as not
  // to restart failing workers for ever) until a new task came, and the calls queued for a worker
  // and close() waited for ever. They fail now, and the next call starts new workers.
  it('calls queued when every worker has ended, the last while starting, fail with WorkerExitError; the next call works', async () => {
    const pool = await createPool({ threads: 1, minRowsPerTask: 1 });
    try {
      const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
      const pf = await pool.register(f);
      const n = 400_000, X = sharedFloat64(n * 3).fill(0.5);
      const calls = Array.from({ length: 3 }, () => pf.gradientBatch(X, n).then(() => null, (e: unknown) => e));
      await endWorkerAndReplacement(pool);
      const settled = await Promise.race([Promise.all(calls), new Promise((resolve) => setTimeout(() => resolve('pending'), 5000))]);
      expect(settled).not.toBe('pending');
      // (A call a worker took before it ended fails too; one the replacement ran, had it started
      // first, would succeed.)
      for (const e of settled as unknown[]) if (e !== null) expect(e).toBeInstanceOf(WorkerExitError);
      expect((settled as unknown[])[0]).toBeInstanceOf(WorkerExitError);
      expect(firstDifference(await pf.gradientBatch(X, 2000), f.gradientBatch(X.subarray(0, 6000), 2000))).toBe(-1);
    } finally {
      await pool.close();
    }
  });

  // A probe: with close() called while the calls waited, the check that fails them stood down
  // (the pool was closed), and the calls and close() waited for ever.
  it('so do they after close() began, and close() then settles', async () => {
    const pool = await createPool({ threads: 1, minRowsPerTask: 1 });
    const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
    const pf = await pool.register(f);
    const n = 400_000, X = sharedFloat64(n * 3).fill(0.5);
    const calls = Array.from({ length: 3 }, () => pf.gradientBatch(X, n).then(() => null, (e: unknown) => e));
    const closing = pool.close().then(() => 'closed');
    await endWorkerAndReplacement(pool);
    const settled = await Promise.race([Promise.all([...calls, closing]), new Promise((resolve) => setTimeout(() => resolve('pending'), 5000))]);
    expect(settled).not.toBe('pending');
    const [e0, ...rest] = settled as unknown[];
    expect(e0).toBeInstanceOf(WorkerExitError);
    expect(rest.pop()).toBe('closed');
    for (const e of rest) if (e !== null) expect(e).toBeInstanceOf(WorkerExitError);
    expect((e0 as Error).message).not.toMatch(/next call/);
  });

  // A probe: register kept the caller's array, and a caller that reused it had the workers that
  // replaced a dead one load another function.
  it('registered bytes are copied: a worker that replaces a dead one loads what was registered', async () => {
    const pool = await createPool({ threads: 2, minRowsPerTask: 1 });
    try {
      const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
      const other = compile((x: Var[]) => x[0]!.mul(1000).add(x[1]!).add(x[2]!), { inputs: 3, at: [0.1, 0.2, 0.3] }).toBytes();
      const buffer = new Uint8Array(f.toBytes());
      const pf = await pool.register(buffer);
      const X = rows(256, 3, 7);
      expect(firstDifference(await pf.gradientBatch(X, 256), f.gradientBatch(X, 256))).toBe(-1);
      buffer.fill(0);
      buffer.set(other.subarray(0, Math.min(other.length, buffer.length)));
      await Promise.all(pool.workers.map((w) => w.terminate()));
      for (let k = 0; k < 2; k++) expect(firstDifference(await pf.gradientBatch(X, 256), f.gradientBatch(X, 256))).toBe(-1);
    } finally {
      await pool.close();
    }
  });

  // A review probe: the tasks that told the workers to drop a failed registration went to
  // whichever threads were idle, and a busy worker that had loaded it kept its tape. Every task
  // now names the failed registrations, and the worker that takes it drops them.
  it('a registration that failed is dropped by every worker that had loaded it, at its next task', async () => {
    const pool = await createPool({ threads: 2, minRowsPerTask: 1 });
    try {
      const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
      const held = await pool.register(f), other = await pool.register(compile(tiny, { inputs: 3, at: [0.3, 0.2, 0.1] }));
      // As register does when a worker ends under it after the others loaded the function.
      const internal = pool as unknown as { failed: number[]; registrations: Map<number, unknown>; piscina: { run(task: unknown): Promise<Record<string, unknown>> } };
      const id = (held as unknown as { id: number }).id;
      internal.registrations.delete(id);
      internal.failed.push(id);
      await other.gradientBatch(rows(64, 3, 1), 64); // a part for each worker
      const probe = (): Promise<Record<string, unknown>> => internal.piscina.run({ kind: 'run', id, registration: null, method: 'gradientBatch', from: 0, to: 1, firstRow: 0, X: sharedFloat64(3).fill(0.5), D: null, out: sharedFloat64(3), values: null, failed: [] });
      expect((await Promise.all([probe(), probe()])).map((reply) => 'missing' in reply)).toEqual([true, true]);
    } finally {
      await pool.close();
    }
  });

  // A probe: from JavaScript `new GradientPool()` started a pool of no threads that took calls,
  // and `new PooledFunction()` threw a raw TypeError.
  it('a GradientPool and a PooledFunction are not made with new', () => {
    const Pool = GradientPool as unknown as new (...args: unknown[]) => unknown;
    const Pooled = PooledFunction as unknown as new (...args: unknown[]) => unknown;
    expect(() => new Pool()).toThrow(/^a GradientPool comes from createPool\(options\)$/);
    expect(() => new Pooled()).toThrow(/^a PooledFunction comes from pool\.register\(f\)$/);
    for (const make of [() => new Pool(), () => new Pooled()]) expect(make).toThrow(TapegradError);
  });

  it('close() waits for the calls in flight, then every call is refused', async () => {
    const pool = await createPool({ threads: 2, minRowsPerTask: 1 });
    const f = compile(tiny, { inputs: 3, at: [0.1, 0.2, 0.3] });
    const pf = await pool.register(f);
    const X = rows(20_000, 3, 11);
    const inFlight = pf.gradientBatch(X, 20_000);
    // A registration loading in the workers is in flight too, and a second close() waits as the
    // first does (from a new-user probe: the registration failed with WORKER_EXIT, and the second
    // close() resolved at once).
    const registering = pool.register(compile(tiny, { inputs: 3, at: [0.3, 0.2, 0.1] }));
    let settled = false;
    const first = pool.close(), second = pool.close().then(() => { settled = true; });
    await Promise.resolve();
    expect(settled).toBe(false);
    await Promise.all([first, second]);
    const late = await registering;
    expect(late.inputs).toBe(3);
    expect(firstDifference(await inFlight, f.gradientBatch(X, 20_000))).toBe(-1);
    // A call large enough to run in pieces finishes every piece, and bytes still loading on this
    // thread finish registering (a new-user probe: both failed as "this pool is closed").
    const pieces = await createPool({ threads: 2, minRowsPerTask: 1 });
    (pieces as unknown as { scratchLimit: number }).scratchLimit = 1 << 16;
    const pp = await pieces.register(f);
    const large = pp.gradientBatch(Array.from(X), 20_000);
    const registeringBytes = pieces.register(compile(tiny, { inputs: 3, at: [0.2, 0.2, 0.2], codegen: false }).toBytes());
    await new Promise((resolve) => setTimeout(resolve, 1));
    await pieces.close();
    expect(firstDifference(await large, f.gradientBatch(X, 20_000))).toBe(-1);
    expect((await registeringBytes).inputs).toBe(3);
    await expect(pf.gradientBatch(X, 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'gradientBatch: this pool is closed' });
    await expect(pool.register(f)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'register: this pool is closed' });
    await expect(pf.hvpBatch(X, 1, [1, 0, 0])).rejects.toMatchObject({ message: 'hvpBatch: this pool is closed' });
    await pool.close(); // twice is fine
  });

  it('createPool checks its options', async () => {
    await expect(createPool({ threads: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(createPool({ backend: 'gpu' as 'js' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(createPool({ thread: 2 } as never)).rejects.toThrow(/unknown option 'thread'/);
    // More than the runtime allocates is a CapacityError, not a raw RangeError.
    expect(() => sharedFloat64(1e12)).toThrow(expect.objectContaining({ code: 'CAPACITY', message: expect.stringMatching(/could not allocate 1000000000000 numbers/) }));
    expect(() => sharedFloat64(-1)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    // A non-number is NOT_A_NUMBER, as the pool's rows are (a new-user probe: INVALID_ARGUMENT).
    for (const bad of ['8', undefined]) expect(() => sharedFloat64(bad as unknown as number)).toThrow(expect.objectContaining({ code: 'NOT_A_NUMBER' }));
    // 'auto', as createTape's: Node has WebAssembly, so the workers run the core.
    const auto = await createPool({ threads: 1, backend: 'auto' });
    try {
      expect(auto.backend).toBe('wasm');
    } finally {
      await auto.close();
    }
  });
});

// A packaging probe: a Node program bundled with tapegrad/pool inside holds no worker script, and
// every register failed as WorkerExitError, which names a crash; createPool now says what is
// missing.
it('a bundle without the workers\' script is refused by createPool, naming the script', async () => {
  // Inside the checkout (test-artifacts is ignored), so the bundle finds piscina, kept external
  // as a Node app's dependencies are, in node_modules.
  const artifacts = fileURLToPath(new URL('../test-artifacts/', import.meta.url));
  mkdirSync(artifacts, { recursive: true });
  const dir = mkdtempSync(join(artifacts, 'pool-bundle-'));
  const entry = join(dir, 'app.mjs'), outfile = join(dir, 'bundled', 'app.mjs');
  writeFileSync(entry, `
import { createPool } from ${JSON.stringify(fileURLToPath(new URL('../dist/pool/index.js', import.meta.url)))};
try { await createPool({ threads: 1 }); console.log('created'); } catch (e) { console.log(e.code + ' ' + e.message); }
`);
  const esbuild = await import('esbuild');
  await esbuild.build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', outfile, external: ['piscina'], logLevel: 'silent' });
  // esbuild's default for Node, CommonJS, leaves import.meta empty (a raw TypeError, a probe).
  const cjs = join(dir, 'bundled', 'app.cjs');
  writeFileSync(entry.replace(/mjs$/, 'cjs'), `
const { createPool } = require(${JSON.stringify(fileURLToPath(new URL('../dist/pool/index.js', import.meta.url)))});
createPool({ threads: 1 }).then(() => console.log('created'), (e) => console.log(e.code + ' ' + e.message));
`);
  await esbuild.build({ entryPoints: [entry.replace(/mjs$/, 'cjs')], bundle: true, platform: 'node', outfile: cjs, external: ['piscina'], logLevel: 'silent' });
  // webpack read `new URL(a ? './x' : './y', import.meta.url)` as a lookup into its bundle and
  // threw "Cannot find module" (a probe); it puts the module's own path there now, which exists.
  const { default: webpack } = await import('webpack');
  await new Promise<void>((done, fail) => webpack({
    mode: 'production', target: 'node20', context: dir, entry: entry.replace(/mjs$/, 'cjs'), externals: { piscina: 'commonjs piscina' },
    output: { path: join(dir, 'webpacked'), filename: 'app.cjs' },
  }, (error, stats) => (error || stats?.hasErrors() ? fail(error ?? new Error(stats!.toString())) : done())));
  const [esm, common, webpacked] = [outfile, cjs, join(dir, 'webpacked', 'app.cjs')].map((file) => spawnSync(process.execPath, [file], { encoding: 'utf8' }));
  rmSync(dir, { recursive: true, force: true });
  expect(esm!.stderr).toBe('');
  expect(esm!.stdout).toMatch(/^INVALID_ARGUMENT createPool: the workers' script .*bundled[/\\]worker-entry\.cjs is missing; a bundle must keep the package external \(esbuild's --external:tapegrad/);
  expect(common!.stdout).toMatch(/^INVALID_ARGUMENT createPool: this module was bundled where import.meta.url is not defined \(a CommonJS bundle\).*--format=esm/);
  expect(webpacked!.stderr).toBe('');
  expect(webpacked!.stdout.trim()).toBe('created');
}, 60_000);

// A bundle holding the core with tapegrad/pool left outside: the pool's own copy of the core
// refused the bundle's compiled functions as "not a compiled function ... got an object
// (CompiledFunction)" (a packaging probe).
it('register names a compiled function of another copy of tapegrad', async () => {
  const pool = await createPool({ threads: 1 });
  try {
    const foreign = { toBytes: () => new Uint8Array(0), gradientBatch: () => null };
    await expect(pool.register(foreign as never)).rejects.toThrow(/register: the compiled function comes from another copy of tapegrad than this pool's.*f\.toBytes\(\)/);
  } finally {
    await pool.close();
  }
});

// From the sources the pool started './worker.js', which only dist has, and the failed start's
// 'error' event, with no listener, ended the process.
it('works from the sources under tsx, and a worker error event does not end the process; an unrecorded function is refused', () => {
  const root = new URL('../', import.meta.url);
  const script = join(mkdtempSync(join(tmpdir(), 'tapegrad-pool-')), 'pool-from-sources.mts');
  writeFileSync(script, `
import { createPool } from ${JSON.stringify(new URL('src/pool/index.ts', root).href)};
import { compile, init } from ${JSON.stringify(new URL('src/index.ts', root).href)};
await init();
const pool = await createPool({ threads: 1, minRowsPerTask: 1 });
const f = compile((x) => x[0].mul(x[1]).sin(), { inputs: 2, at: [1, 2] });
const g = await (await pool.register(f)).gradientBatch([1, 2, 0.5, 3], 2);
const refused = await pool.register(compile((x) => x[0].exp(), { inputs: 1 })).then(() => null, (e) => [e.name, e.code, e.message]);
pool.piscina.emit('error', new Error('a worker failed to start'));
await pool.close();
console.log(JSON.stringify(Array.from(g)), JSON.stringify(Array.from(f.gradientBatch([1, 2, 0.5, 3], 2))));
console.log(JSON.stringify(refused));`);
  const child = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: fileURLToPath(root), encoding: 'utf8' });
  expect(child.stderr).toBe('');
  expect(child.status).toBe(0);
  const [results, refused] = child.stdout.trim().split('\n');
  // The precondition in words (it said "... before toBytes()", a call the user never made).
  expect(JSON.parse(refused!)).toEqual([
    'TapegradError', 'INVALID_ARGUMENT',
    'register: the compiled function has not recorded yet; call it once (or compile it with { at }) before registering it',
  ]);
  const [pooled, single] = results!.split(' ');
  expect(pooled).toBe(single);
  expect(JSON.parse(pooled!)).toHaveLength(4);
});

// An audit: createPool({ backend: 'auto' }) loads the core itself, and where that failed it threw
// (a second call then took js). A process whose WebAssembly refuses every compile stands in for a
// page's policy: 'auto' takes the JS mode at once, and the default names the failure.
it("createPool with 'auto' takes the JS mode where the core fails to load", () => {
  const root = new URL('../', import.meta.url);
  const script = join(mkdtempSync(join(tmpdir(), 'tapegrad-pool-')), 'pool-refused.mjs');
  writeFileSync(script, `
// Node's own fetch compiles its HTTP parser to wasm too: only tapegrad's core is refused.
const compileWasm = WebAssembly.compile;
let refuse = true;
WebAssembly.compile = (bytes) => refuse && Buffer.from(bytes).includes('gradientBatch') ? Promise.reject(new Error('refused: no compiling here')) : compileWasm(bytes);
const { createPool } = await import(${JSON.stringify(new URL('dist/pool/index.js', root).href)});
const { compile } = await import(${JSON.stringify(new URL('dist/index.js', root).href)});
// 'auto' first: after any failed load every 'auto' takes js (the default's refusal would decide it).
const pool = await createPool({ threads: 1, backend: 'auto' });
const refused = await createPool({ threads: 1 }).then(() => null, (e) => [e.code, /refused: no compiling here/.test(e.message)]);
const g = await (await pool.register(compile((x) => x[0].mul(x[1]), { inputs: 2, at: [1, 2], backend: 'js' }))).gradientBatch([3, 4], 1);
await pool.close();
// A failure that passes: the next 'auto' pool tries the core again, as createTape does.
refuse = false;
const again = await createPool({ threads: 1, backend: 'auto' });
await again.close();
console.log(JSON.stringify([refused, pool.backend, Array.from(g), again.backend]));`);
  const child = spawnSync(process.execPath, [script], { cwd: fileURLToPath(root), encoding: 'utf8' });
  expect(child.stderr).toBe('');
  expect(JSON.parse(child.stdout.trim())).toEqual([['INVALID_ARGUMENT', true], 'js', [4, 3], 'wasm']);
});

// Two SharedArrayBuffer objects may be one memory (a clone, a buffer posted twice), which
// JavaScript cannot tell: batches copy the rows an output may be written over (a probe), except
// between two buffers sharedFloat64 made, which are two memories (the pool's outputs are written
// in place there, as before).
it('outputs over another SharedArrayBuffer object may overlap the rows, unless sharedFloat64 made both', () => {
  // Internal (left out of the declarations), from the module instance the pool's sharedFloat64 uses.
  const { mayOverlap } = distErrors as unknown as { mayOverlap: (p: unknown, q: unknown) => boolean };
  const a = sharedFloat64(4), b = sharedFloat64(4);
  const clone = new Float64Array(structuredClone(a.buffer));
  const foreign = new Float64Array(new SharedArrayBuffer(32));
  expect([mayOverlap(a, b), mayOverlap(a, clone), mayOverlap(a, foreign), mayOverlap(foreign, clone)]).toEqual([false, true, true, true]);
  expect([mayOverlap(a.subarray(0, 2), a.subarray(2)), mayOverlap(a.subarray(0, 3), a.subarray(2)), mayOverlap(a, new Float64Array(4))]).toEqual([false, true, false]);
  expect(mayOverlap(a.subarray(0, 0), clone)).toBe(false);
});
