// Compiles the embedded core once per process (or page) and hands out instances. No top-level
// await and no `node:` imports: the same module runs in Node, browsers and bundlers.
import { WASM_BASE64 } from './core.generated.ts';

export interface CoreExports {
  memory: WebAssembly.Memory;
  reserve(minCapacity: number, live: number, maxCapacity: number): number;
  enableTangents(live: number): number;
  nodeBytes(): number;
  forward(from: number, to: number): void;
  reverse(out: number, seed: number, count: number): void;
  tangent(from: number, to: number): void;
  reverseTangent(out: number, seed: number, count: number): void;
  clearAdjoints(count: number, withTangents: number): void;
  sweepReverse(top: number): void;
  sweepReverseTangent(top: number): void;
  scratch(bytes: number): number;
  replayForward(x: number, nInputs: number, count: number, guards: number, nGuards: number): number;
  gradientBatch(x: number, rows: number, nInputs: number, count: number, out: number, g: number, guards: number, nGuards: number): number;
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
}

let compiled: WebAssembly.Module | null = null;
let compiling: Promise<WebAssembly.Module> | null = null;

function decodeBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** True where this runtime has WebAssembly. */
export function wasmAvailable(): boolean {
  return typeof WebAssembly === 'object' && typeof WebAssembly.instantiate === 'function';
}

/** Compiles the core (once); later calls return the same module. */
export function loadCoreModule(): Promise<WebAssembly.Module> {
  if (compiled) return Promise.resolve(compiled);
  compiling ??= WebAssembly.compile(decodeBase64(WASM_BASE64)).then((module) => (compiled = module));
  return compiling;
}

/** The compiled core if `loadCoreModule` has finished, else null. */
export function coreModuleIfLoaded(): WebAssembly.Module | null {
  return compiled;
}

/** Uses a module compiled elsewhere (e.g. sent to a worker) instead of compiling again. */
export function adoptCoreModule(module: WebAssembly.Module): void {
  compiled = module;
}

export interface CoreImports {
  customForward(i: number): void;
  customReverse(i: number, g: number): void;
  customTangent(i: number): void;
  customReverseTangent(i: number, g: number, gTangent: number): void;
}

const NO_CUSTOM_OPS: CoreImports = {
  customForward: noCustom, customReverse: noCustom, customTangent: noCustom, customReverseTangent: noCustom,
};

function noCustom(): never {
  throw new Error('custom op reached with no handler installed');
}

/** A fresh instance of the core, with its own memory. */
export function instantiateCore(module: WebAssembly.Module, imports: CoreImports = NO_CUSTOM_OPS): CoreExports {
  return new WebAssembly.Instance(module, { env: { ...imports } }).exports as unknown as CoreExports;
}

/** Reads an AssemblyScript string (UTF-16, byte length stored just before it). */
export function readCoreString(core: CoreExports, ptr: number): string {
  const byteLength = new Uint32Array(core.memory.buffer, ptr - 4, 1)[0]!;
  return String.fromCharCode(...new Uint16Array(core.memory.buffer, ptr, byteLength >>> 1));
}
