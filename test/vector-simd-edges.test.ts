// The SIMD paths of the elementwise rules (two elements per pass in the core's SIMD build) must
// give the scalar loop's results bit for bit where IEEE is delicate: zero adjoints next to
// infinite or NaN partials (0·Infinity must not become NaN: the scalar rule skips the term),
// signed zeros, odd lengths (a scalar tail), a constant scalar operand, and one vector as both
// operands. Compared with the scalar build and the JS engine, in every sweep.
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape, type Var, type Vec } from '../src/index.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';
import { tapeOn } from './support.ts';
import { numberTexts } from './vector-cases.ts';

const SPECIAL = [0, -0, 1, -2.5, Infinity, -Infinity, NaN, 1e-308, 5e-324, -3, 7, 0.5, -0.25];


/** Programs whose reverse sweeps send exact zeros next to non-finite partials. */
const PROGRAMS: [string, (t: Tape, x: Vec, y: Vec) => Var][] = [
  // where() zeroes the adjoint of half the elements; the products then meet Infinity and NaN.
  ['mul under a mask', (t, x, y) => t.select(x.gt(0), x.mul(y), 0).sum()],
  ['add and sub under a mask', (t, x, y) => t.select(y.lt(1), x.add(y).sub(y.mul(0)), x.neg()).sum()],
  ['mul by a constant scalar', (t, x) => t.select(x.ge(0), x.mul(2).mul(Infinity), x.mul(-0)).sum()],
  ['sub from a constant scalar', (t, x, y) => t.select(x.lt(0.5), y.sub(3).mul(x), 1).sum()],
  ['one vector as both operands', (t, x) => t.select(x.eq(x), x.mul(x).add(x.add(x)).sub(x.sub(x)), 0).sum()],
  ['square and neg under a mask', (t, x, y) => t.select(x.gt(0), x.square().add(y.neg()), y.square()).sum()],
  ['slice, concat and sum adjoints', (t, x, y) => t.concat([x.slice(1), y, x.slice(0, 1)]).mul(t.concat([y, x])).sum()],
  ['a wanted scalar broadcast', (t, x, y) => x.mul(y.get(-1)).add(y.get(0)).sum()],
];

async function run(tape: Tape, f: (t: Tape, x: Vec, y: Vec) => Var, xs: number[], ys: number[]): Promise<string[]> {
  tape.reset();
  const x = tape.vector(xs), y = tape.vector(ys);
  const out = f(tape, x, y);
  const direction = [...xs, ...ys].map((_, k) => (k % 3) - 1);
  return numberTexts([out.value, ...tape.gradient(out, [x, y]), ...tape.jvp([x, y], direction, [out]), ...tape.hvp(out, [x, y], direction)]);
}

describe('SIMD elementwise rules against the scalar build and the JS engine', () => {
  const engines: Record<string, Tape> = {};
  beforeAll(async () => {
    engines.js = await tapeOn('js');
    engines.scalar = new Tape(new WasmBackend(await loadCoreModule('scalar')));
    if (simdAvailable()) engines.simd = new Tape(new WasmBackend(await loadCoreModule('simd')));
  });

  it.each(PROGRAMS)('%s: every length 1..13, special values, bit for bit', async (_, f) => {
    for (let n = 1; n <= SPECIAL.length; n++) {
      const xs = SPECIAL.slice(0, n), ys = SPECIAL.slice(SPECIAL.length - n).reverse();
      const reference = await run(engines.js!, f, xs, ys);
      for (const name of ['scalar', 'simd'] as const) {
        if (!engines[name]) continue;
        expect(await run(engines[name]!, f, xs, ys), `${name} core, n = ${n}`).toEqual(reference);
      }
    }
  });
});
