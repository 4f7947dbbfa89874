import { copyNumbers, type Backend, type BatchSeeds, type CustomHandler, type TapeViews } from '../backend.ts';
import { Op } from '../ops.ts';
import { forwardRule, partials, partialZ, partialsTangent, partialZTangent, truthy, zeroGradient } from './rules.ts';
import { VectorRules, isVectorOp } from './vector.ts';

const {
  const: CONST, input: INPUT, arg: ARG, select: SELECT, custom: CUSTOM, add: ADD, sub: SUB, mul: MUL, neg: NEG, square: SQUARE,
  vmeta: VMETA, vconst: VCONST, sin: SIN, cos: COS, exp: EXP, log: LOG, log1p: LOG1P, sqrt: SQRT, tanh: TANH,
} = Op;
const MIN_CAPACITY = 1024;

// The partials of the unary ops the sweeps write out (exp, log, log1p, sqrt): partialsOf's in
// rules.ts, bit for bit (test/op-parity.test.ts), in a function small enough for V8 to inline,
// where partialsOf's switch and registers cost the chain's gradient a tenth (146 -> 133 ns/step).
function writtenOutPartial(code: number, x: number, y: number): number {
  switch (code) {
    case EXP: return y;
    case LOG: return x > 0 ? 1 / x : x === 0 ? Infinity : NaN;
    case LOG1P: return x > -1 ? 1 / (1 + x) : x === -1 ? Infinity : NaN;
    default: return 0.5 / Math.abs(y);
  }
}

// The most bytes a tape's regions take on this engine: what the wasm core's memory holds (4 GiB),
// so both engines refuse the same tapes. Larger typed arrays were given lazily, so a 34 GB outer
// product recorded on a 23 GB machine, to fail only when its pages were touched (a probe).
const MAX_TAPE_BYTES = 2 ** 32;

// As trigSibling in assembly/sweeps.ts: a sin and a cos of one operand recorded side by side hold
// each other's partials. For a sin or cos node i, the node next to it (after, up to `top`, or
// before) that is the other function of operand ia, or -1 (always for any other op).
function trigSibling(op: Uint8Array, a: Int32Array, i: number, code: number, ia: number, top: number): number {
  if (code !== SIN && code !== COS) return -1;
  const want = code === SIN ? COS : SIN;
  return i < top && op[i + 1] === want && a[i + 1] === ia ? i + 1 : i > 0 && op[i - 1] === want && a[i - 1] === ia ? i - 1 : -1;
}

/** d sin a = cos a, d cos a = -sin a: the partial of trig node `code` read from its sibling s. */
function siblingPartial(val: Float64Array, code: number, s: number): number {
  return code === SIN ? val[s]! : -val[s]!;
}
const BASE_NODE_BYTES = 8 + 8 + 4 + 4 + 1;
const TANGENT_NODE_BYTES = 16;

function allocate(capacity: number, tangents: boolean, elements: number): TapeViews {
  return {
    op: new Uint8Array(capacity),
    a: new Int32Array(capacity),
    b: new Int32Array(capacity),
    val: new Float64Array(capacity),
    adj: new Float64Array(capacity),
    tan: tangents ? new Float64Array(capacity) : null,
    tanAdj: tangents ? new Float64Array(capacity) : null,
    xval: new Float64Array(elements),
    xadj: new Float64Array(elements),
    xtan: tangents ? new Float64Array(elements) : null,
    xtanAdj: tangents ? new Float64Array(elements) : null,
  };
}

/** Doubles `current` (from MIN_CAPACITY) until it holds `needed`; past `limit`, all the limit
 *  allows at once (growing a few slots at a time is quadratic). 0 when even that is too small. */
function grownCapacity(current: number, needed: number, limit: number): number {
  let capacity = Math.max(current, MIN_CAPACITY);
  while (capacity < needed) capacity *= 2;
  if (capacity > limit) capacity = Math.floor(limit / 8) * 8;
  return capacity < needed ? 0 : capacity;
}

function copyLiveElements(from: TapeViews, to: TapeViews, live: number): void {
  to.xval.set(from.xval.subarray(0, live));
  to.xadj.set(from.xadj.subarray(0, live));
  if (from.xtan && to.xtan) to.xtan.set(from.xtan.subarray(0, live));
  if (from.xtanAdj && to.xtanAdj) to.xtanAdj.set(from.xtanAdj.subarray(0, live));
}

function copyLive(from: TapeViews, to: TapeViews, live: number): void {
  to.op.set(from.op.subarray(0, live));
  to.a.set(from.a.subarray(0, live));
  to.b.set(from.b.subarray(0, live));
  to.val.set(from.val.subarray(0, live));
  to.adj.set(from.adj.subarray(0, live));
  if (from.tan && to.tan) to.tan.set(from.tan.subarray(0, live));
  if (from.tanAdj && to.tanAdj) to.tanAdj.set(from.tanAdj.subarray(0, live));
}

/** The reference engine: the same structure of arrays as the wasm core, over JS typed arrays,
 *  and the same sweeps. */
export class JsBackend implements Backend {
  readonly kind = 'js' as const;
  views: TapeViews = allocate(0, false, 0);
  capacity = 0;
  elementCapacity = 0;
  private liveElements = 0;
  private readonly vector = new VectorRules(this.views);
  custom: CustomHandler | null = null;
  onTrap: (() => void) | null = null;

  nodeBytes(): number {
    return BASE_NODE_BYTES + (this.views.tan ? TANGENT_NODE_BYTES : 0);
  }

  elementBytes(): number {
    return this.views.xtan ? 32 : 16;
  }

  memoryBytes(): number {
    return this.capacity * this.nodeBytes() + this.elementCapacity * this.elementBytes();
  }

  setLiveElements(n: number): void {
    this.liveElements = n;
  }

  private vectorInput = false;

  setVectorInput(on: boolean): void {
    this.vectorInput = on;
  }

  reserveElements(minElements: number, live: number, maxElements: number): boolean {
    if (minElements <= this.elementCapacity) return true;
    const room = Math.floor((MAX_TAPE_BYTES - this.capacity * this.nodeBytes()) / this.elementBytes());
    const capacity = grownCapacity(this.elementCapacity, minElements, Math.min(maxElements, room));
    if (capacity === 0) return false;
    let next: TapeViews;
    try {
      const t = this.views.tan !== null;
      next = {
        ...this.views,
        xval: new Float64Array(capacity),
        xadj: new Float64Array(capacity),
        xtan: t ? new Float64Array(capacity) : null,
        xtanAdj: t ? new Float64Array(capacity) : null,
      };
    } catch {
      return false;
    }
    copyLiveElements(this.views, next, live);
    this.setViews(next);
    this.elementCapacity = capacity;
    return true;
  }

  private setViews(views: TapeViews): void {
    this.views = views;
    this.vector.views = views;
  }

  reserve(minCapacity: number, live: number, maxCapacity: number): boolean {
    if (minCapacity <= this.capacity) return true;
    const room = Math.floor((MAX_TAPE_BYTES - this.elementCapacity * this.elementBytes()) / this.nodeBytes());
    const capacity = grownCapacity(this.capacity, minCapacity, Math.min(maxCapacity, room));
    return capacity !== 0 && this.reallocate(capacity, this.views.tan !== null, live);
  }

  enableTangents(live: number, maxCapacity: number, maxElements: number): boolean {
    // At the capacities the largest recording set, within the memory limit (see the core's), or
    // where that is too much with tangents, at the live nodes' (as the core shrinks to what fits).
    const capacity = this.fitted(this.capacity, live, maxCapacity), elements = this.fitted(this.elementCapacity, this.liveElements, maxElements);
    return this.views.tan !== null || this.reallocate(capacity, true, live, elements) || (live < capacity && this.reallocate(Math.max(live, MIN_CAPACITY), true, live, elements));
  }

  fitCapacities(maxCapacity: number, maxElements: number, live: number): void {
    const capacity = this.fitted(this.capacity, live, maxCapacity), elements = this.fitted(this.elementCapacity, this.liveElements, maxElements);
    if (capacity < this.capacity || elements < this.elementCapacity) this.reallocate(capacity, this.views.tan !== null, live, elements);
  }

  // A capacity shrunk to at most `most`, never below what is live (nor MIN_CAPACITY).
  private fitted(capacity: number, live: number, most: number): number {
    return Math.min(capacity, Math.max(live, most, MIN_CAPACITY));
  }

  private reallocate(capacity: number, tangents: boolean, live: number, elements = this.elementCapacity): boolean {
    if (capacity * (BASE_NODE_BYTES + (tangents ? TANGENT_NODE_BYTES : 0)) + elements * (tangents ? 32 : 16) > MAX_TAPE_BYTES) return false;
    let next: TapeViews;
    try {
      next = allocate(capacity, tangents, elements);
    } catch {
      return false; // RangeError: the JS heap will not give us that much
    }
    copyLive(this.views, next, live);
    copyLiveElements(this.views, next, this.liveElements);
    this.setViews(next);
    this.capacity = capacity;
    this.elementCapacity = elements;
    return true;
  }

  // Each sweep reads the views here and loops in a method that takes them as arguments: V8
  // allocates a function's feedback vector lazily, during the first long call's loop, so a
  // sweep that read `this.views` itself had no feedback for that read when V8 optimised it
  // for later calls, depending on the timing of its concurrent compile; the code then failed at
  // its entry and the sweep ran unoptimised from there on (the bench's Rosenbrock forward 3.7
  // against 2.1 ns/node, reverse 4.7 against 2.9, in about a third of fresh processes).
  forward(from: number, to: number): void {
    const v = this.views;
    this.forwardOver(v.op, v.a, v.b, v.val, from, to);
  }

  private forwardOver(op: Uint8Array, a: Int32Array, b: Int32Array, val: Float64Array, from: number, to: number): void {
    for (let i = from; i < to; i++) {
      const code = op[i];
      // As in the core: the commonest ops in one switch, before the rarer kinds. The transcendental
      // ones among them are the rules' own one-liners (forwardOf in rules.ts, whose switch and
      // registers cost about 5 ns a node: the chain of bench/per-node.ts 14.7 -> 8.3-10.2 ns/node;
      // test/op-parity.test.ts holds them to the rules bit for bit).
      switch (code) {
        case CONST: case INPUT: continue;
        case ARG: val[i] = 0; continue;
        case ADD: val[i] = val[a[i]] + val[b[i]]; continue;
        case SUB: val[i] = val[a[i]] - val[b[i]]; continue;
        case MUL: val[i] = val[a[i]] * val[b[i]]; continue;
        case NEG: val[i] = -val[a[i]]; continue;
        case SQUARE: { const x = val[a[i]]; val[i] = x * x; continue; }
        case EXP: val[i] = Math.exp(val[a[i]]); continue;
        case LOG: val[i] = Math.log(val[a[i]]); continue;
        case LOG1P: val[i] = Math.log1p(val[a[i]]); continue;
        case SIN: val[i] = Math.sin(val[a[i]]); continue;
        case COS: val[i] = Math.cos(val[a[i]]); continue;
        case SQRT: val[i] = Math.sqrt(val[a[i]]); continue;
        case TANH: val[i] = Math.tanh(val[a[i]]); continue;
      }
      if (code >= VMETA) this.vector.forward(i, code);
      else if (code === SELECT) val[i] = val[truthy(val[a[i]]) ? b[i] : a[i - 1]];
      else if (code === CUSTOM) this.custom!.forward(i);
      else val[i] = forwardRule(code, val[a[i]], val[b[i]], 0);
    }
  }

  reverse(out: number, seed: number, count: number): void {
    this.clearAdjoints(count, false);
    this.views.adj[out] = seed;
    this.sweepReverse(out);
  }

  clearAdjoints(count: number, withTangents: boolean): void {
    // Element adjoints are cleared vector by vector when a sweep first reaches one (claim in
    // vector.ts); clearing the node regions clears their flags.
    this.views.adj.fill(0, 0, count);
    if (withTangents) this.views.tanAdj!.fill(0, 0, count);
  }

  sweepReverseReplay(top: number): void {
    this.sweepReverse(top);
  }

  tangentReplay(from: number, to: number): void {
    this.tangent(from, to);
  }

  reverseTangentReplay(out: number, seed: number, count: number): void {
    this.reverseTangent(out, seed, count);
  }

  // The JS engine sweeps op by op and stores every value and adjoint.
  materialize(): void {}
  materializeTangent(): void {}
  materializeTangents(): void {}
  clearElementTangents(_count: number, elements: number): void {
    this.views.xtan!.fill(0, 0, elements);
  }
  setKeepAdjoints(): void {}
  setHvpOutput(): void {}

  sweepReverse(top: number): void {
    const v = this.views;
    this.sweepReverseOver(v.op, v.a, v.b, v.val, v.adj, top);
  }

  private sweepReverseOver(op: Uint8Array, a: Int32Array, b: Int32Array, val: Float64Array, adj: Float64Array, top: number): void {
    for (let i = top; i >= 0; i--) {
      const g = adj[i];
      if (g === 0) continue;
      const code = op[i];
      const ia = a[i];
      // As in the core: the commonest ops skip the partials table with identical results, in
      // one switch before the rarer kinds are told apart.
      switch (code) {
        case CONST: case INPUT: case ARG: continue;
        case ADD: adj[ia] += g; adj[b[i]] += g; continue;
        case SUB: adj[ia] += g; adj[b[i]] -= g; continue;
        case MUL: {
          const ib = b[i];
          const x = val[ia], z = val[ib];
          if (z !== 0) adj[ia] += g * z;
          if (x !== 0) adj[ib] += g * x;
          continue;
        }
        case NEG: adj[ia] -= g; continue;
        case SQUARE: {
          const pa = 2 * val[ia];
          if (pa !== 0) adj[ia] += g * pa;
          continue;
        }
        case EXP: case LOG: case LOG1P: case SQRT: {
          const pa = writtenOutPartial(code, val[ia], val[i]);
          if (pa !== 0) adj[ia] += g * pa;
          continue;
        }
      }
      if (code >= VMETA) {
        this.vector.reverse(i, code, g);
        continue;
      }
      if (code === SELECT) {
        adj[truthy(val[ia]) ? b[i] : a[i - 1]] += g;
        continue;
      }
      if (code === CUSTOM) {
        this.custom!.reverse(i, g);
        continue;
      }
      const sibling = trigSibling(op, a, i, code, ia, top);
      if (sibling >= 0) {
        const pa = siblingPartial(val, code, sibling);
        if (pa !== 0) adj[ia] += g * pa;
        continue;
      }
      const ib = b[i];
      const pa = partials(code, val[ia], val[ib], val[i]);
      const pb = partialZ[0];
      if (pa !== 0) adj[ia] += g * pa;
      if (pb !== 0) adj[ib] += g * pb;
    }
  }

  tangent(from: number, to: number): void {
    const v = this.views;
    this.tangentOver(v.op, v.a, v.b, v.val, v.tan!, from, to);
  }

  private tangentOver(op: Uint8Array, a: Int32Array, b: Int32Array, val: Float64Array, tan: Float64Array, from: number, to: number): void {
    for (let i = from; i < to; i++) {
      const code = op[i];
      if (code <= ARG) continue;
      if (code >= VMETA) {
        this.vector.tangent(i, code);
        continue;
      }
      const ia = a[i];
      if (code === SELECT) {
        tan[i] = tan[truthy(val[ia]) ? b[i] : a[i - 1]];
        continue;
      }
      if (code === CUSTOM) {
        this.custom!.tangent(i);
        continue;
      }
      // As in the core: no tangent, not even a NaN one, through the zero-gradient ops.
      if (zeroGradient(code)) {
        tan[i] = 0;
        continue;
      }
      const ib = b[i];
      const ta = tan[ia];
      const tb = tan[ib];
      if (ta === 0 && tb === 0) {
        tan[i] = 0;
        continue;
      }
      // As in the core: a term left out where its tangent or its partial is 0 (as the reverse
      // sweep leaves out g·p), and the commonest ops without the partials table.
      switch (code) {
        case ADD: tan[i] = (ta !== 0 ? ta : 0) + (tb !== 0 ? tb : 0); continue;
        case SUB: tan[i] = (ta !== 0 ? ta : 0) + (tb !== 0 ? -tb : 0); continue;
        case MUL: {
          const x = val[ia]!, z = val[ib]!;
          tan[i] = (ta !== 0 && z !== 0 ? ta * z : 0) + (tb !== 0 && x !== 0 ? tb * x : 0);
          continue;
        }
        case NEG: tan[i] = (ta !== 0 ? -ta : 0) + 0; continue;
        case SQUARE: {
          const p = 2 * val[ia]!;
          tan[i] = (ta !== 0 && p !== 0 ? ta * p : 0) + 0;
          continue;
        }
        case EXP: case LOG: case LOG1P: case SQRT: {
          const p = writtenOutPartial(code, val[ia]!, val[i]!);
          tan[i] = (ta !== 0 && p !== 0 ? ta * p : 0) + 0;
          continue;
        }
      }
      const sibling = trigSibling(op, a, i, code, ia, to - 1);
      const pa = sibling >= 0 ? siblingPartial(val, code, sibling) : partials(code, val[ia], val[ib], val[i]);
      const pb = sibling >= 0 ? 0 : partialZ[0];
      tan[i] = (ta !== 0 && pa !== 0 ? ta * pa : 0) + (tb !== 0 && pb !== 0 ? tb * pb : 0);
    }
  }

  reverseTangent(out: number, seed: number, count: number): void {
    this.clearAdjoints(count, true);
    this.views.adj[out] = seed;
    this.sweepReverseTangent(out);
  }

  sweepReverseTangent(top: number): void {
    const v = this.views;
    this.sweepReverseTangentOver(v.op, v.a, v.b, v.val, v.adj, v.tan!, v.tanAdj!, top);
  }

  private sweepReverseTangentOver(
    op: Uint8Array, a: Int32Array, b: Int32Array, val: Float64Array, adj: Float64Array, tan: Float64Array, tanAdj: Float64Array, top: number,
  ): void {
    for (let i = top; i >= 0; i--) {
      const g = adj[i];
      const gt = tanAdj[i];
      if (g === 0 && gt === 0) continue;
      const code = op[i];
      if (code <= ARG) continue;
      if (code >= VMETA) {
        this.vector.reverseTangent(i, code, g, gt);
        continue;
      }
      const ia = a[i];
      if (code === SELECT) {
        const s = truthy(val[ia]) ? b[i] : a[i - 1];
        adj[s] += g;
        tanAdj[s] += gt;
        continue;
      }
      if (code === CUSTOM) {
        this.custom!.reverseTangent(i, g, gt);
        continue;
      }
      const ib = b[i];
      const x = val[ia], z = val[ib], y = val[i];
      // As in the core: the commonest ops with their partials put in.
      switch (code) {
        case ADD:
          if (g !== 0) { adj[ia] += g; adj[ib] += g; }
          if (gt !== 0) { tanAdj[ia] += gt; tanAdj[ib] += gt; }
          continue;
        case SUB:
          if (g !== 0) { adj[ia] += g; adj[ib] -= g; }
          if (gt !== 0) { tanAdj[ia] += gt; tanAdj[ib] -= gt; }
          continue;
        case NEG:
          if (g !== 0) adj[ia] -= g;
          if (gt !== 0) tanAdj[ia] -= gt;
          continue;
        case MUL: {
          if (g !== 0 && z !== 0) adj[ia] += g * z;
          if (g !== 0 && x !== 0) adj[ib] += g * x;
          const dpa = g !== 0 ? tan[ib] : 0, dpb = g !== 0 ? tan[ia] : 0;
          const ta = (gt !== 0 && z !== 0 ? gt * z : 0) + (dpa !== 0 ? g * dpa : 0);
          const tb = (gt !== 0 && x !== 0 ? gt * x : 0) + (dpb !== 0 ? g * dpb : 0);
          if (ta !== 0) tanAdj[ia] += ta;
          if (tb !== 0) tanAdj[ib] += tb;
          continue;
        }
        case SQUARE: {
          const pa = 2 * x;
          if (g !== 0 && pa !== 0) adj[ia] += g * pa;
          const dpa = g !== 0 ? 2 * tan[ia] : 0;
          const ta = (gt !== 0 && pa !== 0 ? gt * pa : 0) + (dpa !== 0 ? g * dpa : 0);
          if (ta !== 0) tanAdj[ia] += ta;
          continue;
        }
      }
      const sibling = trigSibling(op, a, i, code, ia, top);
      const pa = sibling >= 0 ? siblingPartial(val, code, sibling) : partials(code, x, z, y);
      const pb = sibling >= 0 ? 0 : partialZ[0];
      if (g !== 0 && pa !== 0) adj[ia] += g * pa;
      if (g !== 0 && pb !== 0) adj[ib] += g * pb;
      const dpa = g !== 0 ? partialsTangent(code, x, z, y, tan[ia], tan[ib], tan[i]) : 0;
      const dpb = g !== 0 ? partialZTangent[0] : 0;
      const ta = (gt !== 0 && pa !== 0 ? gt * pa : 0) + (dpa !== 0 ? g * dpa : 0);
      const tb = (gt !== 0 && pb !== 0 ? gt * pb : 0) + (dpb !== 0 ? g * dpb : 0);
      if (ta !== 0) tanAdj[ia] += ta;
      if (tb !== 0) tanAdj[ib] += tb;
    }
  }

  private guardNodes = new Int32Array(0);
  private guardExpected = new Float64Array(0);

  setGuards(nodes: Int32Array, expected: Float64Array): void {
    this.guardNodes = nodes.slice();
    this.guardExpected = expected.slice();
  }

  replayForward(x: ArrayLike<number>, nInputs: number, count: number): number {
    return this.replayRow(x, 0, nInputs, count);
  }

  // The inputs from x[first]: a batch's row without a subarray (an allocation a row: a probe).
  private replayRow(x: ArrayLike<number>, first: number, nInputs: number, count: number): number {
    const val = this.views.val;
    if (this.vectorInput) {
      const xval = this.views.xval;
      for (let k = 0; k < nInputs; k++) xval[k] = x[first + k]!;
      this.forward(2, count);
    } else {
      for (let k = 0; k < nInputs; k++) val[k] = x[first + k]!;
      this.forward(nInputs, count);
    }
    const nodes = this.guardNodes, expected = this.guardExpected;
    for (let k = 0; k < nodes.length; k++) if (val[nodes[k]!] !== expected[k]) return nodes[k]!;
    return -1;
  }

  gradientBatch(X: Float64Array, fromRow: number, toRow: number, nInputs: number, count: number, out: number, G: Float64Array, values: Float64Array | null, seeds?: BatchSeeds): number {
    for (let r = fromRow; r < toRow; r++) {
      if (this.replayRow(X, r * nInputs, nInputs, count) >= 0) return r;
      if (seeds) {
        // As vjp: clear, add each cotangent entry to its output's adjoint, sweep.
        const { rows, outputs } = seeds, width = outputs.length;
        this.clearAdjoints(count, false);
        const { adj, val } = this.views;
        for (let j = 0; j < width; j++) adj[outputs[j]!] += rows[r * width + j]!;
        this.sweepReverseReplay(out);
        if (values) for (let j = 0; j < width; j++) values[r * width + j] = val[outputs[j]!]!;
        copyNumbers(this.views.adj, 0, G, r * nInputs, nInputs);
        continue;
      }
      if (values) values[r] = this.views.val[out]!;
      this.reverse(out, 1, count);
      if (this.vectorInput && this.views.adj[1] === 0) G.fill(0, r * nInputs, (r + 1) * nInputs); // no rule reached the input
      else copyNumbers(this.vectorInput ? this.views.xadj : this.views.adj, 0, G, r * nInputs, nInputs);
    }
    return toRow;
  }

  firstNonFinite(from: number, to: number, values: boolean): number {
    const data = values ? this.views.val : this.views.adj;
    const op = this.views.op;
    for (let i = from; i < to; i++) {
      const v = data[i]!;
      const code = op[i]!;
      if (v - v !== 0 && (!values || code > INPUT)) return i;
      if (isVectorOp(code) && (!values || code > VCONST) && this.vector.nonFinite(i, values)) return i;
    }
    return -1;
  }
}
