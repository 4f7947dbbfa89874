import type { Backend, CustomHandler, TapeViews } from '../backend.ts';
import { instantiateCore, type CoreExports } from './loader.ts';

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
    const ok = this.core.reserve(minCapacity, live, maxCapacity) !== 0;
    this.refreshViews();
    return ok;
  }

  enableTangents(live: number): boolean {
    const ok = this.core.enableTangents(live) !== 0;
    this.refreshViews();
    return ok;
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
