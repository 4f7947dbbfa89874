// A compiled function replays one recording at new inputs. A value its code read in JS would be
// replayed as the constant it was at the first inputs, a silently wrong gradient; so any read
// but a comparison's (those become guards) is refused when recording, through every entry point.
import { beforeAll, describe, expect, it } from 'vitest';
import { TapegradError, compile, createTape, grad, init, type CompiledFunction, type Var, type Vec } from '../src/index.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

const REFUSED = /read the value of node #\d+ \(\w+\[?\]?\).*comparison.*select/s;

function expectRefused(call: () => unknown, what: string): void {
  let error: unknown = null;
  try {
    call();
  } catch (e) {
    error = e;
  }
  expect(error, what).toBeInstanceOf(TapegradError);
  expect((error as TapegradError).code, what).toBe('INVALID_ARGUMENT');
  expect((error as Error).message, what).toMatch(REFUSED);
}

describe.each(BACKENDS)('compiled functions refuse value reads (%s)', (backend) => {
  // The example: recorded at 2, a replay at -1 returned -2 (the recorded branch).
  const branchOnValue = (x: Var[]): Var => (x[0]!.value > 0 ? x[0]!.square() : x[0]!.neg().sin());

  it('x.value, valueOf (x > 0), Number(x) and handle values are refused on every entry point', () => {
    const readers: [string, (x: Var[]) => Var][] = [
      ['x.value', branchOnValue],
      ['x > 0 (valueOf)', (x) => ((x[0] as unknown as number) > 0 ? x[0]!.square() : x[0]!.neg())],
      ['Number(x)', (x) => x[0]!.mul(Number(x[1]))],
      ['a value used as a number', (x) => x[0]!.mul(Math.exp(x[1]!.value))],
      ['a handle value', (x) => (x[0]!.tape.handles.value(x[1]!.id) > 0 ? x[0]! : x[1]!)],
    ];
    for (const [name, f] of readers) {
      const compiled = compile(f, { inputs: 2, backend });
      expectRefused(() => compiled.gradient([2, 3]), `${name}: gradient`);
      expectRefused(() => compiled.value([2, 3]), `${name}: value`);
      expectRefused(() => compiled.hvp([2, 3], [1, 0]), `${name}: hvp`);
      expectRefused(() => compiled.jvp([2, 3], [1, 0]), `${name}: jvp`);
      expectRefused(() => compiled.vjp([2, 3], [1]), `${name}: vjp`);
      expectRefused(() => compiled.gradientBatch(new Float64Array([2, 3, -1, 3]), 2), `${name}: gradientBatch`);
      expectRefused(() => compile(f, { inputs: 2, backend, at: [2, 3] }), `${name}: compile with at`);
    }
  });

  // A probe: gradientBatch and valueAndGradientBatch gave the refusal without its row, the
  // directional batches with it.
  it("a batch's refusal at its first row names row 0, on every batch", () => {
    const compiled = compile(branchOnValue, { inputs: 1, backend });
    const batches: [string, () => unknown][] = [
      ['gradientBatch', () => compiled.gradientBatch([2, 3], 2)],
      ['valueAndGradientBatch', () => compiled.valueAndGradientBatch([2, 3], 2)],
      ['vjpBatch', () => compiled.vjpBatch([2, 3], 2, [1, 1])],
      ['jvpBatch', () => compiled.jvpBatch([2, 3], 2, [1, 1])],
      ['hvpBatch', () => compiled.hvpBatch([2, 3], 2, [1, 1])],
    ];
    for (const [what, batch] of batches) {
      expect(batch).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(new RegExp(`^${what}, row 0: compile: the function read the value of node`)) }));
    }
    // A batch inside f calling its own function: the inner call's row, named once (a review
    // probe saw "valueAndGradientBatch, row 0: gradientBatch, row 0: ...").
    const self: CompiledFunction = compile((x: Var[]) => {
      self.gradientBatch([1, 2], 2);
      return x[0]!.sin();
    }, { inputs: 1, backend });
    for (const batch of [() => self.valueAndGradientBatch([1, 2], 2), () => self.hvpBatch([1, 2], 2, [1, 1])]) {
      expect(batch).toThrow(/^gradientBatch, row 0: compile: f called its own compiled function while recording it/);
    }
  });

  it('a Vec value read is refused too, the message pointing to an element\'s comparison', () => {
    const f = compile((x: Vec) => (x.value[0]! > 0 ? x.square().sum() : x.sum()), { inputs: 2, vector: true, backend });
    expectRefused(() => f.gradient([1, 2]), 'Vec value');
    // Not the scalar advice, x.gt(0).value, which is refused for a Vec in turn (a probe), for the
    // input or any other vector node.
    const vecAdvice = /A Vec's values are not guarded: branch on an element's comparison \(v\.get\(k\)\.gt\(0\)\.value: compiled functions guard those and record again when one changes\), or use where\/select, which replays both branches\.$/;
    expect(() => f.gradient([1, 2])).toThrow(vecAdvice);
    for (const read of [(x: Vec) => x.exp().value[0]! > 1, (x: Vec) => x.slice(1).value[0]! > 1]) {
      const g = compile((x: Vec) => (read(x) ? x.sum() : x.sumSquares()), { inputs: 3, vector: true, backend });
      expect(() => g.gradient([1, 2, 3])).toThrow(vecAdvice);
    }
    // An element's value is a scalar's: the scalar advice.
    const h = compile((x: Vec) => (x.get(0).value > 1 ? x.sum() : x.sumSquares()), { inputs: 3, vector: true, backend });
    expect(() => h.gradient([1, 2, 3])).toThrow(/\(vget\) while recording; .*Branch on a comparison instead/);
  });

  it("an elementwise comparison's values are refused, the message pointing to scalar ones", () => {
    const f = compile((x: Vec) => (x.gt(0).value[0]! ? x.square().sum() : x.sum()), { inputs: 2, vector: true, backend });
    expect(() => f.gradient([1, 2])).toThrow(/\(gt\[\]\) while recording; .*Only scalar comparisons become guards: compare elements \(v\.get\(k\)\.gt\(0\)\.value\), or use where/);
    // An element of one read likewise (a probe: the advice was x.gt(0).value, refused for a Vec).
    const g = compile((x: Vec) => (x.gt(0).get(1).value ? x.sum() : x.sumSquares()), { inputs: 3, vector: true, backend });
    expect(() => g.gradient([1, 2, 3])).toThrow(/\(vget\) while recording; .*Only scalar comparisons become guards: compare elements \(v\.get\(k\)\.gt\(0\)\.value\)/);
  });

  it('comparisons stay guards: the same function written with x.gt(0) records again across the branch', () => {
    const f = compile((x) => (x[0]!.gt(0).value ? x[0]!.square() : x[0]!.neg().sin()), { inputs: 1, backend });
    expect(f.gradient([2])[0]).toBe(4);
    expect(f.gradient([-1])[0]).toBeCloseTo(-Math.cos(1), 15);
    expect(f.rerecords).toBe(1);
  });

  it('outside compile, reading values is fine: every call records afresh', async () => {
    expect(grad((x: Var) => branchOnValue([x]), { backend })(-1)).toBeCloseTo(-Math.cos(1), 15);
    expect(grad((x: Var) => branchOnValue([x]), { backend })(2)).toBe(4);
    const tape = await createTape({ backend });
    const x = tape.variable(3);
    expect(+x).toBe(3);
    expect((x as unknown as number) > 2).toBe(true);
    expect(Number(x.mul(2))).toBe(6);
  });

  it('the refusal leaves nothing broken: another compiled function on the same engine works', () => {
    expectRefused(() => compile(branchOnValue, { inputs: 1, backend }).gradient([2]), 'refused');
    const ok = compile((x) => x[0]!.square().mul(x[0]!), { inputs: 1, backend });
    expect(ok.gradient([2])[0]).toBe(12);
  });
});

// A new-user probe: y·dy/dx written with tape.gradient inside f replayed y·(dy/dx at the
// recording point) at every other input, silently (f(1) = 6 for 2x³); so did backward then
// .grad, vjp, jvp, hvp, the handle API's gradient and a Vec's grad.
describe.each(BACKENDS)('compiled functions refuse sweeps of the tape they record on (%s)', (backend) => {
  const twiceCubed: [string, (x: Var[]) => Var][] = [
    ['gradient', (x) => { const y = x[0]!.square(); return y.mul(x[0]!.tape.gradient(y, [x[0]!])[0]!); }],
    ['backward and .grad', (x) => { const y = x[0]!.square(); x[0]!.tape.backward(y); return y.mul(x[0]!.grad); }],
    ['vjp', (x) => { const y = x[0]!.square(); return y.mul(x[0]!.tape.vjp([y], [1], [x[0]!])[0]!); }],
    ['jvp', (x) => { const y = x[0]!.square(); return y.mul(x[0]!.tape.jvp([x[0]!], [1], [y])[0]!); }],
    // (x² times its second derivative, 2: 2x² where the others give 2x³.)
    ['hvp', (x) => { const y = x[0]!.square(); return y.mul(x[0]!.tape.hvp(y, [x[0]!], [1])[0]!).mul(x[0]!); }],
    ['handles.gradient', (x) => { const y = x[0]!.square(); return y.mul(x[0]!.tape.handles.gradient(y.id, [x[0]!.id])[0]!); }],
  ];
  for (const [name, f] of twiceCubed) {
    it(`${name}: INVALID_ARGUMENT on the call that records, naming the sweep; the function records again next time`, async () => {
      const compiled = compile(f, { inputs: 1, backend });
      for (let k = 0; k < 2; k++) {
        expect(() => compiled.value([3])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^compile: the function ran a (reverse|tangent) sweep/) }));
      }
      // Outside compile, the same function is fine: every call records afresh.
      for (const x of [1, 3]) {
        const tape = await createTape({ backend });
        expect(f(tape.variables([x])).value).toBe(2 * x ** 3);
      }
    });
  }

  it("a Vec's gradient read after a sweep is refused too", () => {
    const f = compile((v: Vec) => { const s = v.mul(v).sum(); v.tape.backward(s); return s.mul(v.grad[0]!); }, { inputs: 2, vector: true, backend });
    expect(() => f.value([1, 2])).toThrow(/compile: the function ran a reverse sweep/);
  });
});

// A probe: the value of a constant, or of a node computed from constants alone, was refused as a
// value that 'a replay at other inputs would reuse as a constant', which it is at every input.
describe.each(BACKENDS)('values fixed by constants alone may be read (%s)', (backend) => {
  it('a constant, and ops of constants; a node that depends on an input still refused', () => {
    const f = compile((x: Var[]) => {
      const c = x[0]!.tape.constant(3);
      const k = c.mul(2).sqrt().add(x[0]!.tape.constant(1)).value; // sqrt(6) + 1
      return x[0]!.mul(c.value).add(k);
    }, { inputs: 1, backend });
    expect(f.value([2])).toBe(6 + Math.sqrt(6) + 1);
    expect(f.value([5])).toBe(15 + Math.sqrt(6) + 1);
    expect(Array.from(f.gradient([5]))).toEqual([3]);
    expectRefused(() => compile((x: Var[]) => x[0]!.mul(x[0]!.tape.constant(2).add(x[0]!).value), { inputs: 1, backend }).value([1]), 'a sum with an input');
    // A read of a constant after a refused one is not counted among the refused (a review).
    expect(() => compile((x: Var[]) => {
      const d = x[0]!.sin(), c = x[0]!.tape.constant(3);
      return x[0]!.mul(d.value + c.value);
    }, { inputs: 1, backend }).value([1])).toThrow(/read the value of node #\d+ \(sin\) while recording; it may depend/);
  });
});
