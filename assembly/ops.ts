// THE op table. One entry per op, in code order, with its rules side by side:
//   forward  y = f(x, z)           x = val(a), z = val(b)
//   vjp      adjoint contributions, given the incoming adjoint g (never 0: the sweep skips 0)
//   jvp      output tangent, given operand tangents tx, tz
// src/ops.ts lists the same codes, names and arities for the façade and the JS backend;
// test/op-table.test.ts fails if the two lists drift.
//
// code name          arity  forward                 vjp (to a, to b)                     jvp
//  0   const           0    (value written by JS)   -                                    0
//  1   input           0    (value written by JS)   -                                    (seeded)
//  2   arg             1    0 (carries an operand   -                                    0
//                            of the next node)
//  3   add             2    x + z                   g, g                                 tx + tz
//  4   sub             2    x - z                   g, -g                                tx - tz
//  5   mul             2    x * z                   g*z, g*x                             tx*z + x*tz
//  6   div             2    x / z                   g/z, -g*y/z                          (tx - y*tz)/z
//  7   neg             1    -x                      -g                                   -tx
//  8   recip           1    1/x                     -g*y*y                               -tx*y*y
//  9   square          1    x*x                     2*g*x                                2*x*tx
// 10   sqrt            1    sqrt(x)                 g/(2y)   (sqrt'(0) = +Inf)            tx/(2y)
// 11   cbrt            1    cbrt(x)                 g/(3y²)                              tx/(3y²)
// 12   pow             2    x^z                     g*z*x^(z-1), g*y*log(x) (0 if y=0)   both terms
// 13   powConst        2    x^z, z a constant       g*z*x^(z-1), nothing to z            tx*z*x^(z-1)
// 14   exp             1    e^x                     g*y                                  tx*y
// 15   expm1           1    e^x - 1                 g*(y+1), g*e^x once y < -1/2         same
// 16   log             1    ln x                    g/x                                  tx/x
// 17   log1p           1    ln(1+x)                 g/(1+x)                              tx/(1+x)
// 18   log2            1    log2 x                  g/(x ln2)                            tx/(x ln2)
// 19   log10           1    log10 x                 g/(x ln10)                           tx/(x ln10)
// 20   sin             1    sin x                   g*cos x                              tx*cos x
// 21   cos             1    cos x                   -g*sin x                             -tx*sin x
// 22   tan             1    tan x                   g*(1+y²)                             tx*(1+y²)
// 23   asin            1    asin x                  g/sqrt(1-x²)                         tx/sqrt(1-x²)
// 24   acos            1    acos x                  -g/sqrt(1-x²)                        -tx/sqrt(1-x²)
// 25   atan            1    atan x                  g/(1+x²)                             tx/(1+x²)
// 26   atan2           2    atan2(x, z)             g*z/h², -g*x/h²  (h = hypot(x, z))   (tx*z - x*tz)/h²
// 27   sinh            1    sinh x                  g*cosh x                             tx*cosh x
// 28   cosh            1    cosh x                  g*sinh x                             tx*sinh x
// 29   tanh            1    tanh x                  g*(1-y²), g/cosh²x once |y| >= 1/2   same
// 30   asinh           1    asinh x                 g/hypot(x, 1)                        tx/hypot(x, 1)
// 31   acosh           1    acosh x                 g/sqrt((x-1)(x+1))                   tx/sqrt((x-1)(x+1))
// 32   atanh           1    atanh x                 g/(1-x²)                             tx/(1-x²)
// 33   abs             1    |x|                     g*sgn x   (abs'(0) = 0)              tx*sgn x
// 34   min             2    min(x, z)               to the smaller; tie: g/2, g/2        same split
// 35   max             2    max(x, z)               to the larger; tie: g/2, g/2         same split
// 36   hypot           2    hypot(x, z)             g*x/y, g*z/y  (0, 0 at y = 0)        (tx*x + tz*z)/y
// 37   sigmoid         1    1/(1+e^-x), stable      g*y*(1-y), g*y*sigmoid(-x), y >= 1/2 same
// 38   softplus        1    ln(1+e^x), stable       g*(1-e^-y) = g*sigmoid(x)            same
// 39   relu            1    max(x, 0)               g if x > 0   (relu'(0) = 0)          same
// 40   floor           1    floor x                 zero gradient                        0
// 41   ceil            1    ceil x                  zero gradient                        0
// 42   round           1    round x (half up)       zero gradient                        0
// 43   sign            1    sign x                  zero gradient                        0
// 44   stopGradient    1    x                       zero gradient                        0
// 45   lt              2    x < z ? 1 : 0           zero gradient                        0
// 46   le              2    x <= z ? 1 : 0          zero gradient                        0
// 47   gt              2    x > z ? 1 : 0           zero gradient                        0
// 48   ge              2    x >= z ? 1 : 0          zero gradient                        0
// 49   eq              2    x == z ? 1 : 0          zero gradient                        0
// 50   select          3    x ? z : w   (w = operand carried by the arg node at i-1;     tangent of the
//                           x is true unless 0 or NaN)  g to the branch taken only       branch taken
// 51   erf             1    erf x                   g*2/√π e^(-x²)                       same   (0 at ±Inf)
// 52   erfc            1    1 - erf x, no cancel.   -g*2/√π e^(-x²)                      same
// 53   normCdf         1    Φ(x) = erfc(-x/√2)/2    g*φ(x)                               same
// 54   normLogCdf      1    log Φ(x), log domain    g*φ/Φ (inverse Mills ratio, in the   same
//                           in the left tail         tail without the exponentials)
// 55   ndtri           1    Φ⁻¹(x), NaN off [0, 1]  g/φ(y)                               same
// 56   lgamma          1    log |Γ(x)|, +Inf at     g*ψ(x)  (NaN at the poles)           same
//                           0, -1, -2, ... and ±Inf
// 57   digamma         1    ψ(x), ∓Inf at ±0, NaN   g*ψ'(x)                              same
//                           at -1, -2, ... and -Inf
//     (assembly/special.ts holds these functions; the second order needs ψ' and ψ'' there)
// 58   custom          n    a user rule in JS: node i has a = rule id, b = n; its n operands are carried by the
//                           ceil(n/2) arg nodes just before it. The sweeps call back into JS once per visit.
//
// Array-valued nodes (assembly/vector.ts holds their rules, in this order). A vector-valued node i
// owns elements [off, off + len) of the element regions; node i-1 is its vmeta carrier (a = off,
// b = len). Its own val slot is 0 and its adj slot is a flag: nonzero once a consumer sent it
// adjoint (its element adjoints are then in xadj). Every sum over elements runs in one order:
// four interleaved partial sums s_r = sum of terms k ≡ r (mod 4), ascending, combined as
// (s0 + s2) + (s1 + s3); a broadcast operand's adjoint adds its terms in ascending element order.
//
// 59   vmeta           0    carrier: a = element offset, b = length of the vector node after it
// 60   vparam          0    carrier: integer parameters (a, b) of the node after the vmeta
// 61   vget            1    x[b]  (b = element index)   g to element b                      tx[b]
// 62   vsum            1    sum x                      g to every element                   sum tx
// 63   vmax            1    max x (NaN if any is NaN)  g/t to each of the t maxima          sum tx/t over them
// 64   vmin            1    min x                      g/t to each of the t minima          same
// 65   vlogSumExp      1    m + log sum e^(x-m)        g*e^(x_k - y) (the softmax)          sum softmax*tx
// 66   vdot            2    sum a_k b_k                g*b_k, g*a_k (mul's rule per k)      dot(ta,b)+dot(a,tb)
// 67   vinput          0    (values written by JS)     -                                    (seeded)
// 68   vconst          0    (values written by JS)     -                                    0
// 69   vmatmul         2    C = A B, vparam a = m, b = k; p = len/m; each C_ij a contraction over l
//                           vjp: gA += gC Bᵀ, gB += Aᵀ gC      jvp: tA B + A tB (bilinear)
// 70   vtranspose      1    [m, k] -> [k, m], vparam a = m, b = k      vjp: transposed back
// 71   vslice          1    x[b + k]  (b = start)      g back into the slice                copy
// 72   vconcat         n    the operands in order (scalars are one element each); a = n, carried by
//                           ceil(n/2) arg nodes before the vmeta              vjp/jvp: the slices
// 73   vgather         2    x[idx_k], idx = the vconst b (indices as f64)  g_k to x[idx_k], ascending k
// 128+s elementwise    1-3  op s of this table per element, operands broadcast: a scalar node, a vector
//                           of the output's length, or a shorter vector repeated (a trailing-shape
//                           suffix, as NumPy); select's third operand rides on an arg node before the
//                           vmeta. Per element exactly the scalar rules above, zero-adjoint skip included.
//
// Second order (Hessian-vector products, forward over reverse) needs the directional derivative of
// each partial along the operand tangents: dpa = d(pa)/dt, in `partialsTangent`, in the same order.
//
// Traps recorded here, not in the code: a kink or NaN operand gives a NaN gradient where the
// derivative is undefined, never a silently finite one (so log, log1p, log2, log10 and atanh
// return NaN outside their domain although 1/x would be finite there); `pow` keeps its log(x) term out of the
// base's gradient, so a negative base with integer exponent stays finite there.

import { sin, cos } from './trig';
import {
  erf, erfc, normCdf, normLogCdf, normLogCdfDerivative, normLogCdfSecond, normPdf, erfDerivative, ndtri, ndtriDerivative, lgamma, digamma,
  trigamma, tetragamma,
} from './special';

export enum Op {
  Const = 0, Input, Arg,
  Add, Sub, Mul, Div, Neg, Recip, Square, Sqrt, Cbrt, Pow, PowConst,
  Exp, Expm1, Log, Log1p, Log2, Log10,
  Sin, Cos, Tan, Asin, Acos, Atan, Atan2,
  Sinh, Cosh, Tanh, Asinh, Acosh, Atanh,
  Abs, Min, Max, Hypot, Sigmoid, Softplus, Relu,
  Floor, Ceil, Round, Sign, StopGradient,
  Lt, Le, Gt, Ge, Eq, Select,
  Erf, Erfc, NormCdf, NormLogCdf, Ndtri, Lgamma, Digamma,
  Custom,
  VMeta, VParam, VGet, VSum, VMax, VMin, VLogSumExp, VDot,
  VInput, VConst, VMatmul, VTranspose, VSlice, VConcat, VGather,
  Count
}

/** Elementwise vector form of scalar op s is op code ELEMENTWISE + s. */
// @ts-ignore: decorator
@inline export const ELEMENTWISE: i32 = 128;

/** Whether a node with this op code owns an element range (a vmeta node precedes it). */
// @ts-ignore: decorator
@inline export function isVectorOp(op: i32): bool { return op >= Op.VInput; }

export function opName(op: i32): string {
  switch (op) {
    case Op.Const: return 'const'; case Op.Input: return 'input'; case Op.Arg: return 'arg';
    case Op.Add: return 'add'; case Op.Sub: return 'sub'; case Op.Mul: return 'mul';
    case Op.Div: return 'div'; case Op.Neg: return 'neg'; case Op.Recip: return 'recip';
    case Op.Square: return 'square'; case Op.Sqrt: return 'sqrt'; case Op.Cbrt: return 'cbrt';
    case Op.Pow: return 'pow'; case Op.PowConst: return 'powConst';
    case Op.Exp: return 'exp'; case Op.Expm1: return 'expm1'; case Op.Log: return 'log';
    case Op.Log1p: return 'log1p'; case Op.Log2: return 'log2'; case Op.Log10: return 'log10';
    case Op.Sin: return 'sin'; case Op.Cos: return 'cos'; case Op.Tan: return 'tan';
    case Op.Asin: return 'asin'; case Op.Acos: return 'acos'; case Op.Atan: return 'atan';
    case Op.Atan2: return 'atan2'; case Op.Sinh: return 'sinh'; case Op.Cosh: return 'cosh';
    case Op.Tanh: return 'tanh'; case Op.Asinh: return 'asinh'; case Op.Acosh: return 'acosh';
    case Op.Atanh: return 'atanh'; case Op.Abs: return 'abs'; case Op.Min: return 'min';
    case Op.Max: return 'max'; case Op.Hypot: return 'hypot'; case Op.Sigmoid: return 'sigmoid';
    case Op.Softplus: return 'softplus'; case Op.Relu: return 'relu'; case Op.Floor: return 'floor';
    case Op.Ceil: return 'ceil'; case Op.Round: return 'round'; case Op.Sign: return 'sign';
    case Op.StopGradient: return 'stopGradient';
    case Op.Lt: return 'lt'; case Op.Le: return 'le'; case Op.Gt: return 'gt';
    case Op.Ge: return 'ge'; case Op.Eq: return 'eq'; case Op.Select: return 'select';
    case Op.Erf: return 'erf'; case Op.Erfc: return 'erfc'; case Op.NormCdf: return 'normCdf';
    case Op.NormLogCdf: return 'normLogCdf'; case Op.Ndtri: return 'ndtri'; case Op.Lgamma: return 'lgamma';
    case Op.Digamma: return 'digamma';
    case Op.Custom: return 'custom';
    case Op.VMeta: return 'vmeta'; case Op.VParam: return 'vparam'; case Op.VGet: return 'vget';
    case Op.VSum: return 'vsum'; case Op.VMax: return 'vmax'; case Op.VMin: return 'vmin';
    case Op.VLogSumExp: return 'vlogSumExp'; case Op.VDot: return 'vdot'; case Op.VInput: return 'vinput';
    case Op.VConst: return 'vconst'; case Op.VMatmul: return 'vmatmul'; case Op.VTranspose: return 'vtranspose';
    case Op.VSlice: return 'vslice'; case Op.VConcat: return 'vconcat'; case Op.VGather: return 'vgather';
  }
  return '';
}

export function opArity(op: i32): i32 {
  if (op <= Op.Input) return 0;
  if (op == Op.Select) return 3;
  if (op == Op.Custom || op == Op.VConcat) return -1;
  switch (op) {
    case Op.VMeta: case Op.VParam: case Op.VInput: case Op.VConst: return 0;
    case Op.VDot: case Op.VMatmul: case Op.VGather: return 2;
  }
  switch (op) {
    case Op.Add: case Op.Sub: case Op.Mul: case Op.Div: case Op.Pow: case Op.PowConst:
    case Op.Atan2: case Op.Min: case Op.Max: case Op.Hypot:
    case Op.Lt: case Op.Le: case Op.Gt: case Op.Ge: case Op.Eq:
      return 2;
  }
  return op < Op.Count ? 1 : -1;
}

// @ts-ignore: decorator
@inline const LN2: f64 = 0.6931471805599453;
// @ts-ignore: decorator
@inline const LN10: f64 = 2.302585092994046;
// @ts-ignore: decorator
@inline const LOG10E: f64 = 0.4342944819032518;

// log10' = 1 / x / LN10, but below x = 2^-1024 the reciprocal overflows where the derivative
// does not (a probe: Infinity at 4e-309 for 1.09e308): LOG10E / x there, within an ulp. (log2's
// 1 / (x ln 2) is beyond the doubles wherever 1 / x is.) src/js/rules.ts and the generated
// code's rules (src/wasm/codegen/rules.ts) write it the same way.
// @ts-ignore: decorator
@inline function log10Partial(x: f64): f64 {
  const p = 1 / x / LN10;
  return p < Infinity ? p : LOG10E / x;
}

// @ts-ignore: decorator
@inline export function truthy(c: f64): bool { return c != 0 && c == c; }

// @ts-ignore: decorator
@inline export function sgn(x: f64): f64 { return x > 0 ? 1 : x < 0 ? -1 : x * 0; }

// d/dx x^z without 0*Inf at z = 0 (x^0 is constant).
// @ts-ignore: decorator
@inline function powBaseDerivative(x: f64, z: f64): f64 {
  if (z == 0) return 0;
  // A non-integer z so small that z - 1 rounds to -1 (|z| < 2^-53): x^(z-1) was then finite for
  // x < 0, where x^z is NaN (a probe: a finite gradient under a NaN value), and -Infinity at -0,
  // whose limit is +Infinity as for any other non-integer z.
  if (z != Math.floor(z)) {
    if (x < 0) return NaN;
    if (x == 0) x = 0;
  }
  // From 2^53 every double is an even integer and z - 1 odd, but z - 1 rounds to an even one: x^(z-1)
  // had the wrong sign for x < 0 (a probe: +2^54 for (-1)^(2^54); a review: 2^53 + 2 too); (z/x)·x^z
  // keeps it.
  // -Infinity too (a probe: +Infinity at (-Infinity, 2^54), where the sign is -).
  if (Math.abs(z) >= 9007199254740992 && isFinite(z) && x < 0) {
    const p = Math.pow(x, z);
    return p == 0 || p == Infinity ? -(z * p) : z / x * p;
  }
  const p = Math.pow(x, z - 1);
  // x^(z-1) overflows where z·x^(z-1) is finite (x = 1e-310, z = 1e-170: about 1e140): (z/x)·x^z.
  if (p == Infinity && x > 0) {
    const r = z / x * Math.pow(x, z);
    if (isFinite(r)) return r;
  }
  return z * p;
}

// z(z-1)x^(z-2), the second derivative in x: as z·((z-1)·x^(z-2)) at 0, where |x| >= 1 and where
// z >= 2, and as z·((z-1)·x^(z-1))/x for 0 < |x| < 1 and z < 2: x^(z-2) overflowed there where the
// product is finite (x = z = 1e-170: about -1e170), and z·((z-1)·x^(z-1)) where |x| is large (2
// at x = 1e308 for z = 2: a probe got Infinity, and NaN at x = Infinity), while for z >= 2 x^(z-1)
// underflowed where the product is a normal double (x = 1e-300, z = 3: 0 for 6e-300, a probe).
// NaN where the first derivative is (x < 0, z no integer: it was finite where z - 2 rounds to an
// integer, and 0 at -Infinity).
// @ts-ignore: decorator
@inline function powSecondDerivative(x: f64, z: f64): f64 {
  // (x = NaN took the x^(z-2) form, 2 for z = 2 under a NaN gradient: a review.)
  if (x != x || (x < 0 && z != Math.floor(z))) return NaN;
  // From 2^53 z - 2 is even, and z - 1 rounds to an even integer: the value at |x| (the z < 2 form
  // had the wrong sign for -1 < x < 0, a review).
  if (x < 0 && Math.abs(z) >= 9007199254740992) x = -x;
  if (!(x != 0 && Math.abs(x) < 1 && z < 2)) return z * ((z - 1) * Math.pow(x, z - 2));
  const d = z * ((z - 1) * Math.pow(x, z - 1)) / x;
  return isFinite(d) ? d : powSecondApart(x, z, d);
}

// x^(z-1) overflows for a subnormal x where a tiny z keeps z(z-1)x^(z-2) finite (x = 1e-310,
// z = 5e-324: -Infinity for -4.9e296, a probe): x^z apart, divided by x once per factor; `d`
// where that is NaN. Out of line, as the other rare paths of the rules, which every sweep inlines.
// @ts-ignore: decorator
@noinline function powSecondApart(x: f64, z: f64, d: f64): f64 {
  const e = z / x * ((z - 1) * Math.pow(x, z)) / x;
  return e == e ? e : d;
}

// pow's partialZTangent, ty·ln x + tx·x^(z-1), where it is ∞ − ∞ (x^(z-1) overflowing: 5e-324 and
// 1e-8, 1e-315 and 0.01 gave NaN against the other order's ±Infinity, a probe): ty taken apart
// (z·x^(z-1)·tx + y·ln x·tz) and x^(z-1) factored out of its terms, as the mixed term.
// @ts-ignore: decorator
@noinline function powMixedApart(z: f64, y: f64, tx: f64, tz: f64, xz1: f64, lnx: f64): f64 {
  return (tx == 0 ? 0 : tx * (xz1 * (1 + z * lnx))) + (tz == 0 ? 0 : tz * (y * lnx * lnx));
}

// The first partials of hypot (its unit vector) or atan2 (that vector turned, over the radius)
// from the operands scaled by `scale`, a power of two (exact), where the radius keeps few digits
// (subnormal: 2^600) or is past the doubles (of finite operands: 2^-600, where x/r gave (0, 0)
// for hypot at (1.5e308, 1.5e308) and atan2 0 for about 3e-309, a probe).
// hypot's tangent partials from the operands scaled by `scale` (2^600 where y is subnormal and
// keeps few digits: u = x/y was 7e-5 off at (3e-320, 4e-320), a read-through; 2^-600 where y is
// past the doubles of finite operands, where the terms over y gave 0 for a subnormal true value,
// about 2.4e-309 at (1.5e308, 1.5e308): a probe), as the first partials.
// @ts-ignore: decorator
@noinline function hypotTangentScaled(x: f64, z: f64, tx: f64, tz: f64, scale: f64): f64 {
  const xs = x * scale, zs = z * scale, r = hypot(xs, zs), us = xs / r, ws = zs / r;
  partialZTangent = us * (us * tz - ws * tx) * scale / r;
  return ws * (ws * tx - us * tz) * scale / r;
}

// @ts-ignore: decorator
@noinline function scaledRadiusPartials(op: i32, x: f64, z: f64, scale: f64): f64 {
  const xs = x * scale, zs = z * scale, r = hypot(xs, zs);
  if (op == Op.Hypot) {
    partialZ = zs / r;
    return xs / r;
  }
  partialZ = -xs / r / r * scale;
  return zs / r / r * scale;
}

// d/dz x^z = y ln x; 0 at x = 0 (the numerics policy: d/dc x^c at x = 0 is 0, for every z, where
// y ln x gave -Inf at z <= 0) and where y = 0 for x > 0 (y ln x would be 0 * -Inf there); NaN for
// x < 0, where y ln x is, also where y under- or overflows to 0 (a probe: 0 at (-0.5, 2000)).
// @ts-ignore: decorator
@inline function powExponentDerivative(x: f64, y: f64): f64 { return x == 0 || (y == 0 && x > 0) ? 0 : y * Math.log(x); }

// At x = 0 (z != 0), the limit from x > 0 of the mixed second partial x^(z-1) (1 + z ln x): 0 for
// z > 1, where the rule's x^(z-1) · ln x is 0 * -Inf; ±Infinity otherwise.
// @ts-ignore: decorator
@inline function powMixedAtZero(z: f64): f64 {
  const xz1 = Math.pow(0, z - 1);
  return xz1 == 0 ? 0 : xz1 * (1 + z * Math.log(0));
}

// Where min/max send the adjoint: 1 to the chosen operand, 0.5 each at a tie, NaN if unordered.
// @ts-ignore: decorator
@inline function pickFirst(x: f64, z: f64, firstWins: bool): f64 {
  return firstWins ? 1 : x == z ? 0.5 : (x != x || z != z) ? NaN : 0;
}

// @ts-ignore: decorator
@inline function sigmoidOf(x: f64): f64 {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const e = Math.exp(x);
  return e / (1 + e);
}

// tanh past |x| = log(3)/2 (|tanh| >= 1/2) as 1 - q with q = 2e/(1 + e), e = e^{-2|x|}, by exp,
// which costs a third of the expm1 that AssemblyScript's (musl's) tanh takes there (an element of
// a vector tanh took 16 ns, V8's Math.tanh 9, this 11); within 2 ulps of V8's (musl's branch
// below it, which is kept, within 3). The same q gives the slope 1 - y² = q(2 - q) without the
// cancellation of 1 - y² near 1, where cosh was taken (10 ns more), and without overflow: e
// underflows gradually, so the slope stays a subnormal number where 1/cosh² does.
// @ts-ignore: decorator
@inline const TANH_EXP_FROM: f64 = 0.5493061443340549;

// Below it, x + x·u·P(u) with u = x² (tanh is odd), P of degree 10: the Chebyshev fit of
// (tanh x - x)/x³ on u in [0, 0.302], 5e-18 relative with its coefficients rounded to doubles
// (scripts/tanh-fit.py, which also measures the result: within 0.72 ulp), where musl's tanh
// took an expm1 and a division (a vector tanh of |x| < 0.5 took 17 ns an element recorded and
// swept, 9 now). From 2^-26 down tanh x is x in doubles (which keeps -0).
// @ts-ignore: decorator
@inline const TANH_IS_X_BELOW: f64 = 1.4901161193847656e-8; // 2^-26

function tanhOf(x: f64): f64 {
  const a = Math.abs(x);
  if (!(a > TANH_EXP_FROM)) {
    if (a < TANH_IS_X_BELOW) return x;
    const u = x * x;
    let p = -2.063362750046846e-05;
    p = p * u + 8.515749545895449e-05;
    p = p * u - 0.00023466176752647328;
    p = p * u + 0.0005889451420823537;
    p = p * u - 0.0014556636717036357;
    p = p * u + 0.0035921106087655414;
    p = p * u - 0.008863234415241197;
    p = p * u + 0.021869488494421545;
    p = p * u - 0.053968253967450516;
    p = p * u + 0.13333333333332728;
    p = p * u - 0.3333333333333333;
    return x + x * u * p;
  }
  return tanhFromGap(x, tanhGap(a));
}

/** tanh x from q = 1 - tanh|x|. */
// @ts-ignore: decorator
@inline function tanhFromGap(x: f64, q: f64): f64 {
  const t = 1 - q;
  return x < 0 ? -t : t;
}

/** sech² x = 1 - tanh² x from q = 1 - tanh|x|, without the cancellation. */
// @ts-ignore: decorator
@inline function slopeFromGap(q: f64): f64 {
  return q * (2 - q);
}

/** 1 - tanh(a) for a >= 0. */
// @ts-ignore: decorator
@inline function tanhGap(a: f64): f64 {
  const e = Math.exp(-2 * a);
  return 2 * e / (1 + e);
}

function tanhSlopeFar(x: f64): f64 {
  return slopeFromGap(tanhGap(Math.abs(x)));
}

/** The partial of tanh at x left by tanhAndSlope. */
export let tanhSlope: f64 = 0;

/** tanh x, with its partial in tanhSlope: the bits of forwardRule and partials for Op.Tanh, one
 *  exp between them where both take 1 - tanh|x| (the scheduled forward, which stores partials). */
// @ts-ignore: decorator
@inline export function tanhAndSlope(x: f64): f64 {
  const a = Math.abs(x);
  if (a > TANH_EXP_FROM) {
    const q = tanhGap(a), y = tanhFromGap(x, q);
    tanhSlope = Math.abs(y) < 0.5 ? 1 - y * y : slopeFromGap(q);
    return y;
  }
  const y = tanhOf(x);
  tanhSlope = Math.abs(y) < 0.5 ? 1 - y * y : tanhSlopeFar(x);
  return y;
}

// @ts-ignore: decorator
@inline function softplusOf(x: f64): f64 {
  return Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));
}

// hypot as V8 computes it (its Math.hypot is the JS engine's rule): the magnitudes scaled by the
// larger one, their squares summed, the root scaled back. AssemblyScript's Math.hypot overflowed to
// Infinity next to the largest double where the true value, and V8's, is finite (op-parity, seed
// 1878808415).
function hypot(x: f64, z: f64): f64 {
  const a = Math.abs(x), b = Math.abs(z);
  if (a == Infinity || b == Infinity) return Infinity;
  if (isNaN(a) || isNaN(b)) return NaN;
  const m = a > b ? a : b;
  if (m == 0) return 0;
  // With two terms Kahan's compensation stays 0: the sum is the plain one, in V8's order.
  const p = a / m, q = b / m;
  return Math.sqrt(p * p + q * q) * m;
}

/** Whether op is one of the ops with zero gradient (and tangent): floor, ceil, round, sign,
 *  stopGradient and the comparisons, side by side in the op table. */
// @ts-ignore: decorator
@inline export function zeroGradient(op: i32): bool {
  return <u32>(op - Op.Floor) <= <u32>(Op.Eq - Op.Floor);
}

/** y = f(x, z) for every op with at most two operands (select and custom are run by the
 *  sweeps themselves). */
// @ts-ignore: decorator
@inline export function forwardRule(op: i32, x: f64, z: f64): f64 {
  switch (op) {
    case Op.Add: return x + z;
    case Op.Sub: return x - z;
    case Op.Mul: return x * z;
    case Op.Div: return x / z;
    case Op.Neg: return -x;
    case Op.Recip: return 1 / x;
    case Op.Square: return x * x;
    case Op.Sqrt: return Math.sqrt(x);
    case Op.Cbrt: return Math.cbrt(x);
    case Op.Pow: return Math.pow(x, z);
    case Op.PowConst: return Math.pow(x, z);
    case Op.Exp: return Math.exp(x);
    case Op.Expm1: return Math.expm1(x);
    case Op.Log: return Math.log(x);
    case Op.Log1p: return Math.log1p(x);
    case Op.Log2: return Math.log2(x);
    case Op.Log10: return Math.log10(x);
    case Op.Sin: return sin(x);
    case Op.Cos: return cos(x);
    case Op.Tan: return Math.tan(x);
    case Op.Asin: return Math.asin(x);
    case Op.Acos: return Math.acos(x);
    case Op.Atan: return Math.atan(x);
    case Op.Atan2: return Math.atan2(x, z);
    case Op.Sinh: return Math.sinh(x);
    case Op.Cosh: return Math.cosh(x);
    case Op.Tanh: return tanhOf(x);
    case Op.Asinh: return Math.asinh(x);
    case Op.Acosh: return Math.acosh(x);
    case Op.Atanh: return Math.atanh(x);
    case Op.Abs: return Math.abs(x);
    case Op.Min: return Math.min(x, z);
    case Op.Max: return Math.max(x, z);
    case Op.Hypot: return hypot(x, z);
    case Op.Sigmoid: return sigmoidOf(x);
    case Op.Softplus: return softplusOf(x);
    case Op.Relu: return Math.max(x, 0);
    case Op.Floor: return Math.floor(x);
    case Op.Ceil: return Math.ceil(x);
    case Op.Round: return Math.round(x);
    case Op.Sign: return Math.sign(x);
    case Op.StopGradient: return x;
    case Op.Lt: return x < z ? 1 : 0;
    case Op.Le: return x <= z ? 1 : 0;
    case Op.Gt: return x > z ? 1 : 0;
    case Op.Ge: return x >= z ? 1 : 0;
    case Op.Eq: return x == z ? 1 : 0;
    case Op.Erf: case Op.Erfc: case Op.NormCdf: case Op.NormLogCdf: case Op.Ndtri: case Op.Lgamma: case Op.Digamma:
      return specialForward(op, x);
  }
  return 0;
}

// The special functions' rules, out of line: one call in each sweep that inlines the switches,
// not seven (the SIMD build 0.7 KB smaller raw, the bundle 0.2 KB gzipped, when measured).
// @ts-ignore: decorator
@noinline function specialForward(op: i32, x: f64): f64 {
  switch (op) {
    case Op.Erf: return erf(x);
    case Op.Erfc: return erfc(x);
    case Op.NormCdf: return normCdf(x);
    case Op.NormLogCdf: return normLogCdf(x);
    case Op.Ndtri: return ndtri(x);
    case Op.Lgamma: return lgamma(x);
  }
  return digamma(x);
}

// @ts-ignore: decorator
@noinline function specialPartial(op: i32, x: f64, y: f64): f64 {
  switch (op) {
    case Op.Erf: return erfDerivative(x);
    case Op.Erfc: return -erfDerivative(x);
    case Op.NormCdf: return normPdf(x);
    case Op.NormLogCdf: return normLogCdfDerivative(x, y);
    case Op.Ndtri: return ndtriDerivative(y);
    case Op.Lgamma: return digamma(x);
  }
  return y == y ? trigamma(x) : NaN; // digamma: at a pole (NaN value) no derivative either
}

/** Local partial derivatives of node i: returns d/dx and leaves d/dz in `partialZ`.
 *  Shared by the reverse sweep (times the adjoint) and the tangent sweep (times the tangents),
 *  so vjp and jvp can never disagree. Ops with zero gradient return 0 and set partialZ = 0. */
export let partialZ: f64 = 0;

// @ts-ignore: decorator
@inline export function partials(op: i32, x: f64, z: f64, y: f64): f64 {
  partialZ = 0;
  switch (op) {
    case Op.Add: partialZ = 1; return 1;
    case Op.Sub: partialZ = -1; return 1;
    case Op.Mul: partialZ = x; return z;
    case Op.Div:
      if (y != y) { partialZ = NaN; return NaN; } // 0/0, Inf/Inf: no derivative
      partialZ = -y / z;
      return 1 / z;
    case Op.Neg: return -1;
    case Op.Recip: return -y * y;
    case Op.Square: return 2 * x;
    case Op.Sqrt: return 0.5 / Math.abs(y); // sqrt(-0) = -0, yet sqrt'(0) = +Inf
    case Op.Cbrt: return 1 / (3 * y * y);
    case Op.Pow: partialZ = powExponentDerivative(x, y); return powBaseDerivative(x, z);
    case Op.PowConst: return powBaseDerivative(x, z);
    case Op.Exp: return y;
    case Op.Expm1: return y > -0.5 ? y + 1 : Math.exp(x); // y + 1 cancels as y nears -1
    case Op.Log: return x > 0 ? 1 / x : x == 0 ? Infinity : NaN;
    case Op.Log1p: return x > -1 ? 1 / (1 + x) : x == -1 ? Infinity : NaN;
    case Op.Log2: return x > 0 ? 1 / x / LN2 : x == 0 ? Infinity : NaN;
    case Op.Log10: return x > 0 ? log10Partial(x) : x == 0 ? Infinity : NaN;
    case Op.Sin: return cos(x);
    case Op.Cos: return -sin(x);
    case Op.Tan: return 1 + y * y;
    case Op.Asin: return 1 / Math.sqrt((1 - x) * (1 + x));
    case Op.Acos: return -1 / Math.sqrt((1 - x) * (1 + x));
    // 1/x/x where 1 + x² overflows, past 1e154, and the partial is a subnormal number (0 at 1e155
    // for 1e-310, a probe).
    case Op.Atan: { const u = 1 + x * x; return u == Infinity && isFinite(x) ? 1 / x / x : 1 / u; }
    case Op.Atan2: {
      // V8's hypot, which the JS engine's rule takes: AssemblyScript's rounds otherwise, and the
      // partials differed between the engines at a fifth of the points (a review probe).
      const h = hypot(x, z);
      if (h == Infinity && isFinite(x) && isFinite(z)) return scaledRadiusPartials(op, x, z, 2.409919865102884e-181);
      // One operand infinite: both partials tend to 0, where Infinity / Infinity gave NaN (a probe).
      if (h == Infinity && (isFinite(x) || isFinite(z))) {
        partialZ = isFinite(x) ? -x / h / h : 0;
        return isFinite(z) ? z / h / h : 0;
      }
      partialZ = -x / h / h;
      return z / h / h;
    }
    case Op.Sinh: return Math.cosh(x);
    case Op.Cosh: return Math.sinh(x);
    case Op.Tanh: return Math.abs(y) < 0.5 ? 1 - y * y : tanhSlopeFar(x); // 1 - y² cancels as |y| nears 1
    case Op.Asinh: return 1 / hypot(x, 1);
    case Op.Acosh: return x >= 1 ? 1 / (Math.sqrt(x - 1) * Math.sqrt(x + 1)) : NaN;
    case Op.Atanh: return Math.abs(x) <= 1 ? 1 / ((1 - x) * (1 + x)) : NaN;
    case Op.Abs: return sgn(x);
    case Op.Min: partialZ = pickFirst(z, x, z < x); return pickFirst(x, z, x < z);
    case Op.Max: partialZ = pickFirst(z, x, z > x); return pickFirst(x, z, x > z);
    case Op.Hypot: {
      if (y == 0) return 0;
      if (y == Infinity && isFinite(x) && isFinite(z)) return scaledRadiusPartials(op, x, z, 2.409919865102884e-181);
      // One operand infinite: its partial is its sign, the other's 0 (Infinity / Infinity was NaN).
      if (y == Infinity && (isFinite(x) || isFinite(z))) {
        partialZ = isFinite(z) ? z / y : Math.sign(z);
        return isFinite(x) ? x / y : Math.sign(x);
      }
      // x/y gave (1, 1) at (5e-324, 5e-324), a probe.
      if (y < 2.2250738585072014e-308) return scaledRadiusPartials(op, x, z, 4.149515568880993e180);
      partialZ = z / y;
      return x / y;
    }
    case Op.Sigmoid: return y < 0.5 ? y * (1 - y) : y * sigmoidOf(-x); // 1 - y cancels as y nears 1
    // sigmoid x, from x (by exp) rather than 1 - e^{-y} (by expm1, twice the cost, and y's rounding).
    case Op.Softplus: return sigmoidOf(x);
    case Op.Relu: return x > 0 ? 1 : x == x ? 0 : NaN;
    case Op.Erf: case Op.Erfc: case Op.NormCdf: case Op.NormLogCdf: case Op.Ndtri: case Op.Lgamma: case Op.Digamma:
      return specialPartial(op, x, y);
  }
  return 0;
}

/** Directional derivatives of the partials along the tangents (tx, tz, ty = tangents of x, z, y):
 *  returns d(pa)/dt and leaves d(pb)/dt in `partialZTangent`. Piecewise-linear and zero-gradient
 *  ops have zero second derivative. */
export let partialZTangent: f64 = 0;

// @ts-ignore: decorator
@inline export function partialsTangent(op: i32, x: f64, z: f64, y: f64, tx: f64, tz: f64, ty: f64): f64 {
  partialZTangent = 0;
  // A zero tangent adds nothing (README, Numerics): with every operand's tangent 0, so is each
  // partial's, also where a formula below gives 0·∞ or 0/0 (sqrt, cbrt and recip at 0, asin at
  // ±1, sin at ±∞, sinh where it overflows...); the log family and others tested it one by one.
  if (tx == 0 && tz == 0) return 0;
  // The formulas below multiply the tangents in, so an infinite (or NaN) one meeting a second
  // partial of 0 made NaN (tanh at 0 along sqrt's infinite tangent at 0: -2·0·∞) where the
  // first-order sweeps leave such a term out: a Hessian came out NaN on one side of its diagonal
  // and finite on the other (atan(x0·x1) at (1, ∞), a probe). There, each operand on its own.
  if (tx - tx != 0 || tz - tz != 0) return partialsTangentByOperand(op, x, z, y, tx, tz);
  switch (op) {
    case Op.Mul: partialZTangent = tx; return tz;
    // Divided by z twice, not by z·z, which underflows to 0 for |z| below 1e-162 (0/0 along a
    // zero tangent); the generated sweeps emit the same (SECOND_ORDER in codegen/rules.ts).
    // y·(tz/z) left out where tz is 0: y overflows where x/z does (x = 1e308, z = 0.5), and y·0 was
    // NaN where the other order of the Hessian gives the finite -1/z² (a probe found H01 ≠ H10);
    // at 0/0 both orders are NaN, as the policy has it (dpa was -Infinity there). dpa, the change
    // of 1/z, is 0 where tz is: -0/z/z was NaN at z = 0, and H00 of x/z NaN though x/z is linear
    // in x (a probe).
    // y·(tz/z): y·tz first underflowed where the term did not (x0/x1 at (1e-200, 1e-160) along
    // (0, 1e-300): H·v half its 2e-20, a probe); y/z·tz fixed that but left x/x's two terms, tz/z/z
    // and (1/z)·tz/z, apart by a rounding (H·v of x/x not 0 along most directions: a read-through),
    // where tz/z rounds once in both. Left out where y is 0 too: tz/z overflows for a subnormal z,
    // and 0·∞ made d²(x/z)/dz² NaN at x = 0 where it is 2x/z³ = 0 (a probe).
    case Op.Div: partialZTangent = ((tz == 0 || y == 0 ? 0 : y * (tz / z)) - ty) / z; return y != y ? NaN : tz == 0 ? 0 : -tz / z / z;
    case Op.Recip: return -2 * y * ty;
    case Op.Square: return 2 * tx;
    case Op.Sqrt: return -0.5 * ty / (y * y);
    case Op.Cbrt: return -2 * ty / (3 * y * y * y);
    case Op.Pow: {
      // pa = z x^(z-1), pb = y ln x (0 at x = 0: see powExponentDerivative)
      // Outside the domain (x < 0, z no integer) both partials are NaN, and so is every second
      // partial (the mixed one was 0 at x = -Infinity, 0 < |z| < 1, where x^(z-1) is: a probe).
      if (x < 0 && z != Math.floor(z)) {
        partialZTangent = NaN;
        return NaN;
      }
      if (x == 0 && z != 0) {
        const mixed = powMixedAtZero(z);
        partialZTangent = tx == 0 ? 0 : tx * mixed;
        return (tz == 0 ? 0 : tz * mixed) + (tx == 0 || z == 1 ? 0 : tx * (z * ((z - 1) * Math.pow(x, z - 2))));
      }
      // Below 0 the partial in z, y·ln x, is NaN, and so is each second partial with z in it, also
      // where its terms alone are finite (at z = 0: tx/x and tz/x, a probe; where x^(z-1)
      // underflows, one order gave 0: a review).
      if (x < 0) {
        partialZTangent = tx != 0 || tz != 0 ? NaN : 0;
        return (tz == 0 ? 0 : NaN) + (tx == 0 || z == 0 || z == 1 ? 0 : tx * powSecondDerivative(x, z));
      }
      // y/x as x^(z-1): y over- or underflows where the mixed term is finite (at (1e155, 2) it
      // was Infinity against the other order's 7.1e157; at (1e-300, 2) 7e-4 off).
      // (At x = -0 and z = 0, 1/|x|: the limit from x > 0, as at +0; 1/x gave -Infinity, a probe.)
      const xz1 = z == 0 ? 1 / Math.abs(x) : Math.pow(x, z - 1);
      const lnx = Math.log(x);
      partialZTangent = (ty == 0 ? 0 : ty * lnx) + (tx == 0 ? 0 : tx * xz1);
      if (partialZTangent != partialZTangent) partialZTangent = powMixedApart(z, y, tx, tz, xz1, lnx);
      if (z == 0) return tz == 0 ? 0 : tz * xz1;
      // The mixed term x^(z-1)(1 + z ln x) is 0 where the power is (x = Infinity, z < 1: 0·∞ gave
      // NaN against the other order's 0, a probe), as at x = 0.
      // As a sum, the other order's terms (so the two agree bit for bit), but factored where the
      // sum is ∞ − ∞ (x^(z-1) overflowing: x = 1e-310, z = 1e-8, NaN against the other order's
      // +Infinity, a probe); NaN, as the x-partial z·x^(z-1) = ∞·0 is, where z is infinite.
      const mixed = xz1 == 0 && isFinite(z) ? 0 : xz1 + z * xz1 * Math.log(x);
      return (tz == 0 ? 0 : tz * (mixed == mixed ? mixed : xz1 * (1 + z * Math.log(x)))) + (tx == 0 || z == 1 ? 0 : tx * powSecondDerivative(x, z));
    }
    // z(z-1)x^(z-2) (see powSecondDerivative); z(z-1) before a zero power gave ∞·0 (z = 1e155 at
    // 0, whose limit is 0): at 0 the limit from x > 0, with the power taken first.
    case Op.PowConst: return z == 0 || z == 1 ? 0 : tx * powSecondDerivative(x, z);
    case Op.Exp: return ty;
    case Op.Expm1: return ty;
    // Outside the domain NaN, as the first partial is (the formulas alone are finite there), but
    // 0 along a zero tangent, as the tangent sweep adds nothing for one: a NaN element of a vector
    // leaves the Hessian's cross terms with the others 0, as the gradient keeps theirs.
    // Divided by x twice, not by x·x, which overflows past 1e154 where the result is a subnormal
    // number (log'' at 1e155: 0 for -1e-310, a probe).
    case Op.Log: return tx == 0 ? 0 : x >= 0 ? -tx / x / x : NaN;
    case Op.Log1p: return tx == 0 ? 0 : x >= -1 ? -tx / (1 + x) / (1 + x) : NaN;
    case Op.Log2: return tx == 0 ? 0 : x >= 0 ? -tx / x / (x * LN2) : NaN;
    case Op.Log10: return tx == 0 ? 0 : x >= 0 ? -tx / x / (x * LN10) : NaN;
    // sin'' = -sin and cos'' = -cos: the node's own value y, not a second evaluation.
    case Op.Sin: return -tx * y;
    case Op.Cos: return -tx * y;
    case Op.Tan: return 2 * y * ty;
    case Op.Asin: { const u = (1 - x) * (1 + x); return tx * x / (u * Math.sqrt(u)); }
    case Op.Acos: { const u = (1 - x) * (1 + x); return -tx * x / (u * Math.sqrt(u)); }
    // Where the denominator overflows the second derivative is a zero (its limit), never NaN
    // from Infinity / Infinity: -sign(x)·tx·0 keeps the sign the formula's underflow gives.
    // Far out in units of 1/x, as src/js/rules.ts (its comment says why).
    case Op.Atan: {
      if (Math.abs(x) > 1e38) { const r = 1 / x, q = 1 + r * r; return -2 * r * r * r * tx / (q * q); }
      const u = 1 + x * x, d = u * u; return d == Infinity ? -Math.sign(x) * tx * 0 : -2 * x * tx / d;
    }
    case Op.Atan2: {
      // In units of h = hypot(x, z), as the first partials: x^2 + z^2 overflowed from |x| near
      // 1e154 (a NaN Hessian where the gradient is finite) and underflowed below 1e-154.
      // With u² + w² = 1: tz − 2w(u·tx + w·tz) = −(w² − u²)·tz − 2uw·tx, and the same for tx. The
      // differences of nearly equal terms left rounding that 1/h² then blew up (H01 = +Infinity,
      // H10 = −Infinity at (1e-170, 1e-170), whose true value is 0).
      // One operand infinite: its unit component is its sign (Infinity / Infinity was NaN), and
      // the terms over h² go to 0, their limit.
      const h = hypot(x, z), far = h == Infinity && (isFinite(x) || isFinite(z));
      const u = far && !isFinite(x) ? Math.sign(x) : x / h, w = far && !isFinite(z) ? Math.sign(z) : z / h;
      // w² − u² as (w − u)(w + u), the factor that would cancel taken from the operands
      // themselves (z − x is exact where they are close, and no larger than h where their signs
      // agree): u and w each rounded, w² − u² lost up to all of its value where |x| ≈ |z| (H01
      // −1.67e-16 at (1, 1 + 2^-52), whose true value is −1.11e-16: a probe).
      const same = (x < 0) == (z < 0);
      const c = 2 * u * w, d = far ? (w - u) * (w + u) : same ? ((z - x) / h) * (w + u) : (w - u) * ((z + x) / h);
      partialZTangent = (c * tz - d * tx) / h / h;
      return -(d * tz + c * tx) / h / h;
    }
    case Op.Sinh: return tx * Math.sinh(x);
    case Op.Cosh: return tx * Math.cosh(x);
    case Op.Tanh: return -2 * y * ty;
    case Op.Asinh: {
      if (Math.abs(x) > 1e50) { const r = 1 / x, q = 1 + r * r; return -Math.sign(x) * r * r * tx / (q * Math.sqrt(q)); }
      const u = x * x + 1, d = u * Math.sqrt(u); return d == Infinity ? -Math.sign(x) * tx * 0 : -x * tx / d;
    }
    case Op.Acosh: {
      if (x > 1e50) { const r = 1 / x, q = (1 - r) * (1 + r); return -r * r * tx / (q * Math.sqrt(q)); }
      const u = (x - 1) * (x + 1), d = u * Math.sqrt(u); return x >= 1 ? (d == Infinity ? -tx * 0 : -x * tx / d) : tx == 0 ? 0 : NaN;
    }
    case Op.Atanh: { const u = (1 - x) * (1 + x); return Math.abs(x) <= 1 ? 2 * x * tx / (u * u) : tx == 0 ? 0 : NaN; }
    case Op.Hypot: {
      if (y == 0) return 0;
      // In units of y, as the first partials: y·y overflowed past 1e154 and underflowed below 1e-162.
      // One operand infinite: its unit component is its sign, and the terms over y go to 0.
      // With u = x/y, w = z/y: d(u) = (tx − u·ty)/y = w·(w·tx − u·tz)/y, as u² + w² = 1; the
      // difference tx − u·ty cancelled to 1 − u² where |z| ≪ |x| (H00 0 at (1, 1e-8), whose true
      // value is 1e-16: a probe), and the same for d(w).
      // Divided by y before the second factor where y is normal: u·u underflowed where the ratio
      // of the operands is below 1e-154, though u²/y is a normal double (a review probe: 0 at
      // (1e-210, 1e-40), where it is 1e-300); where y is subnormal that order would overflow.
      const far = y == Infinity && (isFinite(x) || isFinite(z));
      const u = far && !isFinite(x) ? Math.sign(x) : x / y, w = far && !isFinite(z) ? Math.sign(z) : z / y;
      if (y < 2.2250738585072014e-308 || (y == Infinity && isFinite(x) && isFinite(z))) return hypotTangentScaled(x, z, tx, tz, y == Infinity ? 2.409919865102884e-181 : 4.149515568880993e180);
      partialZTangent = u * ((u * tz - w * tx) / y);
      return w * ((w * tx - u * tz) / y);
    }
    // 1 - 2y as -tanh(x/2), as src/js/rules.ts (y near 1/2 left only its rounding).
    case Op.Sigmoid: return ty * -Math.tanh(0.5 * x);
    case Op.Softplus: return ty * Math.exp(-y);
    // The derivative vanishes at ±Inf: so does its own, not 0·Inf.
    case Op.Erf: { const d = erfDerivative(x); return d == 0 ? 0 : -2 * x * d * tx; }
    case Op.Erfc: { const d = erfDerivative(x); return d == 0 ? 0 : 2 * x * d * tx; }
    case Op.NormCdf: { const d = normPdf(x); return d == 0 ? 0 : -x * d * tx; }
    case Op.NormLogCdf: { const d = normLogCdfDerivative(x, y); return d == 0 ? 0 : normLogCdfSecond(x, d) * tx; }
    // A zero tangent adds nothing, also where the second derivative is infinite (Infinity · 0).
    case Op.Ndtri: { const d = ndtriDerivative(y); return tx == 0 ? 0 : y * d * d * tx; }
    // At a pole (a negative integer, or −Inf) its gradient ψ is NaN, and so is this (trigamma's
    // two-sided +Inf made an hvp +Inf beside a NaN gradient: a probe), as digamma's partial.
    case Op.Lgamma: return tx == 0 ? 0 : x < 0 && x == Math.floor(x) ? NaN : trigamma(x) * tx;
    case Op.Digamma: return tx == 0 ? 0 : tetragamma(x) * tx;
  }
  return 0;
}

// Out-of-line copies of the rules for the colder sweeps (tangent, second order). The hot sweeps
// (forward, reverse, and the per-lane path of the SIMD kernel) inline the switches: there the
// call cost is measurable (SIMD batch of a 20-node function: 1.38x -> 1.50x over the scalar
// kernel when inlined), in the colder sweeps it is not, and inlining everywhere doubled the code.
export function partialsCall(op: i32, x: f64, z: f64, y: f64): f64 {
  return partials(op, x, z, y);
}
// @ts-ignore: decorator
@noinline export function forwardRuleCall(op: i32, x: f64, z: f64): f64 {
  return forwardRule(op, x, z);
}
// partialsTangent's terms along each operand's tangent apart, summed: a finite tangent through the
// rule's own formula (the other operand's tangent 0), an infinite or NaN one as its second
// partials along a unit tangent (finite, so this does not recur) times it, a term left out where
// the partial or the tangent is 0. (Every term per unit tangent made div's -1/z/z overflow for
// |z| below 1e-154 where -tz/z/z of a tiny finite tz had been finite: a probe.)
// @ts-ignore: decorator
@noinline function partialsTangentByOperand(op: i32, x: f64, z: f64, y: f64, tx: f64, tz: f64): f64 {
  const pa = partialsCall(op, x, z, y), pb = partialZ;
  const aa = alongOperand(op, x, z, y, tx, pa, true), ba = partialZTangent;
  let ab: f64 = 0, bb: f64 = 0;
  if (opArity(op) == 2) {
    ab = alongOperand(op, x, z, y, tz, pb, false);
    bb = partialZTangent;
  }
  partialZTangent = ba + bb;
  return aa + ab;
}

// One operand's terms (see above): d(pa) returned, d(pb) in partialZTangent.
function alongOperand(op: i32, x: f64, z: f64, y: f64, t: f64, p: f64, first: bool): f64 {
  if (t - t == 0) return first ? partialsTangentCall(op, x, z, y, t, 0, termOf(p, t)) : partialsTangentCall(op, x, z, y, 0, t, termOf(p, t));
  const d = first ? partialsTangentCall(op, x, z, y, 1, 0, p) : partialsTangentCall(op, x, z, y, 0, 1, p);
  partialZTangent = termOf(partialZTangent, t);
  return termOf(d, t);
}

// @ts-ignore: decorator
@inline function termOf(p: f64, t: f64): f64 { return p == 0 || t == 0 ? 0 : p * t; }

// @ts-ignore: decorator
@noinline export function partialsTangentCall(op: i32, x: f64, z: f64, y: f64, tx: f64, tz: f64, ty: f64): f64 {
  return partialsTangent(op, x, z, y, tx, tz, ty);
}
