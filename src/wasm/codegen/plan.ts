// The loop planner: cuts a tape's nodes into segments that repeat with a period (loops) and
// straight code, finds the strides of their operands, and describes each segment as a loop body
// (its slots, stride groups and which values and adjoints stay in locals), the plan the emitters
// turn into wasm. Also says why a tape gets no plan.
import { Op, OP_TABLE } from '../../ops.ts';
import type { TapeViews } from '../../backend.ts';
import { VARYING, describeBodies, foldShapes, repeatsOf, type Shape } from './shapes.ts';

/** Most nodes of generated code per tape, after folding loops (about 60 bytes of wasm each). Past
 *  this the interpreter runs: straight-line code that long costs several times its recording to
 *  generate and runs its first gradients slower than the interpreter (README, Which tapes stay
 *  interpreted). */
export const MAX_SLOTS = 1 << 14;

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

export function operand(views: TapeViews, i: number, k: number): number {
  return k === 0 ? views.a[i]! : k === 1 ? views.b[i]! : views.a[i - 1]!;
}

export function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

// Candidate periods come from next-occurrence links over a window of the tape: strict[i - lo] is
// the next node after i with the same op and operand offsets, window[i - lo] the next one where
// the same four ops start (-1: none in the window). Hash collisions only give wrong candidates,
// and every candidate is verified. Built per chunk (of `planSearch.chunk` nodes, with room for
// a period and the three ops a window link reads after it: the search follows links only to
// nodes within a period of the node it is at, and those links are the same in any longer
// window; room for three periods linked 1.75x the tape's nodes instead of 1.25x), so planning a
// tape that folds into a few long loops touches little more than the chunks where loops start.
// A tape that one more chunk would cover to its end is linked in one window: a second would
// link most of the first one's nodes again (the branchy
// loss: 125 k nodes in one window instead of 115 k and 60 k; its first loop search 4.7 -> 4.0 ms,
// medians of 6 fresh processes each, alternating).

/** Nodes one window of links covers at most. */
export function linksSpan(): number {
  return planSearch.chunk + planSearch.maxPeriod + 3;
}

/** Where the search's first window of links over nodes [from, to) ends (see above). */
export function firstLinksEnd(from: number, to: number): number {
  return to - from <= planSearch.chunk + linksSpan() ? to : from + linksSpan();
}

/** Most nodes one call of `nextLinks` covers in a search over `nodes` nodes. */
export function linksRoom(nodes: number): number {
  return Math.min(nodes, planSearch.chunk + linksSpan());
}

const rotl = (x: number, r: number): number => (x << r) | (x >>> (32 - r));

export interface Links { strict: Int32Array; window: Int32Array }
/** Computes the links of nodes [lo, hi) of the tape being planned: `nextLinks`, or the core's pass
 *  that gives the same links (assembly/planning.ts). */
export type LinksOf = (lo: number, hi: number) => Links;

/** Entries per hash table of `nextLinks` over `nodes` nodes (a power of two, at least one per
 *  node). Twice as many gave the same plans on the bench's tapes, but the tables are fresh pages,
 *  each faulted in, and larger than the caches: the branchy loss's first loop search faulted in
 *  770 pages against 512 now (with the core's search in short calls, 5.1 against 4.5 ms: medians
 *  of 20 fresh processes each, alternating; its first call as a whole moved within the noise). */
export function linksTableSize(nodes: number): number {
  return 1 << Math.max(4, Math.ceil(Math.log2(nodes)));
}

export function nextLinks(views: TapeViews, lo: number, hi: number): Links {
  const { op, a, b } = views;
  const size = linksTableSize(hi - lo);
  const mask = size - 1;
  const lastStrict = new Int32Array(size).fill(-1);
  const lastWindow = new Int32Array(size).fill(-1);
  const strict = new Int32Array(hi - lo);
  const window = new Int32Array(hi - lo);
  let w1 = 0, w2 = 0, w3 = 0; // the ops after i, for the window key
  for (let i = hi - 1; i >= lo; i--) {
    const code = op[i]!;
    const n = OPERANDS[code]!;
    // Each term multiplied on its own and one mix at the end: a mix after each term made the
    // hashing a chain of dependent multiplies (the core's links of the branchy loss at 10,000
    // samples: 5.5 -> 2.8 ms).
    let h = Math.imul(code + 1, 0xcc9e2d51);
    if (n > 0) h ^= rotl(Math.imul(i - a[i]!, 0x9e3779b1), 7);
    if (n > 1) h ^= rotl(Math.imul(i - b[i]!, 0x7feb352d), 19);
    if (n > 2) h ^= Math.imul(i - a[i - 1]!, 0x846ca68b);
    h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
    h = (h ^ (h >>> 16)) & mask;
    strict[i - lo] = lastStrict[h]!;
    lastStrict[h] = i;
    h = Math.imul(code | (w1 << 8) | (w2 << 16) | (w3 << 24), 0x9e3779b1);
    h = (h ^ (h >>> 16)) & mask;
    window[i - lo] = lastWindow[h]!;
    lastWindow[h] = i;
    w3 = w2; w2 = w1; w1 = code;
  }
  return { strict, window };
}

/** How planSegments searches: the longest period, the nodes per chunk of links, and whether it
 *  remembers where a period failed. The core's search (assembly/planning.ts) takes the sizes from
 *  here; tests make them small, and turn `rememberFailures` off to check that it changes no plan. */
export const planSearch = { maxPeriod: 1 << 14, chunk: 1 << 16, rememberFailures: true };

/** Straight runs between two loops of at most this many nodes count as no code in the loop
 *  search (planSegments): data-dependent code repeats such runs in the order of its data (the
 *  branchy loss at 10,000 samples: 3,900 runs of 5-6 nodes between its inner loops, 21 k nodes,
 *  518 nodes of code once folded into shapes), and planSweeps refuses a plan whose distinct ones
 *  pass MAX_SLOTS before describing any. Longer runs count, so code without loops is refused after
 *  MAX_SLOTS nodes of it, as before (a multiple of MAX_SLOTS for all straight code made such tapes'
 *  first calls 3-4x slower, all to be refused: a probe). The core's search
 *  (assembly/planning.ts) uses the same. */
export const SHORT_RUN = 32;

/** Loop bodies the top-level search remembers (the latest loop of each of this many periods, of at
 *  least KNOWN_MIN_PERIOD nodes): straight code that repeats one, node for node, is cut into a
 *  body of its own, which counts as no code in the search. Data-dependent code writes such
 *  bodies between its loops: a loss whose per-sample branch follows the values (the Huber loss at
 *  1,000 samples) has loops where samples of one branch follow each other and straight runs of
 *  both branches' samples between them, which as runs of up to 270 nodes each made 30 distinct
 *  bodies (1,935 nodes of code) and at 10,000 samples passed MAX_SLOTS (interpreted); cut at the
 *  samples, they fold into a few shapes. The core's search (assembly/planning.ts) does the same. */
export const KNOWN_BODIES = 4;
export const KNOWN_MIN_PERIOD = 8;

/** The top-level search remembers the latest this many loops and short candidates (three or more
 *  repetitions that save under 16 nodes of code) by signature (period, ops and every operand's
 *  stride) with their count, and takes a short loop whose signature one of them had with another
 *  count. Items whose inner loops run as many times as the data say (rows of 5-29 features,
 *  polynomials of data-chosen degree) wrote their short loops as straight code, a body per
 *  length: rows of a sparse least squares planned into 955 nodes of code in 22 functions, 38 in
 *  4 now, and Horner polynomials of 2-7 terms came near or past MAX_SLOTS (14,953 nodes of code
 *  at 2,000 samples, 2,989 now; 20,922 at 1,200 with a branch per sample: interpreted). Their
 *  steady replays can be slower than the straight code's (a call and a loop of a few iterations
 *  per sample: the polynomials 3.3 against 2.1-3.6 ns/node). A short loop of one count
 *  throughout stays straight code, which folds as it is (a softmax loss's sum over its classes
 *  as a loop of its own replayed 10-20% slower). The core's search (assembly/planning.ts) does
 *  the same. */
export const SEEN_LOOPS = 8;

/** A loop of fewer iterations whose body is two or more known bodies in a row (samples of both
 *  branches in a pattern the labels happen to repeat) is cut into those bodies instead: each such
 *  pattern had a description and code of its own (the branchy loss at 10,000 samples: 638 nodes
 *  of code, 159 now; its first call 2.65x -> 1.93x and 2.49x -> 2.06x its recording, medians of
 *  5 fresh processes each in two rounds, alternating; steady replays about 5% slower, 6,154 steps
 *  against 5,313). From this many iterations a loop saves more calls than its code costs. So is
 *  such a loop of one known body whose first two repetitions read inputs elsewhere than the loop
 *  it was remembered from (a table's points whose segments step evenly: a shape per stride and
 *  place, 839 nodes of code in 92 functions for 3,000 points, 29 in 4 now). */
export const TILED_LOOP_COUNT = 8;

/**
 * Cuts nodes [from, to) into periodic and straight segments, or returns null when more than
 * `maxSlots` nodes stay straight code (short runs between loops aside, see SHORT_RUN) or the
 * tape holds a custom op. Greedy: at each node, the candidate periods are the distances to the
 * next nodes with the same op and operand offsets (an outer loop) and with the same next four
 * ops (an inner loop); the one covering the most nodes wins.
 */
export function planSegments(
  views: TapeViews, from: number, to: number, maxSlots = MAX_SLOTS, outer: readonly Int32Array[] = [],
  linksOf: LinksOf = (lo, hi) => nextLinks(views, lo, hi),
): Segment[] | null {
  const { op, a, b } = views;
  // Inside a loop body, a repeat must also move its operands by the same strides over every
  // enclosing loop (outer[l]: 3 per node from `from`), or the nest would not be affine.
  const sameOuter = (i: number, j: number, n: number): boolean => {
    for (const strides of outer) {
      for (let k = 0; k < n; k++) if (strides[3 * (i - from) + k] !== strides[3 * (j - from) + k]) return false;
    }
    return true;
  };
  // A native scan: this runs once per compile, before V8 has optimised the planner.
  if (op.subarray(from, to).includes(Op.custom)) return null;
  const { maxPeriod, chunk } = planSearch, span = linksSpan();
  let linksFrom = from, linksTo = firstLinksEnd(from, to);
  let links = linksOf(linksFrom, linksTo);
  let strides = new Int32Array(0);
  // Verification work is bounded: a tape made to nearly repeat everywhere must not make
  // planning quadratic. Past the budget no more periods are looked for.
  let budget = 64 * (to - from) + (1 << 20);

  // How many times the `period` nodes from `pos` repeat (at least 1) with every op equal and every
  // operand moving by the same stride from one repetition to the next.
  const nested = outer.length > 0;
  // Starts a period is known to fail from: ops that differ at nodes m and m + period, or strides
  // that differ between (m, m + period) and (m + period, m + 2·period), leave fewer than three
  // repetitions to every start up to m. Long straight stretches whose samples nearly repeat (the
  // branchy loss) otherwise checked the same few dozen nodes again from every start.
  const failsUntil = nested || !planSearch.rememberFailures ? null : new Int32Array(maxPeriod + 1).fill(-1);
  const repetitions = (pos: number, period: number): number => {
    if (strides.length < 3 * period) strides = new Int32Array(3 * period);
    const d = strides, operands = OPERANDS;
    // Charged for the nodes compared: a candidate that fails early (the next item of another
    // length, in code whose items' lengths follow the data) costs that much, not its period.
    for (let s = 0; s < period; s++) {
      const i = pos + s, j = i + period;
      if (op[j] !== op[i]) {
        budget -= s + 1;
        if (failsUntil) failsUntil[period] = i;
        return 1;
      }
      const n = operands[op[i]!]!;
      if (nested && !sameOuter(i, j, n)) {
        budget -= s + 1;
        return 1;
      }
      if (n > 0) d[3 * s] = a[j]! - a[i]!;
      if (n > 1) d[3 * s + 1] = b[j]! - b[i]!;
      if (n > 2) d[3 * s + 2] = a[j - 1]! - a[i - 1]!;
    }
    budget -= period;
    let t = 2;
    for (; pos + (t + 1) * period <= to && budget > 0; t++) {
      budget -= period;
      for (let s = 0, j = pos + t * period; s < period; s++, j++) {
        const i = j - period;
        if (op[j] !== op[i]) {
          if (failsUntil && t === 2) failsUntil[period] = i;
          return t;
        }
        const n = operands[op[j]!]!;
        if (n === 0) continue;
        if (a[j]! - a[i]! !== d[3 * s] || (n > 1 && b[j]! - b[i]! !== d[3 * s + 1]) || (n > 2 && a[j - 1]! - a[i - 1]! !== d[3 * s + 2])) {
          if (failsUntil && t === 2) failsUntil[period] = i - period;
          return t;
        }
        if (nested && !sameOuter(i, j, n)) return t;
      }
    }
    return t;
  };

  // Known bodies (KNOWN_BODIES): where each starts and its period (0: none yet). Inside a loop
  // body there are none: the search there is for inner loops only.
  const knownStart = new Int32Array(KNOWN_BODIES), knownPeriod = new Int32Array(KNOWN_BODIES);
  let knownNext = 0;
  // Remembers the loop at `start` (true where its period is new). A body that starts with a
  // shorter known one is several bodies in a row (samples of two branches, alternating).
  const remember = (start: number, period: number): boolean => {
    if (nested || period < KNOWN_MIN_PERIOD) return false;
    const head = knownAt(start, to);
    if (head > 0 && head < period) return false;
    let k = knownPeriod.indexOf(period);
    const fresh = k < 0;
    if (fresh) {
      k = knownNext;
      knownNext = (knownNext + 1) % KNOWN_BODIES;
      knownPeriod[k] = period;
    }
    knownStart[k] = start;
    return fresh;
  };
  // The shortest known body the nodes from `pos` repeat (the same ops, inputs and distances to
  // every other operand) before `end`, or 0.
  const knownAt = (pos: number, end: number): number => {
    let best = 0;
    for (let k = 0; k < KNOWN_BODIES; k++) {
      const period = knownPeriod[k]!, start = knownStart[k]!;
      if (period === 0 || (best > 0 && period >= best) || pos + period > end) continue;
      // Inputs may be read at another place, all at one shift (an item that reads the parameters
      // its data select: a segment of an interpolation table, an embedding's row).
      let s = 0, shift = 0, shifted = false;
      for (; s < period; s++) {
        const i = start + s, j = pos + s, code = op[i]!;
        if (op[j] !== code) break;
        const n = OPERANDS[code]!;
        let m = 0;
        for (; m < n; m++) {
          const oi = operand(views, i, m), oj = operand(views, j, m);
          if (oi >= from ? i - oi !== j - oj : oj >= from || (shifted && oj - oi !== shift)) break;
          if (oi < from) {
            shift = oj - oi;
            shifted = true;
          }
        }
        if (m < n) break;
      }
      budget -= s + 1;
      if (s === period) best = period;
    }
    return best;
  };

  // Whether nodes [lo, hi) are two or more known bodies in a row, or one known body whose first
  // two repetitions read inputs elsewhere than the loop it was remembered from did (items that
  // read the parameters their data select, which happen to step evenly: a table's points).
  const tiles = (lo: number, hi: number): boolean => {
    let bodies = 0;
    for (let q = lo; q < hi; bodies++) {
      const p = knownAt(q, hi);
      if (p === 0) return false;
      q += p;
    }
    return bodies > 1 || readsInputsElsewhere(lo, hi - lo);
  };
  const readsInputsElsewhere = (lo: number, period: number): boolean => {
    const start = knownStart[knownPeriod.indexOf(period)]!;
    for (let s = 0; s < 2 * period; s++) {
      for (let m = 0, n = OPERANDS[op[lo + s]!]!; m < n; m++) {
        const o = operand(views, lo + s, m);
        if (o < from && o !== operand(views, start + s, m)) return true;
      }
    }
    return false;
  };
  // Signatures of the latest SEEN_LOOPS loops and short candidates: start, period and count (-1
  // once seen with two counts). A signature is the same ops with every operand moving by the same
  // stride from one repetition to the next.
  const seenStart = new Int32Array(SEEN_LOOPS), seenPeriod = new Int32Array(SEEN_LOOPS), seenCount = new Int32Array(SEEN_LOOPS);
  let seenNext = 0, shortUntil = from;
  // Whether the loop of `count` repetitions at `pos` is one whose signature has been seen with
  // another count; remembers it either way.
  const countsVary = (pos: number, period: number, count: number): boolean => {
    for (let k = 0; k < SEEN_LOOPS; k++) {
      if (seenPeriod[k] !== period) continue;
      const start = seenStart[k]!;
      let s = 0;
      for (; s < period; s++) {
        const i = start + s, j = pos + s, n = OPERANDS[op[i]!]!;
        if (op[j] !== op[i]) break;
        let m = 0;
        while (m < n && operand(views, i + period, m) - operand(views, i, m) === operand(views, j + period, m) - operand(views, j, m)) m++;
        if (m < n) break;
      }
      budget -= s + 1;
      if (s < period) continue;
      if (seenCount[k] === count) return false;
      seenCount[k] = -1;
      return true;
    }
    seenStart[seenNext] = pos;
    seenPeriod[seenNext] = period;
    seenCount[seenNext] = count;
    seenNext = (seenNext + 1) % SEEN_LOOPS;
    return false;
  };
  const segments: Segment[] = [];
  let slots = 0;
  // Straight code [lo, hi), cut at known bodies with `split` (a body newly known may occur in the
  // run before its loop: the samples before a loss's first loop); what stays straight past
  // SHORT_RUN counts.
  const pushStraight = (lo: number, hi: number, split: boolean): void => {
    let start = lo;
    for (let q = lo; split && q < hi && budget > 0;) {
      const piece = knownAt(q, hi);
      if (piece === 0) {
        q++;
        continue;
      }
      if (start < q) pushStraight(start, q, false);
      segments.push({ start: q, period: piece, count: 1 });
      q += piece;
      start = q;
    }
    if (start === hi) return;
    segments.push({ start, period: hi - start, count: 1 });
    if (hi - start > SHORT_RUN) slots += hi - start;
  };
  let runStart = from;
  let pos = from;
  while (pos < to) {
    let bestPeriod = 0, bestCount = 0;
    if (budget > 0) {
      // A window that reaches the end of the tape already links every node after pos.
      if (pos >= linksFrom + chunk && linksTo < to) {
        linksFrom = pos;
        linksTo = Math.min(to, pos + span);
        links = linksOf(linksFrom, linksTo);
      }
      for (const next of [links.strict, links.window]) {
        // Further hops only matter while the nearer candidates fail (they would find multiples).
        for (let hop = 0, c = next[pos - linksFrom]!; hop < 3 && c > 0; hop++, c = next[c - linksFrom]!) {
          const period = c - pos;
          if (period > maxPeriod || pos + 3 * period > to) break;
          if (bestPeriod > 0 && period % bestPeriod === 0) break;
          const count = failsUntil !== null && failsUntil[period]! >= pos ? 1 : repetitions(pos, period);
          if (count >= 3 && count * period > bestCount * bestPeriod) {
            bestPeriod = period;
            bestCount = count;
          }
          if (count >= 3) break;
        }
      }
    }
    // A loop pays off once it saves a few nodes of code, or where its signature recurs with
    // another count (SEEN_LOOPS). Two repetitions are not taken: any two runs of equal ops
    // "repeat" with strides that are mere differences, and taking them can hide a real loop that
    // starts a little later. Else straight code may repeat a known body.
    let loop = bestCount >= 3 && (bestCount - 1) * bestPeriod >= 16;
    // Not inside a short run left as straight code, whose later phases repeat its signature
    // with fewer repetitions.
    if (bestCount >= 3 && !nested && pos >= shortUntil) {
      if (countsVary(pos, bestPeriod, bestCount)) loop = true;
      else if (!loop) shortUntil = pos + bestPeriod * bestCount;
    }
    if (loop && bestCount < TILED_LOOP_COUNT && knownPeriod[0] !== 0 && budget > 0 && tiles(pos, pos + bestPeriod)) loop = false;
    const piece = loop || budget <= 0 || knownPeriod[0] === 0 ? 0 : knownAt(pos, to);
    if (loop || piece > 0) {
      const fresh = loop && remember(pos, bestPeriod);
      if (runStart < pos) pushStraight(runStart, pos, fresh);
      segments.push(loop ? { start: pos, period: bestPeriod, count: bestCount } : { start: pos, period: piece, count: 1 });
      pos += loop ? bestPeriod * bestCount : piece;
      runStart = pos;
    } else {
      pos++;
    }
    if (slots + (pos - runStart) > maxSlots) return null;
  }
  if (runStart < to) segments.push({ start: runStart, period: to - runStart, count: 1 });
  return segments;
}

/** An operand (or a node itself) in a loop nest: node `first` + Σ t_l · strides[l] at iteration
 *  t_l of each enclosing loop l (outermost first, this body's loop last). */
export interface Ref {
  first: number;
  strides: number[];
  /** The node is a constant at every iteration (no adjoint goes to it). */
  constant: boolean;
  /** ...with this value at every iteration (emitted as an immediate), else undefined. */
  value: number | undefined;
  group: number;
  /** The slot of the same iteration this operand is (a node computed earlier in the body), or -1. */
  slot: number;
  /** The slot whose value of the previous iteration this operand is, kept in that slot's local
   *  from one iteration to the next (Body.valueCarried; its adjoint too, Body.adjointCarried), or -1. */
  carried: number;
}

export interface Slot {
  op: number;
  self: Ref;
  refs: Ref[];
}

/** A pointer of a body: walks the nodes whose strides over the nest are `strides`, from `origin`
 *  at the first iteration of every loop. */
export interface Group {
  strides: number[];
  origin: number;
  /** Top-level straight code: the group holds one operand recorded before the body, or the
   *  inputs (see describeBody), which a shape may find at another place for each of its bodies. */
  external?: true | undefined;
}

export interface Body {
  seg: Segment;
  /** How many loops enclose this one (0 at the top). */
  depth: number;
  parent: Body | null;
  /** This body's own nodes, those outside any inner loop, in tape order. */
  slots: Slot[];
  /** Own slots (by index) and inner loops, in tape order. */
  items: (number | Body)[];
  groups: Group[];
  /** Pointers of the enclosing bodies: this body's pointers come after theirs. */
  groupsBefore: number;
  /** First f64 slot local of this body: after those of the enclosing bodies, which stay live. */
  localBase: number;
  /** Per own slot: the f64 local (from localBase) that holds its value (forward) and its adjoint
   *  (reverse) within an iteration, or -1. Values of nodes used later in the same iteration stay
   *  in locals (still stored for the reverse sweep); so does the adjoint of a node used *only*
   *  there, which then never touches memory. */
  local: Int32Array;
  /** Per own slot: its adjoint lives in the local alone. */
  adjointInLocal: Uint8Array;
  /** Per own slot: the forward sweep reads its value from the local (uses in the iteration are near). */
  valueInLocal: Uint8Array;
  /** Per own slot: the next iteration reads its value (and in the tangent sweeps its tangent)
   *  from the local (Ref.carried), set from memory before the loop's first iteration. */
  valueCarried: Uint8Array;
  /** Per own slot with a carried value: its adjoint stays in the local across iterations too
   *  (the reverse sweep sets it from memory before the loop's last iteration). */
  adjointCarried: Uint8Array;
  /** Nodes of code: own slots plus those of the inner loops. */
  size: number;
}

// A value stays in a local for the forward sweep only while its uses are this close (in nodes):
// long live ranges over a large body spill registers, which measured slower than reloading
// (Lax-Wendroff's 889-node body: forward 0.60 ms reloading, 0.95 ms keeping every value).
const VALUE_REACH = 16;

// Slot locals per body at most: the first call of a generated function (V8 compiles it then,
// with its baseline compiler, Liftoff) grew much faster than its size once it had thousands of
// nodes and locals (STRAIGHT_CHUNK's figures); the GMM tape's old 3,386-node body, a local per
// slot, took 0.9 s to its first result.
const MAX_BODY_LOCALS = 128;

// Loop bodies at least this long are searched for inner loops (a loop needs 16 nodes of saving).
const NEST_MIN_PERIOD = 24;

export interface Level { period: number; count: number }

// Visits every iteration of the loops enclosing the innermost one, in order, with nodes[k] moved
// to track k's node at the first iteration of the innermost loop (strides[k·L + l]: its stride
// over loop l, L loops), while `visit` returns true. `visit` walks the innermost loop itself, as a
// tight loop per track: this runs once per compile, before V8 has optimised it, over every node
// of the nest.
function walkIterations(levels: readonly Level[], strides: Int32Array, nodes: Int32Array, visit: () => boolean): void {
  const L = levels.length, tracks = nodes.length;
  const t = new Int32Array(L);
  for (;;) {
    if (!visit()) return;
    let l = L - 2;
    for (; l >= 0; l--) {
      const count = levels[l]!.count;
      if (t[l]! + 1 < count) {
        t[l]!++;
        for (let k = 0; k < tracks; k++) nodes[k]! += strides[k * L + l]!;
        break;
      }
      for (let k = 0; k < tracks; k++) nodes[k]! -= (count - 1) * strides[k * L + l]!;
      t[l] = 0;
    }
    if (l < 0) return;
  }
}

/** Operands of nodes recorded before it that a top-level straight body gives a pointer group
 *  each, at most this many (more share the body's own group, as all did before). */
const MAX_EXTERNAL_GROUPS = 8;

// Whether `nodes` read at most MAX_EXTERNAL_GROUPS operands (counted per use) that are neither
// inputs, constants, nor nodes from `start` on.
function fewExternalOperands(views: TapeViews, nodes: readonly number[], start: number, inputEnd: number): boolean {
  let found = 0;
  for (const i of nodes) {
    for (let k = 0, n = OPERANDS[views.op[i]!]!; k < n; k++) {
      const o = operand(views, i, k);
      if (o >= inputEnd && o < start && views.op[o] !== Op.const && ++found > MAX_EXTERNAL_GROUPS) return false;
    }
  }
  return true;
}

/** Describes the nodes of `seg` as a loop body (planned again for inner loops when long). */
export function describeBody(
  views: TapeViews, seg: Segment, parent: Body | null, outerLevels: readonly Level[], uses: Int32Array, seeded: Uint8Array,
  linksOf: LinksOf, inputEnd = -1,
): Body {
  const { op, val } = views;
  const levels = [...outerLevels, { period: seg.count > 1 ? seg.period : 0, count: seg.count }];
  const depth = outerLevels.length;
  const body: Body = {
    seg, depth, parent, slots: [], items: [], groups: [], groupsBefore: 0, localBase: 0,
    local: new Int32Array(0), adjointInLocal: new Uint8Array(0), valueInLocal: new Uint8Array(0), valueCarried: new Uint8Array(0), adjointCarried: new Uint8Array(0), size: 0,
  };
  const operandStrides = (i: number, k: number): number[] =>
    levels.map(({ period }) => (period ? operand(views, i + period, k) - operand(views, i, k) : 0));
  // Inner loops: the body of a long loop is planned again, its repeats checked against every
  // enclosing loop's strides too.
  let inner: Segment[] | null = null;
  if (seg.count > 1 && seg.period >= NEST_MIN_PERIOD) {
    const outer = levels.map(({ period }) => {
      const strides = new Int32Array(3 * seg.period);
      if (period) {
        for (let s = 0; s < seg.period; s++) {
          const i = seg.start + s, n = OPERANDS[op[i]!]!;
          for (let k = 0; k < n; k++) strides[3 * s + k] = operand(views, i + period, k) - operand(views, i, k);
        }
      }
      return strides;
    });
    inner = planSegments(views, seg.start, seg.start + seg.period, Infinity, outer, linksOf);
    if (inner && !inner.some((s) => s.count > 1)) inner = null;
  }
  const slotOf = new Int32Array(seg.period).fill(-1);
  const ownNodes: number[] = [];
  for (const sub of inner ?? [{ start: seg.start, period: seg.period, count: 1 }]) {
    if (sub.count > 1) {
      body.items.push(describeBody(views, sub, body, levels, uses, seeded, linksOf));
      continue;
    }
    for (let i = sub.start; i < sub.start + sub.period; i++) {
      slotOf[i - seg.start] = ownNodes.length;
      body.items.push(ownNodes.length);
      ownNodes.push(i);
    }
  }
  const groupIndex = new Map<string, number>();
  // Top-level straight code (inputEnd >= 0) keeps the inputs in a pointer group of their own: the
  // rest of its operands then sit at the same offsets from its start wherever the same code
  // recurs, which lets bodies of one shape share a function (shapes.ts). So does each of a few
  // operands recorded before it (per use, not per node): an accumulator (`loss = loss.add(term)`)
  // lies as far back as the item before was long, and a logit picked by a label
  // (`logSumExp.sub(z[label])`) as far as the label says, which differ from item to item; a
  // shape passes one such group's place per body (shapes.ts, foldShapes).
  const externalGroups = inputEnd >= 0 && fewExternalOperands(views, ownNodes, seg.start, inputEnd);
  const groupOf = (strides: number[], first: number, use = false): number => {
    if (use && externalGroups && first >= inputEnd && first < seg.start) return body.groups.push({ strides, origin: first, external: true }) - 1;
    const key = first < inputEnd ? `${strides.join()}i` : strides.join();
    let g = groupIndex.get(key);
    // The inputs' group may vary too (the parameters an item's data select).
    if (g === undefined) groupIndex.set(key, (g = body.groups.push(first < inputEnd ? { strides, origin: first, external: true } : { strides, origin: first }) - 1));
    else body.groups[g]!.origin = Math.min(body.groups[g]!.origin, first);
    return g;
  };
  const single = seg.count === 1 && outerLevels.every((l) => l.count === 1);
  // Operands that are constants at the first iteration: constants at every one? (then no
  // adjoint), with the same value? (then an immediate)
  const constants: Ref[] = [];
  const selfStrides = levels.map(({ period }) => period);
  const selfKey = selfStrides.join();
  for (const i of ownNodes) {
    const code = op[i]!;
    const refs: Ref[] = [];
    const n = OPERANDS[code]!;
    for (let k = 0; k < n; k++) {
      const first = operand(views, i, k);
      const strides = operandStrides(i, k);
      const constant = op[first] === Op.const;
      const own = first >= seg.start && first < i ? slotOf[first - seg.start]! : -1;
      const slot = own >= 0 && strides.join() === selfKey ? own : -1;
      const ref: Ref = { first, strides, constant, value: constant ? val[first]! : undefined, group: -1, slot, carried: -1 };
      if (constant && !single) constants.push(ref);
      refs.push(ref);
    }
    const self: Ref = { first: i, strides: selfStrides, constant: false, value: undefined, group: groupOf(selfStrides, i), slot: body.slots.length, carried: -1 };
    body.slots.push({ op: code, self, refs });
  }
  if (constants.length) {
    const L = levels.length;
    const nodes = Int32Array.from(constants, (r) => r.first);
    const strides = new Int32Array(constants.length * L);
    constants.forEach((r, k) => strides.set(r.strides, k * L));
    const alive = new Uint8Array(constants.length).fill(1);
    let left = constants.length;
    const inner = levels[L - 1]!.count;
    walkIterations(levels, strides, nodes, () => {
      for (let k = 0; k < constants.length; k++) {
        if (!alive[k]) continue;
        const r = constants[k]!, step = strides[k * L + L - 1]!;
        for (let t = 0, node = nodes[k]!; t < inner; t++, node += step) {
          if (op[node] !== Op.const) {
            r.constant = false;
            r.value = undefined;
            alive[k] = 0;
            left--;
            break;
          }
          if (r.value !== undefined && !Object.is(val[node], r.value)) r.value = undefined;
        }
      }
      return left > 0;
    });
  }
  for (const { refs } of body.slots) for (const r of refs) if (r.value === undefined) r.group = groupOf(r.strides, r.first, true);
  // Every pointer of an inner loop starts from one of this body's pointers.
  for (const item of body.items) {
    if (typeof item === 'number') continue;
    for (const g of item.groups) groupOf(g.strides.slice(0, -1), g.origin);
  }
  const count = body.slots.length;
  const local = new Int32Array(count).fill(-1);
  const adjointInLocal = new Uint8Array(count);
  // Uses of each slot by later slots of the same iteration, against its uses anywhere.
  const inIteration = new Int32Array(count);
  const valueInLocal = new Uint8Array(count).fill(1);
  body.slots.forEach(({ refs }, s) => {
    for (const r of refs) {
      if (r.slot < 0 || r.value !== undefined) continue;
      inIteration[r.slot]++;
      if (s - r.slot > VALUE_REACH) valueInLocal[r.slot] = 0;
    }
  });
  // Values the next iteration reads (an accumulator, a recurrence), where every such read comes
  // at or before its producer in the body: the forward sweep keeps them in the producer's local
  // from one iteration to the next, where storing and loading them again put a store-to-load
  // forward on the recurrence's critical path.
  const valueCarried = new Uint8Array(count);
  if (seg.count > 1) {
    body.slots.forEach(({ refs }, consumer) => {
      for (const r of refs) {
        if (r.value !== undefined || r.constant) continue;
        const at = r.first + seg.period - seg.start;
        const producer = at >= 0 && at < seg.period ? slotOf[at]! : -1;
        if (producer < consumer || body.slots[producer]!.op <= Op.arg || r.strides.join() !== selfKey) continue;
        r.carried = producer;
        valueCarried[producer] = 1;
      }
    });
  }
  let locals = 0;
  // Candidates for an adjoint in a local: used only in their iteration at every iteration.
  // Checked iteration by iteration (nodes of one iteration are near each other in memory).
  const candidates: number[] = [];
  for (let s = 0; s < count; s++) {
    const first = ownNodes[s]!;
    if ((inIteration[s] === 0 && !valueCarried[s]) || body.slots[s]!.op <= Op.arg || locals === MAX_BODY_LOCALS) {
      valueInLocal[s] = 0;
      valueCarried[s] = 0;
      continue;
    }
    local[s] = locals++;
    // A local for the carried value alone: nothing in its iteration reads it.
    if (inIteration[s] === 0) {
      valueInLocal[s] = 0;
      continue;
    }
    if (uses[first] === inIteration[s] && !seeded[first]) {
      adjointInLocal[s] = 1;
      candidates.push(s);
    }
  }
  // Keeps flags[s] for the candidates whose node has `want(s)` uses and is no output at every
  // iteration (but the last `spare` of the innermost loop), at every iteration of the enclosing ones.
  const holdAtEveryIteration = (cands: number[], flags: Uint8Array, want: (s: number) => number, spare: number): void => {
    if (!cands.length) return;
    const L = levels.length;
    const nodes = Int32Array.from(cands, (s) => ownNodes[s]!);
    const strides = new Int32Array(cands.length * L);
    cands.forEach((_, k) => strides.set(selfStrides, k * L));
    let left = cands.length;
    const inner = levels[L - 1]!.count - spare;
    walkIterations(levels, strides, nodes, () => {
      for (let k = 0; k < cands.length; k++) {
        const s = cands[k]!, wanted = want(s), step = strides[k * L + L - 1]!;
        if (!flags[s]) continue;
        for (let t = 0, node = nodes[k]!; t < inner; t++, node += step) {
          if (uses[node] !== wanted || seeded[node]) {
            flags[s] = 0;
            left--;
            break;
          }
        }
      }
      return left > 0;
    });
  };
  if (!single) holdAtEveryIteration(candidates, adjointInLocal, (s) => inIteration[s]!, 0);
  // A carried value's adjoint stays in its local too (the reverse sweep runs the iterations
  // backwards: the next iteration's reads give it its first terms), where at every iteration but
  // the last its node is read only within its iteration and by the next one's carried reads, and
  // is no output; the last iteration's starts from memory, which holds the terms of the nodes
  // after the loop.
  const adjointCarried = new Uint8Array(count);
  const carriedReads = new Int32Array(count);
  for (const { refs } of body.slots) for (const r of refs) if (r.carried >= 0 && valueCarried[r.carried]) carriedReads[r.carried]++;
  adjointCarried.set(valueCarried);
  const carriedCandidates = Array.from({ length: count }, (_, s) => s).filter((s) => valueCarried[s]);
  holdAtEveryIteration(carriedCandidates, adjointCarried, (s) => inIteration[s]! + carriedReads[s]!, 1);
  body.local = local;
  body.adjointInLocal = adjointInLocal;
  body.valueInLocal = valueInLocal;
  body.valueCarried = valueCarried;
  body.adjointCarried = adjointCarried;
  body.size = count + body.items.reduce<number>((sum, item) => sum + (typeof item === 'number' ? 0 : item.size), 0);
  return body;
}

/** The group of `parent` that an inner body's group with these strides starts from (the same
 *  strides over the enclosing loops), or -1. */
export function enclosingGroup(parent: Body, strides: readonly number[]): number {
  const key = strides.slice(0, -1).join();
  return parent.groups.findIndex((x) => x.strides.join() === key);
}

// Pointer and local ranges: an inner body's come after its enclosing bodies' (which stay live
// across the inner loop); sibling bodies share theirs.
function layoutNest(body: Body, groupsBefore: number, localBase: number): void {
  body.groupsBefore = groupsBefore;
  body.localBase = localBase;
  let locals = 0;
  for (let s = 0; s < body.local.length; s++) locals = Math.max(locals, body.local[s]! + 1);
  for (const item of body.items) if (typeof item !== 'number') layoutNest(item, groupsBefore + body.groups.length, localBase + locals);
}

/** What the functions of a sweep over some top-level bodies need: loop levels (one counter
 *  each), pointers per region and f64 slot locals. */
export function nestNeeds(bodies: readonly Body[]): { levels: number; pointers: number; slotLocals: number } {
  let levels = 1, pointers = 1, slotLocals = 0;
  const visit = (body: Body): void => {
    levels = Math.max(levels, body.depth + 1);
    pointers = Math.max(pointers, body.groupsBefore + body.groups.length);
    for (let s = 0; s < body.local.length; s++) slotLocals = Math.max(slotLocals, body.localBase + body.local[s]! + 1);
    for (const item of body.items) if (typeof item !== 'number') visit(item);
  };
  bodies.forEach(visit);
  return { levels, pointers, slotLocals };
}

/** How many operand references each node has among nodes [from, to), or null when a unary op has
 *  two different operands. */
export function useCounts(views: TapeViews, from: number, to: number): Int32Array | null {
  const { op, a, b } = views;
  const operands = OPERANDS;
  const uses = new Int32Array(to);
  for (let i = from; i < to; i++) {
    const n = operands[op[i]!]!;
    if (n === 0) continue;
    const x = a[i]!, z = b[i]!;
    uses[x]++;
    if (n > 1) uses[z]++;
    else if (z !== x) return null;
    if (n > 2) uses[a[i - 1]!]++;
  }
  return uses;
}

/** Nodes of straight code per body: longer straight stretches are cut into bodies of their own.
 *  Measured on 25,212 nodes of random straight code (`bench/codegen-cliffs.ts --sweep=straight`,
 *  medians of 3; README's table), body/function nodes: first call µs/node, gradients 2-21 and
 *  steady ns/node: 128/128 1.45, 18.2, 3.39; 128/512 2.38, 17.5, 3.20; 128/2048 2.69, 24.8,
 *  3.29; 512/512 3.46, 19.1, 4.08; 1024/1024 3.98, 19.4, 4.66; 4096/4096 5.16, 35.3, 8.44. (An
 *  earlier form of that tape, whose values were nearly all NaN, had favoured 512/512.) Before
 *  MAX_BODY_LOCALS (measured the same way), one 16,384-node function's first call took 350-520
 *  µs/node. */
export const STRAIGHT_CHUNK = 128;

/** Nodes of code per generated function (top-level bodies are grouped up to this). V8 compiles
 *  wasm lazily and per function, first with Liftoff, then optimises each hot function on its own
 *  (figures above). */
export const FUNCTION_NODES = 512;

/** The sizes planSweeps uses. Only bench/codegen-cliffs.ts changes them, to measure the choice. */
export const planSizes = { maxSlots: MAX_SLOTS, straightChunk: STRAIGHT_CHUNK, functionNodes: FUNCTION_NODES };

/** The steps of a sweep: `length` of them, each a unit (a part, or `parts.length` + a shape)
 *  and, for a shape's function, its body's byte shift and its loop's count. */
export interface Order {
  length: number;
  unit: Int32Array;
  shift: Int32Array;
  count: Int32Array;
}

/** A tape cut into loop nests, ready for emitting sweeps: `parts` are the top-level bodies each
 *  function of a sweep runs, in tape order. */
export interface SweepPlan {
  /** The top-level segments, straight code cut into bodies of at most STRAIGHT_CHUNK nodes. */
  segments: Segment[];
  /** Per segment, its description: for a copy folded into a shape, the one it shares
   *  (shapes.ts: `Described`). */
  bodies: Body[];
  /** Per segment, 1 where it shares an earlier segment's description. */
  copied: Uint8Array;
  /** Top-level bodies of no shape, grouped into functions. */
  parts: Body[][];
  /** Bodies of one shape each share a function (shapes.ts). */
  shapes: Shape[];
  /** What a sweep runs, in tape order (typed arrays: a data-dependent plan has a step per body,
   *  the branchy loss 1,862). */
  order: Order;
  /** Nodes of code over all parts and shapes. */
  size: number;
}

/** Why `planSweeps` returned null for nodes [from, to): a sentence for `generatedSweepsReason`. */
export function whyNoPlan(views: TapeViews, from: number, to: number): string {
  if (to <= from) return 'the tape has no nodes past its inputs';
  for (let i = from; i < to; i++) if (views.op[i] === Op.custom) return 'the tape holds a custom op (its rules are JS code)';
  for (let i = from; i < to; i++) {
    if (OPERANDS[views.op[i]!] === 1 && views.b[i] !== views.a[i]) return `node ${i} is a unary op with two different operands (a hand-made tape)`;
  }
  return `the tape does not fold into at most ${planSizes.maxSlots} nodes of code (loops, loops nested in their bodies, straight-line code): ` +
    'longer straight-line code costs several times its recording to generate and runs its first gradients slower than the interpreter ' +
    '(straight-line code includes loops too short to fold, under 3 repetitions or under 16 nodes saved at one count throughout, and per-item code whose branches ' +
    'follow the data in an order that does not repeat)';
}

/** The planner's passes over the whole tape, each as plain JS gives it here. The wasm engine runs
 *  them in the core (assembly/planning.ts) with the same results: they read every node, and run
 *  once per compile, before V8 has optimised this code. */
export interface PlannerPasses {
  /** Operand references per node (`useCounts`), or null when the tape cannot have a plan. */
  uses: Int32Array | null;
  /** The candidate periods' links (`nextLinks`). */
  linksOf: LinksOf;
  /** The top-level segments (`planSegments` with no enclosing loop). */
  segmentsOf: (from: number, to: number, maxSlots: number) => Segment[] | null;
  /** Which earlier top-level body each one repeats node for node (shapes.ts: `repeatsOf`); `uses`
   *  must be this object's. */
  repeatsOf: (segments: readonly Segment[], from: number, seeded: Uint8Array, hashMask?: number) => Int32Array;
}

/** The passes in plain JS, over `views`. */
export function jsPasses(views: TapeViews, from: number, to: number): PlannerPasses {
  const uses = useCounts(views, from, to);
  const linksOf: LinksOf = (lo, hi) => nextLinks(views, lo, hi);
  return {
    uses,
    linksOf,
    segmentsOf: (lo, hi, maxSlots) => planSegments(views, lo, hi, maxSlots, [], linksOf),
    repeatsOf: (segments, lo, seeded, hashMask) => repeatsOf(views, segments, lo, uses!, seeded, hashMask),
  };
}

/** Computed ops over the straight segments of distinct op sequences, counted until past
 *  `limit`. A collision of two sequences' hashes only lowers the count, and a segment that
 *  repeats an earlier one node for node (`repeatOf`) has its ops. */
function distinctStraightOps(views: TapeViews, segments: readonly Segment[], repeatOf: Int32Array, limit: number): number {
  const sequences = new Set<number>();
  let unique = 0;
  for (let k = 0; k < segments.length && unique <= limit; k++) {
    const { start, period, count } = segments[k]!;
    if (count !== 1 || repeatOf[k]! >= 0) continue;
    let hash = period, ops = 0;
    for (let i = start; i < start + period; i++) {
      const code = views.op[i]!;
      hash = Math.imul(hash ^ code, 0x9e3779b1) >>> 0;
      if (code > Op.arg) ops++;
    }
    if (!sequences.has(hash)) {
      sequences.add(hash);
      unique += ops;
    }
  }
  return unique;
}

/** A plan left for later: past `straightOps` computed ops of straight code of distinct op
 *  sequences, or past `steps` top-level bodies (describing and emitting them costs more than a
 *  first call should), planSweeps stops before describing and writes those counts to `deferred`
 *  and `deferredSteps` (either past its limit). */
export interface Deferral {
  straightOps: number;
  steps: number;
  deferred: number;
  deferredSteps: number;
}

// planSweeps' passes over every top-level segment, each a function of its own: a data-dependent
// tape has thousands of segments, these loops run on a first compile before V8 has optimised
// them, and V8 compiles a long-running loop (on-stack replacement) with the whole function around
// it; as loops of planSweeps, that compile took 10-19 ms of a background thread on a machine of
// two cores, while the planner ran on the other (the branchy loss at 10,000 samples).

// Straight segments cut into bodies of at most `chunk` nodes; loops, and straight segments that
// fit in one, as they are.
function chunkStraight(segments: readonly Segment[], chunk: number): Segment[] {
  const chunked: Segment[] = [];
  for (let k = 0; k < segments.length; k++) {
    const seg = segments[k]!;
    if (seg.count > 1 || seg.period <= chunk) chunked.push(seg);
    else for (let s = seg.start; s < seg.start + seg.period; s += chunk) chunked.push({ start: s, period: Math.min(chunk, seg.start + seg.period - s), count: 1 });
  }
  return chunked;
}

// Nodes of straight code left after folding: straight segments that no shape took.
function unfoldedStraightCode(segments: readonly Segment[], shapeOf: Int32Array): number {
  let straightCode = 0;
  for (let k = 0; k < segments.length; k++) {
    const { period, count } = segments[k]!;
    if (count === 1 && shapeOf[k]! < 0) straightCode += period;
  }
  return straightCode;
}

// The functions of a plan's bodies outside shapes (consecutive ones grouped up to
// `functionNodes`) and the steps of a sweep: a part, or a shape with a body's shift and count.
// `ownBody(k)`: segment k's own description, for a copy outside any shape.
function partsInOrder(
  segments: readonly Segment[], shapes: readonly Shape[], shapeOf: Int32Array, varyingShift: Int32Array, bodies: readonly Body[], copied: Uint8Array,
  ownBody: (k: number) => Body, functionNodes: number,
): { parts: Body[][]; order: Order } {
  const parts: Body[][] = [];
  // Parts are numbered as they end, so a step holds a shape's number until then (-1 - shape).
  const steps = segments.length;
  const order: Order = { length: 0, unit: new Int32Array(steps), shift: new Int32Array(steps), count: new Int32Array(steps) };
  let part: Body[] = [], partSize = 0;
  // Straight code's shape takes the byte shift of its VARYING group where a loop's takes its count.
  const varies = shapes.map(({ relative }) => relative.includes(VARYING));
  for (let k = 0; k < segments.length; k++) {
    const seg = segments[k]!;
    const shape = shapeOf[k]!;
    if (shape >= 0) {
      if (part.length) {
        order.unit[order.length++] = parts.length;
        parts.push(part);
        part = [];
        partSize = 0;
      }
      const step = order.length++;
      order.unit[step] = -1 - shape;
      order.shift[step] = 8 * (seg.start - shapes[shape]!.body.seg.start);
      order.count[step] = varies[shape] ? 8 * varyingShift[k]! : seg.count;
      continue;
    }
    const body = copied[k] ? ownBody(k) : bodies[k]!;
    if (part.length && partSize + body.size > functionNodes) {
      order.unit[order.length++] = parts.length;
      parts.push(part);
      part = [];
      partSize = 0;
    }
    part.push(body);
    partSize += body.size;
  }
  if (part.length) {
    order.unit[order.length++] = parts.length;
    parts.push(part);
  }
  for (let k = 0; k < order.length; k++) if (order.unit[k]! < 0) order.unit[k] = parts.length - 1 - order.unit[k]!;
  return { parts, order };
}

/** Plans generated sweeps for nodes [from, to) of the tape in `views`, or returns null when the
 *  tape does not suit generated code. `outputs`: the nodes a reverse sweep may be seeded at (their
 *  adjoints stay in memory). `passes`: the whole-tape passes (the wasm engine's run in its core). */
export function planSweeps(
  views: TapeViews, from: number, to: number, outputs: ArrayLike<number>, passes = jsPasses(views, from, to),
  maxSlots = planSizes.maxSlots, lap?: (step: 'segments' | 'repeats' | 'describe' | 'fold') => void, defer?: Deferral,
): SweepPlan | null {
  const { straightChunk, functionNodes } = planSizes;
  const { uses, linksOf } = passes;
  // Unary ops record their operand twice (b = a), which the tangent rules below rely on; only a
  // hand-made byte string could say otherwise, and then the interpreter runs it.
  if (!uses) return null;
  const segments = passes.segmentsOf(from, to, maxSlots);
  lap?.('segments');
  if (!segments) return null;
  const seeded = new Uint8Array(to);
  for (let k = 0; k < outputs.length; k++) seeded[outputs[k]!] = 1;
  const chunked = chunkStraight(segments, straightChunk);
  if (defer && chunked.length > defer.steps) {
    defer.deferredSteps = chunked.length;
    return null;
  }
  const repeatOf = passes.repeatsOf(chunked, from, seeded);
  lap?.('repeats');
  // Straight bodies of different op sequences never share a shape's function, so past maxSlots
  // ops of them there is no plan (short runs between loops that repeat nothing: found before
  // describing any of it; straight code without loops is refused in the search).
  const unique = distinctStraightOps(views, chunked, repeatOf, maxSlots);
  if (unique > maxSlots) return null;
  if (defer && unique > defer.straightOps) {
    defer.deferred = unique;
    return null;
  }
  const described = describeBodies(views, chunked, from, uses, seeded, linksOf, repeatOf);
  const { bodies, copied, descs } = described;
  // Each description once (a segment that is no copy has its own).
  for (let d = 0; d < descs.length; d++) layoutNest(descs[d]!, 0, 0);
  lap?.('describe');
  const { shapes, shapeOf, varyingShift } = foldShapes(views, chunked, described);
  lap?.('fold');
  // The search counted short runs between loops as no code (SHORT_RUN), as they fold into
  // shapes where the data repeat them: those that did not fold count now, with the rest.
  if (unfoldedStraightCode(chunked, shapeOf) > maxSlots) return null;
  // A copy stands in for its body only inside a shape; anywhere else it is described on its own.
  const ownBody = (k: number): Body => {
    const seg = chunked[k]!;
    const body = describeBody(views, seg, null, [], uses, seeded, linksOf, seg.count === 1 ? from : -1);
    layoutNest(body, 0, 0);
    bodies[k] = body;
    copied[k] = 0;
    return body;
  };
  const { parts, order } = partsInOrder(chunked, shapes, shapeOf, varyingShift, bodies, copied, ownBody, functionNodes);
  const size = parts.flat().reduce((sum, b) => sum + b.size, 0) + shapes.reduce((sum, { body }) => sum + body.size, 0);
  if (size > maxSlots) return null;
  return { segments: chunked, bodies, copied, parts, shapes, order, size };
}
