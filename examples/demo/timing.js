// The panels' time per step, for the label of a backend before it runs.

/** The fastest of `batches` batches of `n` steps of a throwaway trainer, after `warm` steps that
 *  compile its hot paths, as { ms, steps }. The fastest: the first batches run before V8 has
 *  optimised the code, and the label of the backend not in use kept that cold figure (230-560
 *  µs/step for the JS engine's 36 warm on the curve: a probe). Timers in browsers are coarse,
 *  hence batches. */
export function fastestBatch(trainer, warm, n, batches) {
  for (let i = 0; i < warm; i++) trainer.step();
  let best = Infinity;
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) trainer.step();
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, steps: n };
}
