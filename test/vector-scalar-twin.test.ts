// Each vector op against the same computation written with scalar Var ops on a separate tape
// (vector-cases.ts writes both): values and gradients bit for bit where the twin takes the same
// terms in the same order (elementwise ops, dot and sum in the 4-way order, permutations, one-term
// sums), else within 1e-13 relative. Both engines.
import { describe, expect, it } from 'vitest';
import { allCases, bits, recordScalar, recordVector, relativeError, type VectorCase } from './vector-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';
import { Tape, init, type Var, type Vec } from '../src/index.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';

const cases = allCases();

describe.each(BACKENDS)('vector ops equal their scalar-op twins (%s)', (backend) => {
  const tapes = Promise.all([tapeOn(backend), tapeOn(backend)]);

  it.each(cases.map((c): [string, VectorCase] => [c.name, c]))('%s', async (_, c) => {
    const [vt, st] = await tapes;
    const v = recordVector(vt, c);
    const s = recordScalar(st, c);
    const vg = vt.gradient(v.output, [v.input]);
    const sg = st.gradient(s.output, s.inputs);
    if (c.exact) {
      expect(bits([v.output.value]), `${c.name}: value ${v.output.value} vs ${s.output.value}`).toEqual(bits([s.output.value]));
      expect(bits(vg), `${c.name}: gradient [${vg}] vs [${sg}]`).toEqual(bits(sg));
    } else {
      expect(relativeError([v.output.value], [s.output.value]), `${c.name}: value`).toBeLessThanOrEqual(1e-13);
      expect(relativeError(vg, sg), `${c.name}: gradient [${vg}] vs [${sg}]`).toBeLessThanOrEqual(1e-13);
    }
  });

  it('the exact cases include every elementwise + − × ÷ form and the one-element reductions', () => {
    const exact = new Set(cases.filter((c) => c.exact).map((c) => c.name));
    for (const op of ['add', 'sub', 'mul', 'div']) {
      for (const form of ['vector ⊕ vector', 'vector ⊕ scalar Var', 'vector ⊕ number', 'number ⊕ vector', 'scalar Var ⊕ vector', 'matrix [2, 3] ⊕ vector [3]', 'vector ⊕ constant array']) {
        expect(exact.has(`${op}: ${form}`), `${op}: ${form}`).toBe(true);
      }
    }
    for (const name of ['sum of one element', 'dot of one element', 'logSumExp of one element', 'matmul [1,1] · [1,1]']) expect(exact.has(name), name).toBe(true);
  });
});

// Found by a new-user probe: a matrix product's reverse rule multiplied zero entries by an
// infinite adjoint (sqrt at 0 after a sparse matvec), so every input the row left out got NaN,
// where the scalar program's mul skips its zero partial. Each product form against its scalar
// twin, gradient, hvp and jvp, with a zero value under sqrt, an infinite matrix entry whose
// adjoint is 0, and a NaN entry (which stays NaN where it is used, as in the scalar program).
describe.each(BACKENDS)('matrix products at infinite adjoints and entries equal their scalar twins (%s)', (backend) => {
  const same = (a: ArrayLike<number>, b: ArrayLike<number>): boolean =>
    a.length === b.length && Array.from(a).every((x, k) => Object.is(x, b[k]) || Math.abs(x - b[k]!) <= 1e-13 * Math.max(1, Math.abs(x)));
  const A = [1, 0, 0, 1, 0.5, 0];
  // y = M x (M 3×2 of A's entries), then sqrt of each y: y[1] = 0 at x = [0, 4]... sqrt'(0) = ∞.
  const forms = {
    matvec: (t: Tape, x: Vec) => t.constantVector(A, [3, 2]).matvec(x),
    vecmat: (t: Tape, x: Vec) => x.vecmat(t.constantVector([1, 0, 0.5, 0, 1, 0], [2, 3])),
    matmul: (t: Tape, x: Vec) => t.constantVector(A, [3, 2]).matmul(x.reshape([2, 1])).reshape([3]),
    trmv: (t: Tape, x: Vec) => t.constantVector([1, 0, 0.5, 1], [2, 2]).trmv(x),
  } as const;
  const scalarTwin = (name: keyof typeof forms, x: Var[]): Var[] => {
    const [a, b] = x as [Var, Var];
    const lin = (p: number, q: number): Var => a.mul(p).add(b.mul(q));
    if (name === 'trmv') return [lin(1, 0), lin(0.5, 1)];
    if (name === 'vecmat') return [lin(1, 0), lin(0, 1), lin(0.5, 0)];
    return [lin(1, 0), lin(0, 1), lin(0.5, 0)];
  };
  for (const name of Object.keys(forms) as (keyof typeof forms)[]) {
    it(name, async () => {
      for (const point of [[0, 4], [4, 0], [0, 0], [NaN, 1]]) {
        const vt = await tapeOn(backend), st = await tapeOn(backend);
        const x = vt.vector(point);
        const vy = forms[name](vt, x).sqrt().sum();
        const xs = st.variables(point);
        const sy = scalarTwin(name, xs).map((v) => v.sqrt()).reduce((p, q) => p.add(q));
        const vg = vt.gradient(vy, [x]), sg = st.gradient(sy, xs);
        expect(same(vg, sg), `${name} at [${point}]: [${vg}] vs [${sg}]`).toBe(true);
        for (const dir of [[1, 0], [0, 1]]) {
          const vh = vt.hvp(vy, [x], dir), sh = st.hvp(sy, xs, dir);
          expect(same(vh, sh), `${name} hvp at [${point}] along [${dir}]: [${vh}] vs [${sh}]`).toBe(true);
          // The tangent sweep too: a zero tangent factor adds nothing, as mul's tangent skips it.
          const vj = vt.jvp([x], dir, [vy]), sj = st.jvp(xs, dir, [sy]);
          expect(same(vj, sj), `${name} jvp at [${point}] along [${dir}]: [${vj}] vs [${sj}]`).toBe(true);
        }
      }
    });
  }
});

// A new-user probe: dot's tangent added 0·∞ where an infinite entry's tangent was 0, so a jvp, an
// hvp and a forward Jacobian were NaN where the gradient was finite; mul's tangent skips a zero
// tangent. dot, and sumSquares (x·x), against the scalar program, at infinite and NaN entries.
describe.each(BACKENDS)('dot and sumSquares at infinite entries equal their scalar twins (%s)', (backend) => {
  const same = (a: ArrayLike<number>, b: ArrayLike<number>): boolean =>
    a.length === b.length && Array.from(a).every((x, k) => Object.is(x, b[k]) || (Number.isNaN(x) && Number.isNaN(b[k])) || Math.abs(x - b[k]!) <= 1e-13 * Math.max(1, Math.abs(x)));
  const forms = {
    dot: [(x: Vec) => x.dot([2, 3]).sigmoid(), ([a, b]: Var[]) => a!.mul(2).add(b!.mul(3)).sigmoid()],
    sumSquares: [(x: Vec) => x.sumSquares().neg().exp(), ([a, b]: Var[]) => a!.mul(a!).add(b!.mul(b!)).neg().exp()],
  } as const;
  for (const [name, [vector, scalar]] of Object.entries(forms)) {
    it(name, async () => {
      for (const point of [[Infinity, 1], [1, -Infinity], [NaN, 1], [0, 4], [-Infinity, Infinity]]) {
        const vt = await tapeOn(backend), st = await tapeOn(backend);
        const x = vt.vector(point), xs = st.variables(point);
        const vy = vector(x), sy = scalar(xs);
        expect(same(vt.gradient(vy, [x]), st.gradient(sy, xs)), `${name} gradient at [${point}]`).toBe(true);
        for (const dir of [[1, 0], [0, 1]]) {
          const vj = vt.jvp([x], dir, [vy]), sj = st.jvp(xs, dir, [sy]);
          expect(same(vj, sj), `${name} jvp at [${point}] along [${dir}]: [${vj}] vs [${sj}]`).toBe(true);
          const vh = vt.hvp(vy, [x], dir), sh = st.hvp(sy, xs, dir);
          expect(same(vh, sh), `${name} hvp at [${point}] along [${dir}]: [${vh}] vs [${sh}]`).toBe(true);
        }
      }
    });
  }
});

// A probe: max() and min() of a vector kept the first of tied zeros (max of [−0, 0] was −0),
// where the scalar ops give max(−0, 0) = 0 and min(0, −0) = −0 in either order.
describe.each(BACKENDS)('max() and min() of signed zeros equal the scalar ops (%s)', (backend) => {
  it('every order of ±0, among other elements too', async () => {
    const t = await tapeOn(backend);
    for (const [p, q] of [[-0, 0], [0, -0], [-0, -0], [0, 0]] as const) {
      for (const rest of [[], [-1], [-2, -3]]) {
        const v = t.vector([...rest, p, q]);
        const [x, y] = [t.variable(p), t.variable(q)];
        const wantMax = rest.reduce((m, r) => m.max(r), x.max(y)).value, wantMin = rest.reduce((m, r) => m.min(r), x.min(y)).value;
        expect(Object.is(v.max().value, wantMax), `max of [${[...rest, p, q].map((z) => Object.is(z, -0) ? '-0' : z)}]`).toBe(true);
        expect(Object.is(v.min().value, wantMin), `min of [${[...rest, p, q].map((z) => Object.is(z, -0) ? '-0' : z)}]`).toBe(true);
      }
    }
  });
});

// A probe: sum and dot of terms that are all -0 gave +0 (their partial sums started at +0), where
// the scalar program's adds give -0 (IEEE), so 1/sum was +Infinity; an empty sum stays +0. On
// each core build too (the SIMD one sums in lanes).
describe('sums of -0 terms are -0, as the scalar adds give', () => {
  it.each(['js', 'scalar', 'simd'] as const)('%s', async (engine) => {
    if (engine === 'simd' && !simdAvailable()) return;
    await init();
    const t = engine === 'js' ? await tapeOn('js') : new Tape(new WasmBackend(await loadCoreModule(engine)));
    for (let n = 0; n <= 9; n++) {
      const zeros = Array.from({ length: n }, () => -0);
      const want = n === 0 ? 0 : -0;
      const v = t.vector(zeros);
      expect(Object.is(v.sum().value, want), `sum of ${n}`).toBe(true);
      expect(Object.is(v.dot(Array.from({ length: n }, (_, k) => k + 1)).value, want), `dot of ${n}`).toBe(true);
      if (n > 0) expect(Object.is(v.mean().value, -0), `mean of ${n}`).toBe(true);
      // A +0 among them makes +0, as in the scalar sum.
      if (n > 1) expect(Object.is(t.vector([...zeros.slice(1), 0]).sum().value, 0), `sum of ${n} with a +0`).toBe(true);
    }
    // A fused elementwise run ending in its sum (long enough for a generated kernel on wasm)
    // adds from -0 too (a review: its kernel started at +0, where the block sweep and the JS
    // engine gave -0); its gradient stays the scalar program's.
    // (With the generator loaded, init(), the wasm engines fuse the run: the scalar core's kernel
    // and the SIMD core's.)
    const fused = t;
    const long = fused.vector(new Float64Array(4096));
    const total = long.mul(2).neg().mul(3).sum();
    expect(Object.is(total.value, -0), 'a fused run\'s sum').toBe(true);
    expect(Array.from(fused.gradient(total, [long])).every((g) => g === -6)).toBe(true);
  });
});
