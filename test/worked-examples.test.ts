// The worked examples from the literature we build on, on both backends.
import { describe, expect, it } from 'vitest';
import { BACKENDS, tapeOn } from './support.ts';

describe.each(BACKENDS)('worked examples (%s)', (backend) => {
  it('sigmoid 1/(1+exp(-x)) from primitives: 0.2350 at 0.5, 0.25 at 0', async () => {
    const tape = await tapeOn(backend);
    for (const [x0, expected] of [[0.5, 0.2350037122015945], [0, 0.25]] as const) {
      tape.reset();
      const x = tape.variable(x0);
      const s = tape.constant(1).div(x.neg().exp().add(1));
      tape.backward(s);
      expect(x.grad).toBeCloseTo(expected, 15);
      expect(x.grad.toFixed(4)).toBe(expected.toFixed(4));
    }
  });

  it('log(x1) + x1*x2 - sin(x2) at (2, 5) gives (5.5, 2 - cos 5)', async () => {
    const tape = await tapeOn(backend);
    const x1 = tape.variable(2), x2 = tape.variable(5);
    const f = x1.log().add(x1.mul(x2)).sub(x2.sin());
    expect(f.value).toBe(Math.log(2) + 10 - Math.sin(5));
    tape.backward(f);
    expect(x1.grad).toBe(5.5);
    expect(x2.grad).toBeCloseTo(2 - Math.cos(5), 14);
    expect(Array.from(tape.gradient(f, [x1, x2]))).toEqual([x1.grad, x2.grad]);
  });

  it('u = 3x, y = u^2 at x = 2: 36, and 144 with seed 4', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(2);
    const y = x.mul(3).square();
    expect(y.value).toBe(36);
    tape.backward(y);
    expect(x.grad).toBe(36);
    tape.backward(y, 4);
    expect(x.grad).toBe(144);
  });

  it('y = x^2 + x has dy/dx = 2x + 1 (fan-out sums both paths)', async () => {
    const tape = await tapeOn(backend);
    for (const x0 of [-3, 0, 0.5, 7]) {
      tape.reset();
      const x = tape.variable(x0);
      const y = x.mul(x).add(x);
      tape.backward(y);
      expect(x.grad).toBe(2 * x0 + 1);
    }
  });

  it('u = x^2, y = 3u at x = 1 with seed -2 gives -12', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(1);
    const y = x.pow(2).mul(3);
    tape.backward(y, -2);
    expect(x.grad).toBe(-12);
  });
});
