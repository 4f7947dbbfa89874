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
// straight-line code. A tape that does not fold into `MAX_SLOTS` nodes of code (or holds a custom
// op, whose rules live in JS) keeps the interpreter.
//
// The generated code runs the same rules as the interpreter, in the same order, so results are
// bit-identical (test/codegen.test.ts): add, sub, mul, div, neg, recip, square, sqrt, abs, the
// comparisons and select are spelled out as the core spells them (and the first and second
// partials of a few more); every other op calls the core's own rules (`ruleForward`,
// `rulePartials`, `rulePartialsTangent`), the code the interpreter inlines.
import { Op, OP_TABLE, ZERO_GRADIENT_OPS } from '../ops.ts';
import type { TapeViews } from '../backend.ts';

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
const OPERANDS = Uint8Array.from({ length: 256 }, (_, op) =>
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

// ───────────────────────────── wasm encoding ─────────────────────────────

class Bytes {
  buf = new Uint8Array(1 << 16);
  len = 0;
  private readonly f64 = new Float64Array(1);
  private readonly f64Bytes = new Uint8Array(this.f64.buffer);

  byte(x: number): void {
    if (this.len === this.buf.length) {
      const grown = new Uint8Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf[this.len++] = x;
  }
  bytes(xs: ArrayLike<number>): void {
    for (let k = 0; k < xs.length; k++) this.byte(xs[k]!);
  }
  u32(x: number): void {
    do {
      const low = x & 0x7f;
      x >>>= 7;
      this.byte(x ? low | 0x80 : low);
    } while (x);
  }
  i32(x: number): void {
    x |= 0;
    for (;;) {
      const low = x & 0x7f;
      x >>= 7;
      if ((x === 0 && !(low & 0x40)) || (x === -1 && low & 0x40)) {
        this.byte(low);
        return;
      }
      this.byte(low | 0x80);
    }
  }
  f64Const(v: number): void {
    this.byte(0x44);
    this.f64[0] = v;
    this.bytes(this.f64Bytes);
  }
  name(s: string): void {
    this.u32(s.length);
    for (let k = 0; k < s.length; k++) this.byte(s.charCodeAt(k));
  }
  get(local: number): void { this.byte(W_LocalGet); this.u32(local); }
  set(local: number): void { this.byte(W_LocalSet); this.u32(local); }
  tee(local: number): void { this.byte(W_LocalTee); this.u32(local); }
  i32Const(x: number): void { this.byte(W_I32Const); this.i32(x); }
  section(id: number, body: Bytes): void {
    this.byte(id);
    this.u32(body.len);
    this.bytes(body.buf.subarray(0, body.len));
  }
}

const I32 = 0x7f, F64 = 0x7c;
// wasm opcodes
const W_If = 0x04;
const W_Else = 0x05;
const W_End = 0x0b;
const W_Loop = 0x03;
const W_BrIf = 0x0d;
const W_Call = 0x10;
const W_Select = 0x1b;
const W_Void = 0x40;
const W_LocalGet = 0x20;
const W_LocalSet = 0x21;
const W_LocalTee = 0x22;
const W_F64Load = 0x2b;
const W_F64Store = 0x39;
const W_I32Const = 0x41;
const W_I32Add = 0x6a;
const W_I32Sub = 0x6b;
const W_I32And = 0x71;
const W_I32Or = 0x72;
const W_I32ShrU = 0x76;
const W_F64Eq = 0x61;
const W_F64Ne = 0x62;
const W_F64Lt = 0x63;
const W_F64Gt = 0x64;
const W_F64Le = 0x65;
const W_F64Ge = 0x66;
const W_F64Abs = 0x99;
const W_F64Neg = 0x9a;
const W_F64Sqrt = 0x9f;
const W_F64Add = 0xa0;
const W_F64Sub = 0xa1;
const W_F64Mul = 0xa2;
const W_F64Div = 0xa3;
const W_F64FromU32 = 0xb8;
// Imported functions, in import order: the core's rules.
const FN_FORWARD = 0, FN_PARTIALS = 1, FN_PARTIAL_Z = 2, FN_PARTIALS_TANGENT = 3, FN_PARTIAL_Z_TANGENT = 4;

const NATIVE_BINARY: Partial<Record<number, number>> = {
  [Op.add]: W_F64Add, [Op.sub]: W_F64Sub, [Op.mul]: W_F64Mul, [Op.div]: W_F64Div,
};
const COMPARISON: Partial<Record<number, number>> = {
  [Op.lt]: W_F64Lt, [Op.le]: W_F64Le, [Op.gt]: W_F64Gt, [Op.ge]: W_F64Ge, [Op.eq]: W_F64Eq,
};
const ZERO_GRADIENT = new Set<number>(ZERO_GRADIENT_OPS.map((name) => Op[name]));

// The locals a partials emitter sets (pa, pb) or may use as scratch (c).
type Locals = { pa: number; pb: number; c: number };
type Emit = () => void;
// Partials spelled out in wasm, exactly as `partials` in assembly/ops.ts writes them (same
// operations, same order): they set the locals pa (and pb for binary ops).
const NATIVE_PARTIAL: Partial<Record<number, (fn: Bytes, x: Emit, z: Emit, y: Emit, L: Locals) => void>> = {
  // -1
  [Op.neg]: (fn, _x, _z, _y, L) => { fn.f64Const(-1); fn.set(L.pa); },
  // -y * y
  [Op.recip]: (fn, _x, _z, y, L) => { y(); fn.byte(W_F64Neg); y(); fn.byte(W_F64Mul); fn.set(L.pa); },
  // 2 * x
  [Op.square]: (fn, x, _z, _y, L) => { fn.f64Const(2); x(); fn.byte(W_F64Mul); fn.set(L.pa); },
  // 0.5 / |y|
  [Op.sqrt]: (fn, _x, _z, y, L) => { fn.f64Const(0.5); y(); fn.byte(W_F64Abs); fn.byte(W_F64Div); fn.set(L.pa); },
  // y
  [Op.exp]: (fn, _x, _z, y, L) => { y(); fn.set(L.pa); },
  // y != y ? (NaN, NaN) : (1 / z, -y / z)
  [Op.div]: (fn, _x, z, y, L) => {
    y(); fn.tee(L.c); fn.get(L.c); fn.byte(W_F64Ne);
    fn.byte(W_If); fn.byte(W_Void);
    fn.f64Const(NaN); fn.set(L.pa); fn.f64Const(NaN); fn.set(L.pb);
    fn.byte(W_Else);
    fn.get(L.c); fn.byte(W_F64Neg); z(); fn.byte(W_F64Div); fn.set(L.pb);
    fn.f64Const(1); z(); fn.byte(W_F64Div); fn.set(L.pa);
    fn.byte(W_End);
  },
};

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

/** The module of a plan's sweeps: 'replay' exports `forward` and `reverse(valBase, adjBase)`;
 *  'tangents' exports `tangent` and `reverseTangent(valBase, adjBase, tanBase, tanAdjBase)`,
 *  made on the first jvp or hvp only (they are about 8 times the size). */
export function emitSweeps({ bodies, pointers, slotLocals }: SweepPlan, which: 'replay' | 'tangents'): Uint8Array<ArrayBuffer> {
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
  const functions = new Bytes();
  functions.bytes(replay ? [2, 0, 0] : [2, 4, 4]);
  out.section(3, functions);
  const exports = new Bytes();
  exports.u32(2);
  exports.name(replay ? 'forward' : 'tangent'); exports.bytes([0x00, 5]);
  exports.name(replay ? 'reverse' : 'reverseTangent'); exports.bytes([0x00, 6]);
  out.section(7, exports);
  const code = new Bytes();
  code.u32(2);
  const functionBodies = replay
    ? [emitForward(bodies, pointers, slotLocals), emitReverse(bodies, pointers, slotLocals)]
    : [emitTangent(bodies, pointers), emitReverseTangent(bodies, pointers)];
  for (const fn of functionBodies) {
    code.u32(fn.len);
    code.bytes(fn.buf.subarray(0, fn.len));
  }
  out.section(10, code);
  return out.buf.slice(0, out.len);
}

// Locals: 0 valBase, 1 adjBase (parameters); 2 the iteration counter; then one value pointer and
// one adjoint pointer per stride group; then the f64 temporaries and one per slot kept in a local.
const COUNTER = 2;
function localLayout(pointers: number, slotLocals: number) {
  const f64 = 3 + 2 * pointers;
  return {
    val: (g: number) => 3 + g,
    adj: (g: number) => 3 + pointers + g,
    g: f64, x: f64 + 1, z: f64 + 2, c: f64 + 3, pa: f64 + 4, pb: f64 + 5,
    slot: (k: number) => f64 + 6 + k,
    declare(fn: Bytes) {
      fn.u32(2);
      fn.u32(1 + 2 * pointers); fn.byte(I32);
      fn.u32(6 + slotLocals); fn.byte(F64);
    },
  };
}

function memarg(fn: Bytes, opcode: number, offset: number): void {
  fn.byte(opcode);
  fn.byte(3);
  fn.u32(offset);
}

function emitLoopHead(fn: Bytes, body: Body, counter = COUNTER): void {
  if (body.seg.count === 1) return;
  fn.i32Const(body.seg.count);
  fn.set(counter);
  fn.byte(W_Loop); fn.byte(W_Void);
}

function emitLoopTail(fn: Bytes, body: Body, step: number, pointerLocals: number[][], counter = COUNTER): void {
  if (body.seg.count === 1) return;
  body.groups.forEach(({ stride }, g) => {
    if (stride === 0) return;
    for (const locals of pointerLocals) {
      fn.get(locals[g]!);
      fn.i32Const(8 * stride * step);
      fn.byte(W_I32Add);
      fn.set(locals[g]!);
    }
  });
  fn.get(counter);
  fn.i32Const(1);
  fn.byte(W_I32Sub);
  fn.tee(counter);
  fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_End);
}

// Pointer g starts at base + 8·(origin + t0·stride), t0 the first iteration visited.
function emitPointerInit(fn: Bytes, body: Body, base: number, local: (g: number) => number, t0: number): void {
  body.groups.forEach(({ stride, origin }, g) => {
    fn.get(base);
    fn.i32Const(8 * (origin + t0 * stride));
    fn.byte(W_I32Add);
    fn.set(local(g));
  });
}

function emitForward(bodies: Body[], pointers: number, slotLocals: number): Bytes {
  const L = localLayout(pointers, slotLocals);
  const fn = new Bytes();
  L.declare(fn);
  for (const body of bodies) {
    emitPointerInit(fn, body, 0, L.val, 0);
    emitLoopHead(fn, body);
    const load = (r: Ref): void => {
      if (r.value !== undefined) return fn.f64Const(r.value);
      if (r.slot >= 0 && body.valueInLocal[r.slot]) return fn.get(L.slot(body.local[r.slot]!));
      fn.get(L.val(r.group));
      memarg(fn, W_F64Load, 8 * (r.first - body.groups[r.group]!.origin));
    };
    for (const { op, self, refs } of body.slots) {
      if (op <= Op.arg) continue; // inputs and constants are given; arg values stay 0
      const at = 8 * (self.first - body.groups[self.group]!.origin);
      const cached = body.valueInLocal[self.slot] ? body.local[self.slot]! : -1;
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      const native = NATIVE_BINARY[op];
      const comparison = COMPARISON[op];
      fn.get(L.val(self.group));
      if (native !== undefined) {
        load(x); load(z!); fn.byte(native);
      } else if (comparison !== undefined) {
        load(x); load(z!); fn.byte(comparison); fn.byte(W_F64FromU32);
      } else if (op === Op.neg) {
        load(x); fn.byte(W_F64Neg);
      } else if (op === Op.recip) {
        fn.f64Const(1); load(x); fn.byte(W_F64Div);
      } else if (op === Op.square) {
        load(x); fn.tee(L.x); fn.get(L.x); fn.byte(W_F64Mul);
      } else if (op === Op.sqrt) {
        load(x); fn.byte(W_F64Sqrt);
      } else if (op === Op.abs) {
        load(x); fn.byte(W_F64Abs);
      } else if (op === Op.stopGradient) {
        load(x);
      } else if (op === Op.select) {
        load(z!); load(w!); emitTruthy(fn, () => load(x), L.c); fn.byte(W_Select);
      } else {
        fn.i32Const(op);
        load(x);
        if (z) load(z); else fn.f64Const(0);
        fn.byte(W_Call); fn.u32(FN_FORWARD);
      }
      if (cached >= 0) fn.tee(L.slot(cached));
      memarg(fn, W_F64Store, at);
    }
    emitLoopTail(fn, body, 1, [body.groups.map((_, g) => L.val(g))]);
  }
  fn.byte(W_End);
  return fn;
}

// truthy(c) = c != 0 && c == c, as an i32 on the stack.
function emitTruthy(fn: Bytes, loadCondition: () => void, temp: number): void {
  loadCondition();
  fn.tee(temp);
  fn.f64Const(0);
  fn.byte(W_F64Ne);
  fn.get(temp);
  fn.get(temp);
  fn.byte(W_F64Eq);
  fn.byte(W_I32And);
}

function emitReverse(bodies: Body[], pointers: number, slotLocals: number): Bytes {
  const L = localLayout(pointers, slotLocals);
  const fn = new Bytes();
  L.declare(fn);
  for (let k = bodies.length - 1; k >= 0; k--) {
    const body = bodies[k]!;
    const last = body.seg.count - 1;
    emitPointerInit(fn, body, 0, L.val, last);
    emitPointerInit(fn, body, 1, L.adj, last);
    emitLoopHead(fn, body);
    // An adjoint kept in a local starts at +0 in each iteration, as memory does after the clear:
    // it is zeroed just before its first consumer's code (in sweep order), outside any branch,
    // which keeps the local's live range short.
    const started = new Uint8Array(body.slots.length);
    const adjointLocal = (r: Ref): number => (r.slot >= 0 && body.adjointInLocal[r.slot] ? L.slot(body.local[r.slot]!) : -1);
    const offset = (r: Ref): number => 8 * (r.first - body.groups[r.group]!.origin);
    const load = (r: Ref): void => {
      if (r.value !== undefined) return fn.f64Const(r.value);
      fn.get(L.val(r.group));
      memarg(fn, W_F64Load, offset(r));
    };
    // adj[r] += contribution, nothing for a constant.
    const addAdjoint = (r: Ref, contribution: () => void): void => {
      if (r.constant) return;
      const inLocal = adjointLocal(r);
      if (inLocal >= 0) {
        fn.get(inLocal);
        contribution();
        fn.byte(W_F64Add);
        fn.set(inLocal);
        return;
      }
      fn.get(L.adj(r.group));
      fn.get(L.adj(r.group));
      memarg(fn, W_F64Load, offset(r));
      contribution();
      fn.byte(W_F64Add);
      memarg(fn, W_F64Store, offset(r));
    };
    const get = (local: number) => (): void => { fn.get(local); };
    const times = (p: number) => (): void => { get(L.g)(); get(p)(); fn.byte(W_F64Mul); };
    // if (local != 0) { then }
    const ifNonZero = (local: number, then: () => void): void => {
      get(local)(); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_If); fn.byte(W_Void); then(); fn.byte(W_End);
    };
    for (let s = body.slots.length - 1; s >= 0; s--) {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg || ZERO_GRADIENT.has(op)) continue;
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      if (refs.every((r) => r.constant)) continue;
      // An adjoint in a local that no consumer feeds (they all have zero gradient) is exactly 0:
      // the interpreter skips such a node, and so does this code. (The local may still hold
      // another body's value: locals are shared between bodies.)
      if (adjointLocal(self) >= 0 && !started[self.slot]) continue;
      for (const r of refs) {
        const inLocal = adjointLocal(r);
        if (r.constant || inLocal < 0 || started[r.slot]) continue;
        started[r.slot] = 1;
        fn.f64Const(0);
        fn.set(inLocal);
      }
      // g = adj[i]
      if (adjointLocal(self) >= 0) {
        fn.get(adjointLocal(self));
      } else {
        fn.get(L.adj(self.group));
        memarg(fn, W_F64Load, offset(self));
      }
      fn.set(L.g);
      if (op === Op.add || op === Op.sub) {
        // No g != 0 test: adjoints are never -0 (they start at +0 and only gain sums), and
        // adding ±0 leaves any other value as it is, so skipping a 0 adjoint changes nothing.
        addAdjoint(x, get(L.g));
        addAdjoint(z!, op === Op.add ? get(L.g) : () => { get(L.g)(); fn.byte(W_F64Neg); });
        continue;
      }
      ifNonZero(L.g, () => {
        if (op === Op.mul) {
          load(x); fn.set(L.x);
          load(z!); fn.set(L.z);
          if (!x.constant) ifNonZero(L.z, () => addAdjoint(x, times(L.z)));
          if (!z!.constant) ifNonZero(L.x, () => addAdjoint(z!, times(L.x)));
        } else if (op === Op.select) {
          emitTruthy(fn, () => load(x), L.c);
          fn.byte(W_If); fn.byte(W_Void);
          addAdjoint(z!, get(L.g));
          fn.byte(W_Else);
          addAdjoint(w!, get(L.g));
          fn.byte(W_End);
        } else {
          // pa (and pb) as `partials` in assembly/ops.ts computes them: spelled out for the
          // simple ops, the core's own function for the rest.
          const partial = NATIVE_PARTIAL[op];
          if (partial) {
            partial(fn, () => load(x), z ? () => load(z) : () => fn.f64Const(0), () => load(self), L);
          } else {
            fn.i32Const(op);
            load(x);
            if (z) load(z); else fn.f64Const(0);
            load(self);
            fn.byte(W_Call); fn.u32(FN_PARTIALS);
            fn.set(L.pa);
            if (z) { fn.byte(W_Call); fn.u32(FN_PARTIAL_Z); fn.set(L.pb); }
          }
          if (!x.constant) ifNonZero(L.pa, () => addAdjoint(x, times(L.pa)));
          if (z && !z.constant) ifNonZero(L.pb, () => addAdjoint(z, times(L.pb)));
        }
      });
    }
    emitLoopTail(fn, body, -1, [body.groups.map((_, g) => L.val(g)), body.groups.map((_, g) => L.adj(g))]);
  }
  fn.byte(W_End);
  return fn;
}

// ───────────────────────────── tangent sweeps (jvp, hvp) ─────────────────────────────
// The interpreter's `tangent` and `sweepReverseTangent` (assembly/sweeps.ts), node for node and in
// the same arithmetic order. Values, adjoints and tangents all stay in memory here.

// Params 0 valBase, 1 adjBase, 2 tanBase, 3 tanAdjBase; 4 the counter; pointers for the four
// regions per stride group; then f64 temporaries.
const TANGENT_COUNTER = 4;
function tangentLayout(pointers: number) {
  const f64 = 5 + 4 * pointers;
  return {
    region: (r: number, g: number) => 5 + r * pointers + g,
    g: f64, gt: f64 + 1, x: f64 + 2, z: f64 + 3, y: f64 + 4, pa: f64 + 5, pb: f64 + 6, dpa: f64 + 7, dpb: f64 + 8,
    ta: f64 + 9, tb: f64 + 10, c: f64 + 11,
    declare(fn: Bytes) {
      fn.u32(2);
      fn.u32(1 + 4 * pointers); fn.byte(I32);
      fn.u32(12); fn.byte(F64);
    },
  };
}
const VAL = 0, ADJ = 1, TAN = 2, TAN_ADJ = 3;

// Ops whose partials have no directional derivative (partialsTangent returns 0 and leaves
// partialZTangent 0): the piecewise-linear ones.
const LINEAR = new Set<number>([Op.add, Op.sub, Op.neg, Op.abs, Op.min, Op.max, Op.relu]);

// The directional derivatives of the partials, as `partialsTangent` in assembly/ops.ts writes
// them (same operations, same order). Each leaves dpa on the stack; mul and div first leave dpb
// under it.
interface Operands { x: Emit; z: Emit; y: Emit; tx: Emit; tz: Emit; ty: Emit }
const SECOND_ORDER: Partial<Record<number, (fn: Bytes, o: Operands) => void>> = {
  // dpb = tx, dpa = tz
  [Op.mul]: (fn, o) => { o.tx(); o.tz(); },
  // dpb = (y tz - ty z) / (z z), dpa = -tz / (z z)
  [Op.div]: (fn, o) => {
    o.y(); o.tz(); fn.byte(W_F64Mul); o.ty(); o.z(); fn.byte(W_F64Mul); fn.byte(W_F64Sub);
    o.z(); o.z(); fn.byte(W_F64Mul); fn.byte(W_F64Div);
    o.tz(); fn.byte(W_F64Neg); o.z(); o.z(); fn.byte(W_F64Mul); fn.byte(W_F64Div);
  },
  // -2 y ty
  [Op.recip]: (fn, o) => { fn.f64Const(-2); o.y(); fn.byte(W_F64Mul); o.ty(); fn.byte(W_F64Mul); },
  // 2 tx
  [Op.square]: (fn, o) => { fn.f64Const(2); o.tx(); fn.byte(W_F64Mul); },
  // -0.5 ty / (y y)
  [Op.sqrt]: (fn, o) => { fn.f64Const(-0.5); o.ty(); fn.byte(W_F64Mul); o.y(); o.y(); fn.byte(W_F64Mul); fn.byte(W_F64Div); },
  // ty
  [Op.exp]: (_fn, o) => o.ty(),
};

// pa, pb for the tangent sweeps: add/sub/mul here, then the same as the reverse sweep.
const TANGENT_PARTIAL: Partial<Record<number, (fn: Bytes, x: Emit, z: Emit, y: Emit, L: Locals) => void>> = {
  ...NATIVE_PARTIAL,
  [Op.add]: (fn, _x, _z, _y, L) => { fn.f64Const(1); fn.set(L.pa); fn.f64Const(1); fn.set(L.pb); },
  [Op.sub]: (fn, _x, _z, _y, L) => { fn.f64Const(1); fn.set(L.pa); fn.f64Const(-1); fn.set(L.pb); },
  [Op.mul]: (fn, x, z, _y, L) => { z(); fn.set(L.pa); x(); fn.set(L.pb); },
};

function tangentEmitters(fn: Bytes, body: Body, L: ReturnType<typeof tangentLayout>) {
  const load = (region: number, r: Ref): void => {
    if (r.value !== undefined) return fn.f64Const(region === VAL ? r.value : 0);
    fn.get(L.region(region, r.group));
    memarg(fn, W_F64Load, 8 * (r.first - body.groups[r.group]!.origin));
  };
  const tangentOf = (r: Ref): void => (r.constant ? fn.f64Const(0) : load(TAN, r));
  const add = (region: number, r: Ref, value: () => void): void => {
    if (r.constant) return;
    const at = 8 * (r.first - body.groups[r.group]!.origin);
    fn.get(L.region(region, r.group));
    fn.get(L.region(region, r.group));
    memarg(fn, W_F64Load, at);
    value();
    fn.byte(W_F64Add);
    memarg(fn, W_F64Store, at);
  };
  // c ? a : b for f64 a, b and an i32 condition pushed by `cond`.
  const choose = (a: () => void, b: () => void, cond: () => void): void => { a(); b(); cond(); fn.byte(W_Select); };
  const nonZero = (local: number) => (): void => { fn.get(local); fn.f64Const(0); fn.byte(W_F64Ne); };
  const product = (p: number, q: number) => (): void => { fn.get(p); fn.get(q); fn.byte(W_F64Mul); };
  const zero = (): void => fn.f64Const(0);
  // pa (and pb) into their locals, from x, z, y in their locals.
  const partials = (op: number, binary: boolean): void => {
    const own = TANGENT_PARTIAL[op];
    const get = (local: number) => (): void => fn.get(local);
    if (own) {
      own(fn, get(L.x), get(L.z), get(L.y), L);
      // A unary op's second partial is 0 (`partials` leaves partialZ at 0).
      if (!binary) { fn.f64Const(0); fn.set(L.pb); }
      return;
    }
    fn.i32Const(op); fn.get(L.x); fn.get(L.z); fn.get(L.y);
    fn.byte(W_Call); fn.u32(FN_PARTIALS);
    fn.set(L.pa);
    if (binary) { fn.byte(W_Call); fn.u32(FN_PARTIAL_Z); } else fn.f64Const(0);
    fn.set(L.pb);
  };
  return { load, tangentOf, add, choose, nonZero, product, zero, partials };
}

function emitTangent(bodies: Body[], pointers: number): Bytes {
  const L = tangentLayout(pointers);
  const fn = new Bytes();
  L.declare(fn);
  for (const body of bodies) {
    emitPointerInit(fn, body, 0, (g) => L.region(VAL, g), 0);
    emitPointerInit(fn, body, 2, (g) => L.region(TAN, g), 0);
    emitLoopHead(fn, body, TANGENT_COUNTER);
    const { load, tangentOf, choose, nonZero, product, zero, partials } = tangentEmitters(fn, body, L);
    for (const { op, self, refs } of body.slots) {
      if (op <= Op.arg) continue;
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      fn.get(L.region(TAN, self.group));
      if (op === Op.select) {
        // tan(i) = tan(branch taken)
        choose(() => tangentOf(z!), () => tangentOf(w!), () => emitTruthy(fn, () => load(VAL, x), L.c));
      } else {
        const binary = OPERANDS[op] === 2;
        tangentOf(x); fn.set(L.ta);
        if (binary) { tangentOf(z!); fn.set(L.tb); } else { fn.get(L.ta); fn.set(L.tb); }
        // ta == 0 && tb == 0 ? 0 : (ta != 0 ? ta pa : 0) + (tb != 0 ? tb pb : 0)
        fn.get(L.ta); fn.f64Const(0); fn.byte(W_F64Eq);
        fn.get(L.tb); fn.f64Const(0); fn.byte(W_F64Eq);
        fn.byte(W_I32And);
        fn.byte(W_If); fn.byte(F64);
        fn.f64Const(0);
        fn.byte(W_Else);
        load(VAL, x); fn.set(L.x);
        if (binary) load(VAL, z!); else fn.get(L.x);
        fn.set(L.z);
        load(VAL, self); fn.set(L.y);
        partials(op, binary);
        choose(product(L.ta, L.pa), zero, nonZero(L.ta));
        choose(product(L.tb, L.pb), zero, nonZero(L.tb));
        fn.byte(W_F64Add);
        fn.byte(W_End);
      }
      memarg(fn, W_F64Store, 8 * (self.first - body.groups[self.group]!.origin));
    }
    emitLoopTail(fn, body, 1, [body.groups.map((_, g) => L.region(VAL, g)), body.groups.map((_, g) => L.region(TAN, g))], TANGENT_COUNTER);
  }
  fn.byte(W_End);
  return fn;
}

function emitReverseTangent(bodies: Body[], pointers: number): Bytes {
  const L = tangentLayout(pointers);
  const fn = new Bytes();
  L.declare(fn);
  for (let k = bodies.length - 1; k >= 0; k--) {
    const body = bodies[k]!;
    const last = body.seg.count - 1;
    for (let region = 0; region < 4; region++) emitPointerInit(fn, body, region, (g) => L.region(region, g), last);
    emitLoopHead(fn, body, TANGENT_COUNTER);
    const { load, tangentOf, add, choose, nonZero, product, zero, partials } = tangentEmitters(fn, body, L);
    // Adjoints stay in memory here: keeping those used only within the iteration in locals, as
    // the reverse sweep does, measured slower (Rosenbrock n = 10^4 hvp: 0.71 ms against 0.60 ms).
    for (let s = body.slots.length - 1; s >= 0; s--) {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg || ZERO_GRADIENT.has(op) || refs.every((r) => r.constant)) continue;
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      const binary = OPERANDS[op] === 2;
      load(ADJ, self); fn.set(L.g);
      load(TAN_ADJ, self); fn.set(L.gt);
      // if (g != 0 || gt != 0)
      nonZero(L.g)(); nonZero(L.gt)(); fn.byte(W_I32Or);
      fn.byte(W_If); fn.byte(W_Void);
      if (op === Op.select) {
        emitTruthy(fn, () => load(VAL, x), L.c);
        fn.byte(W_If); fn.byte(W_Void);
        add(ADJ, z!, () => fn.get(L.g)); add(TAN_ADJ, z!, () => fn.get(L.gt));
        fn.byte(W_Else);
        add(ADJ, w!, () => fn.get(L.g)); add(TAN_ADJ, w!, () => fn.get(L.gt));
        fn.byte(W_End);
      } else {
        load(VAL, x); fn.set(L.x);
        if (binary) load(VAL, z!); else fn.get(L.x);
        fn.set(L.z);
        load(VAL, self); fn.set(L.y);
        partials(op, binary);
        // adjoints: if (g != 0 && p != 0) adj += g p
        const toAdjoint = (r: Ref, p: number): void => {
          if (r.constant) return;
          nonZero(L.g)(); nonZero(p)(); fn.byte(W_I32And);
          fn.byte(W_If); fn.byte(W_Void);
          add(ADJ, r, product(L.g, p));
          fn.byte(W_End);
        };
        toAdjoint(x, L.pa);
        if (binary) toAdjoint(z!, L.pb);
        // dpa, dpb: the partials' directional derivatives, 0 where g is 0
        if (LINEAR.has(op)) {
          fn.f64Const(0); fn.set(L.dpa); fn.f64Const(0); fn.set(L.dpb);
        } else {
          fn.get(L.g); fn.f64Const(0); fn.byte(W_F64Ne);
          fn.byte(W_If); fn.byte(W_Void);
          const own = SECOND_ORDER[op];
          if (own) {
            own(fn, { x: () => fn.get(L.x), z: () => fn.get(L.z), y: () => fn.get(L.y), tx: () => tangentOf(x), tz: () => tangentOf(binary ? z! : x), ty: () => tangentOf(self) });
            fn.set(L.dpa);
            if (op === Op.mul || op === Op.div) fn.set(L.dpb);
            else { fn.f64Const(0); fn.set(L.dpb); }
          } else {
            fn.i32Const(op); fn.get(L.x); fn.get(L.z); fn.get(L.y);
            tangentOf(x); if (binary) tangentOf(z!); else tangentOf(x); tangentOf(self);
            fn.byte(W_Call); fn.u32(FN_PARTIALS_TANGENT); fn.set(L.dpa);
            fn.byte(W_Call); fn.u32(FN_PARTIAL_Z_TANGENT); fn.set(L.dpb);
          }
          fn.byte(W_Else);
          fn.f64Const(0); fn.set(L.dpa); fn.f64Const(0); fn.set(L.dpb);
          fn.byte(W_End);
        }
        // t = (gt != 0 && p != 0 ? gt p : 0) + (dp != 0 ? g dp : 0); if (t != 0) tanAdj += t
        const toTangentAdjoint = (r: Ref, p: number, dp: number, t: number): void => {
          choose(product(L.gt, p), zero, () => { nonZero(L.gt)(); nonZero(p)(); fn.byte(W_I32And); });
          choose(product(L.g, dp), zero, nonZero(dp));
          fn.byte(W_F64Add);
          fn.set(t);
          if (r.constant) return;
          nonZero(t)();
          fn.byte(W_If); fn.byte(W_Void);
          add(TAN_ADJ, r, () => fn.get(t));
          fn.byte(W_End);
        };
        toTangentAdjoint(x, L.pa, L.dpa, L.ta);
        if (binary) toTangentAdjoint(z!, L.pb, L.dpb, L.tb);
      }
      fn.byte(W_End);
    }
    emitLoopTail(fn, body, -1, [0, 1, 2, 3].map((region) => body.groups.map((_, g) => L.region(region, g))), TANGENT_COUNTER);
  }
  fn.byte(W_End);
  return fn;
}
