// jacobian (forward and reverse sweeps), hessian and hvp: closed forms, forward = reverse, sweep
// counts, symmetry, agreement with finite differences of the gradient, and hvp = H·v; both
// backends. Expected values come from closed forms written here, from finite differences, or from
// the other mode; none is copied from our own output.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  MissingRuleError, defineFunction, finiteDifferenceGradient, grad, hessian, hvp, init, jacobian, jvp, normwiseError, type Matrix, type Var,
} from '../src/index.ts';
import { dagArbitrary, dagFunction, type Dag } from './dag-arbitrary.ts';
import { BACKENDS, expectClose, rosenbrock } from './support.ts';

beforeAll(async () => {
  await init();
});


/** max |H - Hᵀ| / max(1, max |H|). */
function asymmetry({ data, shape: [n] }: Matrix): number {
  let scale = 1;
  for (const h of data) scale = Math.max(scale, Math.abs(h));
  let worst = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < i; j++) worst = Math.max(worst, Math.abs(data[i * n + j]! - data[j * n + i]!));
  return worst / scale;
}

function matVec({ data, shape: [m, n] }: Matrix, v: ArrayLike<number>): Float64Array {
  const out = new Float64Array(m);
  for (let i = 0; i < m; i++) for (let k = 0; k < n; k++) out[i] += data[i * n + k]! * v[k]!;
  return out;
}


// Tridiagonal: H_ii = [i < n-1] (1200 x_i^2 - 400 x_{i+1} + 2) + [i > 0] 200, H_{i,i+1} = -400 x_i.
function rosenbrockHessian(x: readonly number[]): Float64Array {
  const n = x.length;
  const H = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    if (i + 1 < n) {
      H[i * n + i] += 1200 * x[i]! * x[i]! - 400 * x[i + 1]! + 2;
      H[i * n + i + 1] = H[(i + 1) * n + i] = -400 * x[i]!;
    }
    if (i > 0) H[i * n + i] += 200;
  }
  return H;
}

const ROSENBROCK_POINTS: readonly number[][] = [[1, 1], [-1.2, 1], [0, 0], [0.5, -0.3, 1.7, 2, -1.1]];

// A function with no special structure, for finite-difference checks of the Hessian.
const wiggly = (x: Var[]): Var =>
  x[0]!.mul(x[1]!).sin().add(x[1]!.exp().mul(x[2]!.square().log1p())).add(x[0]!.div(x[2]!.add(3))).add(x[0]!.atan2(x[1]!.add(2)));

// softmax, shifted by the (constant) largest input: softmax is invariant to the shift.
function softmax(x: Var[]): Var[] {
  const m = Math.max(...x.map((v) => v.value));
  const e = x.map((v) => v.sub(m).exp());
  const sum = e.reduce((s, v) => s.add(v));
  return e.map((v) => v.div(sum));
}

function softmaxJacobian(x: readonly number[]): Float64Array {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp(v - m));
  const total = e.reduce((a, b) => a + b);
  const s = e.map((v) => v / total);
  const n = x.length;
  const J = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) J[i * n + j] = (i === j ? s[i]! : 0) - s[i]! * s[j]!;
  return J;
}


const smallDag = dagArbitrary({ maxInputs: 6, maxNodes: 60 });

describe.each(BACKENDS)('jacobian (%s)', (backend) => {
  it('f(x) = [x0 x1, sin x0, exp x1] has J = [[x1, x0], [cos x0, 0], [0, exp x1]] in both modes', () => {
    for (const [x0, x1] of [[0.7, -1.3], [0, 0], [-2.5, 1.75]] as const) {
      const J = [x1, x0, Math.cos(x0), 0, 0, Math.exp(x1)];
      for (const mode of ['forward', 'reverse'] as const) {
        const r = jacobian((x: Var[]) => [x[0]!.mul(x[1]!), x[0]!.sin(), x[1]!.exp()], [x0, x1], { backend, mode });
        expect(r.shape).toEqual([3, 2]);
        expect(r.mode).toBe(mode);
        expect(r.sweeps).toBe(mode === 'forward' ? 2 : 3);
        expectClose(r.data, J, 1e-15, mode);
      }
    }
  });

  it('the Jacobian of softmax is diag(s) - s sᵀ in both modes', () => {
    for (const x of [[1, 2, 3], [0.5, -0.25, 4, 0, -3], [700, 701, 699.5]]) {
      for (const mode of ['forward', 'reverse'] as const) {
        const r = jacobian(softmax, x, { backend, mode });
        expect(r.shape).toEqual([x.length, x.length]);
        expectClose(r.data, softmaxJacobian(x), 1e-15, mode);
      }
    }
  });

  it('auto mode uses one reverse sweep for 100 -> 1 and one forward sweep for 1 -> 100', () => {
    const x = Array.from({ length: 100 }, (_, k) => (k - 50) / 7);
    const many = jacobian((v: Var[]) => v.map((vi) => vi.square()).reduce((s, t) => s.add(t)), x, { backend });
    expect([many.mode, many.sweeps]).toEqual(['reverse', 1]);
    expect(many.shape).toEqual([1, 100]);
    expect(Array.from(many.data)).toEqual(x.map((xi) => 2 * xi)); // d/dx x^2 = 2x, exact

    const fan = jacobian((v: Var) => Array.from({ length: 100 }, (_, k) => v.mul(k).add(v.square())), 1.5, { backend });
    expect([fan.mode, fan.sweeps]).toEqual(['forward', 1]);
    expect(fan.shape).toEqual([100, 1]);
    expect(Array.from(fan.data)).toEqual(Array.from({ length: 100 }, (_, k) => k + 3)); // k + 2x, exact
  });

  it('auto mode picks forward when n <= m, reverse otherwise, with n and m sweeps', () => {
    const square2 = jacobian((x: Var[]) => [x[0]!.add(x[1]!), x[0]!.mul(x[1]!)], [1, 2], { backend });
    expect([square2.mode, square2.sweeps]).toEqual(['forward', 2]);
    const wide = jacobian((x: Var[]) => [x[0]!.add(x[1]!).add(x[2]!), x[0]!.mul(x[2]!)], [1, 2, 3], { backend });
    expect([wide.mode, wide.sweeps]).toEqual(['reverse', 2]);
    expect(Array.from(wide.data)).toEqual([1, 1, 1, 3, 0, 1]);
  });

  // A probe: auto picked forward mode for n <= m and threw the custom function's MissingRuleError,
  // where { mode: 'reverse' } worked.
  it("auto mode takes reverse sweeps where a custom function has no jvp; asked for forward, it throws", () => {
    const triple = defineFunction({ name: 'triple', forward: (xs) => 3 * xs[0]!, vjp: (_xs, _y, g) => [3 * g] });
    const f = (x: Var[]): Var[] => [triple(x[0]!), x[0]!.square()];
    const J = jacobian(f, [0.3], { backend });
    expect([J.mode, J.sweeps, ...J.data]).toEqual(['reverse', 2, 3, 0.6]);
    expect(() => jacobian(f, [0.3], { backend, mode: 'forward' })).toThrow(MissingRuleError);
  });

  it('forward and reverse Jacobians of random DAGs with several outputs agree to 1e-12', () => {
    fc.assert(
      fc.property(smallDag, fc.array(fc.nat(), { minLength: 1, maxLength: 5 }), (dag, picks) => {
        const f = dagFunction(dag, picks);
        const fwd = jacobian(f, dag.inputs, { backend, mode: 'forward' });
        const rev = jacobian(f, dag.inputs, { backend, mode: 'reverse' });
        expect(fwd.shape).toEqual([picks.length + 1, dag.inputs.length]);
        expect(rev.shape).toEqual(fwd.shape);
        expect([fwd.sweeps, rev.sweeps]).toEqual([dag.inputs.length, picks.length + 1]);
        // Entry-wise relative to the row's scale: each row is one output's gradient.
        const [m, n] = fwd.shape;
        for (let j = 0; j < m; j++) {
          expectClose(fwd.data.subarray(j * n, (j + 1) * n), rev.data.subarray(j * n, (j + 1) * n), 1e-12, `row ${j}`);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe.each(BACKENDS)('hessian and hvp (%s)', (backend) => {
  const options = { backend };

  it('the Hessian of Rosenbrock matches its closed form', () => {
    for (const x of ROSENBROCK_POINTS) {
      const H = hessian(rosenbrock, x, options);
      expect(H.shape).toEqual([x.length, x.length]);
      expectClose(H.data, rosenbrockHessian(x), 1e-15);
    }
    // At the minimum of the 2-d function: [[802, -400], [-400, 200]], exactly.
    expect(Array.from(hessian(rosenbrock, [1, 1], options).data)).toEqual([802, -400, -400, 200]);
  });

  it('the Hessian of the quadratic form ½ xᵀ A x is A exactly, at any point', () => {
    const A = [
      [3.7, -1.3, 0.25, 2.2],
      [-1.3, 5.1, -0.6, 0.1],
      [0.25, -0.6, 1.9, -2.4],
      [2.2, 0.1, -2.4, 6.3],
    ];
    // Every product x_i x_j appears as both (i, j) and (j, i), each weighted 0.5 A_ij (a power-of-two
    // scaling, so exact); the two second-derivative contributions then add up to A_ij exactly.
    const quadratic = (x: Var[]): Var => {
      let sum: Var | undefined;
      for (let i = 0; i < 4; i++) {
        for (let j = 0; j < 4; j++) {
          const term = x[i]!.mul(x[j]!).mul(0.5 * A[i]![j]!);
          sum = sum ? sum.add(term) : term;
        }
      }
      return sum!;
    };
    for (const x of [[0, 0, 0, 0], [1, -2, 3.5, 0.125], [-1e3, 7, 1e-3, 42]]) {
      expect(Array.from(hessian(quadratic, x, options).data)).toEqual(A.flat());
      // and its gradient is A x
      expectClose(grad(quadratic, options)(x), x.map((_, i) => A[i]!.reduce((s, a, j) => s + a * x[j]!, 0)), 1e-15);
    }
  });

  it('a scalar-input hessian is 1×1 and hvp takes a number direction', () => {
    // d²/dx² x^3 sin x = 6x sin x + 6x^2 cos x - x^3 sin x
    const f = (x: Var): Var => x.pow(3).mul(x.sin());
    const x = 1.3;
    const exact = 6 * x * Math.sin(x) + 6 * x * x * Math.cos(x) - x ** 3 * Math.sin(x);
    const H = hessian(f, x, options);
    expect(H.shape).toEqual([1, 1]);
    expect(H.data[0]).toBeCloseTo(exact, 13);
    expect(hvp(f, x, 2, options)[0]).toBeCloseTo(2 * exact, 13);
  });

  it('the Hessian is symmetric and matches finite differences of the gradient', () => {
    const cases: [(x: Var[]) => Var, number[]][] = [
      [rosenbrock, [-1.2, 1, 0.3]],
      [wiggly, [0.4, -0.7, 1.1]],
      [wiggly, [-1.5, 0.2, -0.4]],
    ];
    for (const [f, x] of cases) {
      const H = hessian(f, x, options);
      expect(asymmetry(H)).toBeLessThanOrEqual(1e-12);
      const g = grad(f, options);
      const n = x.length;
      const fd = new Float64Array(n * n);
      for (let i = 0; i < n; i++) fd.set(finiteDifferenceGradient((p) => g(p)[i]!, x), i * n);
      expectClose(H.data, fd, 1e-7);
    }
  });

  it('hvp equals the Hessian times v', () => {
    const cases: [(x: Var[]) => Var, number[], number[]][] = [
      [rosenbrock, [0.5, -0.3, 1.7, 2, -1.1], [1, -2, 0.5, 0.25, 3]],
      [wiggly, [0.4, -0.7, 1.1], [-0.3, 2, 0.9]],
    ];
    for (const [f, x, v] of cases) {
      const Hv = hvp(f, x, v, options);
      expect(Hv).toBeInstanceOf(Float64Array);
      expectClose(Hv, matVec(hessian(f, x, options), v), 1e-13);
    }
  });

  it('on random DAGs the Hessian is symmetric and hvp = H·v', () => {
    fc.assert(
      fc.property(smallDag, fc.array(fc.double({ min: -2, max: 2, noNaN: true }), { minLength: 6, maxLength: 6 }), (dag, direction) => {
        const f = (x: Var[]): Var => dagFunction(dag)(x)[0]!;
        const v = direction.slice(0, dag.inputs.length);
        const H = hessian(f, dag.inputs, options);
        expect(asymmetry(H)).toBeLessThanOrEqual(1e-12);
        expectClose(hvp(f, dag.inputs, v, options), matVec(H, v), 1e-12);
      }),
      { numRuns: 150 },
    );
  });

  it('wrong-length directions are rejected', () => {
    expect(() => hvp(rosenbrock, [1, 2, 3], [1, 2], options)).toThrow(/^hvp: the direction has 2 entries but there are 3 inputs$/);
    // jvp's names its call too (a probe read a bare "tangent has 1 entry").
    expect(() => jvp(rosenbrock, [1, 2, 3], [1], options)).toThrow(/^jvp: the tangent has 1 entry but there are 3 inputs$/);
  });

  // A new-user probe: a result larger than the runtime allocates threw a raw RangeError, and the
  // hessian's only after recording f.
  it('a jacobian or hessian too large to allocate is a CapacityError naming its size; the hessian records nothing', () => {
    const tooLarge = expect.objectContaining({ name: 'CapacityError', code: 'CAPACITY', limit: 1e10 });
    expect(() => jacobian((x: Var[]) => x, new Float64Array(100_000), options)).toThrow(tooLarge);
    expect(() => jacobian((x: Var[]) => x, new Float64Array(100_000), options)).toThrow(/^jacobian: a 100000 × 100000 result is more than the runtime allocates$/);
    let calls = 0;
    expect(() => hessian((x: Var[]) => { calls++; return x[0]!.square(); }, new Float64Array(100_000), options)).toThrow(tooLarge);
    expect(calls).toBe(0);
    expect(hessian(rosenbrock, [1, 2], options).shape).toEqual([2, 2]);
  });
});
