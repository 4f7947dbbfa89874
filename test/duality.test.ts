// Properties of the sweeps on random DAGs (fast-check, seed reported on failure): the reverse and
// tangent sweeps are adjoint to each other, <t, Jᵀc> = <J t, c>; the wasm and JS engines agree;
// forward-over-reverse Hessian-vector products match central differences of the gradient.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { finiteDifferenceGradient, grad, gradcheck, hvp, init, jacobian, jvp, normwiseError, vjp, type Var } from '../src/index.ts';
import { dagArbitrary, dagFunction, type Dag } from './dag-arbitrary.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});


const scalarOf = (dag: Dag) => (x: Var[]): Var => dagFunction(dag)(x)[0]!;

const coefficient = fc.double({ min: -2, max: 2, noNaN: true });
const vectorOf = (length: number) => fc.array(coefficient, { minLength: length, maxLength: length });

/** |a - b| relative to the sum of the magnitudes of the terms: the scale rounding error grows
 *  with, so cancellation between terms cannot make a correct pair look wrong. */
function dotError(t: ArrayLike<number>, Jtc: ArrayLike<number>, Jt: ArrayLike<number>, c: ArrayLike<number>): number {
  let left = 0, right = 0, scale = 1;
  for (let k = 0; k < t.length; k++) {
    left += t[k]! * Jtc[k]!;
    scale += Math.abs(t[k]! * Jtc[k]!);
  }
  for (let j = 0; j < c.length; j++) {
    right += Jt[j]! * c[j]!;
    scale += Math.abs(Jt[j]! * c[j]!);
  }
  return Math.abs(left - right) / scale;
}

describe.each(BACKENDS)('vjp and jvp are adjoint on random DAGs (%s)', (backend) => {
  it('<t, Jᵀc> = <J t, c> to 1e-12 for several outputs of each DAG', () => {
    fc.assert(
      fc.property(
        dagArbitrary({ maxInputs: 12, maxNodes: 300 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        vectorOf(12),
        vectorOf(7),
        (dag, picks, tangentPool, cotangentPool) => {
          const f = dagFunction(dag, picks);
          const t = tangentPool.slice(0, dag.inputs.length);
          const c = cotangentPool.slice(0, picks.length + 1);
          const Jtc = vjp(f, dag.inputs, c, { backend });
          const Jt = jvp(f, dag.inputs, t, { backend });
          expect(Jtc.length).toBe(dag.inputs.length);
          expect(Jt.length).toBe(picks.length + 1);
          expect(dotError(t, Jtc, Jt, c)).toBeLessThanOrEqual(1e-12);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('with unit vectors, vjp rows and jvp columns give the same Jacobian entries', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxInputs: 5, maxNodes: 80 }), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), (dag, picks) => {
        const f = dagFunction(dag, picks);
        const n = dag.inputs.length, m = picks.length + 1;
        for (let k = 0; k < n; k++) {
          const column = jvp(f, dag.inputs, Array.from({ length: n }, (_, i) => +(i === k)), { backend });
          for (let j = 0; j < m; j++) {
            const row = vjp(f, dag.inputs, Array.from({ length: m }, (_, i) => +(i === j)), { backend });
            const scale = Math.max(1, Math.abs(row[k]!));
            expect(Math.abs(column[j]! - row[k]!) / scale).toBeLessThanOrEqual(1e-12);
          }
        }
      }),
      { numRuns: 80 },
    );
  });
});

describe('wasm and JS engines agree on random DAGs', () => {
  // Same op sequence, same rules: only the last bits of transcendental functions (musl vs V8) may
  // differ, so 1e-12 normwise.
  it('gradient, vjp, jvp and hvp', () => {
    fc.assert(
      fc.property(
        dagArbitrary({ maxInputs: 10, maxNodes: 200 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        vectorOf(10),
        vectorOf(5),
        (dag, picks, tangentPool, cotangentPool) => {
          const f = dagFunction(dag, picks);
          const t = tangentPool.slice(0, dag.inputs.length);
          const c = cotangentPool.slice(0, picks.length + 1);
          const pairs: [string, (backend: 'wasm' | 'js') => Float64Array][] = [
            ['grad', (backend) => grad(scalarOf(dag), { backend })(dag.inputs)],
            ['vjp', (backend) => vjp(f, dag.inputs, c, { backend })],
            ['jvp', (backend) => jvp(f, dag.inputs, t, { backend })],
            ['hvp', (backend) => hvp(scalarOf(dag), dag.inputs, t, { backend })],
          ];
          for (const [what, run] of pairs) {
            const { error, worst } = normwiseError(run('wasm'), run('js'));
            expect(error, `${what}, component ${worst}`).toBeLessThanOrEqual(1e-12);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe.each(BACKENDS)('hvp on random smooth DAGs (%s)', (backend) => {
  it('matches central differences of the gradient along v', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxInputs: 6, maxNodes: 100 }), vectorOf(6), (dag, direction) => {
        const f = scalarOf(dag);
        const x = dag.inputs;
        const v = direction.slice(0, x.length);
        const gradient = grad(f, { backend });
        // H v = d/ds grad f(x + s v) at s = 0: the stencil of finiteDifferenceGradient over s, one
        // gradient per stencil point shared by every component.
        const cache = new Map<number, Float64Array>();
        const gradAlong = (s: number): Float64Array => {
          let g = cache.get(s);
          if (!g) cache.set(s, (g = gradient(x.map((xi, k) => xi + s * v[k]!))));
          return g;
        };
        const numeric = x.map((_, i) => finiteDifferenceGradient((s) => gradAlong(s[0]!)[i]!, [0])[0]!);
        const { error, worst } = normwiseError(hvp(f, x, v, { backend }), numeric);
        expect(error, `component ${worst}`).toBeLessThanOrEqual(1e-7);
      }),
      { numRuns: 150 },
    );
  });

  it('<u, H v> = <v, H u> (the forward-over-reverse Hessian is symmetric)', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxInputs: 10, maxNodes: 200 }), vectorOf(10), vectorOf(10), (dag, uPool, vPool) => {
        const f = scalarOf(dag);
        const u = uPool.slice(0, dag.inputs.length), v = vPool.slice(0, dag.inputs.length);
        const Hv = hvp(f, dag.inputs, v, { backend }), Hu = hvp(f, dag.inputs, u, { backend });
        expect(dotError(u, Hv, Hu, v)).toBeLessThanOrEqual(1e-12);
      }),
      { numRuns: 150 },
    );
  });
});

// The one place the modes part (README, Ops): an infinite partial behind paths that cancel. The
// tangent sweep passes the zero tangent on as 0, the reverse sweep sums ∞ - ∞ = NaN; gradcheck
// fails the function on both counts.
describe.each(BACKENDS)('an infinite partial behind cancelling paths (%s)', (backend) => {
  it('the tangent sweep gives 0 and the reverse sweep NaN; gradcheck fails it', () => {
    for (const op of ['sqrt', 'log', 'recip'] as const) {
      const f = (x: Var[]): Var[] => [x[0]!.sub(x[0]!)[op]()];
      expect(Array.from(jacobian(f, [1], { backend, mode: 'forward' }).data)).toEqual([0]);
      expect(Array.from(jacobian(f, [1], { backend, mode: 'reverse' }).data)).toEqual([NaN]);
      const r = gradcheck((x: Var[]) => f(x)[0]!.add(x[1]!), [1, 2], { backend });
      expect([r.ok, r.error, r.dualityError]).toEqual([false, Infinity, Infinity]);
    }
  });
});
