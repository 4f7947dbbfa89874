// Every test file: fused run kernels compiled the first time a run asks for one. By default a
// signature waits for its 3rd request (src/wasm/backend.ts, runKernel), and the tests that compare
// fused runs with the block sweep, bit for bit, would compare the block sweep with itself on the
// tapes they record once; test/vector-fusion.test.ts checks the default's wait.
import { runKernelLimits } from '../src/wasm/backend.ts';

runKernelLimits.compileAfter = 1;
