// V8 runs a wasm function first in baseline code (Liftoff) and optimises it in the background
// once it has run enough, but a call already running stays in the code it started in: wasm has
// no on-stack replacement. The forward and reverse sweeps are single long calls, so in a fresh
// process the first gradient of a large tape ran to its end in baseline code (1.1 M nodes of
// Rosenbrock: forward 6.5-7.3 ns/node against 1.3 later, reverse 15-18 against 2.8). So when a
// tape first grows past WARM_AT nodes (once per process and core build), both run once on a
// small tape in an instance of their own, and V8 optimises them while the caller records the
// rest. Done at load instead, it cost every program 7-10 ms of start-up (median of 8 fresh
// processes, load and a first tiny gradient) for a gain only large tapes see. Only these two
// sweeps: the tangent sweeps and the planner's passes are calls most programs never make.
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

const warmed = new WeakSet<WebAssembly.Module>();

/** Whether `module`'s sweeps were warmed in this process (for tests). */
export function isWarmed(module: WebAssembly.Module): boolean {
  return warmed.has(module);
}

/** Warms `module`'s sweeps once per process (see above). An optimisation only: a failure leaves
 *  the core as it was, and the same calls on a user's tape report their errors there. */
export function warmOnce(module: WebAssembly.Module): void {
  if (warmed.has(module)) return;
  warmed.add(module);
  try {
    warmCore(instantiateCore(module));
  } catch {
    // See above.
  }
}
