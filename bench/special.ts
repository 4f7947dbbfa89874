// Black-Scholes call price and its five sensitivities, as issue 15 timed it: with the normCdf op
// (compiled: generated sweeps on wasm, the interpreter on js) against Φ as a custom function
// (defineFunction, which keeps compiled functions in the interpreter). Prints µs per gradient,
// the median of 7 timed runs of 100,000 gradients each, after a warm-up run.
//   npx tsx bench/special.ts
import { compile, defineFunction, init, normCdf, type Var } from '../src/index.ts';

await init();

const INV_SQRT_2PI = 0.3989422804014327;
const phi = defineFunction({
  name: 'Phi',
  forward: (xs) => normCdf(xs[0]!),
  vjp: (xs, _y, g) => [g * INV_SQRT_2PI * Math.exp(-0.5 * xs[0]! * xs[0]!)],
});

function price(cdf: (d: Var) => Var) {
  return (x: Var[]): Var => {
    const [S, K, T, r, sigma] = x as [Var, Var, Var, Var, Var];
    const sq = sigma.mul(T.sqrt());
    const d1 = S.div(K).log().add(r.add(sigma.square().mul(0.5)).mul(T)).div(sq);
    const d2 = d1.sub(sq);
    return S.mul(cdf(d1)).sub(K.mul(r.neg().mul(T).exp()).mul(cdf(d2)));
  };
}

const AT = [100, 95, 0.5, 0.02, 0.25];
const RUNS = 7, N = 100_000;

function microsPerGradient(f: ReturnType<typeof compile>): number {
  const x = AT.slice();
  const run = (): number => {
    const t0 = performance.now();
    for (let i = 0; i < N; i++) { x[0] = 90 + (i % 20); f.gradient(x); }
    return ((performance.now() - t0) / N) * 1000;
  };
  run();
  const times = Array.from({ length: RUNS }, run).sort((a, b) => a - b);
  return times[RUNS >> 1]!;
}

const cases = [
  ['normCdf op, wasm', compile(price((d) => d.normCdf()), { inputs: 5, backend: 'wasm', at: AT })],
  ['normCdf op, js', compile(price((d) => d.normCdf()), { inputs: 5, backend: 'js', at: AT })],
  ['defineFunction Φ, wasm', compile(price((d) => phi(d)), { inputs: 5, backend: 'wasm', at: AT })],
] as const;
for (const [name, f] of cases) {
  console.log(`${name.padEnd(24)} ${microsPerGradient(f).toFixed(2)} µs per gradient (generated sweeps: ${f.generatedSweeps})`);
}
