// An 8-worker pool (node:worker_threads): the main thread compiles the core once and posts it to
// every worker (`await coreModule()`, then `init({ module })` there); each worker computes values
// and gradients for its share of input rows through the Var API, a compiled function (row by row
// and batched) and the JS backend. Same engine, same graph, same inputs: the results must be the
// main thread's bit for bit. The workers run the built library (dist/, which `npm test` builds
// first); the main thread runs src/.
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, coreModule, createTape, type Tape } from '../src/index.ts';
import { INPUTS, objective } from './workers/objective.mjs';

const POOL = 8;
const ROWS_PER_WORKER = 64;

interface Results {
  varValues: Float64Array;
  varGradients: Float64Array;
  jsGradients: Float64Array;
  compiledGradients: Float64Array;
  batchGradients: Float64Array;
}

type Reply = { type: 'ready'; exports: number } | ({ type: 'result'; id: number } & Results) | { type: 'error'; id?: number; error: string };

function nextReply(worker: Worker): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onMessage = (reply: Reply): void => {
      worker.off('error', onError);
      if (reply.type === 'error') reject(new Error(`worker failed: ${reply.error}`));
      else resolve(reply);
    };
    const onError = (error: Error): void => {
      worker.off('message', onMessage);
      reject(error);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
  });
}

const bits = (xs: Float64Array): BigUint64Array => new BigUint64Array(xs.slice().buffer);

/** What the main thread computes for the same rows, the same ways. */
function mainThread(wasm: Tape, js: Tape, rows: Float64Array, count: number): Results {
  const out: Results = {
    varValues: new Float64Array(count),
    varGradients: new Float64Array(count * INPUTS),
    jsGradients: new Float64Array(count * INPUTS),
    compiledGradients: new Float64Array(count * INPUTS),
    batchGradients: new Float64Array(count * INPUTS),
  };
  const compiled = compile(objective, { inputs: INPUTS });
  for (let r = 0; r < count; r++) {
    const row = rows.subarray(r * INPUTS, (r + 1) * INPUTS);
    for (const [tape, target] of [[wasm, out.varGradients], [js, out.jsGradients]] as const) {
      tape.reset();
      const x = tape.variables(row);
      const f = objective(x);
      target.set(tape.gradient(f, x), r * INPUTS);
      if (tape === wasm) out.varValues[r] = f.value;
    }
    compiled.gradient(row, out.compiledGradients.subarray(r * INPUTS, (r + 1) * INPUTS));
  }
  out.batchGradients.set(compile(objective, { inputs: INPUTS }).gradientBatch(rows, count));
  return out;
}

describe('worker pool', () => {
  let workers: Worker[] = [];
  const script = new URL('./workers/gradients.mjs', import.meta.url);

  beforeAll(async () => {
    const module = await coreModule();
    workers = Array.from({ length: POOL }, () => new Worker(script));
    const ready = await Promise.all(workers.map((w) => {
      const reply = nextReply(w);
      w.postMessage({ type: 'init', module });
      return reply;
    }));
    for (const reply of ready) {
      expect(reply.type).toBe('ready');
      expect((reply as { exports: number }).exports).toBe(WebAssembly.Module.exports(module).length);
    }
  });

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.terminate()));
  });

  it(`${POOL} workers, each given the compiled core, compute the main thread's values and gradients bit for bit`, async () => {
    // Rows in [-2, 2], half with x0 < 0: the objective branches there, so compiled copies re-record.
    const coordinate = fc.double({ min: -2, max: 2, noNaN: true });
    const allRows = Float64Array.from(fc.sample(coordinate, { numRuns: POOL * ROWS_PER_WORKER * INPUTS, seed: 8_008 }));
    const shares = workers.map((_, k) => allRows.slice(k * ROWS_PER_WORKER * INPUTS, (k + 1) * ROWS_PER_WORKER * INPUTS));
    // All eight in flight at once.
    const replies = await Promise.all(workers.map((w, k) => {
      const reply = nextReply(w);
      w.postMessage({ type: 'work', id: k, rows: shares[k], count: ROWS_PER_WORKER });
      return reply;
    }));
    const wasm = await createTape({ backend: 'wasm' });
    const js = await createTape({ backend: 'js' });
    let branches = 0;
    replies.forEach((reply, k) => {
      expect(reply.type).toBe('result');
      const got = reply as { id: number } & Results;
      expect(got.id).toBe(k);
      const want = mainThread(wasm, js, shares[k]!, ROWS_PER_WORKER);
      for (const key of ['varValues', 'varGradients', 'jsGradients', 'compiledGradients', 'batchGradients'] as const) {
        expect(bits(got[key]), `worker ${k}: ${key}`).toEqual(bits(want[key]));
      }
      for (let r = 0; r < ROWS_PER_WORKER; r++) branches += shares[k]![r * INPUTS]! > 0 ? 1 : 0;
    });
    // Both branches were taken (the compiled copies were exercised across a guard).
    expect(branches).toBeGreaterThan(0);
    expect(branches).toBeLessThan(POOL * ROWS_PER_WORKER);
  });

  it('each worker answers a second batch too (its tapes and module persist between messages)', async () => {
    const row = Float64Array.from([0.5, -1, 1.5, 0.25, -0.75, 2]);
    const replies = await Promise.all(workers.map((w, k) => {
      const reply = nextReply(w);
      w.postMessage({ type: 'work', id: 100 + k, rows: row, count: 1 });
      return reply;
    }));
    const want = mainThread(await createTape({ backend: 'wasm' }), await createTape({ backend: 'js' }), row, 1);
    for (const reply of replies) {
      expect(bits((reply as Results & { type: 'result' }).compiledGradients)).toEqual(bits(want.compiledGradients));
      expect(bits((reply as Results & { type: 'result' }).varGradients)).toEqual(bits(want.varGradients));
    }
  });
});
