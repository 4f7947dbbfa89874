// The implementations a workload can be timed with. A child process prepares exactly one of them
// (so no implementation's JIT state, heap or wasm memory leaks into another's numbers), checks
// its gradient, then times `run()`.
import { Op, compile, createTape, init, type BackendKind, type CompiledFunction, type Tape } from '../src/index.ts';
import { JAX_STYLE, TFJS_STYLE } from './peers/styles.ts';
import type { Instance, Phase, Workload, WorkloadKind } from './workloads.ts';

export interface Runner {
  /** One timed run: value (and gradient into `grad`, when the implementation has one). */
  run(): number;
  /** The gradient of the last run, or null for the plain (no AD) floor. */
  readonly grad: Float64Array | null;
  /** Split of the last run into recording and sweeping, for tape-based runs (ms); where the run
   *  reads the value before the reverse sweep, the sweeps split into forward and reverse. */
  lastPhase?: { recordMs: number; sweepMs: number; forwardMs?: number; reverseMs?: number };
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
  /** Largest n this implementation is run at (slow peers on workloads linear in n): the table
   *  then scales its time up to the workload's n, and says so. */
  sizeCap?: Partial<Record<WorkloadKind, { full: number; quick: number }>>;
  /** How this implementation expresses the workload (scalar or vectorised), for peers. */
  style?(kind: WorkloadKind): string;
  /** Looser gradient-check tolerance than the workload's, for implementations whose math
   *  functions are less accurate (it is reported with the result). */
  tolerance?: number;
  /** Why this implementation is not run on a workload at all (measured, not assumed). */
  skip?: Partial<Record<WorkloadKind, string>>;
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
          phase.recordEnd = NaN;
          phase.forwardEnd = NaN;
          const t0 = performance.now();
          const v = body(tape, g, phase);
          const t1 = performance.now();
          // record: t0 to recordEnd; forward: reading the output's value (the forward sweep), to
          // forwardEnd; reverse: the rest (clearing adjoints, the reverse sweep, reading the
          // gradient). Workloads that record many small tapes per run (tiny) do not split.
          const rec = phase.recordEnd, fwd = phase.forwardEnd;
          if (rec === rec) {
            runner.lastPhase = fwd === fwd
              ? { recordMs: rec - t0, sweepMs: t1 - rec, forwardMs: fwd - rec, reverseMs: t1 - fwd }
              : { recordMs: rec - t0, sweepMs: t1 - rec };
          }
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

type ReplayMode = 'call' | 'interpreted' | 'batch' | 'batch-simd' | 'batch-scalar' | 'hvp' | 'hvp-batch';

const REPLAY: Record<ReplayMode, { suffix: string; label: string; options: { simd?: boolean; codegen?: boolean }; how: string }> = {
  call: { suffix: 'replay', label: 'replay', options: {}, how: 'gradient(x, out) per evaluation' },
  interpreted: { suffix: 'replay-interpreted', label: 'replay (interpreted)', options: { codegen: false }, how: 'gradient(x, out) per evaluation, interpreting the tape' },
  batch: { suffix: 'batch', label: 'batched replay', options: {}, how: 'gradientBatch(X, rows, out), generated sweeps row by row' },
  'batch-simd': { suffix: 'batch-simd', label: 'batched replay (SIMD kernel)', options: { codegen: false, simd: true }, how: 'gradientBatch(X, rows, out) with the interpreter\'s two-row SIMD kernel' },
  'batch-scalar': { suffix: 'batch-scalar', label: 'batched replay (scalar kernel)', options: { codegen: false, simd: false }, how: 'gradientBatch(X, rows, out) with the interpreter\'s scalar kernel' },
  hvp: { suffix: 'hvp', label: 'replay hvp', options: {}, how: 'hvp(x, v, out)' },
  'hvp-batch': { suffix: 'hvp-batch', label: 'batched hvp', options: {}, how: 'hvpBatch(X, rows, V, out), a direction per row' },
};

/** Record once (compile), then every run replays forward + reverse inside the engine. For the
 *  throughput workload a run is n gradients: one call each, or one gradientBatch call. 'hvp'
 *  times one Hessian-vector product (tangent + reverse-with-tangents sweeps), whose sweep also
 *  leaves the gradient, which is what gets checked. */
function tapegradReplay(backend: BackendKind, mode: ReplayMode): Impl {
  const { suffix, label, options, how } = REPLAY[mode];
  const perCall = mode === 'call' || mode === 'interpreted';
  const batch = mode.startsWith('batch') || mode === 'hvp-batch';
  return {
    id: `${backend}-${suffix}`,
    label: `tapegrad ${backend} ${label}`,
    family: 'tapegrad',
    precision: 'f64',
    note: `compile(f, ${JSON.stringify(options)}) once, then ${how} on the ${backend} backend; no JS work per node`,
    supports: (w, inst) =>
      inst.compiled !== undefined &&
      (backend === 'wasm' || mode === 'call' || mode === 'batch' || mode === 'hvp' || mode === 'hvp-batch') &&
      (perCall || (mode === 'hvp' ? w.id === 'rosenbrock-1e4' : batch && inst.compiled.rows !== undefined)),
    async prepare(_w, inst) {
      await init();
      const { fn, inputs, rows } = inst.compiled!;
      const at = rows ? rows.subarray(0, inputs) : inst.x;
      const f: CompiledFunction = compile(fn, { inputs, backend, at, ...options });
      const g = new Float64Array(inst.x.length);
      if (rows) {
        const count = rows.length / inputs;
        const G = new Float64Array(rows.length);
        const one = new Float64Array(inputs);
        // The value of a batched run is not computed by gradientBatch: take the replayed values
        // once, untimed, so the check still compares them.
        let value = 0;
        for (let r = 0; r < count; r++) value += f.value(rows.subarray(r * inputs, (r + 1) * inputs)) as number;
        const sum = (): void => {
          g.fill(0);
          for (let r = 0; r < count; r++) for (let k = 0; k < inputs; k++) g[k] += G[r * inputs + k]!;
        };
        if (mode === 'hvp-batch') {
          // Timed: the Hessian-vector products alone. Checked: the rows against one hvp call
          // each (bit for bit, as README promises), and the gradient, which the batch does not
          // return, from gradientBatch untimed.
          const V = Float64Array.from(rows, (_, k) => Math.cos(k));
          const HV = new Float64Array(rows.length), one = new Float64Array(inputs);
          f.hvpBatch(rows, count, V, HV);
          for (let r = 0; r < count; r++) {
            f.hvp(rows.subarray(r * inputs, (r + 1) * inputs), V.subarray(r * inputs, (r + 1) * inputs), one);
            for (let k = 0; k < inputs; k++) {
              if (!Object.is(one[k], HV[r * inputs + k])) throw new Error(`hvpBatch row ${r} differs from hvp: ${HV[r * inputs + k]} against ${one[k]}`);
            }
          }
          f.gradientBatch(rows, count, G);
          sum();
          return {
            grad: g,
            run() {
              f.hvpBatch(rows, count, V, HV);
              return value;
            },
          };
        }
        return perCall
          ? {
              grad: g,
              run() {
                let s = 0;
                for (let r = 0; r < count; r++) {
                  s += f.valueAndGradient(rows.subarray(r * inputs, (r + 1) * inputs), one)[0];
                  for (let k = 0; k < inputs; k++) G[r * inputs + k] = one[k]!;
                }
                sum();
                return s;
              },
            }
          : {
              grad: g,
              run() {
                f.gradientBatch(rows, count, G);
                sum();
                return value;
              },
            };
      }
      if (mode === 'hvp') {
        const v = Float64Array.from(inst.x, (_, k) => Math.cos(k));
        const hv = new Float64Array(inputs);
        return {
          grad: g,
          run() {
            f.hvp(inst.x, v, hv);
            const rec = f.recorded!;
            g.set(rec.tape.engine.views.adj.subarray(0, inputs));
            return rec.tape.engine.views.val[rec.outputs[0]!]!;
          },
          info: () => ({ tapeNodes: f.size, nodeBytes: f.recorded!.tape.nodeBytes }),
        };
      }
      return {
        grad: g,
        run: () => f.valueAndGradient(inst.x, g)[0],
        info: () => ({ tapeNodes: f.size, nodeBytes: f.recorded!.tape.nodeBytes, rerecords: f.rerecords, generatedSweeps: f.generatedSweeps }),
      };
    },
  };
}

/** Facts about a tape holding vector nodes: nodes, elements, and the bytes of both. */
function vectorTapeInfo(tape: Tape): Record<string, number> {
  const nodes = tape.size, nodeBytes = tape.nodeBytes;
  const elements = tape.elementCount, elementBytes = tape.engine.elementBytes();
  const op = tape.engine.views.op;
  // Every array-valued node has one vmeta node before it (its element range).
  let vectorNodes = 0;
  for (let i = 0; i < nodes; i++) if (op[i] === Op.vmeta) vectorNodes++;
  const tapeBytes = nodes * nodeBytes + elements * elementBytes;
  return {
    tapeNodes: nodes,
    nodeBytes,
    vectorNodes,
    elements,
    elementBytes,
    tapeBytes,
    // All of the tape (node slots too) over the elements of its vector nodes.
    tapeBytesPerElement: elements > 0 ? tapeBytes / elements : NaN,
    engineMemoryBytes: tape.memoryBytes,
  };
}

/** The Vec API: the workload's vector form (`alt`: its second one), recorded afresh each run
 *  (tape.reset(), tape.vector(x), f, tape.gradient(f, [x], 1, g)), or compiled once with
 *  `{ vector: true }` and replayed with valueAndGradient(x, out) (the interpreter's vector rules:
 *  generated sweeps are off for vector tapes). */
function tapegradVec(backend: BackendKind, replay: boolean, alt: boolean): Impl {
  const form = (inst: Instance) => (alt ? inst.vecAlt : inst.vec);
  const what = alt ? 'second vector form (lse: GradBench\'s literal max/exp/sum/log)' : 'vector form';
  return {
    id: `${backend}-vec${alt ? '-literal' : ''}${replay ? '-replay' : ''}`,
    label: `tapegrad ${backend} Vec API${alt ? ' (literal)' : ''}${replay ? ' replay' : ''}`,
    family: 'tapegrad',
    precision: 'f64',
    note: replay
      ? `compile(f, { inputs, vector: true }) once on the ${backend} backend (constant data recorded then), then valueAndGradient(x, out) per run; the workload's ${what}`
      : `record + reverse on the ${backend} backend with the Vec API, the workload's ${what}: tape.reset(), tape.vector(x), f (constant data copied onto the tape by constantVector), tape.gradient(f, [x], 1, g) into the run's gradient array each run`,
    supports: (_w, inst) => form(inst) !== undefined,
    async prepare(_w, inst) {
      const vf = form(inst)!;
      const g = new Float64Array(inst.x.length);
      if (replay) {
        await init();
        const f: CompiledFunction = compile(vf.fn, { inputs: inst.x.length, vector: true, backend, at: inst.x });
        return {
          grad: g,
          run() {
            const v = f.valueAndGradient(inst.x, g)[0];
            vf.step?.(g);
            return v;
          },
          info: () => ({ ...vectorTapeInfo(f.recorded!.tape), generatedSweeps: f.generatedSweeps }),
        };
      }
      const tape = await createTape({ backend });
      const phase: Phase = { recordEnd: 0 };
      const body = alt ? inst.tapeVecAlt! : inst.tapeVec!;
      const runner: Runner = {
        grad: g,
        run() {
          phase.recordEnd = NaN;
          phase.forwardEnd = NaN;
          const t0 = performance.now();
          const v = body(tape, g, phase);
          const t1 = performance.now();
          const fwd = phase.forwardEnd!;
          runner.lastPhase = { recordMs: phase.recordEnd - t0, sweepMs: t1 - phase.recordEnd, forwardMs: fwd - phase.recordEnd, reverseMs: t1 - fwd };
          return v;
        },
        info: () => vectorTapeInfo(tape),
      };
      return runner;
    },
  };
}

const micrograd: Impl = {
  id: 'micrograd',
  label: 'micrograd-style JS',
  family: 'peer',
  precision: 'f64',
  note: 'one object and one closure per scalar op, topological sort over a visited Set (bench/peers/micrograd.ts); scalar style everywhere',
  supports: () => true,
  // Sizes at which one run takes ~0.1-0.7 s (at full size the chain takes ~5 s and 2.7 GB).
  sizeCap: {
    chain: { full: 30_000, quick: 10_000 },
    rosenbrock: { full: 20_000, quick: 10_000 },
    'advection-lw': { full: 500, quick: 100 },
    'advection-toon': { full: 500, quick: 100 },
    llsq: { full: 512, quick: 128 },
    gmm: { full: 50, quick: 20 },
    ode: { full: 1000, quick: 1000 },
  },
  async prepare(_w, inst) {
    const { prepareMicrograd } = await import('./peers/micrograd.ts');
    return prepareMicrograd(inst);
  },
};

function tfjsImpl(backend: 'cpu' | 'wasm'): Impl {
  return {
    id: `tfjs-${backend}`,
    label: `TensorFlow.js ${backend}`,
    family: 'peer',
    precision: 'f32',
    note: `@tensorflow/tfjs 4.22 on its ${backend === 'cpu' ? "pure-JS 'cpu'" : "'wasm' (single thread)"} backend, float32, tf.valueAndGrad(s) inside tf.tidy (bench/peers/tfjs.ts)`,
    supports: () => true,
    // Scalar style costs ~0.1-0.3 ms per op here (the chain at full size would take minutes and
    // tens of GB: every intermediate 0-d tensor stays alive for the gradient).
    sizeCap: {
      chain: { full: 1_000, quick: 300 },
      tiny: { full: 500, quick: 200 },
      'advection-lw': { full: 500, quick: 200 },
      'advection-toon': { full: 500, quick: 200 },
    },
    style: (kind) => TFJS_STYLE[kind],
    async prepare(_w, inst) {
      const { prepareTfjs } = await import('./peers/tfjs.ts');
      return prepareTfjs(inst, backend);
    },
  };
}

function jaxImpl(mode: 'eager' | 'jit'): Impl {
  return {
    id: `jax-${mode}`,
    label: `jax-js ${mode === 'eager' ? 'eager' : 'jit(grad)'}`,
    family: 'peer',
    precision: 'f64',
    note:
      `@jax-js/jax 0.1.25 on its 'wasm' device, float64, ${mode === 'eager' ? 'valueAndGrad(f) each call' : 'jit(valueAndGrad(f)) compiled in the first, untimed run'}; ` +
      'Float16Array polyfilled from @petamoriken/float16 (bench/peers/jax.ts)',
    supports: () => true,
    // jax-js's float64 sin/cos/exp/log on wasm are accurate to ~2e-8 (cos(0.3) comes out 2e-8 off).
    tolerance: 1e-5,
    // Eager: ~1.4 ms per scalar step on the chain, ~3 ms per tiny gradient, and advection grows
    // faster than linearly in nt (100 steps 0.9 s, 200 steps 3.7 s), so scaled times there are a
    // lower bound. Both modes overflow the stack in jax-js's recursive tracer disposal from 200
    // Toon steps (Lax-Wendroff: from ~400); at 100 Toon steps they run, and disagree with the
    // reference, which is the more useful thing to report.
    sizeCap: {
      chain: { full: 300, quick: 100 },
      tiny: mode === 'eager' ? { full: 100, quick: 50 } : { full: 2_000, quick: 500 },
      'advection-lw': { full: 200, quick: 100 },
      'advection-toon': { full: 100, quick: 100 },
    },
    skip:
      mode === 'jit'
        ? {
            chain:
              'jit(valueAndGrad) compile time grows exponentially with the chain length (measured: 2 steps 0.23 s, ' +
              '3 steps 2.8 s, 4 steps 47 s; 10 steps ran out of a 2 GB heap): each use of x is inlined into the fused kernel',
          }
        : {},
    style: (kind) => JAX_STYLE[kind],
    async prepare(_w, inst) {
      const { prepareJax } = await import('./peers/jax.ts');
      return prepareJax(inst, mode);
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
  tapegradReplay('wasm', 'call'),
  tapegradReplay('wasm', 'interpreted'),
  tapegradReplay('js', 'call'),
  tapegradReplay('wasm', 'batch'),
  tapegradReplay('wasm', 'batch-simd'),
  tapegradReplay('wasm', 'batch-scalar'),
  tapegradReplay('js', 'batch'),
  tapegradReplay('wasm', 'hvp'),
  tapegradReplay('js', 'hvp'),
  tapegradReplay('wasm', 'hvp-batch'),
  tapegradReplay('js', 'hvp-batch'),
  tapegradVec('wasm', false, false),
  tapegradVec('js', false, false),
  tapegradVec('wasm', true, false),
  tapegradVec('js', true, false),
  tapegradVec('wasm', false, true),
  tapegradVec('js', false, true),
  tapegradVec('wasm', true, true),
  tapegradVec('js', true, true),
  micrograd,
  tfjsImpl('cpu'),
  tfjsImpl('wasm'),
  jaxImpl('eager'),
  jaxImpl('jit'),
];

export function implById(id: string): Impl {
  const impl = IMPLS.find((i) => i.id === id);
  if (!impl) throw new Error(`unknown implementation '${id}' (have: ${IMPLS.map((i) => i.id).join(', ')})`);
  return impl;
}
