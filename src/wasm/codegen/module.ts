// Module assembly: wraps a plan's two sweeps (replay or tangents), each one function per part of
// the plan, in a wasm module that imports the core's memory and rule functions and exports the
// sweeps.
import { emitForward, emitReverse } from './emit-replay.ts';
import { emitReverseTangent, emitTangent } from './emit-tangents.ts';
import type { SweepPlan } from './plan.ts';
import { Bytes, F64, I32, W_Call, W_End } from './wasm.ts';

/** The module of a plan's sweeps: 'replay' exports `forward` and `reverse(valBase, adjBase)`;
 *  'tangents' exports `tangent` and `reverseTangent(valBase, adjBase, tanBase, tanAdjBase)`,
 *  made on the first jvp or hvp only (they are about 8 times the size). */
export function emitSweeps({ parts }: SweepPlan, which: 'replay' | 'tangents'): Uint8Array<ArrayBuffer> {
  const out = new Bytes();
  out.bytes([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
  const types = new Bytes();
  types.u32(6);
  types.bytes([0x60, 2, I32, I32, 0]);
  types.bytes([0x60, 3, I32, F64, F64, 1, F64]);
  types.bytes([0x60, 4, I32, F64, F64, F64, 1, F64]);
  types.bytes([0x60, 0, 1, F64]);
  types.bytes([0x60, 4, I32, I32, I32, I32, 0]);
  types.bytes([0x60, 7, I32, F64, F64, F64, F64, F64, F64, 1, F64]);
  out.section(1, types);
  const imports = new Bytes();
  imports.u32(6);
  imports.name('env'); imports.name('memory'); imports.bytes([0x02, 0x00, 0x00]);
  imports.name('env'); imports.name('ruleForward'); imports.bytes([0x00, 1]);
  imports.name('env'); imports.name('rulePartials'); imports.bytes([0x00, 2]);
  imports.name('env'); imports.name('rulePartialZ'); imports.bytes([0x00, 3]);
  imports.name('env'); imports.name('rulePartialsTangent'); imports.bytes([0x00, 5]);
  imports.name('env'); imports.name('rulePartialZTangent'); imports.bytes([0x00, 3]);
  out.section(2, imports);
  const replay = which === 'replay';
  const type = replay ? 0 : 4;
  const params = replay ? 2 : 4;
  // Each sweep is one function per part (V8 compiles and tiers up per function); with several
  // parts, the exported sweep calls them in sweep order.
  const [first, second] = replay ? [emitForward, emitReverse] : [emitTangent, emitReverseTangent];
  const functionBodies: Bytes[] = [];
  const split = parts.length > 1;
  const IMPORTED = 5;
  if (split) {
    const caller = (order: number[], base: number): Bytes => {
      const fn = new Bytes();
      fn.u32(0);
      for (const k of order) {
        for (let p = 0; p < params; p++) fn.get(p);
        fn.byte(W_Call); fn.u32(base + k);
      }
      fn.byte(W_End);
      return fn;
    };
    const forwardOrder = parts.map((_, k) => k);
    functionBodies.push(caller(forwardOrder, IMPORTED + 2), caller([...forwardOrder].reverse(), IMPORTED + 2 + parts.length));
    for (const part of parts) functionBodies.push(first(part));
    for (const part of parts) functionBodies.push(second(part));
  } else {
    functionBodies.push(first(parts[0] ?? []), second(parts[0] ?? []));
  }
  const functions = new Bytes();
  functions.u32(functionBodies.length);
  for (let k = 0; k < functionBodies.length; k++) functions.u32(type);
  out.section(3, functions);
  const exports = new Bytes();
  exports.u32(2);
  exports.name(replay ? 'forward' : 'tangent'); exports.bytes([0x00, IMPORTED]);
  exports.name(replay ? 'reverse' : 'reverseTangent'); exports.bytes([0x00, IMPORTED + 1]);
  out.section(7, exports);
  const code = new Bytes();
  code.u32(functionBodies.length);
  for (const fn of functionBodies) {
    code.u32(fn.len);
    code.bytes(fn.buf.subarray(0, fn.len));
  }
  out.section(10, code);
  return out.buf.slice(0, out.len);
}
