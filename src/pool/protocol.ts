// What the pool's main thread and its workers say to each other. Rows travel as views of shared
// memory: a task names its range of rows and writes its results in place.
import {
  BranchChangedError, CapacityError, FormatError, ForeignHandleError, InvalidHandleError, MissingRuleError, NonFiniteError,
  NotANumberError, ShapeError, StaleHandleError, TapegradError,
} from '../errors.ts';
import type { GeneratedSweeps, ShippedSweeps } from '../wasm/backend.ts';
import type { TapeLimits } from '../tape.ts';

export type BatchMethod = 'gradientBatch' | 'valueAndGradientBatch' | 'vjpBatch' | 'jvpBatch' | 'hvpBatch';

/** A compiled function as the workers receive it: its bytes and, on the wasm backend, the
 *  generated sweeps the main thread compiled for it. */
export interface Registration {
  id: number;
  bytes: Uint8Array;
  sweeps: ShippedSweeps | null;
  checkNaN: boolean;
  /** The loaded tape's limits (register's maxNodes and maxMemoryBytes). */
  limits: TapeLimits;
}

export interface WorkerData {
  backend: 'wasm' | 'js';
  module: WebAssembly.Module | null;
}

export type Task =
  | { kind: 'register'; registration: Registration; failed: readonly number[] }
  | {
    kind: 'run';
    id: number;
    /** Sent again when the worker answered `missing` (it started after the registration). */
    registration: Registration | null;
    method: BatchMethod;
    from: number;
    to: number;
    /** The caller's row of row 0 of these arrays (a large call runs in pieces), for errors. */
    firstRow: number;
    X: Float64Array;
    /** Directions (jvp, hvp) or cotangents (vjp), row-major. */
    D: Float64Array | null;
    out: Float64Array;
    values: Float64Array | null;
    /** Registrations that failed, which the worker drops if it loaded them. */
    failed: readonly number[];
  };

export type Reply = { ok: true; ms: number; generatedSweeps?: GeneratedSweeps | undefined } | { missing: true } | { error: SerializedError };

export interface SerializedError {
  name: string;
  code: TapegradError['code'] | null;
  message: string;
  /** The subclass's own fields (limit, node, op, shapes, functionName, rule). */
  fields: Record<string, unknown>;
}

const FIELDS = ['limit', 'node', 'op', 'shapes', 'functionName', 'rule'] as const;

export function serializeError(error: unknown): SerializedError {
  if (error instanceof TapegradError) {
    const fields: Record<string, unknown> = {};
    for (const key of FIELDS) if (key in error) fields[key] = (error as unknown as Record<string, unknown>)[key];
    return { name: error.name, code: error.code, message: error.message, fields };
  }
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, code: null, message: e.message, fields: {} };
}

/** The error a worker threw, as the same class the single-threaded call would have thrown. */
export function reviveError(s: SerializedError): Error {
  const f = s.fields as Record<string, never>;
  switch (s.name) {
    case 'StaleHandleError': return new StaleHandleError(s.message);
    case 'ForeignHandleError': return new ForeignHandleError(s.message);
    case 'InvalidHandleError': return new InvalidHandleError(s.message);
    case 'NotANumberError': return new NotANumberError(s.message);
    case 'CapacityError': return new CapacityError(s.message, f.limit);
    case 'BranchChangedError': return new BranchChangedError(s.message, f.node);
    case 'FormatError': return new FormatError(s.message);
    case 'NonFiniteError': return new NonFiniteError(s.message, f.node, f.op);
    case 'MissingRuleError': return new MissingRuleError(s.message, f.functionName, f.rule);
    case 'ShapeError': return new ShapeError(s.message, f.op, f.shapes);
  }
  if (s.code) return new TapegradError(s.code, s.message);
  const error = new Error(s.message);
  error.name = s.name;
  return error;
}
