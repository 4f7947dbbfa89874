// Bodies of one shape: top-level bodies whose code is the same but for where they sit in the tape.
// Code written by data-dependent control flow (a loss with a branch on each label) has no loop
// over the samples, only short bodies in a few shapes interleaved by the data; each shape becomes
// one function, called once per body with the body's offset, instead of a copy per body.
import { Op } from '../../ops.ts';
import type { TapeViews } from '../../backend.ts';
import {
  OPERANDS, describeBody, enclosingGroup, mix, operand, type Body, type Level, type LinksOf, type Ref, type Segment, type Slot,
} from './plan.ts';

/** A shape: the body whose code its function runs, and per top-level pointer group whether it
 *  moves with the body (relative 1: offset by the caller's shift), stays (0: an input, a hoisted
 *  node), or lies elsewhere for each body (VARYING: an operand recorded before straight code, or
 *  its inputs, offset by the byte shift a step passes in place of a loop's count). */
export interface Shape {
  body: Body;
  relative: Uint8Array;
}

/** `Shape.relative` of the group a shape of straight code finds at another place for each body. */
export const VARYING = 2;

/** A shape needs this many bodies: below it, a copy per body costs less than the calls. */
const MIN_BODIES = 4;

// foldShapes' search within a bucket: members tried as the leader's partner, and leaders tried.
// Loops of items whose lengths the data say read the item's earlier values at a distance that
// length decides, so their bucket splits into a shape per length: attention pooling over
// sequences of 3-14 steps had 12, of which 4 leaders found theirs (300 sequences: 2,659 nodes of
// code in 435 functions, no faster than the interpreter); with 16, 199 nodes of code in 44.
const PARTNER_TRIES = 8, LEADER_TRIES = 16;

const number = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));

// Straight top-level code: its constants, immediates in the code of one body, can be loaded from
// the tape instead, so bodies that differ only in them share a function.
const straight = (body: Body): boolean => body.parent === null && body.seg.count === 1 && body.items.every((item) => typeof item === 'number');

// A constant a top-level loop records at every iteration (a sample's feature, read by each of
// its classes' loop): an immediate of its code, which bodies of a shape load instead where their
// values differ (addShape).
const perIteration = (body: Body, r: Ref): boolean =>
  body.parent === null && body.seg.count > 1 && r.first >= body.seg.start && r.first < body.seg.start + body.seg.period && r.strides[0] === body.seg.period;

// `isStraight`: straight(body), which reads every item, passed in (once per body, not per ref).
function refKey(body: Body, isStraight: boolean, r: Ref): string {
  if (r.value !== undefined) return isStraight || perIteration(body, r) ? `k${r.first - body.seg.start}` : `v${number(r.value)}`;
  return `${r.group}@${r.first - body.groups[r.group]!.origin}${r.constant ? 'c' : ''}s${r.slot}k${r.carried}`;
}

// Everything the emitters read of a body but the origins of its top-level groups and, for a
// top-level loop, its count: two bodies with the same key emit the same code once those are
// passed in.
function shapeKey(body: Body): string {
  const count = body.parent === null && body.seg.count > 1 ? 'n' : String(body.seg.count);
  const out: string[] = [`${body.seg.period}x${count}d${body.depth}g${body.groupsBefore}l${body.localBase}`];
  const parent = body.parent;
  for (const { strides, origin } of body.groups) {
    let where = '';
    if (parent) {
      const pg = enclosingGroup(parent, strides);
      where = pg < 0 ? '?' : `${pg}+${origin - parent.groups[pg]!.origin}`;
    }
    out.push(`[${strides.join()}]${where}`);
  }
  const isStraight = straight(body);
  for (const { op, self, refs } of body.slots) out.push(`${op}:${refKey(body, isStraight, self)}(${refs.map((r) => refKey(body, isStraight, r)).join()})`);
  out.push(body.local.join(), body.adjointInLocal.join(), body.valueInLocal.join(), body.valueCarried.join(), body.adjointCarried.join());
  for (const item of body.items) out.push(typeof item === 'number' ? `#${item}` : `{${shapeKey(item)}}`);
  return out.join('|');
}

// Describing a body allocates a Ref per operand, and keying it a string per node: on code of a
// few shapes repeated by the data that was most of a first compile (the branchy logistic loss:
// 1,862 bodies of 7 shapes). A body whose nodes repeat an earlier body's would describe the same
// but for where it sits, so it shares that description (a copy at its own start). "Repeat" means,
// node for node: the same op, use count and seed, the same operands constant or not, inputs by
// number and every other operand at the same distance; then the tape under the copy is the
// earlier body's moved by `delta` nodes (inputs staying), and the description moves with it where
// each top-level pointer group walks only inputs or only other nodes. Immediates are the values
// of constants, which the copy must have too, except in straight code, which folds its constants
// into loads; so a copy stands in for its body only inside a shape (planSweeps describes any other
// on its own). A fingerprint finds the candidates; a node-by-node check decides (`repeatsOf`, which
// the wasm engine runs in its core); then the description must move with the copy.

const OTHER = 1 << 30;

/** Earlier segments of the same fingerprint checked per segment, the latest first: a tape of many
 *  near repeats would otherwise check each against every one before it. */
export const MAX_REPEAT_TRIES = 4;

/** Only bodies of at most this many nodes (over all iterations) are checked for repeats: checking
 *  reads every node, and a long loop (the GMM tape's 3.4 M nodes in a few) is described faster
 *  than read. */
export const MAX_REPEAT_NODES = 4096;

// A multiply per item and one mix at the end: a mix per item cost most of the core's pass on a
// first compile (the branchy loss: 2.3 -> 1.9 ms, medians of 8 fresh processes each); a collision
// only costs a node-by-node check.
const FNV_PRIME = 0x01000193;

// A loop's fingerprint reads its first two iterations and its last (where the use counts of what
// follows show), not every one: equal segments still share it, and the node-by-node check
// decides. On the branchy loss at 10,000 samples (4,600 inner loops of 20 iterations) the pass
// went from 4.8 to 3.9-4.2 ms warm.
function fingerprint(views: TapeViews, seg: Segment, from: number, uses: Int32Array, seeded: Uint8Array): number {
  const { op } = views;
  const start = seg.start, end = start + seg.period * seg.count;
  const headEnd = Math.min(end, start + 2 * seg.period), tail = Math.max(headEnd, end - seg.period);
  let h = mix(Math.imul(seg.period, 0x9e3779b1) ^ seg.count);
  for (let i = start; i < end; i = i + 1 === headEnd ? tail : i + 1) {
    const code = op[i]!;
    h = Math.imul(h ^ code ^ (seeded[i]! << 8) ^ Math.imul(uses[i]!, 0x7feb352d), FNV_PRIME);
    for (let k = 0, n = OPERANDS[code]!; k < n; k++) {
      const o = operand(views, i, k);
      h = Math.imul(h ^ Math.imul(o < from ? o : (o - start) ^ OTHER, 0x846ca68b) ^ (op[o] === Op.const ? 1 : 0), FNV_PRIME);
    }
  }
  return mix(h);
}

function repeats(views: TapeViews, r: Segment, s: Segment, from: number, uses: Int32Array, seeded: Uint8Array): boolean {
  if (r.period !== s.period || r.count !== s.count) return false;
  const { op } = views;
  const delta = s.start - r.start, end = r.start + r.period * r.count;
  for (let i = r.start, j = s.start; i < end; i++, j++) {
    const code = op[i]!;
    if (op[j] !== code || uses[i] !== uses[j] || seeded[i] !== seeded[j]) return false;
    for (let k = 0, n = OPERANDS[code]!; k < n; k++) {
      const oi = operand(views, i, k), oj = operand(views, j, k);
      if (oi < from ? oj !== oi : oj - oi !== delta) return false;
      if ((op[oi] === Op.const) !== (op[oj] === Op.const)) return false;
    }
  }
  return true;
}

/** For each segment, the latest of the MAX_REPEAT_TRIES latest earlier segments with its
 *  fingerprint whose nodes it repeats node for node (see above), or -1: always for a segment of
 *  more than MAX_REPEAT_NODES nodes. The core's `repeatsOf` gives the same answers. Tests narrow
 *  the fingerprints with `hashMask`, so that they collide and the node-by-node check decides. */
export function repeatsOf(
  views: TapeViews, segments: readonly Segment[], from: number, uses: Int32Array, seeded: Uint8Array, hashMask = -1,
): Int32Array {
  const found = new Int32Array(segments.length).fill(-1);
  const byFingerprint = new Map<number, number[]>();
  segments.forEach((seg, k) => {
    if (seg.period * seg.count > MAX_REPEAT_NODES) return;
    const hash = fingerprint(views, seg, from, uses, seeded) & hashMask;
    const earlier = byFingerprint.get(hash);
    if (!earlier) {
      byFingerprint.set(hash, [k]);
      return;
    }
    for (let t = 0, c = earlier.length - 1; t < MAX_REPEAT_TRIES && c >= 0; t++, c--) {
      if (repeats(views, segments[earlier[c]!]!, seg, from, uses, seeded)) {
        found[k] = earlier[c]!;
        break;
      }
    }
    earlier.push(k);
  });
  return found;
}

// Per top-level group of `body`: 1 when every node reached through it (at any depth) is past the
// inputs, so the group moves with a copy; 0 when every one is an input; null when both occur.
function groupMoves(body: Body, from: number): Uint8Array | null {
  const kind = new Uint8Array(body.groups.length); // 1 inputs, 2 other nodes
  const see = (root: number, node: number): boolean => {
    const k = node < from ? 1 : 2;
    if (kind[root] && kind[root] !== k) return false;
    kind[root] = k;
    return true;
  };
  const visit = (b: Body, roots: Int32Array): boolean => {
    for (let g = 0; g < b.groups.length; g++) if (!see(roots[g]!, b.groups[g]!.origin)) return false;
    for (const { self, refs } of b.slots) {
      if (!see(roots[self.group]!, self.first)) return false;
      for (const r of refs) if (r.group >= 0 && !see(roots[r.group]!, r.first)) return false;
    }
    for (const item of b.items) {
      if (typeof item === 'number') continue;
      const inner = Int32Array.from(item.groups, (g) => {
        const pg = enclosingGroup(b, g.strides);
        return pg < 0 ? -1 : roots[pg]!;
      });
      if (inner.includes(-1) || !visit(item, inner)) return false;
    }
    return true;
  };
  return visit(body, Int32Array.from(body.groups, (_, g) => g)) ? Uint8Array.from(kind, (k) => (k === 2 ? 1 : 0)) : null;
}

// The nodes whose values `body`'s nest bakes in as immediates, at every iteration of the enclosing
// loops (`outer`) and its own, with those values: a copy `delta` nodes further on must hold the
// same values there.
function immediates(body: Body, outer: readonly Level[], nodes: number[] = [], values: number[] = []): { nodes: number[]; values: number[] } {
  const levels = [...outer, { period: body.seg.count > 1 ? body.seg.period : 0, count: body.seg.count }];
  const visit = (r: Ref, l: number, node: number): void => {
    if (l === levels.length) {
      nodes.push(node);
      values.push(r.value!);
      return;
    }
    for (let t = 0; t < levels[l]!.count; t++) visit(r, l + 1, node + t * r.strides[l]!);
  };
  // A top-level loop's constants recorded at every iteration are no immediates a copy must match:
  // a copy stands in only inside a shape, which loads them where its members' differ (addShape).
  for (const { refs } of body.slots) for (const r of refs) if (r.value !== undefined && !perIteration(body, r)) visit(r, 0, r.first);
  for (const item of body.items) if (typeof item !== 'number') immediates(item, levels, nodes, values);
  return { nodes, values };
}

// A loop of another length. The data decide how long a run of equal samples is (the branchy
// loss: loops of 62 or 63 nodes run 3, 4, 5... times), and bodies that repeat node for node share
// a length too, so each length was described on its own (30 of its 33 descriptions, each planned
// again for its inner loop: most of its first compile). A loop `seg` whose first two iterations
// repeat those of an earlier loop body `rep` of the same period (the rule above: the same ops,
// inputs by number, every other operand `delta` nodes on) repeats it at every iteration, as each
// operand of a loop moves by a fixed stride (planSegments checks every iteration); so it may stand
// in for `rep` wherever the facts its description holds at every iteration (constant operands,
// immediates, adjoints kept in locals) hold at each of `seg`'s, `delta` nodes on (constants and
// the body's own nodes are never inputs). Holding fewer is fine: an operand not taken for a
// constant, or an adjoint in memory, computes the same.

function repeatsTwoIterations(views: TapeViews, r: Segment, s: Segment, from: number): boolean {
  if (r.period !== s.period || r.count < 2 || s.count < 2) return false;
  const { op } = views;
  const delta = s.start - r.start, end = r.start + 2 * r.period;
  for (let i = r.start, j = s.start; i < end; i++, j++) {
    const code = op[i]!;
    if (op[j] !== code) return false;
    for (let k = 0, n = OPERANDS[code]!; k < n; k++) {
      const oi = operand(views, i, k), oj = operand(views, j, k);
      if (oi < from ? oj !== oi : oj - oi !== delta) return false;
    }
  }
  return true;
}

// Where each run of the innermost loop starts for a ref (its first node and strides over
// `levels`): the callers check a run's nodes in a loop of their own, with no call per node (this
// runs on a first compile, before V8 has optimised it).
function innermostRuns(first: number, strides: readonly number[], levels: readonly Level[]): number[] {
  let starts = [first];
  for (let l = 0; l < levels.length - 1; l++) {
    const next: number[] = [], count = levels[l]!.count, stride = strides[l]!;
    for (let k = 0; k < starts.length; k++) for (let t = 0; t < count; t++) next.push(starts[k]! + t * stride);
    starts = next;
  }
  return starts;
}

// Whether what `body` (at `levels`, the top loop's count that of the copy) holds at every
// iteration holds `delta` nodes on (see above). Indexed loops and leaf functions for the per-node
// checks, no iterators or spreads: this runs on a first compile, where V8 optimises it in the
// background while the planner goes on, and as written before (for-of over runs, levels spread
// per inner loop) its optimisation took 30-34 ms of a background thread, on a machine of 2 cores
// (the branchy loss at 10,000 samples, `node --trace-opt`).
function factsHold(views: TapeViews, body: Body, levels: Level[], delta: number, uses: Int32Array, seeded: Uint8Array): boolean {
  const last = levels.length - 1, inner = levels[last]!.count;
  const slots = body.slots;
  for (let s = 0; s < slots.length; s++) {
    const refs = slots[s]!.refs;
    for (let q = 0; q < refs.length; q++) {
      const r = refs[q]!;
      if (!r.constant) continue;
      const starts = innermostRuns(r.first + delta, r.strides, levels);
      for (let k = 0; k < starts.length; k++) if (!constantsAt(views, starts[k]!, r.strides[last]!, inner, r.value)) return false;
    }
  }
  for (let s = 0; s < slots.length; s++) {
    const inLocal = body.adjointInLocal[s]!;
    if (!inLocal && !body.adjointCarried[s]) continue;
    // The uses it holds at every iteration (a carried one's: but the last) are its first node's.
    const self = slots[s]!.self;
    const starts = innermostRuns(self.first + delta, self.strides, levels);
    for (let k = 0; k < starts.length; k++) {
      if (!usesAt(uses, seeded, starts[k]!, self.strides[last]!, inner - (inLocal ? 0 : 1), uses[self.first]!)) return false;
    }
  }
  const items = body.items;
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    if (typeof item === 'number') continue;
    levels.push({ period: item.seg.period, count: item.seg.count });
    const holds = factsHold(views, item, levels, delta, uses, seeded);
    levels.pop();
    if (!holds) return false;
  }
  return true;
}

// Whether the `count` nodes from `start`, `step` apart, are constants (of `value`, unless undefined).
function constantsAt(views: TapeViews, start: number, step: number, count: number, value: number | undefined): boolean {
  const { op, val } = views;
  for (let t = 0, n = start; t < count; t++, n += step) {
    if (op[n] !== Op.const || (value !== undefined && !Object.is(val[n], value))) return false;
  }
  return true;
}

// Whether the `count` nodes from `start`, `step` apart, have `want` uses each and none is seeded.
function usesAt(uses: Int32Array, seeded: Uint8Array, start: number, step: number, count: number, want: number): boolean {
  for (let t = 0, n = start; t < count; t++, n += step) if (uses[n] !== want || seeded[n]) return false;
  return true;
}

/** The top-level segments' descriptions: `bodies[k]` is segment k's own, or where `copied[k]` is
 *  1, that of an earlier segment it repeats, shared (no object per copy: on a tape of few shapes
 *  repeated by the data, a copy each was most of describing and folding on a first compile, run
 *  before V8 has optimised this code: the branchy loss's 1,850 copies took 2-4 ms). A copy sits
 *  `segments[k].start - bodies[k].seg.start` nodes on. The descriptions are numbered: segment k's
 *  is `descs[descOf[k]]`, and the top-level groups that move with a copy of description d are
 *  `moves[d]`. */
export interface Described {
  bodies: Body[];
  copied: Uint8Array;
  descOf: Int32Array;
  descs: Body[];
  /** Per description checked for copies: its moving groups, null where it cannot move. */
  moves: (Uint8Array | null | undefined)[];
}

/** Describes the top-level segments of a plan, each body that repeats an earlier one as a copy
 *  of that one's description (see above). `repeatOf`: as `repeatsOf` gives it. */
export function describeBodies(
  views: TapeViews, segments: readonly Segment[], from: number, uses: Int32Array, seeded: Uint8Array, linksOf: LinksOf,
  repeatOf = repeatsOf(views, segments, from, uses, seeded),
): Described {
  // Per description, as numbered in `descs` (arrays, not maps keyed by body: a data-dependent tape
  // asks once per segment, thousands of times, on a first compile): whether it moves to a copy
  // (each of its pointer groups walks only inputs or only other nodes: groupMoves), and the
  // immediates a copy must match, null for straight code (which loads its constants).
  const descs: Body[] = [];
  const moves: (Uint8Array | null | undefined)[] = [];
  const baked: ({ nodes: number[]; values: number[] } | null | undefined)[] = [];
  const movable = (d: number): boolean => {
    let move = moves[d];
    if (move === undefined) moves[d] = move = groupMoves(descs[d]!, from);
    return move !== null;
  };
  // Per description, 1 where every segment that repeats it may share it (no immediates to match,
  // and it moves): copiesOrOwn then asks nothing more of them.
  const always = new Uint8Array(segments.length);
  // Whether `seg`, whose nodes repeat those of description d, may share it.
  const copies = (d: number, seg: Segment): boolean => {
    let own = baked[d];
    if (own === undefined) {
      baked[d] = own = straight(descs[d]!) ? null : immediates(descs[d]!, []);
      if ((!own || !own.nodes.length) && movable(d)) always[d] = 1;
    }
    if (own) {
      const delta = seg.start - descs[d]!.seg.start, { nodes, values } = own;
      for (let k = 0; k < nodes.length; k++) if (!Object.is(views.val[nodes[k]! + delta], values[k])) return false;
    }
    return movable(d);
  };
  // A loop of another length (see above): the latest own loop descriptions of each period.
  const loopsOfPeriod = new Map<number, number[]>();
  const otherLength = (seg: Segment): number => {
    if (seg.count < 2 || seg.period * seg.count > MAX_REPEAT_NODES) return -1;
    const candidates = loopsOfPeriod.get(seg.period) ?? [];
    for (let t = 0, c = candidates.length - 1; t < MAX_REPEAT_TRIES && c >= 0; t++, c--) {
      const d = candidates[c]!, rep = descs[d]!, delta = seg.start - rep.seg.start;
      if (!repeatsTwoIterations(views, rep.seg, seg, from)) continue;
      if (!factsHold(views, rep, [{ period: seg.period, count: seg.count }], delta, uses, seeded)) continue;
      if (movable(d)) return d;
    }
    return -1;
  };
  const describe = (seg: Segment): number => {
    const d = descs.push(describeBody(views, seg, null, [], uses, seeded, linksOf, seg.count === 1 ? from : -1)) - 1;
    if (seg.count > 1 && seg.period * seg.count <= MAX_REPEAT_NODES) {
      const same = loopsOfPeriod.get(seg.period);
      if (same) same.push(d);
      else loopsOfPeriod.set(seg.period, [d]);
    }
    return d;
  };
  const descOf = new Int32Array(segments.length);
  const copied = new Uint8Array(segments.length);
  const bodies = copiesOrOwn(segments, repeatOf, descOf, copied, always, (k) => {
    const seg = segments[k]!, r = repeatOf[k]!;
    if (r >= 0 && copies(descOf[r]!, seg)) return descOf[r]!;
    const d = otherLength(seg);
    return d >= 0 ? d : -1 - describe(seg);
  }, descs);
  return { bodies, copied, descOf, descs, moves };
}

// describeBodies' pass over every segment, a function of its own (planSweeps' helpers in plan.ts
// say why): segment k shares the description of the segment it repeats where that description
// is one every repeat may share (`always`), with no call (a call per segment was most of this
// loop on a first compile); else `otherwise(k)` gives a description it shares (d), or its own
// (-1 - d).
function copiesOrOwn(
  segments: readonly Segment[], repeatOf: Int32Array, descOf: Int32Array, copied: Uint8Array, always: Uint8Array,
  otherwise: (k: number) => number, descs: readonly Body[],
): Body[] {
  const n = segments.length;
  for (let k = 0; k < n; k++) {
    const r = repeatOf[k]!;
    // Repeating node for node is transitive, so a repeat of a copy repeats the copy's body.
    if (r >= 0 && always[descOf[r]!]) {
      descOf[k] = descOf[r]!;
      copied[k] = 1;
      continue;
    }
    const d = otherwise(k);
    if (d >= 0) {
      descOf[k] = d;
      copied[k] = 1;
    } else {
      descOf[k] = -1 - d;
    }
  }
  const bodies: Body[] = new Array(n);
  for (let k = 0; k < n; k++) bodies[k] = descs[descOf[k]!]!;
  return bodies;
}

// foldShapes' passes over every segment, each a function of its own (planSweeps' helpers in
// plan.ts say why).

// Segments by the key of their description, in buckets in the order keys first occur (a copy's
// key is its description's: the key leaves out where a top-level body sits): bucket b is
// members[bucketStart[b]] up to members[bucketStart[b + 1]], in segment order.
function bucketsByKey(descOf: Int32Array, descs: readonly Body[]): { members: Int32Array; bucketStart: Int32Array; keys: number } {
  const n = descOf.length;
  const keyOf = new Int32Array(descs.length).fill(-1);
  const keyIds = new Map<string, number>();
  const bucketOf = new Int32Array(n);
  let keys = 0;
  // Every segment, one node long too: a body of no shape is a function of its own where shapes'
  // steps come between (the softmax loss: 139 one-node bodies, 139 functions).
  for (let k = 0; k < n; k++) {
    const d = descOf[k]!;
    if (keyOf[d]! < 0) {
      const key = shapeKey(descs[d]!);
      let id = keyIds.get(key);
      if (id === undefined) keyIds.set(key, (id = keys++));
      keyOf[d] = id;
    }
    bucketOf[k] = keyOf[d]!;
  }
  const bucketStart = new Int32Array(keys + 1);
  for (let k = 0; k < n; k++) bucketStart[bucketOf[k]! + 1]!++;
  for (let b = 0; b < keys; b++) bucketStart[b + 1]! += bucketStart[b]!;
  const members = new Int32Array(n);
  const filled = bucketStart.slice(0, keys);
  for (let k = 0; k < n; k++) members[filled[bucketOf[k]!]!++] = k;
  return { members, bucketStart, keys };
}

function startsOf(segments: readonly Segment[]): Int32Array {
  const starts = new Int32Array(segments.length);
  for (let k = 0; k < segments.length; k++) starts[k] = segments[k]!.start;
  return starts;
}

// The members of `bucket` that no shape took, in place (a bucket is its own part of the members).
function untaken(bucket: Int32Array, takenSegment: Uint8Array, takenDesc: Uint8Array, descOf: Int32Array): Int32Array {
  let left = 0;
  for (let m = 0; m < bucket.length; m++) {
    const k = bucket[m]!;
    if (!takenSegment[k] && !takenDesc[descOf[k]!]) bucket[left++] = k;
  }
  return bucket.subarray(0, left);
}

/** Groups top-level bodies into shapes: bodies with the same key whose pointer groups each either
 *  move with the body or stay put, the same way for all of them, at least MIN_BODIES of them.
 *  `shapeOf[k]`: the shape segment k's body folded into, or -1. Per segment only arithmetic on
 *  typed arrays (descriptions by number, buckets by a counting sort, marks for what a shape
 *  took): on a first compile, with thousands of segments, maps and sets per segment and
 *  closures cost several ms before V8 had optimised them, and their optimisation as much again
 *  on a background thread. */
export function foldShapes(views: TapeViews, segments: readonly Segment[], { copied, descOf, descs, moves }: Described): { shapes: Shape[]; shapeOf: Int32Array; varyingShift: Int32Array } {
  const n = segments.length;
  const { members, bucketStart, keys } = bucketsByKey(descOf, descs);
  // Per description, where its top-level groups start; per segment, its start.
  const originsOf: (Int32Array | undefined)[] = [];
  const origins = (d: number): Int32Array => originsOf[d] ??= Int32Array.from(descs[d]!.groups, (g) => g.origin);
  const startOf = startsOf(segments);
  const shapes: Shape[] = [];
  const shapeOf = new Int32Array(n).fill(-1);
  // Per segment of a shape with a VARYING group: that group's place against the description's, in nodes.
  const varyingShift = new Int32Array(n);
  const takenSegment = new Uint8Array(n), takenDesc = new Uint8Array(descs.length);
  // Which groups of the leader's description move with a body (relative) and which stay, as the
  // first member whose origins differ from the description's each by its shift from the
  // description's start or by nothing says (after at most PARTNER_TRIES members), and the members
  // that agree (in `found`, from 0); null where none does. Measured from the description itself,
  // not from the leader: the shape's function is emitted from the description, at its own start,
  // and the leader may be a copy of it, whose groups that move with a copy a shape may keep in
  // place (a review: such a shape read a hoisted node of the description's place for every
  // member, wrong values).
  // Straight code may have one external group (describeBody: an operand recorded before it, or
  // the inputs) that is VARYING: found where the first agreeing member has it at neither the
  // body's distance nor in place, or where one of the next PARTNER_TRIES members disagrees with
  // that member on it alone (an accumulator after items of two lengths, which the first partner
  // may have matched).
  const fold = (bucket: Int32Array, found: Int32Array): { relative: Uint8Array; count: number } | null => {
    const lead = descOf[bucket[0]!]!, first = origins(lead), groups = first.length, firstStart = descs[lead]!.seg.start;
    const external = descs[lead]!.groups.map((g) => g.external === true);
    const canVary = straight(descs[lead]!) && external.includes(true);
    const relative = new Uint8Array(groups);
    let agreed = false, varying = -1, t = 0;
    // Where member b has group g against the description's (moved with a copy where it moves).
    const placeOf = (b: number, g: number): number => {
      const db = descOf[b]!, own = originsOf[db] ?? origins(db), move = copied[b] ? moves[db]! : null;
      return own[g]! + (move !== null && move[g] ? startOf[b]! - descs[db]!.seg.start : 0) - first[g]!;
    };
    for (; t < bucket.length && t <= PARTNER_TRIES && !agreed; t++) {
      const b = bucket[t]!, delta = startOf[b]! - firstStart;
      // The description's own segment tells nothing.
      if (delta === 0) continue;
      agreed = true;
      varying = -1;
      for (let g = 0; g < groups && agreed; g++) {
        const d = placeOf(b, g);
        relative[g] = d === delta ? 1 : 0;
        agreed = d === delta || d === 0;
        if (!agreed && canVary && external[g] && varying < 0) {
          relative[g] = VARYING;
          varying = g;
          agreed = true;
        }
      }
    }
    if (!agreed) return null;
    for (let end = Math.min(bucket.length, t + PARTNER_TRIES); canVary && varying < 0 && t < end; t++) {
      const b = bucket[t]!, delta = startOf[b]! - firstStart;
      let odd = -1;
      for (let g = 0; g < groups && odd !== -2; g++) {
        if (placeOf(b, g) === (relative[g] ? delta : 0)) continue;
        odd = external[g] && odd === -1 ? g : -2;
      }
      if (odd >= 0) {
        relative[odd] = VARYING;
        varying = odd;
      }
    }
    // Per member, no call but where a description's origins are first read (a call per group and
    // member was most of folding on a first compile).
    let count = 0;
    for (let m = 0; m < bucket.length; m++) {
      const k = bucket[m]!, d = descOf[k]!, own = originsOf[d] ?? origins(d), shift = startOf[k]! - firstStart;
      const move = copied[k] ? moves[d]! : null, delta = startOf[k]! - descs[d]!.seg.start;
      let member = true;
      for (let g = 0; g < groups && member; g++) {
        const place = own[g]! + (move !== null && move[g] ? delta : 0) - first[g]!;
        if (relative[g] === VARYING) varyingShift[k] = place;
        else member = place === (relative[g] ? shift : 0);
      }
      if (member) found[count++] = k;
    }
    return { relative, count };
  };
  // A bucket may hold bodies whose pointers start apart where the code is the same: a loop
  // entered one iteration later (an accumulator started at the first sample, `loss ? loss.add(t)
  // : t`: its first inner loop ran 20 times from input 0, the 1,860 others 19 from input 1). The
  // first two members decided for the whole bucket, and 790 bodies were emitted as straight code
  // (a probe: the first call 135-232 ms against 52-58). So the members that agree with the
  // bucket's first make a shape, and the rest are tried again, up to LEADER_TRIES times.
  // A description belongs to one shape at most (a straight one is rewritten for it), so the
  // segments sharing a shape's descriptions leave the bucket with its members (planSweeps
  // describes such a copy on its own).
  const found = new Int32Array(members.length);
  for (let b = 0; b < keys; b++) {
    let bucket = members.subarray(bucketStart[b]!, bucketStart[b + 1]!);
    for (let tries = 0; tries < LEADER_TRIES && bucket.length >= MIN_BODIES; tries++) {
      const folded = fold(bucket, found);
      const count = folded?.count ?? 1;
      if (!folded) found[0] = bucket[0]!;
      const shaped = folded !== null && count >= MIN_BODIES && addShape(folded.relative, found.subarray(0, count));
      for (let m = 0; m < count; m++) {
        takenSegment[found[m]!] = 1;
        if (shaped) takenDesc[descOf[found[m]!]!] = 1;
      }
      bucket = untaken(bucket, takenSegment, takenDesc, descOf);
    }
  }
  return { shapes, shapeOf, varyingShift };

  // Turns the immediates `loads` picks in the descriptions of `members` into loads through the
  // group `groupOf` gives. Copies share their body's description: each is rewritten once (the
  // branchy loss: 1,857 members of 33 descriptions).
  function constantsAsLoads(members: Int32Array, loads: (desc: Body, r: Ref) => boolean, groupOf: (desc: Body) => number): void {
    const rewritten = new Uint8Array(descs.length);
    for (let m = 0; m < members.length; m++) {
      const d = descOf[members[m]!]!;
      if (rewritten[d]) continue;
      rewritten[d] = 1;
      const desc = descs[d]!, group = groupOf(desc);
      for (const { refs } of desc.slots) {
        for (const r of refs) {
          if (r.value === undefined || !loads(desc, r)) continue;
          r.value = undefined;
          r.group = group;
        }
      }
    }
  }

  // Makes the shape of `members` (true), or leaves them (a straight body with no moving pointer).
  function addShape(relative: Uint8Array, members: Int32Array): boolean {
    // The function is emitted from the leader's description (a copy's is its body's own, at the
    // body's start; order.shift counts from there).
    const first = descs[descOf[members[0]!]!]!;
    if (straight(first)) {
      // Constants become loads through the pointer that moves with the body (its operands' group
      // of stride 0, the inputs having their own).
      const moving = first.groups.findIndex((g, k) => relative[k] === 1 && g.strides.every((v) => v === 0));
      if (moving < 0) return false;
      constantsAsLoads(members, () => true, () => moving);
      // A constant recorded before everything else the pointer reaches (the body's first op
      // reading one) lies below the pointer's start: the pointer starts there instead, as offsets
      // from it are unsigned (a negative one read far outside the tape and trapped).
      const group = first.groups[moving]!;
      for (const { refs } of first.slots) for (const r of refs) if (r.group === moving) group.origin = Math.min(group.origin, r.first);
    } else if (first.seg.count > 1) {
      // A loop's constants recorded at every iteration, where some member's differ from the
      // description's: loads through the body's own pointer (the softmax loss's features, read
      // by each class: a function per sample before).
      const start = first.seg.start;
      const differs = first.slots.some(({ refs }) => refs.some((r) => r.value !== undefined && perIteration(first, r) &&
        members.some((k) => !Object.is(views.val[r.first + startOf[k]! - start], r.value))));
      if (differs) constantsAsLoads(members, perIteration, (desc) => desc.slots[0]!.self.group);
    }
    const shape = shapes.push({ body: first, relative }) - 1;
    for (let m = 0; m < members.length; m++) shapeOf[members[m]!] = shape;
    return true;
  }
}
