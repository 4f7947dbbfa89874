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
