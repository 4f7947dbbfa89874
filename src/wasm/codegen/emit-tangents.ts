// The tangent emitter: the function bodies of the tangent sweep (jvp) and the reverse tangent
// sweep (hvp), made on the first jvp or hvp only.
import { Op, ZERO_GRADIENT } from '../../ops.ts';
import {
  carriedAdjointsStart, carriedValuesStart, emitAddToLocal, emitAddToMemory, emitCarriedTerm, emitNest, emitTruthy, emitValue,
  nestLayout,
} from './emit-replay.ts';
import { nestNeeds, OPERANDS, type Body, type Ref } from './plan.ts';
import {
  emitCoreSecondOrder, emitSecondOrder, FN_PARTIAL_Z, FN_PARTIALS, LINEAR, SECOND_ORDER, TANGENT_PARTIAL,
} from './rules.ts';
import {
  Bytes, F64, W_Call, W_Else, W_End, W_F64Add, W_F64Eq, W_F64Load, W_F64Mul, W_F64Ne, W_F64Neg, W_F64Store, W_F64Sub,
  W_I32And, W_I32Or, W_If, W_Select, W_Void,
} from './wasm.ts';

// ───────────────────────────── tangent sweeps (jvp, hvp) ─────────────────────────────
// The interpreter's `tangent` and `sweepReverseTangent` (assembly/sweeps.ts), node for node and in
// the same arithmetic order, with every test the interpreter makes that cannot change a result
// left out, and partials known when generating (add, sub, neg, a constant factor) folded in:
//
// - The interpreter skips a node whose operand tangents (tangent sweep) or whose adjoint and
//   adjoint tangent (reverse sweep) are all 0. Without the skip the node computes exactly the
//   same: every term it would add is then the +0 of a failed test.
// - An adjoint and an adjoint tangent are never -0: they start at +0 and only gain sums, and a sum
//   is -0 only when both terms are. So adding ±0 to one changes nothing, and a term the
//   interpreter leaves out when it is 0 (`if (t != 0) tanAdj += t`) may be added anyway.
// - What remains are the tests that keep a 0 from meeting an infinite or NaN factor
//   (`g != 0 && p != 0 ? g p : 0`): they become selects, not branches, except around the calls
//   to the core's rules. A test against a factor known when generating folds away: g·c for a
//   finite nonzero constant c is ±0 when g is +0, which adds nothing.
// - Tangents are stored as they are (jvp returns them, -0 included), so the tangent sweep keeps its
//   selects and its `+ 0` wherever they decide the sign of a zero.
//
// Values and tangents are read from memory (the tangent sweep keeps a tangent used a few nodes
// later in its iteration in a local too, as the forward sweep does values). Adjoints and
// adjoint tangents of nodes used only within their iteration stay in locals, as in the reverse
// sweep; the rest live in memory.

// Params 0 valBase, 1 adjBase, 2 tanBase, 3 tanAdjBase; the nest's counters and pointers for the
// four regions; then f64 temporaries and two banks of slot locals (adjoints and adjoint tangents
// in the reverse sweep, tangents in the tangent sweep).
const TEMPORARIES = 12;
function tangentLayout(bodies: readonly Body[], params = 4) {
  const needs = nestNeeds(bodies);
  const nest = nestLayout(params, 4, needs);
  const f64 = nest.f64;
  return {
    nest,
    g: f64, gt: f64 + 1, x: f64 + 2, z: f64 + 3, y: f64 + 4, pa: f64 + 5, pb: f64 + 6, dpa: f64 + 7, dpb: f64 + 8,
    ta: f64 + 9, tb: f64 + 10, c: f64 + 11,
    slot: (body: Body, k: number) => f64 + TEMPORARIES + body.localBase + k,
    slotTangent: (body: Body, k: number) => f64 + TEMPORARIES + needs.slotLocals + body.localBase + k,
    declare(fn: Bytes) { nest.declare(fn, TEMPORARIES + 2 * needs.slotLocals); },
  };
}
type Layout = ReturnType<typeof tangentLayout>;
const VAL = 0, ADJ = 1, TAN = 2, TAN_ADJ = 3;

/** A factor as the generator knows it: 0 for certain (a constant's tangent, a unary op's second
 *  partial), a constant, or a value in an f64 local. */
type Term = { kind: 'zero' } | { kind: 'const'; c: number } | { kind: 'local'; local: number };
const ZERO: Term = { kind: 'zero' };
const constant = (c: number): Term => ({ kind: 'const', c });
const inLocal = (local: number): Term => ({ kind: 'local', local });

// Values of the operands the spelled-out partials (and their tangents) read; every other op
// calls the core's rules with x, z and y.
const READS: Partial<Record<number, string>> = {
  [Op.add]: '', [Op.sub]: '', [Op.neg]: '', [Op.mul]: 'xz', [Op.div]: 'zy', [Op.recip]: 'y', [Op.square]: 'x',
  [Op.sqrt]: 'y', [Op.exp]: 'y',
};

// 'tangent': the tangent sweep; 'fused': values and tangents in one sweep (values of the same
// iteration in slot locals, the node's own value in L.y); 'reverse': the reverse tangent sweep.
type Mode = 'tangent' | 'fused' | 'reverse';

function tangentEmitters(fn: Bytes, body: Body, L: Layout, mode: Mode) {
  const tangentsInLocals = mode !== 'reverse';
  const offset = (r: Ref): number => 8 * (r.first - body.groups[r.group]!.origin);
  const load = (region: number, r: Ref): void => {
    if (r.value !== undefined) return fn.f64Const(region === VAL ? r.value : 0);
    fn.get(L.nest.pointer(region, body, r.group));
    fn.memory(W_F64Load, offset(r));
  };
  // A carried value's tangent rides along in the other bank of its local (see plan.ts).
  const cachedTangent = (r: Ref): number =>
    !tangentsInLocals ? -1
      : r.slot >= 0 && body.valueInLocal[r.slot] ? L.slotTangent(body, body.local[r.slot]!)
      : r.carried >= 0 && body.valueCarried[r.carried] ? L.slotTangent(body, body.local[r.carried]!) : -1;
  // A tangent as a term (into `local` if it has to be loaded).
  const tangentTerm = (r: Ref, local: number): Term => {
    if (r.constant) return ZERO;
    const cached = cachedTangent(r);
    if (cached >= 0) return inLocal(cached);
    load(TAN, r); fn.set(local);
    return inLocal(local);
  };
  const tangentOf = (r: Ref): void => {
    if (r.constant) return fn.f64Const(0);
    const cached = cachedTangent(r);
    if (cached >= 0) return fn.get(cached);
    load(TAN, r);
  };
  const push = (t: Term): void => {
    if (t.kind === 'local') fn.get(t.local);
    else fn.f64Const(t.kind === 'const' ? t.c : 0);
  };
  // i32: the local (or constant) is nonzero.
  const nonZero = (t: Term): void => { push(t); fn.f64Const(0); fn.byte(W_F64Ne); };
  // (p != 0 && q != 0) ? p q : 0 for a local p, as the reverse sweep adds it to an adjoint, whose
  // sum it may change by ±0: null when it is 0 for certain.
  const product = (p: number, q: Term): (() => void) | null => {
    if (q.kind === 'zero' || (q.kind === 'const' && q.c === 0)) return null;
    if (q.kind === 'const' && Number.isFinite(q.c)) return scaled(p, q.c);
    return () => {
      fn.get(p); push(q); fn.byte(W_F64Mul);
      fn.f64Const(0);
      fn.get(p); fn.f64Const(0); fn.byte(W_F64Ne);
      if (q.kind === 'local') { nonZero(q); fn.byte(W_I32And); }
      fn.byte(W_Select);
    };
  };
  // p c for a finite constant c (p itself for 1, -p for -1: the same bits, NaN aside).
  const scaled = (p: number, c: number) => (): void => {
    fn.get(p);
    if (c === -1) fn.byte(W_F64Neg);
    else if (c !== 1) { fn.f64Const(c); fn.byte(W_F64Mul); }
  };
  const sum = (a: (() => void) | null, b: (() => void) | null): (() => void) | null =>
    a && b ? () => { a(); b(); fn.byte(W_F64Add); } : a ?? b;
  // An operand's value: an immediate, or loaded once into `local`.
  // In the fused sweep a slot's partials come after its value, which has then replaced the one a
  // read of its own previous value (consumer === r.carried) needs: that one is read from memory.
  const valueLocal = (r: Ref, consumer = -1): number =>
    mode !== 'fused' ? -1
      : r.slot >= 0 && body.valueInLocal[r.slot] ? L.slot(body, body.local[r.slot]!)
      : r.carried >= 0 && r.carried !== consumer && body.valueCarried[r.carried] ? L.slot(body, body.local[r.carried]!) : -1;
  // An operand's value on the stack: an immediate, a slot local (fused sweep) or memory.
  const loadValue = (r: Ref): void => {
    const local = valueLocal(r);
    if (local >= 0) fn.get(local);
    else load(VAL, r);
  };
  // An operand's value for the partials: an immediate, a slot local, or loaded once into `local`.
  const valueGetter = (r: Ref, local: number, needed: boolean, consumer: number): (() => void) => {
    if (r.value !== undefined) { const v = r.value; return () => fn.f64Const(v); }
    const cached = valueLocal(r, consumer);
    if (cached >= 0) return () => fn.get(cached);
    if (needed) { load(VAL, r); fn.set(local); }
    return () => fn.get(local);
  };
  // pa and pb as `partials` in assembly/ops.ts computes them, as terms: add, sub, neg and mul
  // need no code (mul's are its operands' values); the rest are spelled out (TANGENT_PARTIAL) or
  // the core's own function. x, z, y are left in L.x, L.z, L.y (or are immediates) for
  // `partialTangents`.
  const partials = (op: number, x: Ref, z: Ref | undefined, self: Ref) => {
    const binary = OPERANDS[op] === 2;
    const reads = READS[op] ?? 'xzy';
    const getX = valueGetter(x, L.x, reads.includes('x'), self.slot);
    const getZ = binary ? valueGetter(z!, L.z, reads.includes('z'), self.slot) : getX;
    // The fused sweep has just computed y into L.y.
    const getY = mode === 'fused' ? () => fn.get(L.y) : valueGetter(self, L.y, reads.includes('y'), self.slot);
    const values = { x: getX, z: getZ, y: getY };
    const asTerm = (r: Ref, local: number): Term => {
      if (r.value !== undefined) return constant(r.value);
      const cached = valueLocal(r, self.slot);
      return inLocal(cached >= 0 ? cached : local);
    };
    let pa: Term, pb: Term;
    if (op === Op.add) [pa, pb] = [constant(1), constant(1)];
    else if (op === Op.sub) [pa, pb] = [constant(1), constant(-1)];
    else if (op === Op.neg) [pa, pb] = [constant(-1), ZERO];
    else if (op === Op.mul) [pa, pb] = [asTerm(z!, L.z), asTerm(x, L.x)];
    else {
      const own = TANGENT_PARTIAL[op];
      if (own) {
        own(fn, getX, getZ, getY, L);
      } else {
        fn.i32Const(op); getX(); getZ(); getY();
        fn.byte(W_Call); fn.u32(FN_PARTIALS);
        fn.set(L.pa);
        if (binary) { fn.byte(W_Call); fn.u32(FN_PARTIAL_Z); fn.set(L.pb); }
      }
      // A unary op's second partial is 0 (`partials` leaves partialZ at 0).
      [pa, pb] = [inLocal(L.pa), binary ? inLocal(L.pb) : ZERO];
    }
    return { pa, pb, values, binary };
  };
  return { offset, load, loadValue, tangentTerm, tangentOf, push, nonZero, product, scaled, sum, partials };
}

// Pushes the tangent of a slot (not an input, constant or arg), as the interpreter's tangent
// sweep computes it: (ta != 0 && pa != 0 ? ta pa : 0) + (tb != 0 && pb != 0 ? tb pb : 0), or 0
// when ta and tb are 0 (a unary op's pb is 0: its second term is +0).
function tangentRule(fn: Bytes, body: Body, L: Layout, E: ReturnType<typeof tangentEmitters>) {
  const { load, tangentTerm, tangentOf, push, scaled, product, partials } = E;
  // (t != 0 && p != 0 ? t p : 0), or null where it is +0 for certain (a zero tangent or partial):
  // the reverse sweep's product, but for a finite nonzero constant p, whose product is t·c
  // unmasked (±0 for a zero t, which the sum with the other term could keep as −0).
  const term = (t: Term, p: Term): (() => void) | null => {
    if (t.kind !== 'local') return null;
    if (!(p.kind === 'const' && Number.isFinite(p.c) && p.c !== 0)) return product(t.local, p);
    return () => {
      fn.get(t.local); push(p); fn.byte(W_F64Mul);
      fn.f64Const(0);
      fn.get(t.local); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_Select);
    };
  };
  // The same when the other term is +0: then (t != 0 ? t c : 0) + 0 is t c + 0 for a finite
  // nonzero constant c (a zero t gives ±0, and + 0 makes it +0 either way).
  const alone = (t: Term, p: Term): (() => void) | null => {
    if (t.kind === 'local' && p.kind === 'const' && Number.isFinite(p.c) && p.c !== 0) return scaled(t.local, p.c);
    return term(t, p);
  };
  return (op: number, self: Ref, refs: readonly Ref[]): void => {
    const [x, z, w] = refs as [Ref, Ref?, Ref?];
    if (op === Op.select) {
      // tan(i) = tan(branch taken)
      tangentOf(z!); tangentOf(w!); emitTruthy(fn, () => load(VAL, x), L.c); fn.byte(W_Select);
      return;
    }
    // No tangent through the zero-gradient ops, not even a NaN one (as the interpreter).
    if (ZERO_GRADIENT[op]) {
      fn.f64Const(0);
      return;
    }
    const ta = tangentTerm(x, L.ta);
    const binary = OPERANDS[op] === 2;
    const tb = binary ? tangentTerm(z!, L.tb) : ta;
    if (ta.kind !== 'local' && tb.kind !== 'local') {
      fn.f64Const(0);
      return;
    }
    if (binary && (op === Op.add || op === Op.sub) && ta.kind === 'local' && tb.kind === 'local') {
      // (ta != 0 ? ta : 0) + (tb != 0 ? ±tb : 0) is ta ± tb + 0: the two differ only when both
      // tangents are zero, and then + 0 makes the sum +0.
      fn.get(ta.local); fn.get(tb.local); fn.byte(op === Op.add ? W_F64Add : W_F64Sub);
      fn.f64Const(0); fn.byte(W_F64Add);
      return;
    }
    // An op the core's rules compute is skipped where both tangents are 0, as the interpreter
    // does (a jvp along one input leaves most tangents 0): the calls cost more than the test.
    const calls = READS[op] === undefined;
    if (calls) {
      push(ta); fn.f64Const(0); fn.byte(W_F64Eq);
      push(tb); fn.f64Const(0); fn.byte(W_F64Eq);
      fn.byte(W_I32And);
      fn.byte(W_If); fn.byte(F64);
      fn.f64Const(0);
      fn.byte(W_Else);
    }
    const { pa, pb } = partials(op, x, z, self);
    const termA = term(ta, pa), termB = binary ? term(tb, pb) : null;
    if (termA && termB) {
      termA(); termB(); fn.byte(W_F64Add);
    } else if (termA || termB) {
      (termA ? alone(ta, pa) : alone(tb, pb))!();
      fn.f64Const(0); fn.byte(W_F64Add);
    } else {
      fn.f64Const(0);
    }
    if (calls) fn.byte(W_End);
  };
}

export function emitTangent(bodies: Body[], relative: Uint8Array | null = null): Bytes {
  const L = tangentLayout(bodies, relative ? 6 : 4);
  const fn = new Bytes();
  L.declare(fn);
  const slotEmitter = (body: Body) => {
    const E = tangentEmitters(fn, body, L, 'tangent');
    const tangent = tangentRule(fn, body, L, E);
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return;
      const cached = body.valueInLocal[self.slot] || body.valueCarried[self.slot] ? L.slotTangent(body, body.local[self.slot]!) : -1;
      fn.get(L.nest.pointer(TAN, body, self.group));
      tangent(op, self, refs);
      if (cached >= 0) fn.tee(cached);
      fn.memory(W_F64Store, E.offset(self));
    };
  };
  const beforeLoop = carriedValuesStart(fn, L.nest, [TAN], (_, b, k) => L.slotTangent(b, k));
  for (const body of bodies) emitNest(fn, body, false, [VAL, TAN], L.nest, slotEmitter, relative ? { param: 4, relative } : null, beforeLoop);
  fn.byte(W_End);
  return fn;
}

/** hvp's forward half in one sweep: each node's value (as the forward sweep) and its tangent (as
 *  the tangent sweep), the values of the iteration read from locals. Clearing the adjoints here
 *  too (where the reverse tangent sweep keeps them in memory) measured slower than the core's
 *  clearing pass: Rosenbrock n = 10^4, 135 µs against 61 µs for this sweep and 36 µs for the
 *  pass, each store to a line of adj or tanAdj not in cache reading it first. */
export function emitForwardTangent(bodies: Body[], relative: Uint8Array | null = null): Bytes {
  const L = tangentLayout(bodies, relative ? 6 : 4);
  const fn = new Bytes();
  L.declare(fn);
  const slotEmitter = (body: Body) => {
    const E = tangentEmitters(fn, body, L, 'fused');
    const tangent = tangentRule(fn, body, L, E);
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return; // inputs and constants are given; arg values stay 0
      const cached = body.valueInLocal[self.slot] || body.valueCarried[self.slot] ? body.local[self.slot]! : -1;
      const offset = E.offset(self);
      fn.get(L.nest.pointer(VAL, body, self.group));
      emitValue(fn, op, refs, E.loadValue, L);
      fn.tee(L.y);
      if (cached >= 0) fn.tee(L.slot(body, cached));
      fn.memory(W_F64Store, offset);
      fn.get(L.nest.pointer(TAN, body, self.group));
      tangent(op, self, refs);
      if (cached >= 0) fn.tee(L.slotTangent(body, cached));
      fn.memory(W_F64Store, offset);
    };
  };
  const beforeLoop = carriedValuesStart(fn, L.nest, [VAL, TAN], (region, b, k) => (region === VAL ? L.slot : L.slotTangent)(b, k));
  for (const body of bodies) emitNest(fn, body, false, [VAL, TAN], L.nest, slotEmitter, relative ? { param: 4, relative } : null, beforeLoop);
  fn.byte(W_End);
  return fn;
}

/** The reverse tangent sweep; its fifth parameter, when nonzero, has it set each adjoint and
 *  adjoint tangent it reads from memory back to +0 once read (hvp's fused path: the next such
 *  sweep then finds them cleared, with no pass over the regions; the stores hit lines just read). */
export function emitReverseTangent(bodies: Body[], relative: Uint8Array | null = null): Bytes {
  const L = tangentLayout(bodies, relative ? 7 : 5);
  const RESET = 4;
  const fn = new Bytes();
  L.declare(fn);
  const slotEmitter = (body: Body) => {
    const { offset, load, tangentTerm, tangentOf, product, sum, partials } = tangentEmitters(fn, body, L, 'reverse');
    // As in the reverse sweep: an adjoint (and its tangent) kept in locals starts at +0 in each
    // iteration, zeroed just before its first consumer's code in sweep order.
    // Carried adjoints (and their tangents) stay in their locals from one iteration to the
    // previous one, as in the reverse sweep: never zeroed here but after their node reads them.
    const started = Uint8Array.from(body.adjointCarried);
    const inLocals = (r: Ref): boolean => r.slot >= 0 && (body.adjointInLocal[r.slot] === 1 || body.adjointCarried[r.slot] === 1);
    const bank = (region: number, slot: number): number => (region === ADJ ? L.slot : L.slotTangent)(body, body.local[slot]!);
    const localOf = (region: number, r: Ref): number => bank(region, r.slot);
    const counter = L.nest.counter(body.depth);
    // adj[r] += contribution (or its tangent), nothing for a constant.
    const accumulate = (region: number, r: Ref, contribution: (() => void) | null): void => {
      if (r.constant || !contribution) return;
      if (r.carried >= 0 && body.adjointCarried[r.carried]) {
        emitCarriedTerm(fn, counter,
          () => emitAddToMemory(fn, L.nest.pointer(region, body, r.group), offset(r), contribution),
          () => emitAddToLocal(fn, bank(region, r.carried), contribution));
        return;
      }
      if (inLocals(r)) emitAddToLocal(fn, localOf(region, r), contribution);
      else emitAddToMemory(fn, L.nest.pointer(region, body, r.group), offset(r), contribution);
    };
    const read = (region: number, r: Ref, into: number): void => {
      if (inLocals(r)) fn.get(localOf(region, r));
      else load(region, r);
      fn.set(into);
    };
    // if (reset) { adj[r] = 0; tanAdj[r] = 0 }; a carried node's locals start again at +0.
    const reset = (r: Ref): void => {
      if (r.slot >= 0 && body.adjointCarried[r.slot]) {
        for (const region of [ADJ, TAN_ADJ]) { fn.f64Const(0); fn.set(bank(region, r.slot)); }
        return;
      }
      if (inLocals(r)) return;
      fn.get(RESET);
      fn.byte(W_If); fn.byte(W_Void);
      for (const region of [ADJ, TAN_ADJ]) {
        fn.get(L.nest.pointer(region, body, r.group));
        fn.f64Const(0);
        fn.memory(W_F64Store, offset(r));
      }
      fn.byte(W_End);
    };
    const get = (local: number) => (): void => fn.get(local);
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return;
      if (ZERO_GRADIENT[op] || refs.every((r) => r.constant)) {
        if (body.adjointCarried[s]) reset(self);
        return;
      }
      // Adjoints in locals that no consumer fed are exactly 0: the interpreter skips the node.
      if (inLocals(self) && !started[self.slot]) return;
      for (const r of refs) {
        if (r.constant || !inLocals(r) || started[r.slot]) continue;
        started[r.slot] = 1;
        fn.f64Const(0); fn.set(localOf(ADJ, r));
        fn.f64Const(0); fn.set(localOf(TAN_ADJ, r));
      }
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      read(ADJ, self, L.g);
      read(TAN_ADJ, self, L.gt);
      reset(self);
      if (op === Op.select) {
        emitTruthy(fn, () => load(VAL, x), L.c);
        fn.byte(W_If); fn.byte(W_Void);
        accumulate(ADJ, z!, get(L.g)); accumulate(TAN_ADJ, z!, get(L.gt));
        fn.byte(W_Else);
        accumulate(ADJ, w!, get(L.g)); accumulate(TAN_ADJ, w!, get(L.gt));
        fn.byte(W_End);
        return;
      }
      // An op the core's rules compute is skipped where g and gt are 0, as the interpreter does:
      // the calls cost more than the test.
      const calls = READS[op] === undefined;
      if (calls) {
        fn.get(L.g); fn.f64Const(0); fn.byte(W_F64Ne);
        fn.get(L.gt); fn.f64Const(0); fn.byte(W_F64Ne);
        fn.byte(W_I32Or);
        fn.byte(W_If); fn.byte(W_Void);
      }
      const { pa, pb, values, binary } = partials(op, x, z, self);
      // adjoints: (g != 0 && p != 0) ? g p : 0
      accumulate(ADJ, x, product(L.g, pa));
      if (binary) accumulate(ADJ, z!, product(L.g, pb));
      // dpa, dpb: the partials' directional derivatives (the interpreter's are 0 where g is 0,
      // and so are the terms g dp below, which test g)
      let dpa: Term = ZERO, dpb: Term = ZERO;
      if (op === Op.mul) {
        dpa = tangentTerm(z!, L.ta);
        dpb = tangentTerm(x, L.tb);
      } else if (!LINEAR.has(op)) {
        const operands = { ...values, tx: () => tangentOf(x), tz: () => tangentOf(binary ? z! : x), ty: () => tangentOf(self) };
        if (SECOND_ORDER[op]) {
          emitSecondOrder(fn, op, operands, binary, () => fn.set(L.dpa), () => fn.set(L.dpb), false);
          dpa = inLocal(L.dpa);
          if (op === Op.div) dpb = inLocal(L.dpb);
        } else {
          // The core's rule, called only where g != 0 (as the interpreter does).
          fn.get(L.g); fn.f64Const(0); fn.byte(W_F64Ne);
          fn.byte(W_If); fn.byte(W_Void);
          emitCoreSecondOrder(fn, op, operands, () => fn.set(L.dpa), () => fn.set(L.dpb));
          fn.byte(W_Else);
          fn.f64Const(0); fn.set(L.dpa); fn.f64Const(0); fn.set(L.dpb);
          fn.byte(W_End);
          dpa = inLocal(L.dpa);
          // A unary op's partialZTangent is 0.
          if (binary) dpb = inLocal(L.dpb);
        }
      }
      // adjoint tangents: (gt != 0 && p != 0 ? gt p : 0) + (g != 0 && dp != 0 ? g dp : 0)
      accumulate(TAN_ADJ, x, sum(product(L.gt, pa), product(L.g, dpa)));
      if (binary) accumulate(TAN_ADJ, z!, sum(product(L.gt, pb), product(L.g, dpb)));
      if (calls) fn.byte(W_End);
    };
  };
  const beforeLoop = carriedAdjointsStart(fn, L.nest, [ADJ, TAN_ADJ], (region, b, k) => (region === ADJ ? L.slot : L.slotTangent)(b, k), RESET);
  const shift = relative ? { param: 5, relative } : null;
  for (let k = bodies.length - 1; k >= 0; k--) emitNest(fn, bodies[k]!, true, [VAL, ADJ, TAN, TAN_ADJ], L.nest, slotEmitter, shift, beforeLoop);
  fn.byte(W_End);
  return fn;
}
