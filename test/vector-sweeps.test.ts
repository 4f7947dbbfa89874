// Every sweep through vector ops: tape.jvp (tangent) and tape.hvp (forward over reverse) on each
// case of the catalogue against its scalar-op twin; tape.vjp / jvp with Vec outputs; and the
// transforms with { vector: true } (grad, valueAndGrad, vjp, jvp, jacobian of a Vec output,
// hvp, hessian) against the same transforms over Var[], on both engines.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  grad, gradcheck, hessian, hvp, init, jacobian, jvp, valueAndGrad, vjp, type Var, type Vec,
} from '../src/index.ts';
import { allCases, binaryCases, bits, selectCases, unaryCases, dot4, matmul4, recordScalar, recordVector, relativeError, sum4, type VectorCase } from './vector-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

beforeAll(async () => {
  await init();
});

const cases = allCases();
const elementwise = new Set([...unaryCases(), ...binaryCases(), ...selectCases()].map((c) => c.name));
/** A direction with distinct entries of both signs. */
const directionFor = (n: number): number[] => Array.from({ length: n }, (_, k) => (k % 2 ? -1 : 1) * (0.5 + ((k * 0.618033988749895) % 1)));

describe.each(BACKENDS)('tape.jvp and tape.hvp through vector ops equal their scalar twins (%s)', (backend) => {
  const tapes = Promise.all([tapeOn(backend), tapeOn(backend)]);

  it.each(cases.map((c): [string, VectorCase] => [c.name, c]))('%s', async (_, c) => {
    const [vt, st] = await tapes;
    const t = directionFor(c.x.length);
    const v = recordVector(vt, c);
    const s = recordScalar(st, c);
    const vJ = vt.jvp([v.input], t, [v.output]), sJ = st.jvp(s.inputs, t, [s.output]);
    const vH = vt.hvp(v.output, [v.input], t), sH = st.hvp(s.output, s.inputs, t);
    expect(relativeError(vJ, sJ), `${c.name}: jvp ${vJ} vs ${sJ}`).toBeLessThanOrEqual(1e-13);
    expect(relativeError(vH, sH), `${c.name}: hvp [${vH}] vs [${sH}]`).toBeLessThanOrEqual(1e-12);
    // hvp leaves the gradient behind, as a reverse sweep would.
    expect(bits(v.input.grad)).toEqual(bits(vt.gradient(v.output, [v.input])));
    // Elementwise ops: per element the scalar tangent rule, so the same bits.
    if (c.exact && elementwise.has(c.name)) expect(bits(vJ), `${c.name}: jvp`).toEqual(bits(sJ));
  });

  it('backward twice, and again after a sweep from elsewhere, gives bit-identical element adjoints', async () => {
    const [tape] = await tapes;
    for (const c of cases) {
      const { input, output } = recordVector(tape, c);
      tape.backward(output);
      const first = bits(input.grad);
      tape.backward(output);
      expect(bits(input.grad), c.name).toEqual(first);
      // Adjoints a sweep from another node leaves behind must be cleared by the next one.
      tape.backward(input.get(0).mul(3), 2);
      expect(Array.from(input.grad)[0]).toBe(6);
      tape.hvp(output, [input], c.x);
      tape.backward(output);
      expect(bits(input.grad), c.name).toEqual(first);
    }
  });

  it('tape.vjp and tape.jvp with Vec outputs and mixed Var / Vec inputs count elements in order', async () => {
    const [tape] = await tapes;
    tape.reset();
    const a = tape.variable(0.5);
    const x = tape.vector([1, -2, 3]);
    const M = tape.vector([1, 2, 3, 4, 5, 6], [2, 3]);
    const y = M.matvec(x.mul(a)); // [2]: a·(M x)
    const z = x.sum().mul(a); // a scalar
    // Outputs [y (2 elements), z]; inputs [x (3), a, M (6)]: 10 columns.
    const c = [2, -1, 3];
    const g = tape.vjp([y, z], c, [x, a, M]);
    // d/dx: a (Mᵀ c_y + c_z 1); d/da: c_y·(M x) + c_z Σx; d/dM_ij: c_y_i a x_j.
    const Mx = [1 - 4 + 9, 4 - 10 + 18];
    expect(Array.from(g)).toEqual([
      0.5 * (2 * 1 - 1 * 4 + 3), 0.5 * (2 * 2 - 1 * 5 + 3), 0.5 * (2 * 3 - 1 * 6 + 3),
      2 * Mx[0]! - Mx[1]! + 3 * 2,
      2 * 0.5 * 1, 2 * 0.5 * -2, 2 * 0.5 * 3, -1 * 0.5 * 1, -1 * 0.5 * -2, -1 * 0.5 * 3,
    ]);
    // jvp: the same Jacobian from the other side, <c, J t> = <Jᵀ c, t>.
    const t = [1, 0.5, -1, 2, 0.25, 0, 1, -1, 0.5, 2];
    const Jt = tape.jvp([x, a, M], t, [y, z]);
    expect(Jt.length).toBe(3);
    const left = c.reduce((s, ck, k) => s + ck * Jt[k]!, 0);
    const right = t.reduce((s, tk, k) => s + tk * g[k]!, 0);
    expect(Math.abs(left - right)).toBeLessThanOrEqual(1e-12 * Math.abs(right));
    // A constant vector listed as an input or output: no gradient, zero tangent.
    const k = tape.constantVector([1, 2]);
    const w = k.mul(x.get(0)).sum();
    expect(Array.from(tape.gradient(w, [k, x]))).toEqual([0, 0, 3, 0, 0]);
    expect(Array.from(tape.jvp([k, x], [5, 5, 1, 1, 1], [k, w]))).toEqual([0, 0, 3]);
  });

  it('hvp through softmax, logSumExp and matmul equals central differences of the gradient', async () => {
    const [tape] = await tapes;
    const f = (x: Vec): Var => x.softmax().dot([1, -2, 0.5, 3]).add(x.reshape([2, 2]).matmul(x.reshape([2, 2])).sum().mul(x.logSumExp()));
    const x0 = [0.3, -0.7, 1.1, 0.2];
    const v = [1, 0.5, -1, 2];
    tape.reset();
    const x = tape.vector(x0);
    const Hv = tape.hvp(f(x), [x], v);
    const h = 1e-5;
    const gradAt = (p: number[]): Float64Array => { tape.reset(); const xv = tape.vector(p); return tape.gradient(f(xv), [xv]); };
    const up = gradAt(x0.map((xi, k) => xi + h * v[k]!)), down = gradAt(x0.map((xi, k) => xi - h * v[k]!));
    const fd = up.map((g, k) => (g - down[k]!) / (2 * h));
    expect(relativeError(Hv, fd)).toBeLessThan(1e-8);
  });
});

// A scalar function of a vector and its twin over Var[].
const W = [0.5, -1, 0.25, 2];
const fVec = (x: Vec): Var => {
  const A = x.slice(0, 4).reshape([2, 2]);
  const h = A.matvec(x.slice(2, 4)).tanh(); // [2]
  return h.logSumExp().add(x.mul(W.slice(0, 4)).sumSquares().mul(0.5)).add(x.max());
};
const fVars = (x: Var[]): Var => {
  const h = matmul4(x.slice(0, 4), x.slice(2, 4), 2, 2, 1).map((v) => v.tanh());
  const m = Math.max(...h.map((v) => v.value));
  const lse = sum4(h.map((v) => v.sub(m).exp())).log().add(m);
  const wx = x.map((v, k) => v.mul(W[k]!));
  return lse.add(dot4(wx, wx).mul(0.5)).add(x.reduce((a, b) => a.max(b)));
};
// A vector-valued function: a Vec out (jacobian of a Vec output).
const gVec = (x: Vec): Vec => x.reshape([2, 2]).matvec(x.slice(1, 3).exp()).mul(x.get(3));
const gVars = (x: Var[]): Var[] => {
  const e = [x[1]!.exp(), x[2]!.exp()];
  return [dot4(x.slice(0, 2), e).mul(x[3]!), dot4(x.slice(2, 4), e).mul(x[3]!)];
};

describe.each(BACKENDS)('transforms with { vector: true } (%s)', (backend) => {
  const x0 = [0.4, -0.3, 0.8, 0.1];
  const opts = { backend, vector: true } as const;
  const scalarOpts = { backend };

  it('grad and valueAndGrad pass one Vec and return a Float64Array', () => {
    const g = grad(fVec, opts)(x0);
    expect(g).toBeInstanceOf(Float64Array);
    expect(relativeError(g, grad(fVars, scalarOpts)(x0))).toBeLessThanOrEqual(1e-13);
    const [value, g2] = valueAndGrad(fVec, opts)(x0);
    const [want] = valueAndGrad(fVars, scalarOpts)(x0);
    expect(relativeError([value], [want])).toBeLessThanOrEqual(1e-14);
    expect(bits(g2)).toEqual(bits(g));
    let received: unknown = null;
    grad((x: Vec) => { received = x; return x.sum(); }, opts)(Float64Array.from(x0));
    expect((received as Vec).shape).toEqual([4]);
  });

  it('vjp and jvp of a Vec-valued function', () => {
    const c = [1.5, -2];
    expect(relativeError(vjp(gVec, x0, c, opts), vjp(gVars, x0, c, scalarOpts))).toBeLessThanOrEqual(1e-13);
    const t = [1, -1, 0.5, 2];
    const out = jvp(gVec, x0, t, opts);
    expect(out.length).toBe(2);
    expect(relativeError(out, jvp(gVars, x0, t, scalarOpts))).toBeLessThanOrEqual(1e-13);
  });

  it('jacobian of a Vec output, forward and reverse, with the documented sweep counts', () => {
    const want = jacobian(gVars, x0, { backend });
    for (const mode of ['forward', 'reverse'] as const) {
      const J = jacobian(gVec, x0, { ...opts, mode });
      expect(J.shape).toEqual([2, 4]);
      expect(J.mode).toBe(mode);
      expect(J.sweeps).toBe(mode === 'forward' ? 4 : 2);
      expect(relativeError(J.data, want.data), mode).toBeLessThanOrEqual(1e-13);
    }
    // auto: 4 inputs > 2 outputs, so reverse; a Vec output of one element is a 1 × n Jacobian.
    expect(jacobian(gVec, x0, opts).mode).toBe('reverse');
    const row = jacobian((x: Vec) => x.sum().mul(2).sin(), x0, opts);
    expect(row.shape).toEqual([1, 4]);
    // A 1 → 3 map with a Vec output: three rows, one forward sweep.
    const col = jacobian((x: Vec) => x.tape.constantVector([1, 2, 3]).mul(x.get(0)).exp(), [0.5], opts);
    expect(col.shape).toEqual([3, 1]);
    expect(col.sweeps).toBe(1);
    expect(relativeError(col.data, [1, 2, 3].map((a) => a * Math.exp(a * 0.5)))).toBeLessThanOrEqual(1e-15);
  });

  it('hvp and hessian through vector ops', () => {
    const v = [0.5, 1, -1, 2];
    expect(relativeError(hvp(fVec, x0, v, opts), hvp(fVars, x0, v, scalarOpts))).toBeLessThanOrEqual(1e-12);
    const H = hessian(fVec, x0, opts);
    expect(H.shape).toEqual([4, 4]);
    expect(relativeError(H.data, hessian(fVars, x0, scalarOpts).data)).toBeLessThanOrEqual(1e-12);
    // Symmetric to rounding.
    for (let i = 0; i < 4; i++) for (let j = 0; j < i; j++) expect(Math.abs(H.data[i * 4 + j]! - H.data[j * 4 + i]!)).toBeLessThanOrEqual(1e-12);
  });

  it('gradcheck({ vector: true }) passes on the same function and catches a wrong one', () => {
    const r = gradcheck(fVec, x0, { backend, vector: true });
    expect(r.ok).toBe(true);
    expect(r.error).toBeLessThanOrEqual(1e-8);
    expect(r.dualityError).toBeLessThanOrEqual(1e-12);
    // stopGradient hides a slope from the tape: the finite differences see it.
    const bad = gradcheck((x: Vec) => x.stopGradient().sum().add(x.sum()), x0, { backend, vector: true });
    expect(bad.ok).toBe(false);
    expect(Array.from(bad.analytic)).toEqual([1, 1, 1, 1]);
    expect(Array.from(bad.numeric).every((g) => Math.abs(g - 2) < 1e-9)).toBe(true);
  });

  it('a function returning a Vec where a scalar is needed is a ShapeError', () => {
    expect(() => grad((x: Vec) => x.exp() as unknown as Var, opts)(x0)).toThrow(/must return a scalar Var, got a Vec of shape \[4\]/);
  });
});
