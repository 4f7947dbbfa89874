// The recording paths: numbers as operands share constant nodes, and the fast paths of the op
// methods record exactly what the checked paths do, and refuse exactly what they refuse.
import { describe, expect, it } from 'vitest';
import { CapacityError, InvalidHandleError, NotANumberError, StaleHandleError, compile, createTape, init, type Var } from '../src/index.ts';
import { BACKENDS, tapeOn } from './support.ts';

describe.each(BACKENDS)('recording (%s)', (backend) => {
  it('a number operand costs no node once its value is on the tape', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(3);
    let y: Var = x;
    for (let k = 0; k < 100; k++) y = y.mul(0.5).add(2);
    // One input, the constants 0.5 and 2, two ops a step.
    expect(tape.size).toBe(1 + 2 + 200);
    let v = 3;
    for (let k = 0; k < 100; k++) v = v * 0.5 + 2;
    expect(y.value).toBe(v);
    tape.backward(y);
    expect(x.grad).toBe(0.5 ** 100);
  });

  it('0 and -0 are different constants, NaN is a constant every time, pow with a number is powConst', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(2);
    expect(Object.is(x.mul(-0).value, -0)).toBe(true);
    expect(Object.is(x.mul(0).value, 0)).toBe(true);
    expect(Object.is(x.mul(-0).value, -0)).toBe(true);
    expect(x.add(NaN).value).toBeNaN();
    expect(x.add(NaN).value).toBeNaN();
    const p = x.pow(3);
    expect(p.value).toBe(8);
    tape.backward(p);
    expect(x.grad).toBe(12);
    // Six ops besides the input; constants -0, 0, NaN twice and 3 (-0 and 0 share a cache slot,
    // so the second -0 may be recorded again).
    expect(tape.size).toBeGreaterThanOrEqual(1 + 5 + 6);
    expect(tape.size).toBeLessThanOrEqual(1 + 6 + 6);
  });

  it('constants do not outlive reset(), and tape.constant always records a new node', async () => {
    const tape = await tapeOn(backend);
    let x = tape.variable(1);
    x.mul(7);
    tape.reset();
    x = tape.variable(1);
    const y = x.mul(7);
    expect(tape.size).toBe(3);
    expect(y.value).toBe(7);
    tape.constant(7);
    tape.constant(7);
    expect(tape.size).toBe(5);
  });

  it('more distinct numbers than cache slots are all right, cached or not', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(1);
    let s: Var = x;
    let expected = 1;
    for (let k = 0; k < 500; k++) {
      const c = (k % 97) * 0.25 - 3;
      s = s.add(c);
      expected += c;
    }
    expect(s.value).toBe(expected);
    expect(tape.size).toBeLessThanOrEqual(1 + 500 + 500);
    tape.backward(s);
    expect(x.grad).toBe(1);
  });

  it('the fast handle paths refuse what the checked ones refuse, naming it, and record nothing', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const x = h.variable(2);
    const before = tape.size;
    expect(() => h.sin(x + 0.5)).toThrow(InvalidHandleError);
    expect(() => h.add(x, -1)).toThrow(InvalidHandleError);
    expect(() => h.mul(x, x + 1)).toThrow(InvalidHandleError);
    expect(() => h.mul('1' as unknown as number, x)).toThrow(NotANumberError);
    expect(() => h.exp(Symbol('s') as unknown as number)).toThrow(NotANumberError);
    expect(() => h.exp(NaN)).toThrow(InvalidHandleError);
    expect(tape.size).toBe(before);
    tape.reset();
    expect(() => h.exp(x)).toThrow(StaleHandleError);
    const y = h.variable(0.5);
    expect(h.value(h.exp(y))).toBe(Math.exp(0.5));
  });

  it('a full tape refuses an op with a number operand whole; a cached constant needs only the op\'s node', async () => {
    const tape = await createTape({ backend, maxNodes: 4 });
    const x = tape.variable(2);
    const y = x.mul(3);
    expect(tape.size).toBe(3);
    expect(() => y.mul(5)).toThrow(CapacityError);
    expect(tape.size).toBe(3);
    const z = y.mul(3);
    expect(tape.size).toBe(4);
    expect(z.value).toBe(18);
    expect(() => z.sin()).toThrow(CapacityError);
    expect(() => z.mul(3)).toThrow(CapacityError);
    expect(tape.size).toBe(4);
    tape.reset();
    expect(tape.variable(1).mul(3).value).toBe(3);
  });

  it('compile records a constant node per use, so a loop whose numbers vary keeps its period', async () => {
    await init();
    const f = compile((x: Var[]) => {
      let s = x[0]!;
      for (let j = 0; j < 3; j++) s = s.mul(2).add(j * 0.5);
      return s;
    }, { inputs: 1, backend });
    expect(f.value([1])).toBe(((1 * 2 + 0) * 2 + 0.5) * 2 + 1);
    // One input, then per step two constants and two ops.
    expect(f.size).toBe(1 + 3 * 4);
    expect(f.gradient([1])[0]).toBe(8);
  });
});
