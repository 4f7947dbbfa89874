// Shared by the test files: both backends, and tape construction.
import { expect } from 'vitest';
import { createTape, normwiseError, type BackendKind, type Tape, type TapeOptions } from '../src/index.ts';

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
