// The rules of logSumExp, y = m + log Σ e^(x_k - m) with m the largest x_k, whose adjoint is the
// softmax: each sweep is one pass of exp over the elements. In the SIMD build that exp is
// expLanes, two elements at a time (every element, tails included, so one op uses one exp); sums
// run in dot4's order (vector.ts) in both builds.
import { xvalBase, xadjBase, xtanBase, xtanAdjBase } from './layout';
import { expLanes } from './exp-lanes';

// @ts-ignore: decorator
@inline function at(base: usize, k: i32): usize { return base + (<usize>k << 3); }

// One element (tails, n = 1, the second-order rule). Inlined like expLanes: as a function of its
// own, called from the tails, it left the SIMD loops of its callers 30% slower (measured), for
// 185 bytes less of gzipped core.
// @ts-ignore: decorator
@inline function exp(x: f64): f64 {
  if (ASC_FEATURE_SIMD) return f64x2.extract_lane(expLanes(f64x2.splat(x)), 0);
  return Math.exp(x);
}

/** Σ e^(x_k - m) · w_k over the n elements from `off`, where w_k is the element of `weights` or 1
 *  (weights 0), in dot4's order: four interleaved partial sums, combined as (s0 + s2) + (s1 + s3).
 *  One term is returned as it is. */
function sumOfExp(off: i32, n: i32, m: f64, weights: usize): f64 {
  const x = at(xvalBase, off), w = weights ? at(weights, off) : 0;
  if (n == 1) return term(x, w, 0, m);
  let s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  let l = 0;
  if (ASC_FEATURE_SIMD) {
    const mv = f64x2.splat(m);
    let acc01 = f64x2.splat(0), acc23 = f64x2.splat(0);
    for (; l + 4 <= n; l += 4) {
      const p = x + (<usize>l << 3);
      let e01 = expLanes(f64x2.sub(v128.load(p), mv)), e23 = expLanes(f64x2.sub(v128.load(p, 16), mv));
      if (w) {
        e01 = f64x2.mul(e01, v128.load(w + (<usize>l << 3)));
        e23 = f64x2.mul(e23, v128.load(w + (<usize>l << 3), 16));
      }
      acc01 = f64x2.add(acc01, e01);
      acc23 = f64x2.add(acc23, e23);
    }
    s0 = f64x2.extract_lane(acc01, 0); s1 = f64x2.extract_lane(acc01, 1);
    s2 = f64x2.extract_lane(acc23, 0); s3 = f64x2.extract_lane(acc23, 1);
  } else {
    for (; l + 4 <= n; l += 4) {
      s0 += term(x, w, l, m); s1 += term(x, w, l + 1, m);
      s2 += term(x, w, l + 2, m); s3 += term(x, w, l + 3, m);
    }
  }
  // The last one to three terms, in one loop (one copy of the inlined exp).
  for (let t = 0; l < n; l++, t++) {
    const e = term(x, w, l, m);
    if (t == 0) s0 += e;
    else if (t == 1) s1 += e;
    else s2 += e;
  }
  return (s0 + s2) + (s1 + s3);
}

// @ts-ignore: decorator
@inline function term(x: usize, w: usize, l: i32, m: f64): f64 {
  const e = exp(load<f64>(x + (<usize>l << 3)) - m);
  return w ? e * load<f64>(w + (<usize>l << 3)) : e;
}

/** The largest element, NaN if any is NaN: the shift of logSumExp. Which of +0 and -0 it
 *  returns when both are largest may differ from the max op's rule (the first one), since the
 *  shift's sign never shows: ±0 + log s and x - (±0) are the same either way. */
export function largest(off: i32, n: i32): f64 {
  let m = -Infinity;
  let k = 0;
  const x = at(xvalBase, off);
  if (ASC_FEATURE_SIMD) {
    let m01 = f64x2.splat(-Infinity), m23 = f64x2.splat(-Infinity), nan = f64x2.splat(0);
    for (; k + 4 <= n; k += 4) {
      const a = v128.load(x + (<usize>k << 3)), b = v128.load(x + (<usize>k << 3), 16);
      nan = v128.or(nan, v128.or(f64x2.ne(a, a), f64x2.ne(b, b)));
      m01 = f64x2.pmax(m01, a);
      m23 = f64x2.pmax(m23, b);
    }
    if (v128.any_true(nan)) return NaN;
    const lanes = f64x2.pmax(m01, m23);
    m = f64x2.extract_lane(lanes, 0);
    const other = f64x2.extract_lane(lanes, 1);
    if (other > m) m = other;
  }
  for (; k < n; k++) {
    const v = load<f64>(x + (<usize>k << 3));
    if (v != v) return NaN;
    if (v > m) m = v;
  }
  return m;
}

/** The value, given m, the largest element (finite: the caller handles NaN and ±Infinity). */
export function logSumExpValue(off: i32, n: i32, m: f64): f64 {
  return m + Math.log(sumOfExp(off, n, m, 0));
}

// The softmax weights are e^(x_k - y), y the value, which rounds at its own scale: at large |y|
// that rounding reached every weight (a probe: gradients [1, 1] at logits 1e16, 1e16, 0.47 each
// at 1e15, where the softmax op gave 0.5). There the weights are divided by their sum, which makes
// them the softmax at any scale (one pass of exp more); below 2^10 y's rounding is under 1.2e-13
// of each weight and the sum is 1 as it stands.
function softmaxScale(off: i32, n: i32, y: f64): f64 {
  return Math.abs(y) < 1024 || y - y != 0 ? 1 : sumOfExp(off, n, y, 0);
}

/** Σ softmax_k tx_k, the tangent (y the value). Where that sum is not finite, again with a term
 *  left out where its tangent or its weight is 0, as mul's tangent leaves one out: a weight that
 *  is NaN (an element at +Infinity or NaN, or every one at -Infinity) beside a zero tangent made
 *  the tangent NaN along any direction, where the reverse sweep gave the gradient (a probe). */
export function softmaxDot(off: i32, n: i32, y: f64): f64 {
  const sum = sumOfExp(off, n, y, xtanBase);
  return (isFinite(sum) ? sum : maskedSumOfExp(off, n, y)) / softmaxScale(off, n, y);
}

// sumOfExp's terms with the tangents as weights, in its order, each left out where its tangent or
// its weight is 0.
function maskedSumOfExp(off: i32, n: i32, y: f64): f64 {
  const x = at(xvalBase, off), w = at(xtanBase, off);
  let s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  for (let l = 0; l < n; l++) {
    const t = load<f64>(w + (<usize>l << 3));
    if (t == 0) continue;
    const p = exp(load<f64>(x + (<usize>l << 3)) - y);
    if (p == 0) continue;
    const e = p * t, lane = l & 3;
    if (lane == 0) s0 += e;
    else if (lane == 1) s1 += e;
    else if (lane == 2) s2 += e;
    else s3 += e;
  }
  return n == 1 ? s0 : (s0 + s2) + (s1 + s3);
}

/** adj_k += g · softmax_k, skipped where softmax_k is 0 (an infinite g must not make 0·∞);
 *  `fresh`: the adjoints are not cleared yet, and are set to what that gives on +0 instead. */
export function softmaxBack(off: i32, n: i32, y: f64, g: f64, fresh: bool): void {
  const x = at(xvalBase, off), a = at(xadjBase, off);
  g /= softmaxScale(off, n, y);
  let k = 0;
  if (ASC_FEATURE_SIMD) {
    const yv = f64x2.splat(y), gv = f64x2.splat(g), zero = f64x2.splat(0), skip = f64x2.splat(-0.0);
    for (; k + 2 <= n; k += 2) {
      const q = <usize>k << 3;
      const p = expLanes(f64x2.sub(v128.load(x + q), yv));
      // Adding -0 leaves every adjoint as it is: the lanes where the scalar rule skips.
      const contribution = v128.bitselect(f64x2.mul(gv, p), skip, f64x2.ne(p, zero));
      v128.store(a + q, f64x2.add(fresh ? zero : v128.load(a + q), contribution));
    }
  }
  for (; k < n; k++) {
    const p = exp(load<f64>(x + (<usize>k << 3)) - y);
    const q = a + (<usize>k << 3);
    const before = fresh ? 0.0 : load<f64>(q);
    store<f64>(q, p != 0 ? before + g * p : before);
  }
}

/** softmaxBack with tangents: adjoints and their tangents (ty the value's tangent). */
export function softmaxBackTangent(off: i32, n: i32, y: f64, ty: f64, g: f64, gt: f64): void {
  const s = softmaxScale(off, n, y), m = largestAt(off, n);
  for (let k = 0; k < n; k++) {
    const p = exp(load<f64>(at(xvalBase, off + k)) - y) / s;
    if (g != 0 && p != 0) store<f64>(at(xadjBase, off + k), load<f64>(at(xadjBase, off + k)) + g * p);
    // (A zero weight or change of weight adds nothing: 0 times an infinite or NaN one was NaN.)
    let d = load<f64>(at(xtanBase, off + k)) - ty;
    if (k == m && n > 1 && p > 0.5) {
      const dm = dominantChange(off, n, y, s, m);
      if (isFinite(dm) && isFinite(ty)) d = dm;
    }
    const dp = g != 0 && p != 0 && d != 0 ? p * d : 0;
    const r = (gt != 0 && p != 0 ? gt * p : 0) + (dp != 0 ? g * dp : 0);
    if (r != 0) store<f64>(at(xtanAdjBase, off + k), load<f64>(at(xtanAdjBase, off + k)) + r);
  }
}

// The change of weight t_k − Σ p_j t_j cancels for a weight p_k near 1, where the Hessian's
// entries are p_k·(1 − p_k)-small and were lost whole (a probe: H[1][1] of logSumExp([0, 37]) was
// 0, its softplus'' 8.5e-17, and H·1 was no longer 0). The element of weight past 1/2 (the first
// largest) takes it as Σ_{j≠k} p_j (t_k − t_j) instead, as src/js/vector.ts does (Math.exp: no
// second copy of the SIMD build's exp for a correction).
function largestAt(off: i32, n: i32): i32 {
  let m = 0;
  for (let k = 1; k < n; k++) if (load<f64>(at(xvalBase, off + k)) > load<f64>(at(xvalBase, off + m))) m = k;
  return m;
}

function dominantChange(off: i32, n: i32, y: f64, s: f64, m: i32): f64 {
  const tm = load<f64>(at(xtanBase, off + m));
  let sum = 0.0;
  for (let j = 0; j < n; j++) {
    // Math.exp, where the SIMD build's rule weighs by its own exp: the two may differ in the last
    // bit, within the rule's accuracy (README); this pass runs only where a weight passes 1/2.
    const p = Math.exp(load<f64>(at(xvalBase, off + j)) - y) / s, d = tm - load<f64>(at(xtanBase, off + j));
    if (j != m && p != 0 && d != 0) sum += p * d;
  }
  return sum;
}
