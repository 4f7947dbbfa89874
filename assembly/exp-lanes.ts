// e^x for the two lanes of an f64x2, for the SIMD build's logSumExp kernels, whose passes of exp
// are the whole cost of the op. x = k·ln2 + r with |r| <= ln2/2 (Cody and Waite's two-part ln2,
// so k·LN2_HI is exact), e^r by a polynomial of degree 11, then 2^k: added to the exponent of e^r
// where the result is a normal number, else in two exact factors so that results near overflow
// and in the subnormal range round once. The polynomial is the Chebyshev fit of e^r on
// [-ln2/2, ln2/2] (mpmath's chebyfit, 12 nodes), 1.7e-17 relative error with its coefficients
// rounded to doubles; test/vector-log-sum-exp.test.ts measures the whole function against V8's
// Math.exp (within 1 ulp of it, subnormals included). The scalar build and the JS engine call
// their own exp, so the engines agree within 1e-12, as for every transcendental.

// @ts-ignore: decorator
@inline const LOG2E: f64 = 1.4426950408889634;
// @ts-ignore: decorator
@inline const LN2_HI: f64 = 0.6931471803691238; // 33 significant bits: k·LN2_HI is exact
// @ts-ignore: decorator
@inline const LN2_LO: f64 = 1.9082149292705877e-10;
// Adding 1.5·2^52 rounds a double of magnitude below 2^51 to an integer (ties to even), held in
// the low bits of the sum: k as a float and as an integer without a conversion instruction.
// @ts-ignore: decorator
@inline const SHIFT: f64 = 6755399441055744.0;
// Up to this |x|, |k| <= 1021 and e^x is 2^k·e^r with e^r in [0.70, 1.42]: a normal number whose
// exponent field is e^r's plus k.
// @ts-ignore: decorator
@inline const NORMAL_MAX: f64 = 708;
// Past these e^x is +Infinity, or rounds to +0: clamping there keeps k within two exact factors.
// @ts-ignore: decorator
@inline const X_MAX: f64 = 710;
// @ts-ignore: decorator
@inline const X_MIN: f64 = -746;

// @ts-ignore: decorator
@inline function term(p: v128, r: v128, c: f64): v128 {
  return f64x2.add(f64x2.mul(p, r), f64x2.splat(c));
}

// @ts-ignore: decorator
@inline function integerOf(rounded: v128): v128 {
  return i64x2.sub(f64x2.add(rounded, f64x2.splat(SHIFT)), f64x2.splat(SHIFT));
}

// 2^k for integer k in [-538, 512], lane by lane.
// @ts-ignore: decorator
@inline function powerOfTwo(k: v128): v128 {
  return i64x2.shl(i64x2.add(k, i64x2.splat(1023)), 52);
}

// e^r for |r| <= ln2/2 (and NaN for NaN).
// @ts-ignore: decorator
@inline function expReduced(r: v128): v128 {
  let p = f64x2.splat(2.5110037605963777e-08);
  p = term(p, r, 2.763263963904103e-07);
  p = term(p, r, 2.755724091857897e-06);
  p = term(p, r, 2.4801485482328494e-05);
  p = term(p, r, 0.00019841269890047113);
  p = term(p, r, 0.0013888888952314775);
  p = term(p, r, 0.008333333333319601);
  p = term(p, r, 0.0416666666664881);
  p = term(p, r, 0.1666666666666668);
  p = term(p, r, 0.5000000000000019);
  p = term(p, r, 1.0);
  return term(p, r, 1.0);
}

// k (as a rounded float) and r for x.
// @ts-ignore: decorator
@inline function reduce(x: v128): v128 {
  return f64x2.sub(f64x2.add(f64x2.mul(x, f64x2.splat(LOG2E)), f64x2.splat(SHIFT)), f64x2.splat(SHIFT));
}

// @ts-ignore: decorator
@inline function remainder(x: v128, kf: v128): v128 {
  return f64x2.sub(f64x2.sub(x, f64x2.mul(kf, f64x2.splat(LN2_HI))), f64x2.mul(kf, f64x2.splat(LN2_LO)));
}

/** e^x per lane: +Infinity above about 709.78, +0 below about -745.13, NaN for NaN. */
// @ts-ignore: decorator
@inline export function expLanes(x: v128): v128 {
  if (i64x2.all_true(f64x2.le(f64x2.abs(x), f64x2.splat(NORMAL_MAX)))) {
    const kf = reduce(x);
    return i64x2.add(expReduced(remainder(x, kf)), i64x2.shl(integerOf(kf), 52));
  }
  return expLanesOutside(x);
}

// Any lane beyond ±708, infinite or NaN. pmin/pmax (one instruction each) return x when a
// comparison with NaN fails, and keep ±Infinity inside the range where 2^k splits into two exact
// factors.
function expLanesOutside(x: v128): v128 {
  const xc = f64x2.pmax(f64x2.pmin(x, f64x2.splat(X_MAX)), f64x2.splat(X_MIN));
  const kf = reduce(xc);
  const p = expReduced(remainder(xc, kf));
  // NaN gives some k here; p is NaN already.
  const k = integerOf(kf);
  const k1 = integerOf(f64x2.floor(f64x2.mul(kf, f64x2.splat(0.5))));
  return f64x2.mul(f64x2.mul(p, powerOfTwo(k1)), powerOfTwo(i64x2.sub(k, k1)));
}
