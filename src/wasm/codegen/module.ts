// Module assembly: wraps a plan's sweeps (replay, or the tangent ones), each one function per part of
// the plan, or a fused run kernel (emit-runs.ts), in a wasm module that imports the core's memory
// and rule functions and exports them.
import { emitForward, emitReverse } from './emit-replay.ts';
import { emitForwardTangent, emitReverseTangent, emitTangent } from './emit-tangents.ts';
import type { Body, Order, SweepPlan } from './plan.ts';
import { Bytes, F64, I32, W_Call, W_End, W_I32Const, W_LocalGet, writeSigned, writeUnsigned } from './wasm.ts';

/** Functions a generated module imports before its own (the core's rules; see rules.ts's FN_*). */
export const IMPORTED = 5;

/** The module of a plan's sweeps: 'replay' exports `forward(valBase, adjBase)` and
 *  `reverse(valBase, adjBase, reset)`;
 *  'tangents' exports `tangent` and `forwardTangent(valBase, adjBase, tanBase, tanAdjBase)` (the
 *  second computes values too, for jvp and hvp once these exist) and `reverseTangent(valBase,
 *  adjBase, tanBase, tanAdjBase, reset)`, made on the first jvp or hvp only. */
/** Writes a dispatcher's body as `emitDispatcher` does (the wasm engine's core does, see
 *  assembly/dispatch.ts), or returns null where it cannot, and the JavaScript writes it. */
export type DispatcherWriter = (order: Order, backwards: boolean, params: number, base: number, parts: number) => Uint8Array | null;

export function emitSweeps({ parts, shapes, order }: SweepPlan, which: 'replay' | 'tangents', writeDispatcher?: DispatcherWriter): Uint8Array<ArrayBuffer> {
  // [name, emitter, runs backwards, parameters]
  const sweeps: [string, (bodies: Body[], relative?: Uint8Array | null) => Bytes, boolean, number][] = which === 'replay'
    ? [['forward', emitForward, false, 2], ['reverse', emitReverse, true, 3]]
    : [['tangent', emitTangent, false, 4], ['reverseTangent', emitReverseTangent, true, 5], ['forwardTangent', emitForwardTangent, false, 4]];
  // Function types: (i32 × 2) to (i32 × 7), after the imports' four (a shape's function takes
  // its sweep's parameters, a shift and a count).
  const arities = [2, 3, 4, 5, 6, 7];
  const typeOf = (params: number): number => arities.indexOf(params);
  const types = arities.map((params) => [0x60, params, ...new Array<number>(params).fill(I32), 0]);
  // Each sweep is one function per part and per shape (V8 compiles and tiers up per function);
  // with more than one of them in `order`, the exported sweep calls them in sweep order, a
  // shape's with the shift of each of its bodies.
  const units = parts.length + shapes.length;
  const direct = shapes.length === 0 && parts.length <= 1;
  const functionBodies: Bytes[] = [];
  const functionTypes: number[] = [];
  if (!direct) {
    sweeps.forEach(([, , backwards, params], k) => {
      const base = IMPORTED + sweeps.length + k * units;
      const written = writeDispatcher?.(order, backwards, params, base, parts.length);
      functionBodies.push(written ? Bytes.of(written) : emitDispatcher(order, backwards, params, base, parts.length));
      functionTypes.push(typeOf(params));
    });
  }
  for (const [, emit, , params] of sweeps) {
    for (const part of direct ? [parts[0] ?? []] : parts) {
      functionBodies.push(emit(part));
      functionTypes.push(typeOf(params));
    }
    for (const { body, relative } of shapes) {
      functionBodies.push(emit([body], relative));
      functionTypes.push(typeOf(params + 2));
    }
  }
  // The dispatchers come first; without them, each sweep's one function.
  return assembleModule(types, functionTypes, sweeps.map(([name], k) => [name, IMPORTED + k]), functionBodies);
}

// The exported sweep of a plan with several units: for each step of `order` (backwards for a
// reverse sweep), its parameters and a call of the step's function, a shape's with its body's
// shift and count. A data-dependent plan has a step per body (the branchy loss: 1,862): the wasm
// engine has its core write these bytes (writeDispatcher), as this loop ran once per compile
// before V8 had compiled it (1.5 ms); this is what the core's are checked against, and the way
// where the core has no scratch for them.
export function emitDispatcher(order: Order, backwards: boolean, params: number, base: number, parts: number): Bytes {
  const fn = new Bytes(16 + order.length * (2 * params + 16));
  const buf = fn.buf;
  const { unit, shift, count } = order;
  let at = 0;
  buf[at++] = 0; // no locals
  for (let s = 0; s < order.length; s++) {
    const k = backwards ? order.length - 1 - s : s;
    for (let q = 0; q < params; q++) { buf[at++] = W_LocalGet; buf[at++] = q; }
    const u = unit[k]!;
    if (u >= parts) {
      buf[at++] = W_I32Const; at = writeSigned(buf, at, shift[k]!);
      buf[at++] = W_I32Const; at = writeSigned(buf, at, count[k]!);
    }
    buf[at++] = W_Call; at = writeUnsigned(buf, at, base + u);
  }
  buf[at++] = W_End;
  fn.len = at;
  return fn;
}

/** A module importing the core's memory and rule functions (`env`: memory, ruleForward,
 *  rulePartials, rulePartialZ, rulePartialsTangent, rulePartialZTangent), with function types
 *  `types` (encoded, after the imports' four), one function per body of type index `functionTypes[k]`
 *  into `types`, and `exports` as [name, function index]. */
export function assembleModule(types: number[][], functionTypes: number[], exports: [string, number][], bodies: Bytes[]): Uint8Array<ArrayBuffer> {
  const out = new Bytes();
  out.bytes([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
  const typeSection = new Bytes();
  typeSection.u32(4 + types.length);
  typeSection.bytes([0x60, 3, I32, F64, F64, 1, F64]);
  typeSection.bytes([0x60, 4, I32, F64, F64, F64, 1, F64]);
  typeSection.bytes([0x60, 0, 1, F64]);
  typeSection.bytes([0x60, 7, I32, F64, F64, F64, F64, F64, F64, 1, F64]);
  for (const type of types) typeSection.bytes(type);
  out.section(1, typeSection);
  const imports = new Bytes();
  imports.u32(6);
  imports.name('env'); imports.name('memory'); imports.bytes([0x02, 0x00, 0x00]);
  imports.name('env'); imports.name('ruleForward'); imports.bytes([0x00, 0]);
  imports.name('env'); imports.name('rulePartials'); imports.bytes([0x00, 1]);
  imports.name('env'); imports.name('rulePartialZ'); imports.bytes([0x00, 2]);
  imports.name('env'); imports.name('rulePartialsTangent'); imports.bytes([0x00, 3]);
  imports.name('env'); imports.name('rulePartialZTangent'); imports.bytes([0x00, 2]);
  out.section(2, imports);
  const functions = new Bytes();
  functions.u32(functionTypes.length);
  for (const type of functionTypes) functions.u32(4 + type);
  out.section(3, functions);
  const exportSection = new Bytes();
  exportSection.u32(exports.length);
  for (const [name, index] of exports) { exportSection.name(name); exportSection.bytes([0x00]); exportSection.u32(index); }
  out.section(7, exportSection);
  const code = new Bytes();
  code.u32(bodies.length);
  for (const fn of bodies) {
    code.u32(fn.len);
    code.bytes(fn.buf.subarray(0, fn.len));
  }
  out.section(10, code);
  return out.buf.slice(0, out.len);
}
