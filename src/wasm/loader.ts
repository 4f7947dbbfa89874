// Compiles the embedded core once per process (or page) and hands out instances. No top-level
// await and no `node:` imports: the same module runs in Node, browsers and bundlers. There are
// two builds of the core: with SIMD (batched replay two rows at a time) and without, for
// runtimes that lack wasm SIMD (or DecompressionStream: the SIMD build is embedded gzipped).
// Each is its own module, imported on demand, so a bundle only downloads the one it runs.
import { TapegradError } from '../errors.ts';

export type CoreVariant = 'simd' | 'scalar';

export interface CoreExports {
  memory: WebAssembly.Memory;
  reserve(minCapacity: number, live: number, maxCapacity: number): number;
  reserveElements(minElements: number, live: number, maxElements: number): number;
  setLiveElements(n: number): void;
  setVectorInput(on: number): void;
  setRunFusion(on: number): void;
  setKeepAdjoints(on: number): void;
  setHvpOutput(out: number): void;
  setGradientOutput(out: number): void;
  forgetRunKernels(): void;
  materialize(i: number): void;
  materializeAllTangents(to: number): void;
  materializeTangent(i: number): void;
  clearLeafTangents(count: number): void;
  elementBytes(): number;
  getElementCapacity(): number;
  xvalPtr(): number;
  xadjPtr(): number;
  xtanPtr(): number;
  xtanAdjPtr(): number;
  enableTangents(live: number, maxCapacity: number, maxElements: number): number;
  fitCapacities(maxCapacity: number, maxElements: number, live: number): void;
  nodeBytes(): number;
  forward(from: number, to: number): void;
  reverse(out: number, seed: number, count: number): void;
  tangent(from: number, to: number): void;
  reverseTangent(out: number, seed: number, count: number): void;
  clearAdjoints(count: number, withTangents: number): void;
  sweepReverse(top: number): void;
  sweepReverseTangent(top: number): void;
  scratch(bytes: number): number;
  countUses(from: number, to: number): number;
  buildSchedule(nInputs: number, count: number, minMispredicted: number, pruneDead: number): number;
  dropSchedule(): void;
  nextLinks(lo: number, hi: number, at: number, size: number): void;
  planSegments(from: number, to: number, maxSlots: number, at: number, linkBytes: number, maxPeriod: number, chunk: number, outCap: number): number;
  repeatsOf(count: number, at: number, from: number, seeded: number, maxNodes: number, tries: number, tableSize: number, hashMask: number): void;
  writeDispatcher(steps: number, order: number, backwards: number, params: number, base: number, parts: number, out: number): number;
  reserveStepTable(bytes: number): number;
  scheduleCellAddress(): number;
  firstNonFinite(from: number, to: number, values: number): number;
  replayForward(x: number, nInputs: number, count: number, guards: number, nGuards: number): number;
  gradientBatch(x: number, rows: number, nInputs: number, count: number, out: number, g: number, guards: number, nGuards: number, values: number, zeroed: number): number;
  setBatchSeeds(rows: number, nodes: number, outputs: number): void;
  gradientBatchSimd?(x: number, rows: number, nInputs: number, count: number, out: number, g: number, guards: number, nGuards: number, lanes: number, values: number): number;
  opName(op: number): number;
  opArity(op: number): number;
  opCount(): number;
  getCapacity(): number;
  tangentsEnabled(): number;
  valPtr(): number;
  adjPtr(): number;
  aPtr(): number;
  bPtr(): number;
  opPtr(): number;
  tanPtr(): number;
  tanAdjPtr(): number;
  setGeneratedSweeps(forwardSlot: number, reverseSlot: number, tangentSlot: number, reverseTangentSlot: number, forwardTangentSlot: number): void;
  sweepReverseReplay(top: number): void;
  tangentReplay(from: number, to: number): void;
  reverseTangentReplay(out: number, seed: number, count: number): void;
  replayForwardTangent(x: number, t: number, nInputs: number, guards: number, nGuards: number): number;
  reverseTangentFused(out: number, seed: number, count: number, nInputs: number, zeroed: number): void;
  rulePartialsTangent(op: number, x: number, z: number, y: number, tx: number, tz: number, ty: number): number;
  rulePartialZTangent(): number;
  ruleForward(op: number, x: number, z: number): number;
  rulePartials(op: number, x: number, z: number, y: number): number;
  rulePartialZ(): number;
  /** The instance's function table (imported): slots 1 to 5 take generated sweeps. */
  table: WebAssembly.Table;
}

const compiled: Partial<Record<CoreVariant, WebAssembly.Module>> = {};
const compiling: Partial<Record<CoreVariant, Promise<WebAssembly.Module>>> = {};
let defaultVariant: CoreVariant | null = null;
/** The error of the last failed load of the core, or null (for the message of a later call). */
export let coreLoadFailure: TapegradError | null = null;
/** The page's Content-Security-Policy refused to compile WebAssembly: every later compile would be
 *  refused too. */
export let refusedByPolicy = false;

// The smallest module using a SIMD instruction (i8x16.splat + i8x16.popcnt): validates only
// where the runtime has wasm SIMD.
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/** True where this runtime validates wasm SIMD. */
export function simdAvailable(): boolean {
  return wasmAvailable() && WebAssembly.validate(SIMD_PROBE);
}

function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function decodeHex(text: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(text.length >>> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(text.substr(2 * i, 2), 16);
  return bytes;
}

/** True where this runtime has WebAssembly. */
export function wasmAvailable(): boolean {
  return typeof WebAssembly === 'object' && typeof WebAssembly.instantiate === 'function';
}

// A browser may keep a chunk's failed download as the answer to every later import of it for the
// page's life (Chromium 150 does: one 503, and every later init() failed with it; 156 fetches it
// again). So after a failure, an import that fails again is tried once more under a specifier of
// its own (a query string makes a new module record). Where a bundler has renamed the chunk, that
// file does not exist, and the first error stands.
const failures: Record<string, number> = {};

/** Imports the chunk `load` imports, `file` (its path from here, as published), as above. */
export async function importChunk<T>(load: () => Promise<T>, file: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const retry = failures[file] = (failures[file] ?? 0) + 1;
    if (retry < 2) throw error;
    return import(/* @vite-ignore */ /* webpackIgnore: true */ `${file}?retry=${retry}`).catch(() => {
      throw error;
    }) as Promise<T>;
  }
}

async function coreBytes(variant: CoreVariant): Promise<Uint8Array<ArrayBuffer>> {
  const embedded = variant === 'simd'
    ? await importChunk(() => import('./core-simd.generated.ts'), './core-simd.generated.js')
    : await importChunk(() => import('./core.generated.ts'), './core.generated.js');
  if (!embedded.WASM_GZIPPED) return decodeHex(embedded.WASM_TEXT);
  return inflate(decodeBase64(embedded.WASM_TEXT));
}

// Written through the stream's own writer: a Blob's stream (a byte stream) detaches the buffers
// it hands on, and the first ArrayBuffer detached in a process makes V8 check every typed-array
// access there for detached buffers from then on (the JS engine's handle recording 4.3 -> 5.1
// ns/node, forward 2.3 -> 2.8, reverse 3.7 -> 4.7; user code's typed arrays alike). Loading the
// SIMD core so detached one in every process.
async function inflate(gzipped: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new DecompressionStream('gzip');
  const writer = stream.writable.getWriter();
  // A failure reaches the readable side too, and the reader's read() rejects with it.
  writer.write(gzipped).then(() => writer.close()).catch(() => {});
  // Read chunk by chunk, not through `new Response(stream).arrayBuffer()`: Node builds its
  // Response global on first access by loading its HTTP client, about half of init() in a fresh
  // process (bench/startup.ts: 76.2 -> 36.9 ms).
  const reader = stream.readable.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.length;
  }
  const bytes = new Uint8Array(length);
  for (let k = 0, at = 0; k < chunks.length; at += chunks[k]!.length, k++) bytes.set(chunks[k]!, at);
  return bytes;
}

function canInflate(): boolean {
  return typeof DecompressionStream === 'function';
}

/** Compiles a build of the core (once; later calls return the same module): by default the SIMD
 *  build where the runtime supports it, else the scalar one. */
// The variant chosen once (or adopted by init({ module })) stays the process's: a worker handed a
// scalar core, where this runtime would pick SIMD, downloaded and compiled the SIMD core too at its
// next init() or createTape, which its tapes never used (a browser probe).
export function loadCoreModule(variant: CoreVariant = defaultVariant ?? (simdAvailable() && canInflate() ? 'simd' : 'scalar')): Promise<WebAssembly.Module> {
  defaultVariant ??= variant;
  const done = compiled[variant];
  if (done) return Promise.resolve(done);
  return (compiling[variant] ??= coreBytes(variant)
    .then((bytes) => WebAssembly.compile(bytes))
    .then(
      (module) => (compiled[variant] = module),
      (error: unknown) => {
        // Not kept: a chunk that failed to download once is fetched again by the next call (a
        // probe's page kept the rejection for its whole life, init() and createTape alike).
        delete compiling[variant];
        throw (coreLoadFailure = loadError(error));
      },
    ));
}

function loadError(error: unknown): TapegradError {
  const why = error instanceof Error ? error.message : String(error);
  // A page whose Content-Security-Policy lacks 'wasm-unsafe-eval' refuses to compile any wasm.
  if (/content.security|\bCSP\b|unsafe-eval/i.test(why)) refusedByPolicy = true;
  const next = refusedByPolicy
    ? "; a Content-Security-Policy must allow 'wasm-unsafe-eval' for WebAssembly, and without it { backend: 'auto' } takes the JS mode"
    : '; the next init() or createTape tries again';
  return new TapegradError('INVALID_ARGUMENT', `the wasm core could not be loaded (${why})${next}, and { backend: 'js' } needs no wasm`, { cause: error });
}

/** The default compiled core if it has been loaded, else null. */
export function coreModuleIfLoaded(variant: CoreVariant | null = defaultVariant): WebAssembly.Module | null {
  return variant ? compiled[variant] ?? null : null;
}

/** Uses a module compiled elsewhere (e.g. sent to a worker) instead of compiling again. */
export function adoptCoreModule(module: WebAssembly.Module, variant: CoreVariant): void {
  compiled[variant] = module;
  defaultVariant = variant;
}

export interface CoreImports {
  customForward(i: number): void;
  customReverse(i: number, g: number): void;
  customTangent(i: number): void;
  customReverseTangent(i: number, g: number, gTangent: number): void;
  /** The table slot of a fused kernel for the run whose signature is at `signature` (see
   *  assembly/vector.ts), or 0 to sweep it block by block. */
  fuseRun(signature: number, words: number): number;
}

const NO_CUSTOM_OPS: CoreImports = {
  customForward: noCustom, customReverse: noCustom, customTangent: noCustom, customReverseTangent: noCustom,
  fuseRun: () => 0,
};

function noCustom(): never {
  throw new Error('custom op reached with no handler installed');
}

// Every instance starts with this much memory (pages of 64 KiB: 32 MiB, about 1.3 million
// nodes), or what a tape's expectedNodes asks for, so most tapes never grow it. Growing wasm memory detaches its old ArrayBuffer, and the
// first detach anywhere in a JS engine makes every typed-array access in the process check for
// detached buffers from then on (measured: 10-15% slower recording). The pages are reserved, not
// touched: the operating system backs them only as the tape fills them. The core fills them
// before it grows memory (reserve in layout.ts).
export const INITIAL_PAGES = 512;
export const MAXIMUM_PAGES = 65536;

/** A fresh instance of the core, with its own memory of `pages` pages to start with (a tape's
 *  expectedNodes asks for more). */
export function instantiateCore(module: WebAssembly.Module, imports: CoreImports = NO_CUSTOM_OPS, pages = INITIAL_PAGES): CoreExports {
  const memory = new WebAssembly.Memory({ initial: pages, maximum: MAXIMUM_PAGES });
  const table = new WebAssembly.Table({ initial: 6, element: 'anyfunc' });
  const env = { ...imports, hostSin: Math.sin, hostCos: Math.cos, memory, table };
  const instance = new WebAssembly.Instance(module, { env });
  const core = Object.assign(Object.create(null) as object, instance.exports, { table }) as unknown as CoreExports;
  // Addresses are unsigned, but an i32 export reads negative in JS past 2 GiB of memory: every
  // caller gets them as the unsigned numbers typed-array views take.
  for (const name of ADDRESS_EXPORTS) {
    const address = core[name] as (bytes?: number) => number;
    (core as unknown as Record<string, (bytes?: number) => number>)[name] = (bytes) => address(bytes) >>> 0;
  }
  return core;
}

const ADDRESS_EXPORTS = [
  'valPtr', 'adjPtr', 'aPtr', 'bPtr', 'opPtr', 'tanPtr', 'tanAdjPtr', 'xvalPtr', 'xadjPtr', 'xtanPtr', 'xtanAdjPtr', 'scratch',
] as const satisfies readonly (keyof CoreExports)[];

/** Reads an AssemblyScript string (UTF-16, byte length stored just before it). */
export function readCoreString(core: CoreExports, ptr: number): string {
  const byteLength = new Uint32Array(core.memory.buffer, ptr - 4, 1)[0]!;
  return String.fromCharCode(...new Uint16Array(core.memory.buffer, ptr, byteLength >>> 1));
}
