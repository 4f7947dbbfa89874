// The pure-JS twin of assembly/ops.ts: the same forward rules and local partials, op for op, in
// the same order, with the same numerics (DESIGN.md section 4). Notes on each rule live there.
import { Op, OP_TABLE, ZERO_GRADIENT } from '../ops.ts';
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

export function sgn(x: number): number {
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
  if (Math.abs(z) >= 9007199254740992 && Number.isFinite(z) && x < 0) {
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
// As the core's: hypot's partials (or atan2's) from the operands scaled by a power of two, where
// the radius is subnormal (2^600) or past the doubles (2^-600); the x partial, partialZ the z one.
function scaledRadiusPartials(hypot: boolean, x: number, z: number, scale: number): number {
  const xs = x * scale, zs = z * scale, r = Math.hypot(xs, zs);
  if (hypot) {
    partialZ[0] = zs / r;
    return xs / r;
  }
  partialZ[0] = -xs / r / r * scale;
  return zs / r / r * scale;
}

function powSecondDerivative(x: number, z: number): number {
  if (x !== x || (x < 0 && z !== Math.floor(z))) return NaN;
  if (x < 0 && Math.abs(z) >= 9007199254740992) x = -x; // see the core
  if (!(x !== 0 && Math.abs(x) < 1 && z < 2)) return z * ((z - 1) * Math.pow(x, z - 2));
  const d = z * ((z - 1) * Math.pow(x, z - 1)) / x;
  // As the core: x^z apart where x^(z-1) overflows.
  if (Number.isFinite(d)) return d;
  const e = z / x * ((z - 1) * Math.pow(x, z)) / x;
  return e === e ? e : d;
}

// As assembly/ops.ts: 0 at x = 0 (the numerics policy) and where y = 0 for x > 0.
function powExponentDerivative(x: number, y: number): number {
  return x === 0 || (y === 0 && x > 0) ? 0 : y * Math.log(x);
}

// As assembly/ops.ts: the mixed second partial's limit at x = 0 (z !== 0).
function powMixedAtZero(z: number): number {
  const xz1 = Math.pow(0, z - 1);
  return xz1 === 0 ? 0 : xz1 * (1 + z * Math.log(0));
}

export function pickFirst(x: number, z: number, firstWins: boolean): number {
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
  switch (op) {
    case add: { reg[OUT] = x + z; return; }
    case sub: { reg[OUT] = x - z; return; }
    case mul: { reg[OUT] = x * z; return; }
    case div: { reg[OUT] = x / z; return; }
    case neg: { reg[OUT] = -x; return; }
    case recip: { reg[OUT] = 1 / x; return; }
    case square: { reg[OUT] = x * x; return; }
    case sqrt: { reg[OUT] = Math.sqrt(x); return; }
    case cbrt: { reg[OUT] = Math.cbrt(x); return; }
    case pow: { reg[OUT] = Math.pow(x, z); return; }
    case powConst: { reg[OUT] = Math.pow(x, z); return; }
    case exp: { reg[OUT] = Math.exp(x); return; }
    case expm1: { reg[OUT] = Math.expm1(x); return; }
    case log: { reg[OUT] = Math.log(x); return; }
    case log1p: { reg[OUT] = Math.log1p(x); return; }
    case log2: { reg[OUT] = Math.log2(x); return; }
    case log10: { reg[OUT] = Math.log10(x); return; }
    case sin: { reg[OUT] = Math.sin(x); return; }
    case cos: { reg[OUT] = Math.cos(x); return; }
    case tan: { reg[OUT] = Math.tan(x); return; }
    case asin: { reg[OUT] = Math.asin(x); return; }
    case acos: { reg[OUT] = Math.acos(x); return; }
    case atan: { reg[OUT] = Math.atan(x); return; }
    case atan2: { reg[OUT] = Math.atan2(x, z); return; }
    case sinh: { reg[OUT] = Math.sinh(x); return; }
    case cosh: { reg[OUT] = Math.cosh(x); return; }
    case tanh: { reg[OUT] = Math.tanh(x); return; }
    case asinh: { reg[OUT] = Math.asinh(x); return; }
    case acosh: { reg[OUT] = Math.acosh(x); return; }
    case atanh: { reg[OUT] = Math.atanh(x); return; }
    case abs: { reg[OUT] = Math.abs(x); return; }
    case min: { reg[OUT] = Math.min(x, z); return; }
    case max: { reg[OUT] = Math.max(x, z); return; }
    case hypot: { reg[OUT] = Math.hypot(x, z); return; }
    case sigmoid: { reg[OUT] = sigmoidOf(x); return; }
    case softplus: { reg[OUT] = softplusOf(x); return; }
    case relu: { reg[OUT] = Math.max(x, 0); return; }
    case floor: { reg[OUT] = Math.floor(x); return; }
    case ceil: { reg[OUT] = Math.ceil(x); return; }
    case round: { reg[OUT] = Math.round(x); return; }
    case sign: { reg[OUT] = Math.sign(x); return; }
    case stopGradient: { reg[OUT] = x; return; }
    case lt: { reg[OUT] = x < z ? 1 : 0; return; }
    case le: { reg[OUT] = x <= z ? 1 : 0; return; }
    case gt: { reg[OUT] = x > z ? 1 : 0; return; }
    case ge: { reg[OUT] = x >= z ? 1 : 0; return; }
    case eq: { reg[OUT] = x === z ? 1 : 0; return; }
    case select: { reg[OUT] = truthy(x) ? z : w; return; }
    case erf: { reg[OUT] = special.erf(x); return; }
    case erfc: { reg[OUT] = special.erfc(x); return; }
    case normCdf: { reg[OUT] = special.normCdf(x); return; }
    case normLogCdf: { reg[OUT] = special.normLogCdf(x); return; }
    case ndtri: { reg[OUT] = special.ndtri(x); return; }
    case lgamma: { reg[OUT] = special.lgamma(x); return; }
    case digamma: { reg[OUT] = special.digamma(x); return; }
  }
  // No case: 0 (const, input, arg and custom nodes never come here).
  reg[OUT] = 0;
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
  switch (op) {
    case add: partialZ[0] = 1; { reg[OUT] = 1; return; }
    case sub: partialZ[0] = -1; { reg[OUT] = 1; return; }
    case mul: partialZ[0] = x; { reg[OUT] = z; return; }
    case div:
      if (y !== y) { partialZ[0] = NaN; { reg[OUT] = NaN; return; } }
      partialZ[0] = -y / z;
      { reg[OUT] = 1 / z; return; }
    case neg: { reg[OUT] = -1; return; }
    case recip: { reg[OUT] = -y * y; return; }
    case square: { reg[OUT] = 2 * x; return; }
    case sqrt: { reg[OUT] = 0.5 / Math.abs(y); return; }
    case cbrt: { reg[OUT] = 1 / (3 * y * y); return; }
    case pow: partialZ[0] = powExponentDerivative(x, y); { reg[OUT] = powBaseDerivative(x, z); return; }
    case powConst: { reg[OUT] = powBaseDerivative(x, z); return; }
    case exp: { reg[OUT] = y; return; }
    case expm1: { reg[OUT] = y > -0.5 ? y + 1 : Math.exp(x); return; } // y + 1 cancels as y nears -1
    case log: { reg[OUT] = x > 0 ? 1 / x : x === 0 ? Infinity : NaN; return; }
    case log1p: { reg[OUT] = x > -1 ? 1 / (1 + x) : x === -1 ? Infinity : NaN; return; }
    case log2: { reg[OUT] = x > 0 ? 1 / x / LN2 : x === 0 ? Infinity : NaN; return; }
    case log10: { const p = 1 / x / LN10; reg[OUT] = x > 0 ? (p < Infinity ? p : Math.LOG10E / x) : x === 0 ? Infinity : NaN; return; } // log10Partial in assembly/ops.ts
    case sin: { reg[OUT] = Math.cos(x); return; }
    case cos: { reg[OUT] = -Math.sin(x); return; }
    case tan: { reg[OUT] = 1 + y * y; return; }
    case asin: { reg[OUT] = 1 / Math.sqrt((1 - x) * (1 + x)); return; }
    case acos: { reg[OUT] = -1 / Math.sqrt((1 - x) * (1 + x)); return; }
    // As the core: 1/x/x where 1 + x² overflows.
    case atan: { const u = 1 + x * x; reg[OUT] = u === Infinity && Number.isFinite(x) ? 1 / x / x : 1 / u; return; }
    case atan2: {
      const h = Math.hypot(x, z);
      if (h === Infinity && Number.isFinite(x) && Number.isFinite(z)) { reg[OUT] = scaledRadiusPartials(false, x, z, 2.409919865102884e-181); return; }
      // As in the core: one operand infinite, both partials 0 (Infinity / Infinity was NaN).
      if (h === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(x) ? -x / h / h : 0;
        { reg[OUT] = Number.isFinite(z) ? z / h / h : 0; return; }
      }
      partialZ[0] = -x / h / h;
      { reg[OUT] = z / h / h; return; }
    }
    case sinh: { reg[OUT] = Math.cosh(x); return; }
    case cosh: { reg[OUT] = Math.sinh(x); return; }
    case tanh: {
      if (Math.abs(y) < 0.5) { reg[OUT] = 1 - y * y; return; }
      // As the core: q(2 - q) with q = 1 - |tanh x| = 2e/(1 + e), e = e^{-2|x|} (1 - y² cancels as
      // |y| nears 1; 1/cosh² x cost a cosh).
      const e = Math.exp(-2 * Math.abs(x)), q = 2 * e / (1 + e);
      { reg[OUT] = q * (2 - q); return; }
    }
    case asinh: { reg[OUT] = 1 / Math.hypot(x, 1); return; }
    case acosh: { reg[OUT] = x >= 1 ? 1 / (Math.sqrt(x - 1) * Math.sqrt(x + 1)) : NaN; return; }
    case atanh: { reg[OUT] = Math.abs(x) <= 1 ? 1 / ((1 - x) * (1 + x)) : NaN; return; }
    case abs: { reg[OUT] = sgn(x); return; }
    case min: partialZ[0] = pickFirst(z, x, z < x); { reg[OUT] = pickFirst(x, z, x < z); return; }
    case max: partialZ[0] = pickFirst(z, x, z > x); { reg[OUT] = pickFirst(x, z, x > z); return; }
    case hypot: {
      if (y === 0) { reg[OUT] = 0; return; }
      if (y === Infinity && Number.isFinite(x) && Number.isFinite(z)) { reg[OUT] = scaledRadiusPartials(true, x, z, 2.409919865102884e-181); return; }
      // As in the core: one operand infinite, its partial its sign and the other's 0.
      if (y === Infinity && (Number.isFinite(x) || Number.isFinite(z))) {
        partialZ[0] = Number.isFinite(z) ? z / y : Math.sign(z);
        { reg[OUT] = Number.isFinite(x) ? x / y : Math.sign(x); return; }
      }
      if (y < 2.2250738585072014e-308) { reg[OUT] = scaledRadiusPartials(true, x, z, 4.149515568880993e180); return; }
      partialZ[0] = z / y;
      { reg[OUT] = x / y; return; }
    }
    case sigmoid: { reg[OUT] = y < 0.5 ? y * (1 - y) : y * sigmoidOf(-x); return; } // 1 - y cancels as y nears 1
    // As the core: sigmoid x, from x.
    case softplus: { reg[OUT] = sigmoidOf(x); return; }
    case relu: { reg[OUT] = x > 0 ? 1 : x === x ? 0 : NaN; return; }
    case erf: { reg[OUT] = special.erfDerivative(x); return; }
    case erfc: { reg[OUT] = -special.erfDerivative(x); return; }
    case normCdf: { reg[OUT] = special.normPdf(x); return; }
    case normLogCdf: { reg[OUT] = special.normLogCdfDerivative(x, y); return; }
    case ndtri: { reg[OUT] = special.ndtriDerivative(y); return; }
    case lgamma: { reg[OUT] = special.digamma(x); return; }
    case digamma: { reg[OUT] = y === y ? special.trigamma(x) : NaN; return; }
  }
  // No case: 0 (the zero-gradient ops' partials, their second-order terms).
  reg[OUT] = 0;
}

/** d(pb)/dt of the last `partialsTangent` call. */
export const partialZTangent = new Float64Array(1);

export function partialsTangent(op: number, x: number, z: number, y: number, tx: number, tz: number, ty: number): number {
  // An infinite or NaN tangent: each operand on its own (see the core's partialsTangent).
  if (tx - tx !== 0 || tz - tz !== 0) return partialsTangentByOperand(op, x, z, y, tx, tz);
  reg[X] = x;
  reg[Z] = z;
  reg[Y] = y;
  reg[TX] = tx;
  reg[TZ] = tz;
  reg[TY] = ty;
  partialsTangentOf(op);
  return reg[OUT]!;
}

// As the core's: each operand's terms apart, a finite tangent through the rule's own formula, an
// infinite or NaN one as the second partials along a unit tangent times it, left out where 0.
function partialsTangentByOperand(op: number, x: number, z: number, y: number, tx: number, tz: number): number {
  const pa = partials(op, x, z, y), pb = partialZ[0]!;
  const aa = alongOperand(op, x, z, y, tx, pa, true), ba = partialZTangent[0]!;
  let ab = 0, bb = 0;
  if (OP_TABLE[op]![1] === 2) {
    ab = alongOperand(op, x, z, y, tz, pb, false);
    bb = partialZTangent[0]!;
  }
  partialZTangent[0] = ba + bb;
  return aa + ab;
}

function alongOperand(op: number, x: number, z: number, y: number, t: number, p: number, first: boolean): number {
  if (t - t === 0) return first ? partialsTangent(op, x, z, y, t, 0, termOf(p, t)) : partialsTangent(op, x, z, y, 0, t, termOf(p, t));
  const d = first ? partialsTangent(op, x, z, y, 1, 0, p) : partialsTangent(op, x, z, y, 0, 1, p);
  partialZTangent[0] = termOf(partialZTangent[0]!, t);
  return termOf(d, t);
}

function termOf(p: number, t: number): number {
  return p === 0 || t === 0 ? 0 : p * t;
}

function partialsTangentOf(op: number): void {
  const x = reg[X]!, z = reg[Z]!, y = reg[Y]!, tx = reg[TX]!, tz = reg[TZ]!, ty = reg[TY]!;
  partialZTangent[0] = 0;
  // A zero tangent adds nothing (see partialsTangent in assembly/ops.ts).
  if (tx === 0 && tz === 0) { reg[OUT] = 0; return; }
  switch (op) {
    case mul: partialZTangent[0] = tx; { reg[OUT] = tz; return; }
    // As in the core: divided by z twice, not by z·z, which underflows below 1e-162.
    // y·(tz/z), left out where tz or y is 0 (see the core).
    case div: partialZTangent[0] = ((tz === 0 || y === 0 ? 0 : y * (tz / z)) - ty) / z; { reg[OUT] = y !== y ? NaN : tz === 0 ? 0 : -tz / z / z; return; }
    case recip: { reg[OUT] = -2 * y * ty; return; }
    case square: { reg[OUT] = 2 * tx; return; }
    case sqrt: { reg[OUT] = -0.5 * ty / (y * y); return; }
    case cbrt: { reg[OUT] = -2 * ty / (3 * y * y * y); return; }
    case pow: {
      // As in the core: NaN outside the domain, every second partial.
      if (x < 0 && z !== Math.floor(z)) {
        partialZTangent[0] = NaN;
        { reg[OUT] = NaN; return; }
      }
      if (x === 0 && z !== 0) {
        const mixed = powMixedAtZero(z);
        partialZTangent[0] = tx === 0 ? 0 : tx * mixed;
        { reg[OUT] = (tz === 0 ? 0 : tz * mixed) + (tx === 0 || z === 1 ? 0 : tx * (z * ((z - 1) * Math.pow(x, z - 2)))); return; }
      }
      // Below 0 every second partial with z in it NaN, as the partial in z (see the core).
      if (x < 0) {
        partialZTangent[0] = tx !== 0 || tz !== 0 ? NaN : 0;
        { reg[OUT] = (tz === 0 ? 0 : NaN) + (tx === 0 || z === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z)); return; }
      }
      // y/x as x^(z-1) (see the core).
      const xz1 = z === 0 ? 1 / Math.abs(x) : Math.pow(x, z - 1);
      const lnx = Math.log(x);
      partialZTangent[0] = (ty === 0 ? 0 : ty * lnx) + (tx === 0 ? 0 : tx * xz1);
      // As the core: ∞ − ∞ where x^(z-1) overflows, ty taken apart.
      if (partialZTangent[0] !== partialZTangent[0]) partialZTangent[0] = (tx === 0 ? 0 : tx * (xz1 * (1 + z * lnx))) + (tz === 0 ? 0 : tz * (y * lnx * lnx));
      if (z === 0) { reg[OUT] = tz === 0 ? 0 : tz * xz1; return; }
      const mixed = xz1 === 0 && Number.isFinite(z) ? 0 : xz1 + z * xz1 * Math.log(x);
      { reg[OUT] = (tz === 0 ? 0 : tz * (mixed === mixed ? mixed : xz1 * (1 + z * Math.log(x)))) + (tx === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z)); return; }
    }
    // See powConst in assembly/ops.ts.
    case powConst: { reg[OUT] = z === 0 || z === 1 ? 0 : tx * powSecondDerivative(x, z); return; }
    case exp: { reg[OUT] = ty; return; }
    case expm1: { reg[OUT] = ty; return; }
    // Outside the domain NaN, as the first partial is (the formulas alone are finite there), but
    // 0 along a zero tangent, as the tangent sweep adds nothing for one: a NaN element of a vector
    // leaves the Hessian's cross terms with the others 0, as the gradient keeps theirs.
    // Divided by x twice, as the core.
    case log: { reg[OUT] = tx === 0 ? 0 : x >= 0 ? -tx / x / x : NaN; return; }
    case log1p: { reg[OUT] = tx === 0 ? 0 : x >= -1 ? -tx / (1 + x) / (1 + x) : NaN; return; }
    case log2: { reg[OUT] = tx === 0 ? 0 : x >= 0 ? -tx / x / (x * LN2) : NaN; return; }
    case log10: { reg[OUT] = tx === 0 ? 0 : x >= 0 ? -tx / x / (x * LN10) : NaN; return; }
    // As in the core: the node's own value y is sin x (cos x), no second evaluation.
    case sin: { reg[OUT] = -tx * y; return; }
    case cos: { reg[OUT] = -tx * y; return; }
    case tan: { reg[OUT] = 2 * y * ty; return; }
    case asin: { const u = (1 - x) * (1 + x); { reg[OUT] = tx * x / (u * Math.sqrt(u)); return; } }
    case acos: { const u = (1 - x) * (1 + x); { reg[OUT] = -tx * x / (u * Math.sqrt(u)); return; } }
    // Where the denominator overflows the second derivative is a zero (its limit), never NaN
    // from Infinity / Infinity: -sign(x)·tx·0 keeps the sign the formula's underflow gives.
    // Far out (|x| past 1e38, 1e50) in units of 1/x: (1 + x²)² overflowed from |x| = 1.2e77, and the
    // limit 0 stood in where the true value is a normal double up to 2e102 (asinh, acosh: from
    // 5.6e102, normal up to 6.7e153; a probe). Nearer in the formulas stay as they were.
    case atan: {
      if (Math.abs(x) > 1e38) { const r = 1 / x, q = 1 + r * r; { reg[OUT] = -2 * r * r * r * tx / (q * q); return; } }
      const u = 1 + x * x, d = u * u; { reg[OUT] = d === Infinity ? -Math.sign(x) * tx * 0 : -2 * x * tx / d; return; }
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
      { reg[OUT] = -(d * tz + c * tx) / h / h; return; }
    }
    case sinh: { reg[OUT] = tx * Math.sinh(x); return; }
    case cosh: { reg[OUT] = tx * Math.cosh(x); return; }
    case tanh: { reg[OUT] = -2 * y * ty; return; }
    case asinh: {
      if (Math.abs(x) > 1e50) { const r = 1 / x, q = 1 + r * r; { reg[OUT] = -Math.sign(x) * r * r * tx / (q * Math.sqrt(q)); return; } }
      const u = x * x + 1, d = u * Math.sqrt(u); { reg[OUT] = d === Infinity ? -Math.sign(x) * tx * 0 : -x * tx / d; return; }
    }
    case acosh: {
      if (x > 1e50) { const r = 1 / x, q = (1 - r) * (1 + r); { reg[OUT] = -r * r * tx / (q * Math.sqrt(q)); return; } }
      const u = (x - 1) * (x + 1), d = u * Math.sqrt(u); { reg[OUT] = x >= 1 ? (d === Infinity ? -tx * 0 : -x * tx / d) : tx === 0 ? 0 : NaN; return; }
    }
    case atanh: { const u = (1 - x) * (1 + x); { reg[OUT] = Math.abs(x) <= 1 ? 2 * x * tx / (u * u) : tx === 0 ? 0 : NaN; return; } }
    case hypot: {
      if (y === 0) { reg[OUT] = 0; return; }
      // As in the core: in units of y (y·y overflowed past 1e154 and underflowed below 1e-162), an
      // infinite operand's unit component its sign.
      // d(x/y) as w·(w·tx − u·tz)/y, which does not cancel where |z| ≪ |x| (see the core).
      // Divided by a normal y before the second factor (see the core).
      const far = y === Infinity && (Number.isFinite(x) || Number.isFinite(z));
      const u = far && !Number.isFinite(x) ? Math.sign(x) : x / y, w = far && !Number.isFinite(z) ? Math.sign(z) : z / y;
      // A subnormal y, or one past the doubles of finite operands: from the operands scaled (see the core).
      if (y < 2.2250738585072014e-308 || (y === Infinity && Number.isFinite(x) && Number.isFinite(z))) {
        const scale = y === Infinity ? 2.409919865102884e-181 : 4.149515568880993e180;
        const xs = x * scale, zs = z * scale, r = Math.hypot(xs, zs), us = xs / r, ws = zs / r;
        partialZTangent[0] = us * (us * tz - ws * tx) * scale / r;
        { reg[OUT] = ws * (ws * tx - us * tz) * scale / r; return; }
      }
      partialZTangent[0] = u * ((u * tz - w * tx) / y);
      { reg[OUT] = w * ((w * tx - u * tz) / y); return; }
    }
    // 1 - 2y as -tanh(x/2): with y near 1/2 the subtraction left only y's rounding (100% off at
    // x = 1e-16: a probe).
    case sigmoid: { reg[OUT] = ty * -Math.tanh(0.5 * x); return; }
    case softplus: { reg[OUT] = ty * Math.exp(-y); return; }
    case erf: { const d = special.erfDerivative(x); { reg[OUT] = d === 0 ? 0 : -2 * x * d * tx; return; } }
    case erfc: { const d = special.erfDerivative(x); { reg[OUT] = d === 0 ? 0 : 2 * x * d * tx; return; } }
    case normCdf: { const d = special.normPdf(x); { reg[OUT] = d === 0 ? 0 : -x * d * tx; return; } }
    case normLogCdf: { const d = special.normLogCdfDerivative(x, y); { reg[OUT] = d === 0 ? 0 : special.normLogCdfSecond(x, d) * tx; return; } }
    case ndtri: { const d = special.ndtriDerivative(y); { reg[OUT] = tx === 0 ? 0 : y * d * d * tx; return; } }
    // At a pole its gradient is NaN, and so is this (assembly/ops.ts).
    case lgamma: { reg[OUT] = tx === 0 ? 0 : x < 0 && x === Math.floor(x) ? NaN : special.trigamma(x) * tx; return; }
    case digamma: { reg[OUT] = tx === 0 ? 0 : special.tetragamma(x) * tx; return; }
  }
  // No case: 0 (the piecewise-linear and zero-gradient ops: their partials do not change).
  reg[OUT] = 0;
}

