// The op methods' documentation, written once for the Var methods and the handle API (each with
// its own operands, `A`, and result, `R`), keyed by the op table's names: tape.ts checks that the
// keys are exactly the table's unary and binary ops, so a new op cannot go undocumented. (The
// methods were mapped types over the names, which editors showed with no documentation: a probe.)
// x is the receiver (the first handle), y the operand (the second).
import type { BinaryOpName, UnaryOpName } from './ops.ts';

/** Ops of one operand. Derivatives are exact; kinks take the minimum-norm subgradient. */
export interface UnaryOps<A extends unknown[], R> {
  /** −x. */
  neg(...operands: A): R;
  /** 1/x. */
  recip(...operands: A): R;
  /** x². */
  square(...operands: A): R;
  /** √x: NaN below 0, gradient +Infinity at 0. */
  sqrt(...operands: A): R;
  /** ∛x, real for x < 0 too (gradient +Infinity at 0). */
  cbrt(...operands: A): R;
  /** eˣ (Infinity past about 709.78). */
  exp(...operands: A): R;
  /** eˣ − 1, exact near 0. */
  expm1(...operands: A): R;
  /** ln x: −Infinity at 0, NaN below. */
  log(...operands: A): R;
  /** ln(1 + x), exact near 0. */
  log1p(...operands: A): R;
  /** log₂ x. */
  log2(...operands: A): R;
  /** log₁₀ x. */
  log10(...operands: A): R;
  /** sin x (radians). A sin and a cos of one operand side by side share their partials. */
  sin(...operands: A): R;
  /** cos x (radians). */
  cos(...operands: A): R;
  /** tan x (radians). */
  tan(...operands: A): R;
  /** asin x on [−1, 1], NaN outside. */
  asin(...operands: A): R;
  /** acos x on [−1, 1], NaN outside. */
  acos(...operands: A): R;
  /** atan x. */
  atan(...operands: A): R;
  /** sinh x. */
  sinh(...operands: A): R;
  /** cosh x. */
  cosh(...operands: A): R;
  /** tanh x. */
  tanh(...operands: A): R;
  /** asinh x. */
  asinh(...operands: A): R;
  /** acosh x for x ≥ 1, NaN below. */
  acosh(...operands: A): R;
  /** atanh x on (−1, 1). */
  atanh(...operands: A): R;
  /** |x|, gradient sign(x) and 0 at 0. */
  abs(...operands: A): R;
  /** 1 / (1 + e⁻ˣ), overflow-safe. */
  sigmoid(...operands: A): R;
  /** ln(1 + eˣ), overflow-safe. */
  softplus(...operands: A): R;
  /** max(x, 0), gradient 0 at 0. */
  relu(...operands: A): R;
  /** ⌊x⌋, zero gradient (no tangent passes it either). */
  floor(...operands: A): R;
  /** ⌈x⌉, zero gradient. */
  ceil(...operands: A): R;
  /** Math.round(x) (halves up), zero gradient. */
  round(...operands: A): R;
  /** −1, ±0 or 1 (NaN for NaN), zero gradient. */
  sign(...operands: A): R;
  /** x's value with zero gradient: what is computed from it is a constant to the sweeps. */
  stopGradient(...operands: A): R;
  /** The error function erf x (fdlibm's approximation, a few ulps). */
  erf(...operands: A): R;
  /** 1 − erf x without the cancellation, 0 from 27.3. */
  erfc(...operands: A): R;
  /** Φ(x), the standard normal CDF. */
  normCdf(...operands: A): R;
  /** ln Φ(x), accurate far into the lower tail (gradient ≈ −x there). */
  normLogCdf(...operands: A): R;
  /** Φ⁻¹(p), the standard normal quantile: ∓Infinity at 0 and 1, NaN outside [0, 1]. */
  ndtri(...operands: A): R;
  /** ln |Γ(x)|: +Infinity at 0 and the negative integers. */
  lgamma(...operands: A): R;
  /** ψ(x), the digamma function Γ′/Γ: NaN at the negative integers. */
  digamma(...operands: A): R;
}

/** Ops of two operands, x the receiver and y the operand (a Var, a handle or a number). */
export interface BinaryOps<A extends unknown[], R> {
  /** x + y. */
  add(...operands: A): R;
  /** x − y. */
  sub(...operands: A): R;
  /** x · y. */
  mul(...operands: A): R;
  /** x / y. */
  div(...operands: A): R;
  /** xʸ. A number exponent records `powConst`, which never touches ln x (so (−2)³ has
   *  gradient 12); a Var exponent's partial ln(x)·xʸ is NaN for x < 0. */
  pow(...operands: A): R;
  /** atan2(x, y) as Math.atan2: the angle of the point (y, x). */
  atan2(...operands: A): R;
  /** min(x, y); at a tie each gets half the gradient. */
  min(...operands: A): R;
  /** max(x, y); at a tie each gets half the gradient. */
  max(...operands: A): R;
  /** √(x² + y²) without overflow or underflow; gradient (0, 0) at (0, 0). */
  hypot(...operands: A): R;
  /** 1 where x < y, else 0 (a comparison: zero gradient; a compiled function guards on it). */
  lt(...operands: A): R;
  /** 1 where x ≤ y, else 0 (zero gradient). */
  le(...operands: A): R;
  /** 1 where x > y, else 0 (zero gradient). */
  gt(...operands: A): R;
  /** 1 where x ≥ y, else 0 (zero gradient). */
  ge(...operands: A): R;
  /** 1 where x = y, else 0 (zero gradient). */
  eq(...operands: A): R;
}

// Exactly the table's names: a missing or an extra one fails to compile (a type, so the bundle
// carries nothing of it).
type Same<P, Q> = [P] extends [Q] ? ([Q] extends [P] ? true : false) : false;
type Holds<T extends true> = T;
/** @internal */
export type OpDocsCoverTheTable = [Holds<Same<keyof UnaryOps<[], 0>, UnaryOpName>>, Holds<Same<keyof BinaryOps<[], 0>, BinaryOpName>>];
