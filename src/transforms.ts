// Function transforms in the style of JAX: each records the user's function on a tape and runs
// sweeps over it (reverse for gradients and VJPs, tangent for JVPs, tangent + reverse for
// Hessian-vector products). Nothing here uses finite differences.
import type { BackendChoice, BackendKind } from './backend.ts';
import { createTapeSync, resolveBackend } from './create.ts';
import { CapacityError, ForeignHandleError, MissingRuleError, NotANumberError, ShapeError, TapegradError, describe, isArrayLike, notAnOutput, unreadableError, unreadableView } from './errors.ts';
import { Var, type Tape } from './tape.ts';
import { Vec } from './vector.ts';
import { BACKEND_RULE, readOptions } from './options.ts';

/** A number for a scalar input (the function then gets one Var), or an array / Float64Array
 *  (the function gets a Var[] of the same length). */
export type Input = number | ArrayLike<number>;
/** What a differentiated function returns: a Var (or a number, taken as a constant). */
export type ScalarOutput = Var | number;
/** A vector output: an array of Vars (or numbers), or a Vec (its elements, row-major). */
export type VectorOutput = readonly (Var | number)[] | Vec;

/** f in any of the three forms, for options whose `vector` is only known at run time. */
type AnyInputFunction<O> = ((x: Var) => O) | ((x: Var[]) => O) | ((x: Vec) => O);

/** Options whose `vector` is only known at run time (a `boolean`, or a variable of an
 *  options type): what the overloads taking f in any form accept. A literal `vector` (or none)
 *  picks the overload of its form, so f of the other form is a type error there. Keys that `B`
 *  (the call's options type) does not have are errors here too, as in an options literal. */
export type RuntimeVector<O extends { vector?: boolean | undefined }, B = O> = 'vector' extends keyof O
  ? (boolean extends O['vector'] ? O & { [K in Exclude<keyof O, keyof B>]: never } : never) : never;

/** Options of the transforms (`grad`, `valueAndGrad`, `vjp`, `jvp`, `hvp`, `hessian`; `jacobian`
 *  takes JacobianOptions). */
export interface TransformOptions {
  /** Engine to record on (default 'wasm'; call `await init()` once first), see BackendChoice. */
  backend?: BackendChoice | undefined;
  /** Pass an array input to f as one Vec (one node, vector ops) instead of a Var[]. */
  vector?: boolean | undefined;
}

/** Options of `jacobian`: the transforms' options and the sweeps' direction. */
export interface JacobianOptions extends TransformOptions {
  /** 'auto' (default): forward sweeps when inputs <= outputs, else reverse sweeps. */
  mode?: 'auto' | 'forward' | 'reverse' | undefined;
}

/** A dense matrix, row-major. */
export interface Matrix {
  /** The entries, row-major: entry (i, j) at `i * cols + j`. */
  data: Float64Array;
  /** [rows, cols]. */
  shape: [rows: number, cols: number];
}

/** What `jacobian` returns: the Jacobian (rows = outputs, cols = inputs), and the sweeps that
 *  computed it. */
export interface JacobianResult extends Matrix {
  /** Which sweeps computed it: 'forward' (tangent sweeps) or 'reverse'. */
  mode: 'forward' | 'reverse';
  /** How many sweeps ran: one per column (input) forward, one per row (output) reverse. */
  sweeps: number;
}

// Tapes are pooled per backend so repeated calls reuse their memory; a call takes a tape out of
// the pool while it runs, so a function that itself calls a transform gets a tape of its own.
// The pool keeps what repeated calls reuse, not the peak of a rare large call nor a tape per level
// of nesting: one grad of an 8 M-op function kept 400 MB, and 50 nested ones 2 GB, for the rest
// of the process (a new-user probe). A tape past either bound is left to the garbage collector.
const pools: Record<BackendKind, Tape[]> = { wasm: [], js: [] };
/** @internal Tapes a backend's pool keeps, the most memory each may hold, and how long a larger
 *  tape is held after the last call that recorded past `bytes` (see `held`). */
export const transformPool = { tapes: 4, bytes: 64 * 2 ** 20, holdMs: 1000 };
// Tapes of each backend that calls hold now. Past the pool's count a call's tape is a small one
// (the default tape's 32 MiB cost a wasm call about 1.2 ms, and transforms nested five deep ran
// 2.3 ms a call against 17 µs four deep: a probe), kept in a pool of its own while it stays
// small: deeper nesting costs a few MiB a level, and nothing for a tape that grew.
const inUse: Record<BackendKind, number> = { wasm: 0, js: 0 };
// A tape past the pool's bytes, kept weakly (one per backend): repeated calls of a large function
// reuse it until the garbage collector takes it (a loop's calls, one job, always do), where each
// made a 32 MiB tape and grew it to the function's size (3 M nodes: 116 ms a call against 48 on
// a tape kept, a probe); the memory is not held for the rest of the process.
const large: Record<BackendKind, WeakRef<Tape> | undefined> = { wasm: undefined, js: undefined };
// Whether the last call on each backend recorded past the pool's bytes: only then does the next
// call take the large tape first. A small call after it takes a pooled tape and leaves the large
// one alone, kept weakly, so that its memory goes at the next major collection: every small call
// took it first, holding it through the call's job, and a service's steady small calls kept a 3
// M-node function's 103 MB for good (a soak probe).
const largeWanted: Record<BackendKind, boolean> = { wasm: false, js: false };
// Before it is kept weakly, the large tape is held for transformPool.holdMs after the last call
// that recorded past the pool's bytes, and every call takes it first meanwhile. A WeakRef's
// target stays alive to the end of the job that made or read it: a loop alternating a large call
// with a small one (a training step and a regularizer's grad) made a new large tape at each large
// call, after a small one, and kept them all to the loop's end (a probe: 105 MB a step, on both
// engines). No WeakRef is made while the tape is held (a timer cannot fire inside a loop), and
// a tape replaced meanwhile goes to the collector.
const held: Record<BackendKind, Tape | undefined> = { wasm: undefined, js: undefined };
const holdTimers: Record<BackendKind, ReturnType<typeof setTimeout> | undefined> = { wasm: undefined, js: undefined };

function keepLarge(kind: BackendKind, tape: Tape, recordedLarge: boolean): void {
  if (recordedLarge) {
    if (holdTimers[kind] !== undefined) clearTimeout(holdTimers[kind]);
    const timer = setTimeout(() => {
      holdTimers[kind] = undefined;
      const tape = held[kind];
      held[kind] = undefined;
      if (tape !== undefined) large[kind] = new WeakRef(tape);
    }, transformPool.holdMs);
    // A Node process does not wait for it to end.
    (timer as { unref?: () => void }).unref?.();
    holdTimers[kind] = timer;
  }
  if (holdTimers[kind] !== undefined) held[kind] = tape;
  else large[kind] = new WeakRef(tape);
}

/** @internal The large tape a backend holds now (see `held`; for tests). */
export function heldLargeTape(kind: BackendKind): Tape | undefined {
  return held[kind];
}
const smallPools: Record<BackendKind, Tape[]> = { wasm: [], js: [] };
/** @internal The small tapes' pool: how many, the nodes each is made for, the most memory it may
 *  hold to be kept. */
export const smallTapePool = { tapes: 16, nodes: 1024, bytes: 8 * 2 ** 20 };

/** @internal The large tape a backend holds or keeps weakly, if the collector left it (for tests). */
export function keptLargeTape(kind: BackendKind): Tape | undefined {
  return held[kind] ?? large[kind]?.deref();
}

/** @internal The tapes a backend's pool holds now, or its small tapes' pool (for tests). */
export function pooledTapes(kind: BackendKind, small = false): readonly Tape[] {
  return (small ? smallPools : pools)[kind];
}

const TRANSFORM_OPTIONS = { backend: BACKEND_RULE, vector: 'boolean' } as const;

/** @internal Runs `body` on a pooled tape of the backend the options choose. */
export function withTape<T>(options: TransformOptions | undefined, body: (tape: Tape) => T): T {
  const kind = resolveBackend(options?.backend);
  const known = Object.hasOwn(pools, kind);
  // The large tape first, if the collector left it: its memory is there already, and a pooled
  // one would grow again under the next large call.
  let pooled = known ? held[kind] ?? (largeWanted[kind] ? large[kind]?.deref() : undefined) : undefined;
  if (pooled !== undefined) {
    held[kind] = undefined;
    large[kind] = undefined;
  }
  pooled ??= known ? pools[kind].pop() : undefined;
  const small = pooled === undefined && known && inUse[kind] >= transformPool.tapes;
  // 'auto' made where the runtime gives no more WebAssembly memories (a browser's cap) is a JS
  // tape, as createTape's (a browser probe: a CapacityError advising 'auto'), pooled as one.
  const tape = pooled ?? (small ? smallPools[kind].pop() : undefined)
    ?? createTapeSync({ backend: options?.backend === 'auto' ? 'auto' : kind, ...(small ? { expectedNodes: smallTapePool.nodes } : {}) });
  const backend = tape.backend;
  tape.staleWhy = ' (a transform resets its tape after each call: it is from an earlier call of a transform or gradcheck)';
  inUse[backend]++;
  let startBytes = 0;
  try {
    tape.reset();
    startBytes = tape.memoryBytes;
    return body(tape);
  } finally {
    inUse[backend]--;
    // Large: the call grew its tape past the pool's bytes, or recorded more than half of them on a
    // tape already past them (capacities double, so such a recording may grow a pooled tape past
    // them). By its recording alone, calls of 37-61 MiB that grew their tape to 64.1 MiB were
    // neither pooled nor held, and each made and grew a new tape (a probe: 3-8x a kept tape).
    const end = tape.memoryBytes, bound = transformPool.bytes;
    const recordedLarge = end > bound && (startBytes <= bound || tape.recordedBytes > bound / 2);
    largeWanted[backend] = recordedLarge;
    tape.reset();
    if (!small) {
      if (end > bound) keepLarge(backend, tape, recordedLarge);
      else if (pools[backend].length < transformPool.tapes) pools[backend].push(tape);
    } else if (smallPools[backend].length < smallTapePool.tapes && tape.memoryBytes <= smallTapePool.bytes) {
      smallPools[backend].push(tape);
    }
  }
}

interface Recorded<O> {
  inputs: (Var | Vec)[];
  /** Number of scalar inputs (a Vec counts its elements). */
  n: number;
  scalarInput: boolean;
  output: O;
}

/** @internal Records the inputs as the function will receive them: one Var for a number, a Var[]
 *  for an array, one Vec with `{ vector: true }`. */
export function recordOn(tape: Tape, x: Input, options: TransformOptions | undefined, where: string): { inputs: (Var | Vec)[]; n: number; arg: Var | Var[] | Vec; scalarInput: boolean } {
  if (typeof x === 'number') {
    // f takes a Vec: a lone number would reach it as a Var, which has no vector methods.
    if (options?.vector) throw new NotANumberError(`${where}: with { vector: true } the input must be an array of numbers (one Vec), got the number ${x}`);
    const v = tape.variable(x);
    return { inputs: [v], n: 1, arg: v, scalarInput: true };
  }
  if (!isArrayLike(x)) {
    throw new NotANumberError(`${where}: inputs must be a number, an array of numbers or a Float64Array, got ${describe(x)}${nestingHint(x)}`);
  }
  try {
    if (options?.vector) {
      const v = tape.vector(x);
      return { inputs: [v], n: x.length, arg: v, scalarInput: false };
    }
    const inputs = tape.variables(x);
    // f gets an array of its own: one it reordered or wrote into (x.reverse(), x[0] = ...) was the
    // list the gradient was taken for, and every transform answered for other inputs (a probe).
    return { inputs, n: inputs.length, arg: inputs.slice(), scalarInput: false };
  } catch (error) {
    // The tape's check names neither the transform nor the entry (a probe got "input entries
    // must be numbers"): named again here, on the error path only.
    if (error instanceof NotANumberError) {
      for (let k = 0; k < x.length; k++) {
        const v = x[k];
        if (typeof v !== 'number') throw new NotANumberError(`${where}: entry ${k} of the input must be a number, got ${describe(v)}${nestingHint(v)}`);
      }
    }
    if (error instanceof TapegradError && x.length === 0 && unreadableView(x)) throw unreadableError(`${where}: the input`);
    throw error;
  }
}

// A Var or Vec where a number is expected: most likely a transform called on another's Vars.
function nestingHint(x: unknown): string {
  return x instanceof Var || x instanceof Vec ? ' (transforms do not nest: for second derivatives use hvp or hessian)' : '';
}

/** @internal The function's output as a scalar Var (a number becomes a constant): output k of
 *  its array, or (k < 0) the output itself, named by the call `where` in errors. The names are
 *  made on the error paths only: made for every output, they were most of a vjp of a function of
 *  1,000 outputs (a probe: 454 against 255 µs). */
export function asVar(tape: Tape, y: unknown, where: string, k = -1): Var {
  if (y instanceof Var && y.tape === tape) {
    // A stale one named by the transform, not by the sweep it would reach (jacobian's said 'jvp:').
    tape.index(y, where);
    return y;
  }
  if (typeof y === 'number') return tape.constant(y);
  const what = k < 0 ? `${where}: the function` : `${where}: output ${k} of the function's array`;
  // (It read as an operand of another tape: a probe.)
  if (y instanceof Var) throw new ForeignHandleError(`${what} returned Var #${y.id} of another tape, not one computed from its inputs`);
  if (y instanceof Vec) throw new ShapeError(`${what} must return a scalar Var, got a Vec of shape [${y.shape.join(', ')}] (reduce it, e.g. .sum())`, 'output', [y.shape]);
  throw new NotANumberError(`${what} must return a Var or a number, got ${notAnOutput(y)}`);
}

/** @internal Transforms and checkers take a function first; anything else is named. */
export function checkFunction(f: unknown, where: string): void {
  if (typeof f !== 'function') throw new TapegradError('INVALID_ARGUMENT', `${where} needs a function as its first argument, got ${describe(f)}`);
}

/** @internal f at `arg`, recorded on `tape`; refused where f reset that tape, which forgets the
 *  inputs (a probe's grad then blamed a Var of an earlier transform call). */
export function callOn(tape: Tape, f: (x: never) => unknown, arg: unknown, where: string): unknown {
  const base = tape.base, y = (f as (x: unknown) => unknown)(arg);
  if (tape.base !== base) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: the function reset the tape it records on (tape.reset()), which forgets its inputs; record onto another tape, or return what it computes from the inputs`);
  }
  return y;
}

function recordScalar(tape: Tape, f: (x: never) => ScalarOutput, x: Input, options: TransformOptions | undefined, where: string): Recorded<Var> {
  const { inputs, n, arg, scalarInput } = recordOn(tape, x, options, where);
  return { inputs, n, scalarInput, output: scalarOutput(tape, callOn(tape, f, arg, where), where) };
}

/** @internal f's output where one scalar is needed (grad, hvp, gradcheck...): an array is
 *  INVALID_ARGUMENT alike in each (gradcheck called it NOT_A_NUMBER: a probe). */
export function scalarOutput(tape: Tape, y: unknown, where: string): Var {
  if (Array.isArray(y)) {
    // An array of one gets the fix spelled out (a new-user probe: compile takes [y] as one output).
    const one = y.length === 1 ? ': return the Var itself (y, not [y])' : ' (vjp, jvp and jacobian take several)';
    throw new TapegradError('INVALID_ARGUMENT', `${where}: the function returned an array of ${y.length}; ${where} needs one scalar output${one}`);
  }
  return asVar(tape, y, where);
}

function recordVector(tape: Tape, f: (x: never) => ScalarOutput | VectorOutput, x: Input, options: TransformOptions | undefined, where: string): Recorded<(Var | Vec)[]> & { m: number } {
  const { inputs, n, arg, scalarInput } = recordOn(tape, x, options, where);
  const y = callOn(tape, f, arg, where);
  if (y instanceof Vec) return { inputs, n, scalarInput, output: [y], m: y.size };
  if (Array.isArray(y)) {
    // Array.from, not map: map skips a sparse array's holes, which reached the sweep as undefined
    // and were refused there under its name (a probe: jacobian's said 'jvp:').
    const output = Array.from(y as unknown[], (v: unknown, k) => {
      if (v instanceof Vec) {
        throw new ShapeError(`${where}: output ${k} of the function's array is a Vec of shape [${v.shape.join(', ')}]; return the Vec on its own (its elements are the outputs), or an array of Vars and numbers`, 'output', [v.shape]);
      }
      return asVar(tape, v, where, k);
    });
    return { inputs, n, scalarInput, output, m: y.length };
  }
  // (Not "a Var or a number", which a function of several outputs read as all it may return: a probe.)
  if (!(y instanceof Var) && typeof y !== 'number') throw new NotANumberError(`${where}: the function must return a Var, a number, a Vec or an array of Vars and numbers, got ${notAnOutput(y)}`);
  return { inputs, n, scalarInput, output: [asVar(tape, y, where)], m: 1 };
}

function toVector(x: ArrayLike<number> | number, name: string): ArrayLike<number> {
  if (typeof x === 'number') return [x];
  if (!isArrayLike(x)) {
    throw new NotANumberError(`${name} must be a number or an array of numbers, got ${describe(x)}`);
  }
  return x;
}

/** Gradient of a scalar function: `grad(f)(2)` is a number when f takes one Var, `grad(f)([1, 2])`
 *  a Float64Array when f takes a Var[]. */
export function grad(f: (x: Var) => ScalarOutput, options?: TransformOptions & { vector?: false | undefined }): (x: number) => number;
export function grad(f: (x: Vec) => ScalarOutput, options: TransformOptions & { vector: true }): (x: ArrayLike<number>) => Float64Array;
export function grad(f: (x: Var[]) => ScalarOutput, options?: TransformOptions & { vector?: false | undefined }): (x: ArrayLike<number>) => Float64Array;
export function grad<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput>, options: (O & RuntimeVector<O, TransformOptions>) | undefined): (x: Input) => number | Float64Array;
export function grad(f: (x: never) => ScalarOutput, options?: TransformOptions): (x: never) => number | Float64Array {
  const vg = valueAndGradNamed(f, options, 'grad');
  return ((x: Input, ...more: unknown[]) => vg(x, ...more)[1]) as (x: never) => number | Float64Array;
}

/** `[f(x), grad f(x)]` from one recording and one reverse sweep. */
export function valueAndGrad(f: (x: Var) => ScalarOutput, options?: TransformOptions & { vector?: false | undefined }): (x: number) => [number, number];
export function valueAndGrad(f: (x: Vec) => ScalarOutput, options: TransformOptions & { vector: true }): (x: ArrayLike<number>) => [number, Float64Array];
export function valueAndGrad(f: (x: Var[]) => ScalarOutput, options?: TransformOptions & { vector?: false | undefined }): (x: ArrayLike<number>) => [number, Float64Array];
export function valueAndGrad<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput>, options: (O & RuntimeVector<O, TransformOptions>) | undefined): (x: Input) => [number, number | Float64Array];
export function valueAndGrad(f: (x: never) => ScalarOutput, options?: TransformOptions): (x: never) => [number, number | Float64Array] {
  return valueAndGradNamed(f, options, 'valueAndGrad') as (x: never) => [number, number | Float64Array];
}

// valueAndGrad, its errors naming the transform the caller called (grad's named valueAndGrad).
function valueAndGradNamed(f: (x: never) => ScalarOutput, given: TransformOptions | undefined, name: string): (x: Input, ...more: unknown[]) => [number, number | Float64Array] {
  checkFunction(f, name);
  const options = readOptions(given, name, TRANSFORM_OPTIONS);
  return (x: Input, ...more: unknown[]) =>
    withTape(options, (tape) => {
      // Options there were ignored without a word (a probe: grad(f)(x, { backend: 'js' })). Other
      // extra arguments pass, as points.map(grad(f)) gives an index and the array (a review).
      const second = more[0];
      if (second !== null && typeof second === 'object' && !isArrayLike(second)) {
        throw new TapegradError('INVALID_ARGUMENT', `${name}(f)(x) takes no options: pass them to ${name}(f, options)`);
      }
      const { inputs, scalarInput, output } = recordScalar(tape, f, x, options, name);
      const g = tape.gradient(output, inputs);
      return [output.value, scalarInput ? g[0]! : g];
    });
}

/** Vector-Jacobian product vᵀJ of f at x, for any cotangent v (one reverse sweep). */
export function vjp(f: (x: Var) => ScalarOutput | VectorOutput, x: number, v: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function vjp(f: (x: Vec) => ScalarOutput | VectorOutput, x: ArrayLike<number>, v: ArrayLike<number> | number, options: TransformOptions & { vector: true }): Float64Array;
export function vjp(f: (x: Var[]) => ScalarOutput | VectorOutput, x: ArrayLike<number>, v: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function vjp<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput | VectorOutput>, x: Input, v: ArrayLike<number> | number, options: (O & RuntimeVector<O, TransformOptions>) | undefined): Float64Array;
export function vjp(f: (x: never) => ScalarOutput | VectorOutput, x: Input, v: ArrayLike<number> | number, options?: TransformOptions): Float64Array {
  checkFunction(f, 'vjp');
  options = readOptions(options, 'vjp', TRANSFORM_OPTIONS);
  return withTape(options, (tape) => {
    const { inputs, output } = recordVector(tape, f, x, options, 'vjp');
    return tape.vjp(output, toVector(v, 'vjp: the cotangent'), inputs);
  });
}

/** Jacobian-vector product J·t of f at x (one forward tangent sweep over the tape). */
export function jvp(f: (x: Var) => ScalarOutput | VectorOutput, x: number, t: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function jvp(f: (x: Vec) => ScalarOutput | VectorOutput, x: ArrayLike<number>, t: ArrayLike<number> | number, options: TransformOptions & { vector: true }): Float64Array;
export function jvp(f: (x: Var[]) => ScalarOutput | VectorOutput, x: ArrayLike<number>, t: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function jvp<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput | VectorOutput>, x: Input, t: ArrayLike<number> | number, options: (O & RuntimeVector<O, TransformOptions>) | undefined): Float64Array;
export function jvp(f: (x: never) => ScalarOutput | VectorOutput, x: Input, t: ArrayLike<number> | number, options?: TransformOptions): Float64Array {
  checkFunction(f, 'jvp');
  options = readOptions(options, 'jvp', TRANSFORM_OPTIONS);
  return withTape(options, (tape) => {
    const { inputs, output } = recordVector(tape, f, x, options, 'jvp');
    return tape.jvp(inputs, toVector(t, 'jvp: the tangent'), output);
  });
}

/** The Jacobian of f at x, rows = outputs, by forward sweeps (one per input) when there are no
 *  more inputs than outputs, else by reverse sweeps (one per output); `mode` forces either. */
export function jacobian(f: (x: Var) => ScalarOutput | VectorOutput, x: number, options?: JacobianOptions & { vector?: false | undefined }): JacobianResult;
export function jacobian(f: (x: Vec) => ScalarOutput | VectorOutput, x: ArrayLike<number>, options: JacobianOptions & { vector: true }): JacobianResult;
export function jacobian(f: (x: Var[]) => ScalarOutput | VectorOutput, x: ArrayLike<number>, options?: JacobianOptions & { vector?: false | undefined }): JacobianResult;
export function jacobian<O extends JacobianOptions>(f: AnyInputFunction<ScalarOutput | VectorOutput>, x: Input, options: (O & RuntimeVector<O, JacobianOptions>) | undefined): JacobianResult;
export function jacobian(f: (x: never) => ScalarOutput | VectorOutput, x: Input, options: JacobianOptions = {}): JacobianResult {
  checkFunction(f, 'jacobian');
  options = readOptions(options, 'jacobian', { ...TRANSFORM_OPTIONS, mode: ['auto', 'forward', 'reverse'] });
  return withTape(options, (tape) => {
    const { inputs, output, n, m } = recordVector(tape, f, x, options, 'jacobian');
    let mode = options.mode === 'forward' || options.mode === 'reverse' ? options.mode : n <= m ? 'forward' : 'reverse';
    const data = matrixOf(m, n, 'jacobian');
    let unit = new Float64Array(mode === 'forward' ? n : m);
    if (mode === 'forward') {
      try {
        for (let k = 0; k < n; k++) {
          unit.fill(0);
          unit[k] = 1;
          const column = tape.jvp(inputs, unit, output);
          for (let j = 0; j < m; j++) data[j * n + k] = column[j]!;
        }
      } catch (error) {
        // The automatic choice takes reverse mode where a custom function has no jvp (a probe:
        // MissingRuleError where { mode: 'reverse' } worked); asked for by name, it throws.
        if (options.mode === 'forward' || !(error instanceof MissingRuleError) || error.rule !== 'jvp') throw error;
        mode = 'reverse';
        unit = new Float64Array(m);
      }
    }
    if (mode === 'reverse') {
      for (let j = 0; j < m; j++) {
        unit.fill(0);
        unit[j] = 1;
        data.set(tape.vjp(output, unit, inputs), j * n);
      }
    }
    return { data, shape: [m, n], mode, sweeps: mode === 'forward' ? n : m };
  });
}

/** Exact Hessian-vector product H·v of a scalar f at x, by forward over reverse: one tangent
 *  sweep and one reverse sweep, a small constant times the cost of a gradient. */
export function hvp(f: (x: Var) => ScalarOutput, x: number, v: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function hvp(f: (x: Vec) => ScalarOutput, x: ArrayLike<number>, v: ArrayLike<number> | number, options: TransformOptions & { vector: true }): Float64Array;
export function hvp(f: (x: Var[]) => ScalarOutput, x: ArrayLike<number>, v: ArrayLike<number> | number, options?: TransformOptions & { vector?: false | undefined }): Float64Array;
export function hvp<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput>, x: Input, v: ArrayLike<number> | number, options: (O & RuntimeVector<O, TransformOptions>) | undefined): Float64Array;
export function hvp(f: (x: never) => ScalarOutput, x: Input, v: ArrayLike<number> | number, options?: TransformOptions): Float64Array {
  checkFunction(f, 'hvp');
  options = readOptions(options, 'hvp', TRANSFORM_OPTIONS);
  return withTape(options, (tape) => {
    const { inputs, output } = recordScalar(tape, f, x, options, 'hvp');
    return tape.hvp(output, inputs, toVector(v, 'hvp: the direction'));
  });
}

/** The Hessian of a scalar f at x: n Hessian-vector products on one recording. */
export function hessian(f: (x: Var) => ScalarOutput, x: number, options?: TransformOptions & { vector?: false | undefined }): Matrix;
export function hessian(f: (x: Vec) => ScalarOutput, x: ArrayLike<number>, options: TransformOptions & { vector: true }): Matrix;
export function hessian(f: (x: Var[]) => ScalarOutput, x: ArrayLike<number>, options?: TransformOptions & { vector?: false | undefined }): Matrix;
export function hessian<O extends TransformOptions>(f: AnyInputFunction<ScalarOutput>, x: Input, options: (O & RuntimeVector<O, TransformOptions>) | undefined): Matrix;
export function hessian(f: (x: never) => ScalarOutput, x: Input, options?: TransformOptions): Matrix {
  checkFunction(f, 'hessian');
  options = readOptions(options, 'hessian', TRANSFORM_OPTIONS);
  // Its size is known before f runs: one too large for the runtime records nothing.
  const length = typeof x === 'number' ? 1 : (x as { length?: unknown })?.length;
  const early = typeof length === 'number' && length >= 0 && Number.isInteger(length) ? matrixOf(length, length, 'hessian') : null;
  return withTape(options, (tape) => {
    const { inputs, output, n } = recordScalar(tape, f, x, options, 'hessian');
    const data = early !== null && early.length === n * n ? early : matrixOf(n, n, 'hessian');
    const unit = new Float64Array(n);
    for (let k = 0; k < n; k++) {
      unit.fill(0);
      unit[k] = 1;
      const column = tape.hvp(output, inputs, unit);
      for (let i = 0; i < n; i++) data[i * n + k] = column[i]!;
    }
    return { data, shape: [n, n] };
  });
}

// A rows × cols result, or CapacityError where the runtime cannot allocate it (it threw a raw
// RangeError: a jacobian of 10^5 inputs and outputs is 10^10 numbers).
function matrixOf(rows: number, cols: number, name: string): Float64Array {
  try {
    return new Float64Array(rows * cols);
  } catch {
    throw new CapacityError(`${name}: a ${rows} × ${cols} result is more than the runtime allocates`, rows * cols);
  }
}
