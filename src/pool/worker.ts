// A worker of `tapegrad/pool` (run by piscina). It adopts the core the main thread compiled, loads
// each registered function from its bytes and installs the sweeps the main thread generated for
// it, so nothing is recorded, generated or compiled here. Each task computes a range of rows of a
// batch call, reading inputs from and writing results into shared memory.
import { workerData } from 'node:worker_threads';
import type { CompiledFunction } from '../compile.ts';
import { init } from '../create.ts';
import { loadBytes } from '../serialize.ts';
import { serializeError, type Registration, type Reply, type Task, type WorkerData } from './protocol.ts';

const data = workerData as WorkerData;
let ready: Promise<void> | null = null;
const functions = new Map<number, CompiledFunction>();

function load(registration: Registration): CompiledFunction {
  const f = loadBytes(registration.bytes, data.backend, registration.sweeps, registration.sweeps !== null, registration.limits, registration.checkNaN);
  functions.set(registration.id, f);
  return f;
}

export default async function run(task: Task): Promise<Reply> {
  const start = performance.now();
  try {
    // codegen: false: this worker never generates sweeps, so it never loads the generator.
    if (data.backend === 'wasm') await (ready ??= init({ module: data.module!, codegen: false }));
    for (const id of task.failed) functions.delete(id);
    if (task.kind === 'register') {
      // 'active' right after loading, in a worker whose code generator never loaded, means the
      // shipped sweeps were installed (generating them would have left it 'pending').
      const f = load(task.registration);
      return { ok: true, ms: performance.now() - start, generatedSweeps: f.generatedSweeps };
    }
    const f = functions.get(task.id) ?? (task.registration ? load(task.registration) : null);
    if (!f) return { missing: true };
    const { from, to, X, D, out, values, firstRow } = task;
    const rows = to - from, n = f.inputs, m = f.outputs;
    const xs = X.subarray(from * n, to * n);
    // Errors name the caller's row (see rowBase); the rows are apart from the outputs (rowsApart).
    f.rowBase = firstRow + from;
    f.rowsApart = true;
    try {
      switch (task.method) {
        case 'gradientBatch':
          f.gradientBatch(xs, rows, out.subarray(from * n, to * n));
          break;
        case 'valueAndGradientBatch':
          f.valueAndGradientBatch(xs, rows, out.subarray(from * n, to * n), values!.subarray(from, to));
          break;
        case 'vjpBatch':
          f.vjpBatch(xs, rows, D!.subarray(from * m, to * m), out.subarray(from * n, to * n), values?.subarray(from * m, to * m));
          break;
        case 'jvpBatch':
          f.jvpBatch(xs, rows, D!.subarray(from * n, to * n), out.subarray(from * m, to * m), values?.subarray(from * m, to * m));
          break;
        case 'hvpBatch':
          f.hvpBatch(xs, rows, D!.subarray(from * n, to * n), out.subarray(from * n, to * n), values?.subarray(from, to));
          break;
      }
    } finally {
      f.rowBase = 0;
      f.rowsApart = false;
    }
    return { ok: true, ms: performance.now() - start };
  } catch (error) {
    return { error: serializeError(error) };
  }
}
