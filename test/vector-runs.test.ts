// The wasm core sweeps long chains of elementwise ops (over 1024 elements) block by block, every
// op of the chain per block. Each program runs twice on each core build: as written (its chains
// blocked) and with a scalar node recorded between every two ops (which cuts every chain, so each
// op is swept alone); the two must agree bit for bit in values, gradients, tangents and
// Hessian-vector products. Programs free of transcendental functions must also equal the JS
// engine (which never blocks) bit for bit. Chains with broadcast scalars (Vars and numbers),
// select, a vector used twice, dead ops, chains cut by reductions, slices or a read of .value,
// lengths that are not a multiple of the block.
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape, type Var, type Vec } from '../src/index.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';
import { tapeOn } from './support.ts';
import { numberTexts } from './vector-cases.ts';


/** `c(v)` returns v; when cutting, it first records an unrelated scalar op. */
type Program = (t: Tape, x: Vec, s: Var, c: (v: Vec) => Vec) => Var;

const PROGRAMS: [string, boolean, Program][] = [
  ['a chain with scalar broadcasts', false, (t, x, s, c) => c(c(c(c(c(c(x.mul(s)).add(1)).square()).sub(x.mul(0.5))).tanh()).mul(s)).add(s).sum()],
  ['arithmetic with scalar broadcasts', true, (t, x, s, c) => c(c(c(c(c(x.mul(s)).add(1)).square()).sub(c(x.mul(0.5)))).div(s)).add(s).sum()],
  ['rosenbrock', true, (t, x, s, c) => {
    const a = x.slice(0, -1), b = x.slice(1);
    return c(c(c(c(b.sub(c(a.square()))).square()).mul(100)).add(c(c(a.sub(1)).square()))).sum();
  }],
  ['select with scalar branches, a vector used twice', false, (t, x, s, c) => c(c(c(t.select(x.gt(0), c(c(x.mul(x)).add(s)), s.mul(2))).mul(x)).exp()).mul(0.001).sum()],
  ['dead ops inside a chain', true, (t, x, s, c) => {
    const y = c(c(x.mul(s)).add(2));
    c(y.neg()); // recorded, never used
    const z = c(y.square());
    c(z.sub(s)); // recorded, never used
    return c(z.mul(y)).sum();
  }],
  ['chains cut by reductions and reads of .value', false, (t, x, s, c) => {
    const y = c(c(x.add(s)).square());
    const m = y.max();
    void y.value; // evaluates part of the tape now
    const z = c(c(c(c(y.sub(m)).exp()).mul(s)).add(y));
    return z.sum().add(c(z.mul(z)).logSumExp());
  }],
];

async function run(tape: Tape, f: Program, n: number, cut: boolean): Promise<string[]> {
  tape.reset();
  const xs = Float64Array.from({ length: n }, (_, k) => Math.sin(0.37 * k) * 1.5 + (k % 7 === 0 ? 0 : 0.01));
  const x = tape.vector(xs), s = tape.variable(0.75);
  // A scalar op between two vector ops ends a chain (a constant does not: numbers record one).
  const c = (v: Vec): Vec => {
    if (cut) s.add(0);
    return v;
  };
  const out = f(tape, x, s, c);
  const direction = Array.from({ length: n + 1 }, (_, k) => ((k % 5) - 2) * 0.5);
  return numberTexts([out.value, ...tape.gradient(out, [x, s]), ...tape.jvp([x, s], direction, [out]), ...tape.hvp(out, [x, s], direction)]);
}

describe('blocked elementwise runs in the core: the same bits as op by op', () => {
  const engines: Record<string, Tape> = {};
  beforeAll(async () => {
    engines.js = await tapeOn('js');
    engines.scalar = new Tape(new WasmBackend(await loadCoreModule('scalar')));
    if (simdAvailable()) engines.simd = new Tape(new WasmBackend(await loadCoreModule('simd')));
  });

  it.each(PROGRAMS)('%s: n = 17, 1025, 3001, 5000', async (_, exact, f) => {
    for (const n of [17, 1025, 3001, 5000]) {
      for (const name of ['scalar', 'simd'] as const) {
        const core = engines[name];
        if (!core) continue;
        const blocked = await run(core, f, n, false);
        expect(blocked.every((v) => v !== 'NaN'), `${name}, n = ${n}: finite`).toBe(true);
        expect(blocked, `${name} core, n = ${n}: blocked vs op by op`).toEqual(await run(core, f, n, true));
        if (exact) expect(blocked, `${name} core, n = ${n}: vs the JS engine`).toEqual(await run(engines.js!, f, n, false));
      }
    }
  });
});
