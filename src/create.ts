import type { Backend, BackendChoice, BackendKind } from './backend.ts';
import { CapacityError, TapegradError, describe } from './errors.ts';
import { BACKEND_RULE, readOptions } from './options.ts';
import { JsBackend } from './js/backend.ts';
import { Tape, type TapeLimits } from './tape.ts';
import { WasmBackend, loadCodegen } from './wasm/backend.ts';
import { INITIAL_PAGES, MAXIMUM_PAGES, adoptCoreModule, coreLoadFailure, coreModuleIfLoaded, loadCoreModule, refusedByPolicy, wasmAvailable } from './wasm/loader.ts';

/** Options of `createTape` and `createTapeSync`: the engine, the limits and NaN checks of
 *  TapeLimits, and `expectedNodes`. */
export interface TapeOptions extends TapeLimits {
  /** 'wasm' (default), 'js' (the pure-JS mode), or 'auto': wasm where the runtime has
   *  WebAssembly and compiles the core, else js (a page whose Content-Security-Policy refuses
   *  WebAssembly, say). Only 'auto' ever falls back. */
  backend?: BackendChoice | undefined;
  /** The most nodes a recording is expected to hold: room for them (25 bytes a node) is made
   *  when the tape is created, so recordings of scalar nodes up to that size never grow it
   *  (vector elements, and the tangents of jvp and hvp, are not counted). A hint, not a limit
   *  (that is `maxNodes`). On the wasm engine, a tape past about 1.3 million nodes otherwise
   *  grows its memory, which detaches the old buffer, and from then on V8 checks every
   *  typed-array access in the process (see README, Memory). */
  expectedNodes?: number | undefined;
}

const TAPE_OPTIONS = { backend: BACKEND_RULE, maxNodes: 'number', maxMemoryBytes: 'number', checkNaN: 'boolean', expectedNodes: 'number' } as const;

// Bytes of a node in either engine's regions (value, adjoint, two operands, op); what the core's
// memory holds beside them for a compiled function's planner, per node (its marks and segments,
// about 1.5 bytes, where the GMM objective's 3.4 M nodes grew an exactly sized memory by 8 MiB) and
// in all (its data, the element regions' first capacity, the planner's link tables, the replay
// buffers of a gradient).
const NODE_BYTES = 25;
const PLANNER_BYTES = 4;
const CORE_SLACK_BYTES = 2 ** 22;

/** The wasm memory's first size in pages for `options.expectedNodes` (undefined: the default),
 *  after checking it against the tape's limits. */
function expectedPages(options: TapeOptions, where: string): number | undefined {
  const n = options.expectedNodes;
  if (n === undefined) return undefined;
  const pages = checkExpectedNodes(n, where);
  const over = limitPassedBy(n, options);
  if (over === 'maxNodes') throw new TapegradError('INVALID_ARGUMENT', `${where}: expectedNodes = ${n} is more than maxNodes = ${options.maxNodes} allows`);
  if (over === 'maxMemoryBytes') {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: expectedNodes = ${n} takes ${n * NODE_BYTES} bytes (${NODE_BYTES} a node), more than maxMemoryBytes = ${options.maxMemoryBytes}`);
  }
  return pages;
}

/** @internal The limit among `limits` that `n` nodes pass, or null (limits that are no positive
 *  numbers are left to the tape, which names them). */
export function limitPassedBy(n: number, { maxNodes, maxMemoryBytes }: TapeLimits): 'maxNodes' | 'maxMemoryBytes' | null {
  if (typeof maxNodes === 'number' && maxNodes > 0 && n > maxNodes) return 'maxNodes';
  if (typeof maxMemoryBytes === 'number' && maxMemoryBytes > 0 && n * NODE_BYTES > maxMemoryBytes) return 'maxMemoryBytes';
  return null;
}

/** @internal Checks an expectedNodes option (a non-negative integer whose memory fits in 4 GiB)
 *  and returns the pages of that memory. */
export function checkExpectedNodes(n: unknown, where: string): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new TapegradError('INVALID_ARGUMENT', `${where}: expectedNodes must be a non-negative integer, got ${describe(n)}`);
  const pages = Math.ceil((n * (NODE_BYTES + PLANNER_BYTES) + CORE_SLACK_BYTES) / 65536);
  // The wasm engine's memory decides for both engines, so that a hint valid on one is on the
  // other: its nodes with the planner's bytes, and the core's own (a probe read "25 bytes a node"
  // and computed a limit of 1.7·10^8 nodes where it is 1.48·10^8). Written out, as the bundle's
  // bytes are counted: test/capacity.test.ts checks the figure is the limit.
  if (pages > MAXIMUM_PAGES) throw new CapacityError(`${where}: expectedNodes = ${n} needs more than the 4 GiB a tape holds (29 bytes a node and 4 MiB: at most 147957689 nodes)`, 147957689);
  // Below the default's 32 MiB too: V8 counts a memory's pages as external memory, and a process
  // making and dropping tapes of 32 MiB collected garbage again and again (fromBytes of a
  // 10-node function: 8 ms a call, 0.6 with 4 MiB).
  return pages;
}

// A tape of options.expectedNodes: its engine with room for them from the start.
function newTape(kind: BackendKind, options: TapeOptions, where: string): Tape {
  const pages = expectedPages(options, where);
  const tape = new Tape(createBackend(kind, options.backend === 'auto', pages), options, where);
  if (options.expectedNodes) tape.reserveExactly(options.expectedNodes);
  return tape;
}


/** @internal The engine a `backend` option names (already checked): 'auto' is wasm where the
 *  runtime has WebAssembly and its last load of the core did not fail, else js; the default is
 *  wasm. */
export function resolveBackend(backend: BackendChoice | undefined): BackendKind {
  return backend === 'auto' ? (wasmAvailable() && !coreRefused() ? 'wasm' : 'js') : backend ?? 'wasm';
}

// A Content-Security-Policy without 'wasm-unsafe-eval' refuses every compile of the page's life,
// and 'auto' is there so that such a page still works. A core loaded since counts again.
function coreRefused(): boolean {
  return coreLoadFailure !== null && coreModuleIfLoaded() === null;
}

// Exports every core build has, one of each kind of call the façade makes into it.
const CORE_EXPORTS = ['memory', 'reserve', 'forward', 'reverse', 'setRunFusion', 'reverseTangentFused', 'repeatsOf', 'gradientBatch'] as const;

/** Options of `init`. */
export interface InitOptions {
  /** A core compiled elsewhere, e.g. `await coreModule()` posted to a worker: the worker then
   *  instantiates it without compiling again. */
  module?: WebAssembly.Module | undefined;
  /** Also load the code generator that `compile` and the fused elementwise kernels use on the
   *  wasm backend (default true; a separate chunk, its size in README's Browsers and bundlers).
   *  `false` only defers it: `createTape` loads it, and so does a compiled function at first use,
   *  which interprets until it is there; until then elementwise runs are swept block by block
   *  (same results, slower).
   *  `compile(f, { codegen: false })` turns generated sweeps off. */
  codegen?: boolean | undefined;
}

/** Compiles the wasm core once (later calls are free). `createTapeSync` and `compile` need it
 *  first. */
export async function init(options: InitOptions = {}): Promise<void> {
  options = readOptions(options, 'init', { module: 'module', codegen: 'boolean' });
  // The generator is optional: a chunk that fails to load leaves compiled functions interpreting
  // (generatedSweepsReason says so, and their next recording loads it again), not the core.
  const codegen = options.codegen !== false && wasmAvailable() ? loadCodegen().catch(() => {}) : null;
  if (options.module) {
    if (!(options.module instanceof WebAssembly.Module)) throw new TapegradError('INVALID_ARGUMENT', 'init({ module }) needs a WebAssembly.Module');
    // Checked before it replaces the process's core: any module was adopted, and every wasm tape
    // after it failed with a raw TypeError, init() again included (a new-user probe).
    const names = new Set(WebAssembly.Module.exports(options.module).map((e) => e.name));
    const missing = CORE_EXPORTS.find((name) => !names.has(name));
    if (missing) {
      throw new TapegradError('INVALID_ARGUMENT', `init({ module }): not tapegrad's core (no export '${missing}'); the loaded core stays`);
    }
    const simd = names.has('gradientBatchSimd');
    adoptCoreModule(options.module, simd ? 'simd' : 'scalar');
  } else if (wasmAvailable()) {
    await loadCoreModule();
  }
  await codegen;
}

/** The compiled core (loading it if needed), to post to workers: `init({ module })` there. */
export async function coreModule(): Promise<WebAssembly.Module> {
  if (!wasmAvailable()) throw noWasm();
  return coreModuleIfLoaded() ?? loadCoreModule();
}

/** Creates a tape on the wasm core (default) or the pure-JS mode: `createTape({ backend: 'js' })`.
 *  On the wasm core it loads the code generator too, as `init()` does. */
export async function createTape(options: TapeOptions = {}): Promise<Tape> {
  options = readOptions(options, 'createTape', TAPE_OPTIONS);
  const kind = await loadBackend(options.backend, () => loadCodegen().catch(() => {}));
  return newTape(kind, options, 'createTape');
}

/** @internal The engine a `backend` option names, with the wasm core loaded for it (and `also`
 *  awaited beside it): 'auto' takes the JS mode where the core fails to load, and tries it again
 *  next time (a failed download may come back) unless the page's policy refused it. */
export async function loadBackend(backend: BackendChoice | undefined, also?: () => Promise<unknown>): Promise<BackendKind> {
  const auto = backend === 'auto';
  if (!(auto ? wasmAvailable() && !refusedByPolicy : resolveBackend(backend) === 'wasm')) return resolveBackend(backend);
  if (!wasmAvailable()) throw noWasm();
  try {
    await Promise.all([loadCoreModule(), also?.()]);
    return 'wasm';
  } catch (error) {
    if (!auto) throw error;
    return 'js';
  }
}

/** Like `createTape`, without awaiting: the wasm core must be loaded (`await init()`) first. */
export function createTapeSync(options: TapeOptions = {}): Tape {
  return tapeFor(options, 'createTapeSync');
}

/** @internal createTapeSync for `where` (fromBytes), which its errors name. */
export function tapeFor(options: TapeOptions, where: string): Tape {
  options = readOptions(options, where, TAPE_OPTIONS);
  return newTape(resolveBackend(options.backend), options, where);
}

/** Whether the runtime still makes a WebAssembly.Memory of one page (browsers cap how many live
 *  at once, whatever their size). */
function anotherMemoryFits(): boolean {
  try {
    new WebAssembly.Memory({ initial: 1, maximum: MAXIMUM_PAGES });
    return true;
  } catch {
    return false;
  }
}

function noWasm(): TapegradError {
  return new TapegradError('INVALID_ARGUMENT', "this runtime has no WebAssembly; use { backend: 'js' }, or { backend: 'auto' } to fall back to it");
}

/** @internal A fresh engine of the given kind (the wasm one needs the module loaded). */
export function createBackend(kind: BackendKind, auto = false, pages?: number): Backend {
  if (kind === 'js') return new JsBackend();
  if (!wasmAvailable()) throw noWasm();
  const module = coreModuleIfLoaded();
  if (!module) {
    // Where the page's policy refused it, init() cannot help: that error alone (a probe).
    if (refusedByPolicy) throw coreLoadFailure!;
    const failed = coreLoadFailure ? ` (the last load failed: ${coreLoadFailure.message})` : '';
    throw new TapegradError('INVALID_ARGUMENT', `the wasm core is not loaded yet: await init() (or use the async createTape) first${failed}`);
  }
  try {
    return new WasmBackend(module, pages);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    // Each wasm tape (and compiled function) owns a WebAssembly.Memory, and browsers cap how many
    // live at once (Chromium: about 125 a page, whatever their size): the next one was a raw
    // RangeError, and 'auto' did not fall back (a browser probe).
    if (auto) return new JsBackend();
    // Too large, or one memory too many: a browser probe at the page's cap read "expect fewer
    // nodes", which did not help. A memory of one page tells them apart.
    if (pages !== undefined && pages > INITIAL_PAGES && anotherMemoryFits()) {
      throw new CapacityError(`the runtime gave no WebAssembly.Memory of ${Math.ceil(pages / 16)} MiB for expectedNodes (${error.message}): expect fewer nodes, or leave it out and let the tape grow`, 0);
    }
    throw new CapacityError(
      `no WebAssembly.Memory for another wasm tape (${error.message}): browsers cap them, one a tape or compiled function (Chromium: about 125 a page); reuse tapes (reset()), or use { backend: 'auto' }`,
      0,
    );
  }
}
