// Bodies of one shape: top-level bodies whose code is the same but for where they sit in the tape.
// Code written by data-dependent control flow (a loss with a branch on each label) has no loop
// over the samples, only short bodies in a few shapes interleaved by the data; each shape becomes
// one function, called once per body with the body's offset, instead of a copy per body.
import { enclosingGroup, type Body, type Ref } from './plan.ts';

/** A shape: the body whose code its function runs, and per top-level pointer group whether it
 *  moves with the body (relative: offset by the caller's shift) or stays (an input, a hoisted
 *  node). */
export interface Shape {
  body: Body;
  relative: Uint8Array;
}

/** Where a body folded into a shape sits: its shape, its offset from the shape's body in bytes of
 *  a region, and its loop's count (runs of equal samples make loops of data-dependent length). */
export interface Folded {
  shape: number;
  shift: number;
  count: number;
}

/** A shape needs this many bodies: below it, a copy per body costs less than the calls. */
const MIN_BODIES = 4;

const number = (v: number): string => (Object.is(v, -0) ? '-0' : String(v));

// Straight top-level code: its constants, immediates in the code of one body, can be loaded from
// the tape instead, so bodies that differ only in them share a function.
const straight = (body: Body): boolean => body.parent === null && body.seg.count === 1 && body.items.every((item) => typeof item === 'number');

function refKey(body: Body, r: Ref): string {
  if (r.value !== undefined) return straight(body) ? `k${r.first - body.seg.start}` : `v${number(r.value)}`;
  return `${r.group}@${r.first - body.groups[r.group]!.origin}${r.constant ? 'c' : ''}s${r.slot}`;
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
  for (const { op, self, refs } of body.slots) out.push(`${op}:${refKey(body, self)}(${refs.map((r) => refKey(body, r)).join()})`);
  out.push(body.local.join(), body.adjointInLocal.join(), body.valueInLocal.join());
  for (const item of body.items) out.push(typeof item === 'number' ? `#${item}` : `{${shapeKey(item)}}`);
  return out.join('|');
}

/** Groups top-level bodies into shapes: bodies with the same key whose pointer groups each either
 *  move with the body or stay put, the same way for all of them, at least MIN_BODIES of them. */
export function foldShapes(bodies: readonly Body[]): { shapes: Shape[]; folded: Map<Body, Folded> } {
  const buckets = new Map<string, Body[]>();
  for (const body of bodies) {
    if (body.seg.period * body.seg.count < 2) continue;
    const key = shapeKey(body);
    const bucket = buckets.get(key);
    if (bucket) bucket.push(body);
    else buckets.set(key, [body]);
  }
  const shapes: Shape[] = [];
  const folded = new Map<Body, Folded>();
  for (const bucket of buckets.values()) {
    if (bucket.length < MIN_BODIES) continue;
    const [first, second] = bucket as [Body, Body];
    const delta = second.seg.start - first.seg.start;
    const relative = new Uint8Array(first.groups.length);
    let foldable = true;
    first.groups.forEach((g, k) => {
      const d = second.groups[k]!.origin - g.origin;
      if (d === delta) relative[k] = 1;
      else if (d !== 0) foldable = false;
    });
    if (!foldable) continue;
    const members = bucket.filter((body) => {
      const shift = body.seg.start - first.seg.start;
      return body.groups.every((g, k) => g.origin - first.groups[k]!.origin === (relative[k] ? shift : 0));
    });
    if (members.length < MIN_BODIES) continue;
    if (straight(first)) {
      // Constants become loads through the pointer that moves with the body (its operands' group
      // of stride 0, the inputs having their own).
      const moving = first.groups.findIndex((g, k) => relative[k] === 1 && g.strides.every((v) => v === 0));
      if (moving < 0) continue;
      for (const body of members) {
        for (const { refs } of body.slots) {
          for (const r of refs) {
            if (r.value === undefined) continue;
            r.value = undefined;
            r.group = moving;
          }
        }
      }
    }
    const shape = shapes.push({ body: first, relative }) - 1;
    for (const body of members) folded.set(body, { shape, shift: 8 * (body.seg.start - first.seg.start), count: body.seg.count });
  }
  return { shapes, folded };
}
