// Generated sweeps for compiled functions: turns a recorded tape into wasm that runs its forward,
// reverse and tangent sweeps without an interpreter loop. The interpreter pays a dispatch on the
// op code, operand loads and a branch per node (about 2.2 ns forward and 3 ns reverse per node on
// our bench machine); generated code has none of that, and constants become immediates.
//
// Code size is kept proportional to the *program*, not the tape: a tape recorded from loops
// repeats itself, so the planner cuts it into segments whose nodes repeat with a period P, with
// every operand an affine function of the iteration (operand = A + t·S: S = P for a value from the
// previous iteration or the same one, 0 for a fixed node such as a hoisted constant, 1 for
// walking along the inputs...). Each segment becomes one loop over its P-node body; the rest is
// straight-line code. A long body is planned again for loops inside it (nested loops, each with
// its own counter and pointers). Straight code is cut into short bodies and the sweeps into
// functions of bounded size, which V8 compiles quickly at their first call. A tape that does not
// fold into `MAX_SLOTS` nodes of code (long straight code costs more to generate than it saves) or
// holds a custom op (whose rules live in JS) keeps the interpreter.
//
// The generated code runs the same rules as the interpreter, in the same order, so results are
// bit-identical (test/codegen.test.ts): add, sub, mul, div, neg, recip, square, sqrt, abs, the
// comparisons and select are spelled out as the core spells them (and the first and second
// partials of a few more); every other op calls the core's own rules (`ruleForward`,
// `rulePartials`, `rulePartialsTangent`), the code the interpreter inlines.
//
// This folder is the code generator, a chunk of its own that backend.ts imports on demand; this
// file is its entry point and exports what the rest of the library uses: plan.ts plans a tape's
// loops, wasm.ts writes wasm bytes, rules.ts holds the per-op rules the emitters spell out,
// emit-replay.ts and emit-tangents.ts emit the sweeps' functions (emitNest walks a loop nest for
// both), and module.ts assembles them into a module.
export {
  MAX_SLOTS, jsPasses, linksRoom, linksTableSize, nextLinks, planSearch, planSegments, planSweeps, whyNoPlan,
  type Deferral, type LinksOf, type Order, type PlannerPasses, type Segment, type SweepPlan,
} from './plan.ts';
export { MAX_REPEAT_NODES, MAX_REPEAT_TRIES, repeatsOf } from './shapes.ts';
export { emitSweeps, stepTable, usesStepTable } from './module.ts';
export { emitRunKernel } from './emit-runs.ts';
