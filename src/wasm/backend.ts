import type { Backend, CustomHandler, TapeViews } from '../backend.ts';
import { instantiateCore, type CoreExports } from './loader.ts';

// Rows per batched call are capped so the scratch area stays small next to the tape.
const BATCH_BYTES = 1 << 20;

/** The wasm engine: the tape lives in the instance's linear memory; the views below are windows
 *  onto it, re-derived after every call that can grow memory (a grown memory detaches the old
 *  buffer, so a stale view would read zeros). */
export class WasmBackend implements Backend {
  readonly kind = 'wasm' as const;
  views!: TapeViews;
  capacity = 0;
  custom: CustomHandler | null = null;
  readonly core: CoreExports;

  constructor(module: WebAssembly.Module) {
    const handler = (): CustomHandler => {
      if (!this.custom) throw new Error('custom op reached with no handler installed');
      return this.custom;
    };
    this.core = instantiateCore(module, {
      customForward: (i) => handler().forward(i),
      customReverse: (i, g) => handler().reverse(i, g),
      customTangent: (i) => handler().tangent(i),
      customReverseTangent: (i, g, gt) => handler().reverseTangent(i, g, gt),
    });
    this.refreshViews();
  }

  private refreshViews(): void {
    const core = this.core;
    const buffer = core.memory.buffer;
    const capacity = core.getCapacity();
    const tangents = core.tangentsEnabled() !== 0;
    this.capacity = capacity;
    this.views = {
      op: new Uint8Array(buffer, core.opPtr(), capacity),
      a: new Int32Array(buffer, core.aPtr(), capacity),
      b: new Int32Array(buffer, core.bPtr(), capacity),
      val: new Float64Array(buffer, core.valPtr(), capacity),
      adj: new Float64Array(buffer, core.adjPtr(), capacity),
      tan: tangents ? new Float64Array(buffer, core.tanPtr(), capacity) : null,
      tanAdj: tangents ? new Float64Array(buffer, core.tanAdjPtr(), capacity) : null,
    };
  }

  nodeBytes(): number {
    return this.core.nodeBytes();
  }

  memoryBytes(): number {
    return this.core.memory.buffer.byteLength;
  }

  reserve(minCapacity: number, live: number, maxCapacity: number): boolean {
    this.guardsAt = -1;
    const ok = this.core.reserve(minCapacity, live, maxCapacity) !== 0;
    this.refreshViews();
    return ok;
  }

  enableTangents(live: number): boolean {
    this.guardsAt = -1;
    const ok = this.core.enableTangents(live) !== 0;
    this.refreshViews();
    return ok;
  }

  // Guards and batch rows live in the core's scratch area after the tape, laid out as
  // [guard expected f64 × G][guard nodes i32 × G, padded][rows in][rows out]. Growing the tape
  // moves that area, so its address is asked for again before every use (one cheap call).
  private guardNodes = new Int32Array(0);
  private guardExpected = new Float64Array(0);
  private guardsAt = -1;

  setGuards(nodes: Int32Array, expected: Float64Array): void {
    this.guardNodes = nodes.slice();
    this.guardExpected = expected.slice();
    this.guardsAt = -1;
  }

  private guardBytes(): number {
    const g = this.guardNodes.length;
    return (g * 12 + 15) & ~15;
  }

  /** Scratch with room for the guards plus `rowBytes`; returns the address after the guards. */
  private scratchFor(rowBytes: number): number {
    const guardBytes = this.guardBytes();
    const base = this.core.scratch(guardBytes + rowBytes);
    if (base === 0) throw new RangeError(`out of memory: no room for ${rowBytes} bytes of replay buffers`);
    if (this.views.val.buffer !== this.core.memory.buffer) this.refreshViews();
    if (this.guardsAt !== base) {
      const g = this.guardNodes.length;
      new Float64Array(this.core.memory.buffer, base, g).set(this.guardExpected);
      new Int32Array(this.core.memory.buffer, base + g * 8, g).set(this.guardNodes);
      this.guardsAt = base;
    }
    return base + guardBytes;
  }

  replayForward(x: ArrayLike<number>, nInputs: number, count: number): number {
    const at = this.scratchFor(nInputs * 8);
    new Float64Array(this.core.memory.buffer, at, nInputs).set(x);
    return this.core.replayForward(at, nInputs, count, this.guardsAt, this.guardNodes.length);
  }

  gradientBatch(X: Float64Array, fromRow: number, toRow: number, nInputs: number, count: number, out: number, G: Float64Array): number {
    const chunk = Math.max(1, Math.min(toRow - fromRow, Math.floor(BATCH_BYTES / Math.max(8, 16 * nInputs))));
    let row = fromRow;
    while (row < toRow) {
      const rows = Math.min(chunk, toRow - row);
      const span = rows * nInputs;
      const at = this.scratchFor(2 * span * 8);
      const buffer = this.core.memory.buffer;
      new Float64Array(buffer, at, span).set(X.subarray(row * nInputs, row * nInputs + span));
      const done = this.core.gradientBatch(at, rows, nInputs, count, out, at + span * 8, this.guardsAt, this.guardNodes.length);
      G.set(new Float64Array(buffer, at + span * 8, done * nInputs), row * nInputs);
      row += done;
      if (done < rows) return row;
    }
    return toRow;
  }

  forward(from: number, to: number): void {
    this.core.forward(from, to);
  }

  reverse(out: number, seed: number, count: number): void {
    this.core.reverse(out, seed, count);
  }

  tangent(from: number, to: number): void {
    this.core.tangent(from, to);
  }

  reverseTangent(out: number, seed: number, count: number): void {
    this.core.reverseTangent(out, seed, count);
  }

  clearAdjoints(count: number, withTangents: boolean): void {
    this.core.clearAdjoints(count, withTangents ? 1 : 0);
  }

  sweepReverse(top: number): void {
    this.core.sweepReverse(top);
  }

  sweepReverseTangent(top: number): void {
    this.core.sweepReverseTangent(top);
  }
}
