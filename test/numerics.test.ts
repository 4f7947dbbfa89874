// The numerics policy of DESIGN.md section 4, on both backends: IEEE values, NaN gradients
// outside the domain, minimum-norm subgradients at kinks, pow without log(x), overflow-safe
// softplus and sigmoid, the zero-adjoint skip rule, and each op's boundary points. Expected
// values are closed forms (limits, exact small integers), never outputs copied from a run.
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { compile, defineFunction, grad, hessian, hvp, jacobian, jvp, type Tape, type Var, type Vec } from '../src/index.ts';
import { UNARY_OPS, ZERO_GRADIENT_OPS, type UnaryOpName } from '../src/ops.ts';
import { sameNumber, show } from './op-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

/** A label, the recorded function, its inputs, the expected value and gradient. */
type Case = [label: string, f: (...xs: Var[]) => Var, inputs: number[], value: number, gradient: number[]];

const PI_2 = Math.PI / 2;
const NEXT_ABOVE_1 = 1 + 2 ** -52;
const NEXT_BELOW_1 = 1 - 2 ** -53;

function run(tape: Tape, f: (...xs: Var[]) => Var, inputs: readonly number[]): number[] {
  tape.reset();
  const xs = tape.variables(inputs);
  const y = f(...xs);
  return [y.value, ...tape.gradient(y, xs)];
}

/** Every case whose value or gradient differs from the expected one (Object.is, NaN = NaN). */
function mismatches(tape: Tape, cases: readonly Case[]): string[] {
  return cases.flatMap(([label, f, inputs, value, gradient]) => {
    const got = run(tape, f, inputs);
    const want = [value, ...gradient];
    return got.every((g, k) => sameNumber(g, want[k]!))
      ? []
      : [`${label}: got value ${show(got[0]!)}, gradient [${got.slice(1).map(show)}]; want ${show(value)}, [${gradient.map(show)}]`];
  });
}

function relativeError(got: number, want: number): number {
  return Math.abs(got - want) / Math.abs(want);
}

describe.each(BACKENDS)('numerics policy (%s)', (backend) => {
  let tape: Tape;
  beforeAll(async () => {
    tape = await tapeOn(backend);
  });
  const expectCases = (cases: readonly Case[]): void => expect(mismatches(tape, cases)).toEqual([]);

  it('log(-1), sqrt(-1) and 0/0 give NaN values and NaN gradients', () => expectCases([
    ['log(-1)', (x) => x.log(), [-1], NaN, [NaN]],
    ['sqrt(-1)', (x) => x.sqrt(), [-1], NaN, [NaN]],
    ['0/0', (x, z) => x.div(z), [0, 0], NaN, [NaN, NaN]],
  ]));

  it('outside its domain every op gives a NaN gradient, never a finite one', () => expectCases([
    ['log2(-1)', (x) => x.log2(), [-1], NaN, [NaN]],
    ['log10(-1)', (x) => x.log10(), [-1], NaN, [NaN]],
    ['log(-5e-324)', (x) => x.log(), [-5e-324], NaN, [NaN]],
    ['log1p(-2)', (x) => x.log1p(), [-2], NaN, [NaN]],
    ['sqrt(-5e-324)', (x) => x.sqrt(), [-5e-324], NaN, [NaN]],
    ['asin(1 + ulp)', (x) => x.asin(), [NEXT_ABOVE_1], NaN, [NaN]],
    ['acos(-1 - ulp)', (x) => x.acos(), [-NEXT_ABOVE_1], NaN, [NaN]],
    ['atanh(1 + ulp)', (x) => x.atanh(), [NEXT_ABOVE_1], NaN, [NaN]],
    ['atanh(-2)', (x) => x.atanh(), [-2], NaN, [NaN]],
    ['acosh(1 - ulp)', (x) => x.acosh(), [NEXT_BELOW_1], NaN, [NaN]],
    ['acosh(-2)', (x) => x.acosh(), [-2], NaN, [NaN]],
    ['(-2)^0.5', (x) => x.pow(0.5), [-2], NaN, [NaN]],
    ['pow(-2, 0.5)', (x, c) => x.pow(c), [-2, 0.5], NaN, [NaN, NaN]],
  ]));

  // The second-order formulas of these ops (-1/x^2 for log, 2x/(1-x^2)^2 for atanh...) are finite
  // outside the domain; the policy asks NaN there, as for the value and the gradient.
  it.each([
    ['log', -1], ['log', -Infinity], ['log2', -1], ['log10', -1], ['log1p', -2], ['atanh', 2], ['atanh', -1.5], ['acosh', -1], ['acosh', 0.5],
  ] as [UnaryOpName, number][])('outside its domain the second derivative is NaN too: %s(%d), tape, vectors, compiled', (op, x) => {
    expect(hessian((v: Var) => v[op](), x, { backend }).data[0]).toBeNaN();
    const inside = op === 'acosh' ? 2 : 0.5;
    // A zero tangent adds nothing: the cross terms with an element inside the domain stay 0.
    const h = Array.from(hessian((v: Vec) => v[op]().sum(), [x, inside], { backend, vector: true }).data);
    expect(h.slice(0, 3)).toEqual([NaN, 0, 0]);
    expect(h[3]).toBeCloseTo(second(op, inside), 12);
    for (const codegen of [true, false]) {
      const f = compile((v: Var[]) => v[0]![op](), { inputs: 1, backend, codegen, at: [0.25] });
      expect(f.hvp([x], [1])[0], `codegen ${codegen}`).toBeNaN();
      expect(f.hvp([inside], [1])[0], `codegen ${codegen}`).toBeCloseTo(second(op, inside), 12);
    }
  });

  // A probe: past 2^53 an exponent's c − 1 rounds to c, even where c − 1 is odd, so c·x^(c−1) had
  // the wrong sign for x < 0; and hypot's partials divided by a subnormal radius ((1, 1) at
  // (5e-324, 5e-324)). Tape, compiled (generated and interpreted) alike.
  // A probe: at x < 0 the partial in c is NaN, but the mixed second partial at c = 0 came out
  // -0.5 (tx/x and tz/x alone are finite) in both orders.
  it('pow below 0: every second partial with the exponent in it is NaN, as its first partial is', () => {
    for (const [x, c] of [[-2, 0], [-2, 2], [-0.5, -3]]) {
      const f = (v: Var[]): Var => v[0]!.pow(v[1]!);
      expect(grad(f, { backend })([x, c])[1]).toBeNaN();
      const h = hessian(f, [x, c], { backend }).data;
      expect([h[1], h[2], h[3]].every(Number.isNaN), `${x}, ${c}: [${Array.from(h)}]`).toBe(true);
      expect(h[0]).toBeCloseTo(c * (c - 1) * x ** (c - 2), 12);
    }
    // Symmetric where x^(c-1) underflows too (one order was 0, the other NaN: a review).
    for (const p of [[-1e-300, 3], [-2, -(2 ** 52)]]) {
      const h = hessian((v: Var[]) => v[0]!.pow(v[1]!), p, { backend }).data;
      expect([h[1], h[2], h[3]].every(Number.isNaN), `${p}: [${Array.from(h)}]`).toBe(true);
    }
    // From 2^53, c - 2 is even: the second derivative in x at -1 < x < 0 is positive (a review).
    const second = hvp((v: Var[]) => v[0]!.pow(-(2 ** 53)), [-(1 - 2 ** -53)], [1], { backend })[0]!;
    expect(second / 2.2053322185187834e32).toBeCloseTo(1, 12);
  });

  // tanh's slope past |tanh| = 1/2 is q(2 - q), q = 1 - |tanh x| by exp (not 1/cosh² x, whose
  // square overflowed from |x| = 355.2 to 0 where the slope is still a subnormal number).
  it('tanh: its slope where |tanh| nears 1, down to subnormal numbers', () => {
    for (const x of [0.6, -2, 19, 355.5, -360, 371]) {
      const want = Math.abs(x) < 300 ? 1 / Math.cosh(x) ** 2 : 4 * Math.exp(-2 * Math.abs(x));
      const got = [grad((v: Var[]) => v[0]!.tanh(), { backend })([x])[0]!];
      for (const codegen of [true, false]) got.push(compile((v: Var[]) => v[0]!.tanh(), { inputs: 1, backend, codegen, at: [x] }).gradient([x])[0]!);
      for (const g of got) {
        expect(g, `${x}`).toBeGreaterThan(0);
        // (Subnormal past |x| = 354: fewer digits there.)
        expect(Math.abs(g - want) / want, `${x}`).toBeLessThan(Math.abs(x) < 300 ? 4e-16 : 1e-9);
      }
      expect(Math.abs(compile((v: Var[]) => v[0]!.tanh(), { inputs: 1, backend }).value([x]) - Math.tanh(x))).toBeLessThanOrEqual(2 * 2 ** -53);
    }
  });

  // The core's tanh below |tanh| = 1/2 is x + x·u·P(u), u = x² (assembly/ops.ts): within 3 ulps
  // of V8's Math.tanh (itself within 2 of tanh, the fit within 1) at points across the branch and
  // near its edge, x itself below 2^-26 (so -0 stays -0), NaN for NaN, and odd.
  it('tanh: below |tanh| = 1/2, a polynomial within 3 ulps of Math.tanh', async () => {
    const xs = [0.5493061443340548, 0.5, 0.3, 1e-3, 2 ** -26, 2 ** -27, 1e-300, 5e-324];
    for (let k = 1; k < 400; k++) xs.push(0.5493 * k / 400, 0.5493 * Math.exp(-k / 12));
    const tape = await tapeOn(backend);
    const values = Array.from(tape.vector([...xs, ...xs.map((x) => -x)]).tanh().value);
    xs.forEach((x, k) => {
      const y = values[k]!, want = Math.tanh(x);
      const ulp = Math.max(2 ** (Math.floor(Math.log2(Math.abs(want))) - 52), Number.MIN_VALUE);
      expect(Math.abs(y - want) / ulp, `${x}`).toBeLessThanOrEqual(3);
      expect(Object.is(values[k + xs.length], -y), `odd at ${x}`).toBe(true);
      // (The JS engine takes V8's Math.tanh, which computes these.)
      if (backend === 'wasm' && x < 2 ** -26) expect(y, `${x}`).toBe(x);
    });
    const edge = tape.vector([-0, 0, NaN]).tanh().value;
    expect(Object.is(edge[0], -0) && Object.is(edge[1], 0) && Number.isNaN(edge[2])).toBe(true);
  });

  // softplus' slope is sigmoid x, taken from x (not 1 - e^{-y} from its value: an expm1 more).
  it('softplus: its slope is sigmoid\'s value, bit for bit', () => {
    for (const x of [-745, -40, -3.5, -1e-9, 0, 0.7, 25, 800]) {
      const slope = grad((v: Var[]) => v[0]!.softplus(), { backend })([x])[0]!;
      const sigmoid = compile((v: Var[]) => v[0]!.sigmoid(), { inputs: 1, backend }).value([x]);
      expect(Object.is(slope, sigmoid), `${x}: ${slope} against ${sigmoid}`).toBe(true);
    }
  });

  it('pow past 2^53 keeps the sign of its gradient, and hypot its partials at subnormal radii', () => {
    const cases: [(v: Var[]) => Var, number[], number[]][] = [
      [(v) => v[0]!.pow(2 ** 54), [-1], [-(2 ** 54)]],
      [(v) => v[0]!.pow(v[1]!), [-1, 2 ** 54], [-(2 ** 54), NaN]],
      [(v) => v[0]!.pow(2 ** 53), [-1], [-(2 ** 53)]],
      // 2^53 + 2: z - 1 is a tie that rounds down to an even integer (a review).
      [(v) => v[0]!.pow(2 ** 53 + 2), [-1], [-(2 ** 53 + 2)]],
      [(v) => v[0]!.pow(-(2 ** 53 + 2)), [-1], [2 ** 53 + 2]],
      [(v) => v[0]!.hypot(v[1]!), [5e-324, 5e-324], [Math.SQRT1_2, Math.SQRT1_2]],
      [(v) => v[0]!.hypot(v[1]!), [3e-320, -4e-320], [0.6, -0.8]],
      // And at radii past the doubles, of finite operands (a probe: x/r gave (0, 0)).
      [(v) => v[0]!.hypot(v[1]!), [1.5e308, 1.5e308], [Math.SQRT1_2, Math.SQRT1_2]],
      [(v) => v[0]!.hypot(v[1]!), [1e308, -1.5e308], [2 / Math.sqrt(13), -3 / Math.sqrt(13)]],
      [(v) => v[0]!.hypot(v[1]!), [Number.MAX_VALUE, Number.MAX_VALUE], [Math.SQRT1_2, Math.SQRT1_2]],
    ];
    for (const [f, x, want] of cases) {
      const got = [Array.from(grad(f, { backend })(x))];
      for (const codegen of [true, false]) got.push(Array.from(compile(f, { inputs: x.length, backend, codegen, at: x }).gradient(x)));
      for (const g of got) g.forEach((v, k) => (Number.isNaN(want[k]!) ? expect(v).toBeNaN() : expect(v, `${x} ${k}`).toBeCloseTo(want[k]!, 12)));
    }
    // atan2's partials there are subnormal (z/r², −x/r²), not 0: in units of r too.
    for (const [x, z] of [[1.5e308, 1.5e308], [1e308, 1.5e308], [-1.2e308, 1.7e308]] as const) {
      const r2 = (x / 2 ** 600) ** 2 + (z / 2 ** 600) ** 2, want = [z / 2 ** 600 / r2 / 2 ** 600, -x / 2 ** 600 / r2 / 2 ** 600];
      const g = grad((v: Var[]) => v[0]!.atan2(v[1]!), { backend })([x, z]);
      for (let k = 0; k < 2; k++) expect(g[k]! / want[k]!, `atan2 at (${x}, ${z}) ${k}: ${g[k]} for ${want[k]}`).toBeCloseTo(1, 5);
    }
    // Its second partials too (a read-through: the unit vector from a subnormal radius was 7e-5 off).
    // (mpmath at 50 digits: w²/r and −u·w/r along 1e-20, at the doubles nearest these decimals.)
    const h = hvp((v: Var[]) => v[0]!.hypot(v[1]!), [6.55111e-318, 1.64746e-319], [1e-20, 0], { backend });
    expect(h[0]! / 9.644387463303526e293).toBeCloseTo(1, 12);
    expect(h[1]! / -3.835076430185779e295).toBeCloseTo(1, 12);
  });

  // A probe: log10' = 1 / x / LN10 was Infinity from x = 2.42e-309 to 5.56e-309 (where 1 / x
  // overflows), for a derivative up to 1.8e308. On a tape, a Vec, and compiled either way.
  it("log10' is finite where 1 / x overflows and 1 / (x ln 10) does not", async () => {
    const paths = (x: number): number[] => {
      const got = [grad((v: Var) => v.log10(), { backend })(x)];
      for (const codegen of [true, false]) got.push(compile((v: Var[]) => v[0]!.log10(), { inputs: 1, backend, codegen, at: [x] }).gradient([x])[0]!);
      tape.reset();
      const w = tape.vector([x, 1]);
      got.push(tape.gradient(w.log10().sum(), [w])[0]!);
      return got;
    };
    for (const x of [2.5e-309, 4e-309, 5.5e-309, 5.56e-309]) {
      // 1 / (x ln 10) within 2 ulps (relative 4.5e-16).
      for (const g of paths(x)) expect(relativeError(g, Math.LOG10E / x), `log10'(${x}) = ${g}`).toBeLessThan(4.5e-16);
      expect(1 / x).toBe(Infinity);
    }
    // Where 1 / x is finite, the quotient as before, bit for bit.
    for (const x of [5.6e-309, 1e-300, 0.5, 3]) for (const g of paths(x)) expect(g).toBe(1 / x / Math.LN10);
    // Below 2.42e-309 the derivative itself is past the doubles.
    for (const g of paths(2e-309)) expect(g).toBe(Infinity);
  });

  // The second-order formulas of atan, asinh and acosh divide by a power of 1 + x^2, which
  // overflows far out (Infinity / Infinity), and log Phi's at -Infinity multiplied Infinity by -0.
  it('where the gradient is finite so is the second derivative: its limit far out and at ±Infinity', () => {
    const far = [-Infinity, -1e308, -1e200, 1e200, 1e308, Infinity];
    const found = UNARY_OPS.flatMap((op) => far.flatMap((x) => {
      const g = grad((v: Var) => v[op](), { backend })(x);
      const h = hessian((v: Var) => v[op](), x, { backend }).data[0]!;
      return Number.isNaN(g) || !Number.isNaN(h) ? [] : [`${op}(${x}): gradient ${g}, second derivative ${h}`];
    }));
    expect(found).toEqual([]);
    // The limits themselves: atan'', asinh'' and acosh'' vanish (a Hessian entry sums from +0), log Phi'' -> -1.
    const second = (op: UnaryOpName, x: number): number => hessian((v: Var) => v[op](), x, { backend }).data[0]!;
    expect([second('atan', Infinity), second('atan', -1e308), second('asinh', 1e308), second('asinh', -Infinity), second('acosh', Infinity)]).toEqual([0, 0, 0, 0, 0]);
    expect(second('normLogCdf', -Infinity)).toBe(-1);
    expect(second('normLogCdf', -1e200)).toBe(-1);
    // Its gradient, about −x, overflowed past |x| = 1.01e308 (−x times √π first: a probe).
    for (const x of [-1.5e308, -Number.MAX_VALUE]) {
      expect(grad((v: Var) => v.normLogCdf(), { backend })(x)).toBe(-x);
      expect(second('normLogCdf', x)).toBeCloseTo(-1, 12);
    }
    // atan2 in units of hypot(x, z): no NaN where x^2 + z^2 overflows, and the closed form in range
    // (d2/dx2 = -2xz / h^4, d2/dxdz = (x^2 - z^2) / h^4, d2/dz2 = 2xz / h^4).
    const atan2 = (p: number[]): number[] => Array.from(hessian((v: Var[]) => v[0]!.atan2(v[1]!), p, { backend }).data);
    for (const p of [[1e308, 1e308], [-1e300, 2], [1e200, -3e200]]) expect(atan2(p).some(Number.isNaN), `${p}`).toBe(false);
    const h = atan2([3, 4]);
    [-24 / 625, -7 / 625, -7 / 625, 24 / 625].forEach((want, k) => expect(h[k]).toBeCloseTo(want, 15));
  });

  // Squares of operands below 1e-162 underflow to 0: the second-order rules of log, div and hypot
  // divided by them (0/0 along a zero tangent), lgamma's and ndtri's multiplied an infinite second
  // derivative by the zero tangent; hypot's also overflowed past 1e154.
  it('a zero tangent adds nothing to a Hessian even where a square underflows, and hypot\'s scales', () => {
    const H = (f: (x: Var[]) => Var, p: number[]): number[] => Array.from(hessian(f, p, { backend }).data);
    const hv = (f: (x: Var[]) => Var, p: number[], v: number[]): number[] => Array.from(hvp(f, p, v, { backend }));
    expect(H((x) => x[0]!.log().add(x[1]!.log()), [1e-170, 1])).toEqual([-Infinity, 0, 0, -1]);
    expect(H((x) => x[0]!.log2().add(x[1]!.log10()), [1e-170, 1])[1]).toBe(0);
    expect(hv((x) => x[0]!.div(x[1]!).add(x[2]!.square()), [0, 1e-170, 1], [0, 0, 1])).toEqual([0, 0, 2]);
    expect(hv((x) => x[0]!.lgamma().add(x[1]!.square()), [1e-170, 1], [0, 1])).toEqual([0, 2]);
    expect(hv((x) => x[0]!.ndtri().add(x[1]!.square()), [0, 1], [0, 1])).toEqual([0, 2]);
    // hypot(x, z)'' = [z^2, -xz; -xz, x^2] / r^3, at scales where r^2 or r^3 leave the range, and
    // where one operand is far smaller: the diagonal was 1 − (x/r)² over r and cancelled (0 at
    // (1, 1e-8) and (1e-106, 3e-122), a probe), then underflowed as (x/r)² past a ratio of 1e-154
    // (0 at (1e-210, 1e-40): a review probe). References: mpmath at 60 digits, rounded once.
    const hypot = (p: number[]): number[] => H((x) => x[0]!.hypot(x[1]!), p);
    const cases: [number[], number[]][] = [
      [[1e-200, 2e-200], [3.5777087639996638e+199, -1.7888543819998319e+199, -1.7888543819998319e+199, 8.944271909999159e+198]],
      [[1e+200, 2e+200], [3.577708763999664e-201, -1.788854381999832e-201, -1.788854381999832e-201, 8.94427190999916e-202]],
      [[3, 4], [0.128, -0.096, -0.096, 0.072]],
      [[1e-170, 0], [0, 0, 0, 1e+170]],
      [[1, 1e-6], [9.999999999985e-13, -9.999999999984999e-07, -9.999999999984999e-07, 0.9999999999985]],
      [[1, 1e-8], [9.999999999999999e-17, -9.999999999999999e-09, -9.999999999999999e-09, 0.9999999999999999]],
      [[1e-106, 3e-122], [9.000000000000002e+74, -3.0000000000000002e+90, -3.0000000000000002e+90, 1e+106]],
      [[2e-9, -7], [0.14285714285714285, 4.0816326530612245e-11, 4.0816326530612245e-11, 1.1661807580174929e-20]],
      [[1e-200, 1e-40], [1e+40, -1.0000000000000002e-120, -1.0000000000000002e-120, 1.0000000000000002e-280]],
      [[1e-40, 1e-210], [1.0000000000000004e-300, -1e-130, -1e-130, 1e+40]],
      [[-1.0948963935502022e-279, -1.1981659726042455e-113], [8.346089130093333e+112, -7.626742118978581e-54, -7.626742118978581e-54, 6.969395418947726e-220]],
      // A radius past the doubles, of finite operands: subnormal entries, not 0 (a probe; the
      // operands scaled by 2^-600, as the first partials). (Subnormal: 1e-13 of them.)
      [[1.5e308, 1.5e308], [2.35702260395516e-309, -2.35702260395516e-309, -2.35702260395516e-309, 2.35702260395516e-309]],
      [[1.2e308, 1.3e308], [3.051899290785093e-309, -2.817137806878546e-309, -2.817137806878546e-309, 2.60043489865712e-309]],
    ];
    for (const [point, want] of cases) {
      const within = Math.abs(want[0]!) < 2.2250738585072014e-308 ? 1e-13 : 1e-14;
      hypot(point).forEach((got, k) => expect(Math.abs(got - want[k]!), `${point} [${k}]: ${got} vs ${want[k]}`).toBeLessThanOrEqual(within * Math.abs(want[k]!)));
      // The same through a compiled function's hvp (generated and interpreted).
      for (const codegen of [true, false]) {
        const f = compile((x: Var[]) => x[0]!.hypot(x[1]!), { inputs: 2, backend, codegen, at: point });
        Array.from(f.hvp(point, [1, 0])).forEach((got, k) => expect(Math.abs(got - want[k]!), `compiled ${point} [${k}]`).toBeLessThanOrEqual(within * Math.abs(want[k]!)));
      }
    }
  });

  it('exp overflows to Infinity past ln(MAX_VALUE) = 709.7827, and not before', () => {
    expectCases([
      ['exp(710)', (x) => x.exp(), [710], Infinity, [Infinity]],
      ['exp(709.79)', (x) => x.exp(), [709.79], Infinity, [Infinity]],
    ]);
    const [value, gradient] = run(tape, (x) => x.exp(), [709.78]);
    expect(relativeError(value!, Math.exp(709.78 - Math.log(Number.MAX_VALUE)) * Number.MAX_VALUE)).toBeLessThan(1e-12);
    expect(gradient).toBe(value);
  });

  it('NaN inputs propagate to the value through every unary op and the arithmetic', () => {
    const nanValued = UNARY_OPS.map((op): Case => [`${op}(NaN)`, (x) => x[op](), [NaN], NaN, [nonlinear(op) ? NaN : op === 'neg' ? -1 : 0]]);
    expectCases([
      ...nanValued,
      ['NaN + 1', (x, z) => x.add(z), [NaN, 1], NaN, [1, 1]],
      ['NaN * 2', (x, z) => x.mul(z), [NaN, 2], NaN, [2, NaN]],
      ['max(NaN, 1)', (x, z) => x.max(z), [NaN, 1], NaN, [NaN, NaN]],
      ['min(1, NaN)', (x, z) => x.min(z), [1, NaN], NaN, [NaN, NaN]],
      ['exp(2 NaN + 1)', (x) => x.mul(2).add(1).exp(), [NaN], NaN, [NaN]],
      // IEEE and ECMAScript agree on these two: x^0 is 1 for every x, hypot(±Inf, NaN) is Inf.
      ['NaN^0', (x) => x.pow(0), [NaN], 1, [0]],
      ['hypot(Infinity, NaN)', (x, z) => x.hypot(z), [Infinity, NaN], Infinity, [NaN, NaN]],
      // Comparisons with NaN are false; select treats a NaN condition as false.
      ['NaN < 1', (x, z) => x.lt(z), [NaN, 1], 0, [0, 0]],
      ['NaN == NaN', (x, z) => x.eq(z), [NaN, NaN], 0, [0, 0]],
      ['select(NaN, 1, 2)', (c, a, b) => c.tape.select(c, a, b), [NaN, 1, 2], 2, [0, 0, 1]],
    ]);
  });

  it('Infinity inputs propagate, with the limits of the derivatives', () => expectCases([
    ['exp(Infinity)', (x) => x.exp(), [Infinity], Infinity, [Infinity]],
    ['exp(-Infinity)', (x) => x.exp(), [-Infinity], 0, [0]],
    ['tanh(Infinity)', (x) => x.tanh(), [Infinity], 1, [0]],
    ['tanh(-Infinity)', (x) => x.tanh(), [-Infinity], -1, [0]],
    ['atan(Infinity)', (x) => x.atan(), [Infinity], PI_2, [0]],
    ['sigmoid(Infinity)', (x) => x.sigmoid(), [Infinity], 1, [0]],
    ['softplus(Infinity)', (x) => x.softplus(), [Infinity], Infinity, [1]],
    ['sqrt(Infinity)', (x) => x.sqrt(), [Infinity], Infinity, [0]],
    ['log(Infinity)', (x) => x.log(), [Infinity], Infinity, [0]],
    ['sin(Infinity)', (x) => x.sin(), [Infinity], NaN, [NaN]],
    ['Infinity - Infinity', (x, z) => x.sub(z), [Infinity, Infinity], NaN, [1, -1]],
  ]));

  // The special functions at their special points (README, "Special functions"): limits where
  // they exist, +Inf for lgamma at its poles, NaN (value and gradient) where no limit exists.
  it('special functions: infinities, poles and the ends of their domains', () => expectCases([
    ['erf(Infinity)', (x) => x.erf(), [Infinity], 1, [0]],
    ['erf(-Infinity)', (x) => x.erf(), [-Infinity], -1, [0]],
    ['erf(-0)', (x) => x.erf(), [-0], -0, [2 / Math.sqrt(Math.PI)]],
    ['erfc(Infinity)', (x) => x.erfc(), [Infinity], 0, [0]],
    ['erfc(-Infinity)', (x) => x.erfc(), [-Infinity], 2, [0]],
    ['normCdf(Infinity)', (x) => x.normCdf(), [Infinity], 1, [0]],
    ['normCdf(-Infinity)', (x) => x.normCdf(), [-Infinity], 0, [0]],
    ['normCdf(0)', (x) => x.normCdf(), [0], 0.5, [1 / Math.sqrt(2 * Math.PI)]],
    ['normLogCdf(Infinity)', (x) => x.normLogCdf(), [Infinity], 0, [0]],
    // log Φ(x) ~ -x²/2 and its derivative ~ -x: both tend to their infinite limits.
    ['normLogCdf(-Infinity)', (x) => x.normLogCdf(), [-Infinity], -Infinity, [Infinity]],
    ['ndtri(0)', (x) => x.ndtri(), [0], -Infinity, [Infinity]],
    ['ndtri(1)', (x) => x.ndtri(), [1], Infinity, [Infinity]],
    ['ndtri(0.5)', (x) => x.ndtri(), [0.5], 0, [Math.sqrt(2 * Math.PI)]],
    ['ndtri(1 + ulp)', (x) => x.ndtri(), [NEXT_ABOVE_1], NaN, [NaN]],
    ['ndtri(-5e-324)', (x) => x.ndtri(), [-5e-324], NaN, [NaN]],
    ['lgamma(1)', (x) => x.lgamma(), [1], 0, [-0.5772156649015329]],
    ['lgamma(0)', (x) => x.lgamma(), [0], Infinity, [-Infinity]],
    ['lgamma(-0)', (x) => x.lgamma(), [-0], Infinity, [Infinity]],
    ['lgamma(-2)', (x) => x.lgamma(), [-2], Infinity, [NaN]],
    ['lgamma(Infinity)', (x) => x.lgamma(), [Infinity], Infinity, [Infinity]],
    ['lgamma(-Infinity)', (x) => x.lgamma(), [-Infinity], Infinity, [NaN]],
    ['digamma(0)', (x) => x.digamma(), [0], -Infinity, [Infinity]],
    ['digamma(-0)', (x) => x.digamma(), [-0], Infinity, [Infinity]],
    ['digamma(-3)', (x) => x.digamma(), [-3], NaN, [NaN]],
    ['digamma(Infinity)', (x) => x.digamma(), [Infinity], Infinity, [0]],
    ['digamma(-Infinity)', (x) => x.digamma(), [-Infinity], NaN, [NaN]],
  ]));

  // A numerics audit: at lgamma's poles its gradient ψ is NaN and its second derivative was
  // trigamma's two-sided +Inf; NaN now, as digamma's gradient there (the same ψ′).
  it('lgamma\'s second derivative is NaN where its gradient is, as digamma\'s gradient', () => {
    for (const x of [-1, -2, -1e155, -1e308, -Infinity]) {
      const second = hvp((v: Var) => v.lgamma(), x, 1, { backend })[0]!;
      expect(second, `lgamma'' at ${x}`).toBeNaN();
      expect(grad((v: Var) => v.lgamma(), { backend })(x), `lgamma' at ${x}`).toBeNaN();
      const compiled = compile((v: Var[]) => v[0]!.lgamma(), { inputs: 1, backend });
      expect(compiled.hvp([x], [1])[0], `compiled at ${x}`).toBeNaN();
    }
    expect(hvp((v: Var) => v.lgamma(), -2.5, 1, { backend })[0]).toBeCloseTo(9.53924664498912, 10);
    expect(hvp((v: Var) => v.lgamma(), -2, 0, { backend })[0]).toBe(0);
  });

  it('normLogCdf keeps its relative accuracy where Φ underflows', () => {
    // log Φ(-40) and φ/Φ there (mpmath, 40 digits): Φ(-40) = 3.6e-350 is below the smallest double.
    const [value, gradient] = run(tape, (x) => x.normLogCdf(), [-40]);
    expect(relativeError(value!, -804.6084420137538)).toBeLessThan(1e-15);
    expect(relativeError(gradient!, 40.02496884720726)).toBeLessThan(1e-14);
  });

  it('kinks take the minimum-norm subgradient: abs and relu 0 at 0, min and max split a tie', () => expectCases([
    ['abs(0)', (x) => x.abs(), [0], 0, [0]],
    ['abs(-0)', (x) => x.abs(), [-0], 0, [0]],
    ['relu(0)', (x) => x.relu(), [0], 0, [0]],
    ['relu(-0)', (x) => x.relu(), [-0], 0, [0]],
    ['max(3, 3)', (x, z) => x.max(z), [3, 3], 3, [0.5, 0.5]],
    ['min(3, 3)', (x, z) => x.min(z), [3, 3], 3, [0.5, 0.5]],
    ['max(0, -0)', (x, z) => x.max(z), [0, -0], 0, [0.5, 0.5]],
    ['min(-0, 0)', (x, z) => x.min(z), [-0, 0], -0, [0.5, 0.5]],
    ['max(Infinity, Infinity)', (x, z) => x.max(z), [Infinity, Infinity], Infinity, [0.5, 0.5]],
    ['min(-1e300, -1e300)', (x, z) => x.min(z), [-1e300, -1e300], -1e300, [0.5, 0.5]],
    ['max(2, 3)', (x, z) => x.max(z), [2, 3], 3, [0, 1]],
    ['min(2, 3)', (x, z) => x.min(z), [2, 3], 2, [1, 0]],
    // Both operands are the same node: the two halves add up to the derivative of x.
    ['max(x, x)', (x) => x.max(x), [7], 7, [1]],
  ]));

  it('floor, ceil, round and sign have exactly zero gradient, at their jumps too', () => {
    const points = [-2.5, -1, -0.5, -0, 0, 0.5, 1, 1.5, 2.5, 1e300, 5e-324];
    const cases = (['floor', 'ceil', 'round', 'sign'] as const).flatMap((op) => points.map((x): Case =>
      [`${op}(${show(x)})`, (v) => v[op](), [x], Math[op](x), [0]]));
    expectCases(cases);
  });

  it('pow with a constant exponent never touches log(x): negative bases and 0 stay finite', () => expectCases([
    ['(-2)^3', (x) => x.pow(3), [-2], -8, [12]],
    ['(-2)^2', (x) => x.pow(2), [-2], 4, [-4]],
    ['(-2)^-1', (x) => x.pow(-1), [-2], -0.5, [-0.25]],
    ['(-2)^0', (x) => x.pow(0), [-2], 1, [0]],
    ['0^2', (x) => x.pow(2), [0], 0, [0]],
    ['0^3', (x) => x.pow(3), [0], 0, [0]],
    ['0^1', (x) => x.pow(1), [0], 0, [1]],
    ['0^0', (x) => x.pow(0), [0], 1, [0]],
    ['0^0.5', (x) => x.pow(0.5), [0], 0, [Infinity]],
  ]));

  it('pow with a variable exponent: d/dx without log(x), d/dc x^c = 0 at x = 0 for every c', () => expectCases([
    ['pow(-2, 3)', (x, c) => x.pow(c), [-2, 3], -8, [12, NaN]],
    ['pow(0, 0)', (x, c) => x.pow(c), [0, 0], 1, [0, 0]],
    ['pow(0, -1)', (x, c) => x.pow(c), [0, -1], Infinity, [-Infinity, 0]],
    ['pow(-0, 0.5)', (x, c) => x.pow(c), [-0, 0.5], 0, [Infinity, 0]],
    ['pow(0, 0.5)', (x, c) => x.pow(c), [0, 0.5], 0, [Infinity, 0]],
    ['pow(0, 1)', (x, c) => x.pow(c), [0, 1], 0, [1, 0]],
    ['pow(0, 2)', (x, c) => x.pow(c), [0, 2], 0, [0, 0]],
    ['pow(0, 3)', (x, c) => x.pow(c), [0, 3], 0, [0, 0]],
    ['pow(2, 3)', (x, c) => x.pow(c), [2, 3], 8, [12, 8 * Math.log(2)]],
  ]));

  // H·v by forward over reverse at x = 0: the mixed partial x^(c-1) (1 + c ln x) takes its limit
  // from x > 0 (0 for c > 1, ±Infinity below), on both sides of the symmetric Hessian; the
  // rules' x^(c-1) · ln x had been 0 · -Inf = NaN.
  it('pow with a variable exponent: second order at x = 0 takes the limits', () => {
    const hvpAt = (x: number, c: number, v: [number, number]): number[] => {
      tape.reset();
      const xs = tape.variables([x, c]);
      return Array.from(tape.hvp(xs[0]!.pow(xs[1]!), xs, v));
    };
    const cases: [number, [number, number], number[]][] = [
      [2, [0, 1], [0, 0]], [2, [1, 0], [2, 0]], [3, [0, 1], [0, 0]], [3, [1, 0], [0, 0]],
      [1, [0, 1], [-Infinity, 0]], [1, [1, 0], [0, -Infinity]],
      [0.5, [0, 1], [-Infinity, 0]], [0.5, [1, 0], [-Infinity, -Infinity]],
      [-1, [0, 1], [Infinity, 0]], [-1, [1, 0], [Infinity, Infinity]],
    ];
    const wrong = cases.flatMap(([c, v, want]) => {
      const got = hvpAt(0, c, v);
      return got.every((g, k) => sameNumber(g, want[k]!)) ? [] : [`hvp of x^c at (0, ${c}) along [${v}]: got [${got.map(show)}], want [${want.map(show)}]`];
    });
    expect(wrong).toEqual([]);
    // Away from 0 the rules are as before: against the closed form at (2, 3).
    const [hx, hc] = hvpAt(2, 3, [1, 1]);
    expect(hx).toBeCloseTo(3 * 2 * 2 + 4 * (1 + 3 * Math.log(2)), 12);
    expect(hc).toBeCloseTo(4 * (1 + 3 * Math.log(2)) + 8 * Math.log(2) ** 2, 12);
  });

  it('sqrt and cbrt have derivative +Infinity at 0', () => expectCases([
    ['sqrt(0)', (x) => x.sqrt(), [0], 0, [Infinity]],
    ['cbrt(0)', (x) => x.cbrt(), [0], 0, [Infinity]],
    ['cbrt(-0)', (x) => x.cbrt(), [-0], -0, [Infinity]],
  ]));

  it('softplus and sigmoid do not overflow at ±1000 and keep finite gradients', () => expectCases([
    ['softplus(1000)', (x) => x.softplus(), [1000], 1000, [1]],
    // e^-1000 underflows: softplus(-1000) = log1p(e^-1000) and sigmoid(-1000) are 0 in doubles.
    ['softplus(-1000)', (x) => x.softplus(), [-1000], 0, [0]],
    ['sigmoid(1000)', (x) => x.sigmoid(), [1000], 1, [0]],
    ['sigmoid(-1000)', (x) => x.sigmoid(), [-1000], 0, [0]],
  ]));

  it('softplus and sigmoid keep their relative accuracy in the tails', () => {
    const e40 = Math.exp(-40);
    const [softplus, dSoftplus] = run(tape, (x) => x.softplus(), [-40]);
    expect(relativeError(softplus!, Math.log1p(e40))).toBeLessThan(1e-14);
    expect(relativeError(dSoftplus!, e40 / (1 + e40))).toBeLessThan(1e-14);
    const [sigmoid, dSigmoid] = run(tape, (x) => x.sigmoid(), [-40]);
    expect(relativeError(sigmoid!, e40 / (1 + e40))).toBeLessThan(1e-14);
    expect(relativeError(dSigmoid!, e40 / (1 + e40) ** 2)).toBeLessThan(1e-14);
  });

  it('a NaN node whose adjoint is exactly 0 does not reach the gradient', () => expectCases([
    // The untaken branch is log(-4) = NaN.
    ['select(x > 0, sqrt x, log(-x)) at 4', (x) => x.tape.select(x.gt(0), x.sqrt(), x.neg().log()), [4], 2, [0.25]],
    // sinc guarded at 0: the untaken branch is sin(0)/0 = NaN.
    ['select(x == 0, 1, sin(x)/x) at 0', (x) => x.tape.select(x.eq(0), 1, x.sin().div(x)), [0], 1, [0]],
    ['x + stopGradient(log(-x)) at 2', (x) => x.add(x.neg().log().stopGradient()), [2], NaN, [1]],
    ['x + 0 * sqrt(-x) at 2', (x) => x.add(x.neg().sqrt().mul(0)), [2], NaN, [1]],
    ['x < log(-x) at 2', (x) => x.lt(x.neg().log()), [2], 0, [0]],
  ]));

  it('boundary points of asin, acos, atanh, acosh, log and log1p', () => expectCases([
    ['asin(1)', (x) => x.asin(), [1], PI_2, [Infinity]],
    ['asin(-1)', (x) => x.asin(), [-1], -PI_2, [Infinity]],
    ['acos(1)', (x) => x.acos(), [1], 0, [-Infinity]],
    ['acos(-1)', (x) => x.acos(), [-1], Math.PI, [-Infinity]],
    ['atanh(1)', (x) => x.atanh(), [1], Infinity, [Infinity]],
    ['atanh(-1)', (x) => x.atanh(), [-1], -Infinity, [Infinity]],
    ['acosh(1)', (x) => x.acosh(), [1], 0, [Infinity]],
    ['log(0)', (x) => x.log(), [0], -Infinity, [Infinity]],
    ['log2(0)', (x) => x.log2(), [0], -Infinity, [Infinity]],
    ['log10(0)', (x) => x.log10(), [0], -Infinity, [Infinity]],
    ['log1p(-1)', (x) => x.log1p(), [-1], -Infinity, [Infinity]],
    ['recip(0)', (x) => x.recip(), [0], Infinity, [-Infinity]],
  ]));

  it('just inside the edges of asin and acosh the gradients are finite and match the closed forms', () => {
    const [, dAsin] = run(tape, (x) => x.asin(), [NEXT_BELOW_1]);
    expect(relativeError(dAsin!, 1 / Math.sqrt((1 - NEXT_BELOW_1) * (1 + NEXT_BELOW_1)))).toBeLessThan(1e-12);
    const [, dAcosh] = run(tape, (x) => x.acosh(), [NEXT_ABOVE_1]);
    expect(relativeError(dAcosh!, 1 / Math.sqrt((NEXT_ABOVE_1 - 1) * (NEXT_ABOVE_1 + 1)))).toBeLessThan(1e-12);
  });

  it('-0 is 0 at the boundaries: sqrt, log, log2 and log10 have derivative +Infinity there too', () => expectCases([
    ['sqrt(-0)', (x) => x.sqrt(), [-0], -0, [Infinity]],
    ['log(-0)', (x) => x.log(), [-0], -Infinity, [Infinity]],
    ['log2(-0)', (x) => x.log2(), [-0], -Infinity, [Infinity]],
    ['log10(-0)', (x) => x.log10(), [-0], -Infinity, [Infinity]],
  ]));
});

/** Unary ops whose derivative depends on x (NaN in, NaN gradient out). */
function nonlinear(op: UnaryOpName): boolean {
  return op !== 'neg' && !ZERO_GRADIENT_OPS.includes(op);
}

/** The closed-form second derivative of the domain cases above, inside the domain. */
function second(op: UnaryOpName, x: number): number {
  switch (op) {
    case 'log': return -1 / (x * x);
    case 'log2': return -1 / (x * x * Math.LN2);
    case 'log10': return -1 / (x * x * Math.LN10);
    case 'log1p': return -1 / ((1 + x) * (1 + x));
    case 'atanh': return (2 * x) / ((1 - x * x) * (1 - x * x));
    default: return -x / ((x * x - 1) * Math.sqrt(x * x - 1)); // acosh
  }
}

// Found by a new-user probe: "a zero tangent adds nothing" held for the log family and a few
// others, whose rules tested it; sqrt, cbrt and recip at 0, asin at ±1, sin at ±Infinity, sinh
// where it overflows and the rest gave 0·∞ or 0/0, so H[0][1] was NaN while H[1][0] was 0. Along
// a direction that leaves x0 alone, op(x0) + x1·x2 has H·e1 = (0, 0, 1) on every path.
describe.each(BACKENDS)('a zero tangent adds nothing, for every op (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const points: [UnaryOpName | 'pow', number][] = [
    ['sqrt', 0], ['sqrt', -1], ['cbrt', 0], ['recip', 0], ['asin', 1], ['asin', 2], ['acos', -1], ['atanh', 1], ['atanh', 2],
    ['sin', Infinity], ['cos', NaN], ['tan', Infinity], ['sinh', 1000], ['cosh', -1000], ['tanh', NaN], ['atan', NaN],
    ['sigmoid', NaN], ['softplus', NaN], ['erf', NaN], ['erfc', NaN], ['normCdf', NaN], ['normLogCdf', NaN], ['log', 0], ['pow', 0],
  ];
  const apply = (op: UnaryOpName | 'pow', x: Var): Var => (op === 'pow' ? x.pow(0.5) : (x[op] as () => Var)());
  it.each(points)('%s at %s', (op, x0) => {
    const f = (x: Var[]): Var => apply(op, x[0]!).add(x[1]!.mul(x[2]!));
    const at = [x0, 2, 3];
    const expected = [0, 0, 1];
    expect(Array.from(hvp(f, at, [0, 1, 0], { backend })), 'hvp').toEqual(expected);
    const H = hessian(f, at, { backend }).data;
    expect([H[1], H[2], H[3], H[6]], 'cross terms of the Hessian').toEqual([0, 0, 0, 0]);
    for (const codegen of [true, false]) {
      const c = compile(f, { inputs: 3, backend, codegen, at: [0.5, 2, 3] });
      expect(Array.from(c.hvp(at, [0, 1, 0])), `compiled, codegen ${codegen}`).toEqual(expected);
    }
  });

  it('a vector: a NaN or infinite second derivative of one element leaves the others\' products alone', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([0, 4, -1]);
    const y = v.sqrt().sum();
    expect(Array.from(tape.hvp(y, [v], [0, 1, 0]))).toEqual([0, -0.25 * 4 ** -1.5, 0]);
  });
});

// A new-user probe: at one infinite operand hypot's and atan2's partials were Infinity / Infinity
// (NaN) where their limits are its sign and 0, and their second derivatives NaN where the limit is
// 0; and x / z at z = 0 had H00 NaN, though it is linear in x.
describe.each(BACKENDS)('hypot and atan2 at an infinite operand, div at a zero divisor (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  it.each([[1, Infinity], [Infinity, 1], [-Infinity, 2], [3, -Infinity]])('at (%s, %s)', (x0, z0) => {
    const at = [x0, z0];
    const sign = (v: number): number => (Number.isFinite(v) ? 0 : Math.sign(v));
    expect(Array.from(grad((x: Var[]) => x[0]!.hypot(x[1]!), { backend })(at)), 'hypot').toEqual([sign(x0), sign(z0)]);
    expect(Array.from(grad((x: Var[]) => x[0]!.atan2(x[1]!), { backend })(at)).map(Math.abs), 'atan2').toEqual([0, 0]);
    for (const f of [(x: Var[]) => x[0]!.hypot(x[1]!), (x: Var[]) => x[0]!.atan2(x[1]!)]) {
      expect(Array.from(hessian(f, at, { backend }).data).map(Math.abs), 'Hessian').toEqual([0, 0, 0, 0]);
    }
  });
  it('both infinite, or NaN with an infinity: NaN, as the limit depends on the way there', () => {
    for (const at of [[Infinity, Infinity], [NaN, Infinity]]) {
      expect(Array.from(grad((x: Var[]) => x[0]!.hypot(x[1]!), { backend })(at)).every(Number.isNaN)).toBe(true);
      expect(Array.from(grad((x: Var[]) => x[0]!.atan2(x[1]!), { backend })(at)).every(Number.isNaN)).toBe(true);
    }
  });
  // A probe: y·tz/z underflowed in y·tz where y·(tz/z) does not, and H·v lost
  // one of its two equal terms (1e-20 for 2e-20); the same order now, in every sweep.
  it('div\'s second order at tiny operands: 2x/z³·t, not half of it', () => {
    const f = (x: Var[]): Var => x[0]!.div(x[1]!);
    const want = (2 * 1e-200) / 1e-160 / 1e-160 / 1e-160 * 1e-300;
    const close = (got: number): void => expect(Math.abs(got - want)).toBeLessThan(1e-15 * want);
    close(hvp(f, [1e-200, 1e-160], [0, 1e-300], { backend })[1]!);
    for (const codegen of [true, false]) close(compile(f, { inputs: 2, backend, codegen, at: [1, 1] }).hvp([1e-200, 1e-160], [0, 1e-300])[1]!);
    // x/x is 1: its two second-order terms cancel exactly, along any direction (y/z·tz, tried
    // first, left them a rounding apart).
    const self = (x: Var[]): Var => x[0]!.div(x[0]!);
    const compiled = compile(self, { inputs: 1, backend, at: [1] });
    for (let k = 0; k < 50; k++) {
      const at = [0.1 + 0.137 * k], along = [0.3 + 0.071 * k];
      expect([hvp(self, at, along, { backend })[0], compiled.hvp(at, along)[0]], `at ${at[0]} along ${along[0]}`).toEqual([0, 0]);
    }
    // At x = 0 with a subnormal z, tz/z overflows: the term y·(tz/z) is left out where y is 0, as
    // where tz is (a probe: d²(x/z)/dz² was NaN there, where 2x/z³ is 0).
    for (const z of [5e-324, 1e-310]) {
      expect(hessian(f, [0, z], { backend }).data[3], `H11 at (0, ${z})`).toBe(0);
      for (const codegen of [true, false]) expect(compile(f, { inputs: 2, backend, codegen, at: [1, 1] }).hvp([0, z], [0, 1])[1], `codegen ${codegen}`).toBe(0);
    }
  });

  it('div at z = 0: H00 is 0, the mixed terms -Infinity, on a tape and compiled', () => {
    const f = (x: Var[]): Var => x[0]!.div(x[1]!);
    expect(Array.from(hessian(f, [1, 0], { backend }).data)).toEqual([0, -Infinity, -Infinity, Infinity]);
    expect(Array.from(hessian(f, [0, 0], { backend }).data).every(Number.isNaN)).toBe(true);
    for (const codegen of [true, false]) {
      expect(Array.from(compile(f, { inputs: 2, backend, codegen, at: [1, 2] }).hvp([1, 0], [1, 0])), `codegen ${codegen}`).toEqual([0, -Infinity]);
    }
  });
});

// A new-user probe: through stopGradient, floor and the other zero-gradient ops the reverse sweep
// passed nothing, but the tangent sweeps multiplied an infinite tangent (sqrt's at 0) by the zero
// partial, so jvp, hvp and forward-mode Jacobians were NaN where the gradient was finite.
describe.each(BACKENDS)('no tangent passes the zero-gradient ops, not even a NaN one (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const apply = (op: string, x: Var): Var => (['lt', 'le', 'gt', 'ge', 'eq'].includes(op) ? (x[op as 'lt'] as (y: number) => Var)(1) : (x[op as 'floor'] as () => Var)());
  it.each(ZERO_GRADIENT_OPS.map((op) => [op]))('%s', (op) => {
    // x·op(sqrt x) + y at x = 0: sqrt's tangent is Infinity there.
    const f = (x: Var[]): Var => x[0]!.mul(apply(op, x[0]!.sqrt())).add(x[1]!);
    const at = [0, 2];
    const g = Array.from(grad(f, { backend })(at));
    expect(Array.from(jvp(f, at, [1, 1], { backend })), 'jvp').toEqual([g[0]! + g[1]!]);
    expect(Array.from(jacobian((x) => [f(x)], at, { backend, mode: 'forward' }).data), 'forward Jacobian').toEqual(g);
    expect(Array.from(hvp(f, at, [1, 0], { backend })).every(Number.isFinite), 'hvp').toBe(true);
    for (const codegen of [true, false]) {
      const c = compile(f, { inputs: 2, backend, codegen, at: [0.5, 2] });
      expect(Array.from(c.jvp(at, [1, 1])), `compiled jvp, codegen ${codegen}`).toEqual([g[0]! + g[1]!]);
      expect(Array.from(c.jvpBatch([...at, 4, 2], 2, [1, 1, 1, 1])).every(Number.isFinite), `compiled jvpBatch, codegen ${codegen}`).toBe(true);
      expect(Array.from(c.hvp(at, [1, 0])).every(Number.isFinite), `compiled hvp, codegen ${codegen}`).toBe(true);
    }
  });

  it('elementwise on a vector too, and a NaN tangent from a custom jvp', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([0, 4]);
    const y = v.mul(v.sqrt().floor()).sum();
    expect(Array.from(tape.jvp([v], [1, 1], [y]))).toEqual([2]);
    const nanJvp = defineFunction({ name: 'nanJvp', forward: (xs) => xs[0]!, vjp: (_xs, _y, g) => [g], jvp: () => NaN });
    tape.reset();
    const x = tape.variable(1), z = x.add(nanJvp(x).stopGradient());
    expect(Array.from(tape.jvp([x], [1], [z]))).toEqual([1]);
  });
});

// A probe: the tangent sweeps left out a term t·p where t was 0 but not where p was, so an
// infinite tangent (sqrt's at 0, log's at a subnormal, or one given) times a zero partial was NaN:
// a unary op's second partial (-sqrt(x) at 0: jvp NaN, gradient -Infinity; neg, but not mul(-1)),
// mul by a zero value (x·sqrt(x) at 0), max's losing side, relu's dead side, the zero triangle of
// an upper trmv. The reverse sweep leaves out g·p where g or p is 0; the tangent sweeps now too,
// in every engine and path, so forward and reverse mode agree there.
describe.each(BACKENDS)('a zero partial passes no tangent, not even an infinite one (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const cases: [string, (x: Var[]) => Var, number[]][] = [
    ['-sqrt(x) at 0', (x) => x[0]!.sqrt().neg(), [0]],
    ['sin(log x) at 1e-310', (x) => x[0]!.log().sin(), [1e-310]],
    ['-log(x) at 1e-310', (x) => x[0]!.log().neg().add(x[1]!), [1e-310, 2]],
    ['x·sqrt(x) at 0', (x) => x[0]!.mul(x[0]!.sqrt()).add(x[1]!.square()), [0, 3]],
    ['max(sqrt(x), 1) at 0', (x) => x[0]!.sqrt().max(1), [0]],
    ['relu(sqrt(x) - 1) at 0', (x) => x[0]!.sqrt().sub(1).relu().add(x[1]!), [0, 1]],
    ['square(sqrt(x) - 0) at 0', (x) => x[0]!.sqrt().square().mul(x[1]!), [0, 2]],
    ['-sqrt(x)·y at (0, 2)', (x) => x[0]!.sqrt().neg().mul(x[1]!), [0, 2]],
  ];
  it.each(cases)('%s: jvp, the forward Jacobian and compiled jvps equal the gradient\'s entries', (_, f, at) => {
    const g = Array.from(grad(f, { backend })(at) as Float64Array);
    const unit = (k: number): number[] => at.map((_, j) => (j === k ? 1 : 0));
    for (let k = 0; k < at.length; k++) expect(jvp(f, at, unit(k), { backend })[0], `jvp along ${k}`).toBe(g[k]);
    expect(Array.from(jacobian((x) => [f(x)], at, { backend, mode: 'forward' }).data), 'forward Jacobian').toEqual(g);
    for (const codegen of [true, false]) {
      const c = compile(f, { inputs: at.length, backend, codegen, at: at.map((v) => v + 0.5) });
      for (let k = 0; k < at.length; k++) expect(c.jvp(at, unit(k))[0], `compiled jvp along ${k}, codegen ${codegen}`).toBe(g[k]);
      expect(Array.from(c.jvpBatch([...at, ...at], 2, [...unit(0), ...unit(0)])), `jvpBatch, codegen ${codegen}`).toEqual([g[0], g[0]]);
    }
  });
  it('an infinite tangent given through neg, square and mul, as through mul(-1)', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(0.5), y = tape.variable(0);
    expect(Array.from(tape.jvp([x], [Infinity], [x.neg(), x.mul(-1), x.square(), y.square(), x.mul(y)]))).toEqual([-Infinity, -Infinity, Infinity, 0, 0]);
  });
  it('the Hessian of -sqrt(x)·y at (0, 2) is symmetric, as with mul(-1)', () => {
    const data = (f: (x: Var[]) => Var): number[] => Array.from(hessian(f, [0, 2], { backend }).data);
    expect(data((x) => x[0]!.sqrt().neg().mul(x[1]!))).toEqual([Infinity, -Infinity, -Infinity, 0]);
    expect(data((x) => x[0]!.sqrt().mul(-1).mul(x[1]!))).toEqual([Infinity, -Infinity, -Infinity, 0]);
  });
  it('elementwise on a vector, and through an upper trmv and a dot', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector([0, 1]), r = v.sqrt().neg();
    expect(Array.from(tape.jvp([v], [1, 0], [r]))).toEqual([-Infinity, 0]);
    expect(Array.from(tape.jvp([v], [0, 1], [r]))).toEqual([0, -0.5]);
    // Long enough for the fused runs' kernels (and their SIMD lanes) too.
    const n = 2000, w = tape.vector(Float64Array.from({ length: n }, (_, k) => k % 2)), u = w.sqrt().neg().mul(w.relu());
    const t = tape.jvp([w], new Float64Array(n).fill(1), [u]);
    expect([t[0], t[1], t[2], t[3]]).toEqual([0, -1.5, 0, -1.5]);
    const L = tape.constantVector([2, 3, 5, 7], [2, 2]);
    const y = L.trmv(v.sqrt(), { lower: false });
    expect(Array.from(jacobianOf(tape, v, y, 'forward'))).toEqual([Infinity, 1.5, 0, 3.5]);
    const d = v.sqrt().dot(tape.constantVector([0, 1]));
    expect(Array.from(tape.jvp([v], [1, 1], [d]))).toEqual([0.5]);
  });
  // A probe: the second-order terms g·p'·t, where a rule multiplies its tangent in (atan's
  // -2x·t/(1+x²)², tanh's -2y·ty, div's -tz/z²), made an infinite tangent times a second partial
  // of 0 NaN, so a Hessian came out NaN on one side of its diagonal and finite on the other. Such
  // a term is now left out as a first-order one is; the expected values are the Hessians with
  // those terms 0 (the rest: closed forms, e.g. tanh(√x0)·x1 has H00 = x1·tanh'(0)·(√x)'' = -∞).
  const secondOrderCases: [string, (x: Var[]) => Var, number[], number[]][] = [
    ['atan(x0·x1) at (1, ∞)', (x) => x[0]!.mul(x[1]!).atan(), [1, Infinity], [0, 0, 0, 0]],
    ['log(x0·x1) at (1, ∞)', (x) => x[0]!.mul(x[1]!).log(), [1, Infinity], [0, 0, 0, 0]],
    ['x0^0.5 of a product at (1, ∞)', (x) => x[0]!.mul(x[1]!).pow(0.5), [1, Infinity], [0, 0, 0, 0]],
    ['tanh(√x0)·x1 at (0, 2)', (x) => x[0]!.sqrt().tanh().mul(x[1]!), [0, 2], [-Infinity, Infinity, Infinity, 0]],
    ['sin(√x0) + x1 at (0, 2)', (x) => x[0]!.sqrt().sin().add(x[1]!), [0, 2], [-Infinity, 0, 0, 0]],
    ['x0 / (x1·x2) at (1, 1, ∞)', (x) => x[0]!.div(x[1]!.mul(x[2]!)), [1, 1, Infinity], [0, 0, 0, 0, 0, 0, 0, 0, 0]],
    ['hypot(x0·x1, x2) at (1, ∞, 1)', (x) => x[0]!.mul(x[1]!).hypot(x[2]!), [1, Infinity, 1], [0, 1, 0, 1, 0, 0, 0, 0, 0]],
    ['atan2(x0·x1, x2) at (1, ∞, 1)', (x) => x[0]!.mul(x[1]!).atan2(x[2]!), [1, Infinity, 1], [0, 0, 0, 0, 0, 0, 0, 0, 0]],
  ];
  it.each(secondOrderCases)('%s: the Hessian leaves out a zero second partial\'s term, in every sweep', (_, f, at, want) => {
    expect(Array.from(hessian(f, at, { backend }).data), 'hessian').toEqual(want);
    const n = at.length, unit = (k: number): number[] => at.map((_, j) => (j === k ? 1 : 0));
    for (const codegen of [true, false]) {
      const c = compile(f, { inputs: n, backend, codegen, at: at.map((v) => (Number.isFinite(v) ? v + 0.5 : 3)) });
      const columns = Array.from({ length: n }, (_, k) => Array.from(c.hvp(at, unit(k))));
      // H is symmetric here, so its columns are its rows.
      expect(columns.flat(), `compiled hvp, codegen ${codegen}`).toEqual(want);
      const X = Array.from({ length: n }, () => at).flat(), V = Array.from({ length: n }, (_, k) => unit(k)).flat();
      expect(Array.from(c.hvpBatch(X, n, V)), `hvpBatch, codegen ${codegen}`).toEqual(want);
    }
  });
  // The generated formulas of div, recip and sqrt multiply a given tangent in, where the core's
  // rule takes each operand's term apart; past a finite tangent they call the core's, so both give
  // the same bits: recip at 1e110 along an infinite direction has a second partial 2/x³ that
  // underflows to 0 (its term left out, 0), where -2y·ty was Infinity (the fused vector kernels:
  // test/vector-fusion.test.ts).
  it('an infinite direction: generated hvps equal the interpreter\'s, and a vector\'s elements', () => {
    const at = [1e110, 0.25, Infinity, 4];
    const f = (x: Var[]): Var => x[0]!.recip().add(x[1]!.sqrt().mul(x[3]!)).add(x[3]!.div(x[2]!)).add(x[1]!.div(x[3]!.mul(x[2]!)));
    const directions = [[Infinity, 0, 0, 0], [0, Infinity, 0, 0], [0, 0, -Infinity, 0], [0, 0, 0, NaN], [Infinity, -Infinity, 1, 2]];
    const interpreted = compile(f, { inputs: 4, backend, codegen: false, at: [1, 1, 1, 1] });
    const generated = compile(f, { inputs: 4, backend, codegen: true, at: [1, 1, 1, 1] });
    const wanted = directions.map((v) => Array.from(interpreted.hvp(at, v)));
    expect(wanted[0]![0], 'recip along Infinity at 1e110').toBe(0);
    expect(directions.map((v) => Array.from(generated.hvp(at, v)))).toEqual(wanted);
    // The finite tangent's terms are its rule's own formula still: x0/x1 at (0, 1e-200) along
    // (∞, 1e-200) has (H·v)[0] = H00·∞ + H01·v1 = 0 + (−1/x1²)·1e-200 = −1e200, whatever v0 is;
    // its mixed second partial alone, −1/x1², overflows (a probe: −Infinity).
    const quotient = compile((x: Var[]) => x[0]!.div(x[1]!), { inputs: 2, backend, at: [1, 1] });
    for (const v0 of [1, Infinity, NaN]) expect(quotient.hvp([0, 1e-200], [v0, 1e-200])[0], `v0 = ${v0}`).toBe(-1e200);
    expect(hvp((x: Var[]) => x[0]!.div(x[1]!), [0, 1e-200], [Infinity, 1e-200], { backend })[0]).toBe(-1e200);
    // Elementwise (the core's vector rules, and the JS engine's): 2/x³ at 1e110 and at 2.
    const g = (x: Vec): Var => x.recip().sum();
    const vector = compile(g, { inputs: 2, vector: true, backend, at: [1, 1] });
    expect(Array.from(vector.hvp([1e110, 2], [Infinity, 1]))).toEqual([0, 0.25]);
  });
  // A probe: logSumExp's tangent added every e^(x−y)·t, and a NaN weight (an element at +Infinity
  // or NaN, or a row all −Infinity: a masked attention row) beside a zero tangent made it NaN
  // along any direction; its second-order term p·(t − ty) too.
  it('logSumExp and logSoftmax: a zero tangent meets a NaN weight and adds nothing', () => {
    const opts = { backend, vector: true } as const;
    const lse = (v: Vec): Var => v.slice(1).logSumExp().add(v.get(0));
    for (const at of [[0.5, -Infinity, -Infinity], [0.5, Infinity, 1], [0.5, NaN]]) {
      const forward = Array.from(jacobian((v: Vec) => [lse(v)], at, { ...opts, mode: 'forward' }).data);
      const reverse = Array.from(jacobian((v: Vec) => [lse(v)], at, { ...opts, mode: 'reverse' }).data);
      expect(forward[0], `J[0] at ${at}`).toBe(1);
      expect(forward, `forward against reverse at ${at}`).toEqual(reverse);
      expect(jvp((v: Vec) => v.slice(1).logSoftmax(), at, [1, ...at.slice(1).map(() => 0)], opts)[0], `logSoftmax at ${at}`).toBe(0);
    }
    const long = [0.5, Infinity, ...Array.from({ length: 1998 }, (_, k) => k / 1000)];
    expect(jvp(lse, long, [1, ...long.slice(1).map(() => 0)], opts)[0]).toBe(1);
    const h = (f: (v: Vec) => Var): number[] => Array.from(hessian(f, [0, NaN], opts).data);
    expect(h((v) => v.slice(1).logSumExp().add(v.get(0).square()))).toEqual(h((v) => v.slice(1).exp().sum().add(v.get(0).square())));
    expect(h((v) => v.slice(1).logSumExp().add(v.get(0).square())).slice(0, 3)).toEqual([2, 0, 0]);
  });

  // A probe: the change of weight t_k − Σ p_j t_j cancelled for a weight near 1, and the
  // Hessian's entries of that element, p_k·(1 − p_k)-small, were lost whole: H[1][1] of
  // logSumExp([0, 37]) was 0, where it is softplus''(37) = 8.5e-17 (logSumExp([0, x]) is
  // softplus(x)), and H·1 was no longer 0.
  it('logSumExp\'s Hessian keeps the dominant element\'s entries: logSumExp([0, x]) as softplus(x)', () => {
    const opts = { backend, vector: true } as const;
    for (const x of [5, 23, 30, 37, 40, 700]) {
      const H = Array.from(hessian((v: Vec) => v.logSumExp(), [0, x], opts).data);
      const e = Math.exp(-x), truth = e / ((1 + e) * (1 + e));
      expect(Math.abs(H[3]! - truth) / truth, `H[1][1] at ${x}`).toBeLessThan(1e-14);
      expect(H[2]! + H[3]!, `H·1 at ${x}`).toBe(0);
      const compiled = compile((v: Vec) => v.logSumExp(), { inputs: 2, vector: true, backend });
      expect(Array.from(compiled.hvp([0, x], [0, 1])), `compiled at ${x}`).toEqual([H[1]!, H[3]!]);
    }
    // Three elements, one dominant: its diagonal entry is p2·(1 − p2).
    const H = Array.from(hessian((v: Vec) => v.logSumExp(), [0, 5, 40], opts).data);
    const a = Math.exp(-40), b = Math.exp(-35), p2 = 1 / (1 + a + b);
    expect(Math.abs(H[8]! - p2 * (a + b) * p2) / (p2 * (a + b) * p2)).toBeLessThan(1e-14);
    // Infinite tangents keep the rule as it was (its NaN and infinities are the README's).
    expect(Array.from(hvp((v: Vec) => v.logSumExp(), [0, 40], [1, Infinity], opts)).map(Number.isNaN)).toEqual(Array.from(hvp((v: Vec) => v.logSumExp(), [40, 0], [Infinity, 1], opts)).map(Number.isNaN).reverse());
  });
});

// The Jacobian of y (a Vec) with respect to v by jvps along each input's unit vector, as columns.
function jacobianOf(tape: Tape, v: Vec, y: Vec, _mode: 'forward'): number[] {
  const n = v.size, m = y.size, out = new Array<number>(n * m);
  for (let k = 0; k < n; k++) {
    const col = tape.jvp([v], Array.from({ length: n }, (_, j) => (j === k ? 1 : 0)), [y]);
    for (let r = 0; r < m; r++) out[r * n + k] = col[r]!;
  }
  return out;
}

// Found by a new-user probe: pow's second derivative z(z-1)x^(z-2) overflowed in z(z-1) before
// a zero power (NaN at 0 for z = 1e155, whose limit is 0) and in x^(z-2) where the product is
// finite (x = z = 1e-170: -1e170; x = 5e-324, z = 1 + 2^-52: 4.49e307).
describe.each(BACKENDS)('pow\'s second derivative at extreme exponents (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const close = (got: number, want: number): void => expect(Math.abs(got - want) / Math.abs(want), `${got} vs ${want}`).toBeLessThanOrEqual(1e-12);
  it('at 0 the limit 0 for huge exponents, constant or not', () => {
    for (const c of [1e155, 1e200]) {
      expect(Array.from(hessian((x: Var[]) => x[0]!.pow(c), [0], { backend }).data)).toEqual([0]);
      expect(Array.from(hessian((x: Var[]) => x[0]!.pow(x[1]!), [0, c], { backend }).data)).toEqual([0, 0, 0, 0]);
    }
  });
  it('finite where the true value is, near 0 and at denormals', () => {
    const tiny = (1e-170 - 1) / 1e-170 * Math.pow(1e-170, 1e-170); // z(z-1)x^(z-2) at x = z = 1e-170, in range
    close(hvp((x: Var[]) => x[0]!.pow(1e-170), [1e-170], [1], { backend })[0]!, tiny);
    const z = 1 + 2 ** -52;
    close(hvp((x: Var[]) => x[0]!.pow(z), [5e-324], [1], { backend })[0]!, z * (z - 1) * Math.pow(5e-324, z - 1) / 5e-324);
    close(hessian((x: Var[]) => x[0]!.pow(x[1]!), [1e-170, 1e-170], { backend }).data[0]!, tiny);
    // The mixed term x^(c-1)(1 + c ln x), in both orders, where x^c over- or underflows (one order
    // divided x^c by x: Infinity at (1e155, 2), 7e-4 off at (1e-300, 2); a probe found them apart).
    for (const [x, c] of [[1e155, 2], [1e-300, 2], [1e-150, 3], [1e-160, 2]] as const) {
      const H = hessian((v: Var[]) => v[0]!.pow(v[1]!), [x, c], { backend }).data;
      expect(H[1], `(${x}, ${c})`).toBe(H[2]);
      close(H[1]!, Math.pow(x, c - 1) * (1 + c * Math.log(x)));
    }
    // and the ordinary case, against the closed form
    close(hvp((x: Var[]) => x[0]!.pow(3.5), [1.7], [1], { backend })[0]!, 3.5 * 2.5 * Math.pow(1.7, 1.5));
  });
  // A probe: z·((z-1)·x^(z-1))/x overflowed in its product where |x| is large, and took
  // Infinity / Infinity at x = Infinity; and the mixed term 0·∞ at x = Infinity for z < 1.
  it('finite where the true value is, far out and at Infinity', () => {
    const second = (c: number, x0: number): number => hvp((x: Var[]) => x[0]!.pow(c), [x0], [1], { backend })[0]!;
    expect([second(2, 1e308), second(2, Infinity), second(2, -Infinity), second(3, Infinity), second(0.5, Infinity)]).toEqual([2, 2, 2, Infinity, 0]);
    close(second(3, 1e200), 6e200);
    close(hessian((x: Var[]) => x[0]!.pow(x[1]!), [1e200, 3], { backend }).data[0]!, 6e200);
    expect(Array.from(hessian((x: Var[]) => x[0]!.pow(x[1]!), [Infinity, 0.5], { backend }).data)).toEqual([0, 0, 0, Infinity]);
  });
  // A probe: with |c| < 2^-53, c - 1 rounds to -1, so x^(c-1) was finite for x < 0 (under a NaN
  // value) and -Infinity at -0; and it overflowed where c·x^(c-1) is finite.
  it('the first derivative of a tiny non-integer exponent: NaN below 0, +Infinity at ±0, finite where it is', () => {
    const d = (c: number, x0: number): number => grad((x: Var[]) => x[0]!.pow(c), { backend })([x0])[0]!;
    expect([d(1e-300, -1), d(1e-300, -0), d(1e-300, 0), d(0.5, -0)]).toEqual([NaN, Infinity, Infinity, Infinity]);
    close(d(1e-170, 1e-310), 1e-170 / 1e-310 * Math.pow(1e-310, 1e-170));
    // Integer exponents keep their signs at -0 and below 0.
    expect([d(3, -2), d(-1, -0), d(2, -1)]).toEqual([12, -Infinity, -2]);
  });
});

// A probe (2026-12-05): pow's second derivatives finite where its value and gradient are NaN
// (x < 0 with a tiny non-integer exponent, x = -Infinity), its mixed term NaN in one order and
// +Infinity in the other where x^(c-1) overflows (∞ − ∞ in a sum), or 0 against NaN at infinite
// exponents (∞·0 in the x-partial), and its second derivative in x 0 where x^(c-1) underflowed
// although the true value is a normal double.
describe.each(BACKENDS)('pow\'s second derivatives: NaN with the gradient, both orders alike, no early underflow (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const P = (v: Var[]): Var => v[0]!.pow(v[1]!);
  const same = (got: number[], want: number[]): void => expect(got.map(String)).toEqual(want.map(String));
  it('NaN wherever the first derivative is NaN', () => {
    for (const [c, x0] of [[1e-17, -2], [-1e-17, -2], [0.5, -Infinity], [1.5, -Infinity], [-0.5, -Infinity], [1 / 3, -Infinity]] as const) {
      expect(grad((x: Var[]) => x[0]!.pow(c), { backend })([x0])[0], `grad at (${x0}, ${c})`).toBeNaN();
      expect(hvp((x: Var[]) => x[0]!.pow(c), [x0], [1], { backend })[0], `hvp at (${x0}, ${c})`).toBeNaN();
    }
    for (const point of [[-2, 1e-17], [-Infinity, 0.5], [-Infinity, -0.5]]) same(Array.from(hessian(P, point, { backend }).data), [NaN, NaN, NaN, NaN]);
    // x = NaN: the second derivative too (a review: 2 for c = 2 under a NaN gradient).
    for (const c of [2, 3, 0.5]) expect(hvp((x: Var[]) => x[0]!.pow(c), [NaN], [1], { backend })[0], `c = ${c}`).toBeNaN();
  });
  // A numerics audit: d/dc x^c below 0 was 0 where x^c under- or overflowed to 0 (the rule's
  // y = 0 shortcut), against NaN everywhere else below 0; (-Infinity)^(2^54)'s gradient took the
  // sign of an even c - 1; and at (-0, 0) the mixed term was -Infinity, not the limit from x > 0.
  it('below 0 d/dc is NaN where the power is 0 too; -Infinity keeps the sign past 2^53; -0 is 0 at c = 0', () => {
    for (const point of [[-0.5, 2000], [-1e-200, 2], [-2, -2000], [-Infinity, -1], [-0.5, 1075]]) {
      const [dx, dc] = grad(P, { backend })(point);
      expect(dc, `d/dc at ${point}`).toBeNaN();
      expect(Number.isNaN(dx!), `d/dx at ${point}`).toBe(false);
    }
    same(Array.from(grad(P, { backend })([0.5, 2000])), [0, 0]);
    for (const c of [2 ** 54, 2 ** 53 + 2, 1e308]) {
      expect(grad((x: Var[]) => x[0]!.pow(c), { backend })([-Infinity])[0], `c = ${c}`).toBe(-Infinity);
      expect(grad(P, { backend })([-Infinity, c])[0], `c = ${c}`).toBe(-Infinity);
    }
    expect(grad((x: Var[]) => x[0]!.pow(-(2 ** 54)), { backend })([-Infinity])[0]).toBe(0);
    for (const x0 of [0, -0]) same(Array.from(hessian(P, [x0, 0], { backend }).data).slice(1, 3), [Infinity, Infinity]);
    // Compiled, generated and interpreted, alike.
    for (const codegen of [true, false]) {
      const f = compile(P, { inputs: 2, backend, codegen });
      same(Array.from(f.gradient([-0.5, 2000])), Array.from(grad(P, { backend })([-0.5, 2000])));
      same(Array.from(f.gradient([-Infinity, 2 ** 54])), Array.from(grad(P, { backend })([-Infinity, 2 ** 54])));
      same(Array.from(f.hvp([-0, 0], [0, 1])), Array.from(hvp(P, [-0, 0], [0, 1], { backend })));
    }
  });

  it('both orders of the mixed term alike where x^(c-1) overflows or the exponent is infinite', () => {
    // x^(c-1)(1 + c ln x) at (1e-310, 1e-8) is about 1e310: +Infinity both ways.
    same(Array.from(hessian(P, [1e-310, 1e-8], { backend }).data).slice(1, 3), [Infinity, Infinity]);
    // Nearer 0, or c larger, ty·ln x overflows too, and that order's ∞ − ∞ was NaN (a probe): the
    // true values, ±1e310 to ±1e323, overflow as the other order gives them.
    for (const [point, mixed] of [[[5e-324, 1e-8], Infinity], [[1e-320, 1e-8], Infinity], [[1e-315, 0.01], -Infinity], [[5e-324, 0.01], -Infinity]] as const) {
      same(Array.from(hessian(P, [...point], { backend }).data).slice(1, 3), [mixed, mixed]);
      for (const codegen of [true, false]) same(Array.from(compile(P, { inputs: 2, backend, codegen, at: [0.5, 2] }).hvp([...point], [1, 0])).slice(1), [mixed]);
    }
    // An infinite exponent with a zero power: the x-partial c·x^(c-1) is ∞·0 = NaN (IEEE), and so
    // is every second partial through it, in both orders (the mixed one was 0 against NaN).
    for (const point of [[0.5, Infinity], [3, -Infinity]]) {
      same(Array.from(grad(P, { backend })(point)), [NaN, 0]);
      same(Array.from(hessian(P, point, { backend }).data), [NaN, NaN, NaN, 0]);
    }
  });
  // Where the true derivative is a subnormal number, x·x overflowing past 1e154 gave 0 (a probe):
  // divided by x twice instead, and atan's 1/(1 + x²) as 1/x/x there.
  it('derivatives whose value is subnormal are not flushed to 0 by an overflowing square', () => {
    const second = (f: (v: Var) => Var, x: number): number => hessian(f, x, { backend }).data[0]!;
    const near = (got: number, want: number, what: string): void => expect(got / want, `${what}: ${got} for ${want}`).toBeCloseTo(1, 9);
    near(second((v) => v.log(), 1e155), -1e-310, "log''(1e155)");
    near(second((v) => v.log1p(), 1e155), -1e-310, "log1p''(1e155)");
    near(second((v) => v.log2(), 1e155), -1e-310 / Math.LN2, "log2''(1e155)");
    near(second((v) => v.log10(), 1e154), -1e-308 / Math.LN10, "log10''(1e154)");
    for (const x of [1e155, -2e154]) {
      near(grad((v: Var) => v.atan(), { backend })(x), 1 / x / x, `atan'(${x})`);
      for (const codegen of [true, false]) near(compile((v: Var[]) => v[0]!.atan(), { inputs: 1, backend, codegen, at: [0.5] }).gradient([x])[0]!, 1 / x / x, `compiled atan'(${x})`);
    }
    expect(grad((v: Var) => v.atan(), { backend })(Infinity)).toBe(0);
  });

  // z(z-1)x^(z-2) for a subnormal x and a tiny z: x^(z-1) overflowed before z made the product
  // finite (a probe: -Infinity for -4.9e296 at x = 1e-310, z = 5e-324).
  it('the second derivative in x is not lost to an early overflow', () => {
    for (const [x, z] of [[1e-310, 5e-324], [1e-310, 1e-320], [1e-315, 5e-324]] as const) {
      const want = z / x * (z - 1) / x;
      for (const f of [(v: Var[]) => v[0]!.pow(z), (v: Var[]) => v[0]!.pow(v[1]!)]) {
        const got = hessian(f, [x, z], { backend }).data[0]!;
        expect(got / want, `${x}, ${z}: ${got} for ${want}`).toBeCloseTo(1, 12);
      }
    }
  });
  it('the second derivative in x is not lost to an early underflow', () => {
    const close = (got: number, want: number): void => expect(Math.abs(got - want) / want, `${got} vs ${want}`).toBeLessThanOrEqual(1e-14);
    const second = (c: number, x0: number): number => hvp((x: Var[]) => x[0]!.pow(c), [x0], [1], { backend })[0]!;
    close(second(2.5, 1e-300), 3.75e-150);
    close(second(3, 1e-300), 6e-300);
    close(second(3, 1e-160), 6e-160);
    close(hessian(P, [1e-300, 2.5], { backend }).data[0]!, 3.75e-150);
    // compiled, generated and interpreted: the tape's bits.
    for (const codegen of [true, false]) {
      const f = compile(P, { inputs: 2, backend, codegen, at: [1e-300, 3] });
      expect(f.hvp([1e-300, 3], [1, 0])[0], `codegen ${codegen}`).toBe(hessian(P, [1e-300, 3], { backend }).data[0]);
    }
  });
});

// A probe found Hessians of div and atan2 whose two orders disagreed at extreme points: y·0 = NaN
// in div's mixed term where x/y overflows, -Infinity against NaN at 0/0, and ±Infinity from
// cancelling rounding in atan2's mixed term where the true value is 0. Both orders now agree, on
// a tape and compiled (generated code, which spells div's rule out, and the interpreter).
describe.each(BACKENDS)('div and atan2: both orders of the mixed second derivative agree at extreme points (%s)', (backend) => {
  beforeAll(async () => {
    await tapeOn(backend);
  });
  const cases: [string, (x: Var[]) => Var, number[], number[]][] = [
    // [H00, H01, H10, H11]
    ['div', (x) => x[0]!.div(x[1]!), [1e308, 0.5], [0, -4, -4, Infinity]],
    ['div', (x) => x[0]!.div(x[1]!), [1, 5e-324], [0, -Infinity, -Infinity, Infinity]],
    ['div', (x) => x[0]!.div(x[1]!), [0, 0], [NaN, NaN, NaN, NaN]],
    ['div', (x) => x[0]!.div(x[1]!), [3, 2], [0, -0.25, -0.25, 0.75]],
    ['atan2', (x) => x[0]!.atan2(x[1]!), [1e-170, 1e-170], [-Infinity, 0, 0, Infinity]],
    ['atan2', (x) => x[0]!.atan2(x[1]!), [1e-310, 1e-310], [-Infinity, 0, 0, Infinity]],
    ['atan2', (x) => x[0]!.atan2(x[1]!), [1, 1], [-0.5, 0, 0, 0.5]],
  ];
  it.each(cases)('%s at %j', (_name, f, point, want) => {
    const H = Array.from(hessian(f, point, { backend }).data);
    expect(H.map((v, k) => (Number.isFinite(want[k]!) && want[k] !== 0 ? Math.abs(v - want[k]!) <= 1e-15 * Math.abs(want[k]!) : Object.is(Math.abs(v), Math.abs(want[k]!)) || (Number.isNaN(v) && Number.isNaN(want[k]!)))), `${H}`).toEqual([true, true, true, true]);
    for (const codegen of [true, false]) {
      const c = compile(f, { inputs: 2, backend, codegen, at: point });
      const columns = [...c.hvp(point, [1, 0]), ...c.hvp(point, [0, 1])];
      // hvp's columns, H00 H10 H01 H11: the tape's Hessian bit for bit.
      expect(columns.map((v) => String(v)), `codegen ${codegen}`).toEqual([H[0], H[2], H[1], H[3]].map((v) => String(v)));
    }
  });
});

// A new-user probe: asin, acos and atanh took 1 - x·x, whose rounding of x·x cancelled near ±1:
// at x = 1 - 2^-27 their derivatives were off by 2-4e-9 and their second derivatives by 6-8e-9
// (acosh already took (x - 1)(x + 1)). For x = ±(1 - 2^-k), 1 - x² = 2^(1-k) - 2^(-2k) is exact,
// so each derivative is its formula's few correctly rounded operations on it.
// A probe: atan2's mixed partial (x² − z²)/r⁴ took w² − u² of the operands in units of r, each
// rounded, which lost up to all of its value where |x| ≈ |z|: 243 of 1,200 such points were off by
// more than 1e-3, the worst by 77%.
describe.each(BACKENDS)('atan2: the mixed second derivative where |x| ≈ |z| (%s)', (backend) => {
  it('is (x² − z²)/r⁴ to a few ulps, at ±x(1 + δ) for δ from 1e-16 to 1e-4, and 0 on the diagonals', () => {
    const rand = fc.sample(fc.tuple(fc.double({ min: 1e-3, max: 1e3, noNaN: true }), fc.double({ min: -16, max: -4, noNaN: true }), fc.boolean(), fc.boolean()), { numRuns: 120, seed: 5 });
    for (const [magnitude, e, flip, negative] of rand) {
      const x = negative ? -magnitude : magnitude, z = (flip ? -1 : 1) * x * (1 + 10 ** e);
      // (x − z)(x + z) is exact-ish here (one factor by Sterbenz), and r⁴ is far from its limits.
      const want = ((x - z) * (x + z)) / (x * x + z * z) ** 2;
      const H = hessian((v: Var[]) => v[0]!.atan2(v[1]!), [x, z], { backend }).data;
      expect(Math.abs(H[1]! - want), `(${x}, ${z}): ${H[1]} vs ${want}`).toBeLessThanOrEqual(4e-15 * Math.abs(want));
      expect(H[2]).toBe(H[1]);
    }
    expect(hessian((v: Var[]) => v[0]!.atan2(v[1]!), [1, 1 + 2 ** -52], { backend }).data[1]).toBeCloseTo(-1.1102230246251562e-16, 30);
    for (const p of [[2, 2], [-3, 3], [1e-200, -1e-200]]) expect(Math.abs(hessian((v: Var[]) => v[0]!.atan2(v[1]!), p, { backend }).data[1]!)).toBe(0);
  });
});

// A probe: digamma's second derivative took cos(π/2) = 6.1e-17 for 0 at the negative
// half-integers, where the reflection's cotangent term vanishes: ψ''(−1e8 − 1/2) came out +3.7e-15
// where it is −1e-16. There ψ''(x) = ψ''(1 − x).
describe.each(BACKENDS)('digamma: the second derivative at negative half-integers (%s)', (backend) => {
  it('equals its value at 1 − x', () => {
    const second = (x: number): number => hvp((v: Var[]) => v[0]!.digamma(), [x], [1], { backend })[0]!;
    for (const x of [-0.5, -2.5, -100.5, -100000.5, -100000000.5]) {
      const want = second(1 - x);
      expect(Math.abs(second(x) - want), `${x}`).toBeLessThanOrEqual(1e-13 * Math.abs(want));
    }
  });
});

describe.each(BACKENDS)('asin, acos and atanh near ±1: derivatives without cancellation (%s)', (backend) => {
  it('first and second derivatives at ±(1 - 2^-k), k = 10..50, as the formulas give them on the exact 1 - x²', () => {
    for (let k = 10; k <= 50; k += 4) {
      for (const sign of [1, -1]) {
        const x = sign * (1 - 2 ** -k), u = 2 ** (1 - k) - 2 ** (-2 * k);
        const d1 = { asin: 1 / Math.sqrt(u), acos: -1 / Math.sqrt(u), atanh: 1 / u };
        const d2 = { asin: x / (u * Math.sqrt(u)), acos: -x / (u * Math.sqrt(u)), atanh: (2 * x) / (u * u) };
        for (const name of ['asin', 'acos', 'atanh'] as const) {
          expect(grad((v: Var) => v[name](), { backend })(x), `${name}' at ${x}`).toBe(d1[name]);
          expect(hvp((v: Var) => v[name](), x, 1, { backend })[0], `${name}'' at ${x}`).toBe(d2[name]);
        }
      }
    }
  });
});

// The same probe: the second derivatives of atan, asinh and acosh became their limit 0 as soon as
// (1 + x²)² or (x² + 1)^1.5 overflowed (|x| past 1.2e77 and 5.6e102), where the true values are
// normal doubles up to about 2e102 and 6.7e153.
describe.each(BACKENDS)('atan, asinh and acosh: second derivatives far out (%s)', (backend) => {
  it('are -2/x³, -sign(x)/x² and -1/x² to a few ulps where those are normal, and 0 at ±Infinity', () => {
    const second = (op: 'atan' | 'asinh' | 'acosh', x: number): number => hvp((v: Var) => v[op](), x, 1, { backend })[0]!;
    for (const x of [1e39, 3e60, 1e80, 1e100, 1e120, 1e150]) {
      const cases: [string, number, number][] = [['asinh', second('asinh', x), -1 / x / x], ['asinh', second('asinh', -x), 1 / x / x], ['acosh', second('acosh', x), -1 / x / x]];
      if (x < 1e102) cases.push(['atan', second('atan', x), -2 / x / x / x], ['atan', second('atan', -x), 2 / x / x / x]);
      for (const [op, got, want] of cases) {
        if (Math.abs(want) < 2.3e-308) continue;
        expect(Math.abs(got - want) / Math.abs(want), `${op}'' at ${x}`).toBeLessThan(1e-15);
      }
    }
    for (const op of ['atan', 'asinh', 'acosh'] as const) expect(second(op, Infinity)).toBe(0);
  });
});

// A probe: sigmoid's second derivative y(1 - y)(1 - 2y) left only the rounding of y in 1 - 2y
// near 0 (100% off at x = 1e-16, 9e-5 at 1e-12); 1 - 2y is -tanh(x/2).
describe.each(BACKENDS)('sigmoid: the second derivative near 0 (%s)', (backend) => {
  it('is -x/8 to 1e-15 relative for tiny x, and its closed form elsewhere', () => {
    const second = (x: number): number => hvp((v: Var) => v.sigmoid(), x, 1, { backend })[0]!;
    for (const x of [1e-300, -1e-16, 1e-12, 3e-9]) expect(Math.abs(second(x) / (-x / 8) - 1), `at ${x}`).toBeLessThan(1e-15);
    for (const x of [0.5, -3, 20]) {
      const y = 1 / (1 + Math.exp(-x));
      expect(Math.abs(second(x) - y * (1 - y) * (1 - 2 * y)), `at ${x}`).toBeLessThan(1e-15);
    }
  });
});
