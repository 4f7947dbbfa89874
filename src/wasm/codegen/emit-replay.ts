// The replay emitter: the function bodies of the forward sweep and the reverse sweep (values and
// adjoints), with the loop-nest walker, local layout, truthiness helper and carried locals' starts
// that the tangent emitter shares.
import { Op, ZERO_GRADIENT } from '../../ops.ts';
import { enclosingGroup, nestNeeds, type Body, type Ref } from './plan.ts';
import { VARYING } from './shapes.ts';
import { COMPARISON, FN_FORWARD, FN_PARTIAL_Z, FN_PARTIALS, NATIVE_BINARY, NATIVE_PARTIAL } from './rules.ts';
import {
  Bytes, F64, I32, W_BrIf, W_Call, W_Else, W_End, W_F64Abs, W_F64Add, W_F64Div, W_F64Eq, W_F64FromU32,
  W_F64Load, W_F64Mul, W_F64Ne, W_F64Neg, W_F64Sqrt, W_F64Store, W_I32Add, W_I32And, W_I32Eq, W_I32Mul, W_I32Sub, W_If, W_Loop,
  W_Select, W_Void,
} from './wasm.ts';

// Locals: the parameters (region bases: 0 valBase, 1 adjBase for replay); one iteration counter
// per loop level; per region, one pointer per stride group of the nest (a body's after its
// enclosing bodies'); then the f64 temporaries and the slot locals.
export interface NestLayout {
  counter(depth: number): number;
  pointer(region: number, body: Body, g: number): number;
  f64: number;
  declare(fn: Bytes, f64s: number): void;
}

export function nestLayout(params: number, regions: number, needs: { levels: number; pointers: number }): NestLayout {
  const { levels, pointers } = needs;
  const f64 = params + levels + regions * pointers;
  return {
    counter: (depth) => params + depth,
    pointer: (region, body, g) => params + levels + region * pointers + body.groupsBefore + g,
    f64,
    declare(fn, f64s) {
      fn.u32(2);
      fn.u32(levels + regions * pointers); fn.byte(I32);
      fn.u32(f64s); fn.byte(F64);
    },
  };
}

function localLayout(params: number, needs: { levels: number; pointers: number; slotLocals: number }) {
  const nest = nestLayout(params, 2, needs);
  const f64 = nest.f64;
  return {
    nest,
    g: f64, x: f64 + 1, z: f64 + 2, c: f64 + 3, pa: f64 + 4, pb: f64 + 5,
    slot: (body: Body, k: number) => f64 + 6 + body.localBase + k,
    declare(fn: Bytes) { nest.declare(fn, 6 + needs.slotLocals); },
  };
}

/** A shape's function (shapes.ts) offsets the pointers of its body's relative groups by the byte
 *  shift in parameter `param`, and takes a top-level loop's count from parameter `param + 1`, or
 *  for straight code the byte shift of its VARYING group. */
export interface ShiftParam {
  param: number;
  relative: Uint8Array;
}

/** Emits a loop nest: each body's pointers (per region: `base(region)` is the parameter with the
 *  region's base, plus the shift for a shape's relative groups), its loop, its items in sweep
 *  order (`reverse`: last iteration and last item first), with `slotEmitter(body)` emitting one
 *  own slot. */
export function emitNest(
  fn: Bytes, body: Body, reverse: boolean, regions: readonly number[], L: NestLayout,
  slotEmitter: (body: Body) => (s: number) => void, shift: ShiftParam | null = null,
  beforeLoop: ((body: Body) => void) | null = null,
): void {
  const t0 = reverse ? body.seg.count - 1 : 0;
  const parent = body.parent;
  const looping = body.seg.count > 1;
  // Only a top-level body takes the shift; its inner loops start from its pointers.
  if (parent) shift = null;
  for (const region of regions) {
    body.groups.forEach(({ strides, origin }, g) => {
      const stride = strides[strides.length - 1]!;
      if (parent) {
        const pg = enclosingGroup(parent, strides);
        // The planner gives every inner group its enclosing body's group: without one, the code
        // would walk the wrong pointer.
        if (pg < 0) throw new Error(`codegen: no enclosing group for strides ${strides.join()}`);
        fn.get(L.pointer(region, parent, pg));
        fn.i32Const(8 * (origin - parent.groups[pg]!.origin + t0 * stride));
      } else if (shift) {
        // A shape's body: its count is a parameter, so is a reverse sweep's first iteration.
        fn.get(region);
        // A VARYING group (shapes.ts) of straight code is where the count would be: its byte shift.
        if (shift.relative[g]) { fn.get(shift.param + (shift.relative[g] === VARYING ? 1 : 0)); fn.byte(W_I32Add); }
        if (reverse && looping && stride !== 0) {
          fn.get(shift.param + 1); fn.i32Const(1); fn.byte(W_I32Sub); fn.i32Const(8 * stride); fn.byte(W_I32Mul);
          fn.byte(W_I32Add);
        }
        fn.i32Const(8 * origin);
      } else {
        fn.get(region);
        fn.i32Const(8 * (origin + t0 * stride));
      }
      fn.byte(W_I32Add);
      fn.set(L.pointer(region, body, g));
    });
  }
  const counter = L.counter(body.depth);
  if (looping) {
    if (shift) fn.get(shift.param + 1);
    else fn.i32Const(body.seg.count);
    fn.set(counter);
    beforeLoop?.(body);
    fn.byte(W_Loop); fn.byte(W_Void);
  }
  const emitSlot = slotEmitter(body);
  const items = reverse ? [...body.items].reverse() : body.items;
  for (const item of items) {
    if (typeof item === 'number') emitSlot(item);
    else emitNest(fn, item, reverse, regions, L, slotEmitter, null, beforeLoop);
  }
  if (!looping) return;
  const step = reverse ? -1 : 1;
  body.groups.forEach(({ strides }, g) => {
    const stride = strides[strides.length - 1]!;
    if (stride === 0) return;
    for (const region of regions) {
      fn.get(L.pointer(region, body, g));
      fn.i32Const(8 * stride * step);
      fn.byte(W_I32Add);
      fn.set(L.pointer(region, body, g));
    }
  });
  fn.get(counter);
  fn.i32Const(1);
  fn.byte(W_I32Sub);
  fn.tee(counter);
  fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_End);
}

/** Before a loop's first iteration, each carried value's locals (plan.ts: Body.valueCarried)
 *  start as what that iteration reads, from memory: per region, into `localOf(region, body, k)`
 *  for the producer's local k. */
export function carriedValuesStart(
  fn: Bytes, nest: NestLayout, regions: readonly number[], localOf: (region: number, body: Body, k: number) => number,
): (body: Body) => void {
  return (body) => {
    const set = new Uint8Array(body.slots.length);
    for (const { refs } of body.slots) {
      for (const r of refs) {
        if (r.carried < 0 || !body.valueCarried[r.carried] || set[r.carried]) continue;
        set[r.carried] = 1;
        for (const region of regions) {
          fn.get(nest.pointer(region, body, r.group));
          fn.memory(W_F64Load, 8 * (r.first - body.groups[r.group]!.origin));
          fn.set(localOf(region, body, body.local[r.carried]!));
        }
      }
    }
  };
}

/** Before a reverse sweep's first iteration of a loop (its last), each carried adjoint's locals
 *  (Body.adjointCarried) start as that iteration's adjoints in memory (the terms of the nodes
 *  after the loop), which parameter `reset`, when nonzero, sets back to +0. */
export function carriedAdjointsStart(
  fn: Bytes, nest: NestLayout, regions: readonly number[], localOf: (region: number, body: Body, k: number) => number, reset: number,
): (body: Body) => void {
  return (body) => {
    body.slots.forEach(({ self }, s) => {
      if (!body.adjointCarried[s]) return;
      const at = 8 * (self.first - body.groups[self.group]!.origin);
      for (const region of regions) {
        fn.get(nest.pointer(region, body, self.group));
        fn.memory(W_F64Load, at);
        fn.set(localOf(region, body, body.local[s]!));
      }
      fn.get(reset);
      fn.byte(W_If); fn.byte(W_Void);
      for (const region of regions) {
        fn.get(nest.pointer(region, body, self.group));
        fn.f64Const(0);
        fn.memory(W_F64Store, at);
      }
      fn.byte(W_End);
    });
  };
}

/** The forward sweep over `bodies`; with `relative`, a shape's function (one body; the byte shift
 *  and the loop count follow the sweep's parameters). */
export function emitForward(bodies: Body[], relative: Uint8Array | null = null): Bytes {
  const L = localLayout(relative ? 4 : 2, nestNeeds(bodies));
  const fn = new Bytes();
  L.declare(fn);
  const VAL = 0;
  const slotEmitter = (body: Body) => {
    const offset = (r: Ref): number => 8 * (r.first - body.groups[r.group]!.origin);
    const load = (r: Ref): void => {
      if (r.value !== undefined) return fn.f64Const(r.value);
      if (r.slot >= 0 && body.valueInLocal[r.slot]) return fn.get(L.slot(body, body.local[r.slot]!));
      if (r.carried >= 0 && body.valueCarried[r.carried]) return fn.get(L.slot(body, body.local[r.carried]!));
      fn.get(L.nest.pointer(VAL, body, r.group));
      fn.memory(W_F64Load, offset(r));
    };
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return; // inputs and constants are given; arg values stay 0
      const cached = body.valueInLocal[self.slot] || body.valueCarried[self.slot] ? body.local[self.slot]! : -1;
      fn.get(L.nest.pointer(VAL, body, self.group));
      emitValue(fn, op, refs, load, L);
      if (cached >= 0) fn.tee(L.slot(body, cached));
      fn.memory(W_F64Store, offset(self));
    };
  };
  const beforeLoop = carriedValuesStart(fn, L.nest, [VAL], (_, b, k) => L.slot(b, k));
  const shift = relative ? { param: 2, relative } : null;
  for (const body of bodies) emitNest(fn, body, false, [VAL], L.nest, slotEmitter, shift, beforeLoop);
  fn.byte(W_End);
  return fn;
}

/** Pushes node `op`'s value from its operands (`load` pushes one), as the core's forward rules
 *  compute it: spelled out for the simple ops, the core's own function for the rest. Uses the
 *  f64 locals x and c as scratch. */
export function emitValue(fn: Bytes, op: number, refs: readonly Ref[], load: (r: Ref) => void, L: { x: number; c: number }): void {
  const [x, z, w] = refs as [Ref, Ref?, Ref?];
  const native = NATIVE_BINARY[op];
  const comparison = COMPARISON[op];
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

/** local += contribution. */
export function emitAddToLocal(fn: Bytes, local: number, contribution: () => void): void {
  fn.get(local);
  contribution();
  fn.byte(W_F64Add);
  fn.set(local);
}

/** A term for a carried read's node (the previous iteration's) in a reverse sweep: into its
 *  local, or at the first iteration (the loop counter's last value, 1), where that node is the
 *  one before the loop, into memory. */
export function emitCarriedTerm(fn: Bytes, counter: number, toMemory: () => void, toLocal: () => void): void {
  fn.get(counter); fn.i32Const(1); fn.byte(W_I32Eq);
  fn.byte(W_If); fn.byte(W_Void);
  toMemory();
  fn.byte(W_Else);
  toLocal();
  fn.byte(W_End);
}

/** The f64 at pointer + offset += contribution. */
export function emitAddToMemory(fn: Bytes, pointer: number, offset: number, contribution: () => void): void {
  fn.get(pointer);
  fn.get(pointer);
  fn.memory(W_F64Load, offset);
  contribution();
  fn.byte(W_F64Add);
  fn.memory(W_F64Store, offset);
}

/** The reverse sweep; its third parameter, when nonzero, has it set each adjoint it reads from
 *  memory back to +0 once read, and those of the nodes it skips too (gradientBatch: the next row
 *  then needs no pass clearing the adjoints; the stores hit lines just read). */
export function emitReverse(bodies: Body[], relative: Uint8Array | null = null): Bytes {
  const L = localLayout(relative ? 5 : 3, nestNeeds(bodies));
  const fn = new Bytes();
  L.declare(fn);
  const VAL = 0, ADJ = 1, RESET = 2;
  const slotEmitter = (body: Body) => {
    // An adjoint kept in a local starts at +0 in each iteration, as memory does after the clear:
    // it is zeroed just before its first consumer's code (in sweep order), outside any branch,
    // which keeps the local's live range short.
    // A carried adjoint's local holds its first terms already (the next iteration's), or
    // memory's before the last iteration: never zeroed here.
    const started = Uint8Array.from(body.adjointCarried);
    const adjointLocal = (r: Ref): number =>
      (r.slot >= 0 && (body.adjointInLocal[r.slot] || body.adjointCarried[r.slot]) ? L.slot(body, body.local[r.slot]!) : -1);
    const counter = L.nest.counter(body.depth);
    const offset = (r: Ref): number => 8 * (r.first - body.groups[r.group]!.origin);
    const load = (r: Ref): void => {
      if (r.value !== undefined) return fn.f64Const(r.value);
      fn.get(L.nest.pointer(VAL, body, r.group));
      fn.memory(W_F64Load, offset(r));
    };
    // adj[r] += contribution, nothing for a constant.
    const addAdjoint = (r: Ref, contribution: () => void): void => {
      if (r.constant) return;
      if (r.carried >= 0 && body.adjointCarried[r.carried]) {
        emitCarriedTerm(fn, counter,
          () => emitAddToMemory(fn, L.nest.pointer(ADJ, body, r.group), offset(r), contribution),
          () => emitAddToLocal(fn, L.slot(body, body.local[r.carried]!), contribution));
        return;
      }
      const inLocal = adjointLocal(r);
      if (inLocal >= 0) emitAddToLocal(fn, inLocal, contribution);
      else emitAddToMemory(fn, L.nest.pointer(ADJ, body, r.group), offset(r), contribution);
    };
    const get = (local: number) => (): void => { fn.get(local); };
    const times = (p: number) => (): void => { get(L.g)(); get(p)(); fn.byte(W_F64Mul); };
    // if (local != 0) { then }
    const ifNonZero = (local: number, then: () => void): void => {
      get(local)(); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_If); fn.byte(W_Void); then(); fn.byte(W_End);
    };
    // if (reset) adj[self] = 0, for an adjoint in memory; a carried adjoint's local starts again
    // at +0 for the previous iteration's node.
    const reset = (self: Ref): void => {
      if (body.adjointCarried[self.slot]) { fn.f64Const(0); fn.set(L.slot(body, body.local[self.slot]!)); return; }
      if (adjointLocal(self) >= 0) return;
      fn.get(RESET);
      fn.byte(W_If); fn.byte(W_Void);
      fn.get(L.nest.pointer(ADJ, body, self.group));
      fn.f64Const(0);
      fn.memory(W_F64Store, offset(self));
      fn.byte(W_End);
    };
    // A sin and a cos of one operand side by side hold each other's partials, as the
    // interpreter's reverse sweep reads them (trigSibling in assembly/sweeps.ts): the value of
    // the neighbouring slot that is the other function of the same node, or null.
    const trigSibling = (s: number): Ref | null => {
      const { op, refs: [x] } = body.slots[s]!;
      const want = op === Op.sin ? Op.cos : Op.sin;
      for (const t of [s + 1, s - 1]) {
        const other = body.slots[t];
        const y = other?.refs[0];
        if (other?.op === want && y && x && y.value === undefined && x.value === undefined && y.group === x.group && y.first === x.first) return other.self;
      }
      return null;
    };
    return (s: number): void => {
      const { op, self, refs } = body.slots[s]!;
      if (op <= Op.arg) return;
      // A node that passes nothing on may still have been given an adjoint (a comparison used
      // as a number): reset, it cannot pile up over the rows of a batch.
      if (ZERO_GRADIENT[op] || refs.every((r) => r.constant)) return reset(self);
      const [x, z, w] = refs as [Ref, Ref?, Ref?];
      // An adjoint in a local that no consumer feeds (they all have zero gradient) is exactly 0:
      // the interpreter skips such a node, and so does this code. (The local may still hold
      // another body's value: locals are shared between bodies.)
      if (adjointLocal(self) >= 0 && !started[self.slot]) return;
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
        fn.get(L.nest.pointer(ADJ, body, self.group));
        fn.memory(W_F64Load, offset(self));
      }
      fn.set(L.g);
      reset(self);
      if (op === Op.add || op === Op.sub) {
        // No g != 0 test: adjoints are never -0 (they start at +0 and only gain sums), and
        // adding ±0 leaves any other value as it is, so skipping a 0 adjoint changes nothing.
        addAdjoint(x, get(L.g));
        addAdjoint(z!, op === Op.add ? get(L.g) : () => { get(L.g)(); fn.byte(W_F64Neg); });
        return;
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
          const sibling = op === Op.sin || op === Op.cos ? trigSibling(s) : null;
          if (sibling) {
            load(sibling);
            if (op === Op.cos) fn.byte(W_F64Neg);
            fn.set(L.pa);
          } else if (partial) {
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
    };
  };
  const beforeLoop = carriedAdjointsStart(fn, L.nest, [ADJ], (_, b, k) => L.slot(b, k), RESET);
  const shift = relative ? { param: 3, relative } : null;
  for (let k = bodies.length - 1; k >= 0; k--) emitNest(fn, bodies[k]!, true, [VAL, ADJ], L.nest, slotEmitter, shift, beforeLoop);
  fn.byte(W_End);
  return fn;
}
