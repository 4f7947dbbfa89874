// The loop planner: cuts a tape's nodes into segments that repeat with a period (loops) and
// straight code, finds the strides of their operands, and describes each segment as a loop body
// (its slots, stride groups and which values and adjoints stay in locals), the plan the emitters
// turn into wasm. Also says why a tape gets no plan.
import { Op, OP_TABLE } from '../../ops.ts';
import type { TapeViews } from '../../backend.ts';

/** Most body nodes of generated code per tape (about 60 bytes of wasm each). */
export const MAX_SLOTS = 1 << 14;
const MAX_PERIOD = MAX_SLOTS;

/** A run of `count` repetitions of the `period` nodes from `start`; count 1 is straight code. */
export interface Segment {
  start: number;
  period: number;
  count: number;
}

// Operands a node's rules read: 0 a, 1 b, 2 the operand carried by the arg node before a select.
// Const and input read none; arg none either (the select after it reads its operand).
export const OPERANDS = Uint8Array.from({ length: 256 }, (_, op) =>
  op === Op.select ? 3 : op <= Op.arg || op >= OP_TABLE.length ? 0 : Math.max(0, OP_TABLE[op]![1]));

function operand(views: TapeViews, i: number, k: number): number {
  return k === 0 ? views.a[i]! : k === 1 ? views.b[i]! : views.a[i - 1]!;
}

function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

// Candidate periods come from next-occurrence links over a window of the tape: strict[i - lo] is
// the next node after i with the same op and operand offsets, window[i - lo] the next one where
// the same four ops start (-1: none in the window). Hash collisions only give wrong candidates,
// and every candidate is verified. Built per chunk, so planning a tape that folds into a few
// long loops touches little more than the chunks where loops start.
const CHUNK = 1 << 16;
const LOOKAHEAD = 3 * MAX_PERIOD;

function nextLinks(views: TapeViews, lo: number, hi: number): { strict: Int32Array; window: Int32Array } {
  const { op, a, b } = views;
  const size = 1 << Math.max(4, Math.ceil(Math.log2(2 * (hi - lo))));
  const mask = size - 1;
  const lastStrict = new Int32Array(size).fill(-1);
  const lastWindow = new Int32Array(size).fill(-1);
  const strict = new Int32Array(hi - lo);
  const window = new Int32Array(hi - lo);
  let w1 = 0, w2 = 0, w3 = 0; // the ops after i, for the window key
  for (let i = hi - 1; i >= lo; i--) {
    const code = op[i]!;
    const n = OPERANDS[code]!;
    let h = mix(code + 1);
    if (n > 0) h = mix(h ^ Math.imul(i - a[i]!, 0x9e3779b1));
    if (n > 1) h = mix(h ^ Math.imul(i - b[i]!, 0x7feb352d));
    if (n > 2) h = mix(h ^ Math.imul(i - a[i - 1]!, 0x846ca68b));
    h &= mask;
    strict[i - lo] = lastStrict[h]!;
    lastStrict[h] = i;
    h = mix(code | (w1 << 8) | (w2 << 16) | (w3 << 24)) & mask;
    window[i - lo] = lastWindow[h]!;
    lastWindow[h] = i;
    w3 = w2; w2 = w1; w1 = code;
  }
  return { strict, window };
}

/**
 * Cuts nodes [from, to) into periodic and straight segments, or returns null when the code would
 * exceed `maxSlots` body nodes or the tape holds a custom op. Greedy: at each node, the
 * candidate periods are the distances to the next nodes with the same op and operand offsets
 * (an outer loop) and with the same next four ops (an inner loop); the one covering the most
 * nodes wins.
 */
export function planSegments(views: TapeViews, from: number, to: number, maxSlots = MAX_SLOTS): Segment[] | null {
  const { op, a, b } = views;
  for (let i = from; i < to; i++) if (op[i] === Op.custom) return null;
  let links = nextLinks(views, from, Math.min(to, from + CHUNK + LOOKAHEAD));
  let linksFrom = from;
  let strides = new Int32Array(0);
  // Verification work is bounded: a tape made to nearly repeat everywhere must not make
  // planning quadratic. Past the budget no more periods are looked for.
  let budget = 64 * (to - from) + (1 << 20);

  // How many times the `period` nodes from `pos` repeat (at least 1) with every op equal and every
  // operand moving by the same stride from one repetition to the next.
  const repetitions = (pos: number, period: number): number => {
    if (strides.length < 3 * period) strides = new Int32Array(3 * period);
    budget -= period;
    for (let s = 0; s < period; s++) {
      const i = pos + s, j = i + period;
      if (op[j] !== op[i]) return 1;
      const n = OPERANDS[op[i]!]!;
      if (n > 0) strides[3 * s] = a[j]! - a[i]!;
      if (n > 1) strides[3 * s + 1] = b[j]! - b[i]!;
      if (n > 2) strides[3 * s + 2] = a[j - 1]! - a[i - 1]!;
    }
    let t = 2;
    for (; pos + (t + 1) * period <= to && budget > 0; t++) {
      budget -= period;
      for (let s = 0, j = pos + t * period; s < period; s++, j++) {
        const i = j - period;
        if (op[j] !== op[i]) return t;
        const n = OPERANDS[op[j]!]!;
        if (n === 0) continue;
        if (a[j]! - a[i]! !== strides[3 * s]) return t;
        if (n > 1 && b[j]! - b[i]! !== strides[3 * s + 1]) return t;
        if (n > 2 && a[j - 1]! - a[i - 1]! !== strides[3 * s + 2]) return t;
      }
    }
    return t;
  };

  const segments: Segment[] = [];
  let slots = 0;
  let runStart = from;
  let pos = from;
  while (pos < to) {
    let bestPeriod = 0, bestCount = 0;
    if (budget > 0) {
      if (pos >= linksFrom + CHUNK) {
        linksFrom = pos;
        links = nextLinks(views, pos, Math.min(to, pos + CHUNK + LOOKAHEAD));
      }
      for (const next of [links.strict, links.window]) {
        // Further hops only matter while the nearer candidates fail (they would find multiples).
        for (let hop = 0, c = next[pos - linksFrom]!; hop < 3 && c > 0; hop++, c = next[c - linksFrom]!) {
          const period = c - pos;
          if (period > MAX_PERIOD || pos + 3 * period > to) break;
          if (bestPeriod > 0 && period % bestPeriod === 0) break;
          const count = repetitions(pos, period);
          if (count >= 3 && count * period > bestCount * bestPeriod) {
            bestPeriod = period;
            bestCount = count;
          }
          if (count >= 3) break;
        }
      }
    }
    // A loop pays off once it saves a few nodes of code. Two repetitions are not taken: any two
    // runs of equal ops "repeat" with strides that are mere differences, and taking them can
    // hide a real loop that starts a little later.
    if (bestCount >= 3 && (bestCount - 1) * bestPeriod >= 16) {
      if (runStart < pos) segments.push({ start: runStart, period: pos - runStart, count: 1 });
      segments.push({ start: pos, period: bestPeriod, count: bestCount });
      slots += pos - runStart + bestPeriod;
      pos += bestPeriod * bestCount;
      runStart = pos;
    } else {
      pos++;
    }
    if (slots + (pos - runStart) > maxSlots) return null;
  }
  if (runStart < to) segments.push({ start: runStart, period: to - runStart, count: 1 });
  return segments;
}

/** An operand (or a node itself) in a segment: node A + t·S at iteration t. */
export interface Ref {
  first: number;
  stride: number;
  /** The node is a constant at every iteration (no adjoint goes to it). */
  constant: boolean;
  /** ...with this value at every iteration (emitted as an immediate), else undefined. */
  value: number | undefined;
  group: number;
  /** The slot of the same iteration this operand is (a node computed earlier in the body), or -1. */
  slot: number;
}

export interface Slot {
  op: number;
  self: Ref;
  refs: Ref[];
}

export interface Body {
  seg: Segment;
  slots: Slot[];
  /** Per stride group: its stride and the lowest first node, the pointer's origin. */
  groups: { stride: number; origin: number }[];
  /** Per slot: the f64 local that holds its value (forward) and its adjoint (reverse) within an
   *  iteration, or -1. Values of nodes used later in the same iteration stay in locals (still
   *  stored for the reverse sweep); so does the adjoint of a node used *only* there, which then
   *  never touches memory. */
  local: Int32Array;
  /** Per slot: its adjoint lives in the local alone. */
  adjointInLocal: Uint8Array;
  /** Per slot: the forward sweep reads its value from the local (uses in the iteration are near). */
  valueInLocal: Uint8Array;
}

// A value stays in a local for the forward sweep only while its uses are this close (in nodes):
// long live ranges over a large body spill registers, which measured slower than reloading
// (Lax-Wendroff's 889-node body: forward 0.60 ms reloading, 0.95 ms keeping every value).
const VALUE_REACH = 16;

function describeSegment(views: TapeViews, seg: Segment, uses: Int32Array, seeded: Uint8Array): Body {
  const { op, val } = views;
  const groups: { stride: number; origin: number }[] = [];
  const groupOf = (stride: number, first: number): number => {
    let g = groups.findIndex((x) => x.stride === stride);
    if (g < 0) g = groups.push({ stride, origin: first }) - 1;
    else groups[g]!.origin = Math.min(groups[g]!.origin, first);
    return g;
  };
  const selfStride = seg.count > 1 ? seg.period : 0;
  const slots: Slot[] = [];
  for (let s = 0; s < seg.period; s++) {
    const i = seg.start + s;
    const code = op[i]!;
    const refs: Ref[] = [];
    const n = OPERANDS[code]!;
    for (let k = 0; k < n; k++) {
      const first = operand(views, i, k);
      const stride = seg.count > 1 ? operand(views, i + seg.period, k) - first : 0;
      let constant = true;
      let value: number | undefined = val[first]!;
      for (let t = 0; t < seg.count && constant; t++) {
        const node = first + t * stride;
        if (op[node] !== Op.const) constant = false;
        else if (!Object.is(val[node], value)) value = undefined;
      }
      if (!constant) value = undefined;
      const slot = stride === selfStride && first >= seg.start && first < i ? first - seg.start : -1;
      refs.push({ first, stride, constant, value, group: value === undefined ? groupOf(stride, first) : -1, slot });
    }
    const self: Ref = { first: i, stride: selfStride, constant: false, value: undefined, group: groupOf(selfStride, i), slot: s };
    slots.push({ op: code, self, refs });
  }
  const local = new Int32Array(seg.period).fill(-1);
  const adjointInLocal = new Uint8Array(seg.period);
  // Uses of each slot by later slots of the same iteration, against its uses anywhere.
  const inIteration = new Int32Array(seg.period);
  const valueInLocal = new Uint8Array(seg.period).fill(1);
  slots.forEach(({ refs }, s) => {
    for (const r of refs) {
      if (r.slot < 0 || r.value !== undefined) continue;
      inIteration[r.slot]++;
      if (s - r.slot > VALUE_REACH) valueInLocal[r.slot] = 0;
    }
  });
  let locals = 0;
  for (let s = 0; s < seg.period; s++) {
    if (inIteration[s] === 0 || slots[s]!.op <= Op.arg) {
      valueInLocal[s] = 0;
      continue;
    }
    local[s] = locals++;
    let only = true;
    for (let t = 0, i = seg.start + s; t < seg.count && only; t++, i += seg.period) only = uses[i] === inIteration[s] && !seeded[i];
    adjointInLocal[s] = only ? 1 : 0;
  }
  return { seg, slots, groups, local, adjointInLocal, valueInLocal };
}

// How many operand references each node has among nodes [from, to).
function useCounts(views: TapeViews, from: number, to: number): Int32Array {
  const { op, a, b } = views;
  const uses = new Int32Array(to);
  for (let i = from; i < to; i++) {
    const n = OPERANDS[op[i]!]!;
    if (n === 0) continue;
    uses[a[i]!]++;
    if (n > 1) uses[b[i]!]++;
    if (n > 2) uses[a[i - 1]!]++;
  }
  return uses;
}

/** A tape cut into loop bodies, ready for emitting sweeps. */
export interface SweepPlan {
  bodies: Body[];
  pointers: number;
  slotLocals: number;
}

/** Why `planSweeps` returned null for nodes [from, to): a sentence for `generatedSweepsReason`. */
export function whyNoPlan(views: TapeViews, from: number, to: number): string {
  if (to <= from) return 'the tape has no nodes past its inputs';
  for (let i = from; i < to; i++) if (views.op[i] === Op.custom) return 'the tape holds a custom op (its rules are JS code)';
  for (let i = from; i < to; i++) {
    if (OPERANDS[views.op[i]!] === 1 && views.b[i] !== views.a[i]) return `node ${i} is a unary op with two different operands (a hand-made tape)`;
  }
  return `the tape does not fold into loops and straight code of at most ${MAX_SLOTS} body nodes`;
}

/** Plans generated sweeps for nodes [from, to) of the tape in `views`, or returns null when the
 *  tape does not suit generated code. `outputs`: the nodes a reverse sweep may be seeded at (their
 *  adjoints stay in memory). */
export function planSweeps(views: TapeViews, from: number, to: number, outputs: ArrayLike<number>, maxSlots = MAX_SLOTS): SweepPlan | null {
  // Unary ops record their operand twice (b = a), which the tangent rules below rely on; only a
  // hand-made byte string could say otherwise, and then the interpreter runs it.
  for (let i = from; i < to; i++) if (OPERANDS[views.op[i]!] === 1 && views.b[i] !== views.a[i]) return null;
  const segments = planSegments(views, from, to, maxSlots);
  if (!segments) return null;
  const uses = useCounts(views, from, to);
  const seeded = new Uint8Array(to);
  for (let k = 0; k < outputs.length; k++) seeded[outputs[k]!] = 1;
  const bodies = segments.map((seg) => describeSegment(views, seg, uses, seeded));
  return {
    bodies,
    pointers: Math.max(1, ...bodies.map((b) => b.groups.length)),
    slotLocals: Math.max(0, ...bodies.map((b) => Math.max(-1, ...b.local) + 1)),
  };
}
