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
  const p = Math.pow(x, z - 1);
  if (p === Infinity && x > 0) {
    const r = z / x * Math.pow(x, z);
    if (Number.isFinite(r)) return r;
  }
  return z * p;
}

// z(z-1)x^(z-2), as powSecondDerivative in assembly/ops.ts.
function powSecondDerivative(x: number, z: number): number {
  return x === 0 || Math.abs(x) >= 1 ? z * ((z - 1) * Math.pow(x, z - 2)) : z * ((z - 1) * Math.pow(x, z - 1)) / x;
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

export function forwardRule(op: number, x: number, z: number, w: number): number {
  switch (op) {
    case add: return x + z;
    case sub: return x - z;
    case mul: return x * z;
    case div: return x / z;
    case neg: return -x;
    case recip: return 1 / x;
    case square: return x * x;
    case sqrt: return Math.sqrt(x);
    case cbrt: return Math.cbrt(x);
    case pow: return Math.pow(x, z);
    case powConst: return Math.pow(x, z);
    case exp: return Math.exp(x);
    case expm1: return Math.expm1(x);
    case log: return Math.log(x);
    case log1p: return Math.log1p(x);
    case log2: return Math.log2(x);
    case log10: return Math.log10(x);
    case sin: return Math.sin(x);
    case cos: return Math.cos(x);
    case tan: return Math.tan(x);
    case asin: return Math.asin(x);
    case acos: return Math.acos(x);
    case atan: return Math.atan(x);
    case atan2: return Math.atan2(x, z);
    case sinh: return Math.sinh(x);
    case cosh: return Math.cosh(x);
    case tanh: return Math.tanh(x);
    case asinh: return Math.asinh(x);
    case acosh: return Math.acosh(x);
    case atanh: return Math.atanh(x);
    case abs: return Math.abs(x);
    case min: return Math.min(x, z);
    case max: return Math.max(x, z);
    case hypot: return Math.hypot(x, z);
    case sigmoid: return sigmoidOf(x);
    case softplus: return softplusOf(x);
    case relu: return Math.max(x, 0);
    case floor: return Math.floor(x);
    case ceil: return Math.ceil(x);
    case round: return Math.round(x);
    case sign: return Math.sign(x);
    case stopGradient: return x;
    case lt: return x < z ? 1 : 0;
    case le: return x <= z ? 1 : 0;
    case gt: return x > z ? 1 : 0;
    case ge: return x >= z ? 1 : 0;
    case eq: return x === z ? 1 : 0;
    case select: return truthy(x) ? z : w;
    case erf: return special.erf(x);
    case erfc: return special.erfc(x);
    case normCdf: return special.normCdf(x);
    case normLogCdf: return special.normLogCdf(x);
    case ndtri: return special.ndtri(x);
    case lgamma: return special.lgamma(x);
    case digamma: return special.digamma(x);
  }
  return 0;
}

/** d/dz of the last `partials` call (a typed slot: no allocation per call). */
export const partialZ = new Float64Array(1);

export function partials(op: number, x: number, z: number, y: number): number {
  partialZ[0] = 0;
  switch (op) {
    case add: partialZ[0] = 1; return 1;
    case sub: partialZ[0] = -1; return 1;
    case mul: partialZ[0] = x; return z;
    case div:
      if (y !== y) { partialZ[0] = NaN; return NaN; }
      partialZ[0] = -y / z;
      return 1 / z;
    case neg: return -1;
    case recip: return -y * y;
    case square: return 2 * x;
    case sqrt: return 0.5 / Math.abs(y);
    case cbrt: return 1 / (3 * y * y);
    case pow: partialZ[0] = powExponentDerivative(x, y); return powBaseDerivative(x, z);
    case powConst: return powBaseDerivative(x, z);
    case exp: return y;
    case expm1: return y > -0.5 ? y + 1 : Math.exp(x); // y + 1 cancels as y nears -1
    case log: return x > 0 ? 1 / x : x === 0 ? Infinity : NaN;
    case log1p: return x > -1 ? 1 / (1 + x) : x === -1 ? Infinity : NaN;
    case log2: return x > 0 ? 1 / x / LN2 : x === 0 ? Infinity : NaN;
    case log10: return x > 0 ? 1 / x / LN10 : x === 0 ? Infinity : NaN;
    case sin: return Math.cos(x);
    case cos: return -Math.sin(x);
    case tan: return 1 + y * y;
    case asin: return 1 / Math.sqrt((1 - x) * (1 + x));
    case acos: return -1 / Math.sqrt((1 - x) * (1 + x));
    case atan: return 1 / (1 + x * x);
    case atan2: {
      const h = Math.hypot(x, z);
      // As in the core: one operand infinite, both partials 0 (Infinity / Infinity was NaN).
      if (h === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(x) ? -x / h / h : 0;
        return Number.isFinite(z) ? z / h / h : 0;
      }
      partialZ[0] = -x / h / h;
      return z / h / h;
    }
    case sinh: return Math.cosh(x);
    case cosh: return Math.sinh(x);
    case tanh: {
      if (Math.abs(y) < 0.5) return 1 - y * y;
      const c = Math.cosh(x); // 1 - y² cancels as |y| nears 1
      return 1 / (c * c);
    }
    case asinh: return 1 / Math.hypot(x, 1);
    case acosh: return x >= 1 ? 1 / (Math.sqrt(x - 1) * Math.sqrt(x + 1)) : NaN;
    case atanh: return Math.abs(x) <= 1 ? 1 / ((1 - x) * (1 + x)) : NaN;
    case abs: return sgn(x);
    case min: partialZ[0] = pickFirst(z, x, z < x); return pickFirst(x, z, x < z);
    case max: partialZ[0] = pickFirst(z, x, z > x); return pickFirst(x, z, x > z);
    case hypot: {
      if (y === 0) return 0;
      // As in the core: one operand infinite, its partial its sign and the other's 0.
      if (y === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(z) ? z / y : Math.sign(z);
        return Number.isFinite(x) ? x / y : Math.sign(x);
      }
      partialZ[0] = z / y;
      return x / y;
    }
    case sigmoid: return y < 0.5 ? y * (1 - y) : y * sigmoidOf(-x); // 1 - y cancels as y nears 1
    case softplus: return -Math.expm1(-y);
    case relu: return x > 0 ? 1 : x === x ? 0 : NaN;
    case erf: return special.erfDerivative(x);
    case erfc: return -special.erfDerivative(x);
    case normCdf: return special.normPdf(x);
    case normLogCdf: return special.normLogCdfDerivative(x, y);
    case ndtri: return special.ndtriDerivative(y);
    case lgamma: return special.digamma(x);
    case digamma: return y === y ? special.trigamma(x) : NaN;
  }
  return 0;
}

/** d(pb)/dt of the last `partialsTangent` call. */
export const partialZTangent = new Float64Array(1);

export function partialsTangent(op: number, x: number, z: number, y: number, tx: number, tz: number, ty: number): number {
  partialZTangent[0] = 0;
  // A zero tangent adds nothing (see partialsTangent in assembly/ops.ts).
  if (tx === 0 && tz === 0) return 0;
  switch (op) {
    case mul: partialZTangent[0] = tx; return tz;
    // As in the core: divided by z twice, not by z·z, which underflows below 1e-162.
    // y·tz/z left out where tz is 0 (see the core).
    case div: partialZTangent[0] = ((tz === 0 ? 0 : y * tz / z) - ty) / z; return y !== y ? NaN : tz === 0 ? 0 : -tz / z / z;
    case recip: return -2 * y * ty;
    case square: return 2 * tx;
    case sqrt: return -0.5 * ty / (y * y);
    case cbrt: return -2 * ty / (3 * y * y * y);
    case pow: {
      if (x === 0 && z !== 0) {
        const mixed = powMixedAtZero(z);
        partialZTangent[0] = tx === 0 ? 0 : tx * mixed;
        return (tz === 0 ? 0 : tz * mixed) + (tx === 0 || z === 1 ? 0 : tx * (z * ((z - 1) * Math.pow(x, z - 2))));
      }
      // y/x as x^(z-1) (see the core).
      const xz1 = z === 0 ? 1 / x : Math.pow(x, z - 1);
      partialZTangent[0] = (ty === 0 ? 0 : ty * Math.log(x)) + (tx === 0 ? 0 : tx * xz1);
      if (z === 0) return tz === 0 ? 0 : tz / x;
      return (tz === 0 || xz1 === 0 ? 0 : tz * (xz1 + z * xz1 * Math.log(x))) + (tx === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z));
    }
    // See powConst in assembly/ops.ts.
    case powConst: return z === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z);
    case exp: return ty;
    case expm1: return ty;
    // Outside the domain NaN, as the first partial is (the formulas alone are finite there), but
    // 0 along a zero tangent, as the tangent sweep adds nothing for one: a NaN element of a vector
    // leaves the Hessian's cross terms with the others 0, as the gradient keeps theirs.
    case log: return tx === 0 ? 0 : x >= 0 ? -tx / (x * x) : NaN;
    case log1p: return tx === 0 ? 0 : x >= -1 ? -tx / ((1 + x) * (1 + x)) : NaN;
    case log2: return tx === 0 ? 0 : x >= 0 ? -tx / (x * x * LN2) : NaN;
    case log10: return tx === 0 ? 0 : x >= 0 ? -tx / (x * x * LN10) : NaN;
    // As in the core: the node's own value y is sin x (cos x), no second evaluation.
    case sin: return -tx * y;
    case cos: return -tx * y;
    case tan: return 2 * y * ty;
    case asin: { const u = (1 - x) * (1 + x); return tx * x / (u * Math.sqrt(u)); }
    case acos: { const u = (1 - x) * (1 + x); return -tx * x / (u * Math.sqrt(u)); }
    // Where the denominator overflows the second derivative is a zero (its limit), never NaN
    // from Infinity / Infinity: -sign(x)·tx·0 keeps the sign the formula's underflow gives.
    // Far out (|x| past 1e38, 1e50) in units of 1/x: (1 + x²)² overflowed from |x| = 1.2e77, and the
    // limit 0 stood in where the true value is a normal double up to 2e102 (asinh, acosh: from
    // 5.6e102, normal up to 6.7e153; a probe). Nearer in the formulas stay as they were.
    case atan: {
      if (Math.abs(x) > 1e38) { const r = 1 / x, q = 1 + r * r; return -2 * r * r * r * tx / (q * q); }
      const u = 1 + x * x, d = u * u; return d === Infinity ? -Math.sign(x) * tx * 0 : -2 * x * tx / d;
    }
    case atan2: {
      // In units of h = hypot(x, z), as the first partials: x^2 + z^2 overflowed from |x| near
      // 1e154 (a NaN Hessian where the gradient is finite) and underflowed below 1e-154.
      // Written with u² + w² = 1, so that nothing cancels (see the core).
      const h = Math.hypot(x, z), far = h === Infinity && (Number.isFinite(x) || Number.isFinite(z));
      const u = far && !Number.isFinite(x) ? Math.sign(x) : x / h, w = far && !Number.isFinite(z) ? Math.sign(z) : z / h;
      const c = 2 * u * w, d = w * w - u * u;
      partialZTangent[0] = (c * tz - d * tx) / h / h;
      return -(d * tz + c * tx) / h / h;
    }
    case sinh: return tx * Math.sinh(x);
    case cosh: return tx * Math.cosh(x);
    case tanh: return -2 * y * ty;
    case asinh: {
      if (Math.abs(x) > 1e50) { const r = 1 / x, q = 1 + r * r; return -Math.sign(x) * r * r * tx / (q * Math.sqrt(q)); }
      const u = x * x + 1, d = u * Math.sqrt(u); return d === Infinity ? -Math.sign(x) * tx * 0 : -x * tx / d;
    }
    case acosh: {
      if (x > 1e50) { const r = 1 / x, q = (1 - r) * (1 + r); return -r * r * tx / (q * Math.sqrt(q)); }
      const u = (x - 1) * (x + 1), d = u * Math.sqrt(u); return x >= 1 ? (d === Infinity ? -tx * 0 : -x * tx / d) : tx === 0 ? 0 : NaN;
    }
    case atanh: { const u = (1 - x) * (1 + x); return Math.abs(x) <= 1 ? 2 * x * tx / (u * u) : tx === 0 ? 0 : NaN; }
    case hypot: {
      if (y === 0) return 0;
      // As in the core: in units of y (y·y overflowed past 1e154 and underflowed below 1e-162), an
      // infinite operand's unit component its sign.
      const far = y === Infinity && (Number.isFinite(x) || Number.isFinite(z));
      partialZTangent[0] = (tz - (far && !Number.isFinite(z) ? Math.sign(z) : z / y) * ty) / y;
      return (tx - (far && !Number.isFinite(x) ? Math.sign(x) : x / y) * ty) / y;
    }
    // 1 - 2y as -tanh(x/2): with y near 1/2 the subtraction left only y's rounding (100% off at
    // x = 1e-16: a probe).
    case sigmoid: return ty * -Math.tanh(0.5 * x);
    case softplus: return ty * Math.exp(-y);
    case erf: { const d = special.erfDerivative(x); return d === 0 ? 0 : -2 * x * d * tx; }
    case erfc: { const d = special.erfDerivative(x); return d === 0 ? 0 : 2 * x * d * tx; }
    case normCdf: { const d = special.normPdf(x); return d === 0 ? 0 : -x * d * tx; }
    case normLogCdf: { const d = special.normLogCdfDerivative(x, y); return d === 0 ? 0 : special.normLogCdfSecond(x, d) * tx; }
    case ndtri: { const d = special.ndtriDerivative(y); return tx === 0 ? 0 : y * d * d * tx; }
    case lgamma: return tx === 0 ? 0 : special.trigamma(x) * tx;
    case digamma: return tx === 0 ? 0 : special.tetragamma(x) * tx;
  }
  return 0;
}
