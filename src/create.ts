import type { Backend, BackendChoice, BackendKind } from './backend.ts';
import { CapacityError, TapegradError } from './errors.ts';
import { BACKEND_RULE, checkOptions } from './options.ts';
import { JsBackend } from './js/backend.ts';
import { Tape, type TapeLimits } from './tape.ts';
import { WasmBackend, loadCodegen } from './wasm/backend.ts';
import { adoptCoreModule, coreLoadFailure, coreModuleIfLoaded, loadCoreModule, refusedByPolicy, wasmAvailable } from './wasm/loader.ts';

export interface TapeOptions extends TapeLimits {
  /** 'wasm' (default), 'js' (the pure-JS mode), or 'auto': wasm where the runtime has
   *  WebAssembly and compiles the core, else js (a page whose Content-Security-Policy refuses
   *  WebAssembly, say). Only 'auto' ever falls back. */
  backend?: BackendChoice | undefined;
}

const TAPE_OPTIONS = { backend: BACKEND_RULE, maxNodes: 'number', maxMemoryBytes: 'number', checkNaN: 'boolean' } as const;

function resolveKind(options: TapeOptions): BackendKind {
  checkOptions(options, 'createTape', TAPE_OPTIONS);
  return resolveBackend(options.backend);
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

export interface InitOptions {
  /** A core compiled elsewhere, e.g. `await coreModule()` posted to a worker: the worker then
   *  instantiates it without compiling again. */
  module?: WebAssembly.Module | undefined;
  /** Also load the code generator that `compile` and the fused elementwise kernels use on the
   *  wasm backend (default true; a separate chunk, about 16 KB gzipped). `false` only defers it:
   *  `createTape` loads it, and so does a compiled function at first use, which interprets until
   *  it is there; until then elementwise runs are swept block by block (same results, slower).
   *  `compile(f, { codegen: false })` turns generated sweeps off. */
  codegen?: boolean | undefined;
}

/** Compiles the wasm core once (later calls are free). `createTapeSync` and `compile` need it
 *  first. */
export async function init(options: InitOptions = {}): Promise<void> {
  checkOptions(options, 'init', { module: 'module', codegen: 'boolean' });
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
  checkOptions(options, 'createTape', TAPE_OPTIONS);
  const kind = await loadBackend(options.backend, () => loadCodegen().catch(() => {}));
  return new Tape(createBackend(kind, options.backend === 'auto'), options);
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
  return new Tape(createBackend(resolveKind(options), options.backend === 'auto'), options);
}

function noWasm(): TapegradError {
  return new TapegradError('INVALID_ARGUMENT', "this runtime has no WebAssembly; use { backend: 'js' }, or { backend: 'auto' } to fall back to it");
}

/** @internal A fresh engine of the given kind (the wasm one needs the module loaded). */
export function createBackend(kind: BackendKind, auto = false): Backend {
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
    return new WasmBackend(module);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    // Each wasm tape (and compiled function) owns a WebAssembly.Memory, and browsers cap how many
    // live at once (Chromium: about 125 a page, whatever their size): the next one was a raw
    // RangeError, and 'auto' did not fall back (a browser probe).
    if (auto) return new JsBackend();
    throw new CapacityError(
      `no WebAssembly.Memory for another wasm tape (${error.message}): browsers cap them, one a tape or compiled function (Chromium: about 125 a page); reuse tapes (reset()), or use { backend: 'auto' }`,
      0,
    );
  }
}
