// The code generator's planner (src/wasm/codegen/plan.ts) reads the whole tape once before it
// looks for loops; that pass runs here, where it costs about a nanosecond per node from the first
// call, instead of in JS that V8 has not optimised yet (about 9 ns per node on a first compile).
import { Op, opArity } from './ops';
import { adjBase, argA, argB, opAt } from './layout';

// @ts-ignore: decorator
@inline function countUse(node: i32): void {
  const at = adjBase + (<usize>node << 2);
  store<i32>(at, load<i32>(at) + 1);
}

/** How many operand references each node has among nodes [from, to), as i32 per node of [0, to)
 *  written over the adjoint region (every sweep clears it before use). Returns 0, or -1 - i for
 *  the first node i that keeps the tape from generated code: a custom op, or a unary op whose
 *  two operands differ (a hand-made tape). */
export function countUses(from: i32, to: i32): i32 {
  memory.fill(adjBase, 0, <usize>to << 2);
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    if (op == Op.Custom || op >= Op.VMeta) return -1 - i;
    const x = argA(i), z = argB(i);
    countUse(x);
    if (op == Op.Select) {
      countUse(z);
      countUse(argA(i - 1));
    } else if (opArity(op) > 1) {
      countUse(z);
    } else if (z != x) {
      return -1 - i;
    }
  }
  return 0;
}
