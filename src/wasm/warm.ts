// V8 runs a wasm function first in baseline code (Liftoff) and optimises it in the background
// once it has run enough, but a call already running stays in the code it started in: wasm has
// no on-stack replacement. The forward and reverse sweeps are single long calls, so in a fresh
// process the first gradient of a large tape ran to its end in baseline code (1.1 M nodes of
// Rosenbrock: forward 6.5-7.3 ns/node against 1.3 later, reverse 15-18 against 2.8). So when a
// tape first grows past WARM_AT nodes (once per process and core build), both run once on a
// small tape in an instance of their own, and V8 optimises them while the caller records the
// rest. Done at load instead, it cost every program 7-10 ms of start-up (median of 8 fresh
// processes, load and a first tiny gradient) for a gain only large tapes see. Only these two
// sweeps, and the tangent sweeps are calls most programs never make. The code generator's passes
// over the whole tape (use counts, links, the loop search, repeats) run on every first compile,
// and start in baseline code too: a compiled function's recording that first grows past WARM_AT
// nodes also runs them once, on a tape of their own in the same side instance (warmPlanner). The
// branchy loss at 10,000 samples (625 k nodes) then recorded in 36.0 ms against 33.2 and
// generated in 33.6 against 44.8: its first call 71.4 against 78.0 ms (medians of 12 fresh
// processes each, alternating). The worker threads that
// optimise the passes (Node starts four, on two cores here) then run during the recording
// instead of beside the planner: with two of them (`--v8-pool-size=2`) the first call went
// 67.4 -> 65.8 ms. A side instance of its own for the passes had cost more than it saved.
import { Op } from '../ops.ts';
import { instantiateCore, type CoreExports } from './loader.ts';

/** Tape capacity (nodes) whose first reservation warms the core. */
export const WARM_AT = 1 << 15;

// The commonest ops and a few behind the dispatch; every value stays bounded.
const OPS = [Op.mul, Op.sin, Op.add, Op.square, Op.tanh, Op.sub, Op.exp, Op.log1p, Op.sqrt, Op.neg] as const;
/** Nodes of the warm-up tape after its two inputs: enough for V8 to optimise both sweeps
 *  (1,024 measured the same as 16,384). */
export const WARM_NODES = 2048;

/** The warm-up tape as `Tape.load` takes it: op codes, operands, and its two inputs' values. */
export function warmTape(): { op: Uint8Array; a: Int32Array; b: Int32Array; leafValues: Float64Array } {
  const count = 2 + WARM_NODES;
  const op = new Uint8Array(count), a = new Int32Array(count), b = new Int32Array(count);
  for (let i = 0; i < 2; i++) {
    op[i] = Op.input;
    a[i] = b[i] = i;
  }
  for (let i = 2; i < count; i++) {
    const code = OPS[i % OPS.length]!;
    op[i] = code;
    // mul, add and sub bring in an input (so both get gradient), the rest read the previous node.
    a[i] = code === Op.mul || code === Op.add || code === Op.sub ? i % 2 : i - 1;
    b[i] = i - 1;
  }
  return { op, a, b, leafValues: Float64Array.of(0.25, 0.5) };
}

/** Runs the forward and reverse sweeps once on the warm-up tape in `core`, an instance of its
 *  own, and returns the sum of the two inputs' adjoints (NaN where its memory has no room). */
export function warmCore(core: CoreExports): number {
  const { op, a, b, leafValues } = warmTape();
  const count = op.length;
  if (!core.reserve(count, 0, 2 * count)) return NaN;
  const { buffer } = core.memory;
  new Uint8Array(buffer, core.opPtr(), count).set(op);
  new Int32Array(buffer, core.aPtr(), count).set(a);
  new Int32Array(buffer, core.bPtr(), count).set(b);
  new Float64Array(buffer, core.valPtr(), 2).set(leafValues);
  core.forward(2, count);
  core.reverse(count - 1, 1, count);
  const adj = new Float64Array(buffer, core.adjPtr(), 2);
  return adj[0]! + adj[1]!;
}

// The planner's warm-up tape: samples, and features in each.
const PLANNER_SAMPLES = 300, PLANNER_FEATURES = 20;

/** The planner's warm-up tape, as data-dependent code records it: per sample an inner loop of
 *  PLANNER_FEATURES (constant, mul of an input by it, add to a sum), then a softplus, a sub for
 *  some of the samples, and an add to the loss; the inputs first. */
export function plannerWarmTape(): { op: Uint8Array; a: Int32Array; b: Int32Array; inputs: number } {
  const inputs = PLANNER_FEATURES + 1;
  const count = inputs + PLANNER_SAMPLES * (3 * PLANNER_FEATURES + 3);
  const op = new Uint8Array(count), a = new Int32Array(count), b = new Int32Array(count);
  let n = 0;
  const node = (code: number, x: number, z: number): number => {
    op[n] = code;
    a[n] = x;
    b[n] = z;
    return n++;
  };
  for (let i = 0; i < inputs; i++) node(Op.input, i, i);
  let loss = -1, seed = 1;
  for (let s = 0; s < PLANNER_SAMPLES; s++) {
    let z = PLANNER_FEATURES;
    for (let j = 0; j < PLANNER_FEATURES; j++) {
      const c = node(Op.const, n, n);
      z = node(Op.add, z, node(Op.mul, j, c));
    }
    let term = node(Op.softplus, z, z);
    // The branch each sample takes, a pseudo-random bit (an LCG's high bit): runs of equal ones
    // and changes.
    seed = (Math.imul(seed, 1103515245) + 12345) | 0;
    if (seed < 0) term = node(Op.sub, term, z);
    loss = loss < 0 ? term : node(Op.add, loss, term);
  }
  return { op: op.subarray(0, n), a: a.subarray(0, n), b: b.subarray(0, n), inputs };
}

/** Runs the code generator's passes over the whole tape (use counts, the loop search with its
 *  links, repeats) on the planner's warm-up tape in `core`, an instance of its own, and returns
 *  how many top-level segments the search found and how many repeat an earlier one (null where
 *  its memory has no room). The search's sizes are the warm-up's own (the planner's are in the
 *  code generator's chunk, which the core API does not load): the code the passes run is the
 *  same at any. */
export function warmPlanner(core: CoreExports): { segments: number; repeats: number } | null {
  const { op, a, b, inputs } = plannerWarmTape();
  const count = op.length, nodes = count - inputs;
  if (!core.reserve(count, 0, 2 * count)) return null;
  const { buffer } = core.memory;
  new Uint8Array(buffer, core.opPtr(), count).set(op);
  new Int32Array(buffer, core.aPtr(), count).set(a);
  new Int32Array(buffer, core.bPtr(), count).set(b);
  if (core.countUses(inputs, count) !== 0) return null;
  const maxPeriod = 256, chunk = 4096;
  let tableSize = 16;
  while (tableSize < 2 * nodes) tableSize <<= 1;
  // Links over the whole tape, the search's remembered failures and strides, its segments (one
  // per node at most), what repeatsOf writes after them and its table, then the seeds (none).
  const linkBytes = 8 * nodes + 8 * tableSize;
  const segmentsAt = linkBytes + ((4 * (maxPeriod + 1) + 7) & ~7) + 12 * maxPeriod;
  const seededAt = segmentsAt + 24 * nodes + 4 * tableSize;
  const at = core.scratch(seededAt + count);
  if (at === 0) return null;
  const segments = core.planSegments(inputs, count, 0x7fffffff, at, linkBytes, maxPeriod, chunk, nodes);
  if (segments <= 0) return null;
  new Uint8Array(core.memory.buffer, at + seededAt, count).fill(0);
  core.repeatsOf(segments, at + segmentsAt, inputs, at + seededAt, 4096, 4, tableSize, -1);
  const found = new Int32Array(core.memory.buffer, at + segmentsAt + 20 * segments, segments);
  return { segments, repeats: found.filter((r) => r >= 0).length };
}

const warmed = new WeakSet<WebAssembly.Module>(), plannerWarmed = new WeakSet<WebAssembly.Module>();

/** Whether `module`'s sweeps (with `planner`: the code generator's passes) were warmed in this
 *  process (for tests). */
export function isWarmed(module: WebAssembly.Module, planner = false): boolean {
  return (planner ? plannerWarmed : warmed).has(module);
}

/** Warms `module`'s sweeps once per process (see above), and with `planner` (a compiled
 *  function's recording) the code generator's passes once too, in the same side instance. An
 *  optimisation only: a failure leaves the core as it was, and the same calls on a user's tape
 *  report their errors there. */
export function warmOnce(module: WebAssembly.Module, planner = false): void {
  let core: CoreExports | null = null;
  const instance = (): CoreExports => (core ??= instantiateCore(module));
  if (!warmed.has(module)) {
    warmed.add(module);
    try {
      warmCore(instance());
    } catch {
      // See above.
    }
  }
  if (planner && !plannerWarmed.has(module)) {
    plannerWarmed.add(module);
    try {
      warmPlanner(instance());
    } catch {
      // See above.
    }
  }
}
