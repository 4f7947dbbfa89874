// What an elementwise chain costs per element and op by its length: 8 pairs of `mul` and `add`
// (or `tanh`) over n elements and a sum, recorded and differentiated (`record`) or compiled and
// differentiated (`compiled`), n from 8 to 4,096 in one process, each size timed in turn over
// 400 rounds (the first 80 left out), medians. Chains over the core's run threshold are swept as
// runs (fused kernels, blocks of 1,024 elements: README, "Vectors"); with a third argument, a
// tape of that many chains of different shapes (their ops by the bits of their number), each
// over its own n elements (ns per element and op of all of them). Compare builds with
//   npx tsx bench/run-lengths.ts [record|compiled] [arith|tanh] [shapes]
import { compile, createTapeSync, init, type Var, type Vec } from '../src/index.ts';

await init();
const how = process.argv[2] ?? 'record', kind = process.argv[3] ?? 'arith', shapes = Number(process.argv[4] ?? 1);
const PAIRS = 8;
const SIZES = [8, 16, 32, 64, 128, 256, 512, 1024, 1025, 4096];
// Shape 0 is the chain above; shape s takes sub for add (or sigmoid for tanh) where bit k of s is set.
const chain = (v: Vec, w: Vec, shape = 0): Vec => {
  let u = v;
  for (let k = 0; k < PAIRS; k++) {
    const other = (shape >> k) & 1;
    u = kind === 'arith' ? (other ? u.mul(w).sub(0.5) : u.mul(w).add(0.5)) : other ? u.mul(w).sigmoid() : u.mul(w).tanh();
  }
  return u;
};
const chains = (v: Vec, w: Vec): Var => {
  let total = chain(v, w).sum();
  for (let s = 1; s < shapes; s++) total = total.add(chain(v.mul(1), w, s).sum());
  return total;
};
const tape = createTapeSync();
const cases = SIZES.map((n) => {
  const x = Float64Array.from({ length: n }, (_, i) => 0.1 * (i % 100) + 0.3), w = x.map((v) => 1 - 0.001 * v), g = new Float64Array(n);
  if (how === 'compiled') {
    const f = compile((v: Vec) => chains(v, v.tape.constantVector(w)), { inputs: n, vector: true });
    return () => f.gradient(x, g);
  }
  return () => {
    tape.reset();
    const v = tape.vector(x);
    g.set(tape.gradient(chains(v, tape.constantVector(w)), [v]));
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
console.log(`${how}, ${kind}, ${shapes} shape(s): ns per element and op (${2 * PAIRS} ops a chain)`);
console.log(SIZES.map((n, j) => `${n}: ${(median(times[j]!) * 1e6 / (2 * PAIRS * n * shapes)).toFixed(2)}`).join(', '));
