// A service whose requests record elementwise chains of many shapes (user-defined models): one
// tape, reset per request, a chain over 2,048 elements picked from `shapes` by the request's
// number (a memory probe's script). Prints RSS after collections, the modules compiled (fused run
// kernels) and the time a request, in thirds of the run.
//   node --expose-gc --import tsx bench/kernel-shapes.ts [shapes=1000] [requests=6000] [--compile-after=n]
// --compile-after: the times a signature is met before its kernel is compiled (default: the
// library's, runKernelLimits.compileAfter; 1 compiles at first sight).
import { createTapeSync, init, type Vec } from '../src/index.ts';
import { runKernelLimits } from '../src/wasm/backend.ts';

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const shapes = Number(positional[0] ?? 1000), requests = Number(positional[1] ?? 6000);
const after = process.argv.find((a) => a.startsWith('--compile-after='));
if (after) runKernelLimits.compileAfter = Number(after.split('=')[1]);
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('run with node --expose-gc');
await init();
let compiled = 0;
const Original = WebAssembly.Module;
(WebAssembly as { Module: typeof WebAssembly.Module }).Module = new Proxy(Original, {
  construct(target, args, newTarget) {
    compiled++;
    return Reflect.construct(target, args, newTarget) as object;
  },
});
const ops = ['sin', 'exp', 'tanh', 'square', 'cos', 'sigmoid', 'softplus', 'neg', 'abs', 'sqrt'] as const;
const digits = Math.ceil(Math.log10(shapes));
const tape = createTapeSync();
const x = Float64Array.from({ length: 2048 }, (_, k) => 0.1 + (k % 7) * 0.1);
const rss = (): string => {
  collect();
  collect();
  return `${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MB`;
};
console.log(`${shapes} shapes, chains of ${2 * digits} ops, ${requests} requests, compileAfter ${runKernelLimits.compileAfter}; RSS at the start ${rss()}`);
let start = performance.now(), from = 0;
for (let i = 0; i < requests; i++) {
  tape.reset();
  let y: Vec = tape.vector(x);
  for (let d = 0, q = i % shapes; d < digits; d++, q = Math.floor(q / 10)) y = y[ops[q % 10]!]().mul(1.0001);
  tape.backward(y.sum());
  if ((i + 1) % Math.ceil(requests / 3) === 0 || i + 1 === requests) {
    const ms = (performance.now() - start) / (i + 1 - from);
    console.log(`after ${i + 1} requests: RSS ${rss()}, modules compiled ${compiled}, ${ms.toFixed(2)} ms a request over the last ${i + 1 - from}`);
    start = performance.now();
    from = i + 1;
  }
}
