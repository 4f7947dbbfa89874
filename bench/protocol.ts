// What a child process reports to the runner: one line `RESULT <json>` on stdout.
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

export const RESULT_MARKER = 'RESULT ';

/** The median of a child's timed runs (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export interface GradCheck {
  ok: boolean;
  /** |f - f_ref| / max(1, |f_ref|). */
  valueError: number;
  /** max_i |g_i - g_ref_i| / max(1, max_i |g_ref_i|) over the checked components; null without AD. */
  gradError: number | null;
  componentsChecked: number;
  tolerance: number;
  reference: string;
}

export type Status = 'ok' | 'gradient-mismatch' | 'unavailable' | 'failed' | 'timeout';

export interface ChildResult {
  workload: string;
  impl: string;
  /** Problem size run, and the workload's size for this mode (they differ for capped peers). */
  n: number;
  nominalN?: number;
  /** Scalar or vectorised, for peers. */
  style?: string;
  runLabel: string;
  evalsPerRun: number;
  status: Status;
  reason?: string;
  check?: GradCheck;
  /** The first (checked, untimed) run: includes JIT compilation and tape growth. */
  firstRunMs?: number;
  warmRuns?: number;
  /** Runs per timed sample (fast runs are timed in batches); times are per run. */
  batch?: number;
  times?: number[];
  medianMs?: number;
  /** With several processes per cell (bench/run.ts --processes): each one's median. */
  processMedianMs?: number[];
  minMs?: number;
  maxMs?: number;
  recordMedianMs?: number;
  sweepMedianMs?: number;
  /** Runs on a fresh recording (scalar Var/handle runs, except tiny, and vector forms): the
   *  sweeps split into forward (reading the output's value: the value sweep) and reverse
   *  (clearing adjoints, the reverse sweep, reading the gradient). */
  forwardMedianMs?: number;
  reverseMedianMs?: number;
  peakRssBytes?: number;
  baseRssBytes?: number;
  info?: Record<string, number | string>;
  /** The 1-minute load average when the runner started this child (other work skews times). */
  loadBefore?: number;
  /** Throughput workloads (several gradients per run): gradients per second at the median. */
  gradientsPerSecond?: number;
}

/** A script measuring in children of its own: with `--child=<arg>` this process runs
 *  `measure(arg)` and reports the result to its parent; otherwise it runs `parent`. */
export async function childOrParent(measure: (arg: string) => Promise<unknown>, parent: () => void | Promise<void>): Promise<void> {
  const arg = process.argv.find((a) => a.startsWith('--child='));
  if (arg) process.stdout.write(`${RESULT_MARKER}${JSON.stringify(await measure(arg.slice('--child='.length)))}\n`);
  else await parent();
}

/** `script` run with `--child=<arg>` in `processes` fresh processes, one after another: the
 *  result of the process whose `key` is the median (single processes on the bench VM moved by
 *  up to 40%). */
export function medianProcess<T>(script: string, arg: string, processes: number, key: (result: T) => number): T {
  const runs: T[] = [];
  for (let p = 0; p < processes; p++) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', script, `--child=${arg}`], { encoding: 'utf8' });
    const line = out.split('\n').find((l) => l.startsWith(RESULT_MARKER));
    if (!line) throw new Error(`${script} --child=${arg} reported nothing:\n${out}`);
    runs.push(JSON.parse(line.slice(RESULT_MARKER.length)) as T);
  }
  return runs.sort((a, b) => key(a) - key(b))[runs.length >> 1]!;
}

/** "2026-12-06 on <CPU>, <n> cores, Node <version>", for a table's heading. */
export function measuredOn(): string {
  return `${new Date().toISOString().slice(0, 10)} on ${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version}`;
}
