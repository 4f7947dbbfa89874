// What vector ops cost per element once recorded and swept, op by op, and what the second-order
// calls cost on a vector tape: (1) record + forward + backward of `f(x).sum()` on 10^5 elements
// with x copied in, for ops the fused kernels compute inline (mul, neg, relu, abs, max(0),
// stopGradient) or through a rule (div, div by a number); (2) a compiled vector Rosenbrock of 10^5
// elements: gradient, jvp and hvp. Per engine a process, the cases alternating within it, medians
// of 9 rounds; the median process of 3:
//   npx tsx bench/vector-costs.ts    # writes bench/results/vector-costs.md (README)
import { writeFileSync } from 'node:fs';
import { compile, createTape, type BackendKind, type Vec } from '../src/index.ts';
import { childOrParent, median, measuredOn, medianProcess } from './protocol.ts';

const N = 100_000;
const ROUNDS = 9;
const PROCESSES = 3;
const OPS: [string, (x: Vec) => Vec][] = [
  ['mul', (x) => x.mul(x)], ['neg', (x) => x.neg()], ['relu', (x) => x.relu()], ['abs', (x) => x.abs()],
  ['max(0)', (x) => x.max(0)], ['stopGradient', (x) => x.stopGradient()], ['div', (x) => x.div(x)], ['div(3)', (x) => x.div(3)],
];

type Measured = Record<string, number>;

async function child(backend: BackendKind): Promise<Measured> {
  const a = Float64Array.from({ length: N }, (_, i) => -0.5 + (i % 97) / 97);
  const tape = await createTape({ backend });
  const cases: [string, () => void][] = OPS.map(([name, op]) => [`${name}, ns an element`, () => {
    tape.reset();
    const x = tape.vector(a);
    const s = op(x).sum();
    tape.backward(s);
  }]);
  const rosenbrock = (x: Vec): Vec => {
    const p = x.slice(0, N - 1), q = x.slice(1);
    return q.sub(p.square()).square().mul(100).add(p.neg().add(1).square()).sum() as unknown as Vec;
  };
  const f = compile(rosenbrock as never, { inputs: N, vector: true, backend });
  const X = Float64Array.from({ length: N }, (_, i) => 1 + 0.01 * (i % 10)), V = Float64Array.from({ length: N }, (_, i) => (i % 3) - 1);
  const out = new Float64Array(N);
  cases.push(['Rosenbrock gradient, ms', () => void f.gradient(X, out)], ['Rosenbrock jvp, ms', () => void f.jvp(X, V)], ['Rosenbrock hvp, ms', () => void f.hvp(X, V, out)]);
  const times: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS + 2; round++) {
    for (const [name, run] of cases) {
      const reps = name.startsWith('Rosenbrock') ? 10 : 20;
      const t0 = performance.now();
      for (let r = 0; r < reps; r++) run();
      const ms = (performance.now() - t0) / reps;
      if (round >= 2) (times[name] ??= []).push(name.startsWith('Rosenbrock') ? ms : (ms * 1e6) / N);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
}

async function parent(): Promise<void> {
  const byHvp = (r: Measured): number => r['Rosenbrock hvp, ms']!;
  const wasm = medianProcess<Measured>('bench/vector-costs.ts', 'wasm', PROCESSES, byHvp);
  const js = medianProcess<Measured>('bench/vector-costs.ts', 'js', PROCESSES, byHvp);
  const lines = [
    `Measured ${measuredOn()} (\`npx tsx bench/vector-costs.ts\`; ${N.toLocaleString('en-US')} elements, medians of ${ROUNDS} rounds, the median of ${PROCESSES} processes by hvp; the jvp and hvp also over the gradient of the same engine).\n`,
    '| case | wasm | js |',
    '| --- | ---: | ---: |',
  ];
  const overGradient = (r: Measured, name: string): string => (name === 'Rosenbrock jvp, ms' || name === 'Rosenbrock hvp, ms' ? ` (${(r[name]! / r['Rosenbrock gradient, ms']!).toFixed(1)}×)` : '');
  for (const name of Object.keys(wasm)) lines.push(`| ${name} | ${wasm[name]!.toFixed(2)}${overGradient(wasm, name)} | ${js[name]!.toFixed(2)}${overGradient(js, name)} |`);
  console.log(lines.join('\n'));
  // README's table (npm run readme).
  writeFileSync(new URL('./results/vector-costs.md', import.meta.url), `${lines.join('\n')}\n`);
}

await childOrParent((backend) => child(backend as BackendKind), parent);
