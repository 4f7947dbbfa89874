// Array-valued nodes: the rules of the vector ops of the table in ops.ts, one function per sweep.
// A vector node owns a contiguous range of the element regions (values, adjoints, tangents), so
// one dispatch covers n elements and each rule is a tight loop. src/js/vector.ts is the JS twin,
// loop for loop in the same order, which is what makes sums bit-identical between the engines.
import {
  Op, ELEMENTWISE, isVectorOp, forwardRule, forwardRuleCall, partials, partialZ, partialsCall, partialsTangentCall, partialZTangent, truthy, zeroGradient, sgn,
} from './ops';
import {
  val, setVal, adj, addAdj, argA, argB, opAt, tan, setTan, tanAdj, addTanAdj,
  valBase, adjBase, tanBase, tanAdjBase, xvalBase, xadjBase, xtanBase, xtanAdjBase, xval, xadj, xtan, xtanAdj, masked,
} from './layout';
import { largest, logSumExpValue, softmaxDot, softmaxBack, softmaxBackTangent } from './log-sum-exp';

// @ts-ignore: decorator
@inline function isVec(j: i32): bool { return isVectorOp(opAt(j)); }
// @ts-ignore: decorator
@inline function offOf(j: i32): i32 { return argA(j - 1); }
// @ts-ignore: decorator
@inline function lenOf(j: i32): i32 { return argB(j - 1); }
// @ts-ignore: decorator
@inline function at(base: usize, k: i32): usize { return base + (<usize>k << 3); }
// @ts-ignore: decorator
@inline function ld(p: usize): f64 { return load<f64>(p); }
// @ts-ignore: decorator
@inline function st(p: usize, v: f64): void { store<f64>(p, v); }
// @ts-ignore: decorator
@inline function acc(p: usize, v: f64): void { store<f64>(p, load<f64>(p) + v); }

/** Constants never need adjoints: rules skip the work of computing them. */
// @ts-ignore: decorator
@inline function wantsAdjoint(j: i32): bool { const op = opAt(j); return op != Op.Const && op != Op.VConst; }

/** Before a rule sends adjoint to vector node j: its adj slot is a flag, and the first rule to
 *  reach it in a sweep zeroes its element adjoints (and their tangents, in the second-order
 *  sweep) and sets the flag. So a sweep clears only the vectors it reaches, never a constant
 *  (whose element adjoints no one reads). */
function claim(j: i32, tangents: bool): void {
  const op = opAt(j);
  if (!isVectorOp(op) || op == Op.VConst || adj(j) != 0) return;
  const off = <usize>offOf(j) << 3, bytes = <usize>lenOf(j) << 3;
  memory.fill(xadjBase + off, 0, bytes);
  if (tangents) memory.fill(xtanAdjBase + off, 0, bytes);
  store<f64>(adjBase + (<usize>j << 3), 1);
}

// An elementwise reverse rule writes every element of a full-length operand exactly once. When
// it is the first rule to reach that operand in the sweep, it stores its terms instead of adding
// them to zeroed memory (storeA, storeB: the same values, +0 + t, without the clearing pass).
let storeA = false;
let storeB = false;

/** Claims j for a rule that will write all of its `n` elements: true when that rule is the first
 *  (it then stores, and nothing is zeroed); else j is claimed as usual. */
function claimWhole(j: i32, n: i32): bool {
  const op = opAt(j);
  if (!isVectorOp(op) || op == Op.VConst || adj(j) != 0) return false;
  if (lenOf(j) != n) { claim(j, false); return false; }
  store<f64>(adjBase + (<usize>j << 3), 1);
  return true;
}

/** Claims every vector operand that the reverse rule of node i sends adjoint to (and sets
 *  storeA, storeB for an elementwise rule in the first-order sweep). */
function claimOperands(i: i32, op: i32, tangents: bool): void {
  const ia = argA(i), ib = argB(i);
  storeA = false;
  storeB = false;
  if (op >= ELEMENTWISE) {
    if (op - ELEMENTWISE == Op.Select) { claim(ib, tangents); claim(argA(i - 2), tangents); return; }
    if (!tangents) {
      storeA = claimWhole(ia, lenOf(i));
      storeB = ib != ia && claimWhole(ib, lenOf(i));
      return;
    }
    claim(ia, tangents); claim(ib, tangents);
    return;
  }
  switch (op) {
    case Op.VDot: case Op.VMatmul: claim(ia, tangents); claim(ib, tangents); return;
    // logSumExp's first-order rule writes every element too (its softmax).
    case Op.VLogSumExp: if (!tangents) storeA = claimWhole(ia, lenOf(ia)); else claim(ia, tangents); return;
    case Op.VGet: case Op.VSum: case Op.VMax: case Op.VMin:
    case Op.VTranspose: case Op.VSlice: case Op.VGather: claim(ia, tangents); return;
    case Op.VConcat: {
      const first = i - 1 - ((ia + 1) >> 1);
      for (let c = 0; c < ia; c++) claim((c & 1) ? argB(first + (c >> 1)) : argA(first + (c >> 1)), tangents);
      return;
    }
  }
}

// ─── contractions: every sum over elements runs in this one order ───

/** Σ a_l b_l over `len` terms (byte strides sa, sb): four interleaved partial sums, ascending,
 *  combined as (s0 + s2) + (s1 + s3). One term is returned as it is. */
function dot4(pa: usize, sa: usize, pb: usize, sb: usize, len: i32): f64 {
  if (len <= 1) return len == 1 ? ld(pa) * ld(pb) : 0;
  // -0, addition's identity: from +0, a sum of -0 terms was +0 (IEEE's and the scalar code's -0).
  let s0 = -0.0, s1 = -0.0, s2 = -0.0, s3 = -0.0;
  let l = 0;
  if (ASC_FEATURE_SIMD && sa == 8 && sb == 8) {
    let acc01 = f64x2.splat(-0.0), acc23 = f64x2.splat(-0.0);
    for (; l + 4 <= len; l += 4) {
      acc01 = f64x2.add(acc01, f64x2.mul(v128.load(pa), v128.load(pb)));
      acc23 = f64x2.add(acc23, f64x2.mul(v128.load(pa, 16), v128.load(pb, 16)));
      pa += 32;
      pb += 32;
    }
    s0 = f64x2.extract_lane(acc01, 0); s1 = f64x2.extract_lane(acc01, 1);
    s2 = f64x2.extract_lane(acc23, 0); s3 = f64x2.extract_lane(acc23, 1);
  } else {
    for (; l + 4 <= len; l += 4) {
      s0 += ld(pa) * ld(pb);
      s1 += ld(pa + sa) * ld(pb + sb);
      s2 += ld(pa + 2 * sa) * ld(pb + 2 * sb);
      s3 += ld(pa + 3 * sa) * ld(pb + 3 * sb);
      pa += 4 * sa;
      pb += 4 * sb;
    }
  }
  if (l < len) { s0 += ld(pa) * ld(pb); l++; pa += sa; pb += sb; }
  if (l < len) { s1 += ld(pa) * ld(pb); l++; pa += sa; pb += sb; }
  if (l < len) { s2 += ld(pa) * ld(pb); }
  return (s0 + s2) + (s1 + s3);
}

/** Σ x_l over `len` contiguous values, in dot4's order. */
function sum4(p: usize, len: i32): f64 {
  if (len <= 1) return len == 1 ? ld(p) : 0;
  let s0 = -0.0, s1 = -0.0, s2 = -0.0, s3 = -0.0;
  let l = 0;
  if (ASC_FEATURE_SIMD) {
    let acc01 = f64x2.splat(-0.0), acc23 = f64x2.splat(-0.0);
    for (; l + 4 <= len; l += 4) {
      acc01 = f64x2.add(acc01, v128.load(p));
      acc23 = f64x2.add(acc23, v128.load(p, 16));
      p += 32;
    }
    s0 = f64x2.extract_lane(acc01, 0); s1 = f64x2.extract_lane(acc01, 1);
    s2 = f64x2.extract_lane(acc23, 0); s3 = f64x2.extract_lane(acc23, 1);
  } else {
    for (; l + 4 <= len; l += 4) {
      s0 += ld(p); s1 += ld(p + 8); s2 += ld(p + 16); s3 += ld(p + 24);
      p += 32;
    }
  }
  if (l < len) { s0 += ld(p); l++; p += 8; }
  if (l < len) { s1 += ld(p); l++; p += 8; }
  if (l < len) { s2 += ld(p); }
  return (s0 + s2) + (s1 + s3);
}

/** D[i, j] (= or +=) Σ_l A[i, l] B[l, j], i < m, l < k, j < p; every operand by byte strides, so
 *  transposed operands (the VJPs) are the same call. Where the rows of D and B are contiguous
 *  and p > 1 (matmul, vecmat, Aᵀ·gC), a row of D takes the terms one l at a time, in ascending
 *  order, straight into D (vectorised across the row); so does a single column D whose A is
 *  read transposed (Aᵀ·g); otherwise each D[i, j] is a dot4 added to D once. */
function contract(
  d: usize, dsi: usize, dsj: usize, a: usize, asi: usize, asl: usize, b: usize, bsl: usize, bsj: usize,
  m: i32, k: i32, p: i32, accumulate: bool,
): void {
  // No entry of D: nothing to do, however long its other side ([1, 0]·[0, 0] with m = 2^31 - 1
  // looped m times empty in every sweep: a probe).
  if (m == 0 || p == 0) return;
  if (p > 1 && dsj == 8 && bsj == 8) {
    for (let i = 0; i < m; i++) {
      const row = d + <usize>i * dsi, ai = a + <usize>i * asi;
      if (k == 0 && !accumulate) memory.fill(row, 0, <usize>p << 3);
      let l = 0;
      for (; l + 4 <= k; l += 4) {
        const al = ai + <usize>l * asl;
        axpy4(row, ld(al), ld(al + asl), ld(al + 2 * asl), ld(al + 3 * asl), b + <usize>l * bsl, bsl, p, accumulate || l > 0);
      }
      for (; l < k; l++) axpy(row, ld(ai + <usize>l * asl), b + <usize>l * bsl, p, accumulate || l > 0);
    }
    return;
  }
  if (p == 1 && m > 1 && dsi == 8 && asi == 8) {
    // A column of results from a transposed matrix (the x-adjoint of matvec, Aᵀ·g): the same
    // one-l-at-a-time order, down the contiguous columns.
    if (k == 0 && !accumulate) memory.fill(d, 0, <usize>m << 3);
    let l = 0;
    for (; l + 4 <= k; l += 4) {
      const bl = b + <usize>l * bsl;
      axpy4(d, ld(bl), ld(bl + bsl), ld(bl + 2 * bsl), ld(bl + 3 * bsl), a + <usize>l * asl, asl, m, accumulate || l > 0);
    }
    for (; l < k; l++) axpy(d, ld(b + <usize>l * bsl), a + <usize>l * asl, m, accumulate || l > 0);
    return;
  }
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < p; j++) {
      const v = dot4(a + <usize>i * asi, asl, b + <usize>j * bsj, bsl, k);
      const q = d + <usize>i * dsi + <usize>j * dsj;
      st(q, accumulate ? ld(q) + v : v);
    }
  }
}

/** Four axpy calls in one pass, s0 · x (+ to row with `add`), then s1, s2 and s3 · x + q·stride
 *  added in that order: the same roundings, so the same bits, with row read and written once for
 *  the four (Aᵀ·g of llsq's 1024 × 128 matrix: a load and a store of the row per term, 36 µs). */
function axpy4(row: usize, s0: f64, s1: f64, s2: f64, s3: f64, x: usize, stride: usize, p: i32, add: bool): void {
  const x1 = x + stride, x2 = x1 + stride, x3 = x2 + stride;
  let j = 0;
  if (ASC_FEATURE_SIMD) {
    const v0 = f64x2.splat(s0), v1 = f64x2.splat(s1), v2 = f64x2.splat(s2), v3 = f64x2.splat(s3);
    for (; j + 2 <= p; j += 2) {
      const t0 = f64x2.mul(v0, v128.load(at(x, j)));
      let r = add ? f64x2.add(v128.load(at(row, j)), t0) : t0;
      r = f64x2.add(r, f64x2.mul(v1, v128.load(at(x1, j))));
      r = f64x2.add(r, f64x2.mul(v2, v128.load(at(x2, j))));
      v128.store(at(row, j), f64x2.add(r, f64x2.mul(v3, v128.load(at(x3, j)))));
    }
  }
  for (; j < p; j++) {
    const t0 = s0 * ld(at(x, j));
    const r = add ? ld(at(row, j)) + t0 : t0;
    st(at(row, j), ((r + s1 * ld(at(x1, j))) + s2 * ld(at(x2, j))) + s3 * ld(at(x3, j)));
  }
}

/** row[j] (+)= s · x[j] for j < p, contiguous. */
function axpy(row: usize, s: f64, x: usize, p: i32, add: bool): void {
  let j = 0;
  if (ASC_FEATURE_SIMD) {
    const sv = f64x2.splat(s);
    if (add) for (; j + 2 <= p; j += 2) v128.store(at(row, j), f64x2.add(v128.load(at(row, j)), f64x2.mul(sv, v128.load(at(x, j)))));
    else for (; j + 2 <= p; j += 2) v128.store(at(row, j), f64x2.mul(sv, v128.load(at(x, j))));
  }
  if (add) for (; j < p; j++) acc(at(row, j), s * ld(at(x, j)));
  else for (; j < p; j++) st(at(row, j), s * ld(at(x, j)));
}

// ─── elementwise ops: operand addressing with broadcasting ───
// An operand is a scalar node (step 0), a vector of the output's length, or a shorter vector
// repeated every `blockLen` elements. The output runs in `blocks` blocks of `blockLen`.

let blockLen: i32 = 0;
let blocks: i32 = 0;

function setBlocks(n: i32, ia: i32, ib: i32, ic: i32): void {
  let len = n;
  if (isVec(ia) && lenOf(ia) < len) len = lenOf(ia);
  if (isVec(ib) && lenOf(ib) < len) len = lenOf(ib);
  if (isVec(ic) && lenOf(ic) < len) len = lenOf(ic);
  blockLen = len;
  blocks = len == 0 ? 0 : n / len;
}

/** Address of operand j's first element (or scalar slot) given the node and element bases. */
// @ts-ignore: decorator
@inline function addr(j: i32, nodeBase: usize, elemBase: usize): usize {
  return isVec(j) ? at(elemBase, offOf(j)) : at(nodeBase, j);
}
// @ts-ignore: decorator
@inline function stepOf(j: i32): usize { return isVec(j) ? 8 : 0; }
/** Bytes operand j moves per block: a block for full-length vectors, 0 for repeated and scalars. */
// @ts-ignore: decorator
@inline function blockStep(j: i32, n: i32): usize { return isVec(j) && lenOf(j) == n ? <usize>blockLen << 3 : 0; }

// @ts-ignore: decorator
@inline function mapLoop(s: i32, out: usize, pa: usize, sa: usize, pb: usize, sb: usize, len: i32): void {
  for (let k = 0; k < len; k++) {
    st(out, forwardRule(s, ld(pa), ld(pb)));
    out += 8; pa += sa; pb += sb;
  }
}

// @ts-ignore: decorator
@inline function simdMap(s: i32, x: v128, z: v128): v128 {
  return s == Op.Add ? f64x2.add(x, z) : s == Op.Sub ? f64x2.sub(x, z) : s == Op.Mul ? f64x2.mul(x, z) : f64x2.div(x, z);
}

function mapBlock(s: i32, out: usize, pa: usize, sa: usize, pb: usize, sb: usize, len: i32): void {
  if (ASC_FEATURE_SIMD && (s == Op.Add || s == Op.Sub || s == Op.Mul || s == Op.Div) && sa == 8) {
    // x ⊕ z with z a full vector or a broadcast scalar (splatted once): IEEE per lane, so equal
    // to the scalar loop bit for bit.
    let k = 0;
    if (sb == 8) {
      for (; k + 2 <= len; k += 2) v128.store(at(out, k), simdMap(s, v128.load(at(pa, k)), v128.load(at(pb, k))));
    } else {
      const z = f64x2.splat(ld(pb));
      for (; k + 2 <= len; k += 2) v128.store(at(out, k), simdMap(s, v128.load(at(pa, k)), z));
    }
    if (k < len) st(at(out, k), forwardRule(s, ld(at(pa, k)), ld(pb + <usize>k * sb)));
    return;
  }
  switch (s) {
    case Op.Add: mapLoop(Op.Add, out, pa, sa, pb, sb, len); return;
    case Op.Sub: mapLoop(Op.Sub, out, pa, sa, pb, sb, len); return;
    case Op.Mul: mapLoop(Op.Mul, out, pa, sa, pb, sb, len); return;
    case Op.Div: mapLoop(Op.Div, out, pa, sa, pb, sb, len); return;
    case Op.Square: for (let k = 0; k < len; k++, out += 8, pa += sa) { const x = ld(pa); st(out, x * x); } return;
    case Op.Neg: for (let k = 0; k < len; k++, out += 8, pa += sa) st(out, -ld(pa)); return;
    // Cheap enough that the out-of-line rule's call was most of their time (relu 3.4 against
    // mul's 0.26 ns an element: a new-user probe).
    case Op.Relu: mapLoop(Op.Relu, out, pa, sa, pb, sb, len); return;
    case Op.Abs: mapLoop(Op.Abs, out, pa, sa, pb, sb, len); return;
    case Op.Max: mapLoop(Op.Max, out, pa, sa, pb, sb, len); return;
    case Op.Min: mapLoop(Op.Min, out, pa, sa, pb, sb, len); return;
  }
  // The other ops cost more than the dispatch: one loop through the out-of-line rule.
  for (let k = 0; k < len; k++) {
    st(out, forwardRuleCall(s, ld(pa), ld(pb)));
    out += 8; pa += sa; pb += sb;
  }
}

/** select per element: the branch's entry (a value, or a tangent: `nodes`/`elements` say which
 *  regions) where the condition holds, else the other's, into `out`; elements [skip, skip + n). */
function selectInto(i: i32, n: i32, skip: usize, out: usize, nodes: usize, elements: usize): void {
  const ia = argA(i), ib = argB(i), ic = argA(i - 2);
  setBlocks(n, ia, ib, ic);
  let pc = addr(ia, valBase, xvalBase) + skip * stepOf(ia), pt = addr(ib, nodes, elements) + skip * stepOf(ib);
  let pf = addr(ic, nodes, elements) + skip * stepOf(ic);
  const sc = stepOf(ia), stt = stepOf(ib), sf = stepOf(ic);
  const dc = blockStep(ia, n), dt = blockStep(ib, n), df = blockStep(ic, n);
  for (let blk = 0; blk < blocks; blk++) {
    for (let k = 0; k < blockLen; k++) {
      st(at(out, k), truthy(ld(pc + <usize>k * sc)) ? ld(pt + <usize>k * stt) : ld(pf + <usize>k * sf));
    }
    out += <usize>blockLen << 3; pc += dc; pt += dt; pf += df;
  }
}

/** Elements [from, from + n) of elementwise node i (from > 0 only inside a run, whose operands
 *  all span the full length: see forwardRun). */
function elementwiseForward(i: i32, s: i32, n: i32, from: i32): void {
  const ia = argA(i), ib = argB(i);
  let out = at(xvalBase, offOf(i) + from);
  const skip = <usize>from;
  if (s == Op.Select) { selectInto(i, n, skip, out, valBase, xvalBase); return; }
  setBlocks(n, ia, ib, ia);
  let pa = addr(ia, valBase, xvalBase) + skip * stepOf(ia), pb = addr(ib, valBase, xvalBase) + skip * stepOf(ib);
  const sa = stepOf(ia), sb = stepOf(ib), da = blockStep(ia, n), db = blockStep(ib, n);
  for (let blk = 0; blk < blocks; blk++) {
    mapBlock(s, out, pa, sa, pb, sb, blockLen);
    out += <usize>blockLen << 3; pa += da; pb += db;
  }
}

/** One term for an adjoint: stored (as +0 + t) by the rule that claimed it whole, else added
 *  unless it is zero (adding a zero changes no adjoint: they are never -0). */
// @ts-ignore: decorator
@inline function send(p: usize, t: f64, fresh: bool): void {
  if (fresh) st(p, 0.0 + t);
  else if (t != 0) acc(p, t);
}

// The terms a broadcast scalar operand (step 0) receives are summed here, in ascending element
// order, and added to its adjoint once; a vector operand takes its terms element by element.
let termsA: f64 = 0;
let termsB: f64 = 0;

// Per element exactly the scalar reverse sweep: skip a zero adjoint, skip a zero partial. The
// cheap ops are written out (g·1 = g and g·-1 = -g exactly, as the scalar sweep's fast paths),
// the rest call the out-of-line rule, whose cost their libm calls dwarf.
function reverseBlock(
  s: i32, pg: usize, py: usize, xa: usize, ga: usize, sa: usize, xb: usize, gb: usize, sb: usize, len: i32,
  wantA: bool, wantB: bool, freshA: bool, freshB: bool,
): void {
  let ta = termsA, tb = termsB;
  const oneA = sa == 0, oneB = sb == 0;
  let k0 = 0;
  // Two vectors, or a vector and a constant scalar (whose adjoint no one wants: a wanted scalar
  // sums its terms in order, one at a time).
  const pairs = (sa == 8 || !wantA) && (sb == 8 || !wantB) && (sa == 8 || sb == 8);
  if (ASC_FEATURE_SIMD && sa == 8 && wantA && (s == Op.Square || s == Op.Neg)) {
    // g·2x masked where the scalar rule skips (g = 0 or x = 0); neg adds -g (adding a zero
    // adjoint's -0 changes no adjoint).
    const zero = f64x2.splat(0), two = f64x2.splat(2);
    for (; k0 + 2 <= len; k0 += 2) {
      const g = v128.load(pg);
      const before = freshA ? zero : v128.load(ga);
      if (s == Op.Neg) v128.store(ga, f64x2.sub(before, g));
      else {
        const x = v128.load(xa);
        const live = v128.and(f64x2.ne(g, zero), f64x2.ne(x, zero));
        v128.store(ga, f64x2.add(before, v128.and(f64x2.mul(g, f64x2.mul(two, x)), live)));
      }
      pg += 16; py += 16; xa += 16; ga += 16;
    }
  }
  if (ASC_FEATURE_SIMD && pairs && (s == Op.Add || s == Op.Sub || s == Op.Mul)) {
    // Two elements per pass, with the scalar loop's results: adding a zero adjoint changes no
    // adjoint (they start at +0 and are never -0), and mul masks its products where the
    // scalar rule skips them (g = 0 or a zero partial), so 0·Infinity never becomes a NaN.
    const zero = f64x2.splat(0);
    const xs = f64x2.splat(ld(xa)), zs = f64x2.splat(ld(xb));
    const da = sa << 1, db = sb << 1;
    for (; k0 + 2 <= len; k0 += 2) {
      const g = v128.load(pg);
      if (s == Op.Mul) {
        const x = sa == 8 ? v128.load(xa) : xs, z = sb == 8 ? v128.load(xb) : zs, live = f64x2.ne(g, zero);
        if (wantA) v128.store(ga, f64x2.add(freshA ? zero : v128.load(ga), v128.and(f64x2.mul(g, z), v128.and(live, f64x2.ne(z, zero)))));
        if (wantB) v128.store(gb, f64x2.add(freshB ? zero : v128.load(gb), v128.and(f64x2.mul(g, x), v128.and(live, f64x2.ne(x, zero)))));
      } else {
        if (wantA) v128.store(ga, f64x2.add(freshA ? zero : v128.load(ga), g));
        if (wantB) v128.store(gb, s == Op.Sub ? f64x2.sub(freshB ? zero : v128.load(gb), g) : f64x2.add(freshB ? zero : v128.load(gb), g));
      }
      pg += 16; py += 16; xa += da; ga += da; xb += db; gb += db;
    }
  }
  const rest = len - k0;
  len = rest;
  if (s == Op.Add || s == Op.Sub) {
    const negate = s == Op.Sub;
    for (let k = 0; k < len; k++) {
      const g = ld(pg);
      if (wantA) { if (oneA) ta += g; else send(ga, g, freshA); }
      if (wantB) { const h = negate ? -g : g; if (oneB) tb += h; else send(gb, h, freshB); }
      pg += 8; ga += sa; gb += sb;
    }
  } else if (s == Op.Mul) {
    for (let k = 0; k < len; k++) {
      const g = ld(pg);
      const x = ld(xa), z = ld(xb);
      if (wantA) { const t = g != 0 && z != 0 ? g * z : 0; if (oneA) ta += t; else send(ga, t, freshA); }
      if (wantB) { const t = g != 0 && x != 0 ? g * x : 0; if (oneB) tb += t; else send(gb, t, freshB); }
      pg += 8; xa += sa; ga += sa; xb += sb; gb += sb;
    }
  } else if (s == Op.Square || s == Op.Neg) {
    const square = s == Op.Square;
    for (let k = 0; k < len; k++) {
      const g = ld(pg);
      if (wantA) {
        const p = square ? 2 * ld(xa) : -1.0;
        const t = g != 0 && p != 0 ? g * p : 0;
        if (oneA) ta += t; else send(ga, t, freshA);
      }
      pg += 8; xa += sa; ga += sa;
    }
  } else if (zeroGradient(s)) {
    // No term from any element (comparisons, floor, stopGradient...): an adjoint this rule
    // claimed whole still starts at +0, as each element's zero term would have left it.
    if (wantA && freshA) memory.fill(ga, 0, <usize>len << 3);
    if (wantB && freshB) memory.fill(gb, 0, <usize>len << 3);
  } else if (s == Op.Relu || s == Op.Abs) {
    const relu = s == Op.Relu;
    for (let k = 0; k < len; k++) {
      const g = ld(pg);
      if (wantA) {
        const x = ld(xa);
        const p = relu ? (x > 0 ? 1.0 : x == x ? 0.0 : NaN) : sgn(x);
        const t = g != 0 && p != 0 ? g * p : 0;
        if (oneA) ta += t; else send(ga, t, freshA);
      }
      pg += 8; xa += sa; ga += sa;
    }
  } else {
    for (let k = 0; k < len; k++) {
      const g = ld(pg);
      let p = 0.0, q = 0.0;
      if (g != 0) {
        p = partialsCall(s, ld(xa), ld(xb), ld(py));
        q = partialZ;
      }
      if (wantA) { const t = g != 0 && p != 0 ? g * p : 0; if (oneA) ta += t; else send(ga, t, freshA); }
      if (wantB) { const t = g != 0 && q != 0 ? g * q : 0; if (oneB) tb += t; else send(gb, t, freshB); }
      pg += 8; py += 8; xa += sa; ga += sa; xb += sb; gb += sb;
    }
  }
  termsA = ta;
  termsB = tb;
}

/** Elements [from, from + n) of elementwise node i's reverse rule. A broadcast scalar's terms
 *  go to termsA and termsB (select: the true and false branch); `whole` starts them at 0 and
 *  adds them at the end, else the caller (a run, over its blocks) does. */
function elementwiseReverse(i: i32, s: i32, n: i32, from: i32, whole: bool): void {
  const ia = argA(i), ib = argB(i);
  let pg = at(xadjBase, offOf(i) + from);
  const skip = <usize>from;
  if (whole) { termsA = 0; termsB = 0; }
  if (s == Op.Select) {
    const ic = argA(i - 2);
    setBlocks(n, ia, ib, ic);
    let pc = addr(ia, valBase, xvalBase) + skip * stepOf(ia), gt = addr(ib, adjBase, xadjBase) + skip * stepOf(ib);
    let gf = addr(ic, adjBase, xadjBase) + skip * stepOf(ic);
    const sc = stepOf(ia), stt = stepOf(ib), sf = stepOf(ic);
    const dc = blockStep(ia, n), dt = blockStep(ib, n), df = blockStep(ic, n);
    const wantT = wantsAdjoint(ib), wantF = wantsAdjoint(ic);
    let termT = termsA, termF = termsB;
    for (let blk = 0; blk < blocks; blk++) {
      for (let k = 0; k < blockLen; k++) {
        const g = ld(at(pg, k));
        if (g == 0) continue;
        if (truthy(ld(pc + <usize>k * sc))) { if (wantT) { if (stt == 0) termT += g; else acc(gt + <usize>k * stt, g); } }
        else if (wantF) { if (sf == 0) termF += g; else acc(gf + <usize>k * sf, g); }
      }
      pg += <usize>blockLen << 3; pc += dc; gt += dt; gf += df;
    }
    termsA = termT;
    termsB = termF;
    if (whole) applyTerms(i, s);
    return;
  }
  setBlocks(n, ia, ib, ia);
  let py = at(xvalBase, offOf(i) + from);
  let xa = addr(ia, valBase, xvalBase) + skip * stepOf(ia), ga = addr(ia, adjBase, xadjBase) + skip * stepOf(ia);
  let xb = addr(ib, valBase, xvalBase) + skip * stepOf(ib), gb = addr(ib, adjBase, xadjBase) + skip * stepOf(ib);
  const sa = stepOf(ia), sb = stepOf(ib), da = blockStep(ia, n), db = blockStep(ib, n);
  // A unary op has b = a and a zero second partial, so b gets nothing; a binary op over one
  // vector (v.mul(v)) has b = a too, and both partials go to it, as in the scalar sweep.
  const wantA = wantsAdjoint(ia), wantB = wantsAdjoint(ib);
  for (let blk = 0; blk < blocks; blk++) {
    reverseBlock(s, pg, py, xa, ga, sa, xb, gb, sb, blockLen, wantA, wantB, storeA && sa != 0, storeB && sb != 0);
    const step = <usize>blockLen << 3;
    pg += step; py += step; xa += da; ga += da; xb += db; gb += db;
  }
  if (whole) applyTerms(i, s);
}

/** Adds termsA and termsB to the scalar operands (if any) of elementwise node i. */
function applyTerms(i: i32, s: i32): void {
  const first = s == Op.Select ? argB(i) : argA(i), second = s == Op.Select ? argA(i - 2) : argB(i);
  if (!isVec(first)) acc(at(adjBase, first), termsA);
  if (!isVec(second)) acc(at(adjBase, second), termsB);
}

// ─── runs: elementwise chains swept block by block ───
// Consecutive elementwise nodes of one length n whose vector operands all span that length
// (only their carrier nodes and scalar constants between them) are independent element by element. A run
// (n past RUN_PAST) is swept in blocks of RUN_BLOCK elements, every node of the run per block, so its intermediate
// arrays stay in cache instead of streaming through memory once per op. Every element sees the
// same operations in the same order, and a broadcast scalar's terms are still summed in
// ascending element order and added once per node: results are the unblocked sweep's, bit for
// bit (the JS engine does not block, and the parity tests compare the two).

// @ts-ignore: decorator
@inline const RUN_BLOCK: i32 = 1024;
// Chains of vectors longer than this are runs (fused, or blocked). A fused kernel pays for its
// call from a few dozen elements on a tape of one chain shape (bench/run-lengths.ts: at 1,024
// elements 4.60 -> 1.96 ns per element and op), but each new shape compiles a module (1.5-2 ms)
// and a tape of more shapes than the cache below holds crosses into JS for each run and sweep:
// runs past 16 elements made such tapes 1.5-7x slower at 24-128 elements (a review), so runs
// start past a block.
// @ts-ignore: decorator
@inline const RUN_PAST: i32 = RUN_BLOCK;
// @ts-ignore: decorator
@inline const RUN_MAX: i32 = 256;
const runNodes = memory.data(4 * RUN_MAX);
const runTerms = memory.data(16 * RUN_MAX);
const runStores = memory.data(RUN_MAX);

// ─── fused runs: one generated loop per run instead of one loop per node ───
// Where the façade supplies them (src/wasm/codegen/emit-runs.ts), a run of 2 to FUSE_MAX nodes is
// swept by a kernel generated for its shape: the run's ops, which operand is which run node, and
// in the reverse sweep which nodes are active and which operands are stored whole. Per element it
// computes every node with its operands in registers (forward), or every node's adjoint terms from
// last to first (reverse), storing each value and adjoint the block sweep would store, with the same
// operations in the same order: results equal the block sweep's bit for bit, and memory traffic
// drops to one load or store per value. `fuseRun` returns the kernel's table slot, or 0 (no
// generator loaded, an op the kernels do not spell, or a kernel still compiling).
// @ts-ignore: decorator
@external('env', 'fuseRun') declare function fuseRun(signature: usize, words: i32): u32;
// @ts-ignore: decorator
@inline const FUSE_MAX: i32 = 64;
// @ts-ignore: decorator
@inline const FUSE_SIG_WORDS: i32 = 4;
// @ts-ignore: decorator
@inline const FUSE_PARAM_WORDS: i32 = 7;
const fuseSignature = memory.data(4 * (2 + FUSE_SIG_WORDS * FUSE_MAX));
// (A reverse tangent kernel's second block of words follows the first and the sum's slot.)
const fuseParams = memory.data(4 * (2 * FUSE_PARAM_WORDS * FUSE_MAX + 1));
// A reverse tangent kernel's sums of a broadcast scalar operand's terms, per node (ascending):
// a's and b's adjoint terms, then their adjoint tangent terms.
const runTangentTerms = memory.data(32 * FUSE_MAX);
// Signature flags (FUSE_SIG_WORDS' last word): forward, DEFER: the node's values are not stored;
// reverse, ACTIVE, STORE_A, STORE_B, then DEFER: its values were not stored (the kernel recomputes
// them per element), DROP: its final adjoint is not stored (see keepAdjoints).
// @ts-ignore: decorator
@inline const FLAG_DEFER: i32 = 8;
// @ts-ignore: decorator
@inline const FLAG_DROP: i32 = 16;
// The tangent kernels: the node's tangents are not stored (a tangent kernel leaves them out, and
// a reverse tangent kernel recomputes them, as DEFER does for values).
// @ts-ignore: decorator
@inline const FLAG_TANGENT_DEFER: i32 = 128;
// Reverse: operand a (b) is a scalar constant, finite and nonzero: a product with it as the partial
// needs no mask (see emit-runs.ts).
// @ts-ignore: decorator
@inline const FLAG_FINITE_A: i32 = 32;
// @ts-ignore: decorator
@inline const FLAG_FINITE_B: i32 = 64;

function finiteNonzeroConstant(j: i32): bool {
  if (opAt(j) != Op.Const) return false;
  const c = val(j);
  return c != 0 && c - c == 0;
}

// A run whose last node only a sum right after it consumes takes the sum in: the forward kernel
// adds the last node's values up per element (sum4's order, see emit-runs.ts) and leaves the sum
// here; the reverse kernel, entered from the sum node, reads the last node's adjoint from here
// (+0 + g for every element: what claiming and adding g would store). Its address follows the
// run's parameters.
const runSum = memory.data(8);
// @ts-ignore: decorator
@inline const SIG_REVERSE: i32 = 1;
// @ts-ignore: decorator
@inline const SIG_SUM: i32 = 2;
// The run absorbs two slices of one parent, the first starting one element after the second
// (a stencil's x[i + 1] and x[i]): the kernel adds their totals to the parent a pair at a time.
// @ts-ignore: decorator
@inline const SIG_NEIGHBOURS: i32 = 4;
// ...and their parent is the two slices' union ([0, n] for runs of n), reached by no rule before:
// the kernel writes its adjoints (+0 + the totals, what zeroing and adding would give) instead of
// the core zeroing them first, or zeroes them itself where it adds element by element.
// @ts-ignore: decorator
@inline const SIG_FRESH_PARENT: i32 = 8;
// A gradient replay's output is a run's trailing sum that nothing else reads (see gradientOutput):
// the forward sweep leaves the whole run to the reverse kernel, which adds the sum up as well.
// @ts-ignore: decorator
@inline const SIG_VALUE: i32 = 16;
// A tangent kernel (the tangent sweep): per element every node's value, stored where the forward
// sweep deferred it, and its tangent, stored (its parameters name tangents where the reverse
// kernels' name adjoints).
// @ts-ignore: decorator
@inline const SIG_TANGENT: i32 = 32;

// The output of a gradient replay whose forward sweep is under way (the reverse sweep from it
// follows at once, with nothing read in between but the guards), or -1; and the sum the forward
// sweep so left to it, or -1. (Also an hvp's output, whose value nothing reads: its reverse sweep
// with tangents leaves it uncomputed, NaN.)
let gradientOutput: i32 = -1;
let pendingSum: i32 = -1;

/** (replay.ts) The output whose reverse sweep follows this forward sweep at once, or -1. */
export function setGradientOutput(out: i32): void { gradientOutput = out; }

// The output of an hvp whose tangent sweep is under way (its reverse sweep with tangents follows,
// and nothing reads the output's own tangent: not under checkNaN), or -1. A run whose trailing
// sum is that output, read by nothing else, is left whole to the reverse tangent kernel, which
// computes every value and tangent of the run per element anyway: the tangent kernel's pass over
// the run (a third of the vector Rosenbrock's hvp) bought only the output's tangent.
let hvpOutput: i32 = -1;

/** The output of the hvp whose tangent sweep follows, or -1 (see hvpOutput). */
export function setHvpOutput(out: i32): void { hvpOutput = out; }
let fusionEnabled = false;

// The last kernels' signatures and table slots, so that a tape recorded again, or replayed, finds
// its kernels without crossing into JS and joining the signature into a key there (a micro-second
// and more per run and sweep, a tenth of a gradient of Rosenbrock at 10^4). Runs of up to 16
// nodes only; round robin.
// @ts-ignore: decorator
@inline const CACHED_KERNELS: i32 = 16;
// @ts-ignore: decorator
@inline const CACHED_WORDS: i32 = 2 + FUSE_SIG_WORDS * 16;
const cachedSignatures = memory.data(4 * CACHED_KERNELS * CACHED_WORDS);
const cachedLengths = memory.data(4 * CACHED_KERNELS);
const cachedSlots = memory.data(4 * CACHED_KERNELS);
let nextCached = 0;

/** Forgets the cached kernels (the façade's are about to change). */
export function forgetRunKernels(): void {
  memory.fill(cachedLengths, 0, 4 * CACHED_KERNELS);
}

/** The slot of the kernel for the signature at fuseSignature (`words` long), from the cache or
 *  the façade (a slot of 0, no kernel for now, is not cached: one may be compiling). */
function knownKernel(words: i32): u32 {
  for (let c = 0; c < CACHED_KERNELS; c++) {
    if (load<i32>(cachedLengths + (<usize>c << 2)) != words) continue;
    const cached = cachedSignatures + (<usize>(c * CACHED_WORDS) << 2);
    let w = 0;
    while (w < words && load<i32>(cached + (<usize>w << 2)) == load<i32>(fuseSignature + (<usize>w << 2))) w++;
    if (w == words) return load<u32>(cachedSlots + (<usize>c << 2));
  }
  const slot = fuseRun(fuseSignature, words);
  if (slot != 0 && words <= CACHED_WORDS) {
    const c = nextCached;
    nextCached = (nextCached + 1) % CACHED_KERNELS;
    memory.copy(cachedSignatures + (<usize>(c * CACHED_WORDS) << 2), fuseSignature, <usize>words << 2);
    store<i32>(cachedLengths + (<usize>c << 2), words);
    store<u32>(cachedSlots + (<usize>c << 2), slot);
  }
  return slot;
}

/** Turns fused run kernels on or off (the façade turns them on while it can generate them). */
export function setRunFusion(on: i32): void { fusionEnabled = on != 0; }

// ─── deferred values and dropped adjoints ───
// A fused run stores only what may be read later. A run node whose every consumer (up to the end
// of the forward sweep) is a node of the same run has no values in memory: its val slot says
// DEFERRED, and the reverse kernel recomputes its elements from the run's operands, per element,
// with the forward kernel's operations (so the same bits). Anything else that reads a deferred
// node's values first has them computed by `materialize`: a later forward batch that consumes it,
// the tangent sweeps, checkNaN, the façade's `Vec.values`, and a block sweep where a kernel is
// not available. Likewise the reverse kernel does not store the adjoints of run nodes unless
// `keepAdjoints` is set: their adj slot says DROPPED, and the façade, which is the only reader,
// runs the sweep again with keepAdjoints to read one (see Tape in src/tape.ts).
// @ts-ignore: decorator
@inline const DEFERRED: f64 = 1;
// @ts-ignore: decorator
@inline const DROPPED: f64 = 2;
// The lowest node the forward sweep deferred since values were last computed from below it.
let deferredFrom: i32 = i32.MAX_VALUE;
let keepAdjoints = false;
// Deciding what a run may leave out searches the nodes after it for consumers. That search is
// kept to a fraction of the run's own work (a quarter of a node per element it sweeps), so a long
// tape full of runs never pays a sweep's worth of searching per run: past it, nothing is left out.
// @ts-ignore: decorator
@inline function searchable(nodes: i32, elements: i64): bool { return <i64>nodes <= max<i64>(256, elements >> 2); }

/** Whether the reverse kernels store every adjoint (the façade sets it to read a dropped one, and
 *  under checkNaN). */
export function setKeepAdjoints(on: i32): void { keepAdjoints = on != 0; }

// @ts-ignore: decorator
@inline function deferredAt(j: i32): bool { return isVectorOp(opAt(j)) && val(j) == DEFERRED; }

/** Computes and stores the values of deferred node j (and first of its deferred operands), with
 *  the block sweep's rules: the bits the kernel computed. */
export function materialize(j: i32): void {
  if (deferredAt(j)) vectorForward(j, opAt(j));
}

/** Before a forward batch [from, to): values of earlier deferred nodes its nodes may read (any
 *  operand slot naming one, carriers too: a false match costs one materialization). */
export function prepareForward(from: i32, to: i32): void {
  pendingSum = -1;
  if (from <= deferredFrom) { deferredFrom = i32.MAX_VALUE; return; }
  for (let q = from; q < to; q++) {
    const a = argA(q), b = argB(q);
    if (a >= deferredFrom && a < from && deferredAt(a)) materialize(a);
    if (b >= deferredFrom && b < from && deferredAt(b)) materialize(b);
  }
}

// Slices. A contiguous slice whose consumers (up to the end of the forward sweep) are all
// elementwise nodes of its length is not copied either: kernels read its elements where its
// parent holds them. In the reverse sweep a deferred slice is *absorbed* by the run that consumes
// it when nothing else can tell: the kernel sums the slice's terms per element in a register and
// adds the total to the parent's adjoint, as the slice's own rule would add its adjoints later.
// That needs every consumer of the slice in the run (one register holds all its terms), and no
// other consumer of the parent between the slice and the run (no other term reaches the parent's
// adjoints in between); with several slices of one parent, their starts must rise with their node
// order, so that each element of the parent takes their totals in the sweep's order (the kernel
// adds them element by element, the slices' rules slice by slice, highest node first).
// @ts-ignore: decorator
@inline const KIND_SLICE: i32 = -16;
// @ts-ignore: decorator
@inline const ABSORB_MAX: i32 = 8;
const absorbedNodes = memory.data(4 * ABSORB_MAX);
const absorbedOk = memory.data(ABSORB_MAX);
let absorbedCount = 0;
// The reverse sweep's top node (consumers above it send nothing).
let reverseTop: i32 = 0;
// An absorbed slice's adj slot while its run is swept: claims pass it by.
// @ts-ignore: decorator
@inline const ABSORBING: f64 = 3;

export function setReverseTop(top: i32): void { reverseTop = top; }

// @ts-ignore: decorator
@inline function absorbed(m: i32): i32 { return load<i32>(absorbedNodes + (<usize>m << 2)); }

function isAbsorbed(j: i32): bool {
  for (let m = 0; m < absorbedCount; m++) if (absorbed(m) == j) return true;
  return false;
}

/** Defers slice node i (see above) if it may: returns whether it did. */
function deferSlice(i: i32, to: i32): bool {
  const n = lenOf(i);
  if (!fusionEnabled || n <= RUN_PAST || !searchable(to - i, <i64>n >> 1)) return false;
  for (let q = i + 1; q < to; q++) {
    if (argA(q) != i && argB(q) != i) continue;
    const op = opAt(q);
    if (op < ELEMENTWISE || op - ELEMENTWISE == Op.Select || lenOf(q) != n) return false;
  }
  materialize(argA(i));
  setVal(i, DEFERRED);
  deferredFrom = min(deferredFrom, i);
  return true;
}

/** Whether a node in (from, to] names j as an operand, other than the run's nodes [lo, hi] (or
 *  may: past `elements`' search, yes). */
function namedOutside(j: i32, from: i32, to: i32, lo: i32, hi: i32, elements: i64): bool {
  if (!searchable(to - from, elements)) return true;
  for (let q = from + 1; q <= to; q++) {
    if (argA(q) != j && argB(q) != j) continue;
    if (q < lo || q > hi || opAt(q) < ELEMENTWISE) return true;
  }
  return false;
}

/** Chooses the deferred slices the reverse run [lo, hi] in runNodes (`count` nodes) absorbs, into
 *  absorbedNodes, highest node first; marks them ABSORBING. */
function chooseAbsorbed(count: i32, lo: i32, hi: i32): void {
  absorbedCount = 0;
  absorbedNeighbours = false;
  if (keepAdjoints || !fusionEnabled || count > FUSE_MAX) return;
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    for (let side = 0; side < 2; side++) {
      const s = side == 0 ? argA(m) : argB(m);
      if (s >= lo || opAt(s) != Op.VSlice || val(s) != DEFERRED || adj(s) != 0 || isAbsorbed(s)) continue;
      if (absorbedCount == ABSORB_MAX || namedOutside(s, s, reverseTop, lo, hi, <i64>count * <i64>lenOf(s))) continue;
      store<i32>(absorbedNodes + (<usize>absorbedCount << 2), s);
      absorbedCount++;
    }
  }
  // Highest node first (runNodes is last first, but operands come in any order).
  for (let a = 1; a < absorbedCount; a++) {
    for (let b = a; b > 0 && absorbed(b) > absorbed(b - 1); b--) {
      const t = absorbed(b);
      store<i32>(absorbedNodes + (<usize>b << 2), absorbed(b - 1));
      store<i32>(absorbedNodes + (<usize>(b - 1) << 2), t);
    }
  }
  // Per parent: no other consumer between its lowest absorbed slice and the run, starts rising
  // with node order. A parent that fails keeps all its slices out: one kept alone beside another
  // that failed took its total out of the sweep's order (a new-user probe: slices starting at 0,
  // 2, 1 gave gradients 1-3 ulp off the JS engine's, which a keeping sweep then changed).
  for (let m = 0; m < absorbedCount; m++) {
    const s = absorbed(m), parent = argA(s);
    let ok = true, lowest = s;
    for (let o = 0; o < absorbedCount; o++) {
      const t = absorbed(o);
      if (argA(t) != parent) continue;
      if (t < lowest) lowest = t;
      if (t != s && (t > s) != (argB(t) > argB(s))) ok = false;
      if (t != s && argB(t) == argB(s)) ok = false;
    }
    if (!searchable(hi - lowest, <i64>count * <i64>lenOf(s))) ok = false;
    for (let q = lowest + 1; ok && q <= hi; q++) {
      if (argA(q) != parent && argB(q) != parent) continue;
      if (opAt(q) != Op.VSlice || !isAbsorbed(q)) ok = false;
    }
    store<u8>(absorbedOk + <usize>m, ok ? 1 : 0);
  }
  // A parent with a slice that failed drops all of its slices (flag 2: kept), decided over the
  // whole list before it is packed (packing in the same loop overwrote entries it still read: a
  // review probe found a slice kept alone again past two of other parents).
  for (let m = 0; m < absorbedCount; m++) {
    const parent = argA(absorbed(m));
    let ok = true;
    for (let o = 0; o < absorbedCount; o++) if (argA(absorbed(o)) == parent && load<u8>(absorbedOk + <usize>o) == 0) ok = false;
    if (ok) store<u8>(absorbedOk + <usize>m, 2);
  }
  let kept = 0;
  for (let m = 0; m < absorbedCount; m++) {
    if (load<u8>(absorbedOk + <usize>m) != 2) continue;
    store<i32>(absorbedNodes + (<usize>kept << 2), absorbed(m));
    kept++;
  }
  absorbedCount = kept;
  for (let m = 0; m < absorbedCount; m++) store<f64>(adjBase + (<usize>absorbed(m) << 3), ABSORBING);
  if (absorbedCount == 2) {
    const upper = absorbed(0), lower = absorbed(1);
    absorbedNeighbours = argA(upper) == argA(lower) && argB(upper) == argB(lower) + 1;
  }
}

let absorbedNeighbours = false;
let freshParent = false;
// The reverse kernel being made adds up the pending sum too.
let valueToo = false;

/** Marks (val = DEFERRED) the nodes of the forward run in runNodes whose consumers below `to` are
 *  all run nodes: every node but the last (unless `sum`, the sum node it takes in, is its only
 *  consumer), less those a later node names as an operand. */
function markDeferrable(count: i32, to: i32, sum: i32): void {
  const first = runNode(0), last = runNode(count - 1);
  const fewest = sum >= 0 ? 1 : 2;
  if (!fusionEnabled || count < fewest || count > FUSE_MAX || !searchable(to - last, <i64>count * <i64>lenOf(last))) {
    for (let k = 0; k < count; k++) setVal(runNode(k), 0);
    return;
  }
  for (let k = 0; k < count - 1; k++) setVal(runNode(k), DEFERRED);
  setVal(last, sum >= 0 ? DEFERRED : 0);
  for (let q = last + 1; q < to; q++) {
    if (q == sum) continue;
    const a = argA(q), b = argB(q);
    // (only run nodes: a carrier's number may name a scalar node in the span, whose value stays)
    if (a >= first && a <= last && opAt(a) >= ELEMENTWISE) setVal(a, 0);
    if (b >= first && b <= last && opAt(b) >= ELEMENTWISE) setVal(b, 0);
  }
}

/** Whether the kernels compute elementwise op s inline (emitValue in emit-runs.ts), cheaper than
 *  storing its values and loading them again. */
// @ts-ignore: decorator
@inline function inlined(s: i32): bool {
  return s == Op.Add || s == Op.Sub || s == Op.Mul || s == Op.Div || s == Op.Neg || s == Op.Square || s == Op.Relu || s == Op.Abs
    || s == Op.Max || s == Op.Min || s == Op.Floor || s == Op.Ceil || s == Op.StopGradient;
}

/** The sum node right after node j (past constants) that takes j as its operand, or -1. */
function sumAfter(j: i32, to: i32): i32 {
  let s = j + 1;
  while (s < to && opAt(s) == Op.Const) s++;
  return s < to && opAt(s) == Op.VSum && argA(s) == j ? s : -1;
}

// Operand kinds in a signature: a run node's index (0 = the run's first node), or one of these.
// @ts-ignore: decorator
@inline const KIND_VECTOR: i32 = -1;
// @ts-ignore: decorator
@inline const KIND_VECTOR_CONSTANT: i32 = -2;
// @ts-ignore: decorator
@inline const KIND_SCALAR: i32 = -3;
// @ts-ignore: decorator
@inline const KIND_SCALAR_CONSTANT: i32 = -4;

/** Node of the run at ascending position k (runNodes holds the reverse sweep's runs last first). */
// @ts-ignore: decorator
@inline function ascending(k: i32, count: i32, reverse: bool): i32 { return runNode(reverse ? count - 1 - k : k); }

function operandKind(j: i32, count: i32, reverse: bool): i32 {
  const first = ascending(0, count, reverse), last = ascending(count - 1, count, reverse);
  if (j >= first && j <= last) {
    for (let k = 0; k < count; k++) if (ascending(k, count, reverse) == j) return k;
  }
  if (reverse) for (let m = 0; m < absorbedCount; m++) if (absorbed(m) == j) return KIND_SLICE - m;
  const op = opAt(j);
  if (isVectorOp(op)) return op == Op.VConst ? KIND_VECTOR_CONSTANT : KIND_VECTOR;
  return op == Op.Const ? KIND_SCALAR_CONSTANT : KIND_SCALAR;
}

function writeAddresses(p: usize, j: i32, reverse: bool, tangent: bool): void {
  // A tangent kernel's second address is the tangent's (a deferred slice's where its parent
  // holds it, unless computed since).
  const second = tangent ? tangentAddress(j) : addr(j, adjBase, xadjBase);
  if (opAt(j) == Op.VSlice && val(j) == DEFERRED) {
    // A deferred slice is read where its parent holds it; absorbed, it sends there too.
    const within = offOf(argA(j)) + argB(j);
    store<u32>(p, <u32>at(xvalBase, within));
    store<u32>(p, <u32>(reverse && isAbsorbed(j) ? at(xadjBase, within) : second), 4);
    return;
  }
  store<u32>(p, <u32>addr(j, valBase, xvalBase));
  store<u32>(p, <u32>second, 4);
}

/** Zeroes the element adjoints and adjoint tangents of vector node j, claimed already. */
function clearClaimed(j: i32): void {
  const off = <usize>offOf(j) << 3, bytes = <usize>lenOf(j) << 3;
  memory.fill(xadjBase + off, 0, bytes);
  memory.fill(xtanAdjBase + off, 0, bytes);
}

/** Where node j's tangents are read: a slice whose tangents are deferred, where its parent holds
 *  them. */
function tangentAddress(j: i32): usize {
  if (opAt(j) == Op.VSlice && tan(j) == DEFERRED) return at(xtanBase, offOf(argA(j)) + argB(j));
  return addr(j, tanBase, xtanBase);
}

/** A reverse tangent kernel's second addresses of node j: its tangents' and adjoint tangents'
 *  (an absorbed slice's sends to its parent's). */
function writeTangentAddresses(p: usize, j: i32): void {
  store<u32>(p, <u32>tangentAddress(j));
  const absorbedSlice = opAt(j) == Op.VSlice && isAbsorbed(j);
  store<u32>(p, <u32>(absorbedSlice ? at(xtanAdjBase, offOf(argA(j)) + argB(j)) : addr(j, tanAdjBase, xtanAdjBase)), 4);
}

/** The kernel for the run in runNodes (`count` nodes), its signature and parameters written, or 0.
 *  Parameters per node (ascending): its value and adjoint addresses, its operands', its terms. */
function fusedKernel(count: i32, reverse: bool, sum: bool = false, tangent: bool = false): u32 {
  const fewest = sum ? 1 : 2;
  if (!fusionEnabled || count < fewest || count > FUSE_MAX) return 0;
  let kind = (reverse ? SIG_REVERSE : 0) | (sum ? SIG_SUM : 0) | (reverse && sum && valueToo && !tangent ? SIG_VALUE : 0) | (tangent ? SIG_TANGENT : 0);
  if (reverse && !tangent && absorbedNeighbours) kind |= SIG_NEIGHBOURS | (freshParent ? SIG_FRESH_PARENT : 0);
  store<i32>(fuseSignature, kind);
  store<u32>(fuseParams + (<usize>(count * FUSE_PARAM_WORDS) << 2), <u32>runSum);
  store<i32>(fuseSignature, count, 4);
  for (let k = 0; k < count; k++) {
    const m = ascending(k, count, reverse);
    const s = opAt(m) - ELEMENTWISE;
    if (s == Op.Select) return 0;
    const ia = argA(m), ib = argB(m);
    const sig = fuseSignature + 8 + (<usize>(k * FUSE_SIG_WORDS) << 2);
    store<i32>(sig, s);
    store<i32>(sig, operandKind(ia, count, reverse), 4);
    store<i32>(sig, operandKind(ib, count, reverse), 8);
    let flags = val(m) == DEFERRED ? FLAG_DEFER : 0;
    if (tangent && !reverse) {
      // Where its values are deferred its tangents are too, but for the last node's, unless the
      // sum after the run that reads them is taken in.
      if (flags != 0 && (k < count - 1 || sum)) flags |= FLAG_TANGENT_DEFER;
    } else if (reverse && tangent) {
      // Active: reached by the sweep (its adjoint's flag); STORE_A, STORE_B: operands it writes
      // whole; deferred values and tangents recomputed.
      flags |= (adj(m) != 0 || tanAdj(m) != 0 ? 1 : 0) | (<i32>load<u8>(runStores + <usize>(count - 1 - k)) << 1) | (keepAdjoints ? 0 : FLAG_DROP);
      if (tan(m) == DEFERRED) flags |= FLAG_TANGENT_DEFER;
    } else if (reverse) {
      const kd = count - 1 - k;
      flags |= (adj(m) != 0 ? 1 : 0) | (<i32>load<u8>(runStores + <usize>kd) << 1) | (keepAdjoints ? 0 : FLAG_DROP);
      if (finiteNonzeroConstant(ia)) flags |= FLAG_FINITE_A;
      if (finiteNonzeroConstant(ib)) flags |= FLAG_FINITE_B;
    }
    store<i32>(sig, flags, 12);
    const par = fuseParams + (<usize>(k * FUSE_PARAM_WORDS) << 2);
    writeAddresses(par, m, reverse, tangent && !reverse);
    writeAddresses(par + 8, ia, reverse, tangent && !reverse);
    writeAddresses(par + 16, ib, reverse, tangent && !reverse);
    store<u32>(par, <u32>(runTerms + (<usize>(count - 1 - k) << 4)), 24);
    if (reverse && tangent) {
      store<u32>(par, <u32>(runTangentTerms + (<usize>k << 5)), 24);
      const second = fuseParams + (<usize>((count + k) * FUSE_PARAM_WORDS + 1) << 2);
      writeTangentAddresses(second, m);
      writeTangentAddresses(second + 8, ia);
      writeTangentAddresses(second + 16, ib);
    }
  }
  return knownKernel(2 + FUSE_SIG_WORDS * count);
}

// @ts-ignore: decorator
@inline function runNode(k: i32): i32 { return load<i32>(runNodes + (<usize>k << 2)); }

/** Whether node j can join a run of length n: elementwise, n long, every vector operand n long. */
function joins(j: i32, n: i32): bool {
  if (j < 0 || opAt(j) < ELEMENTWISE || lenOf(j) != n) return false;
  const a = argA(j), b = argB(j);
  if ((isVec(a) && lenOf(a) != n) || (isVec(b) && lenOf(b) != n)) return false;
  if (opAt(j) - ELEMENTWISE == Op.Select) { const c = argA(j - 2); if (isVec(c) && lenOf(c) != n) return false; }
  return true;
}

/** The run of elementwise nodes of length n from node i, below `to`, into runNodes (ascending):
 *  returns how many. */
function collectRun(i: i32, to: i32, n: i32): i32 {
  let count = 0, j = i;
  while (true) {
    store<i32>(runNodes + (<usize>count << 2), j);
    count++;
    // The next node of a run: after j, any scalar constants (a number operand records one just
    // before its op), then select's arg, then its vmeta.
    let next = j + 1;
    while (next < to && opAt(next) == Op.Const) next++;
    if (next < to && opAt(next) == Op.Arg) next++;
    if (next >= to || opAt(next) != Op.VMeta) break;
    next++;
    if (count == RUN_MAX || next >= to || !joins(next, n)) break;
    j = next;
  }
  return count;
}

/** Forward rule of node i, a vector op: a run (from i, below `to`) swept in blocks where it pays,
 *  else the op alone. Returns the last node it computed. */
export function vectorForwardAt(i: i32, op: i32, to: i32): i32 {
  if (op == Op.VSlice && deferSlice(i, to)) return i;
  if (op < ELEMENTWISE || lenOf(i) <= RUN_PAST || !joins(i, lenOf(i))) { vectorForward(i, op); return i; }
  const n = lenOf(i);
  const count = collectRun(i, to, n), j = runNode(count - 1);
  // (The run's own nodes are not computed yet: their val slots still hold an earlier sweep's.)
  for (let k = 0; k < count; k++) materializeOperandsOutside(runNode(k), i, j, false);
  const sum = sumAfter(j, to);
  markDeferrable(count, to, sum);
  if (sum >= 0 && sum == gradientOutput && val(j) == DEFERRED && !namedOutside(sum, sum, to - 1, 0, -1, <i64>count * <i64>n)) {
    // The whole run deferred, its sum the output: the reverse kernel computes it (SIG_VALUE).
    let all = true;
    for (let k = 0; k < count; k++) if (val(runNode(k)) != DEFERRED) all = false;
    if (all) {
      deferredFrom = min(deferredFrom, runNode(0));
      pendingSum = sum;
      return sum;
    }
  }
  // Not left whole to the reverse sweep: the nodes a kernel computes through a call of the core's
  // rule (exp, log, tanh...) store their values after all, which the reverse kernel then loads
  // instead of computing them again (GradBench's lse in its primitive form at 80,000 elements:
  // its exp took 0.4 ms in each sweep).
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    if (val(m) == DEFERRED && !inlined(opAt(m) - ELEMENTWISE)) setVal(m, 0);
  }
  const kernel = fusedKernel(count, false, sum >= 0);
  if (kernel != 0) {
    call_indirect<void>(kernel, fuseParams, 0, n);
    for (let k = 0; k < count; k++) if (val(runNode(k)) == DEFERRED) { deferredFrom = min(deferredFrom, runNode(k)); break; }
    if (sum >= 0) { setVal(sum, load<f64>(runSum)); return sum; }
  } else {
    for (let k = 0; k < count; k++) setVal(runNode(k), 0);
    for (let k = 0; k < count; k++) materializeOperandsOutside(runNode(k), i, j, true);
    for (let from = 0; from < n; from += RUN_BLOCK) {
      const len = min(RUN_BLOCK, n - from);
      for (let k = 0; k < count; k++) { const m = runNode(k); elementwiseForward(m, opAt(m) - ELEMENTWISE, len, from); }
    }
  }
  return j;
}

/** Reverse rule of node i (adjoint g), a vector op: the run ending at i swept in blocks where it
 *  pays, else the op alone. Returns the lowest node it handled. */
export function vectorReverseAt(i: i32, op: i32, g: f64): i32 {
  // A slice a run absorbed, or a run node whose adjoint the kernel left out: nothing to send.
  if (isVectorOp(op) && g == DROPPED) return i;
  if (op == Op.VSum && fusionEnabled) {
    // The sum right after a run's last node, which nothing else reached: the run's kernel takes
    // it in (see runSum).
    const last = argA(i);
    if (adj(last) == 0 && lenOf(last) > RUN_PAST && joins(last, lenOf(last)) && sumAfter(last, i + 1) == i) return reverseRun(last, i, g);
  }
  if (op < ELEMENTWISE || lenOf(i) <= RUN_PAST || !joins(i, lenOf(i))) { vectorReverse(i, op, g); return i; }
  return reverseRun(i, -1, 0);
}

/** The run of elementwise nodes of length n ending at node i, into runNodes (last first): returns
 *  how many. */
function collectRunDown(i: i32, n: i32): i32 {
  let count = 0, j = i;
  while (true) {
    store<i32>(runNodes + (<usize>count << 2), j);
    count++;
    // The node before j's carriers (its vmeta, select's arg) and the constants recorded for it.
    let prev = opAt(j) - ELEMENTWISE == Op.Select ? j - 3 : j - 2;
    while (prev >= 0 && opAt(prev) == Op.Const) prev--;
    if (count == RUN_MAX || prev < 0 || !joins(prev, n)) break;
    j = prev;
  }
  return count;
}

/** The reverse rules of the run ending at i, entered from i, or from `sum` (with its adjoint g).
 *  Returns the run's lowest node. */
function reverseRun(i: i32, sum: i32, g: f64): i32 {
  const n = lenOf(i);
  const count = collectRunDown(i, n), j = runNode(count - 1);
  // Claims first, in the sweep's order: a node joins the sweep once a later one claimed it (the
  // sum claims the last node without clearing it: the kernel or the sum's rule below writes it).
  if (sum >= 0) store<f64>(adjBase + (<usize>i << 3), 1);
  chooseAbsorbed(count, j, i);
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    storeA = false;
    storeB = false;
    if (adj(m) != 0) claimOperands(m, opAt(m), false);
    store<u8>(runStores + <usize>k, (storeA ? 1 : 0) | (storeB ? 2 : 0));
    store<f64>(runTerms + (<usize>k << 4), 0);
    store<f64>(runTerms + (<usize>k << 4) + 8, 0);
  }
  // The parents of absorbed slices, claimed as the slices' rules would claim them (a fresh one,
  // see SIG_FRESH_PARENT, without zeroing it).
  freshParent = false;
  if (absorbedNeighbours) {
    const parent = argA(absorbed(0));
    freshParent = adj(parent) == 0 && argB(absorbed(1)) == 0 && lenOf(parent) == n + 1;
    if (freshParent) store<f64>(adjBase + (<usize>parent << 3), 1);
  }
  for (let m = 0; m < absorbedCount; m++) claim(argA(absorbed(m)), false);
  // Operands from outside the run are read from memory; its own deferred nodes, by the kernel.
  for (let k = 0; k < count; k++) materializeOperandsOutside(runNode(k), j, i, false);
  store<f64>(runSum, 0.0 + g);
  valueToo = sum >= 0 && sum == pendingSum && val(i) == DEFERRED;
  const kernel = fusedKernel(count, true, sum >= 0);
  if (kernel != 0) {
    call_indirect<void>(kernel, fuseParams, 0, n);
    if (valueToo) setVal(sum, load<f64>(runSum));
  } else {
    if (valueToo) { materialize(i); setVal(sum, sum4(at(xvalBase, offOf(i)), n)); }
    if (sum >= 0) {
      memory.fill(xadjBase + (<usize>offOf(i) << 3), 0, <usize>n << 3);
      addScalar(at(xadjBase, offOf(i)), g, n);
    }
    if (freshParent) { const parent = argA(absorbed(0)); memory.fill(xadjBase + (<usize>offOf(parent) << 3), 0, <usize>lenOf(parent) << 3); }
    // The block sweep sends to an absorbed slice's own (cleared) adjoints, whose rule then runs
    // here, highest slice first: the terms the kernel would have added, in its order.
    for (let m = 0; m < absorbedCount; m++) memory.fill(xadjBase + (<usize>offOf(absorbed(m)) << 3), 0, <usize>lenOf(absorbed(m)) << 3);
    for (let k = 0; k < count; k++) materializeOperandsOutside(runNode(k), j, i, true);
    for (let k = count - 1; k >= 0; k--) materialize(runNode(k));
    blockReverse(count, n);
    for (let m = 0; m < absorbedCount; m++) {
      const s = absorbed(m);
      sliceBack(argA(s), argB(s), offOf(s), lenOf(s), xadjBase);
    }
  }
  if (valueToo) { pendingSum = -1; valueToo = false; }
  // Absorbed slices have nothing left to send; a read of their adjoints sweeps again (keeping).
  for (let m = 0; m < absorbedCount; m++) store<f64>(adjBase + (<usize>absorbed(m) << 3), DROPPED);
  absorbedCount = 0;
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    if (adj(m) == 0) continue;
    loadTerms(k);
    applyTerms(m, opAt(m) - ELEMENTWISE);
  }
  if (kernel != 0 && !keepAdjoints) {
    for (let k = 0; k < count; k++) { const m = runNode(k); if (adj(m) != 0) store<f64>(adjBase + (<usize>m << 3), DROPPED); }
  }
  return j;
}

/** The reverse rules of the run in runNodes (last first), block by block. */
function blockReverse(count: i32, n: i32): void {
  for (let from = 0; from < n; from += RUN_BLOCK) {
    const len = min(RUN_BLOCK, n - from);
    for (let k = 0; k < count; k++) {
      const m = runNode(k);
      if (adj(m) == 0) continue;
      const t = loadTerms(k);
      const stores = load<u8>(runStores + <usize>k);
      storeA = (stores & 1) != 0;
      storeB = (stores & 2) != 0;
      elementwiseReverse(m, opAt(m) - ELEMENTWISE, len, from, false);
      store<f64>(t, termsA);
      store<f64>(t, termsB, 8);
    }
  }
}

/** Materializes the deferred operands of elementwise node i (select's third one too). */
function materializeOperands(i: i32): void {
  materialize(argA(i));
  materialize(argB(i));
  if (opAt(i) - ELEMENTWISE == Op.Select) materialize(argA(i - 2));
}

/** As materializeOperands, for the operands outside [lo, hi] (deferred slices only with
 *  `slices`: a kernel reads them where their parents hold them). */
function materializeOperandsOutside(i: i32, lo: i32, hi: i32, slices: bool): void {
  const a = argA(i), b = argB(i);
  if ((a < lo || a > hi) && (slices || opAt(a) != Op.VSlice)) materialize(a);
  if ((b < lo || b > hi) && (slices || opAt(b) != Op.VSlice)) materialize(b);
  if (opAt(i) - ELEMENTWISE == Op.Select) materialize(argA(i - 2));
}

/** termsA and termsB of the k-th node of a run, from where the run keeps them (returned). */
function loadTerms(k: i32): usize {
  const t = runTerms + (<usize>k << 4);
  termsA = load<f64>(t);
  termsB = load<f64>(t, 8);
  return t;
}

// The tangent sweeps' commonest ops, their partials written out as partials() gives them (d/dx,
// then d/dz): a call per element into the out-of-line rule made a jvp of a vector Rosenbrock 25
// times its gradient and an hvp 80 times (a new-user probe).
// @ts-ignore: decorator
@inline function isCheap(s: i32): bool {
  return s == Op.Add || s == Op.Sub || s == Op.Mul || s == Op.Neg || s == Op.Square;
}
// @ts-ignore: decorator
@inline function cheapPartial(s: i32, x: f64, z: f64): f64 {
  return s == Op.Mul ? z : s == Op.Square ? 2 * x : s == Op.Neg ? -1.0 : 1.0;
}
// @ts-ignore: decorator
@inline function cheapPartialZ(s: i32, x: f64): f64 {
  return s == Op.Mul ? x : s == Op.Add ? 1.0 : s == Op.Sub ? -1.0 : 0.0;
}
// Their changes along the operands' tangents (partialsTangent's): mul's through its operands,
// square's 2 tx, none for the linear ones. Where partialsTangent gives 0 (both tangents 0) these
// give a zero too, which adds nothing either way.
// @ts-ignore: decorator
@inline function cheapPartialTangent(s: i32, tx: f64, tz: f64): f64 {
  return s == Op.Mul ? tz : s == Op.Square ? 2 * tx : 0.0;
}
// @ts-ignore: decorator
@inline function cheapPartialZTangent(s: i32, tx: f64): f64 {
  return s == Op.Mul ? tx : 0.0;
}

// Elements of elementwise op s's tangent, `(ta != 0 ? ta·pa : +0) + (tb != 0 ? tb·pb : +0)`, one
// at a time (the scalar build, and what the SIMD pairs leave): the zero tests are integer masks,
// so a tangent's zeros (a constant operand's, a direction's) cost no mispredicted branch. Both
// tangents 0 give +0, the stored 0 of the rule.
// @ts-ignore: decorator
@inline function tangentLoop(s: i32, o: usize, pa: usize, qa: usize, sa: usize, pb: usize, qb: usize, sb: usize, y: usize, len: i32): void {
  const cheap = isCheap(s);
  for (let k = 0; k < len; k++) {
    const dta = ld(qa), dtb = ld(qb);
    const p = cheap ? cheapPartial(s, ld(pa), ld(pb)) : dta == 0 && dtb == 0 ? 0 : partialsCall(s, ld(pa), ld(pb), ld(y));
    const q = cheap ? cheapPartialZ(s, ld(pa)) : partialZ;
    // A zero tangent or partial's term left out, as in `tangent` (sweeps.ts).
    st(o, masked(dta * p, (dta != 0) & (p != 0)) + masked(dtb * q, (dtb != 0) & (q != 0)));
    pa += sa; qa += sa; pb += sb; qb += sb; o += 8; y += 8;
  }
}

// tangentLoop's pairs of elements in f64x2 lanes, each lane the scalar loop's operations (a full
// vector a, b a full vector or a broadcast scalar): returns how many elements it did.
// @ts-ignore: decorator
@inline function tangentPairs(s: i32, o: usize, pa: usize, qa: usize, pb: usize, qb: usize, sb: usize, len: i32): i32 {
  const zero = f64x2.splat(0), z1 = f64x2.splat(ld(pb)), tz1 = f64x2.splat(ld(qb));
  // add, sub and neg share this loop (s is not a constant for them: SIMD code is large), their
  // partials constants splatted before it.
  const linearP = f64x2.splat(s == Op.Neg ? -1.0 : 1.0), linearQ = f64x2.splat(s == Op.Add ? 1.0 : s == Op.Sub ? -1.0 : 0.0);
  let k = 0;
  for (; k + 2 <= len; k += 2) {
    const e = <usize>k << 3;
    const dta = v128.load(qa + e), dtb = sb == 0 ? tz1 : v128.load(qb + e);
    const x = v128.load(pa + e), z = sb == 0 ? z1 : v128.load(pb + e);
    const p = s == Op.Mul ? z : s == Op.Square ? f64x2.mul(f64x2.splat(2), x) : linearP;
    const q = s == Op.Mul ? x : s == Op.Square ? zero : linearQ;
    v128.store(o + e, f64x2.add(
      v128.and(f64x2.mul(dta, p), v128.and(f64x2.ne(dta, zero), f64x2.ne(p, zero))),
      v128.and(f64x2.mul(dtb, q), v128.and(f64x2.ne(dtb, zero), f64x2.ne(q, zero))),
    ));
  }
  return k;
}

function elementwiseTangent(i: i32, s: i32, n: i32): void {
  const ia = argA(i), ib = argB(i);
  let out = at(xtanBase, offOf(i));
  if (s == Op.Select) { selectInto(i, n, 0, out, tanBase, xtanBase); return; }
  // No tangent through the zero-gradient ops (see `tangent` in sweeps.ts).
  if (zeroGradient(s)) { memory.fill(out, 0, <usize>n << 3); return; }
  setBlocks(n, ia, ib, ia);
  let py = at(xvalBase, offOf(i));
  let xa = addr(ia, valBase, xvalBase), ta = addr(ia, tanBase, xtanBase);
  let xb = addr(ib, valBase, xvalBase), tb = addr(ib, tanBase, xtanBase);
  const sa = stepOf(ia), sb = stepOf(ib), da = blockStep(ia, n), db = blockStep(ib, n);
  for (let blk = 0; blk < blocks; blk++) {
    let k = 0;
    if (ASC_FEATURE_SIMD && sa == 8 && isCheap(s)) {
      // add, sub and neg by one loop of their constant partials (SIMD code is large).
      k = s == Op.Mul ? tangentPairs(Op.Mul, out, xa, ta, xb, tb, sb, blockLen)
        : s == Op.Square ? tangentPairs(Op.Square, out, xa, ta, xb, tb, sb, blockLen)
        : tangentPairs(s, out, xa, ta, xb, tb, sb, blockLen);
    }
    // The pairs need a full vector a and a cheap op; an odd last element, or every element where
    // they do not apply, goes through the scalar loop.
    const skip = <usize>k << 3, skipB = <usize>k * sb;
    if (k < blockLen) tangentLoop(s, out + skip, xa + skip, ta + skip, sa, xb + skipB, tb + skipB, sb, py + skip, blockLen - k);
    const step = <usize>blockLen << 3;
    out += step; py += step; xa += da; ta += da; xb += db; tb += db;
  }
}

function elementwiseReverseTangent(i: i32, s: i32, n: i32): void {
  const ia = argA(i), ib = argB(i);
  let pg = at(xadjBase, offOf(i)), pgt = at(xtanAdjBase, offOf(i));
  if (s == Op.Select) {
    const ic = argA(i - 2);
    setBlocks(n, ia, ib, ic);
    let pc = addr(ia, valBase, xvalBase);
    let gT = addr(ib, adjBase, xadjBase), gtT = addr(ib, tanAdjBase, xtanAdjBase);
    let gF = addr(ic, adjBase, xadjBase), gtF = addr(ic, tanAdjBase, xtanAdjBase);
    const sc = stepOf(ia), stt = stepOf(ib), sf = stepOf(ic);
    const dc = blockStep(ia, n), dt = blockStep(ib, n), df = blockStep(ic, n);
    let sT = 0.0, stT = 0.0, sF = 0.0, stF = 0.0; // a broadcast scalar branch's terms, added once
    for (let blk = 0; blk < blocks; blk++) {
      for (let k = 0; k < blockLen; k++) {
        const g = ld(at(pg, k)), gt = ld(at(pgt, k));
        if (g == 0 && gt == 0) continue;
        if (truthy(ld(pc + <usize>k * sc))) {
          if (stt == 0) { sT += g; stT += gt; } else { acc(gT + <usize>k * stt, g); acc(gtT + <usize>k * stt, gt); }
        } else if (sf == 0) { sF += g; stF += gt; } else { acc(gF + <usize>k * sf, g); acc(gtF + <usize>k * sf, gt); }
      }
      const step = <usize>blockLen << 3;
      pg += step; pgt += step; pc += dc; gT += dt; gtT += dt; gF += df; gtF += df;
    }
    if (stt == 0) { acc(gT, sT); acc(gtT, stT); }
    if (sf == 0) { acc(gF, sF); acc(gtF, stF); }
    return;
  }
  setBlocks(n, ia, ib, ia);
  let py = at(xvalBase, offOf(i)), pty = at(xtanBase, offOf(i));
  let xa = addr(ia, valBase, xvalBase), ta = addr(ia, tanBase, xtanBase);
  let ga = addr(ia, adjBase, xadjBase), gta = addr(ia, tanAdjBase, xtanAdjBase);
  let xb = addr(ib, valBase, xvalBase), tb = addr(ib, tanBase, xtanBase);
  let gb = addr(ib, adjBase, xadjBase), gtb = addr(ib, tanAdjBase, xtanAdjBase);
  const sa = stepOf(ia), sb = stepOf(ib), da = blockStep(ia, n), db = blockStep(ib, n);
  // A broadcast scalar operand's terms (adjoint and adjoint tangent), added once, as in reverse.
  memory.fill(scalarTerms, 0, 32);
  // Constants take no terms, as in reverse (their adjoints are read as 0): a broadcast constant's
  // sums ran one dependent add per element.
  const wantA = wantsAdjoint(ia), wantB = wantsAdjoint(ib);
  const pairs = ASC_FEATURE_SIMD && isCheap(s) && sa == 8 && (sb == 8 || !wantB);
  for (let blk = 0; blk < blocks; blk++) {
    let k = 0;
    if (pairs) {
      k = s == Op.Mul ? reverseTangentPairs(Op.Mul, pg, pgt, xa, ta, ga, gta, xb, tb, gb, gtb, sb, blockLen, wantA, wantB)
        : s == Op.Square ? reverseTangentPairs(Op.Square, pg, pgt, xa, ta, ga, gta, xb, tb, gb, gtb, sb, blockLen, wantA, wantB)
        : reverseTangentPairs(s, pg, pgt, xa, ta, ga, gta, xb, tb, gb, gtb, sb, blockLen, wantA, wantB);
    }
    // The pairs need a full vector a and a cheap op; an odd last element, or every element where
    // they do not apply, goes through the scalar loop.
    if (k < blockLen) {
      const e = <usize>k << 3, eb = <usize>k * sb;
      reverseTangentLoop(s, pg + e, pgt + e, py + e, pty + e, xa + e, ta + e, ga + e, gta + e, sa, xb + eb, tb + eb, gb + eb, gtb + eb, sb, blockLen - k, wantA, wantB);
    }
    const step = <usize>blockLen << 3;
    pg += step; pgt += step; py += step; pty += step;
    xa += da; ta += da; ga += da; gta += da; xb += db; tb += db; gb += db; gtb += db;
  }
  if (sa == 0 && wantA) { acc(ga, ld(scalarTerms)); acc(gta, ld(scalarTerms + 8)); }
  if (sb == 0 && wantB) { acc(gb, ld(scalarTerms + 16)); acc(gtb, ld(scalarTerms + 24)); }
}

// reverseTangentLoop's pairs of elements for the cheap ops in f64x2 lanes (a full vector a; b a
// full vector, or a scalar that takes no terms): the rule's skips as masks, so a skipped term adds
// +0, which changes no adjoint (never -0: adjoints start at +0 and only gain sums), and a sum of
// terms that is ±0, which the rule skips too, is added as it is for the same reason; per lane the
// scalar loop's operations in its order. Returns how many elements it did.
// @ts-ignore: decorator
@inline function reverseTangentPairs(
  s: i32, pg: usize, pgt: usize, xa: usize, ta: usize, ga: usize, gta: usize, xb: usize, tb: usize, gb: usize, gtb: usize, sb: usize, len: i32,
  wantA: bool, wantB: bool,
): i32 {
  const zero = f64x2.splat(0), z1 = f64x2.splat(ld(xb)), tz1 = f64x2.splat(ld(tb));
  const unary = s == Op.Neg || s == Op.Square;
  // add, sub and neg share this loop (s is not a constant for them: SIMD code is large), their
  // partials constants splatted before it.
  const linearP = f64x2.splat(s == Op.Neg ? -1.0 : 1.0), linearQ = f64x2.splat(s == Op.Sub ? -1.0 : 1.0);
  let k = 0;
  for (; k + 2 <= len; k += 2) {
    const e = <usize>k << 3;
    const g = v128.load(pg + e), gt = v128.load(pgt + e);
    const x = v128.load(xa + e), tx = v128.load(ta + e);
    const z = sb == 0 ? z1 : v128.load(xb + e), tz = sb == 0 ? tz1 : v128.load(tb + e);
    const gLive = f64x2.ne(g, zero), gtLive = f64x2.ne(gt, zero);
    const p = s == Op.Mul ? z : s == Op.Square ? f64x2.mul(f64x2.splat(2), x) : linearP;
    const dp = s == Op.Mul ? tz : s == Op.Square ? f64x2.mul(f64x2.splat(2), tx) : zero;
    const pLive = f64x2.ne(p, zero);
    if (wantA) {
      v128.store(ga + e, f64x2.add(v128.load(ga + e), v128.and(f64x2.mul(g, p), v128.and(gLive, pLive))));
    }
    if (!unary && wantB) {
      const q = s == Op.Mul ? x : linearQ;
      v128.store(gb + e, f64x2.add(v128.load(gb + e), v128.and(f64x2.mul(g, q), v128.and(gLive, f64x2.ne(q, zero)))));
    }
    if (wantA) {
      const ra = f64x2.add(v128.and(f64x2.mul(gt, p), v128.and(gtLive, pLive)), v128.and(f64x2.mul(g, dp), v128.and(gLive, f64x2.ne(dp, zero))));
      v128.store(gta + e, f64x2.add(v128.load(gta + e), ra));
    }
    if (!unary && wantB) {
      const q = s == Op.Mul ? x : linearQ;
      const dq = s == Op.Mul ? tx : zero;
      const rb = f64x2.add(v128.and(f64x2.mul(gt, q), v128.and(gtLive, f64x2.ne(q, zero))), v128.and(f64x2.mul(g, dq), v128.and(gLive, f64x2.ne(dq, zero))));
      v128.store(gtb + e, f64x2.add(v128.load(gtb + e), rb));
    }
  }
  return k;
}

// A broadcast scalar operand's sums across a node's blocks: a's adjoint and adjoint tangent, b's.
const scalarTerms = memory.data(32);

// Elements of elementwise op s's reverse sweep with tangents, one at a time (the scalar build, and
// what the SIMD pairs leave). A broadcast scalar operand (stride 0) sums its terms in
// scalarTerms, added once per node.
// @ts-ignore: decorator
@inline function reverseTangentLoop(
  s: i32, pg: usize, pgt: usize, py: usize, pty: usize,
  xa: usize, ta: usize, ga: usize, gta: usize, sa: usize, xb: usize, tb: usize, gb: usize, gtb: usize, sb: usize, len: i32,
  wantA: bool, wantB: bool,
): void {
  const oneA = sa == 0, oneB = sb == 0;
  const cheap = isCheap(s);
  let sA = ld(scalarTerms), stA = ld(scalarTerms + 8), sB = ld(scalarTerms + 16), stB = ld(scalarTerms + 24);
  for (let k = 0; k < len; k++) {
    const g = ld(at(pg, k)), gt = ld(at(pgt, k));
    if (g == 0 && gt == 0) continue;
    const ka = <usize>k * sa, kb = <usize>k * sb;
    const x = ld(xa + ka), z = ld(xb + kb);
    const p = cheap ? cheapPartial(s, x, z) : partialsCall(s, x, z, ld(at(py, k)));
    const q = cheap ? cheapPartialZ(s, x) : partialZ;
    if (wantA && g != 0 && p != 0) { const t = g * p; if (oneA) sA += t; else acc(ga + ka, t); }
    if (wantB && g != 0 && q != 0) { const t = g * q; if (oneB) sB += t; else acc(gb + kb, t); }
    const tx = ld(ta + ka), tz = ld(tb + kb);
    const dp = g == 0 ? 0 : cheap ? cheapPartialTangent(s, tx, tz) : partialsTangentCall(s, x, z, ld(at(py, k)), tx, tz, ld(at(pty, k)));
    const dq = g == 0 ? 0 : cheap ? cheapPartialZTangent(s, tx) : partialZTangent;
    const ra = (gt != 0 && p != 0 ? gt * p : 0) + (dp != 0 ? g * dp : 0);
    const rb = (gt != 0 && q != 0 ? gt * q : 0) + (dq != 0 ? g * dq : 0);
    if (wantA && ra != 0) { if (oneA) stA += ra; else acc(gta + ka, ra); }
    if (wantB && rb != 0) { if (oneB) stB += rb; else acc(gtb + kb, rb); }
  }
  st(scalarTerms, sA); st(scalarTerms + 8, stA); st(scalarTerms + 16, sB); st(scalarTerms + 24, stB);
}

// ─── reductions ───

/** max (or min) of x; NaN if any element is NaN. */
function extreme(off: i32, n: i32, isMax: bool): f64 {
  let m = isMax ? -Infinity : Infinity;
  for (let k = 0; k < n; k++) {
    const x = xval(off + k);
    if (x != x) return NaN;
    // As the scalar ops: max(−0, 0) is 0 and min(0, −0) is −0 in either order (the first of the
    // tie was kept: a probe).
    m = isMax ? Math.max(m, x) : Math.min(m, x);
  }
  return m;
}

/** The share of the adjoint each maximum gets: 1/t over t ties (min-norm subgradient), NaN
 *  when the result is NaN. */
// @ts-ignore: decorator
@inline function extremeShare(y: f64, ties: i32): f64 { return y != y ? NaN : 1.0 / <f64>ties; }

function logSumExp(off: i32, n: i32): f64 {
  if (n == 0) return -Infinity;
  const m = largest(off, n);
  if (m - m != 0) return m; // NaN, or ±Infinity: the sum is dominated (or all -Infinity)
  return logSumExpValue(off, n, m);
}

// ─── the sweeps' entry points ───

/** Forward rule of vector op `op` at node i (scalar outputs go to val(i)). */
function vectorForward(i: i32, op: i32): void {
  if (op >= ELEMENTWISE) { materializeOperands(i); elementwiseForward(i, op - ELEMENTWISE, lenOf(i), 0); setVal(i, 0); return; }
  const ia = argA(i), ib = argB(i);
  switch (op) {
    case Op.VMeta: case Op.VParam: case Op.VInput: case Op.VConst: setVal(i, 0); return;
    case Op.VGet: setVal(i, xval(offOf(ia) + ib)); return;
    case Op.VSum: setVal(i, sum4(at(xvalBase, offOf(ia)), lenOf(ia))); return;
    case Op.VMax: setVal(i, extreme(offOf(ia), lenOf(ia), true)); return;
    case Op.VMin: setVal(i, extreme(offOf(ia), lenOf(ia), false)); return;
    case Op.VLogSumExp: setVal(i, logSumExp(offOf(ia), lenOf(ia))); return;
    case Op.VDot: setVal(i, dot4(at(xvalBase, offOf(ia)), 8, at(xvalBase, offOf(ib)), 8, lenOf(ia))); return;
  }
  setVal(i, 0);
  const out = offOf(i), n = lenOf(i);
  switch (op) {
    case Op.VMatmul: {
      const m = argA(i - 2), k = argB(i - 2), p = m == 0 ? 0 : n / m;
      contract(at(xvalBase, out), <usize>p << 3, 8, at(xvalBase, offOf(ia)), <usize>k << 3, 8, at(xvalBase, offOf(ib)), <usize>p << 3, 8, m, k, p, false);
      return;
    }
  }
  permute(i, op, valBase, xvalBase);
}

/** transpose, slice, gather and concat only move elements: the forward rule (on values) and the
 *  tangent rule (on tangents) are the same copy, from the given node and element regions. */
function permute(i: i32, op: i32, nodes: usize, elements: usize): void {
  const ia = argA(i), ib = argB(i), out = offOf(i), n = lenOf(i);
  switch (op) {
    case Op.VTranspose: {
      const m = argA(i - 2), k = argB(i - 2), src = offOf(ia);
      if (m > 0 && k > 0) for (let r = 0; r < m; r++) for (let c = 0; c < k; c++) st(at(elements, out + c * m + r), ld(at(elements, src + r * k + c)));
      return;
    }
    case Op.VSlice: memory.copy(at(elements, out), at(elements, offOf(ia) + ib), <usize>n << 3); return;
    case Op.VGather: {
      const src = offOf(ia), idx = offOf(ib);
      for (let k = 0; k < n; k++) st(at(elements, out + k), ld(at(elements, src + <i32>xval(idx + k))));
      return;
    }
    case Op.VConcat: {
      const count = ia, first = i - 1 - ((count + 1) >> 1);
      let pos = out;
      for (let c = 0; c < count; c++) {
        const j = (c & 1) ? argB(first + (c >> 1)) : argA(first + (c >> 1));
        if (isVec(j)) {
          memory.copy(at(elements, pos), at(elements, offOf(j)), <usize>lenOf(j) << 3);
          pos += lenOf(j);
        } else {
          st(at(elements, pos), ld(at(nodes, j)));
          pos++;
        }
      }
      return;
    }
  }
}

/** Reverse rule: g is adj(i) (for vector outputs, the flag; their adjoints are in xadj). */
function vectorReverse(i: i32, op: i32, g: f64): void {
  claimOperands(i, op, false);
  if (op >= ELEMENTWISE) { elementwiseReverse(i, op - ELEMENTWISE, lenOf(i), 0, true); return; }
  const ia = argA(i), ib = argB(i);
  switch (op) {
    case Op.VMeta: case Op.VParam: case Op.VInput: case Op.VConst: return;
    case Op.VGet: store<f64>(at(xadjBase, offOf(ia) + ib), xadj(offOf(ia) + ib) + g); return;
    case Op.VSum: addScalar(at(xadjBase, offOf(ia)), g, lenOf(ia)); return;
    case Op.VMax: case Op.VMin: {
      const off = offOf(ia), n = lenOf(ia), y = val(i);
      const share = extremeShare(y, tiesOf(off, n, y));
      for (let k = 0; k < n; k++) if (y != y || xval(off + k) == y) acc(at(xadjBase, off + k), g * share);
      return;
    }
    case Op.VLogSumExp: softmaxBack(offOf(ia), lenOf(ia), val(i), g, storeA); return;
    case Op.VDot: {
      const oa = offOf(ia), ob = offOf(ib), n = lenOf(ia);
      const wantA = wantsAdjoint(ia), wantB = wantsAdjoint(ib);
      for (let k = 0; k < n; k++) {
        const x = xval(oa + k), z = xval(ob + k);
        if (wantA && z != 0) acc(at(xadjBase, oa + k), g * z);
        if (wantB && x != 0) acc(at(xadjBase, ob + k), g * x);
      }
      return;
    }
  }
  const out = offOf(i), n = lenOf(i);
  switch (op) {
    case Op.VMatmul: matmulReverse(i, ia, ib, out, n, xadjBase, xadjBase, xadjBase, xvalBase, xvalBase); break;
    case Op.VTranspose: transposeBack(i, ia, out, xadjBase); break;
    case Op.VSlice: sliceBack(ia, ib, out, n, xadjBase); break;
    case Op.VGather: gatherBack(ia, ib, out, n, xadjBase); break;
    case Op.VConcat: concatBack(i, ia, out, adjBase, xadjBase); break;
  }
}

function tiesOf(off: i32, n: i32, y: f64): i32 {
  let t = 0;
  for (let k = 0; k < n; k++) if (xval(off + k) == y) t++;
  return t;
}

// gA += gC Bᵀ, gB += Aᵀ gC: `dst` holds the adjoint region written, `gc` the output's (adjoint or
// adjoint tangent), `va`/`vb` the regions the operands are read from (values, or tangents).
// A term with a zero factor adds nothing, as the scalar program's mul skips a zero partial and a
// zero adjoint: 0·∞ gave NaN (sqrt at 0 after a sparse matvec made the gradient of every input
// that row left out NaN). Products of finite factors need no test: every factor is finite where
// gC and C are (an infinite or NaN entry of A or B makes its whole row or column of C so).
function matmulReverse(i: i32, ia: i32, ib: i32, out: i32, n: i32, gc: usize, dstA: usize, dstB: usize, va: usize, vb: usize): void {
  const m = argA(i - 2), k = argB(i - 2), p = m == 0 ? 0 : n / m;
  const g = at(gc, out), a = at(va, offOf(ia)), b = at(vb, offOf(ib));
  const finite = allFinite(g, n) && (va == xvalBase ? allFinite(at(xvalBase, out), n) : allFinite(a, m * k) && allFinite(b, k * p));
  if (wantsAdjoint(ia)) {
    const d = at(dstA, offOf(ia));
    if (finite) contract(d, <usize>k << 3, 8, g, <usize>p << 3, 8, b, 8, <usize>p << 3, m, p, k, true);
    else contractSkippingZeros(d, <usize>k << 3, 8, g, <usize>p << 3, 8, b, 8, <usize>p << 3, m, p, k, true, true);
  }
  if (wantsAdjoint(ib)) {
    const d = at(dstB, offOf(ib));
    if (finite) contract(d, <usize>p << 3, 8, a, 8, <usize>k << 3, g, <usize>p << 3, 8, k, m, p, true);
    else contractSkippingZeros(d, <usize>p << 3, 8, a, 8, <usize>k << 3, g, <usize>p << 3, 8, k, m, p, true, true);
  }
}

/** Σ t[k]·v[k] over the k whose tangent t[k] is not 0, in order. */
function dotOfTangents(t: usize, v: usize, n: i32): f64 {
  let s = 0.0;
  for (let k = 0; k < n; k++) {
    const x = ld(t + (<usize>k << 3)), z = ld(v + (<usize>k << 3));
    if (x != 0 && z != 0) s += x * z;
  }
  return s;
}

/** Whether the n values from p are all finite. */
function allFinite(p: usize, n: i32): bool {
  for (let k = 0; k < n; k++) {
    const x = ld(p + (<usize>k << 3));
    if (x - x != 0) return false;
  }
  return true;
}

/** contract's D += A·B, a term left out where its A factor (`testA`) or B factor (`testB`) is 0,
 *  each D[i, j] taking its terms one l at a time in ascending order (as contract's row and column
 *  layouts do): the reverse rules test both factors, as mul's reverse skips a zero partial and a
 *  zero adjoint; the tangent rule its tangent factor, as mul's tangent skips a zero tangent. */
function contractSkippingZeros(
  d: usize, dsi: usize, dsj: usize, a: usize, asi: usize, asl: usize, b: usize, bsl: usize, bsj: usize, m: i32, k: i32, p: i32,
  testA: bool, testB: bool,
): void {
  if (m == 0 || p == 0) return;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < p; j++) {
      const q = d + <usize>i * dsi + <usize>j * dsj;
      let s = ld(q);
      for (let l = 0; l < k; l++) {
        const x = ld(a + <usize>i * asi + <usize>l * asl), z = ld(b + <usize>l * bsl + <usize>j * bsj);
        if (!(testA && x == 0) && !(testB && z == 0)) s += x * z;
      }
      st(q, s);
    }
  }
}

function transposeBack(i: i32, ia: i32, out: i32, region: usize): void {
  const m = argA(i - 2), k = argB(i - 2), dst = offOf(ia);
  if (m > 0 && k > 0) for (let r = 0; r < m; r++) for (let c = 0; c < k; c++) acc(at(region, dst + r * k + c), ld(at(region, out + c * m + r)));
}

function sliceBack(ia: i32, start: i32, out: i32, n: i32, region: usize): void {
  addRange(at(region, offOf(ia) + start), at(region, out), n);
}

/** dst[k] += src[k] for k < n (separate ranges); lane by lane, so the scalar loop's sums. */
function addRange(dst: usize, src: usize, n: i32): void {
  let k = 0;
  if (ASC_FEATURE_SIMD) for (; k + 2 <= n; k += 2) v128.store(at(dst, k), f64x2.add(v128.load(at(dst, k)), v128.load(at(src, k))));
  for (; k < n; k++) acc(at(dst, k), ld(at(src, k)));
}

/** dst[k] += g for k < n. */
function addScalar(dst: usize, g: f64, n: i32): void {
  let k = 0;
  if (ASC_FEATURE_SIMD) {
    const gv = f64x2.splat(g);
    for (; k + 2 <= n; k += 2) v128.store(at(dst, k), f64x2.add(v128.load(at(dst, k)), gv));
  }
  for (; k < n; k++) acc(at(dst, k), g);
}

function gatherBack(ia: i32, ib: i32, out: i32, n: i32, region: usize): void {
  const dst = offOf(ia), idx = offOf(ib);
  for (let k = 0; k < n; k++) acc(at(region, dst + <i32>xval(idx + k)), ld(at(region, out + k)));
}

function concatBack(i: i32, count: i32, out: i32, nodeRegion: usize, region: usize): void {
  const first = i - 1 - ((count + 1) >> 1);
  let pos = out;
  for (let c = 0; c < count; c++) {
    const j = (c & 1) ? argB(first + (c >> 1)) : argA(first + (c >> 1));
    if (isVec(j)) {
      addRange(at(region, offOf(j)), at(region, pos), lenOf(j));
      pos += lenOf(j);
    } else {
      acc(at(nodeRegion, j), ld(at(region, pos)));
      pos++;
    }
  }
}

// ─── deferred tangents ───
// A tangent kernel stores the tangents the block sweep would, but for the run nodes whose values
// the forward sweep deferred (every consumer in the run): their tan slot says DEFERRED, and the
// reverse tangent kernel recomputes them per element, with the tangent kernel's operations (the
// same bits). Anything else that reads them first has them computed by `materializeTangent`: the
// façade's jvp (an output among them), checkNaN, a rule where a kernel is not available.
let tangentsDeferredFrom: i32 = i32.MAX_VALUE;

/** Before a tangent sweep: no tangent is deferred (the seeding cleared the tan slots). */
export function resetDeferredTangents(): void { tangentsDeferredFrom = i32.MAX_VALUE; }

/** Computes and stores the tangents of node j where they are deferred (and first its operands'
 *  tangents and values, and its own values), with the block sweep's rule. */
export function materializeTangent(j: i32): void {
  if (j < 0 || !isVec(j) || tan(j) != DEFERRED) return;
  const op = opAt(j);
  if (op == Op.VSlice) {
    // A deferred slice's: its parent's, copied.
    materializeTangent(argA(j));
    permute(j, op, tanBase, xtanBase);
    setTan(j, 0);
    return;
  }
  materializeTangent(argA(j));
  materializeTangent(argB(j));
  materializeOperands(j);
  materialize(j);
  elementwiseTangent(j, op - ELEMENTWISE, lenOf(j));
  setTan(j, 0);
}

/** Zeroes the element tangents of the vector leaves (inputs, constants) below `count`: a tangent
 *  sweep writes every other vector node's (or defers it), so seeding clears only these instead of
 *  every element. */
export function clearLeafTangents(count: i32): void {
  for (let i = 0; i < count; i++) {
    const op = opAt(i);
    if (op == Op.VInput || op == Op.VConst) memory.fill(xtanBase + (<usize>offOf(i) << 3), 0, <usize>lenOf(i) << 3);
  }
}

/** Materializes every deferred tangent below `to`. */
export function materializeAllTangents(to: i32): void {
  if (tangentsDeferredFrom == i32.MAX_VALUE) return;
  for (let j = tangentsDeferredFrom; j < to; j++) materializeTangent(j);
}

/** As materializeOperandsOutside, for tangents (without `slices`, a deferred slice's stay where
 *  its parent holds them, and the parent's are computed). */
function materializeTangentsOutside(i: i32, lo: i32, hi: i32, slices: bool): void {
  const a = argA(i), b = argB(i);
  if (a < lo || a > hi) materializeTangentOf(a, slices);
  if (b < lo || b > hi) materializeTangentOf(b, slices);
  if (opAt(i) - ELEMENTWISE == Op.Select) materializeTangent(argA(i - 2));
}

function materializeTangentOf(j: i32, slices: bool): void {
  if (!slices && j >= 0 && opAt(j) == Op.VSlice) materializeTangent(argA(j));
  else materializeTangent(j);
}

/** The deferred values and tangents the tangent rule (`reverse`: the reverse rule with tangents)
 *  of vector node i reads: an elementwise node's operands' and its own, a product's or extreme's
 *  operands'; the copies and sums read tangents (reverse: adjoints) only. */
function materializeRead(i: i32, op: i32, reverse: bool): void {
  if (op >= ELEMENTWISE) {
    materializeOperands(i);
    materialize(i);
    materializeTangentsOutside(i, i, i, true);
    materializeTangent(i);
    return;
  }
  switch (op) {
    case Op.VDot: case Op.VMatmul:
      materialize(argA(i)); materialize(argB(i));
      materializeTangent(argA(i)); materializeTangent(argB(i));
      return;
    case Op.VMax: case Op.VMin: case Op.VLogSumExp:
      materialize(argA(i));
      materializeTangent(argA(i));
      return;
    case Op.VGet: case Op.VSum: case Op.VTranspose: case Op.VSlice: case Op.VGather:
      if (!reverse) materializeTangent(argA(i));
      return;
    case Op.VConcat: {
      if (reverse) return;
      const count = argA(i), first = i - 1 - ((count + 1) >> 1);
      for (let c = 0; c < count; c++) materializeTangent((c & 1) ? argB(first + (c >> 1)) : argA(first + (c >> 1)));
      return;
    }
  }
}

/** Tangent rule of node i, a vector op, in a tangent sweep below `to`: a run from i in one fused
 *  kernel where one is available (its deferred values computed per element and left deferred,
 *  the tangents of those nodes deferred too), so the sweep reads and writes each run node's
 *  elements at most once instead of once per rule and again to materialize them; else the op
 *  alone, with the deferred values and tangents it reads computed first. Returns the last node
 *  it did. */
export function vectorTangentAt(i: i32, op: i32, to: i32): i32 {
  if (op >= ELEMENTWISE && fusionEnabled && lenOf(i) > RUN_PAST && joins(i, lenOf(i))) {
    const n = lenOf(i);
    const count = collectRun(i, to, n), j = runNode(count - 1);
    // An hvp's output summing the run: the run is left whole to the reverse tangent kernel.
    const after = sumAfter(j, to);
    if (after >= 0 && after == hvpOutput && leftToReverse(count, after, to)) {
      for (let k = 0; k < count; k++) setTan(runNode(k), DEFERRED);
      tangentsDeferredFrom = min(tangentsDeferredFrom, i);
      // Not computed: a NaN, should anything read it after all.
      setTan(after, NaN);
      return after;
    }
    // A sum right after the run that alone reads its last node (whose values the forward sweep
    // left deferred for it) is taken in: the kernel adds the last node's tangents up as the
    // sum's rule does (sum4's order), and defers them too.
    const sum = val(j) == DEFERRED ? after : -1;
    if (count >= (sum >= 0 ? 1 : 2)) {
      // Operands from outside the run are read from memory (a deferred slice where its parent
      // holds it); the run's deferred nodes, by the kernel.
      for (let k = 0; k < count; k++) { const m = runNode(k); materializeOperandsOutside(m, i, j, false); materializeTangentsOutside(m, i, j, false); }
      const kernel = fusedKernel(count, false, sum >= 0, true);
      if (kernel != 0) {
        call_indirect<void>(kernel, fuseParams, 0, n);
        for (let k = 0; k < count; k++) {
          const m = runNode(k);
          if (val(m) != DEFERRED || (k == count - 1 && sum < 0)) continue;
          setTan(m, DEFERRED);
          tangentsDeferredFrom = min(tangentsDeferredFrom, m);
        }
        if (sum >= 0) { setTan(sum, load<f64>(runSum)); return sum; }
        return j;
      }
    }
  }
  if (op == Op.VSlice && val(i) == DEFERRED && lenOf(i) > RUN_PAST) {
    // A deferred slice's tangents stay where its parent holds them too (as its values), for the
    // kernels to read there; anything else reading them first has them copied.
    materializeTangent(argA(i));
    setTan(i, DEFERRED);
    tangentsDeferredFrom = min(tangentsDeferredFrom, i);
    return i;
  }
  materializeRead(i, op, false);
  vectorTangent(i, op);
  return i;
}

/** Whether the tangent sweep may leave the run in runNodes (`count` nodes, taken in by `sum`, the
 *  hvp's output) to the reverse tangent kernel: one will sweep it (it is fusable), nothing outside
 *  the run reads a run node's tangents but the sum its last node's (a deferred node's consumers
 *  are all in the run; one whose values are stored, an exp's, is searched), and no node after
 *  the sum below `to` reads the sum. */
function leftToReverse(count: i32, sum: i32, to: i32): bool {
  if (count > FUSE_MAX) return false;
  const first = runNode(0), last = runNode(count - 1), elements = <i64>count * <i64>lenOf(last);
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    if (val(m) != DEFERRED && namedOutside(m, m == last ? sum : last, to - 1, first, last, elements)) return false;
  }
  return !namedOutside(sum, sum, to - 1, 0, -1, elements);
}

/** Tangent rule (forward mode): tangents of the operands are in tan / xtan. */
export function vectorTangent(i: i32, op: i32): void {
  if (op >= ELEMENTWISE) { elementwiseTangent(i, op - ELEMENTWISE, lenOf(i)); return; }
  const ia = argA(i), ib = argB(i);
  switch (op) {
    case Op.VMeta: case Op.VParam: case Op.VInput: case Op.VConst: return;
    case Op.VGet: setTan(i, xtan(offOf(ia) + ib)); return;
    case Op.VSum: setTan(i, sum4(at(xtanBase, offOf(ia)), lenOf(ia))); return;
    case Op.VMax: case Op.VMin: {
      const off = offOf(ia), n = lenOf(ia), y = val(i);
      const share = extremeShare(y, tiesOf(off, n, y));
      let t = 0.0;
      for (let k = 0; k < n; k++) {
        const tx = xtan(off + k);
        if ((y != y || xval(off + k) == y) && tx != 0) t += tx * share;
      }
      setTan(i, t);
      return;
    }
    case Op.VLogSumExp: setTan(i, softmaxDot(offOf(ia), lenOf(ia), val(i))); return;
    case Op.VDot: {
      const n = lenOf(ia), ta = at(xtanBase, offOf(ia)), tb = at(xtanBase, offOf(ib)), a = at(xvalBase, offOf(ia)), b = at(xvalBase, offOf(ib));
      // Where the dot and its tangent are finite, every product is; else a term with a zero factor
      // (a zero tangent, or a zero value: its partial) is left out, as mul's tangent leaves it
      // (an infinite entry whose tangent was 0 made the tangent NaN, and so did an infinite
      // tangent beside a zero value: probes).
      const t = isFinite(val(i)) ? dot4(ta, 8, b, 8, n) + dot4(a, 8, tb, 8, n) : NaN;
      setTan(i, isFinite(t) ? t : dotOfTangents(ta, b, n) + dotOfTangents(tb, a, n));
      return;
    }
  }
  const out = offOf(i), n = lenOf(i);
  switch (op) {
    case Op.VMatmul: {
      const m = argA(i - 2), k = argB(i - 2), p = m == 0 ? 0 : n / m;
      const d = at(xtanBase, out), ps = <usize>p << 3, ks = <usize>k << 3;
      // Ċ = ȦB + AḂ. Where C and Ċ come out finite, every product was; else again with a term
      // left out where a factor is 0 (a zero tangent, or a zero value: its partial), as mul's
      // tangent leaves it (an infinite tangent met the zero triangle of an upper trmv: a probe).
      const finite = allFinite(at(xvalBase, out), n);
      if (finite) {
        contract(d, ps, 8, at(xtanBase, offOf(ia)), ks, 8, at(xvalBase, offOf(ib)), ps, 8, m, k, p, false);
        contract(d, ps, 8, at(xvalBase, offOf(ia)), ks, 8, at(xtanBase, offOf(ib)), ps, 8, m, k, p, true);
      }
      if (!finite || !allFinite(d, n)) {
        memory.fill(d, 0, <usize>n << 3);
        contractSkippingZeros(d, ps, 8, at(xtanBase, offOf(ia)), ks, 8, at(xvalBase, offOf(ib)), ps, 8, m, k, p, true, true);
        contractSkippingZeros(d, ps, 8, at(xvalBase, offOf(ia)), ks, 8, at(xtanBase, offOf(ib)), ps, 8, m, k, p, true, true);
      }
      return;
    }
  }
  permute(i, op, tanBase, xtanBase);
}

/** Reverse rule with tangents of node i, a vector op (g, gt its adjoint and adjoint tangent): the
 *  run ending at i in one fused kernel where one is available (claims first, in the sweep's order;
 *  the run nodes' adjoints and adjoint tangents in registers until their turn; a broadcast scalar
 *  operand's sums added per node after it, highest node first, as the block sweep adds them), else
 *  the op alone, with the deferred values and tangents it reads computed first. Returns the
 *  lowest node it did. */
export function vectorReverseTangentAt(i: i32, op: i32, g: f64, gt: f64): i32 {
  // A slice a run absorbed: nothing to send.
  if (isVectorOp(op) && g == DROPPED) return i;
  if (op == Op.VSum && fusionEnabled) {
    // The sum right after a run's last node, which nothing else reached: the run's kernel takes
    // it in (every element of the last node's adjoint is +0 + g, of its tangent +0 + gt).
    const last = argA(i);
    if (adj(last) == 0 && lenOf(last) > RUN_PAST && joins(last, lenOf(last)) && sumAfter(last, i + 1) == i) {
      const j = reverseTangentRun(last, i, g, gt);
      if (j >= 0) return j;
    }
  }
  if (op >= ELEMENTWISE && fusionEnabled && lenOf(i) > RUN_PAST && joins(i, lenOf(i))) {
    const j = reverseTangentRun(i, -1, 0, 0);
    if (j >= 0) return j;
  }
  materializeRead(i, op, true);
  vectorReverseTangent(i, op, g, gt);
  return i;
}

/** The reverse rules with tangents of the run ending at i, entered from i, or from `sum` (with
 *  its adjoint g and adjoint tangent gt): returns the run's lowest node, or -1 where the run is
 *  not one to fuse (nothing done). */
function reverseTangentRun(i: i32, sum: i32, g: f64, gt: f64): i32 {
  const n = lenOf(i);
  const count = collectRunDown(i, n), j = runNode(count - 1);
  // A sum whose forward an hvp's replay left to this sweep (see gradientOutput): the hvp does not
  // read its value, which is not computed at all.
  if (sum >= 0 && sum == pendingSum) { setVal(sum, NaN); pendingSum = -1; }
  if (count < (sum >= 0 ? 1 : 2) || count > FUSE_MAX) return -1;
  // The sum claims the last node without clearing it: the kernel takes its terms in.
  if (sum >= 0) store<f64>(adjBase + (<usize>i << 3), 1);
  // Deferred slices the kernel absorbs (as the first-order one does, element by element: their
  // totals added to the parent's adjoints and adjoint tangents lane by lane, highest slice first).
  chooseAbsorbed(count, j, i);
  // A full-length operand that this run reaches first is written, not added to (the kernel
  // stores +0 + its first terms, as claimWhole lets the first-order rules): no clearing pass.
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    let stores = 0;
    if (adj(m) != 0 || tanAdj(m) != 0) {
      const ia = argA(m), ib = argB(m);
      if (opAt(m) - ELEMENTWISE == Op.Select) claimOperands(m, opAt(m), true);
      else stores = (claimWhole(ia, n) ? 1 : 0) | (ib != ia && claimWhole(ib, n) ? 2 : 0);
    }
    store<u8>(runStores + <usize>k, stores);
  }
  // The absorbed slices' parents, claimed as the slices' rules would claim them.
  for (let m = 0; m < absorbedCount; m++) claim(argA(absorbed(m)), true);
  memory.fill(runTangentTerms, 0, <usize>count << 5);
  // Operands from outside the run from memory (a deferred slice where its parent holds it);
  // the run's deferred values and tangents, by the kernel.
  for (let k = 0; k < count; k++) { const m = runNode(k); materializeOperandsOutside(m, j, i, false); materializeTangentsOutside(m, j, i, false); }
  store<f64>(runSum, g);
  store<f64>(runSum, gt, 8);
  const kernel = fusedKernel(count, true, sum >= 0, true);
  // Absorbed slices have nothing left to send (a read of their adjoints sweeps again, keeping);
  // without a kernel they take the run's terms themselves, claimed now as the rules would claim
  // them, and their rules send them later in the sweep.
  for (let m = 0; m < absorbedCount; m++) {
    const s = absorbed(m);
    store<f64>(adjBase + (<usize>s << 3), kernel != 0 ? DROPPED : 0);
    if (kernel == 0) claim(s, true);
  }
  absorbedCount = 0;
  if (kernel != 0) {
    call_indirect<void>(kernel, fuseParams, 0, n);
    for (let k = 0; k < count; k++) {
      const m = runNode(k);
      if (adj(m) == 0 && tanAdj(m) == 0) continue;
      // The kernel kept its adjoints and their tangents in registers (see keepAdjoints: the
      // façade reads one by sweeping again).
      if (!keepAdjoints) store<f64>(adjBase + (<usize>m << 3), DROPPED);
      const t = runTangentTerms + (<usize>(count - 1 - k) << 5);
      const ia = argA(m), ib = argB(m);
      if (!isVec(ia) && wantsAdjoint(ia)) { acc(at(adjBase, ia), load<f64>(t)); acc(at(tanAdjBase, ia), load<f64>(t, 16)); }
      if (ib != ia && !isVec(ib) && wantsAdjoint(ib)) { acc(at(adjBase, ib), load<f64>(t, 8)); acc(at(tanAdjBase, ib), load<f64>(t, 24)); }
    }
    return j;
  }
  // No kernel: the sum's rule, then each node's, highest first (the claims are made; those to be
  // written whole are cleared now, as claim clears).
  if (sum >= 0) {
    // (Its claim of the last node found it claimed already: cleared here as claiming clears.)
    clearClaimed(i);
    vectorReverseTangent(sum, Op.VSum, g, gt);
  }
  for (let k = 0; k < count; k++) {
    const m = runNode(k), stores = load<u8>(runStores + <usize>k);
    if ((stores & 1) != 0) clearClaimed(argA(m));
    if ((stores & 2) != 0) clearClaimed(argB(m));
  }
  for (let k = 0; k < count; k++) {
    const m = runNode(k);
    if (adj(m) == 0 && tanAdj(m) == 0) continue;
    materializeRead(m, opAt(m), true);
    elementwiseReverseTangent(m, opAt(m) - ELEMENTWISE, n);
  }
  return j;
}

/** Forward over reverse: adjoints and adjoint tangents (g, gt for scalar outputs; the element
 *  regions for vector outputs). */
export function vectorReverseTangent(i: i32, op: i32, g: f64, gt: f64): void {
  claimOperands(i, op, true);
  if (op >= ELEMENTWISE) { elementwiseReverseTangent(i, op - ELEMENTWISE, lenOf(i)); return; }
  const ia = argA(i), ib = argB(i);
  switch (op) {
    case Op.VMeta: case Op.VParam: case Op.VInput: case Op.VConst: return;
    case Op.VGet: {
      const k = offOf(ia) + ib;
      acc(at(xadjBase, k), g); acc(at(xtanAdjBase, k), gt);
      return;
    }
    case Op.VSum: {
      const off = offOf(ia), n = lenOf(ia);
      for (let k = 0; k < n; k++) { acc(at(xadjBase, off + k), g); acc(at(xtanAdjBase, off + k), gt); }
      return;
    }
    case Op.VMax: case Op.VMin: {
      const off = offOf(ia), n = lenOf(ia), y = val(i);
      const share = extremeShare(y, tiesOf(off, n, y));
      for (let k = 0; k < n; k++) {
        if (y == y && xval(off + k) != y) continue;
        if (g != 0) acc(at(xadjBase, off + k), g * share);
        if (gt != 0) acc(at(xtanAdjBase, off + k), gt * share);
      }
      return;
    }
    case Op.VLogSumExp: softmaxBackTangent(offOf(ia), lenOf(ia), val(i), tan(i), g, gt); return;
    case Op.VDot: {
      // mul's second-order rule per element: pa = z, pb = x, dpa = tz, dpb = tx.
      const oa = offOf(ia), ob = offOf(ib), n = lenOf(ia);
      const wantA = wantsAdjoint(ia), wantB = wantsAdjoint(ib);
      for (let k = 0; k < n; k++) {
        const x = xval(oa + k), z = xval(ob + k), tx = xtan(oa + k), tz = xtan(ob + k);
        if (g != 0 && z != 0 && wantA) acc(at(xadjBase, oa + k), g * z);
        if (g != 0 && x != 0 && wantB) acc(at(xadjBase, ob + k), g * x);
        const ra = (gt != 0 && z != 0 ? gt * z : 0) + (g != 0 && tz != 0 ? g * tz : 0);
        const rb = (gt != 0 && x != 0 ? gt * x : 0) + (g != 0 && tx != 0 ? g * tx : 0);
        if (ra != 0 && wantA) acc(at(xtanAdjBase, oa + k), ra);
        if (rb != 0 && wantB) acc(at(xtanAdjBase, ob + k), rb);
      }
      return;
    }
  }
  const out = offOf(i), n = lenOf(i);
  switch (op) {
    case Op.VMatmul:
      // adj: gA += gC Bᵀ, gB += Aᵀ gC; tanAdj: tgA += tgC Bᵀ + gC tBᵀ, tgB += Aᵀ tgC + tAᵀ gC.
      matmulReverse(i, ia, ib, out, n, xadjBase, xadjBase, xadjBase, xvalBase, xvalBase);
      matmulReverse(i, ia, ib, out, n, xtanAdjBase, xtanAdjBase, xtanAdjBase, xvalBase, xvalBase);
      matmulReverse(i, ia, ib, out, n, xadjBase, xtanAdjBase, xtanAdjBase, xtanBase, xtanBase);
      break;
    case Op.VTranspose: transposeBack(i, ia, out, xadjBase); transposeBack(i, ia, out, xtanAdjBase); break;
    case Op.VSlice: sliceBack(ia, ib, out, n, xadjBase); sliceBack(ia, ib, out, n, xtanAdjBase); break;
    case Op.VGather: gatherBack(ia, ib, out, n, xadjBase); gatherBack(ia, ib, out, n, xtanAdjBase); break;
    case Op.VConcat: concatBack(i, ia, out, adjBase, xadjBase); concatBack(i, ia, out, tanAdjBase, xtanAdjBase); break;
  }
}

/** checkNaN: whether any element of vector node i is NaN or ±Infinity (values, or adjoints:
 *  only where a sweep reached it). */
export function vectorNonFinite(i: i32, values: bool): bool {
  if (!values && (adj(i) == 0 || adj(i) == DROPPED)) return false;
  if (values) materialize(i);
  const base = values ? xvalBase : xadjBase, off = offOf(i), n = lenOf(i);
  for (let k = 0; k < n; k++) {
    const v = ld(at(base, off + k));
    if (v - v != 0) return true;
  }
  return false;
}
