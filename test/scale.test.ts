// Large tapes: million-node chains and a node with 10^5 consumers, on both backends. The sweeps
// are loops, so depth costs no stack; the gradients must still be right at that depth.
import { describe, expect, it } from 'vitest';
import { CapacityError } from '../src/index.ts';
import { BACKENDS, tapeOn } from './support.ts';

const relative = (got: number, want: number): number => Math.abs(got - want) / Math.abs(want);

describe.each(BACKENDS)('scale (%s)', (backend) => {
  it('a 10^6-node chain x <- x + eps sin x (Var API) matches its forward derivative and the flow of dx/dt = sin x', async () => {
    const tape = await tapeOn(backend);
    // Three nodes a step: the number eps is one shared constant node.
    const steps = 333_334, eps = 3e-6, x0 = 1;
    const start = tape.variable(x0);
    let x = start;
    for (let k = 0; k < steps; k++) x = x.add(x.sin().mul(eps));
    expect(tape.size).toBeGreaterThanOrEqual(1_000_000);
    tape.backward(x);

    // The same recursion in plain JS, carrying its derivative forward.
    let v = x0, dv = 1;
    for (let k = 0; k < steps; k++) {
      dv *= 1 + eps * Math.cos(v);
      v += eps * Math.sin(v);
    }
    expect(relative(x.value, v)).toBeLessThan(1e-12);
    expect(relative(start.grad, dv)).toBeLessThan(1e-10);

    // The map is Euler's method for dx/dt = sin x up to t = 1, whose flow is
    // tan(x/2) = tan(x0/2) e^t with d x(t)/d x0 = sin x(t) / sin x0; the steps differ by O(eps).
    const flow = 2 * Math.atan(Math.tan(x0 / 2) * Math.E);
    expect(relative(x.value, flow)).toBeLessThan(1e-5);
    expect(relative(start.grad, Math.sin(flow) / Math.sin(x0))).toBeLessThan(1e-5);
  });

  it('a chain of 10^6 sin nodes (handle API) has derivative prod cos(x_k)', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const steps = 1_000_000, x0 = 1.25;
    const start = h.variable(x0);
    let x = start;
    for (let k = 0; k < steps; k++) x = h.sin(x);
    expect(tape.size).toBe(steps + 1);
    h.backward(x);

    let v = x0, dv = 1;
    for (let k = 0; k < steps; k++) {
      dv *= Math.cos(v);
      v = Math.sin(v);
    }
    // x_k ~ sqrt(3/k), so the product decays like k^(-3/2) but stays far from underflow.
    expect(dv).toBeGreaterThan(1e-12);
    expect(relative(h.value(x), v)).toBeLessThan(1e-12);
    expect(relative(h.grad(start), dv)).toBeLessThan(1e-9);
  });

  it('a node consumed 10^5 times gets exactly the sum of its 10^5 partials', async () => {
    const tape = await tapeOn(backend);
    const n = 100_000, y0 = 0.75;
    const y = tape.variable(y0);
    let sum = y.mul(1);
    // c_k = 1 + k/1024: every product and partial sum is a multiple of 2^-12 below 2^53, so the
    // closed forms below are exact in floating point whatever the summation order.
    for (let k = 1; k < n; k++) sum = sum.add(y.mul(1 + k / 1024));
    const sumOfC = n + (n * (n - 1)) / 2 / 1024;
    expect(sum.value).toBe(y0 * sumOfC);
    tape.backward(sum);
    expect(y.grad).toBe(sumOfC);
  });

  // Growing by +8 slots near the limit made filling a tape quadratic: with maxNodes = 40000 the
  // JS backend reallocated 910 times (1.9 s), and a limit just above a power of two of millions
  // of nodes practically never finishes.
  it('filling a tape up to maxNodes reallocates O(log n) times, not once per 8 nodes', async () => {
    const maxNodes = 5000;
    const tape = await tapeOn(backend, { maxNodes });
    const h = tape.handles;
    const layouts = new Set<object>([tape.engine.views]);
    let x = h.variable(1);
    expect(() => {
      for (;;) {
        x = h.sin(x);
        layouts.add(tape.engine.views);
      }
    }).toThrow(CapacityError);
    expect(tape.size).toBe(maxNodes);
    expect(layouts.size).toBeLessThanOrEqual(Math.ceil(Math.log2(maxNodes / 1024)) + 2);
  });
});

describe('past 2 GiB of wasm memory', () => {
  // 7·10^7 nodes of 25 bytes need a capacity of 2^27: 3.4 GB, whose upper regions start past 2^31,
  // where the core's i32 addresses read negative in JS; the views were built from them and the
  // growth threw a RangeError that left the tape broken (a.grad undefined after reset).
  it('a tape of 7·10^7 input nodes records, reads and differentiates its last nodes, and resets', async () => {
    const tape = await tapeOn('wasm');
    const h = tape.handles;
    const n = 70_000_000;
    const values = new Float64Array(n);
    values[0] = 2;
    values[n - 1] = 3;
    const x = h.variables(values);
    const y = h.mul(x[n - 1]!, h.square(x[0]!));
    expect(h.value(y)).toBe(12);
    expect(Array.from(h.gradient(y, [x[0]!, x[n - 1]!, x[1]!]))).toEqual([12, 4, 0]);
    tape.reset();
    const a = tape.variable(3);
    tape.backward(a.mul(a));
    expect(a.grad).toBe(6);
    // Tangents at the capacity of 2^27 nodes this recording left need 5.5 GB: a probe's jvp was
    // refused, on any graph, for the tape's life. The capacity shrinks to what fits.
    expect(Array.from(tape.jvp([a], [1], [a.mul(a)]))).toEqual([6]);
    expect(Array.from(tape.hvp(a.mul(a), [a], [1]))).toEqual([2]);
  }, 60_000);
});
