import type { GradcheckResult } from './check.ts';

/** What `code` of a TapegradError can be; each subclass has one (`StaleHandleError`'s is
 *  `'STALE_HANDLE'`), so `instanceof` narrows it. */
export type TapegradErrorCode = 'STALE_HANDLE' | 'FOREIGN_HANDLE' | 'INVALID_HANDLE' | 'NOT_A_NUMBER' | 'CAPACITY' | 'NO_GRADIENT' | 'CORE_TRAP' | 'INVALID_ARGUMENT' | 'BRANCH_CHANGED' | 'INVALID_FORMAT' | 'NON_FINITE' | 'SHAPE' | 'WORKER_EXIT' | 'GRADCHECK_FAILED';

/** Every error tapegrad throws on purpose. `code` tells the kind; the tape stays usable. */
export class TapegradError extends Error {
  constructor(
    readonly code: TapegradErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    // Each class names itself: new.target.name is whatever a minifier renamed the class to.
    this.name = 'TapegradError';
  }
}

/** A Var or handle recorded before the last `reset()` of its tape. */
export class StaleHandleError extends TapegradError {
  declare readonly code: 'STALE_HANDLE';
  constructor(message: string) { super('STALE_HANDLE', message); this.name = 'StaleHandleError'; }
}

/** A Var recorded on a different tape. */
export class ForeignHandleError extends TapegradError {
  declare readonly code: 'FOREIGN_HANDLE';
  constructor(message: string) { super('FOREIGN_HANDLE', message); this.name = 'ForeignHandleError'; }
}

/** A handle that is not one of this tape's nodes (not an integer, or never recorded). */
export class InvalidHandleError extends TapegradError {
  declare readonly code: 'INVALID_HANDLE';
  constructor(message: string) { super('INVALID_HANDLE', message); this.name = 'InvalidHandleError'; }
}

/** Something other than a number (or a Var) where one is expected. NaN and Infinity are numbers. */
export class NotANumberError extends TapegradError {
  declare readonly code: 'NOT_A_NUMBER';
  constructor(message: string) { super('NOT_A_NUMBER', message); this.name = 'NotANumberError'; }
}

/** The tape would exceed `maxNodes`, `maxMemoryBytes` or the memory the runtime gives it.
 *  Nothing was recorded; `reset()` frees the tape for the next graph. */
export class CapacityError extends TapegradError {
  declare readonly code: 'CAPACITY';
  constructor(
    message: string,
    /** The bound the message names: `maxNodes` (nodes) or `maxMemoryBytes` (bytes) where one of
     *  those binds, or what a tape holds at most (147957689 nodes for `expectedNodes`, 2^31 - 8
     *  elements); where the runtime refused memory, what was asked of it (bytes or numbers, as the
     *  message says) or the capacity the tape could not grow past, and 0 for a WebAssembly.Memory
     *  it would not create. */
    readonly limit: number,
  ) {
    super('CAPACITY', message);
    this.name = 'CapacityError';
  }
}

/** @internal Makes the named own fields of `target` read-only at run time too: TypeScript's
 *  `readonly` is the types' alone, and a probe's `tape.maxNodes = 'x'` changed the limit the tape
 *  enforced and broke every later recording (an assignment now throws a TypeError in strict code
 *  and changes nothing in sloppy code). */
export function lockFields<T extends object>(target: T, names: readonly (keyof T & string)[]): void {
  for (const name of names) Object.defineProperty(target, name, { writable: false });
}

/** @internal A new Float64Array of `length`, or a CapacityError naming `what` where the runtime
 *  refuses it (a batch of 2^31 rows threw a raw RangeError: a probe). */
export function newFloat64(length: number, what: string): Float64Array {
  try {
    return new Float64Array(length);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new CapacityError(`${what}: ${length} numbers (${8 * length} bytes) are more than the runtime allocates`, 8 * length);
  }
}

/** @internal An output array long enough for `needed` numbers; `where` names the call and the
 *  argument ("gradientBatch: out"), as a call may take two (out and values). */
export function checkOut(out: Float64Array | Int32Array, needed: number, where: string, type: typeof Float64Array | typeof Int32Array = Float64Array): void {
  // This realm's arrays first: the kind test below calls two native getters (the tag's and the
  // type's name), which a batch of per-row calls paid on every row (a fifth of jvpBatch's JS).
  // The length its buffer holds, not its `length` property: one of its own made calls write
  // fewer results than they returned, or a raw RangeError (a review).
  // (isView: a Proxy passes instanceof, but the getter takes only the array itself.)
  if (out instanceof type && ArrayBuffer.isView(out) && typedLength(out) >= needed) return;
  // By its kind, not instanceof: an array of another realm (a vm context) was refused with a
  // message calling it one (a probe).
  const right = typedArrayKind(out) === type.name;
  if (!right || typedLength(out) < needed) {
    if (right && unreadableView(out)) throw unreadableError(where);
    const got = right ? ` of length ${typedLength(out)}` : out == null ? ' (leave it out for a new array)' : '';
    throw new TapegradError('INVALID_ARGUMENT', `${where} must be ${type === Int32Array ? 'an' : 'a'} ${type.name} of at least ${counted(needed, 'number')}, got ${describe(out)}${got}`);
  }
}

const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag)!.get!;

/** @internal The kind of a typed array of any realm ('Float64Array', 'Uint8Array'…; a Node Buffer
 *  is a Uint8Array), or undefined for anything else. */
export function typedArrayKind(x: unknown): string | undefined {
  return ArrayBuffer.isView(x) ? (typedArrayTag.call(x) as string | undefined) : undefined;
}

/** @internal What a function returned that is no output: an async function's Promise is named as
 *  such, and its rejection (a stale Var once the transform has reset its tape) is caught here, or
 *  it ended the process as an unhandled rejection after the caller had caught this error (a probe). */
export function notAnOutput(value: unknown): string {
  const then = (value as { then?: unknown } | null)?.then;
  if (typeof then !== 'function') return describe(value);
  (then as (ok: unknown, fail: () => void) => unknown).call(value, undefined, () => {});
  return `a Promise: an async function cannot be differentiated (its operations run after the call returns); make it synchronous`;
}

// %TypedArray%.prototype.at, which validates its receiver as every typed-array method does and
// reads nothing from an empty one.
const typedArrayAt = (Object.getPrototypeOf(Uint8Array.prototype) as { at?: (this: unknown, k: number) => unknown }).at;

// %TypedArray%.prototype.length's getter: an own `length` property cannot answer for it.
const typedArrayLengthGetter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'length')!.get!;

/** @internal A typed array's element count as its buffer holds it now (0 where detached or out of
 *  bounds), whatever `length` property it was given of its own (a review's Float64Array of 3
 *  claiming 5 took an earlier recording's values as its last 2). */
export function typedLength(x: ArrayBufferView): number {
  return typedArrayLengthGetter.call(x) as number;
}

/** @internal Whether a typed array's `length` property says another count than its buffer
 *  holds (one of its own, or a getter of a subclass): copies and views of it take what it holds,
 *  and calls that went by the property read past its end (the engines disagreed: a review) or
 *  recorded fewer inputs than were checked (another). Any realm's typed arrays (typedArrayKind),
 *  not DataViews. */
export function disagrees(x: ArrayLike<unknown>): boolean {
  return typedArrayKind(x) !== undefined && typedLength(x as unknown as ArrayBufferView) !== x.length;
}

/** @internal Refuses a typed array that holds other than the `said` entries its `length` said
 *  (read before code that ran since, a getter, could detach or shrink its buffer; or its own
 *  property: see disagrees), as INVALID_ARGUMENT named by `what`. */
export function checkHeld(x: ArrayBufferView, said: number, what: string): void {
  const held = typedLength(x);
  if (held === said) return;
  throw held === 0 && unreadableView(x) ? unreadableError(what) : new TapegradError('INVALID_ARGUMENT', `${what}: the array holds ${held} entries, not the ${said} its length said (its buffer changed while the call read it, or it was given a length of its own)`);
}

/** @internal A typed array that reads as empty because its buffer is gone: detached (transferred
 *  to a worker) or out of bounds (a fixed view over a resizable buffer shrunk under it). Copying
 *  from one is V8's raw TypeError (a worker_threads probe); a typed-array method called on it
 *  fails the same way, and only such an empty view is tried. */
export function unreadableView(x: unknown): boolean {
  if (typedArrayKind(x) === undefined || (x as ArrayBufferView).byteLength !== 0 || typedArrayAt === undefined) return false;
  try {
    typedArrayAt.call(x, 0);
    return false;
  } catch {
    return true;
  }
}

/** @internal An argument a method does not take (NumPy's axis, step, order, second index): it was
 *  ignored, silently (a NumPy user's probe). The value given is named, with the likeliest source
 *  where nobody wrote one: an Array method's callback passing the element's index (a review). */
export function extraArgument(message: string, value: unknown): TapegradError {
  return new TapegradError('INVALID_ARGUMENT', `${message}; got ${describe(value)} there (map, forEach and the other Array methods pass their callback the element's index too: call it from a function of your own, (x) => …)`);
}

/** @internal select's condition given as a boolean: a JavaScript comparison of Vars (x > 0)
 *  compares their values, off the tape (JAX's where takes one; a new-user probe read "expected a
 *  Var or a number, got boolean true"). */
export function booleanCondition(cond: boolean): NotANumberError {
  return new NotANumberError(`select: the condition is boolean ${cond}, as a JavaScript comparison such as x > 0 gives, which compares values off the tape: record it with x.gt(0), or choose the branch with ?:`);
}

/** @internal The error for an array `unreadableView` refuses, named by `what`. */
export function unreadableError(what: string): TapegradError {
  return new TapegradError('INVALID_ARGUMENT', `${what}: the array's buffer is detached or out of bounds (transferred to a worker, or a resizable buffer shrunk under it); pass an array whose buffer is still here`);
}

/** @internal A batch's `out` and `values` over rows of the same memory: refused, as each call
 *  writes them in its own order (a probe: the pool's results differed from one thread's). */
export function checkApart(out: Float64Array, outLength: number, values: Float64Array | undefined, valuesLength: number, where: string): void {
  if (values !== undefined && overlaps(out.subarray(0, outLength), values.subarray(0, valuesLength))) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: out and values share memory; give them arrays apart`);
  }
}

/** @internal Whether two arrays share memory, as far as their buffer objects tell (see
 *  mayOverlap): a batch's `out` and `values` over the same rows are refused by it. */
export function overlaps(p: unknown, q: unknown): boolean {
  if (!ArrayBuffer.isView(p) || !ArrayBuffer.isView(q) || p.buffer !== q.buffer) return false;
  return p.byteOffset < q.byteOffset + q.byteLength && q.byteOffset < p.byteOffset + p.byteLength;
}

const SharedBuffer: (new (n: number) => ArrayBufferLike) | undefined = (globalThis as { SharedArrayBuffer?: new (n: number) => ArrayBufferLike }).SharedArrayBuffer;

// SharedArrayBuffers this library made new (sharedFloat64): two of them are two memories, and
// only a clone, which is an object of its own, can be over one of theirs.
const madeHere = new WeakSet<object>();

/** @internal A SharedArrayBuffer just made, whose memory no other buffer object is over yet. */
export function madeShared<B extends ArrayBufferLike>(buffer: B): B {
  madeHere.add(buffer);
  return buffer;
}

/** @internal Whether an output may be written over rows it has still to read (the JS engine's
 *  gradients and every engine's vjp rows read them row by row), so the rows are copied first:
 *  `overlaps`, or both over SharedArrayBuffers that are different objects. One shared memory
 *  comes as objects of its own when posted twice, structuredClone'd, or viewed across a shared
 *  WebAssembly.Memory's grow, and JavaScript cannot tell those from two memories (a probe's rows
 *  were computed from the gradients written over them: NaN, silently); two that sharedFloat64
 *  made are two memories. */
export function mayOverlap(p: unknown, q: unknown): boolean {
  if (!ArrayBuffer.isView(p) || !ArrayBuffer.isView(q)) return false;
  if (p.buffer === q.buffer) return overlaps(p, q);
  return SharedBuffer !== undefined && p.byteLength > 0 && q.byteLength > 0 && p.buffer instanceof SharedBuffer && q.buffer instanceof SharedBuffer &&
    !(madeHere.has(p.buffer) && madeHere.has(q.buffer));
}

/** @internal `n noun`, the noun in the plural unless n is 1 ("1 node", "2 nodes"). */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name: string = value.constructor?.name ?? 'Object';
    // A Proxy of a typed array passes its constructor through but is no typed array (a probe got
    // "needs a Uint8Array, got an object (Uint8Array)").
    return /^(Big)?(Int|Uint|Float)\d+(Clamped)?Array$/.test(name) && !ArrayBuffer.isView(value) ? `an object posing as ${name.startsWith('Int') ? 'an' : 'a'} ${name} (a Proxy?), not one` : `an object (${name})`;
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 20 ? value.slice(0, 20) + '…' : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** `gradcheck(f, x, { raise: true })` found the derivatives off; `result` is what it would have
 *  returned (the worst input, both gradients, every error). */
export class GradcheckError extends TapegradError {
  declare readonly code: 'GRADCHECK_FAILED';
  constructor(message: string, readonly result: GradcheckResult) { super('GRADCHECK_FAILED', message); this.name = 'GradcheckError'; }
}

/** A custom function lacks the rule a sweep needs (jvp, or vjpTangent for second order). */
export class MissingRuleError extends TapegradError {
  declare readonly code: 'INVALID_ARGUMENT';
  constructor(message: string, readonly functionName: string, readonly rule: 'jvp' | 'vjpTangent') {
    super('INVALID_ARGUMENT', message);
    this.name = 'MissingRuleError';
  }
}

/** A compiled function in strict mode was replayed at inputs where a comparison it recorded
 *  comes out the other way. */
export class BranchChangedError extends TapegradError {
  declare readonly code: 'BRANCH_CHANGED';
  constructor(message: string, readonly node: number) { super('BRANCH_CHANGED', message); this.name = 'BranchChangedError'; }
}

/** Bytes given to `fromBytes` are not a tape this version can load (truncated, corrupted, wrong
 *  version, or structurally invalid). */
export class FormatError extends TapegradError {
  declare readonly code: 'INVALID_FORMAT';
  constructor(message: string) { super('INVALID_FORMAT', message); this.name = 'FormatError'; }
}

/** checkNaN mode: an op produced NaN or ±Infinity (or an adjoint or a tangent became one). */
export class NonFiniteError extends TapegradError {
  declare readonly code: 'NON_FINITE';
  constructor(message: string, readonly node: number, readonly op: string) { super('NON_FINITE', message); this.name = 'NonFiniteError'; }
}

/** Operands whose shapes do not fit the op (lengths, broadcasting, matrix dimensions), or a
 *  vector where a scalar is needed. Names the op and the shapes; nothing was recorded. */
export class ShapeError extends TapegradError {
  declare readonly code: 'SHAPE';
  constructor(message: string, readonly op: string, readonly shapes: readonly (readonly number[])[]) {
    super('SHAPE', message);
    this.name = 'ShapeError';
  }
}

/** An array or typed array of (supposedly) numbers: an object with a length. A string has a
 *  length too, and is not one. */
export function isArrayLike(value: unknown): value is ArrayLike<number> {
  return countOf(value) >= 0;
}

/** @internal The length of an array-like that `isArrayLike` accepts, read once, or -1: a caller
 *  that reads it again may get another (a Proxy's: a review's Vec of shape [3] over 4 elements). */
export function countOf(value: unknown): number {
  if (value == null || typeof value !== 'object' || VEC_BRAND in value) return -1;
  // A length that is no count ({ length: -1 }, -0.5) recorded a negative number of inputs, and a
  // fractional one left the handle range fractional for the tape's life (a probe).
  const length = (value as ArrayLike<number>).length;
  return typeof length === 'number' && length >= 0 && Number.isSafeInteger(length) ? length : -1;
}

/** @internal On Vec's prototype: a Vec has a length, but is no array of numbers (a probe: one
 *  passed as an array read as entries all undefined). */
export const VEC_BRAND: unique symbol = Symbol('Vec');
