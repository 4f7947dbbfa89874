// The code generator's planner (src/wasm/codegen/plan.ts) reads the whole tape before it looks
// for loops: counting uses, and the next-occurrence links its candidate periods come from. Those
// passes run here from the first call, where JS runs them before V8 has optimised it: the count
// costs about 1 ns per node here against 9, the links 21 against 41-58 (their hash tables are
// larger than the cache; branchy logistic loss, `bench/codegen-cliffs.ts`).
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

// @ts-ignore: decorator
@inline function mix(h: u32): u32 {
  h = (h ^ (h >>> 16)) * 0x85ebca6b;
  h = (h ^ (h >>> 13)) * 0xc2b2ae35;
  return h ^ (h >>> 16);
}

// @ts-ignore: decorator
@inline function operandCount(op: i32): i32 {
  return op <= Op.Arg ? 0 : op == Op.Select ? 3 : max(0, opArity(op));
}

/** The planner's candidate periods for nodes [lo, hi): `nextLinks` in src/wasm/codegen/plan.ts,
 *  hash for hash, so both give the same plan. Writes `strict` (i32 per node) at `at`, `window`
 *  after it, and uses `size` (a power of two) i32 entries per hash table after those. */
export function nextLinks(lo: i32, hi: i32, at: usize, size: i32): void {
  const n = <usize>(hi - lo);
  const strict = at, window = at + (n << 2);
  const lastStrict = window + (n << 2), lastWindow = lastStrict + (<usize>size << 2);
  memory.fill(lastStrict, 0xff, <usize>size << 3);
  const mask = <u32>(size - 1);
  let w1: u32 = 0, w2: u32 = 0, w3: u32 = 0;
  for (let i = hi - 1; i >= lo; i--) {
    const code = <u32>opAt(i);
    const operands = operandCount(code);
    let h = mix(code + 1);
    if (operands > 0) h = mix(h ^ (<u32>(i - argA(i)) * 0x9e3779b1));
    if (operands > 1) h = mix(h ^ (<u32>(i - argB(i)) * 0x7feb352d));
    if (operands > 2) h = mix(h ^ (<u32>(i - argA(i - 1)) * 0x846ca68b));
    const slot = <usize>(h & mask) << 2;
    const k = <usize>(i - lo) << 2;
    store<i32>(strict + k, load<i32>(lastStrict + slot));
    store<i32>(lastStrict + slot, i);
    const wslot = <usize>(mix(code | (w1 << 8) | (w2 << 16) | (w3 << 24)) & mask) << 2;
    store<i32>(window + k, load<i32>(lastWindow + wslot));
    store<i32>(lastWindow + wslot, i);
    w3 = w2; w2 = w1; w1 = code;
  }
}
