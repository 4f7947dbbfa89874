// The functions the service differentiates, each compiled once at start-up.
import { compile, type CompiledFunction, type Var, type Vec } from 'tapegrad';

// ───────────── Black–Scholes call, inputs [spot, strike, maturity, rate, volatility] ─────────────

export const OPTION_FIELDS = ['spot', 'strike', 'maturity', 'rate', 'volatility'] as const;

function blackScholesCall([spot, strike, maturity, rate, vol]: Var[]): Var {
  const root = maturity!.sqrt(), volRoot = vol!.mul(root);
  // d1 = ln(S/K)/(σ√T) + (r/σ + σ/2)√T, which never forms σ²: with σ²T, a volatility of 1e300
  // overflowed d1 and d2 to +Infinity and priced the call at S − K e^(−rT) instead of S.
  const d1 = spot!.div(strike!).log().div(volRoot).add(rate!.div(vol!).add(vol!.mul(0.5)).mul(root));
  const d2 = d1.sub(volRoot);
  const discount = rate!.mul(maturity!).neg().exp();
  // The library's Φ (normCdf), exact to a few ulps with exact first and second derivatives: an
  // approximation's (Abramowitz & Stegun 26.2.17, as here before) kink at 0 made gamma 2.7% low
  // for a one-day option at the money, and negative closer to expiry.
  return spot!.mul(d1.normCdf()).sub(strike!.mul(discount).mul(d2.normCdf()));
}

// ───────────── Monte Carlo: one discounted call payoff per path ─────────────
// Inputs [spot, strike, maturity, rate, volatility, z] with z a standard normal draw: the payoff
// on the path S_T = S exp((r − σ²/2) T + σ √T z). The mean of the gradients over the paths is
// the pathwise estimate of the sensitivities.

export const PATH_INPUTS = 6;

function discountedPayoff([spot, strike, maturity, rate, vol, z]: Var[]): Var {
  const drift = rate!.sub(vol!.square().mul(0.5)).mul(maturity!);
  const terminal = spot!.mul(drift.add(vol!.mul(maturity!.sqrt()).mul(z!)).exp());
  return terminal.sub(strike!).relu().mul(rate!.mul(maturity!).neg().exp());
}

// ───────────── Logistic regression over the service's dataset ─────────────
// Inputs: FEATURES weights and a bias, as one vector. Loss: mean log-loss plus (λ/2)‖w‖².

export const FEATURES = 8;
export const SAMPLES = 4096;
const L2 = 1e-3;

function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fixed synthetic dataset: features in [-1, 1], labels from a known linear rule with noise. */
function dataset(): { X: Float64Array; y: Float64Array } {
  const rand = mulberry32(14);
  const X = new Float64Array(SAMPLES * FEATURES), y = new Float64Array(SAMPLES);
  for (let i = 0; i < SAMPLES; i++) {
    let z = 0.25;
    for (let j = 0; j < FEATURES; j++) {
      const v = 2 * rand() - 1;
      X[i * FEATURES + j] = v;
      z += v * (j % 2 === 0 ? 1.5 : -1) / (j + 1);
    }
    y[i] = rand() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return { X, y };
}

/** Standard normal draws (Box–Muller over a seeded generator): the same seed, the same paths. */
export function normals(seed: number, out: Float64Array, stride: number, offset: number, count: number): void {
  const rand = mulberry32(seed);
  for (let k = 0; k < count; k += 2) {
    const u = 1 - rand(), v = rand();
    const r = Math.sqrt(-2 * Math.log(u));
    out[k * stride + offset] = r * Math.cos(2 * Math.PI * v);
    if (k + 1 < count) out[(k + 1) * stride + offset] = r * Math.sin(2 * Math.PI * v);
  }
}

export interface Models {
  blackScholes: CompiledFunction;
  payoff: CompiledFunction;
  logreg: CompiledFunction;
}

/** Records every model once (the wasm core must be loaded: `await init()` first). */
export function compileModels(backend: 'wasm' | 'js'): Models {
  const { X, y } = dataset();
  const logreg = (w: Vec): Var => {
    const tape = w.tape;
    const weights = w.slice(0, FEATURES), bias = w.get(FEATURES);
    const z = tape.constantVector(X, [SAMPLES, FEATURES]).matvec(weights).add(bias);
    return z.softplus().sub(z.mul(y)).mean().add(weights.sumSquares().mul(L2 / 2));
  };
  return {
    blackScholes: compile(blackScholesCall, { inputs: 5, at: [100, 100, 1, 0.05, 0.2], backend }),
    payoff: compile(discountedPayoff, { inputs: PATH_INPUTS, at: [100, 100, 1, 0.05, 0.2, 0.5], backend }),
    logreg: compile(logreg, { inputs: FEATURES + 1, vector: true, at: new Float64Array(FEATURES + 1), backend }),
  };
}
