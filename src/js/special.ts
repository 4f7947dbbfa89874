// The JS twin of assembly/special.ts: the same code line for line (same operations in the same
// order), so the two engines differ only where exp, log, sin, cos and tan of the libms do. Notes
// and sources are there. erf, erfc and lgamma follow fdlibm, whose notice is: "Copyright (C) 1993
// by Sun Microsystems, Inc. All rights reserved. Developed at SunPro, a Sun Microsystems, Inc.
// business. Permission to use, copy, modify, and distribute this software is freely granted,
// provided that this notice is preserved."
const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer);

const PI: number = 3.141592653589793;
const SQRT2: number = 1.4142135623730951;
const SQRTH: number = 0.7071067811865476;
const HALF_LN2: number = 0.34657359027997264;
const TWO_OVER_SQRTPI: number = 1.1283791670955126;
const INV_SQRTPI: number = 0.5641895835477563;
const INV_SQRT2PI: number = 0.3989422804014327;
const SQRT2PI: number = 2.5066282746310002;
// erf(1) rounded to 24 bits (fdlibm's erx).
const ERX: number = 8.45062911510467529297e-01;

/** x with the low 32 bits of its significand cleared: x² of it is exact. */
function clearLow(x: number): number {
  bits[0] = x;
  words[0] = 0; // little-endian: the low word first
  return bits[0]!;
}

// (erf(x) - x) / x for |x| < 0.84375.
function erfSmall(x: number): number {
  const z = x * x;
  const r = 1.28379167095512558561e-01 + z * (-3.25042107247001499370e-01 + z * (-2.84817495755985104766e-02 + z * (-5.77027029648944159157e-03 + z * -2.37630166566501626084e-05)));
  const s = 1.0 + z * (3.97917223959155352819e-01 + z * (6.50222499887672944485e-02 + z * (5.08130628187576562776e-03 + z * (1.32494738004321644526e-04 + z * -3.96022827877536812320e-06))));
  return r / s;
}

// erf(1 + s) - ERX for s = |x| - 1, |x| in [0.84375, 1.25).
function erfNearOne(ax: number): number {
  const s = ax - 1.0;
  const p = -2.36211856075265944077e-03 + s * (4.14856118683748331666e-01 + s * (-3.72207876035701323847e-01 + s * (3.18346619901161753674e-01 + s * (-1.10894694282396677476e-01 + s * (3.54783043256182359371e-02 + s * -2.16637559486879084300e-03)))));
  const q = 1.0 + s * (1.06420880400844228286e-01 + s * (5.40397917702171048937e-01 + s * (7.18286544141962662868e-02 + s * (1.26171219808761642112e-01 + s * (1.36370839120290507362e-02 + s * 1.19844998467991074170e-02)))));
  return p / q;
}

// R/S with erfc(u) = exp(-u² - 0.5625 + R/S) / u, for u >= 1.25.
function erfcTailRatio(u: number): number {
  const s = 1.0 / (u * u);
  if (u < 2.857142857142857) {
    const r = -9.86494403484714822705e-03 + s * (-6.93858572707181764372e-01 + s * (-1.05586262253232909814e+01 + s * (-6.23753324503260060396e+01 + s * (-1.62396669462573470355e+02 + s * (-1.84605092906711035994e+02 + s * (-8.12874355063065934246e+01 + s * -9.81432934416914548592e+00))))));
    const q = 1.0 + s * (1.96512716674392571292e+01 + s * (1.37657754143519042600e+02 + s * (4.34565877475229228821e+02 + s * (6.45387271733267880336e+02 + s * (4.29008140027567833386e+02 + s * (1.08635005541779435134e+02 + s * (6.57024977031928170135e+00 + s * -6.04244152148580987438e-02)))))));
    return r / q;
  }
  const r = -9.86494292470009928597e-03 + s * (-7.99283237680523006574e-01 + s * (-1.77579549177547519889e+01 + s * (-1.60636384855821916062e+02 + s * (-6.37566443368389627722e+02 + s * (-1.02509513161107724954e+03 + s * -4.83519191608651397019e+02)))));
  const q = 1.0 + s * (3.03380607434824582924e+01 + s * (3.25792512996573918826e+02 + s * (1.53672958608443695994e+03 + s * (3.19985821950859553908e+03 + s * (2.55305040643316442583e+03 + s * (4.74528541206955367215e+02 + s * -2.24409524465858183362e+01))))));
  return r / q;
}

// erfc(u) for 1.25 <= u < 28; -u² is split as -z² + (z - u)(z + u) so the large part is exact.
function erfcTail(u: number): number {
  const z = clearLow(u);
  return Math.exp(-z * z - 0.5625) * Math.exp((z - u) * (z + u) + erfcTailRatio(u)) / u;
}

export function erf(x: number): number {
  if (x !== x) return x;
  const ax = Math.abs(x);
  if (ax < 0.84375) {
    if (ax < 3.725290298461914e-09) {
      // x + x·(2/√π - 1) without underflow for subnormal x
      return ax < 2.2250738585072014e-308 ? 0.125 * (8.0 * x + 1.02703333676410069053e+00 * x) : x + 1.28379167095512586316e-01 * x;
    }
    return x + x * erfSmall(x);
  }
  let r: number;
  if (ax < 1.25) r = ERX + erfNearOne(ax);
  else if (ax < 6) r = 1.0 - erfcTail(ax);
  else r = 1.0;
  return x < 0 ? -r : r;
}

export function erfc(x: number): number {
  if (x !== x) return x;
  const ax = Math.abs(x);
  if (ax < 0.84375) {
    const y = erfSmall(x);
    if (x < 0.25) return 1.0 - (x + x * y);
    return 0.5 - (x * y + (x - 0.5));
  }
  if (ax < 1.25) {
    const pq = erfNearOne(ax);
    return x > 0 ? (1.0 - ERX) - pq : 1.0 + (ERX + pq);
  }
  if (ax < 28) {
    if (x < -6) return 2.0;
    const t = erfcTail(ax);
    return x > 0 ? t : 2.0 - t;
  }
  return x > 0 ? 0.0 : 2.0;
}

// exp(-x²/2 - 0.5625) · exp(small) with x²/2 exact in the first factor, for x <= -1.25·√2:
// the left tail of Φ in terms of x itself, so rounding -x/√2 never reaches the exponent.
function normTailExponent(x: number): number {
  const z = clearLow(x);
  return -(z * 0.5) * z - 0.5625;
}
function normTailCorrection(x: number, u: number): number {
  const z = clearLow(x);
  return (z - x) * (z + x) * 0.5 + erfcTailRatio(u);
}

/** Φ(x) = erfc(-x/√2)/2. */
export function normCdf(x: number): number {
  if (x !== x) return x;
  const u = -x * SQRTH;
  const au = Math.abs(u);
  if (au < 0.84375) {
    // The rounding of u taken back by Φ' here too (see the core).
    // Taken back inside erfc's sum, before its last roundings (subtracted from the rounded Φ,
    // consecutive doubles gave values 1 ulp apart the wrong way round: a review).
    const y = erfSmall(u), back = TWO_OVER_SQRTPI * expMinusSmall(u * u) * roundingOfU(x, u);
    if (u < 0.25) return 0.5 * (1.0 - (u + (u * y + back)));
    return 0.5 * (0.5 - ((u * y + back) + (u - 0.5)));
  }
  if (au < 1.25) {
    // The rounding of u taken back by Φ' (see the core).
    const pq = erfNearOne(au);
    return 0.5 * (u > 0 ? (1.0 - ERX) - pq : 1.0 + (ERX + pq)) - 0.5641895835477563 * expMinusNearOne(u * u) * roundingOfU(x, u);
  }
  if (u < 0) return au < 28 ? 1.0 - 0.5 * erfcTail(au) : 1.0;
  if (x < -40) return 0.0; // Φ(-38.5) is below the smallest subnormal
  return Math.exp(normTailExponent(x)) * Math.exp(normTailCorrection(x, u)) / (-x * SQRT2);
}

// The rounding error of u = −x·SQRTH (see the core: the same operations, so the same bits).
function roundingOfU(x: number, u: number): number {
  const a = -x, c = 134217729.0 * a, ah = c - (c - a), al = a - ah;
  const bh = 0.7071067839860916, bl = SQRTH - 0.7071067839860916;
  return (((ah * bh - u) + ah * bl) + al * bh) + al * bl + a * -4.833646656726457e-17;
}

// e^(−t) for t = u² in [0, 0.72), to about 3e-6 (see the core).
function expMinusSmall(t: number): number {
  return expMinusAround(t, 0.356, 0.7004726202352524);
}

// e^(−t) for t = u² in [0.71, 1.57], to about 1e-5 (see the core).
function expMinusNearOne(t: number): number {
  return expMinusAround(t, 1.137, 0.3207799195076166);
}

// e^(−t) as e^(−c)·e^(−(t − c)), the second factor by its Taylor polynomial of degree 5.
function expMinusAround(t: number, c: number, expMinusC: number): number {
  const d = t - c;
  return expMinusC * (1.0 - d * (1.0 - d * (0.5 - d * (1.0 / 6.0 - d * (1.0 / 24.0 - d / 120.0)))));
}

/** log Φ(x), in the log domain in the left tail (no underflow: -x²/2 - log(-x) - ...). */
export function normLogCdf(x: number): number {
  if (x !== x) return x;
  const u = -x * SQRTH;
  if (u >= 1.25) {
    if (x === -Infinity) return x;
    return normTailExponent(x) + (normTailCorrection(x, u) - (Math.log(-x) + HALF_LN2));
  }
  if (x < 0) return Math.log(normCdf(x));
  return Math.log1p(-normCdf(-x)) + 0.0; // + 0: log1p(-0) is -0, log Φ(+Inf) is +0
}

/** d/dx log Φ(x) = φ(x)/Φ(x), the inverse Mills ratio; y = log Φ(x). In the left tail the
 *  exponentials cancel analytically: -x · exp(0.5625 - R/S) / √π. */
export function normLogCdfDerivative(x: number, y: number): number {
  const u = -x * SQRTH;
  if (u >= 1.25) return -x * (Math.exp(0.5625 - erfcTailRatio(u)) * INV_SQRTPI); // see the core
  return normPdf(x) / Math.exp(y);
}

/** d²/dx² log Φ(x) = m(-x - m) for m = normLogCdfDerivative(x, y). Far in the left tail -x - m
 *  cancels (m = -x + 1/(-x) - ...), so there it is the series -(1/t)(1 - 2/t² + 10/t⁴ - ...),
 *  t = -x, whose first omitted term is below 1e-16 relative from t = 100. */
export function normLogCdfSecond(x: number, m: number): number {
  // Below -30 the asymptotic series (to z^6, 3.5e-15 there): -x - m cancels about log10(x^2)
  // digits, which left 1.8e-12 near -100, where the series began with fewer terms.
  if (x < -30) {
    // At -Infinity the limit, -1 (m · 1/x would be Infinity · -0).
    if (x === -Infinity) return -1;
    const z = 1.0 / (x * x);
    return m * ((1.0 - z * (2.0 - z * (10.0 - z * (74.0 - z * (706.0 - z * (8162.0 - z * 110410.0)))))) / x);
  }
  return m * (-x - m);
}

export function normPdf(x: number): number {
  return Math.exp(-0.5 * x * x) * INV_SQRT2PI;
}

export function erfDerivative(x: number): number {
  return TWO_OVER_SQRTPI * Math.exp(-x * x);
}

/** The normal quantile Φ⁻¹(p) (AS 241): -Inf at 0, +Inf at 1, NaN outside [0, 1]. */
export function ndtri(p: number): number {
  if (!(p >= 0 && p <= 1)) return NaN;
  const q = p - 0.5;
  if (Math.abs(q) <= 0.425) {
    const r = 0.180625 - q * q;
    return q * (((((((2.5090809287301226727e+3 * r + 3.3430575583588128105e+4) * r + 6.7265770927008700853e+4) * r + 4.5921953931549871457e+4) * r + 1.3731693765509461125e+4) * r + 1.9715909503065514427e+3) * r + 1.3314166789178437745e+2) * r + 3.3871328727963666080e+0)
      / (((((((5.2264952788528545610e+3 * r + 2.8729085735721942674e+4) * r + 3.9307895800092710610e+4) * r + 2.1213794301586595867e+4) * r + 5.3941960214247511077e+3) * r + 6.8718700749205790830e+2) * r + 4.2313330701600911252e+1) * r + 1.0);
  }
  const tail = q < 0 ? p : 1.0 - p;
  if (tail === 0) return q < 0 ? -Infinity : Infinity;
  let r = Math.sqrt(-Math.log(tail));
  let v: number;
  if (r <= 5.0) {
    r = r - 1.6;
    v = (((((((7.74545014278341407640e-4 * r + 2.27238449892691845833e-2) * r + 2.41780725177450611770e-1) * r + 1.27045825245236838258e+0) * r + 3.64784832476320460504e+0) * r + 5.76949722146069140550e+0) * r + 4.63033784615654529590e+0) * r + 1.42343711074968357734e+0)
      / (((((((1.05075007164441684324e-9 * r + 5.47593808499534494600e-4) * r + 1.51986665636164571966e-2) * r + 1.48103976427480074590e-1) * r + 6.89767334985100004550e-1) * r + 1.67638483018380384940e+0) * r + 2.05319162663775882187e+0) * r + 1.0);
  } else {
    r = r - 5.0;
    v = (((((((2.01033439929228813265e-7 * r + 2.71155556874348757815e-5) * r + 1.24266094738807843860e-3) * r + 2.65321895265761230930e-2) * r + 2.96560571828504891230e-1) * r + 1.78482653991729133580e+0) * r + 5.46378491116411436990e+0) * r + 6.65790464350110377720e+0)
      / (((((((2.04426310338993978564e-15 * r + 1.42151175831644588870e-7) * r + 1.84631831751005468180e-5) * r + 7.86869131145613259100e-4) * r + 1.48753612908506148525e-2) * r + 1.36929880922735805310e-1) * r + 5.99832206555887937690e-1) * r + 1.0);
  }
  return q < 0 ? -v : v;
}

/** d/dp Φ⁻¹(p) = 1/φ(y) = √(2π) e^(y²/2), y = Φ⁻¹(p). */
export function ndtriDerivative(y: number): number {
  return SQRT2PI * Math.exp(0.5 * y * y);
}

// sin(πx) for x < 0, reduced so that sin and cos only see |arguments| <= π/4 (fdlibm's sin_pi).
function sinPi(x: number): number {
  if (x > -0.25) return Math.sin(PI * x);
  let y = -x;
  if (Math.floor(y) === y) return 0;
  y = 2.0 * (y * 0.5 - Math.floor(y * 0.5)); // |x| mod 2
  const n = Math.trunc(y * 4.0);
  let s: number;
  if (n === 0) s = Math.sin(PI * y);
  else if (n <= 2) s = Math.cos(PI * (0.5 - y));
  else if (n <= 4) s = Math.sin(PI * (1.0 - y));
  else if (n <= 6) s = -Math.cos(PI * (y - 1.5));
  else s = Math.sin(PI * (y - 2.0));
  return -s;
}

/** log |Γ(x)|: +Inf at 0, at the negative integers and at ±Inf. */
export function lgamma(x: number): number {
  if (x !== x) return x;
  if (x === Infinity || x === -Infinity || x === 0) return Infinity;
  let ax = Math.abs(x);
  if (ax < 8.470329472543003e-22) return -Math.log(ax); // 2^-70
  let reflected: number = 0;
  if (x < 0) {
    if (ax >= 4503599627370496.0) return Infinity; // 2^52: every such double is an integer
    const t = sinPi(x);
    if (t === 0) return Infinity;
    reflected = Math.log(PI / Math.abs(t * x));
  }
  const tc = 1.46163214496836224576e+00; // where lgamma is least
  let r: number = 0;
  if (ax === 1 || ax === 2) r = 0;
  else if (ax < 2) {
    let y: number = 0;
    let kind: number = 0;
    if (ax < 0.9000000953674316) {
      r = -Math.log(ax);
      if (ax >= 0.7315998077392578) { y = 1.0 - ax; kind = 0; }
      else if (ax >= 0.23163998126983643) { y = ax - (tc - 1.0); kind = 1; }
      else { y = ax; kind = 2; }
    } else {
      if (ax >= 1.7316312789916992) { y = 2.0 - ax; kind = 0; }
      else if (ax >= 1.2316322326660156) { y = ax - tc; kind = 1; }
      else { y = ax - 1.0; kind = 2; }
    }
    if (kind === 0) {
      const z = y * y;
      const p1 = 7.72156649015328655494e-02 + z * (6.73523010531292681824e-02 + z * (7.38555086081402883957e-03 + z * (1.19270763183362067845e-03 + z * (2.20862790713908385557e-04 + z * 2.52144565451257326939e-05))));
      const p2 = z * (3.22467033424113591611e-01 + z * (2.05808084325167332806e-02 + z * (2.89051383673415629091e-03 + z * (5.10069792153511336608e-04 + z * (1.08011567247583939954e-04 + z * 4.48640949618915160150e-05)))));
      r += (y * p1 + p2) - 0.5 * y;
    } else if (kind === 1) {
      const z = y * y;
      const w = z * y;
      const p1 = 4.83836122723810047042e-01 + w * (-3.27885410759859649565e-02 + w * (6.10053870246291332635e-03 + w * (-1.40346469989232843813e-03 + w * 3.15632070903625950361e-04)));
      const p2 = -1.47587722994593911752e-01 + w * (1.79706750811820387126e-02 + w * (-3.68452016781138256760e-03 + w * (8.81081882437654011382e-04 + w * -3.12754168375120860518e-04)));
      const p3 = 6.46249402391333854778e-02 + w * (-1.03142241298341437450e-02 + w * (2.25964780900612472250e-03 + w * (-5.38595305356740546715e-04 + w * 3.35529192635519073543e-04)));
      const p = z * p1 - (-3.63867699703950536541e-18 - w * (p2 + y * p3));
      r += -1.21486290535849611461e-01 + p;
    } else {
      const p1 = y * (-7.72156649015328655494e-02 + y * (6.32827064025093366517e-01 + y * (1.45492250137234768737e+00 + y * (9.77717527963372745603e-01 + y * (2.28963728064692451092e-01 + y * 1.33810918536787660377e-02)))));
      const p2 = 1.0 + y * (2.45597793713041134822e+00 + y * (2.12848976379893395361e+00 + y * (7.69285150456672783825e-01 + y * (1.04222645593369134254e-01 + y * 3.21709242282423911810e-03))));
      r += -0.5 * y + p1 / p2;
    }
  } else if (ax < 8) {
    const i = Math.trunc(ax);
    const y = ax - i;
    const p = y * (-7.72156649015328655494e-02 + y * (2.14982415960608852501e-01 + y * (3.25778796408930981787e-01 + y * (1.46350472652464452805e-01 + y * (2.66422703033638609560e-02 + y * (1.84028451407337715652e-03 + y * 3.19475326584100867617e-05))))));
    const q = 1.0 + y * (1.39200533467621045958e+00 + y * (7.21935547567138069525e-01 + y * (1.71933865632803078993e-01 + y * (1.86459191715652901344e-02 + y * (7.77942496381893596434e-04 + y * 7.32668430744625636189e-06)))));
    r = 0.5 * y + p / q;
    let z: number = 1.0; // lgamma(1 + s) = log(s) + lgamma(s)
    for (let k = i - 1; k >= 2; k--) z *= y + k;
    if (i >= 3) r += Math.log(z);
  } else if (ax < 288230376151711744.0) { // 2^58
    const t = Math.log(ax);
    const z = 1.0 / ax;
    const y = z * z;
    const w = 4.18938533204672725052e-01 + z * (8.33333333333329678849e-02 + y * (-2.77777777728775536470e-03 + y * (7.93650558643019558500e-04 + y * (-5.95187557450339963135e-04 + y * (8.36339918996282139126e-04 + y * -1.63092934096575273989e-03)))));
    r = (ax - 0.5) * (t - 1.0) + w;
  } else {
    r = ax * (Math.log(ax) - 1.0);
  }
  return x < 0 ? reflected - r : r;
}

// x minus its nearest integer, in [-0.5, 0.5]: exact (Sterbenz), so the reflection formulas keep
// every digit of the distance to the pole even where 1 - x or x - floor(x) would round.
function offInteger(x: number): number {
  return x - Math.round(x);
}

/** ψ(x) = Γ'(x)/Γ(x): ∓Inf at ±0 (as -1/x), NaN at the negative integers and at -Inf. */
export function digamma(x: number): number {
  if (x !== x || x === -Infinity) return NaN;
  if (x === Infinity) return x;
  if (x === 0) return -1.0 / x;
  let result: number = 0;
  if (x <= -1) {
    // ψ(x) = ψ(1 - x) - π cot(πx), the cotangent from x itself (1 - x may round)
    const rem = offInteger(x);
    if (rem === 0) return NaN;
    result = -PI / Math.tan(PI * rem);
    x = 1.0 - x;
  }
  if (x >= 10) {
    // Asymptotic series of ψ(x) = ψ(x - 1) + 1/(x - 1)
    const w = x - 1.0;
    const z = 1.0 / (w * w);
    const series = 0.083333333333333333 + z * (-0.0083333333333333333 + z * (0.003968253968253968 + z * (-0.0041666666666666667 + z * (0.0075757575757575758 + z * (-0.021092796092796093 + z * (0.083333333333333333 + z * -0.44325980392156863))))));
    return result + ((Math.log(w) + 1.0 / (2.0 * w)) - z * series);
  }
  while (x > 2) { x -= 1.0; result += 1.0 / x; }
  while (x < 1) { result -= 1.0 / x; x += 1.0; }
  // On [1, 2]: (x - root)(Y + R(x - 1)), the positive root split in three parts
  let g = x - 1569415565.0 / 1073741824.0;
  g -= (381566830.0 / 1073741824.0) / 1073741824.0;
  g -= 0.9016312093258695918615325266959189453125e-19;
  const t = x - 1.0;
  const p = 0.25479851061131551 + t * (-0.32555031186804491 + t * (-0.65031853770896507 + t * (-0.28919126444774784 + t * (-0.045251321448739056 + t * -0.0020713321167745952))));
  const q = 1.0 + t * (2.0767117023730469 + t * (1.4606242909763515 + t * (0.43593529692665969 + t * (0.054151797245674225 + t * (0.0021284987017821144 + t * -0.55789841321675513e-6)))));
  return result + (g * 0.99558162689208984 + g * (p / q));
}

/** ψ'(x), for the derivative of digamma: +Inf at 0 and the negative integers. */
export function trigamma(x: number): number {
  if (x !== x || x === -Infinity) return NaN;
  if (x <= 0 && Math.floor(x) === x) return Infinity;
  if (x < 0) {
    // ψ'(x) = π²/sin²(πx) - ψ'(1 - x)
    const t = PI / Math.sin(PI * offInteger(x));
    return t * t - trigammaPositive(1.0 - x);
  }
  return trigammaPositive(x);
}

function trigammaPositive(x: number): number {
  let acc: number = 0;
  while (x < 10) { acc += 1.0 / (x * x); x += 1.0; }
  const z = 1.0 / x;
  const z2 = z * z;
  return acc + (z + z2 * 0.5 + z * z2 * (1.0 / 6.0 - z2 * (1.0 / 30.0 - z2 * (1.0 / 42.0 - z2 * (1.0 / 30.0 - z2 * (5.0 / 66.0 - z2 * (691.0 / 2730.0 - z2 * (7.0 / 6.0))))))));
}

/** ψ''(x), for the second-order rule of digamma: ∓Inf at ±0, NaN at the negative integers. */
export function tetragamma(x: number): number {
  if (x !== x || x === -Infinity) return NaN;
  if (x === 0) return -2.0 / (x * x * x);
  if (x < 0) {
    const rem = offInteger(x);
    if (rem === 0) return NaN;
    // ψ''(x) = ψ''(1 - x) - 2π³ cot(πx)/sin²(πx)
    // cos(πr) as sin(π(1/2 − |r|)) from |r| = 1/4 (cos(π/2) is not 0: see the core).
    const s = Math.sin(PI * rem), a = Math.abs(rem);
    const c = a > 0.25 ? Math.sin(PI * (0.5 - a)) : Math.cos(PI * rem);
    return tetragammaPositive(1.0 - x) - 2.0 * PI * PI * PI * c / (s * s * s);
  }
  return tetragammaPositive(x);
}

function tetragammaPositive(x: number): number {
  let acc: number = 0;
  while (x < 10) { acc -= 2.0 / (x * x * x); x += 1.0; }
  const z = 1.0 / x;
  const z2 = z * z;
  return acc - z2 * (1.0 + z + z2 * (0.5 - z2 * (1.0 / 6.0 - z2 * (1.0 / 6.0 - z2 * (3.0 / 10.0 - z2 * (5.0 / 6.0 - z2 * (691.0 / 210.0 - z2 * 17.5)))))));
}
