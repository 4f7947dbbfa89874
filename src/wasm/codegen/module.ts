// Module assembly: wraps a plan's sweeps (replay, or the tangent ones), each one function per part of
// the plan, or a fused run kernel (emit-runs.ts), in a wasm module that imports the core's memory
// and rule functions and exports them.
import { emitForward, emitReverse } from './emit-replay.ts';
import { emitForwardTangent, emitReverseTangent, emitTangent } from './emit-tangents.ts';
import type { Body, SweepPlan } from './plan.ts';
import { Bytes, F64, I32, W_Call, W_End } from './wasm.ts';

/** Functions a generated module imports before its own (the core's rules; see rules.ts's FN_*). */
export const IMPORTED = 5;

/** The module of a plan's sweeps: 'replay' exports `forward` and `reverse(valBase, adjBase)`;
 *  'tangents' exports `tangent`, `reverseTangent` and `forwardTangent(valBase, adjBase, tanBase,
 *  tanAdjBase)` (hvp's values, tangents and cleared adjoints in one sweep), made on the first jvp
 *  or hvp only (they are several times the size). */
export function emitSweeps({ parts }: SweepPlan, which: 'replay' | 'tangents'): Uint8Array<ArrayBuffer> {
  const replay = which === 'replay';
  const params = replay ? 2 : 4;
  // [name, emitter, runs backwards]
  const sweeps: [string, (bodies: Body[]) => Bytes, boolean][] = replay
    ? [['forward', emitForward, false], ['reverse', emitReverse, true]]
    : [['tangent', emitTangent, false], ['reverseTangent', emitReverseTangent, true], ['forwardTangent', emitForwardTangent, false]];
  // Each sweep is one function per part (V8 compiles and tiers up per function); with several
  // parts, the exported sweep calls them in sweep order.
  const functionBodies: Bytes[] = [];
  if (parts.length > 1) {
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
    sweeps.forEach(([, , backwards], k) => {
      functionBodies.push(caller(backwards ? [...forwardOrder].reverse() : forwardOrder, IMPORTED + sweeps.length + k * parts.length));
    });
    for (const [, emit] of sweeps) for (const part of parts) functionBodies.push(emit(part));
  } else {
    for (const [, emit] of sweeps) functionBodies.push(emit(parts[0] ?? []));
  }
  const sweepType = [0x60, params, ...new Array<number>(params).fill(I32), 0];
  return assembleModule([sweepType], functionBodies.map(() => 0), sweeps.map(([name], k) => [name, IMPORTED + k]), functionBodies);
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
