// The public surface as a user meets it: every export documented in README's API reference, one
// calling convention for transforms and checkers, array-likes wherever a vector of numbers goes
// in, and errors that name what was expected and what arrived.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import * as api from '../src/index.ts';
import {
  NotANumberError, TapegradError, compile, finiteDifferenceGradient, grad, gradcheck, hessian, hvp, init, jacobian, jvp,
  select, valueAndGrad, vjp, where, type Var, type Vec,
} from '../src/index.ts';
import { BACKENDS } from './support.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

beforeAll(async () => {
  await init();
});

// Every name in src/index.ts's export lists, types included.
function exportedNames(): string[] {
  const source = readFileSync(path.join(ROOT, 'src/index.ts'), 'utf8');
  const names: string[] = [];
  for (const [, list] of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const entry of list!.split(',')) {
      const name = entry.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop()!;
      if (name) names.push(name);
    }
  }
  return names;
}

function apiReference(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## API reference\n');
  expect(start, 'README has an "## API reference" section').toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

describe('README documents every export', () => {
  it('the export lists of src/index.ts cover everything the module exports at run time', () => {
    const names = new Set(exportedNames());
    expect(Object.keys(api).filter((k) => !names.has(k))).toEqual([]);
    expect(names.size).toBeGreaterThan(Object.keys(api).length); // the types come on top
  });

  it("every exported name is in a code span of README's API reference", () => {
    const spans = [...apiReference().matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
    const missing = exportedNames().filter((name) => {
      const word = new RegExp(`(^|[^\\w.])${name}(?![\\w])`);
      return !spans.some((s) => word.test(s));
    });
    expect(missing).toEqual([]);
  });
});

const rosen = (x: Var[]): Var => x[1]!.sub(x[0]!.square()).square().mul(100).add(x[0]!.neg().add(1).square());
const ROSEN_GRAD = [-215.6, -88]; // at (-1.2, 1), closed form

describe.each(BACKENDS)('one calling convention (%s)', (backend) => {
  it('gradcheck takes f of a Var[] as grad does, f of a Var for a number, f of a Vec with vector: true', () => {
    const r = gradcheck(rosen, [-1.2, 1], { backend });
    expect(r.ok).toBe(true);
    expect([...r.analytic]).toEqual([...grad(rosen, { backend })([-1.2, 1])]);
    expect(r.analytic[0]).toBeCloseTo(ROSEN_GRAD[0]!, 10);
    const scalar = gradcheck((x: Var) => x.sin(), 0.5, { backend });
    expect(scalar.ok).toBe(true);
    expect([...scalar.analytic]).toEqual([Math.cos(0.5)]);
    const vec = gradcheck((x: Vec) => x.sumSquares(), [1, -2], { backend, vector: true });
    expect([...vec.analytic]).toEqual([2, -4]);
  });

  it('finiteDifferenceGradient: a number x gives a number, an array x a Float64Array', () => {
    expect(finiteDifferenceGradient((x: number) => x * x * x, 2)).toBeCloseTo(12, 9);
    const g = finiteDifferenceGradient((p: Float64Array) => 100 * (p[1]! - p[0]! ** 2) ** 2 + (1 - p[0]!) ** 2, [-1.2, 1]);
    expect(g).toBeInstanceOf(Float64Array);
    expect(g[0]).toBeCloseTo(ROSEN_GRAD[0]!, 6);
    expect(g[1]).toBeCloseTo(ROSEN_GRAD[1]!, 6);
  });

  it('compile(f).value is a number when f returns a Var, a Float64Array when it returns an array or a Vec', () => {
    expect(compile((x) => x[0]!.mul(x[1]!), { inputs: 2, backend }).value([3, 4])).toBe(12);
    const one = compile((x) => [x[0]!.mul(x[1]!)], { inputs: 2, backend }).value([3, 4]);
    expect(one).toBeInstanceOf(Float64Array);
    expect([...one]).toEqual([12]);
    const vec = compile((x) => x.mul(2), { inputs: 1, backend, vector: true }).value([3]);
    expect([...vec]).toEqual([6]);
    expect(compile((x) => x.sum(), { inputs: 2, backend, vector: true }).value([3, 4])).toBe(7);
    // A loaded function does not know the form: one scalar output stays a number, as before.
    expect(api.fromBytes(compile((x) => x[0]!.exp(), { inputs: 1, backend, at: [0] }).toBytes(), { backend }).value([0])).toBe(1);
  });

  it('free select/where return the Var the Tape API returns', () => {
    const g = grad((x: Var) => select(x.gt(0), x.log(), x.mul(3)).add(where(x.lt(0), 1, x)), { backend });
    expect(g(2)).toBe(0.5 + 1);
    expect(g(-2)).toBe(3);
    expect(select(0, 1, 2)).toBe(2);
  });
});

describe.each(BACKENDS)('array-likes wherever a vector of numbers goes in (%s)', (backend) => {
  const f = (x: Var[]): Var[] => [x[0]!.mul(x[1]!), x[0]!.sin()];
  const X = [1, 2, 3, 4];
  const plain = (xs: ArrayLike<number>): number[] => Array.from(xs);
  // An array-like that is neither an Array nor a typed array.
  const like = (xs: number[]): ArrayLike<number> => Object.assign(Object.create(null), { ...xs, length: xs.length });

  it('every batch call gives the same numbers for an array, an array-like and a Float64Array', () => {
    const c = compile((x) => x[0]!.mul(x[1]!).add(x[1]!.exp()), { inputs: 2, backend });
    const v = compile(f, { inputs: 2, backend });
    const calls: [string, (input: (xs: number[]) => ArrayLike<number>) => ArrayLike<number>][] = [
      ['gradientBatch', (as) => c.gradientBatch(as(X), 2)],
      ['valueAndGradientBatch', (as) => c.valueAndGradientBatch(as(X), 2)[0]],
      ['vjpBatch', (as) => v.vjpBatch(as(X), 2, as([1, 0, 0, 1]))],
      ['jvpBatch', (as) => v.jvpBatch(as(X), 2, as([1, 0, 0, 1]))],
      ['hvpBatch', (as) => c.hvpBatch(as(X), 2, as([1, 0, 0, 1]))],
      ['gradient', (as) => c.gradient(as([1, 2]))],
      ['vjp', (as) => v.vjp(as([1, 2]), as([1, 1]))],
      ['jvp', (as) => v.jvp(as([1, 2]), as([0, 1]))],
      ['hvp', (as) => c.hvp(as([1, 2]), as([0, 1]))],
    ];
    for (const [name, call] of calls) {
      const reference = plain(call((xs) => Float64Array.from(xs)));
      expect(reference.every(Number.isFinite), name).toBe(true);
      expect(plain(call((xs) => xs)), name).toEqual(reference);
      expect(plain(call(like)), name).toEqual(reference);
    }
    expect(plain(c.gradientBatch(X, 2))).toEqual([2, 1 + Math.exp(2), 4, 3 + Math.exp(4)]);
  });

  it('the transforms take array-likes for x and for their directions', () => {
    expect(plain(grad(rosen, { backend })(like([-1.2, 1])))).toEqual(plain(grad(rosen, { backend })([-1.2, 1])));
    expect(plain(vjp(f, like([1, 2]), like([1, 1]), { backend }))).toEqual(plain(vjp(f, [1, 2], [1, 1], { backend })));
    expect(plain(jvp(f, like([1, 2]), like([0, 1]), { backend }))).toEqual([1, 0]);
    expect(plain(hvp(rosen, like([1, 1]), like([1, 0]), { backend }))).toEqual([802, -400]);
    expect(plain(jacobian(f, like([1, 2]), { backend }).data)).toEqual([2, 1, Math.cos(1), 0]);
    expect(plain(hessian(rosen, like([1, 1]), { backend }).data)).toEqual([802, -400, -400, 200]);
  });

  it('the Tape API takes array-likes for values, directions and constants', () => {
    const tape = api.createTapeSync({ backend });
    const x = tape.variables(like([1, 2]));
    const y = x[0]!.mul(x[1]!);
    expect(plain(tape.vjp([y], like([2]), x))).toEqual([4, 2]);
    expect(plain(tape.jvp(x, like([1, 0]), [y]))).toEqual([2]);
    expect(plain(tape.hvp(y, x, like([1, 0])))).toEqual([0, 1]);
    const v = tape.vector(like([1, 2, 3]));
    expect(plain(v.add(like([1, 1, 1])).value)).toEqual([2, 3, 4]);
    expect(plain(v.gather(like([0, 2])).value)).toEqual([1, 3]);
    expect(plain(tape.constantVector(like([5, 6])).value)).toEqual([5, 6]);
    expect(compile((z) => z[0]!.mul(z[1]!), { inputs: 2, at: like([1, 2]), backend }).value([2, 3])).toBe(6);
  });
});

describe('errors name what was expected and what arrived', () => {
  const f = (x: Var[]): Var => x[0]!.mul(x[1]!);
  const expectError = (call: () => unknown, kind: typeof TapegradError, message: RegExp): void => {
    let caught: unknown;
    try {
      call();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(kind);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toMatch(/undefined undefined/);
  };

  it('a missing input says undefined once, naming the call and what it needs', () => {
    expectError(() => grad(f)(undefined as never), NotANumberError, /^grad: inputs must be a number, an array of numbers or a Float64Array, got undefined$/);
    expectError(() => hessian(f, undefined as never), NotANumberError, /^hessian: inputs must be .*, got undefined$/);
    expectError(() => gradcheck(f, undefined as never), NotANumberError, /^gradcheck: x must be a number or an array of numbers, got undefined$/);
    expectError(() => finiteDifferenceGradient((p: Float64Array) => p[0]!, undefined as never), NotANumberError, /^finiteDifferenceGradient: the point must be a number or an array of numbers, got undefined$/);
    expectError(() => vjp(f, [1, 2], undefined as never), NotANumberError, /cotangent must be a number or an array of numbers, got undefined$/);
    const c = compile(f, { inputs: 2 });
    expectError(() => c.gradientBatch(undefined as never, 2), NotANumberError, /^gradientBatch: 2 rows of 2 inputs need an array of at least 4 numbers, got undefined$/);
    expectError(() => c.gradientBatch([1, 2], undefined as never), TapegradError, /^gradientBatch: rows must be a non-negative integer, got undefined$/);
    expectError(() => c.gradient([1, undefined] as never), NotANumberError, /^gradient: input 1 must be a number, got undefined$/);
    expectError(() => select(undefined as never, 1, 2), NotANumberError, /^select: expected Vars, Vecs or numbers .*got undefined as cond$/);
  });

  it('a string is never read as an array', () => {
    const c = compile(f, { inputs: 2 });
    expectError(() => c.gradientBatch('abcd' as never, 2), NotANumberError, /got the string "abcd"/);
    expectError(() => c.vjpBatch([1, 2], 1, 'a' as never), NotANumberError, /got the string "a"/);
    expectError(() => c.hvpBatch([1, 2], 1, 'ab' as never), NotANumberError, /got the string "ab"/);
    expectError(() => hvp(f, [1, 2], 'ab' as never), NotANumberError, /the direction must be a number or an array of numbers, got the string "ab"/);
    expectError(() => jacobian(f, 'ab' as never), NotANumberError, /^jacobian: inputs must be .*, got the string "ab"/);
    expectError(() => finiteDifferenceGradient((p: Float64Array) => p[0]!, 'ab' as never), NotANumberError, /got the string "ab"/);
    expectError(() => where('ab' as never, 1, 2), NotANumberError, /got the string "ab" as cond/);
    // Without a Var or Vec there is no tape to hold an array as a constant vector.
    expectError(() => select(1, [1, 2] as never, 2), NotANumberError, /got an array as ifTrue/);
  });

  it('a transform or checker given something other than a function names it', () => {
    for (const [name, call] of [
      ['grad', () => grad(undefined as never)],
      ['valueAndGrad', () => valueAndGrad('f' as never)],
      ['vjp', () => vjp(null as never, [1], [1])],
      ['jvp', () => jvp(3 as never, [1], [1])],
      ['jacobian', () => jacobian({} as never, [1])],
      ['hvp', () => hvp(undefined as never, [1], [1])],
      ['hessian', () => hessian(undefined as never, [1])],
      ['gradcheck', () => gradcheck(undefined as never, [1])],
      ['finiteDifferenceGradient', () => finiteDifferenceGradient(undefined as never, [1])],
      ['compile', () => compile(undefined as never, { inputs: 1 })],
    ] as const) {
      expectError(call, TapegradError, new RegExp(`^${name} needs a function`));
    }
  });
});

// A new-user probe: console.log(x) of a Var printed its whole tape, typed arrays of a thousand
// entries included.
it.each(BACKENDS)('Node prints a Var or a Vec as its string (%s)', async (backend) => {
  const { inspect } = await import('node:util');
  const tape = await api.createTape({ backend });
  const x = tape.variable(2), v = tape.vector([1, 2, 3]);
  expect(inspect(x)).toBe(String(x));
  expect(inspect({ v })).toBe(`{ v: ${String(v)} }`);
  expect(String(v)).toMatch(/^Vec\(#\d+, shape \[3\]\)$/);
});
