// One implementation of one workload, in its own process:
//   tsx bench/child.ts <workload> <impl> [--quick] [--size=<size>] [--n=<size>]
// --size replaces the workload's nominal size (a capped peer still runs at its cap and is
// scaled); --n runs exactly that n, cap or not.
// Checks the gradient against the workload's reference (exit 2, loudly, if it disagrees), warms
// up, times at least MIN_REPS runs, and prints one line `RESULT <json>` on stdout.
import { implById, type Runner } from './impls.ts';
import { workloadById, type Reference } from './workloads.ts';
import { RESULT_MARKER, median, type ChildResult, type GradCheck } from './protocol.ts';

interface RepPolicy {
  warmMinRuns: number;
  warmMinMs: number;
  minReps: number;
  maxReps: number;
  targetMs: number;
}

const FULL: RepPolicy = { warmMinRuns: 3, warmMinMs: 400, minReps: 7, maxReps: 25, targetMs: 1500 };
const QUICK: RepPolicy = { warmMinRuns: 1, warmMinMs: 60, minReps: 5, maxReps: 8, targetMs: 150 };

// No forced GC between timed runs: measured here, a full GC before each run shrinks V8's young
// generation and makes the next run of an allocating implementation ~1.5x slower than it is in
// a steady loop (an optimiser calling the gradient again and again), which is what we time.

/** Gradient-check tolerance for float32 peers: rounding, not bugs, sets the error there (a wrong
 *  gradient is off by O(1)). */
const F32_TOLERANCE = 5e-3;

/** Runs shorter than this are timed in batches, so the clock's resolution does not matter. */
const MIN_TIMED_MS = 2;

function checkGradient(runner: Runner, ref: Reference, value: number, tolerance: number): GradCheck {
  const valueError = Math.abs(value - ref.value) / Math.max(1, Math.abs(ref.value));
  let gradError = 0;
  let scale = 1;
  let checked = 0;
  const g = runner.grad;
  if (g) {
    // ref.grad[k] is the reference for component indices[k] (or for k itself when not given).
    const at = (k: number): number => (ref.indices ? ref.indices[k]! : k);
    const count = ref.indices ? ref.indices.length : ref.grad.length;
    for (let k = 0; k < count; k++) scale = Math.max(scale, Math.abs(ref.grad[k]!));
    for (let k = 0; k < count; k++) {
      const d = Math.abs(g[at(k)]! - ref.grad[k]!);
      checked++;
      if (!(d <= gradError)) gradError = d;
      if (Number.isNaN(d)) break; // a NaN gradient fails the check below (NaN <= tol is false)
    }
    gradError /= scale;
  }
  const ok = valueError <= tolerance && (g === null || gradError <= tolerance);
  return { ok, valueError, gradError: g ? gradError : null, componentsChecked: checked, tolerance, reference: ref.source };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const positional = args.filter((a) => !a.startsWith('--'));
  const quick = args.includes('--quick');
  const nArg = args.find((a) => a.startsWith('--n='));
  const sizeArg = args.find((a) => a.startsWith('--size='));
  const [workloadId, implId] = positional;
  if (!workloadId || !implId) throw new Error('usage: child.ts <workload> <impl> [--quick] [--size=<size>] [--n=<size>]');
  const workload = workloadById(workloadId);
  const impl = implById(implId);
  const nominal = sizeArg ? Number(sizeArg.slice(7)) : quick ? workload.size.quick : workload.size.full;
  const cap = impl.sizeCap?.[workload.kind];
  const n = nArg ? Number(nArg.slice(4)) : cap ? Math.min(nominal, quick ? cap.quick : cap.full) : nominal;
  const policy = quick ? QUICK : FULL;
  const baseRss = process.memoryUsage().rss;

  const inst = workload.make(n);
  const emit = (r: ChildResult): void => {
    process.stdout.write(`${RESULT_MARKER}${JSON.stringify(r)}\n`);
  };
  const base = { workload: workload.id, impl: impl.id, n, nominalN: nominal, style: impl.style?.(workload.kind), runLabel: inst.runLabel, evalsPerRun: inst.evalsPerRun };

  const runner = await impl.prepare(workload, inst);
  const tolerance = Math.max(workload.tolerance, impl.tolerance ?? 0, impl.precision === 'f32' ? F32_TOLERANCE : 0);

  // Gradient check, before any timing.
  const ref = inst.reference();
  const firstStart = performance.now();
  const first = runner.run();
  const firstRunMs = performance.now() - firstStart;
  const check = checkGradient(runner, ref, first, tolerance);
  if (!check.ok) {
    process.stderr.write(
      `\n!!! GRADIENT CHECK FAILED: ${workload.id} / ${impl.id} (n=${n})\n` +
        `!!!   value error ${check.valueError}, gradient error ${check.gradError} > tolerance ${tolerance}\n` +
        `!!!   reference: ${ref.source}\n\n`,
    );
    const reason = Number.isNaN(check.gradError) || Number.isNaN(check.valueError)
      ? 'NaN in the value or gradient'
      : `gradient off by ${check.gradError?.toExponential(1)} (normwise), tolerance ${tolerance}`;
    emit({ ...base, status: 'gradient-mismatch', reason, check });
    process.exitCode = 2;
    return;
  }

  // Warm-up: let the JIT settle and the tape reach its final capacity.
  let warmRuns = 0;
  const warmStart = performance.now();
  while (warmRuns < policy.warmMinRuns || (performance.now() - warmStart < policy.warmMinMs && warmRuns < 1e6)) {
    runner.run();
    warmRuns++;
  }

  const estimate = (performance.now() - warmStart) / warmRuns;
  const batch = estimate >= MIN_TIMED_MS ? 1 : Math.ceil(MIN_TIMED_MS / Math.max(estimate, 1e-4));
  const times: number[] = [];
  const recordMs: number[] = [];
  const sweepMs: number[] = [];
  const forwardMs: number[] = [];
  const reverseMs: number[] = [];
  let spent = 0;
  while (times.length < policy.minReps || (spent < policy.targetMs && times.length < policy.maxReps)) {
    const t0 = performance.now();
    for (let b = 0; b < batch; b++) runner.run();
    const dt = performance.now() - t0;
    times.push(dt / batch);
    spent += dt;
    if (runner.lastPhase) {
      recordMs.push(runner.lastPhase.recordMs);
      sweepMs.push(runner.lastPhase.sweepMs);
      if (runner.lastPhase.forwardMs !== undefined) forwardMs.push(runner.lastPhase.forwardMs);
      if (runner.lastPhase.reverseMs !== undefined) reverseMs.push(runner.lastPhase.reverseMs);
    }
  }

  const peakRss = process.resourceUsage().maxRSS * 1024;
  emit({
    ...base,
    status: 'ok',
    check,
    firstRunMs,
    warmRuns,
    batch,
    times,
    medianMs: median(times),
    minMs: Math.min(...times),
    maxMs: Math.max(...times),
    recordMedianMs: recordMs.length ? median(recordMs) : undefined,
    sweepMedianMs: sweepMs.length ? median(sweepMs) : undefined,
    forwardMedianMs: forwardMs.length ? median(forwardMs) : undefined,
    reverseMedianMs: reverseMs.length ? median(reverseMs) : undefined,
    peakRssBytes: peakRss,
    baseRssBytes: baseRss,
    info: runner.info?.(),
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
