// The engine behind a Tape. Both engines keep the tape as a structure of arrays that the façade
// writes directly (op code and operand ids per node, values of inputs and constants); the engine
// runs the sweeps over it. The views must be re-read after `reserve` and `enableTangents`, which
// may move or reallocate them.

export type BackendKind = 'wasm' | 'js';

export interface TapeViews {
  op: Uint8Array;
  a: Int32Array;
  b: Int32Array;
  val: Float64Array;
  adj: Float64Array;
  /** Present once tangents are enabled. */
  tan: Float64Array | null;
  tanAdj: Float64Array | null;
}

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
  enableTangents(live: number): boolean;
  forward(from: number, to: number): void;
  reverse(out: number, seed: number, count: number): void;
  tangent(from: number, to: number): void;
}
