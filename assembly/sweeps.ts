import { Op, forwardRule, partials, partialsCall, partialZ, partialsTangent, partialZTangent, truthy, isVectorOp, zeroGradient } from './ops';
import {
  val, argA, argB, opAt, adjBase, tanAdjBase, valBase, tanBase, aBase, bBase, opBase, f64At, setF64At, addF64At, i32At, u8At,
} from './layout';
import { vectorForwardAt, vectorReverseAt, vectorTangentAt, vectorReverseTangentAt, vectorNonFinite, prepareForward, setReverseTop, resetDeferredTangents } from './vector';

// Custom ops run user code in JS: the façade reads operands and writes results through its views.
// @ts-ignore: decorator
@external('env', 'customForward') declare function customForward(i: i32): void;
// @ts-ignore: decorator
@external('env', 'customReverse') declare function customReverse(i: i32, g: f64): void;
// @ts-ignore: decorator
@external('env', 'customTangent') declare function customTangent(i: i32): void;
// @ts-ignore: decorator
@external('env', 'customReverseTangent') declare function customReverseTangent(i: i32, g: f64, gTangent: f64): void;

/** The node a select node i passes on: its second operand where the condition holds, else the
 *  third (on the arg node before it). */
// @ts-ignore: decorator
@inline export function selected(i: i32): i32 {
  return truthy(val(argA(i))) ? argB(i) : argA(i - 1);
}

/** Computes the values of nodes [from, to) from their operands, in recording order. Recording
 *  only writes op codes and operand ids; this sweep is also the forward replay after new input
 *  values have been written. */
export function forward(from: i32, to: i32): void {
  prepareForward(from, to);
  // The region bases in locals (see f64At in layout.ts): a custom rule may not move them.
  const vB = valBase, aB = aBase, bB = bBase, oB = opBase;
  for (let i = from; i < to; i++) {
    const op = u8At(oB, i);
    // The commonest ops in one table jump, before the rarer kinds are told apart.
    switch (op) {
      case Op.Const: case Op.Input: continue;
      // An arg node only carries operands; its value is defined as 0, never leftover memory.
      case Op.Arg: { setF64At(vB, i, 0); continue; }
      case Op.Add: { setF64At(vB, i, f64At(vB, i32At(aB, i)) + f64At(vB, i32At(bB, i))); continue; }
      case Op.Sub: { setF64At(vB, i, f64At(vB, i32At(aB, i)) - f64At(vB, i32At(bB, i))); continue; }
      case Op.Mul: { setF64At(vB, i, f64At(vB, i32At(aB, i)) * f64At(vB, i32At(bB, i))); continue; }
      case Op.Neg: { setF64At(vB, i, -f64At(vB, i32At(aB, i))); continue; }
      case Op.Square: { const x = f64At(vB, i32At(aB, i)); setF64At(vB, i, x * x); continue; }
    }
    if (op >= Op.VMeta) { i = vectorForwardAt(i, op, to); continue; }
    if (op == Op.Select) { setF64At(vB, i, f64At(vB, selected(i))); continue; }
    if (op == Op.Custom) { customForward(i); continue; }
    setF64At(vB, i, forwardRule(op, f64At(vB, i32At(aB, i)), f64At(vB, i32At(bB, i))));
  }
}

/** Adjoints of nodes [0, count) for the output `out`, seeded with `seed`: one loop from the
 *  output down, each node visited once, fan-out summed, nodes whose adjoint is exactly 0
 *  skipped (so NaN partials of an untaken branch never reach the gradient). */
export function reverse(out: i32, seed: f64, count: i32): void {
  clearAdjoints(count, 0);
  store<f64>(adjBase + (<usize>out << 3), seed);
  sweepReverse(out);
}

/** Zeroes the adjoints (and their tangents when asked) of nodes [0, count), before seeding. */
export function clearAdjoints(count: i32, withTangents: i32): void {
  // Element adjoints are cleared vector by vector, when a sweep first reaches one (see claim in
  // vector.ts): clearing the node regions clears their flags.
  memory.fill(adjBase, 0, <usize>count << 3);
  if (withTangents) memory.fill(tanAdjBase, 0, <usize>count << 3);
}

/** The reverse sweep proper, from `top` down, over adjoints already seeded (one or many
 *  outputs: a vector-Jacobian product in one pass). */
export function sweepReverse(top: i32): void {
  setReverseTop(top);
  // The region bases in locals (see f64At in layout.ts): a custom rule may not move them.
  const vB = valBase, gB = adjBase, aB = aBase, bB = bBase, oB = opBase;
  for (let i = top; i >= 0; i--) {
    const g = f64At(gB, i);
    if (g == 0) continue;
    const op = u8At(oB, i);
    const ia = i32At(aB, i);
    // The commonest ops in one table jump, before the rarer kinds are told apart: each needs no
    // value or just its operands, with the partials table's results (g·1 = g and g·-1 = -g
    // exactly; mul and square keep the zero-partial skip).
    switch (op) {
      case Op.Const: case Op.Input: case Op.Arg: continue;
      case Op.Add: { addF64At(gB, ia, g); addF64At(gB, i32At(bB, i), g); continue; }
      case Op.Sub: { addF64At(gB, ia, g); addF64At(gB, i32At(bB, i), -g); continue; }
      case Op.Mul: {
        const ib = i32At(bB, i);
        const x = f64At(vB, ia), z = f64At(vB, ib);
        if (z != 0) addF64At(gB, ia, g * z);
        if (x != 0) addF64At(gB, ib, g * x);
        continue;
      }
      case Op.Neg: { addF64At(gB, ia, -g); continue; }
      case Op.Square: {
        const pa = 2 * f64At(vB, ia);
        if (pa != 0) addF64At(gB, ia, g * pa);
        continue;
      }
      // Unary ops whose partial needs no operand but their own (the rules' bits, the op known
      // here: no second switch, no b operand read).
      case Op.Exp: {
        const pa = partials(Op.Exp, 0, 0, f64At(vB, i));
        if (pa != 0) addF64At(gB, ia, g * pa);
        continue;
      }
      case Op.Log: {
        const x = f64At(vB, ia);
        const pa = partials(Op.Log, x, x, 0);
        if (pa != 0) addF64At(gB, ia, g * pa);
        continue;
      }
      case Op.Log1p: {
        const x = f64At(vB, ia);
        const pa = partials(Op.Log1p, x, x, 0);
        if (pa != 0) addF64At(gB, ia, g * pa);
        continue;
      }
      case Op.Sin: case Op.Cos: {
        const sibling = trigSibling(i, op, ia, top);
        const x = f64At(vB, ia);
        const pa = sibling >= 0 ? siblingPartial(op, sibling) : op == Op.Sin ? partials(Op.Sin, x, x, 0) : partials(Op.Cos, x, x, 0);
        if (pa != 0) addF64At(gB, ia, g * pa);
        continue;
      }
    }
    if (op >= Op.VMeta) { i = vectorReverseAt(i, op, g); continue; }
    if (op == Op.Select) { addF64At(gB, selected(i), g); continue; }
    if (op == Op.Custom) { customReverse(i, g); continue; }
    // (sin and cos, with their siblings, were taken in the jump above.)
    const ib = i32At(bB, i);
    const pa = partials(op, f64At(vB, ia), f64At(vB, ib), f64At(vB, i));
    const pb = partialZ;
    if (pa != 0) addF64At(gB, ia, g * pa);
    if (pb != 0) addF64At(gB, ib, g * pb);
  }
}

// A sin and a cos of one operand recorded side by side (a rotation, polar coordinates, the
// bench's transcendental chain) hold each other's partials: d sin a = cos a, the cos node's value,
// and d cos a = -sin a, bit for bit what the rule computes again, so the sweeps read them (every
// value is known by then: the tangent sweep runs after the values are).
// For a sin or cos node i of operand a: the node next to it (after, up to `top`, or before) that
// is the other function of a, or -1 (always for any other op).
// @ts-ignore: decorator
@inline function trigSibling(i: i32, op: i32, a: i32, top: i32): i32 {
  if (op != Op.Sin && op != Op.Cos) return -1;
  const want = op == Op.Sin ? Op.Cos : Op.Sin;
  if (i < top && opAt(i + 1) == want && argA(i + 1) == a) return i + 1;
  if (i > 0 && opAt(i - 1) == want && argA(i - 1) == a) return i - 1;
  return -1;
}

/** d sin a = cos a, d cos a = -sin a: the partial of trig node `op` read from its sibling s. */
// @ts-ignore: decorator
@inline function siblingPartial(op: i32, s: i32): f64 {
  return op == Op.Sin ? val(s) : -val(s);
}

/** Tangents of nodes [from, to), given the tangents of the nodes before `from` (inputs seeded,
 *  everything else zero): one forward-mode pass with the same partials as the reverse sweep. */
export function tangent(from: i32, to: i32): void {
  // No materializeAll: each vector rule computes the deferred values it reads (vectorTangentAt).
  // Scalar nodes read scalar values only, which are never deferred.
  resetDeferredTangents();
  // The region bases in locals (see f64At in layout.ts): a custom rule may not move them.
  const vB = valBase, tB = tanBase, aB = aBase, bB = bBase, oB = opBase;
  for (let i = from; i < to; i++) {
    const op = u8At(oB, i);
    if (op <= Op.Arg) continue;
    if (op >= Op.VMeta) { i = vectorTangentAt(i, op, to); continue; }
    if (op == Op.Select) { setF64At(tB, i, f64At(tB, selected(i))); continue; }
    if (op == Op.Custom) { customTangent(i); continue; }
    // The zero-gradient ops (floor ... stopGradient ... eq) pass no tangent, not even a NaN or
    // infinite one (which times their zero partial was NaN: a probe's jvp of x - sg(sqrt x) at 0
    // was NaN where the reverse sweep, skipping the zero partial, gave 1).
    if (zeroGradient(op)) { setF64At(tB, i, 0); continue; }
    const ia = i32At(aB, i);
    const ib = i32At(bB, i);
    const ta = f64At(tB, ia);
    const tb = f64At(tB, ib);
    if (ta == 0 && tb == 0) { setF64At(tB, i, 0); continue; }
    // Each term t·p is left out (+0) where t or p is 0, as the reverse sweep leaves out g·p where
    // g or p is: an infinite tangent times a zero partial (a unary op's second, pb = 0 with
    // tb = ta; mul by a zero value; relu's dead side) gave NaN where the reverse sweep gave the
    // derivative (a probe: jvp of -sqrt(x) at 0 NaN, its gradient -Infinity). The commonest ops
    // without the partials call, with add's 1, 1, sub's 1, -1, neg's -1, mul's z, x, square's 2x.
    switch (op) {
      case Op.Add: { setF64At(tB, i, (ta != 0 ? ta : 0) + (tb != 0 ? tb : 0)); continue; }
      case Op.Sub: { setF64At(tB, i, (ta != 0 ? ta : 0) + (tb != 0 ? -tb : 0)); continue; }
      case Op.Mul: {
        const x = f64At(vB, ia), z = f64At(vB, ib);
        setF64At(tB, i, (ta != 0 && z != 0 ? ta * z : 0) + (tb != 0 && x != 0 ? tb * x : 0));
        continue;
      }
      case Op.Neg: { setF64At(tB, i, (ta != 0 ? -ta : 0) + 0); continue; }
      case Op.Square: {
        const p = 2 * f64At(vB, ia);
        setF64At(tB, i, (ta != 0 && p != 0 ? ta * p : 0) + 0);
        continue;
      }
    }
    const sibling = trigSibling(i, op, ia, to - 1);
    const pa = sibling >= 0 ? siblingPartial(op, sibling) : partialsCall(op, f64At(vB, ia), f64At(vB, ib), f64At(vB, i));
    const pb = sibling >= 0 ? 0 : partialZ;
    setF64At(tB, i, (ta != 0 && pa != 0 ? ta * pa : 0) + (tb != 0 && pb != 0 ? tb * pb : 0));
  }
}

/** Forward over reverse: after `tangent` has filled the tangents for a direction v, computes the
 *  adjoints (as `reverse`) and their tangents, so that tanAdj of the inputs is H·v times the seed.
 *  Every node is visited once, like the plain reverse sweep. */
export function reverseTangent(out: i32, seed: f64, count: i32): void {
  clearAdjoints(count, 1);
  store<f64>(adjBase + (<usize>out << 3), seed);
  sweepReverseTangent(out);
}

/** `reverseTangent` over adjoints (and adjoint tangents) already seeded. */
export function sweepReverseTangent(top: i32): void {
  // No materializeAll either: the vector rules compute the deferred values and tangents they read
  // (vectorReverseTangentAt).
  setReverseTop(top);
  // The region bases in locals (see f64At in layout.ts): a custom rule may not move them.
  const vB = valBase, tB = tanBase, gB = adjBase, tgB = tanAdjBase, aB = aBase, bB = bBase, oB = opBase;
  for (let i = top; i >= 0; i--) {
    const g = f64At(gB, i);
    const gt = f64At(tgB, i);
    if (g == 0 && gt == 0) continue;
    const op = u8At(oB, i);
    if (op <= Op.Arg) continue;
    if (op >= Op.VMeta) { i = vectorReverseTangentAt(i, op, g, gt); continue; }
    if (op == Op.Select) {
      const s = selected(i);
      addF64At(gB, s, g);
      addF64At(tgB, s, gt);
      continue;
    }
    if (op == Op.Custom) { customReverseTangent(i, g, gt); continue; }
    const ia = i32At(aB, i);
    const ib = i32At(bB, i);
    const x = f64At(vB, ia), z = f64At(vB, ib), y = f64At(vB, i);
    // The commonest ops without the partials calls: the general code below with their partials
    // (add 1, 1; sub 1, -1; neg -1; mul z, x with tangents tz, tx; square 2x with 2tx) put in.
    switch (op) {
      case Op.Add: {
        if (g != 0) { addF64At(gB, ia, g); addF64At(gB, ib, g); }
        if (gt != 0) { addF64At(tgB, ia, gt); addF64At(tgB, ib, gt); }
        continue;
      }
      case Op.Sub: {
        if (g != 0) { addF64At(gB, ia, g); addF64At(gB, ib, -g); }
        if (gt != 0) { addF64At(tgB, ia, gt); addF64At(tgB, ib, -gt); }
        continue;
      }
      case Op.Neg: {
        if (g != 0) addF64At(gB, ia, -g);
        if (gt != 0) addF64At(tgB, ia, -gt);
        continue;
      }
      case Op.Mul: {
        if (g != 0 && z != 0) addF64At(gB, ia, g * z);
        if (g != 0 && x != 0) addF64At(gB, ib, g * x);
        const dpa = g != 0 ? f64At(tB, ib) : 0, dpb = g != 0 ? f64At(tB, ia) : 0;
        const ta = (gt != 0 && z != 0 ? gt * z : 0) + (dpa != 0 ? g * dpa : 0);
        const tb = (gt != 0 && x != 0 ? gt * x : 0) + (dpb != 0 ? g * dpb : 0);
        if (ta != 0) addF64At(tgB, ia, ta);
        if (tb != 0) addF64At(tgB, ib, tb);
        continue;
      }
      case Op.Square: {
        const pa = 2 * x;
        if (g != 0 && pa != 0) addF64At(gB, ia, g * pa);
        const dpa = g != 0 ? 2 * f64At(tB, ia) : 0;
        const ta = (gt != 0 && pa != 0 ? gt * pa : 0) + (dpa != 0 ? g * dpa : 0);
        if (ta != 0) addF64At(tgB, ia, ta);
        continue;
      }
    }
    const sibling = trigSibling(i, op, ia, top);
    const pa = sibling >= 0 ? siblingPartial(op, sibling) : partialsCall(op, x, z, y);
    const pb = sibling >= 0 ? 0 : partialZ;
    if (g != 0 && pa != 0) addF64At(gB, ia, g * pa);
    if (g != 0 && pb != 0) addF64At(gB, ib, g * pb);
    const dpa = g != 0 ? partialsTangent(op, x, z, y, f64At(tB, ia), f64At(tB, ib), f64At(tB, i)) : 0;
    const dpb = g != 0 ? partialZTangent : 0;
    const ta = (gt != 0 && pa != 0 ? gt * pa : 0) + (dpa != 0 ? g * dpa : 0);
    const tb = (gt != 0 && pb != 0 ? gt * pb : 0) + (dpb != 0 ? g * dpb : 0);
    if (ta != 0) addF64At(tgB, ia, ta);
    if (tb != 0) addF64At(tgB, ib, tb);
  }
}

/** The first node in [from, to) whose value (values != 0) or adjoint (values == 0) is NaN or
 *  ±Infinity; values of inputs and constants are given, not produced, and are skipped. */
export function firstNonFinite(from: i32, to: i32, values: i32): i32 {
  const base = values ? valBase : adjBase;
  for (let i = from; i < to; i++) {
    const v = load<f64>(base + (<usize>i << 3));
    const op = opAt(i);
    if (v - v != 0 && (values == 0 || op > Op.Input)) return i;
    if (isVectorOp(op) && (values == 0 || op > Op.VConst) && vectorNonFinite(i, values != 0)) return i;
  }
  return -1;
}
