// The implementations a workload can be timed with. A child process prepares exactly one of them
// (so no implementation's JIT state, heap or wasm memory leaks into another's numbers), checks
// its gradient, then times `run()`.
import { createTape, type BackendKind } from '../src/index.ts';
import type { Instance, Phase, Workload } from './workloads.ts';

export interface Runner {
  /** One timed run: value (and gradient into `grad`, when the implementation has one). */
  run(): number;
  /** The gradient of the last run, or null for the plain (no AD) floor. */
  readonly grad: Float64Array | null;
  /** Split of the last run into recording and sweeping, for tape-based runs (ms). */
  lastPhase?: { recordMs: number; sweepMs: number };
  /** Facts about the tape after a run: node count, bytes per node, engine memory. */
  info?(): Record<string, number | string>;
}

export interface Impl {
  readonly id: string;
  readonly label: string;
  /** 'tapegrad' for our own runs (they get ratios, tape bytes and phase splits). */
  readonly family: 'floor' | 'hand' | 'tapegrad' | 'peer';
  readonly precision: 'f64' | 'f32';
  /** Human note for the results file (API style, vectorised or scalar, ...). */
  readonly note: string;
  /** Whether this implementation has a version of the workload at all. */
  supports(w: Workload, inst: Instance): boolean;
  prepare(w: Workload, inst: Instance): Promise<Runner>;
}

const plain: Impl = {
  id: 'plain',
  label: 'plain JS (no AD)',
  family: 'floor',
  precision: 'f64',
  note: 'the function value only, f64 numbers: the floor',
  supports: () => true,
  async prepare(_w, inst) {
    return { grad: null, run: () => inst.plain() };
  },
};

const hand: Impl = {
  id: 'hand',
  label: 'hand-written gradient',
  family: 'hand',
  precision: 'f64',
  note: 'value and gradient by a hand-derived formula',
  supports: (_w, inst) => inst.hand !== undefined,
  async prepare(_w, inst) {
    const g = new Float64Array(inst.x.length);
    const f = inst.hand!;
    return { grad: g, run: () => f(g) };
  },
};

function tapegradImpl(backend: BackendKind, api: 'var' | 'handle'): Impl {
  return {
    id: `${backend}-${api}`,
    label: `tapegrad ${backend} ${api === 'var' ? 'Var API' : 'handles'}`,
    family: 'tapegrad',
    precision: 'f64',
    note: `record + reverse on the ${backend} backend via the ${api === 'var' ? 'Var API' : 'handle API (tape.handles)'}; tape reset and re-recorded every run`,
    supports: () => true,
    async prepare(_w, inst) {
      const tape = await createTape({ backend });
      const g = new Float64Array(inst.x.length);
      const phase: Phase = { recordEnd: 0 };
      const body = api === 'var' ? inst.tapeVar : inst.tapeHandle;
      const runner: Runner = {
        grad: g,
        run() {
          const t0 = performance.now();
          const v = body(tape, g, phase);
          const t1 = performance.now();
          runner.lastPhase = { recordMs: phase.recordEnd - t0, sweepMs: t1 - phase.recordEnd };
          return v;
        },
        info: () => ({
          tapeNodes: tape.size,
          nodeBytes: tape.nodeBytes,
          tapeBytes: tape.size * tape.nodeBytes,
          engineMemoryBytes: tape.memoryBytes,
        }),
      };
      return runner;
    },
  };
}

/** Every implementation, in table order. */
export const IMPLS: readonly Impl[] = [
  plain,
  hand,
  tapegradImpl('wasm', 'var'),
  tapegradImpl('wasm', 'handle'),
  tapegradImpl('js', 'var'),
  tapegradImpl('js', 'handle'),
];

export function implById(id: string): Impl {
  const impl = IMPLS.find((i) => i.id === id);
  if (!impl) throw new Error(`unknown implementation '${id}' (have: ${IMPLS.map((i) => i.id).join(', ')})`);
  return impl;
}
