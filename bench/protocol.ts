// What a child process reports to the runner: one line `RESULT <json>` on stdout.

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
