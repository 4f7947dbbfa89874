// What a custom rule's node costs in a compiled replay against the built-in op it stands for: a
// sum of 500 `softclip` nodes (tanh written as a custom function) against 500 `tanh` nodes, a
// gradient per call with `out`. Per engine a process, the two alternating within it, medians of
// 9 rounds; the median process of 3:
//   npx tsx bench/custom-costs.ts
import { compile, defineFunction, init, type BackendKind, type Var } from '../src/index.ts';
import { childOrParent, median, measuredOn, medianProcess } from './protocol.ts';

const K = 500;
const ROUNDS = 9;
const PROCESSES = 3;

interface Measured { builtin: number; custom: number }

async function child(backend: BackendKind): Promise<Measured> {
  await init();
  const softclip = defineFunction({ name: 'softclip', forward: (xs) => Math.tanh(xs[0]!), vjp: (_xs, y, g) => [g * (1 - y * y)] });
  const sum = (term: (x: Var) => Var) => (xs: Var[]): Var => {
    let s = xs[0]!.mul(0);
    for (let i = 0; i < K; i++) s = s.add(term(xs[i]!));
    return s;
  };
  const builtin = compile(sum((x) => x.tanh()), { inputs: K, backend });
  const custom = compile(sum((x) => softclip(x)), { inputs: K, backend });
  const X = Float64Array.from({ length: K }, (_, i) => Math.sin(i)), out = new Float64Array(K);
  const times: Measured[] = [];
  const time = (f: () => void): number => {
    const t0 = performance.now();
    for (let r = 0; r < 200; r++) f();
    return ((performance.now() - t0) * 1000) / 200;
  };
  for (let round = 0; round < ROUNDS + 2; round++) {
    const m = { builtin: time(() => void builtin.gradient(X, out)), custom: time(() => void custom.gradient(X, out)) };
    if (round >= 2) times.push(m);
  }
  return { builtin: median(times.map((m) => m.builtin)), custom: median(times.map((m) => m.custom)) };
}

async function parent(): Promise<void> {
  console.log(`Measured ${measuredOn()} (\`npx tsx bench/custom-costs.ts\`; µs per compiled gradient of ${K} nodes, medians of ${ROUNDS} rounds, the median of ${PROCESSES} processes).\n`);
  console.log('| engine | built-in tanh | custom softclip |\n| --- | ---: | ---: |');
  for (const backend of ['wasm', 'js'] as const) {
    const m = medianProcess<Measured>('bench/custom-costs.ts', backend, PROCESSES, (r) => r.custom);
    console.log(`| ${backend} | ${m.builtin.toFixed(1)} | ${m.custom.toFixed(1)} |`);
  }
}

await childOrParent((backend) => child(backend as BackendKind), parent);
