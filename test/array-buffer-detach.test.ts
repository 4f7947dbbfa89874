// The first ArrayBuffer detached in a process makes V8 check every typed-array access there for
// detached buffers from then on, the façade's recording and the user's own code alike (the JS
// engine's handle recording measured 4.3 -> 5.1 ns/node after one). Loading the core (its SIMD
// build is inflated from gzip), recording, the sweeps and a compiled replay of a tape that fits
// the initial memory must detach none. V8 reports each protector it invalidates under
// --trace-protector-invalidation; the child runs the built package with plain node (tsx's
// loader thread would report its own).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

const SCRIPT = `
const { createTape, compile, init } = await import('./dist/index.js');
await init();
for (const backend of ['wasm', 'js']) {
  const tape = await createTape({ backend });
  const xs = tape.variables(Array.from({ length: 50000 }, (_, i) => i * 1e-5));
  let s = tape.constant(0);
  for (let i = 1; i < xs.length; i++) s = s.add(xs[i].mul(xs[i - 1]).sin());
  tape.backward(s);
  if (!Number.isFinite(xs[7].grad)) throw new Error('no gradient');
  tape.reset();
}
const f = compile((x) => x[0].mul(x[1]).exp().add(x[1].square()), { inputs: 2 });
const g = f.gradient([0.5, 0.25]);
console.log('gradient', g[0], g[1], f.generatedSweeps);
`;

const detaches = (script: string): { count: number; stdout: string; stderr: string; status: number | null } => {
  const child = spawnSync(process.execPath, ['--trace-protector-invalidation', '--input-type=module', '-e', script], {
    cwd: ROOT, encoding: 'utf8',
  });
  return { count: child.stdout.split('ArrayBufferDetaching').length - 1, ...child };
};

describe('no ArrayBuffer is detached', () => {
  it('by loading the core, recording, sweeping and replaying', () => {
    // Against a child that only starts: a runtime whose own start-up detaches one is not ours.
    const baseline = detaches('0');
    const ours = detaches(SCRIPT);
    expect(ours.stderr).toBe('');
    expect(ours.status).toBe(0);
    expect(ours.stdout).toMatch(/^gradient [\d.]+ [\d.]+ active$/m);
    expect(ours.count).toBe(baseline.count);
  });

  it('by a tape that fills the initial memory, where the next node grows it', () => {
    // Past 2^20 nodes the capacity takes what the initial pages hold (about 1.3 million nodes)
    // instead of doubling into new ones; only a tape longer than that grows memory.
    const record = (nodes: number): string => `
const { createTape, init } = await import('./dist/index.js');
await init();
const tape = await createTape({ backend: 'wasm' });
const h = tape.handles;
const x = h.variable(0.5);
let s = x;
for (let i = 1; i < ${nodes}; i++) s = h.mul(s, x);
console.log('gradient', h.gradient(s, [x])[0], tape.size);
`;
    const baseline = detaches('0');
    const fits = detaches(record(1_300_000));
    expect(fits.stderr).toBe('');
    expect(fits.stdout).toMatch(/^gradient [\d.e-]+ 1300000$/m);
    expect(fits.count).toBe(baseline.count);
    const grows = detaches(record(1_400_000));
    expect(grows.stdout).toMatch(/^gradient [\d.e-]+ 1400000$/m);
    expect(grows.count).toBeGreaterThan(baseline.count);
  });

  it('by a tape made for its expected nodes, past the initial memory', () => {
    const script = `
const { createTape, init } = await import('./dist/index.js');
await init();
const tape = await createTape({ backend: 'wasm', expectedNodes: 2_000_000 });
const h = tape.handles;
for (let round = 0; round < 2; round++) {
  tape.reset();
  const x = h.variable(0.5);
  let s = x;
  for (let i = 1; i < 2_000_000; i++) s = h.mul(s, x);
  console.log('gradient', h.gradient(s, [x])[0], tape.size);
}
`;
    const baseline = detaches('0');
    const expected = detaches(script);
    expect(expected.stderr).toBe('');
    expect(expected.stdout).toMatch(/^gradient [\d.e-]+ 2000000$/m);
    expect(expected.count).toBe(baseline.count);
  });

  it('by a function compiled for its expected nodes, and by loading its bytes', () => {
    // Its planner's scratch beside the nodes too (the memory's pages past them), then the same
    // tape from bytes, which gives its own size.
    const script = `
const { compile, fromBytes, init } = await import('./dist/index.js');
await init();
const f = compile((x) => { let s = x[0]; for (let i = 1; i < 1_500_000; i++) s = s.mul(x[1]).add(x[0]); return s; }, { inputs: 2, expectedNodes: 3_000_000 });
const g = f.gradient([0.5, 0.25]);
const h = fromBytes(f.toBytes());
const k = h.gradient([0.5, 0.25]);
console.log('gradients', g[0] === k[0] && g[1] === k[1], f.size, f.generatedSweeps, h.generatedSweeps);
`;
    const baseline = detaches('0');
    const compiled = detaches(script);
    expect(compiled.stderr).toBe('');
    expect(compiled.stdout).toMatch(/^gradients true 3000000 active active$/m);
    expect(compiled.count).toBe(baseline.count);
  });
});
