// The tangent emitter: the function bodies of the tangent sweep (jvp) and the reverse tangent
// sweep (hvp), made on the first jvp or hvp only.
import { Op } from '../../ops.ts';
import { emitNest, emitTruthy, nestLayout } from './emit-replay.ts';
import { nestNeeds, OPERANDS, type Body, type Ref } from './plan.ts';
import {
  FN_PARTIAL_Z, FN_PARTIAL_Z_TANGENT, FN_PARTIALS, FN_PARTIALS_TANGENT, LINEAR, SECOND_ORDER, TANGENT_PARTIAL, ZERO_GRADIENT,
} from './rules.ts';
import {
  Bytes, memarg, F64, W_Call, W_Else, W_End, W_F64Add, W_F64Eq, W_F64Load, W_F64Mul, W_F64Ne, W_F64Store,
  W_I32And, W_I32Or, W_If, W_Select, W_Void,
} from './wasm.ts';

// ───────────────────────────── tangent sweeps (jvp, hvp) ─────────────────────────────
// The interpreter's `tangent` and `sweepReverseTangent` (assembly/sweeps.ts), node for node and in
// the same arithmetic order. Values, adjoints and tangents all stay in memory here.

// Params 0 valBase, 1 adjBase, 2 tanBase, 3 tanAdjBase; the nest's counters and pointers for the
// four regions; then f64 temporaries.
function tangentLayout(bodies: readonly Body[]) {
  const nest = nestLayout(4, 4, nestNeeds(bodies));
  const f64 = nest.f64;
  return {
    nest,
    g: f64, gt: f64 + 1, x: f64 + 2, z: f64 + 3, y: f64 + 4, pa: f64 + 5, pb: f64 + 6, dpa: f64 + 7, dpb: f64 + 8,
    ta: f64 + 9, tb: f64 + 10, c: f64 + 11,
    declare(fn: Bytes) { nest.declare(fn, 12); },
  };
}
const VAL = 0, ADJ = 1, TAN = 2, TAN_ADJ = 3;

function tangentEmitters(fn: Bytes, body: Body, L: ReturnType<typeof tangentLayout>) {
  const load = (region: number, r: Ref): void => {
    if (r.value !== undefined) return fn.f64Const(region === VAL ? r.value : 0);
    fn.get(L.nest.pointer(region, body, r.group));
    memarg(fn, W_F64Load, 8 * (r.first - body.groups[r.group]!.origin));
  };
  const tangentOf = (r: Ref): void => (r.constant ? fn.f64Const(0) : load(TAN, r));
  const add = (region: number, r: Ref, value: () => void): void => {
    if (r.constant) return;
    const at = 8 * (r.first - body.groups[r.group]!.origin);
    fn.get(L.nest.pointer(region, body, r.group));
    fn.get(L.nest.pointer(region, body, r.group));
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

export function emitTangent(bodies: Body[]): Bytes {
  const L = tangentLayout(bodies);
  const fn = new Bytes();
  L.declare(fn);
  const slotEmitter = (body: Body) => {
    const { load, tangentOf, choose, nonZero, product, zero, partials } = tangentEmitters(fn, body, L);
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return;
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      fn.get(L.nest.pointer(TAN, body, self.group));
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
    };
  };
  for (const body of bodies) emitNest(fn, body, false, [VAL, TAN], L.nest, slotEmitter);
  fn.byte(W_End);
  return fn;
}

export function emitReverseTangent(bodies: Body[]): Bytes {
  const L = tangentLayout(bodies);
  const fn = new Bytes();
  L.declare(fn);
  // Adjoints stay in memory here: keeping those used only within the iteration in locals, as
  // the reverse sweep does, measured slower (Rosenbrock n = 10^4 hvp: 0.71 ms against 0.60 ms).
  const slotEmitter = (body: Body) => {
    const { load, tangentOf, add, choose, nonZero, product, zero, partials } = tangentEmitters(fn, body, L);
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg || ZERO_GRADIENT.has(op) || refs.every((r) => r.constant)) return;
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
    };
  };
  for (let k = bodies.length - 1; k >= 0; k--) emitNest(fn, bodies[k]!, true, [VAL, ADJ, TAN, TAN_ADJ], L.nest, slotEmitter);
  fn.byte(W_End);
  return fn;
}
