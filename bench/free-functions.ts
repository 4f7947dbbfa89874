// The free functions on plain numbers (one body serving numbers and Vars) against the operators
// and Math: a loop of s = add(s, mul(x, 0.5)) and of s = add(s, sqrt(x)) over 2·10^6 numbers, ns
// per op, median of 9 runs after warm-up, the median of 3 processes:
//   npx tsx bench/free-functions.ts
import { add, mul, sqrt } from '../src/index.ts';
import { childOrParent, median, measuredOn, medianProcess } from './protocol.ts';

const N = 2_000_000;
const RUNS = 9;
const PROCESSES = 3;
const xs = Float64Array.from({ length: 1024 }, (_, i) => 0.001 * i + 0.5);

interface Measured { free: number; operators: number; freeSqrt: number; mathSqrt: number }

function freeMul(): number { let s = 0; for (let i = 0; i < N; i++) s = add(s, mul(xs[i & 1023]!, 0.5)); return s; }
function operatorMul(): number { let s = 0; for (let i = 0; i < N; i++) s = s + xs[i & 1023]! * 0.5; return s; }
function freeSqrt(): number { let s = 0; for (let i = 0; i < N; i++) s = add(s, sqrt(xs[i & 1023]!)); return s; }
function mathSqrt(): number { let s = 0; for (let i = 0; i < N; i++) s = s + Math.sqrt(xs[i & 1023]!); return s; }

function nsPerOp(loop: () => number): number {
  const times: number[] = [];
  let sink = 0;
  for (let r = 0; r < RUNS + 3; r++) {
    const t0 = performance.now();
    sink += loop();
    times.push(((performance.now() - t0) * 1e6) / (2 * N));
  }
  if (!Number.isFinite(sink)) throw new Error('not finite');
  return median(times.slice(3));
}

async function child(): Promise<Measured> {
  return { free: nsPerOp(freeMul), operators: nsPerOp(operatorMul), freeSqrt: nsPerOp(freeSqrt), mathSqrt: nsPerOp(mathSqrt) };
}

async function parent(): Promise<void> {
  const m = medianProcess<Measured>('bench/free-functions.ts', 'numbers', PROCESSES, (r) => r.free);
  console.log(`Measured ${measuredOn()} (\`npx tsx bench/free-functions.ts\`; ns per op on plain numbers, median of ${RUNS} runs, the median of ${PROCESSES} processes).\n`);
  console.log('| loop | free functions | operators, Math |\n| --- | ---: | ---: |');
  console.log(`| s = add(s, mul(x, 0.5)) | ${m.free.toFixed(2)} | ${m.operators.toFixed(2)} |`);
  console.log(`| s = add(s, sqrt(x)) | ${m.freeSqrt.toFixed(2)} | ${m.mathSqrt.toFixed(2)} |`);
}

await childOrParent(() => child(), parent);
