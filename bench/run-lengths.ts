// What an elementwise chain costs per element and op by its length: 8 pairs of `mul` and `add`
// (or `tanh`) over n elements and a sum, recorded and differentiated (`record`) or compiled and
// differentiated (`compiled`), n from 8 to 4,096 in one process, each size timed in turn over
// 400 rounds (the first 80 left out), medians. Chains over the core's run threshold are swept as
// runs (fused kernels, blocks of 1,024 elements: README, "Vectors"); compare builds with
//   npx tsx bench/run-lengths.ts [record|compiled] [arith|tanh]
import { compile, createTapeSync, init, type Vec } from '../src/index.ts';

await init();
const how = process.argv[2] ?? 'record', kind = process.argv[3] ?? 'arith';
const PAIRS = 8;
const SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 1025, 4096];
const chain = (v: Vec, w: Vec): Vec => {
  let u = v;
  for (let k = 0; k < PAIRS; k++) u = kind === 'arith' ? u.mul(w).add(0.5) : u.mul(w).tanh();
  return u;
};
const tape = createTapeSync();
const cases = SIZES.map((n) => {
  const x = Float64Array.from({ length: n }, (_, i) => 0.1 * (i % 100) + 0.3), w = x.map((v) => 1 - 0.001 * v), g = new Float64Array(n);
  if (how === 'compiled') {
    const f = compile((v: Vec) => chain(v, v.tape.constantVector(w)).sum(), { inputs: n, vector: true });
    return () => f.gradient(x, g);
  }
  return () => {
    tape.reset();
    const v = tape.vector(x);
    g.set(tape.gradient(chain(v, tape.constantVector(w)).sum(), [v]));
  };
});
const times = SIZES.map((): number[] => []);
for (let round = 0; round < 400; round++) {
  cases.forEach((f, j) => {
    // About 4,096 elements a sample, so small sizes are not timer noise.
    const reps = Math.max(1, Math.round(4096 / SIZES[j]!));
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) f();
    if (round >= 80) times[j]!.push((performance.now() - t0) / reps);
  });
}
const median = (a: number[]): number => a.sort((p, q) => p - q)[a.length >> 1]!;
console.log(`${how}, ${kind}: ns per element and op (${2 * PAIRS} ops)`);
console.log(SIZES.map((n, j) => `${n}: ${(median(times[j]!) * 1e6 / (2 * PAIRS * n)).toFixed(2)}`).join(', '));
