// The replay emitter: the function bodies of the forward sweep and the reverse sweep (values and
// adjoints), with the loop, pointer and truthiness helpers the tangent emitter shares.
import { Op } from '../../ops.ts';
import type { Body, Ref } from './plan.ts';
import { COMPARISON, FN_FORWARD, FN_PARTIAL_Z, FN_PARTIALS, NATIVE_BINARY, NATIVE_PARTIAL, ZERO_GRADIENT } from './rules.ts';
import {
  Bytes, memarg, F64, I32, W_BrIf, W_Call, W_Else, W_End, W_F64Abs, W_F64Add, W_F64Div, W_F64Eq, W_F64FromU32,
  W_F64Load, W_F64Mul, W_F64Ne, W_F64Neg, W_F64Sqrt, W_F64Store, W_I32Add, W_I32And, W_I32Sub, W_If, W_Loop,
  W_Select, W_Void,
} from './wasm.ts';

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

export function emitLoopHead(fn: Bytes, body: Body, counter = COUNTER): void {
  if (body.seg.count === 1) return;
  fn.i32Const(body.seg.count);
  fn.set(counter);
  fn.byte(W_Loop); fn.byte(W_Void);
}

export function emitLoopTail(fn: Bytes, body: Body, step: number, pointerLocals: number[][], counter = COUNTER): void {
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
export function emitPointerInit(fn: Bytes, body: Body, base: number, local: (g: number) => number, t0: number): void {
  body.groups.forEach(({ stride, origin }, g) => {
    fn.get(base);
    fn.i32Const(8 * (origin + t0 * stride));
    fn.byte(W_I32Add);
    fn.set(local(g));
  });
}

export function emitForward(bodies: Body[], pointers: number, slotLocals: number): Bytes {
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
export function emitTruthy(fn: Bytes, loadCondition: () => void, temp: number): void {
  loadCondition();
  fn.tee(temp);
  fn.f64Const(0);
  fn.byte(W_F64Ne);
  fn.get(temp);
  fn.get(temp);
  fn.byte(W_F64Eq);
  fn.byte(W_I32And);
}

export function emitReverse(bodies: Body[], pointers: number, slotLocals: number): Bytes {
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
