// Record once, replay many: new input values, the forward sweep, guard checks and the reverse
// sweep in one call into the core, for one row or a batch of rows.
import { valBase, adjBase, tanBase, tanAdjBase, val, xvalBase, xadjBase } from './layout';
import { forward, clearAdjoints, sweepReverse, tangent, sweepReverseTangent } from './sweeps';
import { setGradientOutput } from './vector';
import { scheduleActive, scheduledForward, scheduledReverse, scheduledTangent } from './schedule';
import { forwardRuleCall, partialsCall, partialZ, partialsTangentCall, partialZTangent } from './ops';

// A compiled function may bring its own sweeps: wasm generated from its tape (src/wasm/codegen/)
// that runs the same rules without dispatching per node. They sit in the imported function table
// at these slots, 0 meaning none; they take (valBase, adjBase) so they survive a relayout, and
// the reverse sweep a third argument (see gradientBatch). The tangent sweeps (jvp, hvp) take
// (valBase, adjBase, tanBase, tanAdjBase), and the reverse tangent sweep a fifth argument (see
// reverseTangentFused).
let generatedForward: u32 = 0;
let generatedReverse: u32 = 0;
let generatedTangent: u32 = 0;
let generatedReverseTangent: u32 = 0;
let generatedForwardTangent: u32 = 0;

/** Installs (or, with zeros, removes) the generated sweeps of the tape now in memory. */
export function setGeneratedSweeps(forwardSlot: u32, reverseSlot: u32, tangentSlot: u32, reverseTangentSlot: u32, forwardTangentSlot: u32): void {
  generatedForward = forwardSlot;
  generatedReverse = reverseSlot;
  generatedTangent = tangentSlot;
  generatedReverseTangent = reverseTangentSlot;
  generatedForwardTangent = forwardTangentSlot;
}

// The rules, out of line, for generated code: the ops it does not spell out itself call these,
// the very code the interpreter inlines.
// @ts-ignore: decorator
@noinline export function ruleForward(op: i32, x: f64, z: f64): f64 { return forwardRuleCall(op, x, z); }
export function rulePartials(op: i32, x: f64, z: f64, y: f64): f64 { return partialsCall(op, x, z, y); }
export function rulePartialZ(): f64 { return partialZ; }
export function rulePartialsTangent(op: i32, x: f64, z: f64, y: f64, tx: f64, tz: f64, ty: f64): f64 {
  return partialsTangentCall(op, x, z, y, tx, tz, ty);
}
export function rulePartialZTangent(): f64 { return partialZTangent; }

/** `tangent(from, to)`, by the generated code or the schedule if any. */
export function tangentReplay(from: i32, to: i32): void {
  if (generatedTangent) call_indirect<void>(generatedTangent, valBase, adjBase, tanBase, tanAdjBase);
  else if (scheduleActive()) scheduledTangent();
  else tangent(from, to);
}

/** `reverseTangent(out, seed, count)`, by the generated code if any. */
export function reverseTangentReplay(out: i32, seed: f64, count: i32): void {
  clearAdjoints(count, 1);
  store<f64>(adjBase + (<usize>out << 3), seed);
  if (generatedReverseTangent) call_indirect<void>(generatedReverseTangent, valBase, adjBase, tanBase, tanAdjBase, 0);
  else sweepReverseTangent(out);
}

/** hvp's reverse half after `replayForwardTangent`, by the generated reverse tangent sweep, which
 *  sets every adjoint and adjoint tangent it reads from memory back to +0 once read. `zeroed`:
 *  no other sweep touched the adjoints since the last call, so only the inputs' need clearing
 *  (they are the result, never reset); else all of [0, count) are cleared first. */
export function reverseTangentFused(out: i32, seed: f64, count: i32, nInputs: i32, zeroed: i32): void {
  if (zeroed) {
    memory.fill(adjBase, 0, <usize>nInputs << 3);
    memory.fill(tanAdjBase, 0, <usize>nInputs << 3);
  } else {
    clearAdjoints(count, 1);
  }
  store<f64>(adjBase + (<usize>out << 3), seed);
  call_indirect<void>(generatedReverseTangent, valBase, adjBase, tanBase, tanAdjBase, 1);
}

/** jvp's and hvp's forward half in one generated sweep, for a tape whose generated tangent sweeps
 *  are installed: inputs from `x` and their tangents from `t`, then the values and tangents of
 *  every other node. Returns as `replayForward`. */
export function replayForwardTangent(x: usize, t: usize, nInputs: i32, guards: usize, nGuards: i32): i32 {
  const bytes = <usize>nInputs << 3;
  memory.copy(valBase, x, bytes);
  memory.copy(tanBase, t, bytes);
  call_indirect<void>(generatedForwardTangent, valBase, adjBase, tanBase, tanAdjBase);
  return checkGuards(guards, nGuards);
}

/** Reverse sweep over adjoints already seeded at or below `top`, by the generated code or the
 *  schedule if any. */
export function sweepReverseReplay(top: i32): void {
  if (generatedReverse) call_indirect<void>(generatedReverse, valBase, adjBase, 0);
  else if (scheduleActive()) scheduledReverse(top);
  else sweepReverse(top);
}

// A guard list at `guards` holds nGuards expected values (f64) followed by the node ids (i32)
// of the comparisons the recording depended on.
function checkGuards(guards: usize, nGuards: i32): i32 {
  const nodes = guards + (<usize>nGuards << 3);
  for (let k = 0; k < nGuards; k++) {
    const node = load<i32>(nodes + (<usize>k << 2));
    if (val(node) != load<f64>(guards + (<usize>k << 3))) return node;
  }
  return -1;
}

// A compiled function takes its inputs as scalar nodes [0, nInputs), or (set here) as one input
// vector: node 1, whose elements are [0, nInputs), after its vmeta node 0.
let vectorInput: bool = false;

/** Whether replays write their inputs into the elements of one input vector (node 1). */
export function setVectorInput(on: i32): void {
  vectorInput = on != 0;
}

/** Inputs are nodes [0, nInputs) (or the input vector's elements): copies them from `x`,
 *  recomputes the rest and returns -1, or the node id of the first guard whose comparison came
 *  out the other way. */
export function replayForward(x: usize, nInputs: i32, count: i32, guards: usize, nGuards: i32): i32 {
  if (vectorInput) {
    if (x != xvalBase) memory.copy(xvalBase, x, <usize>nInputs << 3);
    forward(2, count);
  } else {
    memory.copy(valBase, x, <usize>nInputs << 3);
    if (generatedForward) call_indirect<void>(generatedForward, valBase, adjBase);
    else if (scheduleActive()) scheduledForward();
    else forward(nInputs, count);
  }
  return checkGuards(guards, nGuards);
}

// vjpBatch's seeds for gradientBatch (0 outputs: a gradient's seed of 1 at `out`): per row
// `seedOutputs` cotangent entries from `seedRows`, added to the adjoints of the output nodes
// listed (i32) at `seedNodes`, whose values a row writes to `values`.
let seedRows: usize = 0, seedNodes: usize = 0, seedOutputs: i32 = 0;

/** Sets (or, with 0 outputs, clears) the seeds of the next gradientBatch calls. */
export function setBatchSeeds(rows: usize, nodes: usize, outputs: i32): void {
  seedRows = rows;
  seedNodes = nodes;
  seedOutputs = outputs;
}

/** Gradient of node `out` for `rows` input rows (row-major at `x`), written row by row at `g`,
 *  and its value per row at `values` (unless 0). Returns `rows`, or the index of the first row
 *  whose guards failed (rows before it are done).
 *
 *  With generated sweeps (and scalar inputs), the reverse sweep sets every adjoint it reads from
 *  memory back to +0, so a row needs no pass clearing the adjoints of [0, count): only the
 *  inputs' (the previous row's gradient) are cleared. `zeroed`: no other call wrote adjoints
 *  since such a batch, so even its first row skips the pass (the façade tracks this). */
export function gradientBatch(
  x: usize, rows: i32, nInputs: i32, count: i32, out: i32, g: usize, guards: usize, nGuards: i32, values: usize, zeroed: i32,
): i32 {
  const rowBytes = <usize>nInputs << 3;
  const resets = generatedReverse != 0 && !vectorInput;
  let clean = resets && zeroed != 0;
  for (let r = 0; r < rows; r++) {
    // The forward sweep may leave the output's value to the reverse sweep (vector.ts, SIG_VALUE),
    // which reads it for a gradient's one output; seeds run as vjp's replay does.
    if (seedOutputs == 0) setGradientOutput(out);
    const guard = replayForward(x + <usize>r * rowBytes, nInputs, count, guards, nGuards);
    setGradientOutput(-1);
    if (guard >= 0) return r;
    if (clean) memory.fill(adjBase, 0, rowBytes);
    else clearAdjoints(count, 0);
    if (seedOutputs == 0) store<f64>(adjBase + (<usize>out << 3), 1);
    for (let j = 0; j < seedOutputs; j++) {
      const at = adjBase + (<usize>load<i32>(seedNodes + (<usize>j << 2)) << 3);
      store<f64>(at, load<f64>(at) + load<f64>(seedRows + (<usize>(r * seedOutputs + j) << 3)));
    }
    if (resets) call_indirect<void>(generatedReverse, valBase, adjBase, 1);
    else sweepReverseReplay(out);
    clean = resets;
    if (values && seedOutputs == 0) store<f64>(values + (<usize>r << 3), val(out));
    for (let j = 0; j < seedOutputs; j++) {
      if (values) store<f64>(values + (<usize>(r * seedOutputs + j) << 3), val(load<i32>(seedNodes + (<usize>j << 2))));
    }
    // An input vector no rule reached has no adjoints written: its gradient is 0. (A row whose
    // gradient goes to the input vector's own adjoints, from the façade, stays where it is.)
    if (vectorInput && load<f64>(adjBase + 8) == 0) memory.fill(g + <usize>r * rowBytes, 0, rowBytes);
    else if (g + <usize>r * rowBytes != xadjBase) memory.copy(g + <usize>r * rowBytes, vectorInput ? xadjBase : adjBase, rowBytes);
  }
  return rows;
}
