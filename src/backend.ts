// The engine behind a Tape. Both engines keep the tape as a structure of arrays that the façade
// writes directly (op code and operand ids per node, values of inputs and constants); the engine
// runs the sweeps over it. The views must be re-read after `reserve` and `enableTangents`, which
// may move or reallocate them.

/** The engine behind a tape: 'wasm' (the WebAssembly core) or 'js' (the pure-JS mode). */
export type BackendKind = 'wasm' | 'js';
/** A `backend` option: an engine, or 'auto' (wasm where the runtime has WebAssembly and compiles
 *  the core, else js). */
export type BackendChoice = BackendKind | 'auto';

export interface TapeViews {
  op: Uint8Array;
  a: Int32Array;
  b: Int32Array;
  val: Float64Array;
  adj: Float64Array;
  /** Present once tangents are enabled. */
  tan: Float64Array | null;
  tanAdj: Float64Array | null;
  /** Element regions of array-valued nodes (indexed by element offset, `elementCapacity` long). */
  xval: Float64Array;
  xadj: Float64Array;
  xtan: Float64Array | null;
  xtanAdj: Float64Array | null;
}

/** What a vector node's val slot holds when a fused run did not store its values, and its adj
 *  slot when a reverse sweep did not store its adjoints (assembly/vector.ts: DEFERRED, DROPPED). */
export const DEFERRED_VALUES = 1;
export const DROPPED_ADJOINT = 2;

/** Runs custom ops (user rules in JS) when a sweep reaches them; installed by the Tape. */
export interface CustomHandler {
  /** The node whose forward rule threw last, or -1 (Tape.evaluate resets and reads it). */
  failedForward: number;
  /** The node whose forward rule threw last, a refusal of the library's included (compiled
   *  replays reset and read it), or -1. */
  thrownAt: number;
  forward(i: number): void;
  reverse(i: number, g: number): void;
  tangent(i: number): void;
  reverseTangent(i: number, g: number, gTangent: number): void;
  /** The name of custom node i's function, for errors. */
  ruleName(i: number): string;
  /** Node i's operand values (checkNaN's message names them). */
  operandValues(i: number): Float64Array;
  /** Forgets the rules of the nodes a reset dropped. */
  clear(): void;
}

/** vjpBatch's cotangents for gradientBatch: rows × outputs.length entries, row-major, each seeded
 *  at its output node. */
export interface BatchSeeds { rows: Float64Array; outputs: Int32Array }

export interface Backend {
  readonly kind: BackendKind;
  /** Current views; replaced (not mutated) by reserve/enableTangents. */
  views: TapeViews;
  capacity: number;
  /** Bytes of tape storage per node (all regions). */
  nodeBytes(): number;
  /** Bytes the engine holds for the tape (wasm memory size, or the typed arrays' total). */
  memoryBytes(): number;
  /** Grows to at least `minCapacity` nodes, keeping the first `live`. False (and nothing
   *  changed) when the limit or the memory does not allow it. */
  reserve(minCapacity: number, live: number, maxCapacity: number): boolean;
  /** Elements the element regions hold. */
  elementCapacity: number;
  /** Bytes per element (all element regions). */
  elementBytes(): number;
  /** Grows the element regions to at least `minElements`, keeping the first `live`. False (and
   *  nothing changed) when the limit or the memory does not allow it. */
  reserveElements(minElements: number, live: number, maxElements: number): boolean;
  /** How many elements are live: the sweeps clear that many adjoints. */
  setLiveElements(n: number): void;
  /** Compiled replay: inputs are the elements of one input vector (node 1), not nodes
   *  [0, nInputs); replayForward writes them there and gradientBatch reads their adjoints. */
  setVectorInput(on: boolean): void;
  /** Adds the tangent regions, within `maxCapacity` nodes and `maxElements` elements where the
   *  capacities a larger recording left pass them (never below the live ones). */
  enableTangents(live: number, maxCapacity: number, maxElements: number): boolean;
  /** Shrinks the node and element capacities to at most these (never below the live ones), so
   *  that the other may grow within a memory limit; replaces the views where it moves them. */
  fitCapacities(maxCapacity: number, maxElements: number, live: number): void;
  forward(from: number, to: number): void;
  /** clearAdjoints + seed `out` + sweepReverse, in one call. */
  reverse(out: number, seed: number, count: number): void;
  clearAdjoints(count: number, withTangents: boolean): void;
  /** Reverse sweep from `top` over adjoints seeded through the views. */
  sweepReverse(top: number): void;
  /** Computes the values of vector node i where a fused run did not store them (see
   *  `materialize` in assembly/vector.ts); a no-op where every value is stored. */
  materialize(i: number): void;
  /** Computes the tangents of vector node i where a fused run's tangent kernel did not store them
   *  (see `materializeTangent` in assembly/vector.ts); a no-op where every tangent is stored. */
  materializeTangent(i: number): void;
  /** `materializeTangent` for every node below `to`. */
  materializeTangents(to: number): void;
  /** Zeroes the element tangents a tangent sweep over `count` nodes and `elements` elements reads
   *  before it writes them (the wasm engine's sweep writes every vector node's but the leaves'). */
  clearElementTangents(count: number, elements: number): void;
  /** Whether reverse sweeps store the adjoint of every vector node, or may leave those of fused
   *  runs' nodes out (their adj slot then reads DROPPED_ADJOINT). */
  setKeepAdjoints(on: boolean): void;
  /** The output of the hvp whose tangent sweep runs next, or -1 (after it, or for a jvp): a sweep
   *  may then leave tangents that only that output's own tangent needs uncomputed (the wasm engine
   *  leaves a fused run summed into it to the reverse tangent kernel; its tangent reads NaN). */
  setHvpOutput(out: number): void;
  sweepReverseTangent(top: number): void;
  tangent(from: number, to: number): void;
  /** After `tangent`: adjoints and their tangents (forward over reverse) for `out`. */
  reverseTangent(out: number, seed: number, count: number): void;
  /** Compiled replay: the comparison nodes a recording depends on and their recorded values. */
  setGuards(nodes: Int32Array, expected: Float64Array): void;
  /** Writes inputs x into nodes [0, nInputs), recomputes [nInputs, count), checks the guards:
   *  returns -1, or the node id of the first comparison that came out the other way. `hvpOutput`:
   *  the output of the hvp whose sweeps follow at once, nothing but the guards read in between,
   *  whose value nothing reads either: the replay may leave it uncomputed (the wasm engine, where
   *  it sums a fused run: its value then reads NaN), or -1. */
  replayForward(x: ArrayLike<number>, nInputs: number, count: number, hvpOutput?: number): number;
  /** For a compiled tape: `sweepReverse`, `tangent` and `reverseTangent` over the whole tape, run
   *  by generated code where the engine has it for this tape (the wasm engine), else the same
   *  sweeps interpreted. */
  sweepReverseReplay(top: number): void;
  tangentReplay(from: number, to: number): void;
  reverseTangentReplay(out: number, seed: number, count: number): void;
  /** Gradients of `out` for input rows [fromRow, toRow) of X (row-major), into the same rows
   *  of G. Returns toRow, or the first row whose guards failed (rows before it are done). With
   *  `seeds` (vjpBatch's, of a tape with scalar inputs), each row's reverse sweep is seeded with
   *  its cotangent row at the output nodes listed, `out` the highest of them, and `values` takes
   *  each row's output values. */
  gradientBatch(X: Float64Array, fromRow: number, toRow: number, nInputs: number, count: number, out: number, G: Float64Array, values: Float64Array | null, seeds?: BatchSeeds): number;
  /** The first node in [from, to) whose value (not counting inputs and constants) or, when
   *  `values` is false, adjoint is NaN or ±Infinity; -1 if none. */
  firstNonFinite(from: number, to: number, values: boolean): number;
  /** Called when the engine lost the tape to a fault and started afresh (wasm traps). */
  onTrap: (() => void) | null;
  /** Where custom ops go; null until a tape installs one. */
  custom: CustomHandler | null;
}

/** @internal from[fromAt, fromAt + length) into out at outAt, for the inputs and gradients of a
 *  call: up to COPY_LOOP numbers by a loop, which allocates nothing; past it by `set`, with a
 *  view (about 100 bytes) where `from` is more than those numbers. A loop costs 1-1.5 ns a
 *  number against `set`'s 0.1 (loops up to 4,096 numbers made a gradient of 4,096 inputs twice
 *  as slow: a review). */
export function copyNumbers(from: Float64Array, fromAt: number, out: Float64Array, outAt: number, length: number): void {
  if (length <= COPY_LOOP) {
    for (let k = 0; k < length; k++) out[outAt + k] = from[fromAt + k]!;
    return;
  }
  out.set(fromAt === 0 && from.length === length ? from : from.subarray(fromAt, fromAt + length), outAt);
}

const COPY_LOOP = 64;
