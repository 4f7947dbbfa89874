// Record once, replay many: a compiled function replayed at new inputs gives what a fresh recording
// at those inputs gives. On one backend the replay runs the same sweeps over the same tape, so the
// results must be bit-identical (Object.is per component: -0 and NaN count); across backends they
// agree exactly for arithmetic-only graphs and to 1e-12 relative otherwise (DESIGN.md section 4).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { TapegradError, compile, createTape, init, normwiseError, type BackendKind, type Tape, type Var } from '../src/index.ts';
import { DAG_OPS, dagArbitrary, operandIndex, recordDag, type Dag, type DagOpName } from './dag-arbitrary.ts';
import { BACKENDS, expectClose, rosenbrock } from './support.ts';

beforeAll(async () => {
  await init();
});

const ARITHMETIC: readonly DagOpName[] = ['add', 'sub', 'mul', 'div', 'neg', 'recip', 'square', 'sqrt'];

/** The graph's nodes over Vars the compiled function receives (same node order as recordDag). */
function dagNodes(x: Var[], dag: Dag): Var[] {
  const values: Var[] = [...x];
  for (const { op, a, b } of dag.nodes) {
    const n = values.length;
    values.push(DAG_OPS[op](values[operandIndex(n, a)]!, values[operandIndex(n, b)]!));
  }
  return values.slice(x.length);
}

function sumOf(nodes: Var[]): Var {
  let out = nodes[0]!;
  for (let k = 1; k < nodes.length; k++) out = out.add(nodes[k]!);
  return out;
}

const dagScalar = (dag: Dag) => (x: Var[]) => sumOf(dagNodes(x, dag));

/** A vector function: the last (up to) three nodes, the sum, and a plain number (a constant). */
const dagVector = (dag: Dag) => (x: Var[]) => {
  const nodes = dagNodes(x, dag);
  return [...nodes.slice(-3), sumOf(nodes), 2.5];
};

function expectSameBits(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  expect(actual.length, what).toBe(expected.length);
  for (let k = 0; k < expected.length; k++) {
    if (!Object.is(actual[k], expected[k])) {
      throw new Error(`${what}[${k}]: replay gave ${actual[k]}, the reference ${expected[k]}`);
    }
  }
}


/** Points in [-1, 1]^16, cut to the graph's input count. */
const pointsArbitrary = fc.array(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 16, maxLength: 16 }), {
  minLength: 1,
  maxLength: 3,
});

/** A fresh tape per backend, reset before every reference recording. */
const fresh: Record<BackendKind, Tape> = {} as Record<BackendKind, Tape>;
beforeAll(async () => {
  for (const backend of BACKENDS) fresh[backend] = await createTape({ backend });
});

describe('replay of random DAGs equals a fresh recording at the new inputs', () => {
  it.each(BACKENDS)('value, gradient and valueAndGradient (into out) are bit-identical (%s)', (backend) => {
    fc.assert(
      fc.property(dagArbitrary(), pointsArbitrary, (dag, points) => {
        const n = dag.inputs.length;
        const compiled = compile(dagScalar(dag), { inputs: n, backend, at: dag.inputs });
        const out = new Float64Array(n);
        for (const raw of points) {
          const p = raw.slice(0, n);
          const tape = fresh[backend];
          tape.reset();
          const { inputs, output } = recordDag(tape, dag, p);
          const value = output.value;
          const gradient = tape.gradient(output, inputs);

          expect(Object.is(compiled.value(p), value)).toBe(true);
          expect(compiled.gradient(p, out)).toBe(out);
          expectSameBits(out, gradient, 'gradient');
          out.fill(7);
          const [v, g] = compiled.valueAndGradient(p, out);
          // The caller's array is the result, not a copy of it.
          expect(g).toBe(out);
          expect(Object.is(v, value)).toBe(true);
          expectSameBits(g, gradient, 'valueAndGradient');
          // A Float64Array input goes through the same path as a plain array.
          expectSameBits(compiled.gradient(Float64Array.from(p)), gradient, 'gradient of a Float64Array');
        }
        expect(compiled.rerecords).toBe(0);
      }),
      { numRuns: 100 },
    );
  });

  it.each(BACKENDS)('vjp and jvp of a vector function and hvp of a scalar one equal the Tape API on a fresh tape (%s)', (backend) => {
    const unit = fc.double({ min: -1, max: 1, noNaN: true });
    fc.assert(
      fc.property(
        dagArbitrary({ maxNodes: 300 }),
        pointsArbitrary,
        fc.array(unit, { minLength: 16, maxLength: 16 }),
        fc.array(unit, { minLength: 5, maxLength: 5 }),
        (dag, points, direction, cotangent) => {
          const n = dag.inputs.length;
          const t = direction.slice(0, n);
          const vector = compile(dagVector(dag), { inputs: n, backend, at: dag.inputs });
          const scalar = compile(dagScalar(dag), { inputs: n, backend, at: dag.inputs });
          for (const raw of points) {
            const p = raw.slice(0, n);
            const tape = fresh[backend];
            tape.reset();
            const { inputs, nodes, output } = recordDag(tape, dag, p);
            const outputs = [...nodes.slice(-3), output, tape.constant(2.5)];
            const c = cotangent.slice(0, outputs.length);
            const refVjp = tape.vjp(outputs, c, inputs);
            const refJvp = tape.jvp(inputs, t, outputs);
            const refValues = Float64Array.from(outputs, (o) => o.value);
            const refHvp = tape.hvp(output, inputs, t);

            expect(vector.outputs).toBe(outputs.length);
            const values = new Float64Array(outputs.length);
            expect(vector.value(p, values)).toBe(values);
            expectSameBits(values, refValues, 'vector value');
            const vjpOut = new Float64Array(n);
            expect(vector.vjp(p, c, vjpOut)).toBe(vjpOut);
            expectSameBits(vjpOut, refVjp, 'vjp');
            const jvpOut = new Float64Array(outputs.length);
            expect(vector.jvp(p, t, jvpOut)).toBe(jvpOut);
            expectSameBits(jvpOut, refJvp, 'jvp');
            const hvpOut = new Float64Array(n);
            expect(scalar.hvp(p, t, hvpOut)).toBe(hvpOut);
            expectSameBits(hvpOut, refHvp, 'hvp');
            // jvp of the scalar function is <gradient, t>: same tangent sweep, scalar output.
            tape.reset();
            const again = recordDag(tape, dag, p);
            expectSameBits(scalar.jvp(p, t), tape.jvp(again.inputs, t, [again.output]), 'scalar jvp');
            expectSameBits(scalar.vjp(p, [3]), tape.vjp([again.output], [3], again.inputs), 'scalar vjp');
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it('wasm and js replays agree exactly for arithmetic-only graphs', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxNodes: 200, ops: ARITHMETIC }), pointsArbitrary, (dag, points) => {
        const n = dag.inputs.length;
        const wasm = compile(dagScalar(dag), { inputs: n, backend: 'wasm', at: dag.inputs });
        const js = compile(dagScalar(dag), { inputs: n, backend: 'js', at: dag.inputs });
        for (const raw of points) {
          const p = raw.slice(0, n);
          const [vw, gw] = wasm.valueAndGradient(p);
          const [vj, gj] = js.valueAndGradient(p);
          expect(Object.is(vw, vj)).toBe(true);
          expectSameBits(gw, gj, 'wasm vs js gradient');
          expectSameBits(wasm.hvp(p, p), js.hvp(p, p), 'wasm vs js hvp');
        }
      }),
      { numRuns: 150 },
    );
  });

  it('wasm and js replays agree to 1e-12 with every op', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxNodes: 200 }), pointsArbitrary, (dag, points) => {
        const n = dag.inputs.length;
        const wasm = compile(dagVector(dag), { inputs: n, backend: 'wasm', at: dag.inputs });
        const js = compile(dagVector(dag), { inputs: n, backend: 'js', at: dag.inputs });
        const wasmScalar = compile(dagScalar(dag), { inputs: n, backend: 'wasm', at: dag.inputs });
        const jsScalar = compile(dagScalar(dag), { inputs: n, backend: 'js', at: dag.inputs });
        for (const raw of points) {
          const p = raw.slice(0, n);
          expectClose(wasm.value(p) as Float64Array, js.value(p) as Float64Array, 1e-12, 'values');
          expectClose(wasmScalar.gradient(p), jsScalar.gradient(p), 1e-12, 'gradient');
          const c = [1, -2, 0.5, 1, 3].slice(-wasm.outputs);
          expectClose(wasm.vjp(p, c), js.vjp(p, c), 1e-12, 'vjp');
          expectClose(wasm.jvp(p, p), js.jvp(p, p), 1e-12, 'jvp');
          expectClose(wasmScalar.hvp(p, p), jsScalar.hvp(p, p), 1e-12, 'hvp');
        }
      }),
      { numRuns: 100 },
    );
  });
});

// x <- x + 1e-5 (sin x e^{cos x} - log1p(x^2)), 1000 steps: 8000 nodes of transcendental ops.
function chain(x: Var[]): Var {
  let v = x[0]!;
  for (let k = 0; k < 1000; k++) v = v.add(v.sin().mul(v.cos().exp()).sub(v.square().log1p()).mul(1e-5));
  return v;
}

const ROSENBROCK_N = 50;


/** The Rosenbrock gradient in closed form. */
function rosenbrockGradient(x: ArrayLike<number>): Float64Array {
  const n = x.length;
  const g = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (i + 1 < n) g[i]! += -400 * x[i]! * (x[i + 1]! - x[i]! * x[i]!) - 2 * (1 - x[i]!);
    if (i > 0) g[i]! += 200 * (x[i]! - x[i - 1]! * x[i - 1]!);
  }
  return g;
}

/** H·v for Rosenbrock in closed form (the Hessian is tridiagonal). */
function rosenbrockHvp(x: ArrayLike<number>, v: ArrayLike<number>): Float64Array {
  const n = x.length;
  const hv = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let diag = 0;
    if (i + 1 < n) {
      diag += 1200 * x[i]! * x[i]! - 400 * x[i + 1]! + 2;
      hv[i]! += -400 * x[i]! * v[i + 1]!;
    }
    if (i > 0) {
      diag += 200;
      hv[i]! += -400 * x[i - 1]! * v[i - 1]!;
    }
    hv[i]! += diag * v[i]!;
  }
  return hv;
}

function freshGradient(backend: BackendKind, f: (x: Var[]) => Var, p: ArrayLike<number>) {
  const tape = fresh[backend];
  tape.reset();
  const inputs = tape.variables(p);
  const output = f(inputs);
  return { value: output.value, gradient: tape.gradient(output, inputs), tape, inputs, output };
}

describe('workloads: replay equals a fresh recording', () => {
  it.each(BACKENDS)('transcendental chain, 1000 steps (%s)', (backend) => {
    const compiled = compile(chain, { inputs: 1, backend, at: [0.5] });
    expect(compiled.size).toBeGreaterThan(8000);
    const out = new Float64Array(1);
    fc.assert(
      fc.property(fc.double({ min: -3, max: 3, noNaN: true }), (x) => {
        const ref = freshGradient(backend, chain, [x]);
        const [v, g] = compiled.valueAndGradient([x], out);
        expect(g).toBe(out);
        expect(Object.is(v, ref.value)).toBe(true);
        expectSameBits(g, ref.gradient, 'chain gradient');
        expectSameBits(compiled.hvp([x], [1]), ref.tape.hvp(ref.output, ref.inputs, [1]), 'chain hvp');
      }),
      { numRuns: 40 },
    );
    expect(compiled.rerecords).toBe(0);
  });

  it('transcendental chain: wasm and js replays agree to 1e-12', () => {
    const wasm = compile(chain, { inputs: 1, backend: 'wasm', at: [0.5] });
    const js = compile(chain, { inputs: 1, backend: 'js', at: [0.5] });
    for (const x of [-2.5, -1, -1e-3, 0, 0.25, 1, 2, 3]) {
      const [vw, gw] = wasm.valueAndGradient([x]);
      const [vj, gj] = js.valueAndGradient([x]);
      expect(Math.abs(vw - vj)).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(vj)));
      expectClose(gw, gj, 1e-12, `gradient at ${x}`);
    }
  });

  it.each(BACKENDS)('Rosenbrock n = 50: bit-identical to a fresh recording, equal to the closed form (%s)', (backend) => {
    const compiled = compile(rosenbrock, { inputs: ROSENBROCK_N, backend, at: new Float64Array(ROSENBROCK_N).fill(-1.2) });
    const out = new Float64Array(ROSENBROCK_N);
    const coordinate = fc.double({ min: -2, max: 2, noNaN: true });
    fc.assert(
      fc.property(
        fc.array(coordinate, { minLength: ROSENBROCK_N, maxLength: ROSENBROCK_N }),
        fc.array(coordinate, { minLength: ROSENBROCK_N, maxLength: ROSENBROCK_N }),
        (x, v) => {
          const ref = freshGradient(backend, rosenbrock, x);
          expect(compiled.gradient(x, out)).toBe(out);
          expectSameBits(out, ref.gradient, 'Rosenbrock gradient');
          expect(Object.is(compiled.value(x), ref.value)).toBe(true);
          // Same math, different rounding order: the closed form agrees to a few ulps.
          expectClose(out, rosenbrockGradient(x), 1e-13, 'Rosenbrock gradient vs closed form');
          const hv = compiled.hvp(x, v);
          expectSameBits(hv, ref.tape.hvp(ref.output, ref.inputs, v), 'Rosenbrock hvp');
          expectClose(hv, rosenbrockHvp(x, v), 1e-13, 'Rosenbrock hvp vs closed form');
        },
      ),
      { numRuns: 100 },
    );
  });

  it('Rosenbrock n = 50: wasm and js replays agree exactly (arithmetic only)', () => {
    const at = new Float64Array(ROSENBROCK_N).fill(0.5);
    const wasm = compile(rosenbrock, { inputs: ROSENBROCK_N, backend: 'wasm', at });
    const js = compile(rosenbrock, { inputs: ROSENBROCK_N, backend: 'js', at });
    fc.assert(
      fc.property(fc.array(fc.double({ min: -2, max: 2, noNaN: true }), { minLength: ROSENBROCK_N, maxLength: ROSENBROCK_N }), (x) => {
        const [vw, gw] = wasm.valueAndGradient(x);
        const [vj, gj] = js.valueAndGradient(x);
        expect(Object.is(vw, vj)).toBe(true);
        expectSameBits(gw, gj, 'wasm vs js');
      }),
      { numRuns: 100 },
    );
  });

  it('compiles without `at` by recording at the first call, and reuses that recording', () => {
    const compiled = compile(rosenbrock, { inputs: ROSENBROCK_N });
    expect(compiled.size).toBe(0);
    const x = Float64Array.from({ length: ROSENBROCK_N }, (_, i) => Math.cos(i));
    expectSameBits(compiled.gradient(x), freshGradient('wasm', rosenbrock, x).gradient, 'first call');
    const size = compiled.size;
    expect(size).toBeGreaterThan(0);
    const y = Float64Array.from({ length: ROSENBROCK_N }, (_, i) => 1 - i / 25);
    expectSameBits(compiled.gradient(y), freshGradient('wasm', rosenbrock, y).gradient, 'second call');
    expect(compiled.size).toBe(size);
    expect(compiled.rerecords).toBe(0);
  });
});

describe('the caller-provided out array', () => {
  // Pins a bug: replay writes the gradient into `out` without checking its length. On wasm a
  // short `out` silently receives a truncated gradient (typed-array writes past the end are
  // dropped); on js the same call throws a bare RangeError. Both should refuse it with a
  // TapegradError ('INVALID_ARGUMENT'), as the length of x is checked (compile.ts: checkLength
  // for `out` in gradient/valueAndGradient/vjp/hvp, and rows × inputs in gradientBatch).
  it.each(BACKENDS)('too short an out array is refused with a TapegradError, not truncated (%s)', (backend) => {
    const f = compile((x) => x[0]!.mul(x[1]!).add(x[2]!).mul(x[3]!), { inputs: 4, backend, at: [1, 2, 3, 4] });
    const calls: [string, () => unknown][] = [
      ['gradient', () => f.gradient([1, 2, 3, 4], new Float64Array(2))],
      ['valueAndGradient', () => f.valueAndGradient([1, 2, 3, 4], new Float64Array(2))],
      ['gradientBatch', () => f.gradientBatch(new Float64Array(8), 2, new Float64Array(3))],
    ];
    for (const [name, call] of calls) {
      let thrown: unknown = null;
      try {
        call();
      } catch (e) {
        thrown = e;
      }
      expect(thrown, name).toBeInstanceOf(TapegradError);
    }
  });

  // README: a call writes only its first entries; where a guard made f return fewer outputs, the
  // ones past f.outputs keep what was there (a probe asked how a caller tells).
  it.each(BACKENDS)('a call writes f.outputs entries of out, the rest as they were (%s)', (backend) => {
    const f = compile((x: Var[]) => (x[0]!.gt(0).value ? [x[0]!, x[0]!.mul(2), x[0]!.mul(3)] : [x[0]!, x[0]!.mul(2)]), { inputs: 1, backend });
    const out = new Float64Array(3);
    expect(Array.from(f.value([2], out))).toEqual([2, 4, 6]);
    expect(f.outputs).toBe(3);
    expect(Array.from(f.value([-1], out))).toEqual([-1, -2, 6]);
    expect(f.outputs).toBe(2);
  });
});
