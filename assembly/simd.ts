// Batched replay two rows at a time: every node holds an f64x2 (lane 0 = row r, lane 1 = row
// r+1) in a lane region of the scratch area, so arithmetic ops run once for both rows. Ops
// without a vector instruction (transcendental ones) run the scalar rule per lane. Results are
// bit-identical to the scalar kernel (the vector rules here mirror the partials in ops.ts, and
// test/batch-simd.test.ts fails if they drift): same operations in the same order, and where the scalar
// sweep skips a contribution (adjoint or partial exactly 0) the lane adds -0.0, which leaves
// every value, including a -0 adjoint, unchanged.
import { Op, forwardRule, partials, partialZ } from './ops';
import { val, argA, argB, opAt } from './layout';
import { gradientBatch } from './replay';

// @ts-ignore: decorator
@inline function lv(base: usize, i: i32): v128 { return v128.load(base + (<usize>i << 4)); }
// @ts-ignore: decorator
@inline function setLv(base: usize, i: i32, v: v128): void { v128.store(base + (<usize>i << 4), v); }
// @ts-ignore: decorator
@inline function pair(x0: f64, x1: f64): v128 { return f64x2.replace_lane(f64x2.splat(x0), 1, x1); }
// @ts-ignore: decorator
@inline function lane0(v: v128): f64 { return f64x2.extract_lane(v, 0); }
// @ts-ignore: decorator
@inline function lane1(v: v128): f64 { return f64x2.extract_lane(v, 1); }

const ONE = f64x2.splat(1.0);
const NEG_ZERO = f64x2.splat(-0.0);

// @ts-ignore: decorator
@inline function nonZero(v: v128): v128 { return f64x2.ne(v, f64x2.splat(0)); }
// @ts-ignore: decorator
@inline function truthyMask(c: v128): v128 { return v128.and(f64x2.ne(c, f64x2.splat(0)), f64x2.eq(c, c)); }

// Adds `contribution` to lane adjoint i where `mask` is set.
// @ts-ignore: decorator
@inline function addMasked(adj2: usize, i: i32, contribution: v128, mask: v128): void {
  setLv(adj2, i, f64x2.add(lv(adj2, i), v128.bitselect(contribution, NEG_ZERO, mask)));
}

// The scalar kernel's `if (p != 0) adj += g * p`, for both lanes (g != 0 is in gMask).
// @ts-ignore: decorator
@inline function addScaled(adj2: usize, i: i32, g: v128, p: v128, gMask: v128): void {
  addMasked(adj2, i, f64x2.mul(g, p), v128.and(gMask, nonZero(p)));
}

function forward2(val2: usize, from: i32, to: i32): void {
  for (let i = from; i < to; i++) {
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    const ia = argA(i);
    const x = lv(val2, ia);
    const z = lv(val2, argB(i));
    let y: v128;
    switch (op) {
      case Op.Add: y = f64x2.add(x, z); break;
      case Op.Sub: y = f64x2.sub(x, z); break;
      case Op.Mul: y = f64x2.mul(x, z); break;
      case Op.Div: y = f64x2.div(x, z); break;
      case Op.Neg: y = f64x2.neg(x); break;
      case Op.Recip: y = f64x2.div(ONE, x); break;
      case Op.Square: y = f64x2.mul(x, x); break;
      case Op.Sqrt: y = f64x2.sqrt(x); break;
      case Op.Abs: y = f64x2.abs(x); break;
      case Op.Min: y = f64x2.min(x, z); break;
      case Op.Max: y = f64x2.max(x, z); break;
      case Op.Relu: y = f64x2.max(x, f64x2.splat(0)); break;
      case Op.Floor: y = f64x2.floor(x); break;
      case Op.Ceil: y = f64x2.ceil(x); break;
      case Op.StopGradient: y = x; break;
      case Op.Lt: y = v128.and(f64x2.lt(x, z), ONE); break;
      case Op.Le: y = v128.and(f64x2.le(x, z), ONE); break;
      case Op.Gt: y = v128.and(f64x2.gt(x, z), ONE); break;
      case Op.Ge: y = v128.and(f64x2.ge(x, z), ONE); break;
      case Op.Eq: y = v128.and(f64x2.eq(x, z), ONE); break;
      case Op.Select: y = v128.bitselect(z, lv(val2, argA(i - 1)), truthyMask(x)); break;
      default:
        y = pair(forwardRule(op, lane0(x), lane0(z)), forwardRule(op, lane1(x), lane1(z)));
    }
    setLv(val2, i, y);
  }
}

function reverse2(val2: usize, adj2: usize, out: i32, count: i32): void {
  memory.fill(adj2, 0, <usize>count << 4);
  setLv(adj2, out, ONE);
  for (let i = out; i >= 0; i--) {
    const g = lv(adj2, i);
    const gMask = nonZero(g);
    if (!v128.any_true(gMask)) continue;
    const op = opAt(i);
    if (op <= Op.Arg) continue;
    const ia = argA(i);
    const ib = argB(i);
    const x = lv(val2, ia);
    const z = lv(val2, ib);
    const y = lv(val2, i);
    switch (op) {
      case Op.Add: addScaled(adj2, ia, g, ONE, gMask); addScaled(adj2, ib, g, ONE, gMask); break;
      case Op.Sub: addScaled(adj2, ia, g, ONE, gMask); addScaled(adj2, ib, g, f64x2.splat(-1), gMask); break;
      case Op.Mul: addScaled(adj2, ia, g, z, gMask); addScaled(adj2, ib, g, x, gMask); break;
      case Op.Div: {
        // As the scalar rule: where y is NaN (0/0, Inf/Inf) both partials are NaN.
        const undefinedAt = f64x2.ne(y, y);
        const nan = f64x2.splat(NaN);
        addScaled(adj2, ia, g, v128.bitselect(nan, f64x2.div(ONE, z), undefinedAt), gMask);
        addScaled(adj2, ib, g, v128.bitselect(nan, f64x2.div(f64x2.neg(y), z), undefinedAt), gMask);
        break;
      }
      case Op.Neg: addScaled(adj2, ia, g, f64x2.splat(-1), gMask); break;
      case Op.Recip: addScaled(adj2, ia, g, f64x2.mul(f64x2.neg(y), y), gMask); break;
      case Op.Square: addScaled(adj2, ia, g, f64x2.mul(f64x2.splat(2), x), gMask); break;
      case Op.Sqrt: addScaled(adj2, ia, g, f64x2.div(f64x2.splat(0.5), f64x2.abs(y)), gMask); break;
      case Op.Select: {
        const taken = truthyMask(x);
        addMasked(adj2, ib, g, v128.and(gMask, taken));
        addMasked(adj2, argA(i - 1), g, v128.andnot(gMask, taken));
        break;
      }
      default: {
        // Per lane with the scalar partials; a lane whose adjoint is 0 is skipped entirely,
        // as in the scalar sweep.
        const g0 = lane0(g), g1 = lane1(g);
        let pa0: f64 = 0, pb0: f64 = 0, pa1: f64 = 0, pb1: f64 = 0;
        if (g0 != 0) { pa0 = partials(op, lane0(x), lane0(z), lane0(y)); pb0 = partialZ; }
        if (g1 != 0) { pa1 = partials(op, lane1(x), lane1(z), lane1(y)); pb1 = partialZ; }
        addScaled(adj2, ia, g, pair(pa0, pa1), gMask);
        addScaled(adj2, ib, g, pair(pb0, pb1), gMask);
      }
    }
  }
}

function guardsHold(val2: usize, guards: usize, nGuards: i32): bool {
  const nodes = guards + (<usize>nGuards << 3);
  for (let k = 0; k < nGuards; k++) {
    const v = lv(val2, load<i32>(nodes + (<usize>k << 2)));
    const expected = f64x2.splat(load<f64>(guards + (<usize>k << 3)));
    if (!v128.all_true<i64>(f64x2.eq(v, expected))) return false;
  }
  return true;
}

/** As `gradientBatch`, two rows per pass; `lanes` is scratch for 32 bytes per node. A pair whose
 *  guards fail, an odd last row and tapes with custom ops go through the scalar kernel. */
export function gradientBatchSimd(
  x: usize, rows: i32, nInputs: i32, count: i32, out: i32, g: usize, guards: usize, nGuards: i32, lanes: usize, values: usize,
): i32 {
  for (let i = 0; i < count; i++) {
    if (opAt(i) == Op.Custom) return gradientBatch(x, rows, nInputs, count, out, g, guards, nGuards, values, 0);
  }
  const val2 = lanes;
  const adj2 = lanes + (<usize>count << 4);
  for (let i = nInputs; i < count; i++) {
    const op = opAt(i);
    if (op == Op.Const) setLv(val2, i, f64x2.splat(val(i)));
    else if (op == Op.Arg) setLv(val2, i, f64x2.splat(0));
  }
  const rowBytes = <usize>nInputs << 3;
  let r = 0;
  for (; r + 1 < rows; r += 2) {
    const row0 = x + <usize>r * rowBytes;
    for (let k = 0; k < nInputs; k++) {
      const at = <usize>k << 3;
      setLv(val2, k, pair(load<f64>(row0 + at), load<f64>(row0 + rowBytes + at)));
    }
    forward2(val2, nInputs, count);
    if (!guardsHold(val2, guards, nGuards)) {
      return r + gradientBatch(row0, rows - r, nInputs, count, out, g + <usize>r * rowBytes, guards, nGuards, values ? values + (<usize>r << 3) : 0, 0);
    }
    if (values) {
      const y = lv(val2, out);
      store<f64>(values + (<usize>r << 3), lane0(y));
      store<f64>(values + (<usize>r << 3) + 8, lane1(y));
    }
    reverse2(val2, adj2, out, count);
    const g0 = g + <usize>r * rowBytes;
    for (let k = 0; k < nInputs; k++) {
      const v = lv(adj2, k);
      const at = <usize>k << 3;
      store<f64>(g0 + at, lane0(v));
      store<f64>(g0 + rowBytes + at, lane1(v));
    }
  }
  if (r < rows) {
    r += gradientBatch(x + <usize>r * rowBytes, rows - r, nInputs, count, out, g + <usize>r * rowBytes, guards, nGuards, values ? values + (<usize>r << 3) : 0, 0);
  }
  return r;
}
