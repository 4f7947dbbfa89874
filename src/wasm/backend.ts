import { copyNumbers, type Backend, type BatchSeeds, type CustomHandler, type TapeViews } from '../backend.ts';
import { TapegradError } from '../errors.ts';
import { importChunk, instantiateCore, simdAvailable, type CoreExports, type CoreImports } from './loader.ts';
import { WARM_AT, warmOnce } from './warm.ts';

// The code generator is its own chunk: a page that calls `init({ codegen: false })` and records
// with createTapeSync never downloads it. init() and createTape load it; a compiled function
// made before it arrives interprets until then, and elementwise runs sweep block by block.
let codegen: typeof import('./codegen/index.ts') | null = null;
type SweepPlan = import('./codegen/index.ts').SweepPlan;
type LinksOf = import('./codegen/index.ts').LinksOf;
type PlannerPasses = import('./codegen/index.ts').PlannerPasses;
type Segment = import('./codegen/index.ts').Segment;
type Order = import('./codegen/index.ts').Order;
let codegenLoading: Promise<void> | null = null;

/** Loads the code generator for compiled functions (once). */
export function loadCodegen(): Promise<void> {
  return (codegenLoading ??= importChunk(() => import('./codegen/index.ts'), './codegen/index.js').then(
    (module) => {
      codegen = module;
    },
    (error: unknown) => {
      // Not kept: the next call imports it again (a failed download stayed failed for the page).
      codegenLoading = null;
      throw error;
    },
  ));
}

/** @internal Compiled generated-sweep modules of one tape, to install on another instance of the
 *  core holding the same tape (a worker that loaded it from bytes): no planning or code
 *  generation there. `tangents` is null until the tangent sweeps have been made. */
export interface ShippedSweeps {
  /** null: the tape replays by its schedule, which each core builds for itself. */
  replay: WebAssembly.Module | null;
  tangents: WebAssembly.Module | null;
  /** The plan's table of steps its modules' dispatchers read (codegen's `stepTable`), or null. */
  steps: Int32Array | null;
}

/** State of the generated sweeps of a compiled tape. 'pending': the generator chunk is still
 *  loading, or the module compiles in the background (where a browser refuses to compile over
 *  4 KB synchronously on the main thread); the interpreter runs until it is done. 'scheduled':
 *  a tape too long to fold into generated code replays by a schedule in the core (runs of one op,
 *  stored partials: assembly/schedule.ts) instead of the interpreter. */
export type GeneratedSweeps = 'none' | 'pending' | 'active' | 'scheduled';

/** Bytes a node at most of a tape's schedule (assembly/schedule.ts): its two partials, its place
 *  in the forward order and the reverse list, and a run each at worst; and the scheduler's
 *  scratch (operands left, consumers' offsets, up to three consumers, ready-list links), which
 *  wasm memory keeps once grown. */
const SCHEDULE_BYTES = 16 + 4 + 4 + 8 + 24;

/** @internal When a tape that does not fold is scheduled: its ops mispredicted at least this often
 *  per 1024 nodes by a predictor of the next op from the last three (assembly/schedule.ts). Tests
 *  lower it to schedule every tape. */
export const scheduleLimits = { minMispredicted: 256 };

// Fused run kernels, compiled once per signature for every instance (null: a run the kernels
// leave to the block sweep; absent while a module too large to compile synchronously compiles).
const runModules = new Map<string, WebAssembly.Module | null | undefined>();
// Kernels per instance and modules per process: signatures carry data-dependent flags (which
// nodes a sweep reached), so their variety is bounded here. Past either bound the least recently
// used go (an instance's table slots are filled again, the process's modules compiled again when
// next needed): refusing every later signature left a tape of over 128 chain shapes, and a
// service past 1,024 signatures in its life, sweeping block by block for good, 3-6x slower (a
// scaling probe). An instance's bound is above what one tape's sweeps ask of it at once (past it,
// each sweep would instantiate its kernels again: 256 made a tape of 200 chain shapes slower).
/** @internal Kernels an instance holds, modules the process keeps (tests lower them), and the
 *  times a signature is met before its kernel is compiled (test/setup.ts makes it 1). */
export const runKernelLimits = { perInstance: 1024, perProcess: 4096, compileAfter: 3 };

// Times met of the signatures whose kernels wait (see runKernel), as many as modules at most.
const waitingSignatures = new Map<string, number>();

function runKernel(key: string, signature: Int32Array, simd: boolean): WebAssembly.Module | null | undefined {
  if (runModules.has(key)) {
    const known = runModules.get(key);
    // Most recently used last (a Map keeps insertion order).
    runModules.delete(key);
    runModules.set(key, known);
    return known;
  }
  // A kernel is compiled the compileAfter-th time a run of its signature asks for it (a run asks
  // once a sweep, then the core keeps the answer): a chain shape met once or twice never earned
  // back its compile (1.3-2.3 ms; a run of 1,024 elements saves a few µs a sweep), and V8 keeps
  // each module's code (a memory probe: 40-50 KB of RSS a kernel, 55 -> 333 MB over 127,709
  // shapes; bench/kernel-shapes.ts, 100,000 shapes met once: 6.66-7.49 ms a request -> 0.47-0.53,
  // 309 MB of RSS -> 96). Until then the run sweeps block by block, with the same bits. Three: a
  // shape met that often is likely to be met again, and the bench's workloads warm up for three runs.
  // (Kernels pay off when a tape holds few shapes: past the core's 16 cached signatures every
  // run asks the façade again.)
  const met = (waitingSignatures.get(key) ?? 0) + 1;
  if (met < runKernelLimits.compileAfter) {
    if (waitingSignatures.size >= runKernelLimits.perProcess) waitingSignatures.clear();
    waitingSignatures.set(key, met);
    return undefined;
  }
  waitingSignatures.delete(key);
  while (runModules.size >= runKernelLimits.perProcess) runModules.delete(runModules.keys().next().value!);
  const bytes = codegen!.emitRunKernel(signature, simd);
  if (!bytes) {
    runModules.set(key, null);
    return null;
  }
  try {
    const module = new WebAssembly.Module(bytes);
    runModules.set(key, module);
    return module;
  } catch (error) {
    // Refused (a Content-Security-Policy without 'wasm-unsafe-eval' that the core got past, such
    // as a worker handed the compiled core): no kernel, the block sweep runs (a probe).
    if (error instanceof WebAssembly.CompileError) {
      runModules.set(key, null);
      return null;
    }
    if (!(error instanceof RangeError)) throw error;
    runModules.set(key, undefined);
    void WebAssembly.compile(bytes).then((module) => runModules.set(key, module), () => runModules.set(key, null));
    return undefined;
  }
}

/** What a generated module imports from the core (codegen/module.ts's assembleModule). */
function generatedImports(core: CoreExports): WebAssembly.ModuleImports {
  return {
    memory: core.memory, ruleForward: core.ruleForward, rulePartials: core.rulePartials, rulePartialZ: core.rulePartialZ,
    rulePartialsTangent: core.rulePartialsTangent, rulePartialZTangent: core.rulePartialZTangent,
    scheduleCell: new WebAssembly.Global({ value: 'i32', mutable: false }, core.scheduleCellAddress()),
  };
}

// Rows per batched call are capped so the scratch area stays small next to the tape.
const BATCH_BYTES = 1 << 20;

// Which adjoint regions the last calls into the core left at +0 (see WasmBackend.zeroed).
interface Zeroed { readonly adjoints: boolean; readonly tangentAdjoints: boolean }
const NOT_ZEROED: Zeroed = { adjoints: false, tangentAdjoints: false };
// Every state one object, so that a batch or hvp allocates nothing to record it.
const ZEROED_STATES: readonly Zeroed[] = [NOT_ZEROED, { adjoints: true, tangentAdjoints: false }, { adjoints: false, tangentAdjoints: true }, { adjoints: true, tangentAdjoints: true }];
const zeroedState = (adjoints: boolean, tangentAdjoints: boolean): Zeroed => ZEROED_STATES[(adjoints ? 1 : 0) + (tangentAdjoints ? 2 : 0)]!;

/** The wasm engine: the tape lives in the instance's linear memory; the views below are windows
 *  onto it, re-derived after every call that can grow memory (a grown memory detaches the old
 *  buffer, so a stale view would read zeros). */
// Generated modules by their bytes, the last few: a function whose guards flip records again on
// every call, between a few structures, and each new module's code stayed in V8's code space (a
// probe: RSS +0.5 KB a re-record, 94 -> 382 MB over 600,000 calls, with two structures).
// Each function keeps the last few of its own, and the process the last few of all (a second
// compile of a function finds its modules there): one cache for the process alone had five
// functions of two paths each evict each other's, which counted as more than 8 paths of each
// and interpreted them all, and with codegen 'require' compiled a module a call (a probe).
export const MODULE_CACHE_SIZE = 8;
type ModuleCache = { bytes: Uint8Array; module: WebAssembly.Module }[];
const moduleCache: ModuleCache = [];

function cachedModule(cache: ModuleCache, bytes: Uint8Array): WebAssembly.Module | undefined {
  const k = cache.findIndex((e) => e.bytes.length === bytes.length && e.bytes.every((b, i) => b === bytes[i]));
  if (k < 0) return undefined;
  const [entry] = cache.splice(k, 1);
  cache.push(entry!);
  return entry!.module;
}

function cacheModule(cache: ModuleCache, bytes: Uint8Array, module: WebAssembly.Module): WebAssembly.Module {
  if (cache.push({ bytes, module }) > MODULE_CACHE_SIZE) cache.shift();
  return module;
}

// checkNaN reads every value and every adjoint after a replay; generated code keeps many in wasm
// locals and never writes them (a probe's sqrt(abs(x)) at 0 returned a finite gradient unchecked).
const CHECKED_REPLAY = 'checkNaN reads every value and adjoint, which generated code keeps in locals';

export class WasmBackend implements Backend {
  readonly kind = 'wasm' as const;
  views!: TapeViews;
  capacity = 0;
  elementCapacity = 0;
  custom: CustomHandler | null = null;
  /** Use the two-row SIMD kernel for batched replay where this build has it. */
  simd = true;
  /** The tape records a compiled function of scalar inputs, which generates code next: the
   *  core's warm-up at WARM_AT nodes warms the code generator's passes too (warm.ts). */
  planAhead = false;
  /** Called after a trap replaced the instance (the tape's contents are gone). */
  onTrap: (() => void) | null = null;
  /** How many traps this engine has recovered from. */
  traps = 0;
  core: CoreExports;
  private readonly imports: CoreImports;
  /** Generated sweeps of the tape now in memory (see codegen/). */
  generated: GeneratedSweeps = 'none';
  /** Replays wait for the code generator itself to load (not for a module compiling in the
   *  background, which a call after it records and replays generated). */
  get waitsForGenerator(): boolean {
    return this.generated === 'pending' && codegen === null;
  }
  /** Why `generated` is not 'active' (null when it is, or when nothing was asked for). */
  generatedReason: string | null = null;
  /** Settles when pending generated sweeps are installed (or dropped). */
  generatedReady: Promise<void> = Promise.resolve();
  private generation = 0;

  constructor(private readonly module: WebAssembly.Module, private readonly initialPages?: number) {
    const handler = (): CustomHandler => {
      if (!this.custom) throw new Error('custom op reached with no handler installed');
      return this.custom;
    };
    this.imports = {
      customForward: (i) => handler().forward(i),
      customReverse: (i, g) => handler().reverse(i, g),
      customTangent: (i) => handler().tangent(i),
      customReverseTangent: (i, g, gt) => handler().reverseTangent(i, g, gt),
      fuseRun: (signature, words) => this.fuseRun(signature, words),
    };
    this.core = instantiateCore(module, this.imports, initialPages);
    this.syncRunFusion();
    // A tape made while the generator loads gets its kernels once it is there.
    if (!codegen) codegenLoading?.then(() => this.syncRunFusion(), () => {});
    this.refreshViews();
  }

  /** A trap (WebAssembly.RuntimeError) leaves the instance in an unknown state: replace it with
   *  a fresh instance of the cached module and report the trap, with the original as cause. Any
   *  other error (e.g. thrown by a custom rule) passes through: the instance is intact. */
  private recover(error: unknown): unknown {
    if (!(error instanceof WebAssembly.RuntimeError)) return error;
    this.core = instantiateCore(this.module, this.imports, this.initialPages);
    this.zeroed = NOT_ZEROED;
    this.runSlots.clear();
    this.kernelSlots = [];
    this.kernelsUsed = 0;
    this.syncRunFusion();
    this.dropGeneratedSweeps();
    this.guardsAt = -1;
    this.memoryF64 = new Float64Array(0);
    this.refreshViews();
    this.traps++;
    this.onTrap?.();
    return new TapegradError('CORE_TRAP', `the wasm core trapped (${error.message}); it was replaced by a fresh instance and the tape was reset`, { cause: error });
  }

  /** Generates and installs forward and reverse sweeps for nodes [nInputs, count) of the tape
   *  now in memory, replacing the interpreter in replays, until `dropGeneratedSweeps`. Reverse
   *  sweeps may only be seeded at `outputs`. A schedule leaves out the nodes no output or guard
   *  depends on, unless `everyValue` (replays then compute every node, as checkNaN reads them). */
  generateSweeps(
    nInputs: number, count: number, outputs: ArrayLike<number>, scheduleBudget = Infinity, everyValue = false,
    deferPast: { straightOps: number; steps: number } = { straightOps: Infinity, steps: Infinity },
  ): GeneratedSweeps {
    this.dropGeneratedSweeps();
    const generation = this.generation;
    if (!codegen) {
      this.generated = 'pending';
      this.generatedReason = 'the code generator is still loading (init() loads it, unless told { codegen: false }: then the first compile does)';
      this.generatedReady = loadCodegen().then(
        () => {
          // Nothing waits for its replays here (the function learned nothing of a deferral).
          if (generation === this.generation) this.generateSweeps(nInputs, count, outputs, scheduleBudget, everyValue);
          return this.generatedReady;
        },
        (error: unknown) => {
          if (generation !== this.generation) return;
          this.generated = 'none';
          this.generatedReason = `the code generator failed to load (${error instanceof Error ? error.message : String(error)}); the next recording loads it again`;
        },
      );
      return this.generated;
    }
    if (everyValue) {
      this.generatedReason = `${CHECKED_REPLAY}; ${this.schedule(nInputs, count, scheduleBudget, null)}`;
      return this.generated;
    }
    let plan: SweepPlan | null = null;
    const defer = { ...deferPast, deferred: 0, deferredSteps: 0 };
    if (count > nInputs) {
      const passes = this.plannerPasses(nInputs, count) ?? codegen.jsPasses(this.views, nInputs, count);
      plan = codegen.planSweeps(this.views, nInputs, count, outputs, passes, undefined, undefined, defer);
    }
    if (defer.deferred > 0 || defer.deferredSteps > 0) {
      // Describing, emitting and compiling this much straight code, or this many bodies, costs
      // more than the first replays can pay back: the interpreter replays until they have (the
      // compiled function counts them and says so, compile.ts's codegenDeferral).
      this.deferredCodeNodes = defer.deferred;
      this.deferredSteps = defer.deferredSteps;
      return this.generated;
    }
    if (!plan) {
      const why = codegen.whyNoPlan(this.views, nInputs, count);
      this.generatedReason = `${why}; ${this.schedule(nInputs, count, scheduleBudget, everyValue ? null : outputs)}`;
      return this.generated;
    }
    const noTable = codegen.usesStepTable(plan.order) ? this.writeStepTable(codegen.stepTable(plan.order), scheduleBudget) : null;
    if (noTable) {
      this.generatedReason = `${noTable}; ${this.schedule(nInputs, count, scheduleBudget, outputs)}`;
      return this.generated;
    }
    this.plan = plan;
    this.compileSweeps(codegen.emitSweeps(plan, 'replay', this.writeDispatcher), 1, () => {
      this.generated = 'active';
      this.generatedReason = null;
    });
    return this.generated;
  }

  /** Replays by a schedule of the tape's nodes (assembly/schedule.ts) where it serves and pays:
   *  no custom or vector nodes, an op sequence the interpreter's jump would mispredict often
   *  (scheduleLimits), and room for it within `budget` bytes and memory. Says which. Given the
   *  `outputs`, it computes only what they and the guards depend on; null: every node. */
  private schedule(nInputs: number, count: number, budget: number, outputs: ArrayLike<number> | null): string {
    if (count <= nInputs) return 'nothing to replay';
    if (SCHEDULE_BYTES * count > budget) {
      return `maxMemoryBytes leaves no room for a schedule of its replays (${SCHEDULE_BYTES} bytes a node, beside the tape and the tangents a jvp or hvp would add), which the interpreter runs`;
    }
    // The schedule's region goes where the scratch area was: the guards and rows move after it.
    this.guardsAt = -1;
    if (outputs) {
      // The roots of buildSchedule's pruning, marked in the adjoint region (it zeroes it after),
      // through views of the memory as it is now (the planner's scratch may have grown it).
      if (this.views.val.buffer !== this.core.memory.buffer) this.refreshViews();
      const adj = this.views.adj;
      adj.fill(0, 0, count);
      for (let k = 0; k < outputs.length; k++) adj[outputs[k]!] = 1;
      for (let k = 0; k < this.guardNodes.length; k++) adj[this.guardNodes[k]!] = 1;
      this.zeroed = NOT_ZEROED;
    }
    const built = this.run(() => this.core.buildSchedule(nInputs, count, scheduleLimits.minMispredicted, outputs ? 1 : 0));
    if (this.views.val.buffer !== this.core.memory.buffer) this.refreshViews();
    if (built === 0) {
      this.generated = 'scheduled';
      return 'its replays run a schedule instead (runs of one op, stored partials)';
    }
    if (built === -3) return 'its ops follow a pattern the interpreter\'s jump predicts, so the interpreter replays it (a schedule pays where a quarter of its ops or more are mispredicted)';
    if (built === -2) return 'memory has no room for a schedule of its replays, which the interpreter runs';
    return 'a schedule does not serve it (custom nodes, or nothing to compute), so the interpreter replays it';
  }

  /** @internal The planner's first pass, in the core: operand references per node, as a view of
   *  the adjoint region it borrows (valid until the next call into the core), or null when the
   *  tape cannot have generated sweeps. */
  countUses(from: number, to: number): Int32Array | null {
    if (this.run(() => this.core.countUses(from, to)) !== 0) return null;
    return new Int32Array(this.core.memory.buffer, this.views.adj.byteOffset, to);
  }

  /** @internal The planner's whole-tape passes, run in the core (assembly/planning.ts): use
   *  counts, links, the top-level segments and which top-level bodies repeat earlier ones.
   *  Scratch for all of them is reserved first (growing memory later would detach the use
   *  counts' view); null where memory has no room, and the planner runs its own JS. */
  plannerPasses(from: number, to: number, limits: { segments?: number; repeats?: number } = {}): PlannerPasses | null {
    const gen = codegen!;
    const n = to - from;
    const span = gen.linksRoom(n);
    const linkBytes = 8 * span + 8 * gen.linksTableSize(span);
    const { maxPeriod, chunk } = gen.planSearch;
    // Room for the segments most tapes have (the branchy loss: one per 67 nodes), not for the
    // most a tape can have (2 per 17 nodes): wasm memory never shrinks. Past it the planner's JS
    // searches instead, with the same result.
    const segmentRoom = limits.segments ?? 4096 + Math.ceil(n / 32);
    const segmentsAt = linkBytes + ((4 * (maxPeriod + 1) + 7) & ~7) + 12 * maxPeriod;
    const seededBytes = (to + 7) & ~7;
    const room = segmentsAt + 12 * segmentRoom + seededBytes;
    let at: number;
    try {
      at = this.scratchFor(room);
    } catch {
      return null;
    }
    const uses = this.countUses(from, to);
    const linksOf: LinksOf = (lo, hi) => {
      const nodes = hi - lo, size = gen.linksTableSize(nodes);
      if (8 * nodes + 8 * size > linkBytes) return gen.nextLinks(this.views, lo, hi);
      this.run(() => this.core.nextLinks(lo, hi, at, size));
      const buffer = this.core.memory.buffer;
      return { strict: new Int32Array(buffer, at, nodes).slice(), window: new Int32Array(buffer, at + 4 * nodes, nodes).slice() };
    };
    const segmentsOf = (lo: number, hi: number, maxSlots: number): Segment[] | null => {
      if (hi - lo > n) return gen.planSegments(this.views, lo, hi, maxSlots, [], linksOf);
      const found = this.run(() =>
        this.core.planSegments(lo, hi, Math.min(maxSlots, 0x7fffffff), at, linkBytes, maxPeriod, chunk, segmentRoom));
      if (found === -1) return null;
      if (found < 0) return gen.planSegments(this.views, lo, hi, maxSlots, [], linksOf);
      const triples = new Int32Array(this.core.memory.buffer, at + segmentsAt, 3 * found);
      const segments: Segment[] = new Array(found);
      for (let k = 0; k < found; k++) segments[k] = { start: triples[3 * k]!, period: triples[3 * k + 1]!, count: triples[3 * k + 2]! };
      return segments;
    };
    const repeatsOf = (segments: readonly Segment[], lo: number, seeded: Uint8Array, hashMask = -1): Int32Array => {
      const count = segments.length, base = at + ((seeded.length + 7) & ~7);
      // The hash table's size rule is the links' (a power of two, at least twice the entries).
      const tableSize = gen.linksTableSize(count);
      if (count > (limits.repeats ?? Infinity) || base + 24 * count + 4 * tableSize > at + room) {
        return gen.repeatsOf(this.views, segments, lo, uses!, seeded, hashMask);
      }
      const buffer = this.core.memory.buffer;
      new Uint8Array(buffer, at, seeded.length).set(seeded);
      const words = new Int32Array(buffer, base, 3 * count);
      for (let k = 0; k < count; k++) {
        const seg = segments[k]!;
        words[3 * k] = seg.start;
        words[3 * k + 1] = seg.period;
        words[3 * k + 2] = seg.count;
      }
      this.run(() => this.core.repeatsOf(count, base, lo, at, gen.MAX_REPEAT_NODES, gen.MAX_REPEAT_TRIES, tableSize, hashMask));
      return new Int32Array(buffer, base + 20 * count, count).slice();
    };
    return { uses, linksOf, segmentsOf, repeatsOf };
  }

  /** The tangent sweeps of the current plan, made on the first jvp or hvp (their code is about 8
   *  times the replay sweeps'). */
  private generateTangentSweeps(): void {
    if (this.generated !== 'active' || this.tangentsGenerated || !this.plan || !codegen) return;
    this.tangentsGenerated = true;
    this.compileSweeps(codegen.emitSweeps(this.plan, 'tangents', this.writeDispatcher), 3, () => {});
  }

  // Compiles a module of two sweeps into table slots `slot` and `slot + 1`: synchronously, or in
  // the background where the runtime refuses (then `pending` until installed).
  private compileSweeps(bytes: Uint8Array<ArrayBuffer>, slot: number, installed: () => void): void {
    const generation = this.generation;
    const install = (module: WebAssembly.Module): void => {
      this.installSweeps(module, slot);
      installed();
    };
    try {
      const mine = slot === 1 ? this.ownModules : this.ownTangentModules, own = cachedModule(mine, bytes);
      if (!own && slot === 1) this.freshModules++;
      install(own ?? cacheModule(mine, bytes, cachedModule(moduleCache, bytes) ?? cacheModule(moduleCache, bytes, new WebAssembly.Module(bytes))));
    } catch (error) {
      if (error instanceof WebAssembly.CompileError) {
        // The core runs, but this module is refused: a page whose Content-Security-Policy came
        // after init(), or a worker handed the compiled core (new-user probe: a raw CompileError
        // from the first call, then interpretation with no reason, even under 'require').
        if (slot === 1) this.refused(error);
        return;
      }
      if (!(error instanceof RangeError)) throw error;
      if (slot === 1) {
        this.generated = 'pending';
        this.generatedReason = 'the module compiles in the background (this runtime compiles only small modules synchronously)';
      }
      this.generatedReady = WebAssembly.compile(bytes).then(
        (module) => {
          // Kept by its bytes, as a module compiled synchronously is: the next recording of the
          // same function finds it (a probe's second compile went back to pending).
          cacheModule(moduleCache, bytes, cacheModule(slot === 1 ? this.ownModules : this.ownTangentModules, bytes, module));
          if (generation === this.generation) install(module);
        },
        (refusal: unknown) => {
          if (generation === this.generation && slot === 1) this.refused(refusal);
        },
      );
    }
  }

  private refused(error: unknown): void {
    this.generated = 'none';
    this.generatedReason = `the runtime refused the generated module (${String((error as Error)?.message ?? error)}; a Content-Security-Policy needs 'wasm-unsafe-eval'): interpreted`;
  }

  /** @internal Replay modules this engine did not find among its own last ones (see moduleCache). */
  freshModules = 0;
  // Replay and tangent modules apart: with jvp or hvp, 5 paths filled one cache of 8 (a review).
  private readonly ownModules: ModuleCache = [];
  private readonly ownTangentModules: ModuleCache = [];

  /** Whether elementwise runs use fused kernels (on by default; the tests compare both ways). */
  runFusion = true;
  setRunFusion(on: boolean): void {
    this.runFusion = on;
    this.syncRunFusion();
  }

  // The core asks for kernels only where the generator can make them: without it (a pool's
  // worker, `init({ codegen: false })`) a run never crosses into JS to be told no.
  private syncRunFusion(): void {
    this.core.setRunFusion(this.runFusion && codegen !== null ? 1 : 0);
  }

  // Fused run kernels of this instance's table, by signature (0: the run sweeps block by block).
  private readonly runSlots = new Map<string, number>();
  // The table slots this instance grew for kernels, and how many hold a kernel of runSlots.
  private kernelSlots: number[] = [];
  private kernelsUsed = 0;

  /** @internal Whether run kernels take pairs of elements through SIMD lanes (where the runtime
   *  has them); the tests turn it off to run the scalar kernels a runtime without SIMD gets. */
  runKernelSimd = simdAvailable();
  setRunKernelSimd(on: boolean): void {
    this.runKernelSimd = on;
    this.runSlots.clear();
    this.kernelsUsed = 0;
    this.core.forgetRunKernels();
  }

  private fuseRun(signature: number, words: number): number {
    if (!codegen) return 0;
    const words32 = new Int32Array(this.core.memory.buffer, signature, words);
    const key = `${this.runKernelSimd ? 'simd' : 'scalar'}:${words32.join(',')}`;
    const known = this.runSlots.get(key);
    if (known !== undefined) return known;
    if (this.runSlots.size >= runKernelLimits.perInstance) {
      // Every slot filled again from the first, and the core forgets the signatures it had
      // (a slot is read just before its call, never kept across one).
      this.runSlots.clear();
      this.core.forgetRunKernels();
      this.kernelsUsed = 0;
    }
    const module = runKernel(key, words32, this.runKernelSimd);
    if (module === undefined) return 0; // compiling in the background, or not yet met enough
    let slot = 0;
    if (module) {
      const core = this.core;
      const { run } = new WebAssembly.Instance(module, { env: generatedImports(core) }).exports as { run: () => void };
      if (this.kernelsUsed === this.kernelSlots.length) this.kernelSlots.push(core.table.grow(1));
      slot = this.kernelSlots[this.kernelsUsed++]!;
      core.table.set(slot, run);
    }
    this.runSlots.set(key, slot);
    return slot;
  }

  /** @internal The compiled modules of the active generated sweeps, tangent sweeps included (made
   *  here if they were not yet), for `installShippedSweeps` on another core; null when the
   *  replay is not generated. */
  shipSweeps(): ShippedSweeps | null {
    if (this.generated === 'scheduled') return { replay: null, tangents: null, steps: null };
    this.generateTangentSweeps();
    if (this.generated !== 'active' || !this.modules.replay) return null;
    return { replay: this.modules.replay, tangents: this.modules.tangents, steps: this.steps };
  }

  /** @internal The nodes of code of the plan the last `generateSweeps` left for later (0: none). */
  deferredCodeNodes = 0;
  /** @internal The top-level bodies of the plan the last `generateSweeps` left for later (0: none). */
  deferredSteps = 0;

  /** The table of steps of the active plan's dispatchers, where it has one. */
  private steps: Int32Array | null = null;

  // The table into the schedule region (the scratch after it moves: guards and rows are written
  // again); null, or why not, where `budget` (what maxMemoryBytes leaves past the tape) or memory
  // has no room.
  private writeStepTable(table: Int32Array, budget: number): string | null {
    const bytes = 4 * table.length;
    const noRoom = (what: string): string =>
      `${what} no room for the table of its generated code's ${table.length / 3} steps (12 bytes each, beside the tape and the tangents a jvp or hvp would add)`;
    if (bytes > budget) return noRoom('maxMemoryBytes leaves');
    this.guardsAt = -1;
    const at = this.core.reserveStepTable(bytes) >>> 0;
    if (at === 0) return noRoom('memory has');
    if (this.views.val.buffer !== this.core.memory.buffer) this.refreshViews();
    new Int32Array(this.core.memory.buffer, at, table.length).set(table);
    this.steps = table;
    return null;
  }

  /** @internal Installs sweeps another core generated for the same tape (see `shipSweeps`). */
  installShippedSweeps(
    sweeps: ShippedSweeps, nInputs: number, count: number, outputs: ArrayLike<number>, scheduleBudget = Infinity, everyValue = false,
  ): void {
    this.dropGeneratedSweeps();
    if (!sweeps.replay || everyValue) {
      this.generatedReason = `${everyValue ? CHECKED_REPLAY : 'the main thread scheduled the tape'}; here ${this.schedule(nInputs, count, scheduleBudget, everyValue ? null : outputs)}`;
      return;
    }
    const noTable = sweeps.steps ? this.writeStepTable(sweeps.steps, scheduleBudget) : null;
    if (noTable) {
      this.generatedReason = `${noTable}; here ${this.schedule(nInputs, count, scheduleBudget, outputs)}`;
      return;
    }
    this.installSweeps(sweeps.replay, 1);
    this.generated = 'active';
    if (sweeps.tangents) {
      this.installSweeps(sweeps.tangents, 3);
      this.tangentsGenerated = true;
    }
  }

  /** Back to the interpreter (the tape is about to change). */
  dropGeneratedSweeps(): void {
    this.zeroed = NOT_ZEROED;
    this.generation++;
    this.generated = 'none';
    this.generatedReason = null;
    this.generatedReady = Promise.resolve();
    this.plan = null;
    this.steps = null;
    this.deferredCodeNodes = 0;
    this.deferredSteps = 0;
    this.tangentsGenerated = false;
    this.modules = { replay: null, tangents: null };
    this.core.setGeneratedSweeps(0, 0, 0, 0, 0);
    this.core.dropSchedule();
    this.guardsAt = -1;
  }

  // The installed sweeps' modules: replay in table slots 1 and 2, tangents in 3, 4 and 5.
  private modules: { replay: WebAssembly.Module | null; tangents: WebAssembly.Module | null } = { replay: null, tangents: null };

  private plan: SweepPlan | null = null;
  private tangentsGenerated = false;

  private installSweeps(module: WebAssembly.Module, slot: number): void {
    this.zeroed = NOT_ZEROED;
    const core = this.core;
    const sweeps = new WebAssembly.Instance(module, { env: generatedImports(core) }).exports as Record<string, () => void>;
    // A recording's constants may sit where an earlier recording's nodes left tangents, and the
    // generated tangent sweeps read a constant's slot without writing it: zero them once here.
    if (slot === 3) this.views.tan?.fill(0);
    const names = slot === 1 ? ['forward', 'reverse'] : ['tangent', 'reverseTangent', 'forwardTangent'];
    names.forEach((name, k) => core.table.set(slot + k, sweeps[name]!));
    this.modules[slot === 1 ? 'replay' : 'tangents'] = module;
    const replay = this.modules.replay !== null, tangents = this.modules.tangents !== null;
    core.setGeneratedSweeps(replay ? 1 : 0, replay ? 2 : 0, tangents ? 3 : 0, tangents ? 4 : 0, tangents ? 5 : 0);
  }

  private refreshViews(): void {
    const core = this.core;
    const buffer = core.memory.buffer;
    const capacity = core.getCapacity();
    const tangents = core.tangentsEnabled() !== 0;
    const elements = core.getElementCapacity();
    this.capacity = capacity;
    this.elementCapacity = elements;
    this.views = {
      xval: new Float64Array(buffer, core.xvalPtr(), elements),
      xadj: new Float64Array(buffer, core.xadjPtr(), elements),
      xtan: tangents ? new Float64Array(buffer, core.xtanPtr(), elements) : null,
      xtanAdj: tangents ? new Float64Array(buffer, core.xtanAdjPtr(), elements) : null,
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

  elementBytes(): number {
    return this.core.elementBytes();
  }

  reserveElements(minElements: number, live: number, maxElements: number): boolean {
    this.guardsAt = -1;
    const ok = this.run(() => (this.core.setLiveElements(this.liveElements), this.core.reserveElements(minElements, live, maxElements))) !== 0;
    this.refreshViews();
    return ok;
  }

  // Every vector op sets the live elements, and only a relayout reads them (which elements to
  // move): the core gets them just before its calls that may move regions, not a call into wasm
  // per op (with its closure through run, 170 bytes and about 20 ns an op).
  setLiveElements(n: number): void {
    this.zeroed = NOT_ZEROED;
    this.liveElements = n;
  }

  private liveElements = 0;

  setVectorInput(on: boolean): void {
    this.run(() => this.core.setVectorInput(on ? 1 : 0));
    this.vectorInput = on;
  }

  // Replays take their inputs as the elements of one input vector (see setVectorInput).
  private vectorInput = false;

  reserve(minCapacity: number, live: number, maxCapacity: number): boolean {
    if (minCapacity >= WARM_AT) warmOnce(this.module, this.planAhead);
    this.guardsAt = -1;
    const ok = this.run(() => (this.core.setLiveElements(this.liveElements), this.core.reserve(minCapacity, live, maxCapacity))) !== 0;
    this.refreshViews();
    return ok;
  }

  fitCapacities(maxCapacity: number, maxElements: number, live: number): void {
    this.guardsAt = -1;
    this.run(() => (this.core.setLiveElements(this.liveElements), this.core.fitCapacities(maxCapacity, maxElements, live)));
    this.refreshViews();
  }

  enableTangents(live: number, maxCapacity: number, maxElements: number): boolean {
    const fresh = this.views.tan === null;
    this.guardsAt = -1;
    const ok = this.run(() => (this.core.setLiveElements(this.liveElements), this.core.enableTangents(live, maxCapacity, maxElements))) !== 0;
    this.refreshViews();
    // The new regions lie over whatever memory followed the tape (scratch: input rows, the
    // planner's links). Generated tangent sweeps never write a constant's slots (its tangent is an
    // immediate 0), so those must read +0 from the start.
    if (ok && fresh) {
      this.views.tan!.fill(0);
      this.views.tanAdj!.fill(0);
    }
    return ok;
  }

  // Guards and batch rows live in the core's scratch area after the tape, laid out as
  // [guard expected f64 × G][guard nodes i32 × G, padded][rows in][rows out][SIMD lanes]. Growing
  // the tape moves that area, so reserve/enableTangents forget it; between them, a replay reuses
  // the area it had, through one Float64Array over the whole memory (no view per call).
  private guardNodes = new Int32Array(0);
  private guardExpected = new Float64Array(0);
  private guardsAt = -1;
  private scratchRoom = 0;
  private memoryF64 = new Float64Array(0);

  setGuards(nodes: Int32Array, expected: Float64Array): void {
    this.guardNodes = nodes.slice();
    this.guardExpected = expected.slice();
    this.guardsAt = -1;
  }

  private guardBytes(): number {
    return (this.guardNodes.length * 12 + 15) & ~15;
  }

  /** @internal A generated module's dispatcher written by the core (assembly/dispatch.ts), byte
   *  for byte codegen's emitDispatcher; null where the scratch the planner reserved has no room
   *  for it (the generator writes it then). Never a new scratch: growing memory here detached the
   *  views a caller held across the generation (a review probe: the first jvp of a compiled
   *  function, whose tangent sweeps are generated after its tangent seeds' view is taken,
   *  returned NaN). */
  readonly writeDispatcher = (order: Order, backwards: boolean, params: number, base: number, parts: number): Uint8Array | null => {
    const steps = order.length, room = 16 + steps * (2 * params + 16);
    const at = this.reservedScratch(12 * steps + room);
    if (at < 0) return null;
    const buffer = this.core.memory.buffer;
    new Int32Array(buffer, at, steps).set(order.unit.subarray(0, steps));
    new Int32Array(buffer, at + 4 * steps, steps).set(order.shift.subarray(0, steps));
    new Int32Array(buffer, at + 8 * steps, steps).set(order.count.subarray(0, steps));
    const out = at + 12 * steps;
    const length = this.run(() => this.core.writeDispatcher(steps, at, backwards ? 1 : 0, params, base, parts, out));
    return new Uint8Array(this.core.memory.buffer, out, length).slice();
  };

  // The scratch already reserved, where it has room for `bytes` (the address after the guards),
  // else -1: no memory grows.
  private reservedScratch(bytes: number): number {
    return this.guardsAt >= 0 && bytes <= this.scratchRoom ? this.guardsAt + this.guardBytes() : -1;
  }

  /** Scratch with room for the guards plus `bytes`; returns the address after the guards. */
  private scratchFor(bytes: number): number {
    const reserved = this.reservedScratch(bytes);
    if (reserved >= 0) return reserved;
    const guardBytes = this.guardBytes();
    // An address is a u32 in the core; past 2 GiB of memory the i32 the export returns is negative.
    const base = this.core.scratch(guardBytes + bytes);
    if (base === 0) throw new RangeError(`out of memory: no room for ${bytes} bytes of replay buffers`);
    const buffer = this.core.memory.buffer;
    if (this.views.val.buffer !== buffer) this.refreshViews();
    if (this.memoryF64.buffer !== buffer) this.memoryF64 = new Float64Array(buffer);
    const g = this.guardNodes.length;
    this.memoryF64.set(this.guardExpected, base >>> 3);
    new Int32Array(buffer, base + g * 8, g).set(this.guardNodes);
    this.guardsAt = base;
    this.scratchRoom = bytes;
    return base + guardBytes;
  }

  replayForward(x: ArrayLike<number>, nInputs: number, count: number, hvpOutput = -1): number {
    let at: number;
    // An input vector's elements written where the tape holds them (the core copies nothing when
    // x is there), as gradientInPlace does: one copy of 10^5 inputs less, 0.02 ms of a vector
    // Rosenbrock's hvp.
    if (this.vectorInput) {
      // (The scratch lays out the guards, and may grow memory: the views after it.)
      this.scratchFor(8);
      const { xval } = this.views;
      if (x instanceof Float64Array && x.length === nInputs) xval.set(x);
      else for (let k = 0; k < nInputs; k++) xval[k] = x[k]!;
      at = xval.byteOffset;
    } else {
      at = this.scratchFor(nInputs * 8);
      const f64 = this.memoryF64;
      // A Float64Array row in one copy: 10^5 inputs of a vector tape, entry by entry, took 61 µs
      // against 9 (more where the call site had seen other kinds of arrays).
      if (x instanceof Float64Array && x.length === nInputs) f64.set(x, at >>> 3);
      else for (let k = 0, p = at >>> 3; k < nInputs; k++) f64[p + k] = x[k]!;
    }
    if (hvpOutput < 0) return this.callCore(this.core.replayForward, at, nInputs, count, this.guardsAt, this.guardNodes.length);
    // The forward sweep may leave a fused run summed into the output to the reverse sweep with
    // tangents (see gradientOutput in assembly/vector.ts).
    this.core.setGradientOutput(hvpOutput);
    try {
      return this.callCore(this.core.replayForward, at, nInputs, count, this.guardsAt, this.guardNodes.length);
    } finally {
      this.core.setGradientOutput(-1);
    }
  }

  gradientBatch(X: Float64Array, fromRow: number, toRow: number, nInputs: number, count: number, out: number, G: Float64Array, values: Float64Array | null, seeds?: BatchSeeds): number {
    if (this.vectorInput && toRow - fromRow === 1) return this.gradientInPlace(X, fromRow, nInputs, count, out, G, values);
    // Seeds (vjpBatch's): a cotangent row and as many values a row as outputs.
    const width = seeds ? seeds.outputs.length : 1;
    const chunk = Math.max(1, Math.min(toRow - fromRow, Math.floor(BATCH_BYTES / Math.max(8, 16 * nInputs + (seeds ? 16 * width : 0)))));
    // Generated sweeps, row by row, beat the interpreter's two-row SIMD kernel even on a 20-node
    // function (7.1 M/s against 6.1 M/s): the kernel serves the tapes that are interpreted.
    const simd = !seeds && this.simd && (this.generated === 'none' || this.generated === 'pending') && this.core.gradientBatchSimd !== undefined && toRow - fromRow > 1;
    let row = fromRow;
    while (row < toRow) {
      const rows = Math.min(chunk, toRow - row);
      const span = rows * nInputs;
      // [rows in][gradient rows][values][SIMD lanes], or with seeds [cotangent rows][output nodes]
      // after the values.
      const at = this.scratchFor(2 * span * 8 + rows * width * 8 + (simd ? 32 * count : 0) + (seeds ? rows * width * 8 + 4 * width : 0));
      const f64 = this.memoryF64;
      const xAt = at >>> 3, gAt = xAt + span, vAt = gAt + span, first = row * nInputs;
      const valuesAt = values ? vAt * 8 : 0;
      copyNumbers(X, first, f64, xAt, span);
      if (seeds) {
        const seedsAt = vAt + rows * width;
        copyNumbers(seeds.rows, row * width, f64, seedsAt, rows * width);
        new Int32Array(f64.buffer, (seedsAt + rows * width) * 8, width).set(seeds.outputs);
        this.core.setBatchSeeds(seedsAt * 8, (seedsAt + rows * width) * 8, width);
      }
      // With generated sweeps (a tape with them has scalar inputs), the core's batch leaves the
      // adjoints at +0 but the inputs' and needs no clearing pass after such a batch; it never
      // touches their tangents.
      const { adjoints, tangentAdjoints } = this.zeroed;
      const resets = this.generated === 'active';
      const done = seeds
        ? this.seededBatch(at, rows, nInputs, count, out, gAt * 8, valuesAt, adjoints ? 1 : 0)
        : simd
          ? this.callCore(this.core.gradientBatchSimd!, at, rows, nInputs, count, out, gAt * 8, this.guardsAt, this.guardNodes.length, (vAt + rows) * 8, valuesAt)
          : this.callCore(this.core.gradientBatch, at, rows, nInputs, count, out, gAt * 8, this.guardsAt, this.guardNodes.length, valuesAt, adjoints ? 1 : 0);
      this.zeroed = zeroedState(resets, tangentAdjoints);
      const doneSpan = done * nInputs;
      copyNumbers(f64, gAt, G, first, doneSpan);
      if (values) values.set(f64.subarray(vAt, vAt + done * width), row * width);
      row += done;
      if (done < rows) return row;
    }
    return toRow;
  }

  // The core's batch with the seeds set (gradientBatch wrote them), which are cleared after it
  // whatever happens: left set, they would seed the next gradient's rows. Apart from the batch, so
  // that its gradients' path has no try (a compiled gradient took 4% longer with one).
  private seededBatch(at: number, rows: number, nInputs: number, count: number, out: number, g: number, values: number, zeroed: number): number {
    try {
      return this.callCore(this.core.gradientBatch, at, rows, nInputs, count, out, g, this.guardsAt, this.guardNodes.length, values, zeroed);
    } finally {
      this.core.setBatchSeeds(0, 0, 0);
    }
  }

  // One row of a tape with an input vector: the row goes straight into the vector's elements and
  // the gradient straight out of their adjoints (the core skips its copies when given those
  // addresses), so a large vector crosses memory twice instead of four times.
  private gradientInPlace(X: Float64Array, row: number, nInputs: number, count: number, out: number, G: Float64Array, values: Float64Array | null): number {
    const valueAt = this.scratchFor(8);
    const { xval, xadj } = this.views;
    const first = row * nInputs;
    copyNumbers(X, first, xval, 0, nInputs);
    const done = this.callCore(this.core.gradientBatch, xval.byteOffset, 1, nInputs, count, out, xadj.byteOffset, this.guardsAt, this.guardNodes.length, valueAt, 0);
    if (done === 0) return row;
    copyNumbers(this.views.xadj, 0, G, first, nInputs);
    if (values) values[row] = this.memoryF64[valueAt >>> 3]!;
    return row + 1;
  }

  forward(from: number, to: number): void {
    this.callCore(this.core.forward, from, to, 0);
  }

  reverse(out: number, seed: number, count: number): void {
    this.callCore(this.core.reverse, out, seed, count);
  }

  tangent(from: number, to: number): void {
    this.callCore(this.core.tangent, from, to, 0);
  }

  reverseTangent(out: number, seed: number, count: number): void {
    this.callCore(this.core.reverseTangent, out, seed, count);
  }

  clearAdjoints(count: number, withTangents: boolean): void {
    this.callCore(this.core.clearAdjoints, count, withTangents ? 1 : 0, 0);
  }

  sweepReverse(top: number): void {
    this.callCore(this.core.sweepReverse, top, 0, 0);
  }

  materialize(i: number): void {
    this.callCore(this.core.materialize, i, 0, 0);
  }

  clearElementTangents(count: number, elements: number): void {
    // Per node a test, per leaf element a store: where the nodes outnumber the elements, one fill.
    if (elements > count) this.callCore(this.core.clearLeafTangents, count, 0, 0);
    else this.views.xtan!.fill(0, 0, elements);
  }

  materializeTangent(i: number): void {
    this.callCore(this.core.materializeTangent, i, 0, 0);
  }

  materializeTangents(to: number): void {
    this.callCore(this.core.materializeAllTangents, to, 0, 0);
  }

  setKeepAdjoints(on: boolean): void {
    this.core.setKeepAdjoints(on ? 1 : 0);
  }

  setHvpOutput(out: number): void {
    this.core.setHvpOutput(out);
  }

  /** `tangent` through the generated tangent sweep when one is installed. */
  tangentReplay(from: number, to: number): void {
    this.generateTangentSweeps();
    this.callCore(this.core.tangentReplay, from, to, 0);
  }

  /** Whether generated tangent sweeps run the next jvp/hvp (generating them if due). They write
   *  every computed node's tangent and read constants as immediates, so only the inputs'
   *  tangents need seeding: the rest of the region need not be cleared first. */
  tangentSweepsGenerated(): boolean {
    this.generateTangentSweeps();
    return this.modules.tangents !== null;
  }

  /** Whether `replayForwardTangent` can run: the generated tangent sweeps are installed (the
   *  first jvp or hvp makes them). */
  forwardTangentReady(): boolean {
    return this.modules.tangents !== null;
  }

  /** The forward half of jvp and hvp in one generated sweep (inputs x, their tangents t): values
   *  and tangents. Returns -1, or the node of a failed guard. */
  replayForwardTangent(x: ArrayLike<number>, t: ArrayLike<number>, nInputs: number): number {
    const at = this.scratchFor(2 * nInputs * 8);
    const f64 = this.memoryF64;
    for (let k = 0, p = at >>> 3; k < nInputs; k++) {
      f64[p + k] = x[k]!;
      f64[p + nInputs + k] = t[k]!;
    }
    try {
      return this.core.replayForwardTangent(at, at + nInputs * 8, nInputs, this.guardsAt, this.guardNodes.length);
    } catch (error) {
      throw this.recover(error);
    }
  }

  /** jvpBatch's and hvpBatch's rows [from, to) of X and D (rows × nInputs): per row the
   *  generated forward-tangent sweep and, with `top` ≥ 0, the fused reverse tangent sweep seeded
   *  at top, with nothing around them but copies. Writes each row's J·t (the tangents of
   *  `outputs`) or H·v (the inputs' adjoint tangents) into `out` and the outputs' values into
   *  `values` when given. Returns `to`, or the first row whose guards failed (rows before it are
   *  done), and keeps the row it is at in `row[0]` (an error's). The calls hvp and jvp make a
   *  row, with the same results bit for bit: as per-row calls, a tiny function's rows cost about
   *  twice a gradientBatch row in façade work. */
  forwardTangentRows(
    X: Float64Array, D: Float64Array, from: number, to: number, nInputs: number, top: number, outputs: Int32Array,
    count: number, out: Float64Array, values: Float64Array | undefined, row: Int32Array,
  ): number {
    const at = this.scratchFor(2 * nInputs * 8);
    const f64 = this.memoryF64, xAt = at >>> 3, tAt = xAt + nInputs;
    // After scratchFor, which may grow the memory; the sweeps below never do.
    const { val, tan, tanAdj } = this.views;
    const nGuards = this.guardNodes.length, width = outputs.length;
    for (let r = from; r < to; r++) {
      row[0] = r;
      copyNumbers(X, r * nInputs, f64, xAt, nInputs);
      copyNumbers(D, r * nInputs, f64, tAt, nInputs);
      let failed: number;
      try {
        failed = this.core.replayForwardTangent(at, at + nInputs * 8, nInputs, this.guardsAt, nGuards);
      } catch (error) {
        throw this.recover(error);
      }
      if (failed >= 0) return r;
      if (top >= 0) {
        this.reverseTangentFused(top, 1, count, nInputs);
        copyNumbers(tanAdj!, 0, out, r * nInputs, nInputs);
        if (values) values[r] = val[top]!;
        continue;
      }
      for (let j = 0; j < width; j++) {
        const o = outputs[j]!;
        out[r * width + j] = tan![o]!;
        if (values) values[r * width + j] = val[o]!;
      }
    }
    return to;
  }

  // Every call into the core goes through here but the fused hvp pair's: any of them may write
  // adjoints (so the next fused hvp or batch clears them all), and a trap replaces the instance
  // (recover).
  // `run` for the calls every gradient, replay and batch makes, without a closure: one a call was
  // the only allocation of a handle gradient and of a compiled gradient on the wasm engine
  // (probes: 120 and 250 bytes a call). A core export ignores the arguments it does not take.
  private callCore(
    fn: (...args: number[]) => number | void, a: number, b: number, c: number, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0, j = 0,
  ): number {
    this.zeroed = NOT_ZEROED;
    try {
      return fn(a, b, c, d, e, f, g, h, i, j) ?? 0;
    } catch (error) {
      throw this.recover(error);
    }
  }

  private run<T>(call: () => T): T {
    this.zeroed = NOT_ZEROED;
    try {
      return call();
    } catch (error) {
      throw this.recover(error);
    }
  }

  // Whether the last calls to touch the adjoints (and their tangents) left every one a generated
  // reverse sweep reads at +0 but the inputs': `reverseTangentFused` both, a `gradientBatch` with
  // generated sweeps the adjoints. Every other call into the core (through run), a trap and new
  // sweeps forget it.
  private zeroed: Zeroed = NOT_ZEROED;

  /** hvp's reverse half after `replayForwardTangent`: the generated reverse tangent sweep seeded
   *  at `out`, clearing only the inputs' adjoints when the last sweep left the rest at +0. */
  reverseTangentFused(out: number, seed: number, count: number, nInputs: number): void {
    const { adjoints, tangentAdjoints } = this.zeroed;
    this.callCore(this.core.reverseTangentFused, out, seed, count, nInputs, adjoints && tangentAdjoints ? 1 : 0);
    this.zeroed = zeroedState(true, true);
  }

  /** `reverseTangent` through the generated sweep when one is installed. */
  reverseTangentReplay(out: number, seed: number, count: number): void {
    this.generateTangentSweeps();
    this.callCore(this.core.reverseTangentReplay, out, seed, count);
  }

  /** sweepReverse through the generated reverse sweep when one is installed. */
  sweepReverseReplay(top: number): void {
    this.callCore(this.core.sweepReverseReplay, top, 0, 0);
  }

  sweepReverseTangent(top: number): void {
    this.callCore(this.core.sweepReverseTangent, top, 0, 0);
  }

  firstNonFinite(from: number, to: number, values: boolean): number {
    return this.core.firstNonFinite(from, to, values ? 1 : 0);
  }
}
