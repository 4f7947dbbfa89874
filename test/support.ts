// Shared by the test files: both backends, and tape construction.
import { createTape, type BackendKind, type Tape, type TapeOptions } from '../src/index.ts';

export const BACKENDS: readonly BackendKind[] = ['wasm', 'js'];

export function tapeOn(backend: BackendKind, options: TapeOptions = {}): Promise<Tape> {
  return createTape({ ...options, backend });
}
