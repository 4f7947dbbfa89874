// A sin and a cos of one operand recorded side by side hold each other's partials, and the
// sweeps of both engines (reverse, tangent, reverse with tangents; generated reverse code too)
// read them instead of computing cos and sin again. That must not change a single bit: the same programs with a node between every two ops (so no two trig nodes
// are neighbours) give the same values and gradients, with NaN, ±Infinity, -0 and huge operands.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compile, init, type Tape, type Var } from '../src/index.ts';
import { BACKENDS, tapeOn } from './support.ts';

type Step = { trig: 'sin' | 'cos'; of: number; partner: boolean; mix: number };

const stepArb: fc.Arbitrary<Step> = fc.record({
  trig: fc.constantFrom('sin', 'cos'),
  of: fc.nat(8),
  // Most steps record the other function of the same operand right after (the shortcut's case).
  partner: fc.boolean(),
  mix: fc.nat(3),
});

const inputArb = fc.oneof(
  fc.double({ min: -10, max: 10, noNaN: true }),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, 1e300, -3e22, Math.PI / 2),
);

// The program: trig nodes of earlier nodes, mixed into a running sum. With `apart`, an unused node
// follows every op, so no sin sits next to a cos.
function program(x: Var[], steps: readonly Step[], apart: boolean): Var {
  const nodes: Var[] = x.slice();
  const pad = (): void => void (apart && x[0]!.add(0.5));
  let sum = x[0]!.mul(0.25);
  pad();
  for (const s of steps) {
    const a = nodes[nodes.length - 1 - (s.of % nodes.length)]!;
    const first = a[s.trig]();
    pad();
    nodes.push(first);
    if (s.partner) {
      const second = a[s.trig === 'sin' ? 'cos' : 'sin']();
      pad();
      nodes.push(second);
      sum = s.mix === 0 ? sum.add(first.mul(second)) : s.mix === 1 ? sum.add(first).sub(second) : sum.add(second.mul(a));
    } else {
      sum = s.mix < 2 ? sum.add(first) : sum.mul(first.mul(0.5).add(1));
    }
    pad();
  }
  return sum;
}

const same = (p: ArrayLike<number>, q: ArrayLike<number>): void => {
  expect(p.length).toBe(q.length);
  for (let k = 0; k < p.length; k++) expect(Object.is(p[k], q[k]), `entry ${k}: ${p[k]} vs ${q[k]}`).toBe(true);
};

// Value, gradient, a jvp and an hvp along v (the tangent sweep and the reverse sweep with tangents).
function sweepsOn(tape: Tape, x: readonly number[], v: readonly number[], steps: readonly Step[], apart: boolean): [number, Float64Array, Float64Array, Float64Array] {
  tape.reset();
  const xs = tape.variables(x);
  const y = program(xs, steps, apart);
  return [y.value, tape.gradient(y, xs), tape.jvp(xs, v, [y]), tape.hvp(y, xs, v)];
}

describe.each(BACKENDS)('sin and cos side by side (%s)', (backend) => {
  it('give the values, gradients, jvps and hvps of the same program with their nodes apart, bit for bit (random programs)', async () => {
    const tape = await tapeOn(backend), apartTape = await tapeOn(backend);
    const inputsArb = fc.integer({ min: 1, max: 4 }).chain((n) => fc.tuple(fc.array(inputArb, { minLength: n, maxLength: n }), fc.array(inputArb, { minLength: n, maxLength: n })));
    fc.assert(
      fc.property(inputsArb, fc.array(stepArb, { minLength: 1, maxLength: 24 }), ([x, dir], steps) => {
        const near = sweepsOn(tape, x, dir, steps, false);
        const apart = sweepsOn(apartTape, x, dir, steps, true);
        expect(Object.is(near[0], apart[0])).toBe(true);
        for (let k = 1; k < 4; k++) same(near[k] as Float64Array, apart[k] as Float64Array);
      }),
      { numRuns: 300 },
    );
  });

  it('a sin or a cos as the output, and pairs in either order, differentiate as apart', async () => {
    const tape = await tapeOn(backend), other = await tapeOn(backend);
    for (const x0 of [0.3, -2.5, 0, -0, 1e300, Infinity, NaN]) {
      for (const order of [['sin', 'cos'], ['cos', 'sin']] as const) {
        const grads = [tape, other].map((t, k) => {
          t.reset();
          const x = t.variable(x0);
          const first = x[order[0]]();
          if (k === 1) x.add(1);
          const second = x[order[1]]();
          // The second trig node is the output itself: its sibling sits below it.
          t.backward(second);
          const g1 = x.grad;
          t.backward(first.mul(second));
          return [g1, x.grad];
        });
        same(grads[0]!, grads[1]!);
      }
    }
  });

  it('the interpreter and generated sweeps agree on the transcendental chain', async () => {
    await init();
    const chain = (v: Var[]): Var => {
      let x = v[0]!;
      for (let k = 0; k < 50; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(1e-2));
      return x;
    };
    const interpreted = compile(chain, { inputs: 1, backend, codegen: false });
    const generated = compile(chain, { inputs: 1, backend });
    const tape = await tapeOn(backend);
    for (const x0 of [0.3, -1.2, 4]) {
      tape.reset();
      const x = tape.variable(x0);
      const y = chain([x]);
      tape.backward(y);
      same(interpreted.gradient([x0]), [x.grad]);
      same(generated.gradient([x0]), [x.grad]);
    }
  });
});
