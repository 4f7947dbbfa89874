import { Op, forwardRule, partials, partialZ } from './ops';
import {
  val, setVal, adj, addAdj, argA, argB, opAt, tan, setTan, adjBase, tanBase,
} from './layout';

/** Computes the values of nodes [from, to) from their operands, in recording order. Recording
 *  only writes op codes and operand ids; this sweep is also the forward replay after new input
 *  values have been written. */
export function forward(from: i32, to: i32): void {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    const x = val(argA(i));
    const z = val(argB(i));
    const w = op == Op.Select ? val(argA(i - 1)) : 0.0;
    setVal(i, forwardRule(op, x, z, w));
  }
}

/** Adjoints of nodes [0, count) for the output `out`, seeded with `seed`: one loop from the
 *  output down, each node visited once, fan-out summed, nodes whose adjoint is exactly 0
 *  skipped (so NaN partials of an untaken branch never reach the gradient). */
export function reverse(out: i32, seed: f64, count: i32): void {
  memory.fill(adjBase, 0, <usize>count << 3);
  store<f64>(adjBase + (<usize>out << 3), seed);
  for (let i = out; i >= 0; i--) {
    const g = adj(i);
    if (g == 0) continue;
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    const ia = argA(i);
    if (op == Op.Select) {
      addAdj(val(ia) != 0 && val(ia) == val(ia) ? argB(i) : argA(i - 1), g);
      continue;
    }
    const ib = argB(i);
    const pa = partials(op, val(ia), val(ib), val(i));
    const pb = partialZ;
    if (pa != 0) addAdj(ia, g * pa);
    if (pb != 0) addAdj(ib, g * pb);
  }
}

/** Tangents of nodes [from, to) given the tangents already written for inputs (zero elsewhere
 *  below `from`): one forward-mode pass, using the same partials as the reverse sweep. */
export function tangent(from: i32, to: i32): void {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    const ia = argA(i);
    if (op == Op.Select) {
      setTan(i, tan(val(ia) != 0 && val(ia) == val(ia) ? argB(i) : argA(i - 1)));
      continue;
    }
    const ib = argB(i);
    const ta = tan(ia);
    const tb = tan(ib);
    if (ta == 0 && tb == 0) { setTan(i, 0); continue; }
    const pa = partials(op, val(ia), val(ib), val(i));
    const pb = partialZ;
    setTan(i, (ta != 0 ? ta * pa : 0) + (tb != 0 ? tb * pb : 0));
  }
}
