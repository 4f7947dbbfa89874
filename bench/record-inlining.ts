// How much of recording is calls: V8 inlines at most about 920 bytes of bytecode into one optimised
// function (--max-inlined-bytecode-size-cumulative), so a loop body of many ops calls some of the
// op methods instead of inlining them, and each call returns a Var that escapes (an allocation).
// Per case, recording alone in ns/node, median of 5 processes, with V8's budget and with it raised
// far enough to inline every op (the ceiling the op methods' size decides), and the bytecode size of
// each op method:
//   npx tsx bench/record-inlining.ts                  # writes bench/results/record-inlining.md (README)
//   npx tsx bench/record-inlining.ts --child=<case>   # one measurement (what the parent spawns)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createTape, type Tape, type Var } from '../src/index.ts';
import { median } from './protocol.ts';
import { CHAIN_H, CHAIN_X0, rosenbrockMixedHandles, rosenbrockMixedVars } from './workloads.ts';

type CaseId = 'chain, Var' | 'mixed, Var' | 'mixed, handles';
const CASES: CaseId[] = ['chain, Var', 'mixed, Var', 'mixed, handles'];
const RUNS = 5;
const RAISED = '--max-inlined-bytecode-size-cumulative=5000';
const METHODS = ['varUnary', 'varBinary', 'binaryVarNumber', 'handleUnary', 'handleBinary', 'Var'];

// The chain of bench/per-node.ts in a function of its own, as user code would be (the mixed
// Rosenbrock: bench/workloads.ts).
function chain(tape: Tape, n: number): Var {
  let x = tape.variable(CHAIN_X0);
  for (let k = 0; k < n; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(CHAIN_H));
  return x;
}

function point(n: number): Float64Array {
  return Float64Array.from({ length: n + 1 }, (_, i) => 0.5 + 0.4 * Math.sin(0.37 * i + 0.1));
}

async function child(id: CaseId): Promise<number> {
  const tape = await createTape();
  const x = point(id === 'mixed, Var' ? 10_000 : 12_500), xs = new Int32Array(x.length);
  const record = id === 'chain, Var' ? () => chain(tape, 300_000) : id === 'mixed, Var' ? () => rosenbrockMixedVars(tape, x) : () => rosenbrockMixedHandles(tape, x, xs);
  const runs = id === 'chain, Var' ? 30 : 300;
  const times: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    tape.reset();
    record();
    times.push(performance.now() - t0);
  }
  // The first quarter warms up.
  return (median(times.slice(runs >> 2)) * 1e6) / tape.size;
}

function run(flags: string[], id: CaseId): number {
  const out = execFileSync(process.execPath, [...flags, '--import', 'tsx', 'bench/record-inlining.ts', `--child=${id}`], { encoding: 'utf8' });
  return Number(out.trim().split('\n').pop());
}

// The bytecode length V8 reports for each op method, one method per process (--print-bytecode
// output of several threads can interleave, so a wide filter loses headers now and then).
function bytecodeSize(method: string): number | undefined {
  const id: CaseId = method.startsWith('handle') ? 'mixed, handles' : 'mixed, Var';
  for (let attempt = 0; attempt < 3; attempt++) {
    const out = execFileSync(process.execPath, ['--print-bytecode', `--print-bytecode-filter=${method}`, '--import', 'tsx', 'bench/record-inlining.ts', `--child=${id}`], {
      encoding: 'utf8', maxBuffer: 1 << 26,
    });
    const m = new RegExp(`function: ${method} \\(0x[0-9a-f]+ <SharedFunctionInfo ${method}>\\)\\]\\nBytecode length: (\\d+)`).exec(out);
    if (m) return Number(m[1]);
  }
  return undefined;
}

const childArg = process.argv.find((a) => a.startsWith('--child='));
if (childArg) {
  console.log(await child(childArg.slice(8) as CaseId));
} else {
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version} ` +
      `(\`npx tsx bench/record-inlining.ts\`; recording alone, ns/node, median of ${RUNS} processes).`,
    '',
    '| case | V8\'s inlining budget | every op inlined (`' + RAISED + '`) |',
    '| --- | ---: | ---: |',
  ];
  for (const id of CASES) {
    const base: number[] = [], raised: number[] = [];
    for (let k = 0; k < RUNS; k++) {
      base.push(run([], id));
      raised.push(run([RAISED], id));
    }
    lines.push(`| ${id} | ${median(base).toFixed(2)} | ${median(raised).toFixed(2)} |`);
    console.error(id, base, raised);
  }
  lines.push('', `Bytecode of the op methods: ${METHODS.map((m) => `${m} ${bytecodeSize(m) ?? '?'} B`).join(', ')}.`);
  console.log(lines.join('\n'));
  writeFileSync('bench/results/record-inlining.md', `${lines.join('\n')}\n`);
}
