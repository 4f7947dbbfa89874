// logSumExp on the core's SIMD build takes e^x from its own two-lane exp (assembly/exp-lanes.ts),
// not the scalar Math.exp. Its gradient is exp(x_k - y) with y the value, computed as the kernel
// computes it, so each component is one call of that exp: compared here with V8's Math.exp (itself
// within 1 ulp) over the whole range it sees, from 0 down past the subnormals, in the vector
// body and in the tails; and the value, gradient, tangent and hvp against the scalar build.
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape, compile, createTapeSync, hvp, init, jvp, type Vec } from '../src/index.ts';
import { BACKENDS } from './support.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';

/** The spacing of doubles at |v| (the smallest subnormal at and below the subnormal range). */
function ulpOf(v: number): number {
  const bits = new DataView(new ArrayBuffer(8));
  bits.setFloat64(0, Math.abs(v));
  const exponent = (bits.getUint16(0) >> 4) & 0x7ff;
  return exponent <= 1 ? 2 ** -1074 : 2 ** (exponent - 1075);
}

let simd: Tape, scalar: Tape;
beforeAll(async () => {
  simd = new Tape(new WasmBackend(await loadCoreModule('simd')));
  scalar = new Tape(new WasmBackend(await loadCoreModule('scalar')));
});

// 0 first (the maximum), then arguments spread over [-746, 0): near 0, through the normal range,
// across the subnormal boundary at -708.4 and past the last subnormal at -745.13; an odd length,
// so tails of one to three elements run too.
function spread(count: number): Float64Array {
  const x = new Float64Array(count);
  for (let k = 1; k < count; k++) {
    const t = k / count;
    x[k] = k % 5 === 0 ? -746 * t : k % 5 === 1 ? -t : k % 5 === 2 ? -700 - 46 * t : k % 5 === 3 ? -Math.exp(7 * t) : -30 * t;
  }
  return x;
}

describe.runIf(simdAvailable())("logSumExp's two-lane exp (SIMD build)", () => {
  it('each gradient component is within 2 ulp of exp(x_k - y), down to the subnormals and 0', () => {
    for (const count of [4003, 4002, 4001, 4000, 7, 2]) {
      const x = spread(count);
      simd.reset();
      const v = simd.vector(x);
      const out = v.logSumExp();
      const y = out.value;
      const g = simd.gradient(out, [v]);
      let worst = 0, subnormals = 0, zeros = 0;
      for (let k = 0; k < count; k++) {
        const want = Math.exp(x[k]! - y);
        const error = Math.abs(g[k]! - want) / ulpOf(want);
        worst = Math.max(worst, error);
        if (want !== 0 && want < 2 ** -1022) subnormals++;
        if (g[k] === 0) zeros++;
        if (!(error <= 2)) throw new Error(`n = ${count}, x = ${x[k]}: ${g[k]} against ${want} (${error} ulp)`);
      }
      if (count > 1000) {
        expect(subnormals, 'arguments in the subnormal range').toBeGreaterThan(10);
        expect(zeros, 'arguments past the last subnormal').toBeGreaterThan(0);
      }
      expect(worst).toBeLessThanOrEqual(2);
    }
  });

  it('-Infinity elements get exactly 0; NaN, +Infinity and signed zeros give what the scalar build gives', () => {
    const cases = [
      [0.5, -Infinity, 2, -Infinity, -3, 1],
      [NaN, 1, 2, 3, 4],
      [1, Infinity, 2, 3, 4],
      [-Infinity, -Infinity, -Infinity],
      [1e308, -1e308, 1e308, 0, 5],
      // Zeros of both signs as the largest (the shift's sign must not show), NaN past the first
      // four elements, Infinity in a tail.
      [-0, 0, -0, 0, -0],
      [0, -0, 0, -0],
      [-1, -2, -3, -4, -5, NaN, -7, -8, -9],
      [-1, -2, -3, -4, -5, -6, -7, -8, Infinity],
    ];
    for (const x of cases) {
      const got = [simd, scalar].map((tape) => {
        tape.reset();
        const v = tape.vector(x);
        const out = v.logSumExp();
        return [out.value, ...tape.gradient(out, [v])];
      });
      const [fromSimd, fromScalar] = got as [number[], number[]];
      fromSimd.forEach((value, k) => {
        const other = fromScalar[k]!;
        if (Number.isFinite(other) && other !== 0) expect(Math.abs(value - other) / Math.abs(other), `[${x}] #${k}`).toBeLessThanOrEqual(1e-15);
        else expect(Object.is(value, other), `[${x}] #${k}: ${value} against ${other}`).toBe(true);
      });
    }
  });

  it('value, gradient, tangent and hvp agree with the scalar build within 1e-15', () => {
    const x = Array.from({ length: 1001 }, (_, k) => Math.sin(k * 0.731) * 4 - 1);
    const direction = x.map((_, k) => ((k % 7) - 3) / 4);
    const results = [simd, scalar].map((tape) => {
      tape.reset();
      const v = tape.vector(x);
      const out = v.logSumExp().mul(1.5);
      return [out.value, ...tape.gradient(out, [v]), ...tape.jvp([v], direction, [out]), ...tape.hvp(out, [v], direction)];
    });
    const [a, b] = results as [number[], number[]];
    expect(a.length).toBe(b.length);
    let worst = 0;
    a.forEach((value, k) => { worst = Math.max(worst, Math.abs(value - b[k]!) / Math.max(Math.abs(b[k]!), 1e-300)); });
    expect(worst).toBeLessThanOrEqual(1e-15);
  });
});

// A probe: the weights e^(x_k - y) carried y's rounding, which at large logits is most of a
// weight: gradients [1, 1] at 1e16, 1e16 (summing to 2), 0.47 each at 1e15, jvp 2 and hvp
// [0, -1]. From |y| = 2^10 the weights are divided by their sum: the softmax at any scale.
describe.each(BACKENDS)('logSumExp at large logits (%s)', (backend) => {
  // Nine elements too: the SIMD build's sums run four at a time (a review: only n <= 3 was tried).
  const cases = [[1e16, 1e16], [1e15, 1e15], [1e12, 1e12, 1e12], [-1e16, -1e16], [1e6, 1e6 + 1], [2000, 2001, 2003], [5e8, 5e8 + 1, 5e8 - 2, 5e8, 5e8 + 3, 5e8 - 1, 5e8 + 2, 5e8, 5e8 + 1]];
  it.each(cases)('gradient, jvp and hvp are the softmax\'s at %s, %s', (...x) => {
    const e = x.map((v) => Math.exp(v - Math.max(...x))), sum = e.reduce((s, v) => s + v, 0), p = e.map((v) => v / sum);
    const tape = createTapeSync({ backend });
    const v = tape.vector(x), y = v.logSumExp();
    tape.backward(y);
    for (let k = 0; k < x.length; k++) expect(Math.abs(v.grad[k]! - p[k]!), `gradient ${k}`).toBeLessThanOrEqual(1e-15);
    const t = x.map((_, k) => (k === 0 ? 1 : 0));
    expect(Math.abs(jvp((w: Vec) => w.logSumExp(), x, x.map(() => 1), { vector: true, backend })[0]! - 1)).toBeLessThanOrEqual(1e-15);
    const h = hvp((w: Vec) => w.logSumExp(), x, t, { vector: true, backend });
    // H e_0 = p_0 e_0 - p_0 p
    for (let k = 0; k < x.length; k++) expect(Math.abs(h[k]! - ((k === 0 ? p[0]! : 0) - p[0]! * p[k]!)), `hvp ${k}`).toBeLessThanOrEqual(1e-15);
    expect(Array.from(compile((w: Vec) => w.logSumExp(), { inputs: x.length, vector: true, backend }).gradient(x))).toEqual(Array.from(v.grad));
  });
});
