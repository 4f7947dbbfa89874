// Every vector op's gradient against central differences: gradcheck({ vector: true }) (6-point
// stencil, normwise error ≤ 1e-7, and the tangent sweep against the reverse sweep to 1e-12) over
// the catalogue in vector-cases.ts, on both engines: every unary op of the scalar table
// elementwise, every binary op in every broadcasting form, select/where, and the array ops.
// Then the rules central differences cannot see: exact zeros from untaken branches, the tie rules
// of max/min, logSumExp far from 0.
import { beforeAll, describe, expect, it } from 'vitest';
import { gradcheck, init, max as maxOf, where, type Var } from '../src/index.ts';
import { arrayCases, binaryCases, selectCases, unaryCases, ZERO_GRADIENT, type VectorCase } from './vector-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

beforeAll(async () => {
  await init();
});

const named = (cases: VectorCase[]): [string, VectorCase][] => cases.map((c) => [c.name, c]);
const zeroGradient = (c: VectorCase): boolean => ZERO_GRADIENT.has(c.name.split(/[ :]/)[0]!);

describe.each(BACKENDS)('gradcheck({ vector: true }) of every vector op (%s)', (backend) => {
  function check(c: VectorCase): void {
    const r = gradcheck(c.vec, c.x, { vector: true, backend });
    expect(r.analytic.length).toBe(c.x.length);
    if (zeroGradient(c)) expect(Array.from(r.analytic), 'a zero-gradient op').toEqual(c.x.map(() => 0));
    else expect(r.analytic.some((g) => g !== 0), 'the case must reach the input').toBe(true);
    expect(r.dualityError, `${c.name}: tangent vs reverse`).toBeLessThanOrEqual(1e-12);
    if (c.noFiniteDifferences) return;
    expect(r.error, `${c.name}: worst component ${r.worst}, analytic ${r.analytic[r.worst]}, numeric ${r.numeric[r.worst]}`).toBeLessThanOrEqual(1e-7);
    expect(r.ok).toBe(true);
  }

  it.each(named(unaryCases()))('%s', (_, c) => check(c));
  it.each(named(binaryCases()))('%s', (_, c) => check(c));
  it.each(named(selectCases()))('%s', (_, c) => check(c));
  it.each(named(arrayCases()))('%s', (_, c) => check(c));
});

describe.each(BACKENDS)('gradient rules central differences cannot check (%s)', (backend) => {
  it('where(x > 0, log x, x) at negative x: the untaken NaN branch sends exactly 0', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([-1, 2, -3, 0.5, -0]);
    const y = where(x.gt(0), x.log(), x);
    expect(Array.from(y.value)).toEqual([-1, Math.log(2), -3, Math.log(0.5), -0]);
    tape.backward(y.sum());
    expect(Array.from(x.grad)).toEqual([1, 0.5, 1, 2, 1]);
    // The same with the NaN branch taken as the second operand, and an Infinity branch.
    tape.reset();
    const z = tape.vector([0, 2, -4, 0.5]);
    const r = tape.select(z.eq(0), 1, z.recip());
    expect(Array.from(r.value)).toEqual([1, 0.5, -0.25, 2]);
    tape.backward(r.sum());
    expect(Array.from(z.grad)).toEqual([0, -0.25, -1 / 16, -4]);
    tape.reset();
    const u = tape.vector([-4, 9, -1]);
    const s = tape.select(u.lt(0), u.neg().sqrt(), u.sqrt());
    tape.backward(s.sum());
    expect(Array.from(u.grad)).toEqual([-0.25, 1 / 6, -0.5]);
  });

  it('the untaken branch gets exactly 0 also in the tangent and second-order sweeps', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([-1, 2, -3]);
    const y = where(x.gt(0), x.log(), x.square()).sum();
    expect(Array.from(tape.jvp([x], [1, 1, 1], [y]))).toEqual([-2 + 0.5 - 6]);
    expect(Array.from(tape.hvp(y, [x], [1, 1, 1]))).toEqual([2, -0.25, 2]);
  });

  it('max/min: t tied extremes get 1/t of the gradient each', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([3, 1, 3, -2, 3, 0]);
    const top = x.max();
    expect(top.value).toBe(3);
    tape.backward(top);
    expect(Array.from(x.grad)).toEqual([1 / 3, 0, 1 / 3, 0, 1 / 3, 0]);
    const bottom = tape.vector([5, -2, -2, -2, -2, 7]);
    tape.backward(bottom.min(), 2);
    expect(Array.from(bottom.grad)).toEqual([0, 0.5, 0.5, 0.5, 0.5, 0]);
    // A single extreme takes it all; every element equal shares it evenly.
    const flat = tape.vector([4, 4, 4, 4, 4]);
    tape.backward(flat.max());
    expect(Array.from(flat.grad)).toEqual([0.2, 0.2, 0.2, 0.2, 0.2]);
    // The tangent follows the same split.
    expect(Array.from(tape.jvp([x], [3, 100, 6, 100, 9, 100], [top]))).toEqual([(3 + 6 + 9) / 3]);
  });

  it('a two-way tie of the vector max equals the scalar max: 0.5 / 0.5', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([2.5, 2.5]);
    tape.backward(v.max());
    const a = tape.variable(2.5), b = tape.variable(2.5);
    const scalar = tape.gradient(maxOf(a, b) as Var, [a, b]);
    expect(Array.from(scalar)).toEqual([0.5, 0.5]);
    tape.backward(v.max());
    expect(Array.from(v.grad)).toEqual(Array.from(scalar));
    // min alike, and elementwise max(v, w) at ties splits like the scalar op.
    tape.backward(v.min());
    expect(Array.from(v.grad)).toEqual([0.5, 0.5]);
    const w = tape.vector([2.5, 1]);
    const e = v.max(w);
    expect(Array.from(e.value)).toEqual([2.5, 2.5]);
    expect(Array.from(tape.gradient(e.sum(), [v, w]))).toEqual([0.5, 1, 0.5, 0]);
  });

  it('a NaN element makes max NaN and its gradient NaN (no element is the max)', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([1, NaN, 3]);
    const m = x.max();
    expect(m.value).toBeNaN();
    tape.backward(m);
    expect(Array.from(x.grad).every(Number.isNaN)).toBe(true);
  });

  it('logSumExp of huge inputs stays finite, and its adjoint is the softmax', async () => {
    const tape = await tapeOn(backend);
    const values = [1000, 999, 998, 1000.5, -1000];
    const x = tape.vector(values);
    const y = x.logSumExp();
    const m = 1000.5;
    const sum = values.reduce((s, v) => s + Math.exp(v - m), 0);
    expect(y.value).toBeCloseTo(m + Math.log(sum), 10);
    expect(Number.isFinite(y.value)).toBe(true);
    tape.backward(y);
    const softmax = values.map((v) => Math.exp(v - y.value));
    // y ≈ 1001 carries a rounding error of ~1e-13 into every exp(x_k - y).
    x.grad.forEach((g, k) => expect(g).toBeCloseTo(softmax[k]!, 14));
    expect(x.grad.reduce((s, g) => s + g, 0)).toBeCloseTo(1, 12);
    // Softmax of the same inputs: finite, sums to 1.
    const p = x.softmax().value;
    expect(p.every(Number.isFinite)).toBe(true);
    expect(p.reduce((s, v) => s + v, 0)).toBeCloseTo(1, 12);
    // Very negative inputs: no underflow to log(0).
    const low = tape.vector([-1000, -1001]);
    expect(low.logSumExp().value).toBeCloseTo(-1000 + Math.log1p(Math.exp(-1)), 10);
  });

  // They were exp(x − logSumExp(x)) and x − logSumExp(x): logSumExp's rounding at 1e15 (an ulp
  // of 0.125) carried into every entry (softmax 0.47 and 0.47).
  it('softmax and logSoftmax keep their accuracy at large logits, and their gradients', async () => {
    const tape = await tapeOn(backend);
    // Logits that differ by exactly 0 and 1 at every scale: the same probabilities at every scale.
    const sum = 2 + Math.exp(-1);
    const want = [1 / sum, 1 / sum, Math.exp(-1) / sum], wantLog = [-Math.log(sum), -Math.log(sum), -1 - Math.log(sum)];
    for (const scale of [1, 1e3, 1e10, 1e15]) {
      tape.reset();
      const x = tape.vector([scale, scale, scale - 1]);
      x.softmax().value.forEach((v, k) => expect(v, `softmax at ${scale}`).toBeCloseTo(want[k]!, 15));
      x.logSoftmax().value.forEach((v, k) => expect(v, `logSoftmax at ${scale}`).toBeCloseTo(wantLog[k]!, 15));
    }
    tape.reset();
    const x = tape.vector([0.3, -1.2, 2.5, 0.7]);
    const w = [1, -2, 0.5, 3];
    tape.backward(x.softmax().dot(w));
    const p = x.softmax().value, pw = p.reduce((s, v, k) => s + v * w[k]!, 0);
    x.grad.forEach((g, k) => expect(g).toBeCloseTo(p[k]! * (w[k]! - pw), 14));
    tape.backward(x.logSoftmax().dot(w));
    const wSum = w.reduce((s, v) => s + v, 0);
    x.grad.forEach((g, k) => expect(g).toBeCloseTo(w[k]! - p[k]! * wSum, 14));
  });

  it('the norm at 0 has gradient 0, as x.square().sum().sqrt() (zero partials are skipped)', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([0, 0, 0]);
    tape.backward(x.norm());
    expect(Array.from(x.grad)).toEqual([0, 0, 0]);
    const xs = tape.variables([0, 0, 0]);
    const scalar = xs.map((v) => v.square()).reduce((a, b) => a.add(b)).sqrt();
    expect(Array.from(tape.gradient(scalar, xs))).toEqual([0, 0, 0]);
  });

  it('gather with repeated indices adds every copy\'s adjoint', async () => {
    const tape = await tapeOn(backend);
    const x = tape.vector([1, 2, 3]);
    const g = x.gather([2, 0, 2, 2, 1]);
    expect(Array.from(g.value)).toEqual([3, 1, 3, 3, 2]);
    tape.backward(g.mul([1, 10, 100, 1000, 10000]).sum());
    expect(Array.from(x.grad)).toEqual([10, 10000, 1101]);
  });
});
