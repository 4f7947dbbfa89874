// Shared by the test files: both backends, and tape construction.
import { expect } from 'vitest';
import { createTape, normwiseError, type BackendKind, type Tape, type TapeOptions, type Var } from '../src/index.ts';

export const BACKENDS: readonly BackendKind[] = ['wasm', 'js'];

export function tapeOn(backend: BackendKind, options: TapeOptions = {}): Promise<Tape> {
  return createTape({ ...options, backend });
}

/** Normwise closeness (see normwiseError), naming the worst component when it fails. */
export function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance: number, what = ''): void {
  expect(actual.length, what).toBe(expected.length);
  const { error, worst } = normwiseError(actual, expected);
  expect(error, `${what} component ${worst}: ${actual[worst]} vs ${expected[worst]}`).toBeLessThanOrEqual(tolerance);
}

/** Rosenbrock: sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2, as Vars (needs at least 2 inputs). */
export function rosenbrock(x: Var[]): Var {
  let sum = x[1]!.sub(x[0]!.square()).square().mul(100).add(x[0]!.neg().add(1).square());
  for (let i = 1; i + 1 < x.length; i++) sum = sum.add(x[i + 1]!.sub(x[i]!.square()).square().mul(100).add(x[i]!.neg().add(1).square()));
  return sum;
}

/** Operations straightCode records with (the Var of src or of dist alike). */
interface StraightOps<V> { add(y: V): V; sub(y: V): V; mul(y: V | number): V; tanh(): V }

/** A non-periodic function of `length` nodes: random ops on recent nodes, whose plan is much
 *  straight code (a compiled function waits for its replays to pay for generating it). */
export function straightCode<V extends StraightOps<V>>(length: number): (x: V[]) => V {
  return (x) => {
    const nodes: V[] = x.slice();
    let state = 5;
    const next = (): number => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pick = (): V => nodes[nodes.length - 1 - Math.floor(next() * Math.min(nodes.length, 50))]!;
    while (nodes.length < length) {
      const r = next(), a = pick(), b = pick();
      nodes.push(r < 0.3 ? a.add(b).mul(0.5) : r < 0.55 ? a.mul(b) : r < 0.8 ? a.sub(b) : r < 0.9 ? a.tanh() : a.mul(next() - 0.5));
    }
    return nodes.slice(-8).reduce((s, v) => s.add(v));
  };
}

/** Runs `body` with synchronous wasm compiles counted: `compiled()` gives how many so far. */
export function countingCompiles(body: (compiled: () => number) => void): void {
  const Original = WebAssembly.Module;
  let compiled = 0;
  (WebAssembly as { Module: typeof WebAssembly.Module }).Module = function (this: unknown, bytes: BufferSource) {
    compiled++;
    return new Original(bytes);
  } as unknown as typeof WebAssembly.Module;
  try {
    body(() => compiled);
  } finally {
    (WebAssembly as { Module: typeof WebAssembly.Module }).Module = Original;
  }
}

/** The straight segments of a plan cut at a known loop body (plan.ts: KNOWN_BODIES): those of the
 *  period of one of its loops. */
export function knownBodyCuts(segments: readonly { period: number; count: number }[]): { period: number; count: number }[] {
  const loopPeriods = new Set(segments.filter((s) => s.count > 1).map((s) => s.period));
  return segments.filter((s) => s.count === 1 && loopPeriods.has(s.period));
}
