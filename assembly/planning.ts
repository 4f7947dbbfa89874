// The code generator's planner (src/wasm/codegen/plan.ts) reads the whole tape before it looks
// for loops: counting uses, and the next-occurrence links its candidate periods come from. Those
// passes run here from the first call, where JS runs them before V8 has optimised it: the count
// costs about 1 ns per node here against 9, the links 21 against 41-58 (their hash tables are
// larger than the cache; branchy logistic loss, `bench/codegen-cliffs.ts`).
import { Op, opArity } from './ops';
import { adjBase, argA, argB, opAt, opBase } from './layout';

// Operands each op's rules read, by op code (the nodes before a select carry its third). Every
// pass reads it per node, and the search per node compared (the branchy loss: 1.2 M), where a
// call to opArity cost more than the rest of the step in V8's baseline code, which runs a pass's
// first call to its end.
const operandCounts = memory.data(256);
let operandCountsReady = false;

export function prepareOperandCounts(): void {
  if (operandCountsReady) return;
  for (let op = 0; op < 256; op++) {
    store<u8>(operandCounts + <usize>op, op <= Op.Arg ? 0 : op == Op.Select ? 3 : max(0, opArity(op)));
  }
  operandCountsReady = true;
}

// @ts-ignore: decorator
@inline export function operandCount(op: i32): i32 {
  return load<u8>(operandCounts + <usize>op);
}

// @ts-ignore: decorator
@inline function countUse(node: i32): void {
  const at = adjBase + (<usize>node << 2);
  store<i32>(at, load<i32>(at) + 1);
}

/** How many operand references each node has among nodes [from, to), as i32 per node of [0, to)
 *  written over the adjoint region (every sweep clears it before use). Returns 0, or -1 - i for
 *  the first node i that keeps the tape from generated code: a custom op, or a unary op whose
 *  two operands differ (a hand-made tape). */
export function countUses(from: i32, to: i32): i32 {
  prepareOperandCounts();
  memory.fill(adjBase, 0, <usize>to << 2);
  // In short calls, as the passes below (the branchy loss at 10,000 samples: 2.0 -> 1.3 ms on a
  // first compile, 0.7 warm). The first call has a call site of its own, else Binaryen inlines
  // the function into its one caller, and the pass is one call again.
  let found = countUsesIn(from, min(to, from + USE_STEP));
  for (let lo = from + USE_STEP; lo < to && found == 0; lo += USE_STEP) found = countUsesIn(lo, min(to, lo + USE_STEP));
  return found;
}

/** Nodes per call of `countUsesIn`. */
// @ts-ignore: decorator
@inline const USE_STEP: i32 = 16384;

function countUsesIn(from: i32, to: i32): i32 {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    if (op == Op.Custom || op >= Op.VMeta) return -1 - i;
    const x = argA(i), z = argB(i);
    countUse(x);
    if (op == Op.Select) {
      countUse(z);
      countUse(argA(i - 1));
    } else if (operandCount(op) > 1) {
      countUse(z);
    } else if (z != x) {
      return -1 - i;
    }
  }
  return 0;
}

// @ts-ignore: decorator
@inline function mix(h: u32): u32 {
  h = (h ^ (h >>> 16)) * 0x85ebca6b;
  h = (h ^ (h >>> 13)) * 0xc2b2ae35;
  return h ^ (h >>> 16);
}


// V8 runs each wasm call to its end in the code it started in (baseline code, on a first call:
// wasm has no on-stack replacement) and optimises a function once it has run enough. So each pass
// below runs its per-node loop as many calls of a function of its own, which V8 optimises during
// the first of them; the rest run the optimised code. As one call, the links of the branchy
// loss's 174 k nodes took 6.9 ms of its first compile, the search 2.9 and the repeats 2.5.

/** Nodes per call of `linkNodes`. */
const LINK_STEP = 4096;

/** The planner's candidate periods for nodes [lo, hi): `nextLinks` in src/wasm/codegen/plan.ts,
 *  hash for hash, so both give the same plan. Writes `strict` (i32 per node) at `at`, `window`
 *  after it, and uses `size` (a power of two) i32 entries per hash table after those. */
export function nextLinks(lo: i32, hi: i32, at: usize, size: i32): void {
  prepareOperandCounts();
  const n = <usize>(hi - lo);
  const lastStrict = at + (n << 3);
  memory.fill(lastStrict, 0xff, <usize>size << 3);
  for (let top = hi; top > lo; top -= LINK_STEP) linkNodes(max(lo, top - LINK_STEP), top, lo, hi, at, size);
}

// Nodes [from, to) of nextLinks(lo, hi, at, size), from the last down.
function linkNodes(from: i32, to: i32, lo: i32, hi: i32, at: usize, size: i32): void {
  const n = <usize>(hi - lo);
  const strict = at, window = at + (n << 2);
  const lastStrict = window + (n << 2), lastWindow = lastStrict + (<usize>size << 2);
  const mask = <u32>(size - 1);
  // The ops of the three nodes after `to` (0 past hi), as the loop leaves them.
  let w1: u32 = to < hi ? <u32>opAt(to) : 0;
  let w2: u32 = to + 1 < hi ? <u32>opAt(to + 1) : 0;
  let w3: u32 = to + 2 < hi ? <u32>opAt(to + 2) : 0;
  for (let i = to - 1; i >= from; i--) {
    const code = <u32>opAt(i);
    const operands = operandCount(code);
    // The hash of nextLinks in plan.ts (which says why it mixes once).
    let h: u32 = (code + 1) * 0xcc9e2d51;
    if (operands > 0) h ^= rotl<u32>(<u32>(i - argA(i)) * 0x9e3779b1, 7);
    if (operands > 1) h ^= rotl<u32>(<u32>(i - argB(i)) * 0x7feb352d, 19);
    if (operands > 2) h ^= <u32>(i - argA(i - 1)) * 0x846ca68b;
    h = (h ^ (h >>> 15)) * 0x2c1b3c6d;
    h ^= h >>> 16;
    const slot = <usize>(h & mask) << 2;
    const k = <usize>(i - lo) << 2;
    store<i32>(strict + k, load<i32>(lastStrict + slot));
    store<i32>(lastStrict + slot, i);
    let wh: u32 = (code | (w1 << 8) | (w2 << 16) | (w3 << 24)) * 0x9e3779b1;
    wh ^= wh >>> 16;
    const wslot = <usize>(wh & mask) << 2;
    store<i32>(window + k, load<i32>(lastWindow + wslot));
    store<i32>(lastWindow + wslot, i);
    w3 = w2; w2 = w1; w1 = code;
  }
}

// @ts-ignore: decorator
@inline function operandOf(i: i32, k: i32): i32 {
  return k == 0 ? argA(i) : k == 1 ? argB(i) : argA(i - 1);
}

// @ts-ignore: decorator
@inline function linksTableSize(nodes: i32): i32 {
  let size = 16;
  while (size < nodes) size <<= 1;
  return size;
}

// The search's verification budget (planSegments sets it; plan.ts says why there is one).
let budget: i64 = 0;

// How many times the `period` nodes from `pos` repeat, as `repetitions` in plan.ts, remembering
// where the period failed in `failsUntil`; `strides` is scratch.
function repetitions(pos: i32, period: i32, to: i32, failsUntil: usize, strides: usize): i32 {
  // Most candidates fail on an op within the first period (the branchy loss: 7,600 of 8,500, most
  // of them periods of 200 nodes or more, about 230 nodes in). The ops are compared first, eight
  // at a time, and the strides taken only where the whole period matches.
  const first = opBase + <usize>pos, second = first + <usize>period;
  let m = 0;
  while (m + 8 <= period && load<u64>(first + <usize>m) == load<u64>(second + <usize>m)) m += 8;
  while (m < period && load<u8>(first + <usize>m) == load<u8>(second + <usize>m)) m++;
  // Charged for the nodes compared, as in plan.ts.
  if (m < period) {
    budget -= m + 1;
    store<i32>(failsUntil + (<usize>period << 2), pos + m);
    return 1;
  }
  budget -= period;
  for (let s = 0; s < period; s++) {
    const i = pos + s, j = i + period;
    const code = opAt(i);
    const n = operandCount(code);
    const d = strides + <usize>(12 * s);
    if (n > 0) store<i32>(d, argA(j) - argA(i));
    if (n > 1) store<i32>(d, argB(j) - argB(i), 4);
    if (n > 2) store<i32>(d, argA(j - 1) - argA(i - 1), 8);
  }
  let t = 2;
  for (; pos + (t + 1) * period <= to && budget > 0; t++) {
    budget -= period;
    for (let s = 0, j = pos + t * period; s < period; s++, j++) {
      const i = j - period;
      const code = opAt(j);
      if (opAt(i) != code) {
        if (t == 2) store<i32>(failsUntil + (<usize>period << 2), i);
        return t;
      }
      const n = operandCount(code);
      if (n == 0) continue;
      const d = strides + <usize>(12 * s);
      if (argA(j) - argA(i) != load<i32>(d) || (n > 1 && argB(j) - argB(i) != load<i32>(d, 4)) ||
        (n > 2 && argA(j - 1) - argA(i - 1) != load<i32>(d, 8))) {
        if (t == 2) store<i32>(failsUntil + (<usize>period << 2), i - period);
        return t;
      }
    }
  }
  return t;
}

/** The top-level search of `planSegments` in src/wasm/codegen/plan.ts, step for step (the same
 *  candidates, verification budget and remembered failures), so both give the same segments; its
 *  sizes come from there. Scratch at `at`: the links (`linkBytes`), remembered failures (i32 ×
 *  maxPeriod + 1), strides (i32 × 3·maxPeriod), then the segments as (start, period, count) i32
 *  triples, at most `outCap`. Returns how many, -1 when more than `maxSlots` nodes stay straight
 *  code (or a custom op is found), -2 when `outCap` is too small. */
export function planSegments(from: i32, to: i32, maxSlots: i32, at: usize, linkBytes: i32, maxPeriod: i32, chunk: i32, outCap: i32): i32 {
  for (let i = from; i < to; i++) if (opAt(i) == Op.Custom) return -1;
  prepareOperandCounts();
  searchTo = to;
  searchMaxSlots = maxSlots;
  searchAt = at;
  searchMaxPeriod = maxPeriod;
  searchChunk = chunk;
  searchOutCap = outCap;
  searchSpan = chunk + maxPeriod + 3;
  searchFailsUntil = at + <usize>linkBytes;
  searchStrides = searchFailsUntil + ((<usize>(maxPeriod + 1) << 2) + 7 & ~7);
  searchOut = searchStrides + <usize>(12 * maxPeriod);
  memory.fill(searchFailsUntil, 0xff, <usize>(maxPeriod + 1) << 2);
  searchLinksFrom = from;
  // One window where one more chunk would reach the end (firstLinksEnd in plan.ts).
  searchLinksTo = to - from <= chunk + searchSpan ? to : from + searchSpan;
  nextLinks(searchLinksFrom, searchLinksTo, at, linksTableSize(searchLinksTo - searchLinksFrom));
  searchWindow = at + (<usize>(searchLinksTo - searchLinksFrom) << 2);
  budget = 64 * <i64>(to - from) + (1 << 20);
  searchFrom = from;
  for (let k = 0; k < KNOWN_BODIES; k++) store<i32>(knownPeriods + (<usize>k << 2), 0);
  knownNext = 0;
  for (let k = 0; k < SEEN_LOOPS; k++) store<i32>(seenPeriods + (<usize>k << 2), 0);
  seenNext = 0;
  shortUntil = from;
  searchSegments = 0;
  searchSlots = 0;
  searchRunStart = from;
  searchPos = from;
  // In short calls, as the passes above: as one call, the search ran in V8's baseline code from
  // start to end (the branchy loss's first compile: 5-6 ms of it against 2 warm). With the link
  // tables at one entry per node, the first search of that tape went from 5.1 to 4.5 ms (medians
  // of 20 fresh processes each, alternating; bench/codegen-cliffs.ts --mode=phases).
  while (searchPos < to) {
    const found = searchUntil(searchPos + SEARCH_STEP);
    if (found < 0) return found;
  }
  const segments = searchSegments, runStart = searchRunStart;
  if (runStart < to) {
    if (segments + 1 > outCap) return -2;
    const p = searchOut + <usize>(12 * segments);
    store<i32>(p, runStart); store<i32>(p, to - runStart, 4); store<i32>(p, 1, 8);
    return segments + 1;
  }
  return segments;
}

/** SHORT_RUN of src/wasm/codegen/plan.ts. */
// @ts-ignore: decorator
@inline const SHORT_RUN: i32 = 32;

/** KNOWN_BODIES and KNOWN_MIN_PERIOD of src/wasm/codegen/plan.ts. */
// @ts-ignore: decorator
@inline const KNOWN_BODIES: i32 = 4;
// @ts-ignore: decorator
@inline const KNOWN_MIN_PERIOD: i32 = 8;

// The known bodies (plan.ts says what they are): where each starts and its period (0: none yet).
const knownStarts = memory.data(4 * KNOWN_BODIES);
const knownPeriods = memory.data(4 * KNOWN_BODIES);
let knownNext = 0;

// Remembers the loop at `start` (true where its period is new): remember in plan.ts.
function remember(start: i32, period: i32, from: i32, to: i32): bool {
  if (period < KNOWN_MIN_PERIOD) return false;
  const head = knownAt(start, from, to);
  if (head > 0 && head < period) return false;
  let k = 0;
  while (k < KNOWN_BODIES && load<i32>(knownPeriods + (<usize>k << 2)) != period) k++;
  const fresh = k == KNOWN_BODIES;
  if (fresh) {
    k = knownNext;
    knownNext = (knownNext + 1) % KNOWN_BODIES;
    store<i32>(knownPeriods + (<usize>k << 2), period);
  }
  store<i32>(knownStarts + (<usize>k << 2), start);
  return fresh;
}

// The shortest known body the nodes from `pos` repeat before `end`, or 0 (knownAt in plan.ts).
function knownAt(pos: i32, from: i32, end: i32): i32 {
  let best = 0;
  for (let k = 0; k < KNOWN_BODIES; k++) {
    const period = load<i32>(knownPeriods + (<usize>k << 2)), start = load<i32>(knownStarts + (<usize>k << 2));
    if (period == 0 || (best > 0 && period >= best) || pos + period > end) continue;
    // Inputs at one shift, as in plan.ts.
    let s = 0, shift = 0, shifted = false;
    for (; s < period; s++) {
      const i = start + s, j = pos + s, code = opAt(i);
      if (opAt(j) != code) break;
      const n = operandCount(code);
      let m = 0;
      for (; m < n; m++) {
        const oi = operandOf(i, m), oj = operandOf(j, m);
        if (oi >= from ? i - oi != j - oj : oj >= from || (shifted && oj - oi != shift)) break;
        if (oi < from) {
          shift = oj - oi;
          shifted = true;
        }
      }
      if (m < n) break;
    }
    budget -= s + 1;
    if (s == period) best = period;
  }
  return best;
}

/** SEEN_LOOPS of src/wasm/codegen/plan.ts: the signatures of the latest loops and short
 *  candidates, with their count (-1 once seen with two). */
// @ts-ignore: decorator
@inline const SEEN_LOOPS: i32 = 8;
const seenStarts = memory.data(4 * SEEN_LOOPS);
const seenPeriods = memory.data(4 * SEEN_LOOPS);
const seenCounts = memory.data(4 * SEEN_LOOPS);
let seenNext = 0, shortUntil = 0;

// Whether the loop at `pos` has a signature seen with another count; remembers it (plan.ts).
function countsVary(pos: i32, period: i32, count: i32): bool {
  for (let k = 0; k < SEEN_LOOPS; k++) {
    if (load<i32>(seenPeriods + (<usize>k << 2)) != period) continue;
    const start = load<i32>(seenStarts + (<usize>k << 2));
    let s = 0;
    for (; s < period; s++) {
      const i = start + s, j = pos + s, n = operandCount(opAt(i));
      if (opAt(j) != opAt(i)) break;
      let m = 0;
      while (m < n && operandOf(i + period, m) - operandOf(i, m) == operandOf(j + period, m) - operandOf(j, m)) m++;
      if (m < n) break;
    }
    budget -= s + 1;
    if (s < period) continue;
    if (load<i32>(seenCounts + (<usize>k << 2)) == count) return false;
    store<i32>(seenCounts + (<usize>k << 2), -1);
    return true;
  }
  store<i32>(seenStarts + (<usize>seenNext << 2), pos);
  store<i32>(seenPeriods + (<usize>seenNext << 2), period);
  store<i32>(seenCounts + (<usize>seenNext << 2), count);
  seenNext = (seenNext + 1) % SEEN_LOOPS;
  return false;
}

/** TILED_LOOP_COUNT of src/wasm/codegen/plan.ts. */
// @ts-ignore: decorator
@inline const TILED_LOOP_COUNT: i32 = 8;

// Whether nodes [lo, hi) are two or more known bodies in a row, or one whose first two
// repetitions read inputs elsewhere than its remembered loop did (tiles in plan.ts).
function tiles(lo: i32, hi: i32, from: i32): bool {
  let bodies = 0;
  for (let q = lo; q < hi; bodies++) {
    const p = knownAt(q, from, hi);
    if (p == 0) return false;
    q += p;
  }
  return bodies > 1 || readsInputsElsewhere(lo, hi - lo, from);
}

function readsInputsElsewhere(lo: i32, period: i32, from: i32): bool {
  let k = 0;
  while (load<i32>(knownPeriods + (<usize>k << 2)) != period) k++;
  const start = load<i32>(knownStarts + (<usize>k << 2));
  for (let s = 0; s < 2 * period; s++) {
    const n = operandCount(opAt(lo + s));
    for (let m = 0; m < n; m++) {
      const o = operandOf(lo + s, m);
      if (o < from && o != operandOf(start + s, m)) return true;
    }
  }
  return false;
}

// Writes segment (start, period, count) at `segments` of the search's output; false where the
// output has no room.
function pushSegment(start: i32, period: i32, count: i32): bool {
  if (searchSegments + 1 > searchOutCap) return false;
  const p = searchOut + <usize>(12 * searchSegments++);
  store<i32>(p, start); store<i32>(p, period, 4); store<i32>(p, count, 8);
  return true;
}

// Straight code [lo, hi), cut at known bodies with `split`, counting what stays straight past
// SHORT_RUN (pushStraight in plan.ts); false where the output has no room.
function pushStraight(lo: i32, hi: i32, split: bool): bool {
  let start = lo;
  for (let q = lo; split && q < hi && budget > 0;) {
    const piece = knownAt(q, searchFrom, hi);
    if (piece == 0) {
      q++;
      continue;
    }
    if (start < q && !pushStraight(start, q, false)) return false;
    if (!pushSegment(q, piece, 1)) return false;
    q += piece;
    start = q;
  }
  if (start == hi) return true;
  if (!pushSegment(start, hi - start, 1)) return false;
  if (hi - start > SHORT_RUN) searchSlots += hi - start;
  return true;
}

/** Positions the search advances over per call of `searchUntil` (a loop found may take it past). */
// @ts-ignore: decorator
@inline const SEARCH_STEP: i32 = 4096;

// The search's state between calls of searchUntil (a class instance would need the runtime).
let searchTo = 0, searchMaxSlots = 0, searchMaxPeriod = 0, searchChunk = 0, searchOutCap = 0, searchSpan = 0;
let searchAt: usize = 0, searchFailsUntil: usize = 0, searchStrides: usize = 0, searchOut: usize = 0, searchWindow: usize = 0;
let searchLinksFrom = 0, searchLinksTo = 0, searchSegments = 0, searchSlots = 0, searchRunStart = 0, searchPos = 0, searchFrom = 0;

// The search from `searchPos` until it reaches `limit` or the end: 0, or -1 / -2 as planSegments.
// The segments written and the straight code counted are the globals (pushStraight writes them).
function searchUntil(limit: i32): i32 {
  const to = searchTo, maxSlots = searchMaxSlots, at = searchAt, maxPeriod = searchMaxPeriod, chunk = searchChunk;
  const span = searchSpan, failsUntil = searchFailsUntil, strides = searchStrides;
  let linksFrom = searchLinksFrom, linksTo = searchLinksTo, window = searchWindow;
  let runStart = searchRunStart, pos = searchPos;
  const end = min(limit, to);
  let result = 0;
  while (pos < end) {
    let bestPeriod = 0, bestCount = 0;
    if (budget > 0) {
      if (pos >= linksFrom + chunk && linksTo < to) {
        linksFrom = pos;
        linksTo = min(to, pos + span);
        nextLinks(linksFrom, linksTo, at, linksTableSize(linksTo - linksFrom));
        window = at + (<usize>(linksTo - linksFrom) << 2);
      }
      for (let which = 0; which < 2; which++) {
        const next = which == 0 ? at : window;
        let c = load<i32>(next + (<usize>(pos - linksFrom) << 2));
        for (let hop = 0; hop < 3 && c > 0; hop++) {
          const period = c - pos;
          if (period > maxPeriod || pos + 3 * period > to) break;
          if (bestPeriod > 0 && period % bestPeriod == 0) break;
          const count = load<i32>(failsUntil + (<usize>period << 2)) < pos ? repetitions(pos, period, to, failsUntil, strides) : 1;
          if (count >= 3 && count * period > bestCount * bestPeriod) {
            bestPeriod = period;
            bestCount = count;
          }
          if (count >= 3) break;
          c = load<i32>(next + (<usize>(c - linksFrom) << 2));
        }
      }
    }
    // A loop pays off once it saves a few nodes of code (plan.ts says why); else straight code
    // may repeat a known body.
    let loop = bestCount >= 3 && (bestCount - 1) * bestPeriod >= 16;
    if (bestCount >= 3 && pos >= shortUntil) {
      if (countsVary(pos, bestPeriod, bestCount)) loop = true;
      else if (!loop) shortUntil = pos + bestPeriod * bestCount;
    }
    if (loop && bestCount < TILED_LOOP_COUNT && load<i32>(knownPeriods) != 0 && budget > 0 && tiles(pos, pos + bestPeriod, searchFrom)) loop = false;
    const piece = loop || budget <= 0 || load<i32>(knownPeriods) == 0 ? 0 : knownAt(pos, searchFrom, to);
    if (loop || piece > 0) {
      const fresh = loop && remember(pos, bestPeriod, searchFrom, to);
      if (runStart < pos && !pushStraight(runStart, pos, fresh)) { result = -2; break; }
      if (!pushSegment(pos, loop ? bestPeriod : piece, loop ? bestCount : 1)) { result = -2; break; }
      pos += loop ? bestPeriod * bestCount : piece;
      runStart = pos;
    } else {
      pos++;
    }
    if (searchSlots + (pos - runStart) > maxSlots) { result = -1; break; }
  }
  searchLinksFrom = linksFrom; searchLinksTo = linksTo; searchWindow = window;
  searchRunStart = runStart; searchPos = pos;
  return result;
}

// @ts-ignore: decorator
@inline const OTHER: i32 = 1 << 30;

// @ts-ignore: decorator
@inline const FNV_PRIME: u32 = 0x01000193;

// A multiply per item and one mix at the end, as fingerprint in shapes.ts.
// Binaryen inlines it (and repeats) into repeatsOf, whose one call runs in V8's baseline code on
// a first compile; repeatsOf in short calls of 64 segments measured no faster (the branchy loss:
// 2.5-4.9 ms either way).
function fingerprint(start: i32, period: i32, times: i32, from: i32, seeded: usize): u32 {
  const end = start + period * times;
  // A loop's first two iterations and its last (fingerprint in shapes.ts says why).
  const headEnd = min(end, start + 2 * period), tail = max(headEnd, end - period);
  let h = mix((<u32>period * 0x9e3779b1) ^ <u32>times);
  for (let i = start; i < end; i = i + 1 == headEnd ? tail : i + 1) {
    const code = opAt(i);
    h = (h ^ <u32>code ^ (<u32>load<u8>(seeded + <usize>i) << 8) ^ (<u32>load<i32>(adjBase + (<usize>i << 2)) * 0x7feb352d)) * FNV_PRIME;
    const n = operandCount(code);
    for (let q = 0; q < n; q++) {
      const o = operandOf(i, q);
      h = (h ^ (<u32>(o < from ? o : (o - start) ^ OTHER) * 0x846ca68b) ^ <u32>(opAt(o) == Op.Const)) * FNV_PRIME;
    }
  }
  return mix(h);
}

// Whether the nodes of the segment at r repeat those of the segment at s node for node, as
// `repeats` in shapes.ts. Ops, use counts and seeds compare as memory, eight bytes at a time; an
// operand's op is compared only where it lies before r (one within it is a node of r, whose op
// the first comparison matched with its copy's): reading every operand's op cost most of the
// pass (the branchy loss at 10,000 samples, 9,225 segments: 3.4 -> 3.0 ms warm). A segment of more
// than one repetition is a loop the search found, as is its repeat (the planner asks of no other
// segments), so each operand moves by a fixed stride per repetition in both: operands that repeat
// in the first two repetitions repeat in every one, and only those that lie before r at some
// repetition are read at each (3.0 -> 2.5 ms warm).
function repeats(r: i32, s: i32, period: i32, times: i32, from: i32, seeded: usize): bool {
  const delta = s - r, length = period * times;
  if (!sameBytes(opBase + <usize>r, opBase + <usize>s, length)) return false;
  if (!sameBytes(seeded + <usize>r, seeded + <usize>s, length)) return false;
  if (!sameBytes(adjBase + (<usize>r << 2), adjBase + (<usize>s << 2), length << 2)) return false;
  if (times < 2) return operandsRepeat(r, r + length, r, delta, from);
  if (!operandsRepeat(r, r + 2 * period, r, delta, from)) return false;
  for (let i = r; i < r + period; i++) {
    const n = operandCount(opAt(i));
    for (let q = 0; q < n; q++) {
      const first = operandOf(i, q), stride = operandOf(i + period, q) - first, last = first + (times - 1) * stride;
      // An input at one repetition and a node at another: the repeat's operand is the same input
      // at both (the first two agreed), or `delta` on at both, so it differs at one of them.
      if ((first < from) != (last < from)) return false;
      if (first < from || min(first, last) >= r) continue;
      for (let t = 0, o = first; t < times; t++, o += stride) {
        if (o < r && (opAt(o) == Op.Const) != (opAt(o + delta) == Op.Const)) return false;
      }
    }
  }
  return true;
}

// Whether the operands of nodes [lo, hi) of the segment at r repeat `delta` nodes on: the same
// input, or the node `delta` on, a constant where the other is one (before r: within it, the
// ops compared as memory say so).
function operandsRepeat(lo: i32, hi: i32, r: i32, delta: i32, from: i32): bool {
  for (let i = lo; i < hi; i++) {
    const n = operandCount(opAt(i));
    for (let q = 0; q < n; q++) {
      const oi = operandOf(i, q), oj = operandOf(i + delta, q);
      if (oi < from ? oj != oi : oj - oi != delta) return false;
      if (oi < r && oi >= from && (opAt(oi) == Op.Const) != (opAt(oj) == Op.Const)) return false;
    }
  }
  return true;
}

// Whether the `length` bytes at p and q are the same.
function sameBytes(p: usize, q: usize, length: i32): bool {
  let m = 0;
  while (m + 8 <= length && load<u64>(p + <usize>m) == load<u64>(q + <usize>m)) m += 8;
  if (m + 8 <= length) return false;
  while (m < length && load<u8>(p + <usize>m) == load<u8>(q + <usize>m)) m++;
  return m == length;
}

/** `repeatsOf` of src/wasm/codegen/shapes.ts, step for step: for each of `count` segments,
 *  (start, period, count) i32 triples at `at`, the latest of the `tries` latest earlier segments
 *  with its fingerprint whose nodes it repeats node for node, or -1 (always for a segment of more
 *  than `maxNodes` nodes). Writes the fingerprints (u32), the links between segments of one
 *  fingerprint and the answers (i32) after the triples, then a table of `tableSize` i32 entries
 *  (a power of two, at least twice `count`). Reads the use counts `countUses` left in the adjoint
 *  region and a byte per node at `seeded` (1: an output). Tests narrow the fingerprints with
 *  `hashMask`, so that they collide and the node-by-node check decides. */
export function repeatsOf(count: i32, at: usize, from: i32, seeded: usize, maxNodes: i32, tries: i32, tableSize: i32, hashMask: u32): void {
  prepareOperandCounts();
  repeatAt = at;
  repeatHashes = at + <usize>(12 * count);
  repeatPrevious = repeatHashes + (<usize>count << 2);
  repeatOut = repeatPrevious + (<usize>count << 2);
  repeatLatest = repeatOut + (<usize>count << 2);
  memory.fill(repeatLatest, 0xff, <usize>tableSize << 2);
  repeatMask = <u32>(tableSize - 1);
  repeatFrom = from;
  repeatSeeded = seeded;
  repeatMaxNodes = maxNodes;
  repeatTries = tries;
  repeatHashMask = hashMask;
  // In short calls, as the passes above: as one call, the pass ran in V8's baseline code from start
  // to end, the largest of the core's passes in the branchy loss's first compile.
  for (let k = 0; k < count; k += REPEAT_STEP) repeatsUntil(k, min(count, k + REPEAT_STEP));
}

/** Segments per call of `repeatsUntil`. */
// @ts-ignore: decorator
@inline const REPEAT_STEP: i32 = 64;

// repeatsOf's state between calls of repeatsUntil.
let repeatAt: usize = 0, repeatHashes: usize = 0, repeatPrevious: usize = 0, repeatOut: usize = 0, repeatLatest: usize = 0, repeatSeeded: usize = 0;
let repeatMask: u32 = 0, repeatHashMask: u32 = 0;
let repeatFrom = 0, repeatMaxNodes = 0, repeatTries = 0;

// Segments [k0, k1) of repeatsOf.
function repeatsUntil(k0: i32, k1: i32): void {
  const at = repeatAt, hashes = repeatHashes, previous = repeatPrevious, out = repeatOut, latest = repeatLatest, seeded = repeatSeeded;
  const mask = repeatMask, hashMask = repeatHashMask, from = repeatFrom, maxNodes = repeatMaxNodes, tries = repeatTries;
  for (let k = k0; k < k1; k++) {
    const p = at + <usize>(12 * k);
    const start = load<i32>(p), period = load<i32>(p, 4), times = load<i32>(p, 8);
    let found = -1;
    if (<i64>period * times <= maxNodes) {
      const h = fingerprint(start, period, times, from, seeded) & hashMask;
      store<u32>(hashes + (<usize>k << 2), h);
      // Open addressing: the slot of this fingerprint's latest segment, or an empty one.
      let slot = mix(h) & mask, c = load<i32>(latest + (<usize>slot << 2));
      while (c >= 0 && load<u32>(hashes + (<usize>c << 2)) != h) {
        slot = (slot + 1) & mask;
        c = load<i32>(latest + (<usize>slot << 2));
      }
      store<i32>(previous + (<usize>k << 2), c);
      store<i32>(latest + (<usize>slot << 2), k);
      for (let t = 0; t < tries && c >= 0; t++, c = load<i32>(previous + (<usize>c << 2))) {
        const q = at + <usize>(12 * c);
        if (load<i32>(q, 4) == period && load<i32>(q, 8) == times && repeats(load<i32>(q), start, period, times, from, seeded)) {
          found = c;
          break;
        }
      }
    } else {
      store<u32>(hashes + (<usize>k << 2), 0);
      store<i32>(previous + (<usize>k << 2), -1);
    }
    store<i32>(out + (<usize>k << 2), found);
  }
}
