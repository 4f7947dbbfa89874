// Module assembly: wraps a plan's sweeps (replay, or the tangent ones), each one function per part of
// the plan, or a fused run kernel (emit-runs.ts), in a wasm module that imports the core's memory
// and rule functions and exports them.
import { emitForward, emitReverse } from './emit-replay.ts';
import { emitForwardTangent, emitReverseTangent, emitTangent } from './emit-tangents.ts';
import type { Body, Order, SweepPlan } from './plan.ts';
import { Bytes, F64, I32, W_Block, W_Br, W_BrIf, W_BrTable, W_Call, W_End, W_GlobalGet, W_I32Add, W_I32Const, W_I32Load, W_I32Ne, W_LocalGet, W_Loop, W_Void, writeSigned, writeUnsigned } from './wasm.ts';

/** Functions a generated module imports before its own (the core's rules; see rules.ts's FN_*). */
export const IMPORTED = 5;

/** Steps of a sweep from which its dispatcher walks a table of them in memory (`stepTable`)
 *  instead of calling each in turn. A data-dependent plan has a step per body: as straight calls,
 *  the dispatcher grows with the data, and V8 compiles and tiers it up last (the branchy loss at
 *  4,000 samples, 3,700 steps: first call 2.9-3.0x its recording, first gradient 20-28 ns/node;
 *  with the table 2.1-2.5x and 9-20; at 10,000 samples the table's steady gradients were faster
 *  too, 1.23 against 1.34 ns/node). The table pays a jump on each step's unit, which the data
 *  decides and the branch predictor misses about once a sample: at 2,000 samples (1,862 steps)
 *  steady gradients took 1.21 ns/node against 1.11 for straight calls, whose first calls were no
 *  slower there (medians of single runs, bench/codegen-cliffs.ts --case=branchy --samples=n). */
export const TABLE_STEPS = 2048;

/** Whether a plan's dispatchers read its steps from a table (see `stepTable`). */
export const usesStepTable = (order: Order): boolean => order.length > TABLE_STEPS;

/** A plan's steps as its table dispatchers read them: (unit, shift, count) as i32 each, in sweep
 *  order. The engine writes it where the core's schedule cell points (the schedule region, which
 *  moves with the tape). */
export function stepTable({ length, unit, shift, count }: Order): Int32Array {
  const table = new Int32Array(3 * length);
  for (let k = 0; k < length; k++) {
    table[3 * k] = unit[k]!;
    table[3 * k + 1] = shift[k]!;
    table[3 * k + 2] = count[k]!;
  }
  return table;
}

/** The module of a plan's sweeps: 'replay' exports `forward(valBase, adjBase)` and
 *  `reverse(valBase, adjBase, reset)`;
 *  'tangents' exports `tangent` and `forwardTangent(valBase, adjBase, tanBase, tanAdjBase)` (the
 *  second computes values too, for jvp and hvp once these exist) and `reverseTangent(valBase,
 *  adjBase, tanBase, tanAdjBase, reset)`, made on the first jvp or hvp only. A plan of more than
 *  TABLE_STEPS steps imports `env.scheduleCell` (an i32 global: the address of the cell that
 *  holds the table's). */
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
  const table = !direct && usesStepTable(order);
  const functionBodies: Bytes[] = [];
  const functionTypes: number[] = [];
  if (!direct) {
    sweeps.forEach(([, , backwards, params], k) => {
      const base = IMPORTED + sweeps.length + k * units;
      const written = table ? null : writeDispatcher?.(order, backwards, params, base, parts.length);
      functionBodies.push(
        table ? emitTableDispatcher(order.length, backwards, params, base, parts.length, units)
          : written ? Bytes.of(written) : emitDispatcher(order, backwards, params, base, parts.length),
      );
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
  return assembleModule(types, functionTypes, sweeps.map(([name], k) => [name, IMPORTED + k]), functionBodies, table);
}

// The exported sweep of a plan of at most TABLE_STEPS steps: for each step of `order` (backwards
// for a reverse sweep), its parameters and a call of the step's function, a shape's with its
// body's shift and count. A data-dependent plan has a step per body (the branchy loss: 1,862):
// the wasm engine has its core write these bytes (writeDispatcher), as this loop ran once per
// compile before V8 had compiled it (1.5 ms); this is what the core's are checked against, and
// the way where the core has no scratch for them.
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

const STEP_BYTES = 12;

// The exported sweep of a plan with many steps: a loop over its table (`stepTable`; backwards for
// a reverse sweep) that jumps on each step's unit to a call of that unit's function, a shape's
// with the step's shift and count. Its size depends on the units, not the steps, so V8 compiles
// it at once and tiers it up with the bodies.
export function emitTableDispatcher(steps: number, backwards: boolean, params: number, base: number, parts: number, units: number): Bytes {
  const fn = new Bytes(64 + units * (2 * params + 16));
  const step = params, end = params + 1;
  fn.bytes([1, 2, I32]); // locals: the step's address, and the address past the last
  // The table's address from the schedule cell, then the first step's and the end's.
  fn.byte(W_GlobalGet); fn.u32(0);
  fn.memory(W_I32Load, 0, 2);
  fn.tee(step);
  fn.i32Const(backwards ? -STEP_BYTES : steps * STEP_BYTES);
  fn.byte(W_I32Add);
  fn.set(end);
  if (backwards) {
    fn.get(end);
    fn.i32Const(steps * STEP_BYTES);
    fn.byte(W_I32Add);
    fn.set(step);
  }
  fn.byte(W_Loop); fn.byte(W_Void);
  fn.byte(W_Block); fn.byte(W_Void);
  for (let u = 0; u < units; u++) { fn.byte(W_Block); fn.byte(W_Void); }
  fn.get(step);
  fn.memory(W_I32Load, 0, 2);
  fn.byte(W_BrTable);
  fn.u32(units);
  for (let u = 0; u < units; u++) fn.u32(u);
  fn.u32(units - 1);
  // After the block of unit u come its call and a branch out to the next step.
  for (let u = 0; u < units; u++) {
    fn.byte(W_End);
    for (let q = 0; q < params; q++) fn.get(q);
    if (u >= parts) {
      fn.get(step); fn.memory(W_I32Load, 4, 2);
      fn.get(step); fn.memory(W_I32Load, 8, 2);
    }
    fn.byte(W_Call); fn.u32(base + u);
    fn.byte(W_Br); fn.u32(units - 1 - u);
  }
  fn.byte(W_End);
  fn.get(step);
  fn.i32Const(backwards ? -STEP_BYTES : STEP_BYTES);
  fn.byte(W_I32Add);
  fn.tee(step);
  fn.get(end);
  fn.byte(W_I32Ne);
  fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_End);
  fn.byte(W_End);
  return fn;
}

/** A module importing the core's memory and rule functions (`env`: memory, ruleForward,
 *  rulePartials, rulePartialZ, rulePartialsTangent, rulePartialZTangent), with function types
 *  `types` (encoded, after the imports' four), one function per body of type index `functionTypes[k]`
 *  into `types`, and `exports` as [name, function index]. */
export function assembleModule(types: number[][], functionTypes: number[], exports: [string, number][], bodies: Bytes[], scheduleCell = false): Uint8Array<ArrayBuffer> {
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
  imports.u32(scheduleCell ? 7 : 6);
  imports.name('env'); imports.name('memory'); imports.bytes([0x02, 0x00, 0x00]);
  imports.name('env'); imports.name('ruleForward'); imports.bytes([0x00, 0]);
  imports.name('env'); imports.name('rulePartials'); imports.bytes([0x00, 1]);
  imports.name('env'); imports.name('rulePartialZ'); imports.bytes([0x00, 2]);
  imports.name('env'); imports.name('rulePartialsTangent'); imports.bytes([0x00, 3]);
  imports.name('env'); imports.name('rulePartialZTangent'); imports.bytes([0x00, 2]);
  if (scheduleCell) { imports.name('env'); imports.name('scheduleCell'); imports.bytes([0x03, I32, 0x00]); }
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
