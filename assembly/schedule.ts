// The scheduled replay: how a compiled tape too long to fold into generated code replays without
// dispatching on every node's op.
//
// The interpreter jumps on each node's op, and on a tape without a period (data-dependent
// structure, long unrolled code) that jump mispredicts on most nodes, in both sweeps. Here:
//
// - Forward: any topological order gives the same values bit for bit (each node's value depends
//   on its operands' alone), so the nodes are reordered once into runs of one op (a list
//   scheduler over a window of recording order that slides forward: of the nodes whose operands
//   are done, take the current op's while there are any, else move to the next op in code order
//   that has some).
//   A run is one loop with its op known. The same pass stores each node's partials (d/da, d/db),
//   as the interpreter's reverse sweep would compute them from the same values.
// - Reverse: in recording order, as the interpreter, so every adjoint adds its terms in the same
//   order; but each node is `adj[a] += g * pa; adj[b] += g * pb` with the stored partials (a
//   select's targets are its branches), no op at all. A zero partial (and a unary node's second
//   one) adds nothing, as the interpreter skips it. Leaves and zero-gradient ops are not
//   visited. (Sending skipped terms to
//   a sink slot by an integer select instead of a branch measured slower: every unary node then
//   adds into that one slot, a chain through memory.)
//
// - Only what the outputs and guards depend on: a compiled function's replays read nothing else
//   (its outputs' values and gradients, its guards' comparisons), so the schedule leaves out
//   every node none of them depends on. The interpreter computes such a node's value, and skips it
//   in every reverse sweep (its adjoint stays 0), so the results are the same, bit for bit; the
//   node's value in the tape is the last one computed (the recording's). checkNaN reads every
//   value, so with it every node is scheduled. The bench's non-periodic tape: 57% of its computed
//   nodes lead nowhere, and its replay went from 4.5 to 2.2 ns/node.
//
// Only where the interpreter's jump would mispredict often (a quarter of the nodes or more, by a
// predictor of the next op from the last three): on a tape of loops the interpreter's jump is
// predicted, and the stored partials only add memory traffic.
//
// Region (layout.ts, "schedule"), for a tape of `count` nodes, n scheduled, m with a gradient:
//   (pa f64, pb f64) × count by node id, side by side (the forward 2.8 -> 2.65 ns/node against
//   separate arrays); the targets are the tape's own operands, but for a select's;
//   then the forward order i32×n, the reverse list i32×m (node ids, descending), and the runs
//   (op, end) i32×2 × ≤ n
import { Op, forwardRule, forwardRuleCall, partials, partialsCall, partialZ, zeroGradient, tanhAndSlope, tanhSlope } from './ops';
import {
  valBase, adjBase, aBase, bBase, tanBase, f64At, setF64At, addF64At, i32At, argA, argB, opAt, scratch, scheduleBase,
  setScheduleBytes, masked, scheduleCell,
} from './layout';
import { operandCount, prepareOperandCounts } from './planning';
import { selected } from './sweeps';

let active = false;
let nodes = 0;
let scheduled = 0;
let withGradient = 0;
let runs = 0;

// Per op: the head of its ready list (a stack linked through `next`) and its length.
const readyHead = memory.data(256 * 4);
const readyCount = memory.data(256 * 4);
// The scheduler reorders nodes within a window of this many nodes of recording order, which
// slides forward as its lowest node is scheduled (see scheduleSliding). Unbounded, its first runs
// took the nodes that read only inputs and constants from across the whole tape, and a tape larger
// than the caches then replayed at 2x the interpreter's time (the prefetcher follows addresses in
// order, not a scattered order). Fixed windows of 64, one after the other, kept the straight tape
// of 2.1 M nodes at 3.8 ns/node (interpreted: 5.3), at a tenth more than larger windows on 0.21 M
// nodes; each window's last nodes came out in short runs, and the sliding window has none of
// those (the live straight tape's gradient 4.7 -> 4.5 ns/node, 39,829 -> 35,246 runs;
// bench/codegen-cliffs.ts).
// Wider sliding windows were faster on that tape of 0.24 M nodes and slower on 2.4 M (96: 4.2 and
// 5.3, 128: 4.2 and 5.7, against 4.5 and 5.2).
// @ts-ignore: decorator
@inline const WINDOW_NODES: i32 = 64;

// The predictor's table (see survey): the op last seen after each history of three ops, hashed.
const predicted = memory.data(4096);


// A node's pair of partials, the one at `base` (paBase, pbBase).
// @ts-ignore: decorator
@inline function entry(base: usize, i: i32): usize { return base + (<usize>i << 4); }
// @ts-ignore: decorator
@inline function paBase(): usize { return scheduleBase; }
// @ts-ignore: decorator
@inline function pbBase(): usize { return scheduleBase + 8; }
// @ts-ignore: decorator
@inline function orderBase(): usize { return scheduleBase + (<usize>nodes << 4); }
// @ts-ignore: decorator
@inline function reverseListBase(): usize { return orderBase() + (<usize>scheduled << 2); }
// @ts-ignore: decorator
@inline function runsBase(): usize { return reverseListBase() + (<usize>withGradient << 2); }

/** Whether replays of the tape in memory run the schedule. */
export function scheduleActive(): bool { return active; }

/** Back to the interpreter: the tape is about to change. */
export function dropSchedule(): void {
  active = false;
  setScheduleBytes(0);
}

/** The schedule region as `bytes` for a generated module's table of steps (codegen's
 *  module.ts): its base, which the cell at `scheduleCellAddress()` follows wherever the region
 *  moves, or 0 when memory does not allow it. */
export function reserveStepTable(bytes: i32): usize {
  active = false;
  return setScheduleBytes(<usize>bytes);
}

/** Where generated code reads the schedule region's base (layout.ts, scheduleCell). */
export function scheduleCellAddress(): usize { return scheduleCell; }

// V8 runs a wasm call to its end in the code it started in (baseline code, the first time: wasm
// has no on-stack replacement) and optimises a function once it has run enough. So each pass
// of the build runs as many short calls of a function of its own, which V8 optimises during the
// first of them (as the planner's passes in planning.ts): in one call, the first build of a
// 4.2 M-node tape took 762 ms against 192 warm; in short calls the generation of that tape's
// first compile (the planner's attempt and the build) took 353-426 ms against 432-690
// (bench/codegen-cliffs.ts --case=straight --ops=2000000, two runs each). Fresh memory for the
// region and the scratch is most of the rest (a warm core's first build on a new tape: 93
// ns/node, against 46 on memory already touched). The optimiser inlines the small passes
// (survey, offsets, reverseList: one caller each) into the build all the same.
// @ts-ignore: decorator
@inline const STEP: i32 = 16384;

// The build's state between its calls (with `scheduled` and `withGradient`, counted by survey).
let unserved = false, misses: i64 = 0, history: u32 = 0;
let left: usize = 0, starts: usize = 0, consumers: usize = 0, next: usize = 0;
let current = -1, done = 0, runCount = 0, reverseListed = 0;

// Whether the build leaves out the nodes no output or guard depends on (see buildSchedule).
let pruning = false;

// Whether the schedule computes node i (of op `op`): not a leaf, and, when pruning, marked as one
// an output or guard depends on (markLive's marks, in the adjoint region).
// @ts-ignore: decorator
@inline function computed(i: i32, op: i32): bool {
  return op > Op.Arg && (!pruning || f64At(adjBase, i) != 0);
}

/** Builds the schedule of nodes [nInputs, count) (inputs and constants are given) and fills its
 *  partials at the values now in the tape. Returns 0; -1 for a tape it does not serve (custom or
 *  vector nodes, nothing to compute); -2 when memory has no room; -3 for a tape whose ops a
 *  predictor guesses wrong fewer than `minMispredicted` times per 1024 nodes.
 *
 *  `pruneDead`: the caller has set the adjoints of the nodes replays must compute (the outputs,
 *  the guards) to nonzero and every other adjoint of [0, count) to zero; the schedule then leaves
 *  out every node none of those depends on, whose value no replay reads and whose adjoint stays
 *  zero (the interpreter skips it in every reverse sweep). The adjoints are zero again on return. */
export function buildSchedule(nInputs: i32, count: i32, minMispredicted: i32, pruneDead: i32): i32 {
  const built = build(nInputs, count, minMispredicted, pruneDead != 0);
  if (pruneDead) memory.fill(adjBase, 0, <usize>count << 3);
  pruning = false;
  return built;
}

function build(nInputs: i32, count: i32, minMispredicted: i32, pruneDead: bool): i32 {
  dropSchedule();
  prepareOperandCounts();
  scheduled = 0;
  withGradient = 0;
  unserved = false;
  misses = 0;
  history = 0;
  memory.fill(predicted, 0, 4096);
  for (let from = nInputs; from < count && !unserved; from += STEP) survey(from, min(count, from + STEP));
  if (unserved || scheduled == 0) return -1;
  // The predictor models the interpreter, which computes every node: it decides on the whole tape.
  if (<i32>(misses * 1024 / <i64>(count - nInputs)) < minMispredicted) return -3;
  pruning = pruneDead;
  scheduled = 0;
  for (let hi = count; hi > nInputs; hi -= STEP) markLive(max(nInputs, hi - STEP), hi);
  const n = scheduled, m = withGradient;
  if (n == 0) return -1;
  const bytes = (<u64>count << 4) + (<u64>n << 2) + (<u64>m << 2) + (<u64>n << 3);
  // The scheduler's own arrays, in scratch after the region: operands left per node, consumers
  // (offsets and list) and the ready lists' links.
  const tempBytes = (<u64>count << 2) + ((<u64>count + 1) << 2) + (<u64>n * 12) + (<u64>count << 2);
  if (bytes + tempBytes > <u64>0x7fffffff || setScheduleBytes(<usize>bytes) == 0) return -2;
  left = scratch(<i32>tempBytes);
  if (left == 0) {
    setScheduleBytes(0);
    return -2;
  }
  nodes = count;
  starts = left + (<usize>count << 2);
  consumers = starts + ((<usize>count + 1) << 2);
  next = consumers + <usize>n * 12;
  memory.fill(left, 0, (<usize>count << 2) + ((<usize>count + 1) << 2));

  // Consumers of each scheduled node among the scheduled ones (counted, offsets, then filled,
  // with `next` as the fill cursors).
  for (let from = nInputs; from < count; from += STEP) linkOperands(from, min(count, from + STEP), left, starts, 0, 0);
  let sum = 0;
  for (let from = 0; from <= count; from += STEP) sum = offsets(from, min(count + 1, from + STEP), count, sum);
  for (let from = nInputs; from < count; from += STEP) linkOperands(from, min(count, from + STEP), 0, 0, consumers, next);

  // The list scheduler, over the sliding window. Ready lists are stacks.
  for (let op = 0; op < 256; op++) {
    store<i32>(readyHead + (<usize>op << 2), -1);
    store<i32>(readyCount + (<usize>op << 2), 0);
  }
  current = -1;
  done = 0;
  runCount = 0;
  low = nInputs;
  admitted = nInputs;
  waiting = 0;
  for (let from = nInputs; from < count; from += STEP) scheduleSliding(count, STEP);
  if (done != n) {
    dropSchedule();
    return -1;
  }
  runs = endRun(runsBase(), runCount, current, done);

  reverseListed = 0;
  for (let hi = count; hi > nInputs; hi -= STEP) reverseList(max(nInputs, hi - STEP), hi);
  active = true;
  scheduledForward();
  return 0;
}

// Counts the computed nodes of [from, to), notes a custom or vector node, and runs the predictor
// of each op from the three before it (how often the interpreter's jump would mispredict: where it
// rarely does, on a tape of loops even one too long to fold, the jump costs little and the
// schedule's stored partials only add traffic, the nested tape 4.8 -> 5.8 ns/node and GMM 4.3 ->
// 5.0 when forced).
function survey(from: i32, to: i32): void {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    const slot = predicted + <usize>((history * 0x9E3779B1) >>> 20);
    if (<i32>load<u8>(slot) != op) {
      misses++;
      store<u8>(slot, <u8>op);
    }
    history = ((history << 6) ^ <u32>op) & 0x3ffff;
    if (op <= Op.Arg) continue;
    if (op == Op.Custom || op >= Op.VMeta) {
      unserved = true;
      return;
    }
    scheduled++;
  }
}

// Nodes [lo, hi) from the top down (after the part above): counts the computed ones and those
// with a gradient; when pruning, marks the operands of each marked node (a select's third on the
// arg node before it), so that every node an output or guard depends on ends up marked.
function markLive(lo: i32, hi: i32): void {
  for (let i = hi - 1; i >= lo; i--) {
    const op = opAt(i);
    // A sin and a cos of one operand side by side read each other's value for their partials in
    // the interpreter's reverse sweeps, which an hvp runs after the scheduled forward: both are
    // computed where either is (a probe's hvp read a left-out cos of an earlier call). The one
    // below is marked by now: its consumers all lie above it, and this node is none of them.
    if (pruning && (op == Op.Sin || op == Op.Cos) && i > 0 && opAt(i - 1) == (op == Op.Sin ? Op.Cos : Op.Sin) && argA(i - 1) == argA(i)
      && (f64At(adjBase, i) != 0 || f64At(adjBase, i - 1) != 0)) {
      setF64At(adjBase, i, 1);
      setF64At(adjBase, i - 1, 1);
    }
    if (!computed(i, op)) continue;
    scheduled++;
    if (!zeroGradient(op)) withGradient++;
    if (!pruning) continue;
    const k = operandCount(op);
    setF64At(adjBase, argA(i), 1);
    if (k > 1) setF64At(adjBase, argB(i), 1);
    if (k > 2) setF64At(adjBase, argA(i - 1), 1);
  }
}

// Consumer counts at `starts` [from, to) turned into offsets (the running sum carried in), which
// also start the fill cursors at `next`.
function offsets(from: i32, to: i32, count: i32, sum: i32): i32 {
  for (let i = from; i < to; i++) {
    const c = load<i32>(starts + (<usize>i << 2));
    store<i32>(starts + (<usize>i << 2), sum);
    if (i < count) store<i32>(next + (<usize>i << 2), sum);
    sum += c;
  }
  return sum;
}

// The sliding window: the lowest computed node not yet scheduled (`low`), the nodes admitted to
// the ready lists (those below `admitted`, at most WINDOW_NODES past low), and how many of the
// admitted computed nodes wait.
let low = 0, admitted = 0, waiting = 0;

// Schedules up to `budget` more nodes of the tape's `count`. A node is ready once its operands
// are scheduled and it lies within WINDOW_NODES of `low`; low itself is always ready (its
// operands are below it), so the scheduler never stalls. The window slides as low advances
// (scheduled nodes are marked by a `left` of -1).
function scheduleSliding(count: i32, budget: i32): void {
  const order = orderBase(), runList = runsBase();
  admit(count);
  for (; budget > 0 && waiting > 0; budget--) {
    if (current < 0 || load<i32>(readyHead + (<usize>current << 2)) < 0) {
      // The next op in code order with ready nodes: the runs' ops then come round in a
      // cycle, which the jump at each run's start predicts better than the op with the most
      // ready nodes (measured: as many runs either way).
      let op = current < 0 ? <i32>Op.Add : current + 1, found = -1;
      for (let t = 0; t < Op.Custom - Op.Add; t++, op++) {
        if (op >= Op.Custom) op = Op.Add;
        if (load<i32>(readyCount + (<usize>op << 2)) > 0) { found = op; break; }
      }
      if (found < 0) return;
      if (current >= 0) runCount = endRun(runList, runCount, current, done);
      current = found;
    }
    const at = readyHead + (<usize>current << 2);
    const i = load<i32>(at);
    store<i32>(at, load<i32>(next + (<usize>i << 2)));
    store<i32>(readyCount + (<usize>current << 2), load<i32>(readyCount + (<usize>current << 2)) - 1);
    store<i32>(order + (<usize>done << 2), i);
    store<i32>(left + (<usize>i << 2), -1);
    done++;
    waiting--;
    const end = load<i32>(starts + (<usize>i << 2) + 4);
    for (let e = load<i32>(starts + (<usize>i << 2)); e < end; e++) {
      const c = load<i32>(consumers + (<usize>e << 2));
      const p = left + (<usize>c << 2);
      const remaining = load<i32>(p) - 1;
      store<i32>(p, remaining);
      // A consumer past the window waits for it to arrive (admit).
      if (remaining == 0 && c < admitted) pushReady(c, next);
    }
    if (i == low) admit(count);
  }
}

// Moves `low` past the scheduled and uncomputed nodes, and admits the nodes now within the window.
function admit(count: i32): void {
  while (low < count && (load<i32>(left + (<usize>low << 2)) < 0 || !computed(low, opAt(low)))) low++;
  const limit = min(count, low + WINDOW_NODES);
  for (; admitted < limit; admitted++) {
    const i = admitted;
    if (!computed(i, opAt(i))) continue;
    waiting++;
    if (load<i32>(left + (<usize>i << 2)) == 0) pushReady(i, next);
  }
}

// The reverse list's part for nodes [lo, hi), from the top down after the part above it (a
// select as ~i: its targets are its branches, not its operands a and b); constant partials
// once, the rest by the forward.
function reverseList(lo: i32, hi: i32): void {
  const list = reverseListBase(), pa = paBase(), pb = pbBase();
  for (let i = hi - 1; i >= lo; i--) {
    const op = opAt(i);
    if (!computed(i, op)) continue;
    if (zeroGradient(op)) {
      // No reverse step; the tangent sweep sets its tangent to 0 (as the interpreter's).
      store<f64>(entry(pa, i), 0);
      store<f64>(entry(pb, i), 0);
      continue;
    }
    store<i32>(list + (<usize>reverseListed << 2), op == Op.Select ? ~i : i);
    reverseListed++;
    if (op == Op.Add || op == Op.Sub) {
      store<f64>(entry(pa, i), 1);
      store<f64>(entry(pb, i), op == Op.Add ? 1 : -1);
    } else if (operandCount(op) == 1) {
      store<f64>(entry(pb, i), 0);
      if (op == Op.Neg) store<f64>(entry(pa, i), -1);
    }
  }
}

// Each operand of nodes [from, to) that is itself computed: counted (operands left per consumer,
// consumers per operand at `starts`) when `consumers` is 0, else listed at its cursor.
function linkOperands(from: i32, to: i32, left: usize, starts: usize, consumers: usize, cursors: usize): void {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (!computed(i, op)) continue;
    const k = operandCount(op);
    for (let j = 0; j < k; j++) {
      const operand = j == 0 ? argA(i) : j == 1 ? argB(i) : argA(i - 1);
      if (opAt(operand) <= Op.Arg) continue;
      if (consumers == 0) {
        const p = left + (<usize>i << 2);
        store<i32>(p, load<i32>(p) + 1);
        const c = starts + (<usize>operand << 2);
        store<i32>(c, load<i32>(c) + 1);
      } else {
        const p = cursors + (<usize>operand << 2);
        const e = load<i32>(p);
        store<i32>(consumers + (<usize>e << 2), i);
        store<i32>(p, e + 1);
      }
    }
  }
}

function pushReady(i: i32, next: usize): void {
  const op = opAt(i);
  const head = readyHead + (<usize>op << 2);
  store<i32>(next + (<usize>i << 2), load<i32>(head));
  store<i32>(head, i);
  const c = readyCount + (<usize>op << 2);
  store<i32>(c, load<i32>(c) + 1);
}

function endRun(runList: usize, runCount: i32, op: i32, end: i32): i32 {
  store<i32>(runList + (<usize>runCount << 3), op);
  store<i32>(runList + (<usize>runCount << 3) + 4, end);
  return runCount + 1;
}

// Run r's op and the end of its nodes in the order, as endRun wrote them.
// @ts-ignore: decorator
@inline function runOp(runList: usize, r: i32): i32 { return load<i32>(runList + (<usize>r << 3)); }
// @ts-ignore: decorator
@inline function runEnd(runList: usize, r: i32): i32 { return load<i32>(runList + (<usize>r << 3) + 4); }

/** The forward replay by the schedule: every computed node's value, and its partials. */
export function scheduledForward(): void {
  const vB = valBase, aB = aBase, bB = bBase;
  const pa = paBase(), pb = pbBase(), order = orderBase(), runList = runsBase();
  let k = 0;
  for (let r = 0; r < runs; r++) {
    const op = runOp(runList, r), end = runEnd(runList, r);
    switch (op) {
      case Op.Add: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          setF64At(vB, i, f64At(vB, i32At(aB, i)) + f64At(vB, i32At(bB, i)));
        }
        break;
      }
      case Op.Sub: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          setF64At(vB, i, f64At(vB, i32At(aB, i)) - f64At(vB, i32At(bB, i)));
        }
        break;
      }
      case Op.Mul: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          const x = f64At(vB, i32At(aB, i)), z = f64At(vB, i32At(bB, i));
          setF64At(vB, i, x * z);
          store<f64>(entry(pa, i), z);
          store<f64>(entry(pb, i), x);
        }
        break;
      }
      case Op.Neg: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          setF64At(vB, i, -f64At(vB, i32At(aB, i)));
        }
        break;
      }
      case Op.Square: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          const x = f64At(vB, i32At(aB, i));
          setF64At(vB, i, x * x);
          store<f64>(entry(pa, i), 2 * x);
        }
        break;
      }
      case Op.Select: {
        for (; k < end; k++) {
          const i = i32At(order, k);
          setF64At(vB, i, f64At(vB, selected(i)));
        }
        break;
      }
      case Op.Abs: { k = unaryRun(Op.Abs, k, end, pa, order); break; }
      case Op.Sqrt: { k = unaryRun(Op.Sqrt, k, end, pa, order); break; }
      case Op.Tanh: {
        // Value and partial from one exp where both need it (the rules' bits).
        for (; k < end; k++) {
          const i = i32At(order, k);
          setF64At(vB, i, tanhAndSlope(f64At(vB, i32At(aB, i))));
          store<f64>(entry(pa, i), tanhSlope);
        }
        break;
      }
      default: k = forwardRun(op, k, end, pa, pb, order);
    }
  }
}

// A run of a unary op known here: its rules inlined (no call and no switch per node).
// @ts-ignore: decorator
@inline function unaryRun(op: i32, k: i32, end: i32, pa: usize, order: usize): i32 {
  const vB = valBase, aB = aBase;
  for (; k < end; k++) {
    const i = i32At(order, k);
    const x = f64At(vB, i32At(aB, i));
    const y = forwardRule(op, x, x);
    setF64At(vB, i, y);
    store<f64>(entry(pa, i), partials(op, x, x, y));
  }
  return k;
}

// Any other op: the rules' own switches, which see one op for the whole run.
function forwardRun(op: i32, k: i32, end: i32, pa: usize, pb: usize, order: usize): i32 {
  const vB = valBase, aB = aBase, bB = bBase;
  const gradient = !zeroGradient(op), binary = operandCount(op) == 2;
  for (; k < end; k++) {
    const i = i32At(order, k);
    const x = f64At(vB, i32At(aB, i)), z = f64At(vB, i32At(bB, i));
    const y = forwardRuleCall(op, x, z);
    setF64At(vB, i, y);
    if (!gradient) continue;
    store<f64>(entry(pa, i), partialsCall(op, x, z, y));
    if (binary) store<f64>(entry(pb, i), partialZ);
  }
  return k;
}

/** The tangent sweep by the schedule (jvp, and hvp's first half), after a scheduled forward at
 *  the same inputs: the inputs' tangents seeded, each computed node's from the stored partials,
 *  as the interpreter's `tangent` computes it (terms of zero tangents left out). */
export function scheduledTangent(): void {
  const tB = tanBase, aB = aBase, bB = bBase;
  const pa = paBase(), pb = pbBase(), order = orderBase(), runList = runsBase();
  let k = 0;
  for (let r = 0; r < runs; r++) {
    const op = runOp(runList, r), end = runEnd(runList, r);
    if (op == Op.Select) {
      // The branch taken's tangent.
      for (; k < end; k++) {
        const i = i32At(order, k);
        setF64At(tB, i, f64At(tB, selected(i)));
      }
      continue;
    }
    // No tangent through the zero-gradient ops, even a NaN one (see `tangent` in sweeps.ts).
    if (zeroGradient(op)) {
      for (; k < end; k++) setF64At(tB, i32At(order, k), 0);
      continue;
    }
    for (; k < end; k++) {
      const i = i32At(order, k);
      const ta = f64At(tB, i32At(aB, i)), tb = f64At(tB, i32At(bB, i));
      const p = load<f64>(entry(pa, i)), q = load<f64>(entry(pb, i));
      // (ta != 0 && pa != 0 ? ta·pa : +0) + (tb != 0 && pb != 0 ? tb·pb : +0), as `tangent` in
      // sweeps.ts, with integer masks: a branch on a zero tangent (every constant operand's)
      // mispredicts as often as the op jump did.
      setF64At(tB, i, masked(ta * p, (ta != 0) & (p != 0)) + masked(tb * q, (tb != 0) & (q != 0)));
    }
  }
}

/** The reverse sweep by the schedule, over adjoints already seeded at or below `top`. */
export function scheduledReverse(top: i32): void {
  const gB = adjBase;
  const aB = aBase, bB = bBase;
  const pa = paBase(), pb = pbBase(), list = reverseListBase();
  // The list is descending: start at its first node at or below top.
  let lo = 0, hi = withGradient;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const v = i32At(list, mid);
    if ((v < 0 ? ~v : v) > top) lo = mid + 1;
    else hi = mid;
  }
  for (let k = lo; k < withGradient; k++) {
    const v = i32At(list, k);
    if (v < 0) {
      // select: all of g to the branch taken, as the interpreter.
      const i = ~v, g = f64At(gB, i);
      if (g != 0) addF64At(gB, selected(i), g);
      continue;
    }
    const g = f64At(gB, v);
    if (g == 0) continue;
    const p = load<f64>(entry(pa, v));
    if (p != 0) addF64At(gB, i32At(aB, v), g * p);
    // A unary node's pb is 0: its b (its a again) gets nothing, by adding -0, which changes no
    // adjoint, bit for bit. Which nodes are unary follows the data, so a branch on q mispredicts
    // (the bench's non-periodic tape with every node live: 6.1 -> 5.5 ns/node, medians of 8
    // fresh processes each), and an f64 select measured the same as the branch (V8 branches for
    // it). A unary node adds into its own operand's slot, so no chain through memory runs from
    // node to node as through a sink slot.
    const q = load<f64>(entry(pb, v));
    const keep = -<i64>(q != 0);
    addF64At(gB, i32At(bB, v), reinterpret<f64>((reinterpret<i64>(g * q) & keep) | (<i64>0x8000000000000000 & ~keep)));
  }
}
