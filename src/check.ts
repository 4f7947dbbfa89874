// Finite differences and the gradient checker (like torch.autograd.gradcheck, jax check_grads).
import type { BackendChoice } from './backend.ts';
import { GradcheckError, MissingRuleError, NotANumberError, TapegradError, checkHeld, countOf, describe, isArrayLike, newFloat64, notAnOutput, typedArrayKind, unreadableError, unreadableView } from './errors.ts';
import type { Tape, Var } from './tape.ts';
import { BACKEND_RULE, readOptions } from './options.ts';
import { callOn, checkFunction, recordOn, scalarOutput, withTape, type RuntimeVector, type ScalarOutput } from './transforms.ts';
import type { Vec } from './vector.ts';

/** A scalar function as every transform and checker takes it: a Var[] (one Var per input) in,
 *  a Var (or a number) out. */
export type ScalarFunction = (x: Var[]) => ScalarOutput;

/** Options of `finiteDifferenceGradient` (and of `gradcheck`'s finite differences). */
export interface FiniteDifferenceOptions {
  /** Step for component k at value x (default cbrt(eps) * max(1, |x|), as Stan). */
  step?: ((x: number, k: number) => number) | undefined;
}

// Central 6-point stencil (sixth order): f' ≈ Σ c_j (f(x + j h) - f(x - j h)) / h.
const STENCIL = [[1, 3 / 4], [2, -3 / 20], [3, 1 / 60]] as const;
const DEFAULT_STEP = (x: number): number => Math.cbrt(Number.EPSILON) * Math.max(1, Math.abs(x));

/** Gradient of a plain-number function `f` at `x` by the central 6-point stencil, in the
 *  transforms' convention: a number x (f of a number) gives a number, an array x (f of a
 *  Float64Array) a Float64Array. */
export function finiteDifferenceGradient(f: (x: number) => number, x: number, options?: FiniteDifferenceOptions): number;
export function finiteDifferenceGradient(f: (x: Float64Array) => number, x: ArrayLike<number>, options?: FiniteDifferenceOptions): Float64Array;
export function finiteDifferenceGradient(
  f: ((x: number) => number) | ((x: Float64Array) => number),
  x: number | ArrayLike<number>,
  options: FiniteDifferenceOptions = {},
): number | Float64Array {
  checkFunction(f, 'finiteDifferenceGradient');
  options = readOptions(options, 'finiteDifferenceGradient', { step: 'function' });
  if (typeof x === 'number') {
    const g = (f as (x: number) => number);
    return stencil((p) => g(p[0]!), [x], options)[0]!;
  }
  return stencil(f as (x: Float64Array) => number, x, options);
}

/** The step for component k at value x, checked; `where` names the caller in errors. */
function stepAt(options: FiniteDifferenceOptions, x: number, k: number, where: string): number {
  // The default step of NaN or an infinity is no number: name the point, not a step nobody gave.
  if (!options.step && !Number.isFinite(x)) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: input ${k} is ${x}, not a finite point`);
  }
  const h = (options.step ?? DEFAULT_STEP)(x, k);
  if (!(typeof h === 'number' && h > 0 && h < Infinity)) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: step(${x}, ${k}) must return a finite positive number, got ${typeof h === 'number' ? h : describe(h)}`);
  }
  // A step x ± h rounds away resolves nothing: the differences were 0 and their rounding bound
  // huge, so gradcheck passed any gradient (a probe: ok at x = 1e7 with h = 1e-10).
  if (x + h === x || x - h === x) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: step(${x}, ${k}) = ${h} does not move input ${k}: ${x} ± ${h} rounds to ${x}`);
  }
  return h;
}

// The stencil's gradient, and per component its rounding: each value of f carries up to an ulp
// of itself, so the sum of the terms' magnitudes times ε over h bounds what the differences
// cannot resolve (f = x + 1e7: about 7e-4, where a probe's exact gradient 1 failed at 8e-7).
function stencil(
  f: (x: Float64Array) => number, x: ArrayLike<number>, options: FiniteDifferenceOptions, where = 'finiteDifferenceGradient', noise?: Float64Array,
): Float64Array {
  // The length read once (a review: read three times, a Proxy's -1 at the last was V8's raw RangeError).
  const n = countOf(x);
  if (n < 0) throw new NotANumberError(`${where}: the point must be a number or an array of numbers, got ${describe(x)}`);
  if (n === 0 && unreadableView(x)) throw unreadableError(`${where}: the point`);
  // Each entry read once, as it is checked and copied, up to the length read once: Float64Array.from
  // went by a typed array's iterator, past the `length` of its own the checks had gone by (a
  // review: 3 entries differentiated, 2 checked).
  if (typedArrayKind(x) !== undefined) checkHeld(x as unknown as ArrayBufferView, n, `${where}: the point`);
  const point = newFloat64(n, `${where}: the point`), given = new Float64Array(point.length);
  for (let k = 0; k < point.length; k++) {
    const v = x[k];
    if (typeof v !== 'number') throw new NotANumberError(`${where}: entry ${k} of the point must be a number, got ${describe(v)}`);
    point[k] = v;
  }
  const out = new Float64Array(point.length);
  // What f returns is a number, or the stencil is no gradient (null read as 0, '4' as 4: a probe).
  // f gets an array of its own each time, as the transforms give theirs (one that reordered the
  // stencil's point moved every later step: a review).
  const value = (): number => {
    given.set(point);
    const v: unknown = f(given);
    // notAnOutput handles an async f's rejection, which ended the process after the caller had
    // caught this error (a probe).
    if (typeof v !== 'number') throw new NotANumberError(`${where}: f must return a number, got ${notAnOutput(v)}`);
    return v;
  };
  for (let k = 0; k < point.length; k++) {
    const xk = point[k]!;
    const h = stepAt(options, xk, k, where);
    let sum = 0, magnitude = 0;
    for (const [j, c] of STENCIL) {
      point[k] = xk + j * h;
      const up = value();
      point[k] = xk - j * h;
      const down = value();
      sum += c * (up - down);
      magnitude += Math.abs(c) * (Math.abs(up) + Math.abs(down));
    }
    point[k] = xk;
    out[k] = sum / h;
    // Each value, difference, product and sum rounds by at most half an ulp of its size, or half
    // the least subnormal where it is subnormal: a probe's step of 5e-324 at 1e-310 gave 2 for a
    // gradient of 3, and gradcheck, counting relative rounding alone, failed a correct gradient.
    if (noise) noise[k] = (Number.EPSILON * magnitude + 8 * Number.MIN_VALUE) / h;
  }
  return out;
}

// normwiseError's error with each component's difference reduced by what the finite differences
// cannot resolve there (`noise`, on the same scale): 0 where the two agree within it.
// Without `noise`, normwiseError's measure itself.
function errorBeyond(g: ArrayLike<number>, ref: ArrayLike<number>, noise: ArrayLike<number> | null): { error: number; worst: number } {
  const scale = scaleOf(ref);
  // No component: no input to name (0 named one there was none of).
  let error = 0, worst = ref.length > 0 ? 0 : -1;
  for (let k = 0; k < ref.length; k++) {
    const a = g[k]!, b = ref[k]!;
    // NaN on both sides agrees (gradcheck refuses a NaN gradient on its own).
    if (a === b || (Number.isNaN(a) && Number.isNaN(b))) continue;
    // NaN or an infinity on one side stays an infinite error, whatever the rounding (a NaN f
    // value makes that NaN too, and NaN - NaN counted nothing).
    const e = difference(a, b, scale), rounding = noise ? noise[k]! / scale : 0;
    const d = e === Infinity ? Infinity : Math.max(0, rounding > 0 ? e - rounding : e);
    if (d > error) {
      error = d;
      worst = k;
    }
  }
  return { error, worst };
}

// max(1, max|ref|) over ref's finite entries: what the normwise errors divide by.
function scaleOf(ref: ArrayLike<number>): number {
  let scale = 1;
  for (let k = 0; k < ref.length; k++) if (Number.isFinite(ref[k]!)) scale = Math.max(scale, Math.abs(ref[k]!));
  return scale;
}

// |a - b| / scale; Infinity where one is NaN or infinite; where a - b alone overflows (1.7e308
// against -1.7e308: 2, not Infinity, for a scale of 1.7e308), in units of the scale.
function difference(a: number, b: number, scale: number): number {
  const d = Math.abs(a - b);
  if (d < Infinity) return d / scale;
  return Number.isFinite(a) && Number.isFinite(b) ? Math.abs(a / scale - b / scale) : Infinity;
}

/** max|g - ref| / max(1, max|ref|): the normwise error the checks use. NaN where both are NaN
 *  at the same components counts as agreement; NaN on one side only is an infinite error. */
export function normwiseError(g: ArrayLike<number>, ref: ArrayLike<number>): { error: number; worst: number } {
  for (const [what, v] of [['g', g], ['ref', ref]] as const) {
    if (!isArrayLike(v)) throw new NotANumberError(`normwiseError: ${what} must be an array of numbers, got ${describe(v)}`);
    if (v.length === 0 && unreadableView(v)) throw unreadableError(`normwiseError: ${what}`);
  }
  // Compared entry by entry over ref alone, a short g read undefined (no error) and a long one
  // went unchecked past ref's end.
  if (g.length !== ref.length) throw new TapegradError('INVALID_ARGUMENT', `normwiseError: g has ${g.length} entries and ref ${ref.length}; they must have the same length`);
  for (const [what, v] of [['g', g], ['ref', ref]] as const) {
    for (let k = 0; k < v.length; k++) {
      if (typeof v[k] !== 'number') throw new NotANumberError(`normwiseError: entry ${k} of ${what} must be a number, got ${describe(v[k])}`);
    }
  }
  return errorBeyond(g, ref, null);
}

/** Options of `gradcheck`. */
export interface GradcheckOptions extends FiniteDifferenceOptions {
  /** Backend to record on (default 'wasm'; the core must be loaded: `await init()`), see BackendChoice. */
  backend?: BackendChoice | undefined;
  /** Largest error accepted per component beyond the finite differences' own rounding (default
   *  1e-7; README, Checking gradients): `error`, the normwise error, may exceed it where the
   *  stencil's rounding does. */
  tolerance?: number | undefined;
  /** Throw a GradcheckError (code 'GRADCHECK_FAILED', the result in `result`) describing the
   *  worst component instead of returning ok: false. */
  raise?: boolean | undefined;
  /** Pass an array x to f as one Vec instead of a Var[]. */
  vector?: boolean | undefined;
  /** 2 also checks second order, as jax's check_grads(order=2) or torch's gradgradcheck: the
   *  tape's Hessian-vector product along a fixed direction (forward over reverse, so custom rules'
   *  jvp and vjpTangent) against central differences of the tape gradient, input by input with
   *  each input's step. Default 1. */
  order?: 1 | 2 | undefined;
}

/** What `gradcheck` returns (and what a GradcheckError carries in `result`). */
export interface GradcheckResult {
  /** Every check below passed (the second-order one too with `order: 2`). */
  ok: boolean;
  /** |<t, Jᵀc> - <J t, c>| / max(1, |<J t, c>|, Σ_k |t_k (Jᵀc)_k|) for a fixed direction t and
   *  cotangent c = 1: the forward (tangent) sweep against the reverse sweep, relative to the
   *  terms too (their rounding outlives their cancelling); Infinity where one side alone is NaN
   *  or infinite. NaN when the tangent of a custom node without jvp reaches f's output, so there
   *  is no tangent sweep to compare. */
  dualityError: number;
  /** The normwise error of the tape gradient against the finite differences:
   *  max|analytic - numeric| / max(1, max|numeric|). */
  error: number;
  /** The input index where the normwise error is largest; where the gradient fails, the input the
   *  failure names instead (a NaN gradient's, else the one furthest beyond the finite
   *  differences' rounding), as `{ raise: true }`'s message does. */
  worst: number;
  /** The tape gradient at x. */
  analytic: Float64Array;
  /** The finite-difference gradient at x (central 6-point stencil). */
  numeric: Float64Array;
  /** With `order: 2`, the normwise error of H·t (the tape's hvp along the direction t of
   *  dualityError) against Σ_k t_k·(H e_k), each column the central differences of the gradient
   *  in input k; NaN with order 1. */
  secondOrderError: number;
  // A field of its own: a probe read `worst`, the first order's, for it.
  /** With `order: 2`, the input where H·t is furthest beyond its finite differences' rounding
   *  (the one a failure names), else -1. */
  secondOrderWorst: number;
}

/** Records `f` at `x`, differentiates it on the tape and compares with finite differences. `f`
 *  takes what the transforms' functions take: one Var for a number x, a Var[] for an array x, one
 *  Vec with `{ vector: true }`. */
export function gradcheck(f: (x: Var) => ScalarOutput, x: number, options?: GradcheckOptions & { vector?: false | undefined }): GradcheckResult;
export function gradcheck(f: (x: Vec) => ScalarOutput, x: ArrayLike<number>, options: GradcheckOptions & { vector: true }): GradcheckResult;
export function gradcheck(f: (x: Var[]) => ScalarOutput, x: ArrayLike<number>, options?: GradcheckOptions & { vector?: false | undefined }): GradcheckResult;
export function gradcheck<O extends GradcheckOptions>(f: ((x: Var) => ScalarOutput) | ((x: Var[]) => ScalarOutput) | ((x: Vec) => ScalarOutput), x: number | ArrayLike<number>, options: (O & RuntimeVector<O, GradcheckOptions>) | undefined): GradcheckResult;
export function gradcheck(f: (x: never) => ScalarOutput, x: number | ArrayLike<number>, options: GradcheckOptions = {}): GradcheckResult {
  checkFunction(f, 'gradcheck');
  options = readOptions(options, 'gradcheck', { backend: BACKEND_RULE, tolerance: 'number', raise: 'boolean', vector: 'boolean', step: 'function', order: [1, 2] });
  if (options?.tolerance !== undefined && !(options.tolerance >= 0)) {
    throw new TapegradError('INVALID_ARGUMENT', `gradcheck: tolerance must be a number >= 0, got ${options.tolerance}`);
  }
  const scalarInput = typeof x === 'number';
  if (!scalarInput && !isArrayLike(x)) throw new NotANumberError(`gradcheck: x must be a number or an array of numbers, got ${describe(x)}`);
  // On the transforms' pooled tapes: a tape of its own per call cost 2-3 ms on wasm (a probe).
  return withTape(options, (tape) => checkOn(tape, f, x, options, scalarInput));
}

function checkOn(tape: Tape, f: (x: never) => ScalarOutput, x: number | ArrayLike<number>, options: GradcheckOptions, scalarInput: boolean): GradcheckResult {
  const record = (point: ArrayLike<number>): { inputs: (Var | Vec)[]; output: Var } => {
    const { inputs, arg } = recordOn(tape, scalarInput ? point[0]! : point, options, 'gradcheck');
    return { inputs, output: scalarOutput(tape, callOn(tape, f, arg, 'gradcheck'), 'gradcheck') };
  };
  const valueAt = (point: ArrayLike<number>): number => {
    tape.reset();
    return record(point).output.value;
  };
  const point: ArrayLike<number> = scalarInput ? [x as number] : (x as ArrayLike<number>);
  // Everything that reads the recording at the point runs before the stencils (which reset the
  // tape), and first: an error of f or of the input's form then shows the caller's x, not x + h.
  const { inputs, output } = record(point);
  const analytic = tape.gradient(output, inputs);
  // A direction with no zero or repeated entries, so no component escapes the check.
  const direction = Float64Array.from(analytic, (_, k) => 1 + ((k * 0.618033988749895) % 1));
  // Terms that cancel leave rounding of their own size in the sum: dualityError is relative to them.
  let reverse = 0, terms = 0;
  for (let k = 0; k < analytic.length; k++) {
    reverse += direction[k]! * analytic[k]!;
    terms += Math.abs(direction[k]! * analytic[k]!);
  }
  // A custom node whose tangent reaches the output may have no jvp; then only the finite
  // differences judge (dualityError NaN).
  const forward = hasTangents(tape, inputs, direction, output);
  // As normwiseError: NaN on both sides agrees, a NaN or an infinity on one side only is an
  // infinite error (a jvp returning NaN passed as NaN, which no `> tolerance` test fails).
  const dualityError = forward === null ? NaN
    : forward === reverse || (Number.isNaN(forward) && Number.isNaN(reverse)) ? 0
    : Number.isFinite(forward - reverse) ? Math.abs(forward - reverse) / Math.max(1, Math.abs(forward), terms) : Infinity;
  const tolerance = options.tolerance ?? 1e-7;
  // Order 2 asks for the tangent sweep and vjpTangent by name: a custom rule without them throws
  // its MissingRuleError here rather than passing unchecked.
  const second = options.order === 2 ? checkSecondOrder(tape, record, point, direction, inputs, output, options) : undefined;
  const secondOrderError = second?.error ?? NaN;
  const noise = new Float64Array(point.length);
  const numeric = stencil(valueAt, point, options, 'gradcheck', noise);
  const { error, worst } = normwiseError(analytic, numeric);
  // Judged beyond the finite differences' rounding (a function of size 1e7 failed an exact
  // gradient at 8e-7, a probe), and a NaN gradient never passes (sqrt at -1 was ok: NaN agreed
  // with NaN).
  const beyond = errorBeyond(analytic, numeric, noise);
  const firstFails = beyond.error > tolerance || analytic.some(Number.isNaN);
  const secondFails = second !== undefined && (second.beyond.error > tolerance || second.analytic.some(Number.isNaN));
  const ok = !firstFails && !(dualityError > 1e-12) && !secondFails;
  const nan = analytic.findIndex(Number.isNaN);
  // The component that fails beyond its rounding (the plain normwise worst may be within its
  // own: a review probe's message named an input that passed); NaN where f is NaN around the
  // point names the input whose gradient is NaN (a probe's named input 1, whose finite difference
  // was NaN for f's, and not its gradient). `worst` names the same input as the message (a probe
  // read input 1, whose gradient was right, where the message named input 0).
  const at = beyond.worst, at2 = second?.beyond.worst ?? 0;
  const nanFails = nan >= 0 && (!(beyond.error > tolerance) || Number.isNaN(numeric[at]!));
  const result: GradcheckResult = {
    ok, error, worst: !firstFails ? worst : nanFails ? nan : at, dualityError, analytic, numeric, secondOrderError,
    secondOrderWorst: second?.beyond.worst ?? -1,
  };
  if (!ok && options.raise) {
    throw new GradcheckError(
      firstFails
        ? nanFails
          ? `gradcheck failed: the gradient is NaN at input ${nan} (a point outside f's domain checks nothing)`
          : `gradcheck failed: normwise error ${error.toExponential(3)}, beyond the finite differences' rounding at input ${at} ` +
            `(analytic ${analytic[at]}, finite difference ${numeric[at]}, whose rounding there is up to ${noise[at]!.toExponential(1)})`
        : dualityError > 1e-12
          ? `gradcheck failed: the tangent sweep disagrees with the reverse sweep (<J t, 1> = ${forward}, <t, Jᵀ1> = ${reverse})`
          : `gradcheck failed: hvp off the finite differences of the gradient: normwise error ${secondOrderError.toExponential(3)}, ` +
            `beyond their rounding at input ${at2} (hvp ${second!.analytic[at2]}, finite difference ${second!.numeric[at2]}, ` +
            `whose rounding there is up to ${second!.noise[at2]!.toExponential(1)})`,
      result,
    );
  }
  return result;
}

// H·t from the tape (on the recording at the point, still on it) against Σ_k t_k·(H e_k), each
// column the 6-point stencil of the tape gradient in input k alone with that input's own step, as
// the first-order check steps: one step along t for every input moved a small input by a large
// one's step (x = [1e4, 1]: 10% of the second).
function checkSecondOrder(
  tape: Tape, record: (point: ArrayLike<number>) => { inputs: (Var | Vec)[]; output: Var }, point: ArrayLike<number>,
  direction: Float64Array, inputs: (Var | Vec)[], output: Var, options: GradcheckOptions,
): { error: number; worst: number; beyond: { error: number; worst: number }; analytic: Float64Array; numeric: Float64Array; noise: Float64Array } {
  const analytic = tape.hvp(output, inputs, direction);
  const noise = new Float64Array(analytic.length);
  const moved = Float64Array.from(point);
  const gradientAt = (): Float64Array => {
    tape.reset();
    const { inputs: at, output: out } = record(moved);
    return tape.gradient(out, at);
  };
  const numeric = new Float64Array(analytic.length);
  for (let k = 0; k < moved.length; k++) {
    const xk = point[k]!;
    const h = stepAt(options, xk, k, 'gradcheck');
    // The column's stencil sum, scaled by t_k / h into the product.
    const scale = direction[k]! / h;
    for (const [j, c] of STENCIL) {
      moved[k] = xk + j * h;
      const up = gradientAt();
      moved[k] = xk - j * h;
      const down = gradientAt();
      for (let q = 0; q < numeric.length; q++) {
        numeric[q]! += scale * c * (up[q]! - down[q]!);
        noise[q]! += Number.EPSILON * Math.abs(scale * c) * (Math.abs(up[q]!) + Math.abs(down[q]!));
      }
    }
    moved[k] = xk;
  }
  return { ...normwiseError(analytic, numeric), beyond: errorBeyond(analytic, numeric, noise), analytic, numeric, noise };
}

function hasTangents(tape: Tape, inputs: (Var | Vec)[], direction: Float64Array, output: Var): number | null {
  try {
    return tape.jvp(inputs, direction, [output])[0]!;
  } catch (error) {
    if (error instanceof MissingRuleError && error.rule === 'jvp') return null;
    throw error;
  }
}

