// A worker of the pool in test/workers.test.ts. It receives the compiled core from the main
// thread, adopts it with init({ module }), and answers each batch of input rows with the values
// and gradients it computes through the Var API, a compiled function (one row at a time and
// batched) and the pure-JS backend.
import { parentPort } from 'node:worker_threads';
import { objective, INPUTS } from './objective.mjs';

const lib = await import(new URL('../../dist/index.js', import.meta.url).href);

parentPort.on('message', async (message) => {
  try {
    if (message.type === 'init') {
      await lib.init({ module: message.module });
      // createTapeSync throws unless a core is loaded: it proves the posted module was adopted
      // (nothing else in this worker loads one).
      lib.createTapeSync({ backend: 'wasm' });
      parentPort.postMessage({ type: 'ready', exports: WebAssembly.Module.exports(message.module).length });
      return;
    }
    if (message.type === 'work') {
      parentPort.postMessage({ type: 'result', id: message.id, ...compute(message.rows, message.count) });
    }
  } catch (error) {
    parentPort.postMessage({ type: 'error', id: message.id, error: String(error?.stack ?? error) });
  }
});

function compute(rows, count) {
  const varValues = new Float64Array(count);
  const varGradients = new Float64Array(count * INPUTS);
  const jsGradients = new Float64Array(count * INPUTS);
  const compiledGradients = new Float64Array(count * INPUTS);
  const wasm = lib.createTapeSync({ backend: 'wasm' });
  const js = lib.createTapeSync({ backend: 'js' });
  const compiled = lib.compile(objective, { inputs: INPUTS });
  for (let r = 0; r < count; r++) {
    const row = rows.subarray(r * INPUTS, (r + 1) * INPUTS);
    for (const [tape, out] of [[wasm, varGradients], [js, jsGradients]]) {
      tape.reset();
      const x = tape.variables(row);
      const f = objective(x);
      out.set(tape.gradient(f, x), r * INPUTS);
      if (tape === wasm) varValues[r] = f.value;
    }
    compiled.gradient(row, compiledGradients.subarray(r * INPUTS, (r + 1) * INPUTS));
  }
  const batchGradients = lib.compile(objective, { inputs: INPUTS }).gradientBatch(rows, count);
  return { varValues, varGradients, jsGradients, compiledGradients, batchGradients };
}
