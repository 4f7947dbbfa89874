// Inputs in and gradients out through the handle API, one call per entry against one call per
// array: `h.variable` in a loop against `h.variables`, and `h.backward` with `h.grad` in a loop
// against `h.gradient`, on a tape of 125,001 inputs and two ops each (a square and an add). Each pair alternates in one
// process (the same tape, the same hour); three processes, ns per input, the process of median
// difference:
//   npx tsx bench/handle-io.ts
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createTape, init } from '../src/index.ts';
import { median } from './protocol.ts';

const INPUTS = 125_001;
const RUNS = 60;
const PROCESSES = 3;

interface Measured { variable: number; variables: number; grad: number; gradient: number }

async function child(): Promise<Measured> {
  await init();
  const tape = await createTape();
  const h = tape.handles;
  const x = Float64Array.from({ length: INPUTS }, (_, i) => 0.5 + 0.4 * Math.sin(i));
  const xs = new Int32Array(INPUTS), g = new Float64Array(INPUTS);
  const times: Record<keyof Measured, number[]> = { variable: [], variables: [], grad: [], gradient: [] };
  const sumOfSquares = (): number => {
    let s = h.constant(0);
    for (let i = 0; i < INPUTS; i++) s = h.add(s, h.square(xs[i]!));
    return s;
  };
  for (let r = 0; r < RUNS; r++) {
    const bulk = r % 2 === 1;
    tape.reset();
    let t = performance.now();
    if (bulk) h.variables(x, xs);
    else for (let i = 0; i < INPUTS; i++) xs[i] = h.variable(x[i]!);
    times[bulk ? 'variables' : 'variable'].push(performance.now() - t);
    const s = sumOfSquares();
    h.value(s);
    t = performance.now();
    if (bulk) h.gradient(s, xs, 1, g);
    else {
      h.backward(s);
      for (let i = 0; i < INPUTS; i++) g[i] = h.grad(xs[i]!);
    }
    times[bulk ? 'gradient' : 'grad'].push(performance.now() - t);
  }
  // The first five of each are warm-up.
  const ns = (list: number[]): number => (median(list.slice(5)) * 1e6) / INPUTS;
  return { variable: ns(times.variable), variables: ns(times.variables), grad: ns(times.grad), gradient: ns(times.gradient) };
}

if (process.argv.includes('--child')) {
  console.log(JSON.stringify(await child()));
} else {
  const here = fileURLToPath(import.meta.url);
  const runs: Measured[] = [];
  for (let p = 0; p < PROCESSES; p++) {
    runs.push(JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', here, '--child'], { encoding: 'utf8' })) as Measured);
  }
  const pick = (a: keyof Measured, b: keyof Measured): Measured => {
    const sorted = runs.slice().sort((p, q) => (p[a] - p[b]) - (q[a] - q[b]));
    return sorted[sorted.length >> 1]!;
  };
  const inputs = pick('variable', 'variables'), grads = pick('grad', 'gradient');
  const f = (v: number): string => v.toFixed(2);
  const lines: string[] = [];
  lines.push(`Measured ${new Date().toISOString().slice(0, 10)} on ${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version} (\`npx tsx bench/handle-io.ts\`; ${INPUTS.toLocaleString('en-US')} inputs, ns per input, median of ${RUNS / 2 - 5} runs each, the two alternating in one process; the process of median difference among ${PROCESSES}).`, '');
  lines.push('| per input | a call per input | one call per array |');
  lines.push('| --- | ---: | ---: |');
  lines.push(`| record it: \`variable\` / \`variables\` | ${f(inputs.variable)} | ${f(inputs.variables)} |`);
  lines.push(`| sweep and read its gradient: \`backward\` + \`grad\` / \`gradient\` | ${f(grads.grad)} | ${f(grads.gradient)} |`);
  console.log(lines.join('\n'));
  writeFileSync(new URL('results/handle-io.md', import.meta.url), `${lines.join('\n')}\n`);
}
