// The soak program: N record/backward/reset cycles of a ~1000-node graph on one tape, the
// gradient checked against its closed form every K cycles, and the memory measured: the engine's
// memory (wasm: memory.buffer.byteLength; js: the typed arrays) must not grow after cycle 1000,
// and the JS heap after a full GC must not drift by 1 MB or more. Runnable on its own:
//
//   node --expose-gc --import tsx test/soak-run.ts <N> [wasm|js ...]
//
// (`npm run soak` runs N = 10^6.) Prints one `SOAK {json}` line per backend with the figures and
// exits with 1 if any check failed. test/soak.test.ts runs it with N = 10^4 in a child process.
import { createTape, type BackendKind, type Tape, type Var } from '../src/index.ts';
import type { WasmBackend } from '../src/wasm/backend.ts';

/** Cycles between two gradient checks: odd, so the checks fall on both APIs (see below). */
const CHECK_EVERY = 97;
/** The memory baseline is taken after this cycle: growth after it must be 0. */
const BASELINE_CYCLE = 1000;
const MAX_HEAP_DRIFT = 2 ** 20;
/** Relative tolerance of the gradient against the closed form: the sweep and the closed form
 *  below sum the same terms in different orders, each term within a few ulps. */
const TOLERANCE = 1e-12;

// f(x, y) = sum_k log1p((a_k x - y)^2), a_k = k / M: six nodes per term (constant, mul, sub,
// square, log1p, add), 167 terms, 1003 nodes with the two inputs.
const M = 167;
const A = Array.from({ length: M }, (_, k) => (k + 1) / M);

function closedForm(x: number, y: number): [number, number, number] {
  let dx = 0, dy = 0, scale = 0;
  for (const a of A) {
    const r = a * x - y;
    const d = (2 * r) / (1 + r * r);
    dx += a * d;
    dy -= d;
    scale += Math.abs(d);
  }
  return [dx, dy, Math.max(1, scale)];
}

/** Even cycles record through Vars (one object per node: the garbage collector's share of the
 *  soak), odd cycles through the handle API (no allocation per node). */
function record(tape: Tape, cycle: number, x0: number, y0: number): () => [number, number] {
  if (cycle % 2 === 0) {
    const x = tape.variable(x0), y = tape.variable(y0);
    let f: Var | null = null;
    for (const a of A) {
      const t = x.mul(a).sub(y).square().log1p();
      f = f === null ? t : f.add(t);
    }
    tape.backward(f!);
    return () => [x.grad, y.grad];
  }
  const h = tape.handles;
  const x = h.variable(x0), y = h.variable(y0);
  let f = -1;
  for (const a of A) {
    const t = h.log1p(h.square(h.sub(h.mul(x, h.constant(a)), y)));
    f = f < 0 ? t : h.add(f, t);
  }
  h.backward(f);
  return () => [h.grad(x), h.grad(y)];
}

function engineBytes(tape: Tape): number {
  return tape.backend === 'wasm' ? (tape.engine as WasmBackend).core.memory.buffer.byteLength : tape.memoryBytes;
}

function heapAfterGc(): number {
  // Two passes: the first may only queue finalization of what the second then frees.
  globalThis.gc!();
  globalThis.gc!();
  return process.memoryUsage().heapUsed;
}

export interface SoakFigures {
  backend: BackendKind;
  cycles: number;
  nodesPerCycle: number;
  checks: number;
  maxRelativeError: number;
  failures: string[];
  baselineCycle: number;
  engineBytesAtBaseline: number;
  engineBytesAtEnd: number;
  engineGrowth: number;
  heapAtBaseline: number;
  heapAtEnd: number;
  heapDrift: number;
  seconds: number;
}

async function soak(backend: BackendKind, cycles: number): Promise<SoakFigures> {
  const tape = await createTape({ backend });
  const baselineCycle = Math.min(BASELINE_CYCLE, Math.floor(cycles / 2));
  const failures: string[] = [];
  let checks = 0, maxRelativeError = 0, nodesPerCycle = 0;
  let engineBytesAtBaseline = 0, heapAtBaseline = 0;
  const started = performance.now();
  for (let cycle = 1; cycle <= cycles; cycle++) {
    tape.reset();
    const x0 = -2 + (cycle % 101) / 25, y0 = 0.5 + (cycle % 7) / 4;
    const gradient = record(tape, cycle, x0, y0);
    nodesPerCycle = tape.size;
    if (cycle % CHECK_EVERY === 0 || cycle === cycles) {
      checks++;
      const [gx, gy] = gradient();
      const [dx, dy, scale] = closedForm(x0, y0);
      const error = Math.max(Math.abs(gx - dx), Math.abs(gy - dy)) / scale;
      maxRelativeError = Math.max(maxRelativeError, error);
      if (!(error <= TOLERANCE) && failures.length < 10) {
        failures.push(`cycle ${cycle}: gradient (${gx}, ${gy}), closed form (${dx}, ${dy})`);
      }
    }
    if (cycle === baselineCycle) {
      engineBytesAtBaseline = engineBytes(tape);
      heapAtBaseline = heapAfterGc();
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const engineBytesAtEnd = engineBytes(tape);
  const heapAtEnd = heapAfterGc();
  const figures: SoakFigures = {
    backend, cycles, nodesPerCycle, checks, maxRelativeError, failures, baselineCycle,
    engineBytesAtBaseline, engineBytesAtEnd, engineGrowth: engineBytesAtEnd - engineBytesAtBaseline,
    heapAtBaseline, heapAtEnd, heapDrift: heapAtEnd - heapAtBaseline, seconds,
  };
  if (figures.engineGrowth !== 0) failures.push(`engine memory grew by ${figures.engineGrowth} bytes after cycle ${baselineCycle}`);
  if (!(Math.abs(figures.heapDrift) < MAX_HEAP_DRIFT)) failures.push(`JS heap drifted by ${figures.heapDrift} bytes after GC`);
  return figures;
}

async function main(): Promise<void> {
  if (typeof globalThis.gc !== 'function') {
    console.error('soak-run needs the garbage collector exposed: node --expose-gc --import tsx test/soak-run.ts <N>');
    process.exit(2);
  }
  const cycles = Number(process.argv[2] ?? 10_000);
  if (!Number.isInteger(cycles) || cycles < 2) {
    console.error(`usage: soak-run.ts <cycles >= 2> [wasm|js ...], got ${process.argv[2]}`);
    process.exit(2);
  }
  const asked = process.argv.slice(3);
  const backends = (asked.length ? asked : ['wasm', 'js']) as BackendKind[];
  let failed = false;
  for (const backend of backends) {
    const figures = await soak(backend, cycles);
    failed ||= figures.failures.length > 0;
    console.log(`SOAK ${JSON.stringify(figures)}`);
  }
  process.exit(failed ? 1 : 0);
}

await main();
