// The pure-JS twin of assembly/ops.ts: the same forward rules and local partials, op for op, in
// the same order, with the same numerics (DESIGN.md section 4). Notes on each rule live there.
import { Op, ZERO_GRADIENT } from '../ops.ts';
import * as special from './special.ts';

const {
  add, sub, mul, div, neg, recip, square, sqrt, cbrt, pow, powConst, exp, expm1, log, log1p, log2,
  log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh, abs, min,
  max, hypot, sigmoid, softplus, relu, floor, ceil, round, sign, stopGradient, lt, le, gt, ge, eq,
  select, erf, erfc, normCdf, normLogCdf, ndtri, lgamma, digamma,
} = Op;

const LN2 = 0.6931471805599453;
const LN10 = 2.302585092994046;

export function truthy(c: number): boolean {
  return c !== 0 && c === c;
}

/** Whether op passes no gradient and no tangent (ZERO_GRADIENT_OPS). */
export function zeroGradient(op: number): boolean {
  return ZERO_GRADIENT[op] === 1;
}

function sgn(x: number): number {
  return x > 0 ? 1 : x < 0 ? -1 : x * 0;
}

function powBaseDerivative(x: number, z: number): number {
  if (z === 0) return 0;
  // As in the core: a non-integer z whose z - 1 rounds to -1, and x^(z-1) overflowing where the
  // product is finite.
  if (z !== Math.floor(z)) {
    if (x < 0) return NaN;
    if (x === 0) x = 0;
  }
  if (Math.abs(z) >= 9007199254740992 && Number.isFinite(z) && x < 0 && x > -Infinity) {
    const p = Math.pow(x, z);
    return p === 0 || p === Infinity ? -(z * p) : z / x * p;
  }
  const p = Math.pow(x, z - 1);
  if (p === Infinity && x > 0) {
    const r = z / x * Math.pow(x, z);
    if (Number.isFinite(r)) return r;
  }
  return z * p;
}

// z(z-1)x^(z-2), as powSecondDerivative in assembly/ops.ts.
function powSecondDerivative(x: number, z: number): number {
  if (x !== x || (x < 0 && z !== Math.floor(z))) return NaN;
  if (x < 0 && Math.abs(z) >= 9007199254740992) x = -x; // see the core
  return x !== 0 && Math.abs(x) < 1 && z < 2 ? z * ((z - 1) * Math.pow(x, z - 1)) / x : z * ((z - 1) * Math.pow(x, z - 2));
}

// As assembly/ops.ts: 0 at x = 0 (the numerics policy) and where y = 0.
function powExponentDerivative(x: number, y: number): number {
  return x === 0 || y === 0 ? 0 : y * Math.log(x);
}

// As assembly/ops.ts: the mixed second partial's limit at x = 0 (z !== 0).
function powMixedAtZero(z: number): number {
  const xz1 = Math.pow(0, z - 1);
  return xz1 === 0 ? 0 : xz1 * (1 + z * Math.log(0));
}

function pickFirst(x: number, z: number, firstWins: boolean): number {
  return firstWins ? 1 : x === z ? 0.5 : x !== x || z !== z ? NaN : 0;
}

function sigmoidOf(x: number): number {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

function softplusOf(x: number): number {
  return Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));
}

/** The rules' operands and results: the sweeps pass a rule its numbers here, and the rule writes
 *  its result here. A double passed to or returned from a function V8 does not inline is a heap
 *  number each time: the JS engine's sweeps allocated about 100 bytes per transcendental node
 *  (56 collections of a 1 MB young generation in 40 forward sweeps of a 70,000-node chain, 66 in
 *  40 reverse sweeps; and the one allocation of a handle gradient, a probe found). The exported
 *  functions below are small enough to inline and move their numbers through these. */
const reg = new Float64Array(7);
const X = 0, Z = 1, Y = 2, TX = 3, TZ = 4, TY = 5, OUT = 6;

export function forwardRule(op: number, x: number, z: number, w: number): number {
  reg[X] = x;
  reg[Z] = z;
  reg[Y] = w;
  forwardOf(op);
  return reg[OUT]!;
}

function forwardOf(op: number): void {
  const x = reg[X]!, z = reg[Z]!, w = reg[Y]!;
  let result = 0;
  switch (op) {
    case add: { result = x + z; break; }
    case sub: { result = x - z; break; }
    case mul: { result = x * z; break; }
    case div: { result = x / z; break; }
    case neg: { result = -x; break; }
    case recip: { result = 1 / x; break; }
    case square: { result = x * x; break; }
    case sqrt: { result = Math.sqrt(x); break; }
    case cbrt: { result = Math.cbrt(x); break; }
    case pow: { result = Math.pow(x, z); break; }
    case powConst: { result = Math.pow(x, z); break; }
    case exp: { result = Math.exp(x); break; }
    case expm1: { result = Math.expm1(x); break; }
    case log: { result = Math.log(x); break; }
    case log1p: { result = Math.log1p(x); break; }
    case log2: { result = Math.log2(x); break; }
    case log10: { result = Math.log10(x); break; }
    case sin: { result = Math.sin(x); break; }
    case cos: { result = Math.cos(x); break; }
    case tan: { result = Math.tan(x); break; }
    case asin: { result = Math.asin(x); break; }
    case acos: { result = Math.acos(x); break; }
    case atan: { result = Math.atan(x); break; }
    case atan2: { result = Math.atan2(x, z); break; }
    case sinh: { result = Math.sinh(x); break; }
    case cosh: { result = Math.cosh(x); break; }
    case tanh: { result = Math.tanh(x); break; }
    case asinh: { result = Math.asinh(x); break; }
    case acosh: { result = Math.acosh(x); break; }
    case atanh: { result = Math.atanh(x); break; }
    case abs: { result = Math.abs(x); break; }
    case min: { result = Math.min(x, z); break; }
    case max: { result = Math.max(x, z); break; }
    case hypot: { result = Math.hypot(x, z); break; }
    case sigmoid: { result = sigmoidOf(x); break; }
    case softplus: { result = softplusOf(x); break; }
    case relu: { result = Math.max(x, 0); break; }
    case floor: { result = Math.floor(x); break; }
    case ceil: { result = Math.ceil(x); break; }
    case round: { result = Math.round(x); break; }
    case sign: { result = Math.sign(x); break; }
    case stopGradient: { result = x; break; }
    case lt: { result = x < z ? 1 : 0; break; }
    case le: { result = x <= z ? 1 : 0; break; }
    case gt: { result = x > z ? 1 : 0; break; }
    case ge: { result = x >= z ? 1 : 0; break; }
    case eq: { result = x === z ? 1 : 0; break; }
    case select: { result = truthy(x) ? z : w; break; }
    case erf: { result = special.erf(x); break; }
    case erfc: { result = special.erfc(x); break; }
    case normCdf: { result = special.normCdf(x); break; }
    case normLogCdf: { result = special.normLogCdf(x); break; }
    case ndtri: { result = special.ndtri(x); break; }
    case lgamma: { result = special.lgamma(x); break; }
    case digamma: { result = special.digamma(x); break; }
  }
  reg[OUT] = result;
}

/** d/dz of the last `partials` call (a typed slot: no allocation per call). */
export const partialZ = new Float64Array(1);

export function partials(op: number, x: number, z: number, y: number): number {
  reg[X] = x;
  reg[Z] = z;
  reg[Y] = y;
  partialsOf(op);
  return reg[OUT]!;
}

function partialsOf(op: number): void {
  const x = reg[X]!, z = reg[Z]!, y = reg[Y]!;
  partialZ[0] = 0;
  let result = 0;
  switch (op) {
    case add: partialZ[0] = 1; { result = 1; break; }
    case sub: partialZ[0] = -1; { result = 1; break; }
    case mul: partialZ[0] = x; { result = z; break; }
    case div:
      if (y !== y) { partialZ[0] = NaN; { result = NaN; break; } }
      partialZ[0] = -y / z;
      { result = 1 / z; break; }
    case neg: { result = -1; break; }
    case recip: { result = -y * y; break; }
    case square: { result = 2 * x; break; }
    case sqrt: { result = 0.5 / Math.abs(y); break; }
    case cbrt: { result = 1 / (3 * y * y); break; }
    case pow: partialZ[0] = powExponentDerivative(x, y); { result = powBaseDerivative(x, z); break; }
    case powConst: { result = powBaseDerivative(x, z); break; }
    case exp: { result = y; break; }
    case expm1: { result = y > -0.5 ? y + 1 : Math.exp(x); break; } // y + 1 cancels as y nears -1
    case log: { result = x > 0 ? 1 / x : x === 0 ? Infinity : NaN; break; }
    case log1p: { result = x > -1 ? 1 / (1 + x) : x === -1 ? Infinity : NaN; break; }
    case log2: { result = x > 0 ? 1 / x / LN2 : x === 0 ? Infinity : NaN; break; }
    case log10: { result = x > 0 ? 1 / x / LN10 : x === 0 ? Infinity : NaN; break; }
    case sin: { result = Math.cos(x); break; }
    case cos: { result = -Math.sin(x); break; }
    case tan: { result = 1 + y * y; break; }
    case asin: { result = 1 / Math.sqrt((1 - x) * (1 + x)); break; }
    case acos: { result = -1 / Math.sqrt((1 - x) * (1 + x)); break; }
    case atan: { result = 1 / (1 + x * x); break; }
    case atan2: {
      const h = Math.hypot(x, z);
      // As in the core: one operand infinite, both partials 0 (Infinity / Infinity was NaN).
      if (h === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(x) ? -x / h / h : 0;
        { result = Number.isFinite(z) ? z / h / h : 0; break; }
      }
      partialZ[0] = -x / h / h;
      { result = z / h / h; break; }
    }
    case sinh: { result = Math.cosh(x); break; }
    case cosh: { result = Math.sinh(x); break; }
    case tanh: {
      if (Math.abs(y) < 0.5) { result = 1 - y * y; break; }
      const c = Math.cosh(x); // 1 - y² cancels as |y| nears 1
      { result = 1 / (c * c); break; }
    }
    case asinh: { result = 1 / Math.hypot(x, 1); break; }
    case acosh: { result = x >= 1 ? 1 / (Math.sqrt(x - 1) * Math.sqrt(x + 1)) : NaN; break; }
    case atanh: { result = Math.abs(x) <= 1 ? 1 / ((1 - x) * (1 + x)) : NaN; break; }
    case abs: { result = sgn(x); break; }
    case min: partialZ[0] = pickFirst(z, x, z < x); { result = pickFirst(x, z, x < z); break; }
    case max: partialZ[0] = pickFirst(z, x, z > x); { result = pickFirst(x, z, x > z); break; }
    case hypot: {
      if (y === 0) { result = 0; break; }
      // As in the core: one operand infinite, its partial its sign and the other's 0.
      if (y === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(z) ? z / y : Math.sign(z);
        { result = Number.isFinite(x) ? x / y : Math.sign(x); break; }
      }
      if (y < 2.2250738585072014e-308) {
        const xs = x * 4.149515568880993e180, zs = z * 4.149515568880993e180, r = Math.hypot(xs, zs);
        partialZ[0] = zs / r;
        { result = xs / r; break; }
      }
      partialZ[0] = z / y;
      { result = x / y; break; }
    }
    case sigmoid: { result = y < 0.5 ? y * (1 - y) : y * sigmoidOf(-x); break; } // 1 - y cancels as y nears 1
    case softplus: { result = -Math.expm1(-y); break; }
    case relu: { result = x > 0 ? 1 : x === x ? 0 : NaN; break; }
    case erf: { result = special.erfDerivative(x); break; }
    case erfc: { result = -special.erfDerivative(x); break; }
    case normCdf: { result = special.normPdf(x); break; }
    case normLogCdf: { result = special.normLogCdfDerivative(x, y); break; }
    case ndtri: { result = special.ndtriDerivative(y); break; }
    case lgamma: { result = special.digamma(x); break; }
    case digamma: { result = y === y ? special.trigamma(x) : NaN; break; }
  }
  reg[OUT] = result;
}

/** d(pb)/dt of the last `partialsTangent` call. */
export const partialZTangent = new Float64Array(1);

export function partialsTangent(op: number, x: number, z: number, y: number, tx: number, tz: number, ty: number): number {
  reg[X] = x;
  reg[Z] = z;
  reg[Y] = y;
  reg[TX] = tx;
  reg[TZ] = tz;
  reg[TY] = ty;
  partialsTangentOf(op);
  return reg[OUT]!;
}

function partialsTangentOf(op: number): void {
  const x = reg[X]!, z = reg[Z]!, y = reg[Y]!, tx = reg[TX]!, tz = reg[TZ]!, ty = reg[TY]!;
  partialZTangent[0] = 0;
  // A zero tangent adds nothing (see partialsTangent in assembly/ops.ts).
  if (tx === 0 && tz === 0) { reg[OUT] = 0; return; }
  let result = 0;
  switch (op) {
    case mul: partialZTangent[0] = tx; { result = tz; break; }
    // As in the core: divided by z twice, not by z·z, which underflows below 1e-162.
    // y·tz/z left out where tz is 0 (see the core).
    case div: partialZTangent[0] = ((tz === 0 ? 0 : y * tz / z) - ty) / z; { result = y !== y ? NaN : tz === 0 ? 0 : -tz / z / z; break; }
    case recip: { result = -2 * y * ty; break; }
    case square: { result = 2 * tx; break; }
    case sqrt: { result = -0.5 * ty / (y * y); break; }
    case cbrt: { result = -2 * ty / (3 * y * y * y); break; }
    case pow: {
      // As in the core: NaN outside the domain, every second partial.
      if (x < 0 && z !== Math.floor(z)) {
        partialZTangent[0] = NaN;
        { result = NaN; break; }
      }
      if (x === 0 && z !== 0) {
        const mixed = powMixedAtZero(z);
        partialZTangent[0] = tx === 0 ? 0 : tx * mixed;
        { result = (tz === 0 ? 0 : tz * mixed) + (tx === 0 || z === 1 ? 0 : tx * (z * ((z - 1) * Math.pow(x, z - 2)))); break; }
      }
      // Below 0 every second partial with z in it NaN, as the partial in z (see the core).
      if (x < 0) {
        partialZTangent[0] = tx !== 0 || tz !== 0 ? NaN : 0;
        { result = (tz === 0 ? 0 : NaN) + (tx === 0 || z === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z)); break; }
      }
      // y/x as x^(z-1) (see the core).
      const xz1 = z === 0 ? 1 / x : Math.pow(x, z - 1);
      partialZTangent[0] = (ty === 0 ? 0 : ty * Math.log(x)) + (tx === 0 ? 0 : tx * xz1);
      if (z === 0) { result = tz === 0 ? 0 : tz / x; break; }
      const mixed = xz1 === 0 && Number.isFinite(z) ? 0 : xz1 + z * xz1 * Math.log(x);
      { result = (tz === 0 ? 0 : tz * (mixed === mixed ? mixed : xz1 * (1 + z * Math.log(x)))) + (tx === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z)); break; }
    }
    // See powConst in assembly/ops.ts.
    case powConst: { result = z === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z); break; }
    case exp: { result = ty; break; }
    case expm1: { result = ty; break; }
    // Outside the domain NaN, as the first partial is (the formulas alone are finite there), but
    // 0 along a zero tangent, as the tangent sweep adds nothing for one: a NaN element of a vector
    // leaves the Hessian's cross terms with the others 0, as the gradient keeps theirs.
    case log: { result = tx === 0 ? 0 : x >= 0 ? -tx / (x * x) : NaN; break; }
    case log1p: { result = tx === 0 ? 0 : x >= -1 ? -tx / ((1 + x) * (1 + x)) : NaN; break; }
    case log2: { result = tx === 0 ? 0 : x >= 0 ? -tx / (x * x * LN2) : NaN; break; }
    case log10: { result = tx === 0 ? 0 : x >= 0 ? -tx / (x * x * LN10) : NaN; break; }
    // As in the core: the node's own value y is sin x (cos x), no second evaluation.
    case sin: { result = -tx * y; break; }
    case cos: { result = -tx * y; break; }
    case tan: { result = 2 * y * ty; break; }
    case asin: { const u = (1 - x) * (1 + x); { result = tx * x / (u * Math.sqrt(u)); break; } }
    case acos: { const u = (1 - x) * (1 + x); { result = -tx * x / (u * Math.sqrt(u)); break; } }
    // Where the denominator overflows the second derivative is a zero (its limit), never NaN
    // from Infinity / Infinity: -sign(x)·tx·0 keeps the sign the formula's underflow gives.
    // Far out (|x| past 1e38, 1e50) in units of 1/x: (1 + x²)² overflowed from |x| = 1.2e77, and the
    // limit 0 stood in where the true value is a normal double up to 2e102 (asinh, acosh: from
    // 5.6e102, normal up to 6.7e153; a probe). Nearer in the formulas stay as they were.
    case atan: {
      if (Math.abs(x) > 1e38) { const r = 1 / x, q = 1 + r * r; { result = -2 * r * r * r * tx / (q * q); break; } }
      const u = 1 + x * x, d = u * u; { result = d === Infinity ? -Math.sign(x) * tx * 0 : -2 * x * tx / d; break; }
    }
    case atan2: {
      // In units of h = hypot(x, z), as the first partials: x^2 + z^2 overflowed from |x| near
      // 1e154 (a NaN Hessian where the gradient is finite) and underflowed below 1e-154.
      // Written with u² + w² = 1, and w² − u² as a product whose cancelling factor comes from the
      // operands, so that nothing cancels (see the core).
      const h = Math.hypot(x, z), far = h === Infinity && (Number.isFinite(x) || Number.isFinite(z));
      const u = far && !Number.isFinite(x) ? Math.sign(x) : x / h, w = far && !Number.isFinite(z) ? Math.sign(z) : z / h;
      const same = (x < 0) === (z < 0);
      const c = 2 * u * w, d = far ? (w - u) * (w + u) : same ? ((z - x) / h) * (w + u) : (w - u) * ((z + x) / h);
      partialZTangent[0] = (c * tz - d * tx) / h / h;
      { result = -(d * tz + c * tx) / h / h; break; }
    }
    case sinh: { result = tx * Math.sinh(x); break; }
    case cosh: { result = tx * Math.cosh(x); break; }
    case tanh: { result = -2 * y * ty; break; }
    case asinh: {
      if (Math.abs(x) > 1e50) { const r = 1 / x, q = 1 + r * r; { result = -Math.sign(x) * r * r * tx / (q * Math.sqrt(q)); break; } }
      const u = x * x + 1, d = u * Math.sqrt(u); { result = d === Infinity ? -Math.sign(x) * tx * 0 : -x * tx / d; break; }
    }
    case acosh: {
      if (x > 1e50) { const r = 1 / x, q = (1 - r) * (1 + r); { result = -r * r * tx / (q * Math.sqrt(q)); break; } }
      const u = (x - 1) * (x + 1), d = u * Math.sqrt(u); { result = x >= 1 ? (d === Infinity ? -tx * 0 : -x * tx / d) : tx === 0 ? 0 : NaN; break; }
    }
    case atanh: { const u = (1 - x) * (1 + x); { result = Math.abs(x) <= 1 ? 2 * x * tx / (u * u) : tx === 0 ? 0 : NaN; break; } }
    case hypot: {
      if (y === 0) { result = 0; break; }
      // As in the core: in units of y (y·y overflowed past 1e154 and underflowed below 1e-162), an
      // infinite operand's unit component its sign.
      // d(x/y) as w·(w·tx − u·tz)/y, which does not cancel where |z| ≪ |x| (see the core).
      // Divided by a normal y before the second factor (see the core).
      const far = y === Infinity && (Number.isFinite(x) || Number.isFinite(z));
      const u = far && !Number.isFinite(x) ? Math.sign(x) : x / y, w = far && !Number.isFinite(z) ? Math.sign(z) : z / y;
      if (y < 2.2250738585072014e-308) {
        const xs = x * 4.149515568880993e180, zs = z * 4.149515568880993e180, r = Math.hypot(xs, zs), us = xs / r, ws = zs / r;
        partialZTangent[0] = us * (us * tz - ws * tx) * 4.149515568880993e180 / r;
        { result = ws * (ws * tx - us * tz) * 4.149515568880993e180 / r; break; }
      }
      partialZTangent[0] = u * ((u * tz - w * tx) / y);
      { result = w * ((w * tx - u * tz) / y); break; }
    }
    // 1 - 2y as -tanh(x/2): with y near 1/2 the subtraction left only y's rounding (100% off at
    // x = 1e-16: a probe).
    case sigmoid: { result = ty * -Math.tanh(0.5 * x); break; }
    case softplus: { result = ty * Math.exp(-y); break; }
    case erf: { const d = special.erfDerivative(x); { result = d === 0 ? 0 : -2 * x * d * tx; break; } }
    case erfc: { const d = special.erfDerivative(x); { result = d === 0 ? 0 : 2 * x * d * tx; break; } }
    case normCdf: { const d = special.normPdf(x); { result = d === 0 ? 0 : -x * d * tx; break; } }
    case normLogCdf: { const d = special.normLogCdfDerivative(x, y); { result = d === 0 ? 0 : special.normLogCdfSecond(x, d) * tx; break; } }
    case ndtri: { const d = special.ndtriDerivative(y); { result = tx === 0 ? 0 : y * d * d * tx; break; } }
    case lgamma: { result = tx === 0 ? 0 : special.trigamma(x) * tx; break; }
    case digamma: { result = tx === 0 ? 0 : special.tetragamma(x) * tx; break; }
  }
  reg[OUT] = result;
}
