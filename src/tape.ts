import type { Backend, BackendKind, CustomHandler } from './backend.ts';
import {
  CapacityError, ForeignHandleError, InvalidHandleError, NonFiniteError, NotANumberError, StaleHandleError,
  TapegradError, describe,
} from './errors.ts';
import { BINARY_OPS, OP_NAMES, Op, UNARY_OPS, type BinaryOpName, type UnaryOpName } from './ops.ts';

const { const: CONST, input: INPUT, arg: ARG, select: SELECT, pow: POW, powConst: POW_CONST, custom: CUSTOM } = Op;

// Handles are small integers (Smis in V8: no allocation per op). Each tape hands out a fresh
// range after every reset, so a handle from before the reset falls below the live range and is
// caught. Ranges restart at 0 once they near 2^30; a handle 2^30 nodes old could then alias.
// Tapes start at scattered offsets (golden-ratio hashing of a serial number), so a raw handle
// of another tape lands outside this tape's live range unless the two ranges happen to overlap
// (odds about live nodes / 8e8). Vars carry their tape and are always checked exactly.
const HANDLE_LIMIT = 2 ** 30;
const HANDLE_WRAP_AT = HANDLE_LIMIT - 2 ** 28;
const DEFAULT_MAX_NODES = 2 ** 28;
const TANGENT_BYTES = 16;
let tapeSerial = 0;

/** A Var or a plain number (recorded as a constant). */
export type Operand = Var | number;

export interface TapeLimits {
  /** Most nodes the tape may hold (default: as many as memory allows). */
  maxNodes?: number;
  /** Most bytes of tape storage (all per-node regions together). */
  maxMemoryBytes?: number;
  /** Throw NonFiniteError at the first NaN or ±Infinity an op produces (value or adjoint),
   *  naming the op and the node. Off by default: IEEE semantics, NaN propagates. */
  checkNaN?: boolean;
}

/**
 * A recording of scalar operations for reverse-mode differentiation. Create one with
 * `createTape()`. Record with `tape.variable(x)` and Var methods, differentiate with
 * `tape.backward(y)` or `tape.gradient(y, inputs)`, start over with `tape.reset()`.
 */
export class Tape {
  /** Handle-level API: numbers in, numbers out, no allocation per op. */
  readonly handles: HandleApi;
  readonly maxNodes: number;
  readonly maxMemoryBytes: number;
  /** Whether NaN/Infinity checks are on (`createTape({ checkNaN: true })`). */
  readonly checkNaN: boolean;
  /** @internal While compiling: the nodes whose values user code read (branch guards). */
  observed: Set<number> | null = null;

  // The tape state the façade owns; the backend owns the arrays.
  private count = 0;
  private evaluated = 0;
  private swept = -1;
  private base: number;
  private capacity = 0;
  private opV!: Uint8Array;
  private aV!: Int32Array;
  private bV!: Int32Array;
  private valV!: Float64Array;

  constructor(readonly engine: Backend, limits: TapeLimits = {}) {
    this.maxNodes = checkLimit(limits.maxNodes, 'maxNodes') ?? DEFAULT_MAX_NODES;
    this.maxMemoryBytes = checkLimit(limits.maxMemoryBytes, 'maxMemoryBytes') ?? Infinity;
    this.checkNaN = limits.checkNaN === true;
    // A trap replaced the engine's memory: what was recorded is gone, as after a reset.
    engine.onTrap = () => this.reset();
    this.base = Math.floor(((tapeSerial++ * 0.6180339887498949) % 1) * HANDLE_WRAP_AT);
    this.handles = new HandleApi(this);
    this.cacheViews();
  }

  /** 'wasm' or 'js'. */
  get backend(): BackendKind {
    return this.engine.kind;
  }

  /** Nodes recorded since the last reset. */
  get size(): number {
    return this.count;
  }

  /** Bytes of tape storage per node. */
  get nodeBytes(): number {
    return this.engine.nodeBytes();
  }

  /** Bytes the engine currently holds (wasm memory, or the JS typed arrays). */
  get memoryBytes(): number {
    return this.engine.memoryBytes();
  }

  /** Records an input with value `x`. */
  variable(x: number): Var {
    return new Var(this, this.leaf(INPUT, x));
  }

  /** Records several inputs at once. */
  variables(xs: ArrayLike<number>): Var[] {
    if (xs == null || typeof xs.length !== 'number') throw new NotANumberError(`expected an array of numbers, got ${describe(xs)}`);
    // All or nothing: check every value and make room before recording the first.
    for (let k = 0; k < xs.length; k++) checkNumber(xs[k], 'input');
    this.reserveNodes(xs.length);
    // Sized up front: growing the array by push copies it, and large input lists then cost
    // young-generation GC time on every recording.
    const out = new Array<Var>(xs.length);
    for (let k = 0; k < xs.length; k++) out[k] = this.variable(xs[k]!);
    return out;
  }

  /** Records a constant: it never receives gradient. */
  constant(c: number): Var {
    return new Var(this, this.leaf(CONST, c));
  }

  /** `cond ? ifTrue : ifFalse` per value (true unless 0 or NaN). The branch not taken gets
   *  exactly zero gradient, even where its value is NaN or Infinity. */
  select(cond: Operand, ifTrue: Operand, ifFalse: Operand): Var {
    const [c, t, f] = this.operandIds([cond, ifTrue, ifFalse], 2);
    return new Var(this, this.recordSelect(c!, t!, f!));
  }

  /** Reverse sweep from `output`, seeded with `seed` (default 1). Afterwards `v.grad` is
   *  d(seed * output)/dv for every Var of this tape. Running it twice gives identical adjoints. */
  backward(output: Var, seed = 1): void {
    this.backwardIndex(this.index(output), seed);
  }

  /** Runs `backward(output, seed)` and returns the gradients of `wrt`, in order. */
  gradient(output: Var, wrt: readonly Var[], seed = 1): Float64Array {
    const indices = wrt.map((v) => this.index(v));
    this.backwardIndex(this.index(output), seed);
    return this.gatherGradient(this.engine.views.adj, indices);
  }

  /** Vector-Jacobian product in one reverse sweep: the gradient of sum_j cotangent[j] *
   *  outputs[j] with respect to `wrt`. */
  vjp(outputs: readonly Var[], cotangent: ArrayLike<number>, wrt: readonly Var[]): Float64Array {
    const outs = outputs.map((v) => this.index(v));
    checkLength(cotangent, outs.length, 'cotangent', 'outputs');
    const indices = wrt.map((v) => this.index(v));
    this.evaluate();
    this.swept = -1;
    this.engine.clearAdjoints(this.count, false);
    const adj = this.engine.views.adj;
    let top = 0;
    for (let j = 0; j < outs.length; j++) {
      adj[outs[j]!] += checkNumber(cotangent[j], 'cotangent');
      top = Math.max(top, outs[j]!);
    }
    this.engine.sweepReverse(top);
    this.swept = this.count;
    if (this.checkNaN) this.assertFinite(0, top + 1, false);
    return this.gatherGradient(this.engine.views.adj, indices);
  }

  /** Jacobian-vector product in one forward (tangent) sweep over the recorded tape: the
   *  directional derivatives of `outputs` when `inputs` move along `tangent`. */
  jvp(inputs: readonly Var[], tangent: ArrayLike<number>, outputs: readonly Var[]): Float64Array {
    const outs = outputs.map((v) => this.index(v));
    this.seedTangents(inputs, tangent);
    return gather(this.engine.views.tan!, outs);
  }

  /** Hessian-vector product by forward over reverse: H·v of `seed * output` with respect to
   *  `inputs`, in one tangent sweep and one reverse sweep. Also leaves the gradient in `.grad`. */
  hvp(output: Var, inputs: readonly Var[], v: ArrayLike<number>, seed = 1): Float64Array {
    const out = this.index(output);
    const indices = this.seedTangents(inputs, v);
    this.swept = -1;
    this.engine.reverseTangent(out, checkNumber(seed, 'seed'), this.count);
    this.swept = this.count;
    if (this.checkNaN) this.assertFinite(0, out + 1, false);
    return this.gatherGradient(this.engine.views.tanAdj!, indices);
  }

  /** @internal The tangent array, allocating the tangent regions on first use. */
  ensureTangents(): Float64Array {
    if (!this.engine.views.tan) {
      const bytes = this.count * (this.engine.nodeBytes() + TANGENT_BYTES);
      if (bytes > this.maxMemoryBytes) {
        throw new CapacityError(
          `tape is full: tangents need ${this.engine.nodeBytes() + TANGENT_BYTES} bytes per node, ${bytes} for ${this.count} nodes, over maxMemoryBytes = ${this.maxMemoryBytes}`,
          this.maxMemoryBytes,
        );
      }
      const ok = this.engine.enableTangents(this.count);
      this.cacheViews();
      if (!ok) throw new CapacityError(`out of memory: no room for tangents of ${this.count} nodes`, this.capacity);
    }
    return this.engine.views.tan!;
  }

  private seedTangents(inputs: readonly Var[], tangent: ArrayLike<number>): number[] {
    const indices = inputs.map((v) => this.index(v));
    checkLength(tangent, indices.length, 'tangent', 'inputs');
    this.evaluate();
    const tan = this.ensureTangents();
    tan.fill(0, 0, this.count);
    // A constant listed as an input keeps tangent 0: constants are not differentiated.
    for (let k = 0; k < indices.length; k++) {
      const t = checkNumber(tangent[k], 'tangent');
      if (this.opV[indices[k]!] !== CONST) tan[indices[k]!] += t;
    }
    this.engine.tangent(0, this.count);
    return indices;
  }

  /** Forgets every node in O(1), keeping the memory for the next recording. Every Var and
   *  handle recorded before throws StaleHandleError from now on. */
  reset(): void {
    this.base += this.count;
    if (this.base >= HANDLE_WRAP_AT) this.base = 0;
    this.count = 0;
    this.evaluated = 0;
    this.swept = -1;
    // Compiled replay may have grown memory (scratch) since the views were cached.
    this.cacheViews();
  }

  // ---- internals shared by Var and HandleApi (not part of the public surface) ----

  /** @internal */
  index(v: Var): number {
    // Only a Var can hold this tape in `.tape` (the field is set by this module alone), so the
    // tape comparison doubles as the type check and instanceof stays on the error path.
    if (v != null && v.tape === this) {
      const i = v.id - this.base;
      if (i >= 0 && i < this.count) return i;
      if (v instanceof Var) throw new StaleHandleError(`Var #${v.id} was recorded before tape.reset(); record it again on the current tape`);
    }
    throw this.notAVar(v);
  }

  /** @internal */
  indexOfHandle(h: number): number {
    if (typeof h !== 'number') throw this.badHandle(h);
    const i = h - this.base;
    if (i >= 0 && i < this.count && (i | 0) === i) return i;
    throw this.badHandle(h);
  }

  /** @internal Index of a node for the operand: a Var's own, or a new constant's. */
  operandId(o: Operand): number {
    return typeof o === 'number' ? this.constantIndex(o) : this.index(o);
  }

  /** @internal Node indices for several operands, all or nothing: every operand is checked
   *  and room made for its constants and `extra` more nodes before anything is recorded. */
  operandIds(operands: readonly Operand[], extra: number): number[] {
    let constants = 0;
    for (const o of operands) {
      if (typeof o === 'number') constants++;
      else this.index(o);
    }
    this.reserveNodes(constants + extra);
    return operands.map((o) => this.operandId(o));
  }

  /** @internal */
  constantIndex(c: number): number {
    return this.leaf(CONST, c) - this.base;
  }

  /** @internal */
  leaf(op: number, x: number): number {
    if (typeof x !== 'number') throw new NotANumberError(`expected a number, got ${describe(x)}`);
    const n = this.count;
    if (n === this.capacity) this.grow();
    this.opV[n] = op;
    this.aV[n] = n;
    this.bV[n] = n;
    this.valV[n] = x;
    this.count = n + 1;
    if (this.evaluated === n) this.evaluated = n + 1;
    return n + this.base;
  }

  /** @internal */
  record(op: number, ia: number, ib: number): number {
    const n = this.count;
    if (n === this.capacity) this.grow();
    this.opV[n] = op;
    this.aV[n] = ia;
    this.bV[n] = ib;
    this.count = n + 1;
    return n + this.base;
  }

  /** @internal */
  recordUnary(op: number, x: Var): Var {
    const i = this.index(x);
    return new Var(this, this.record(op, i, i));
  }

  /** @internal */
  recordBinary(op: number, x: Var, y: Operand): Var {
    const i = this.index(x);
    let j: number;
    if (typeof y === 'number') {
      // Room for the constant and the op together, so a full tape records neither.
      this.reserveNodes(2);
      j = this.constantIndex(y);
      if (op === POW) op = POW_CONST;
    } else {
      j = this.index(y);
    }
    return new Var(this, this.record(op, i, j));
  }

  /** @internal Makes room for `k` more nodes now, so a multi-node record fails before it starts. */
  reserveNodes(k: number): void {
    if (this.count + k > this.capacity) this.grow(k);
  }

  /** @internal */
  recordSelect(cond: number, ifTrue: number, ifFalse: number): number {
    this.reserveNodes(2);
    this.record(ARG, ifFalse, ifFalse);
    return this.record(SELECT, cond, ifTrue);
  }

  /** @internal Replaces the recording with the given arrays (validated by the caller) and
   *  evaluates it. Leaf values go to the const and input nodes, in order. */
  load(op: Uint8Array, a: Int32Array, b: Int32Array, leafValues: Float64Array): void {
    this.reset();
    const n = op.length;
    if (n > this.capacity) this.grow(n);
    this.opV.set(op);
    this.aV.set(a);
    this.bV.set(b);
    for (let i = 0, k = 0; i < n; i++) if (op[i]! <= INPUT) this.valV[i] = leafValues[k++]!;
    this.count = n;
    this.evaluate();
  }

  /** @internal */
  installCustomHandler(make: (engine: Backend) => CustomHandler): void {
    this.engine.custom ??= make(this.engine);
  }

  /** @internal A custom node: its operands ride on the arg nodes recorded just before it. */
  recordCustom(ruleId: number, operands: readonly number[]): Var {
    const n = operands.length;
    const carriers = (n + 1) >> 1;
    this.reserveNodes(carriers + 1);
    for (let c = 0; c < carriers; c++) this.record(ARG, operands[2 * c]!, operands[2 * c + 1] ?? operands[2 * c]!);
    return new Var(this, this.record(CUSTOM, ruleId, n));
  }

  /** @internal */
  valueAt(i: number): number {
    if (i >= this.evaluated) this.evaluate();
    if (this.observed !== null) this.observed.add(i);
    return this.valV[i]!;
  }

  /** @internal */
  gradAt(i: number): number {
    if (this.swept < 0) {
      throw new TapegradError('NO_GRADIENT', 'no gradient yet: call tape.backward(output) after recording, before reading .grad');
    }
    return i < this.swept && this.opV[i] !== CONST ? this.engine.views.adj[i]! : 0;
  }

  /** @internal Adjoints (or adjoint tangents) of the given nodes; constants never receive
   *  gradient, whatever their slot holds. */
  gatherGradient(from: Float64Array, indices: readonly number[]): Float64Array {
    const out = new Float64Array(indices.length);
    for (let k = 0; k < indices.length; k++) {
      const i = indices[k]!;
      out[k] = this.opV[i] === CONST ? 0 : from[i]!;
    }
    return out;
  }

  /** @internal */
  backwardIndex(out: number, seed: number): void {
    if (typeof seed !== 'number') throw new NotANumberError(`the seed must be a number, got ${describe(seed)}`);
    this.evaluate();
    // A sweep that throws part-way (a custom rule, a trap) leaves partial adjoints: until the
    // next complete sweep, .grad says there is no gradient rather than returning them.
    this.swept = -1;
    this.engine.reverse(out, seed, this.count);
    this.swept = this.count;
    if (this.checkNaN) this.assertFinite(0, out + 1, false);
  }

  /** @internal Computes every value recorded since the last evaluation. */
  evaluate(): void {
    if (this.evaluated < this.count) {
      const from = this.evaluated;
      this.engine.forward(from, this.count);
      this.evaluated = this.count;
      if (this.checkNaN) this.assertFinite(from, this.count, true);
    }
  }

  private assertFinite(from: number, to: number, values: boolean): void {
    if (this.engine.firstNonFinite(from, to, values) < 0) return;
    const { op, a, b, val, adj } = this.engine.views;
    const name = (i: number): string => OP_NAMES[op[i]!] ?? `op ${op[i]}`;
    if (values) {
      const i = this.engine.firstNonFinite(from, to, true);
      const operands = op[i] === CUSTOM ? '' : ` from operands ${val[a[i]!]}, ${val[b[i]!]}`;
      throw new NonFiniteError(`checkNaN: ${name(i)} at node #${i + this.base} produced ${val[i]}${operands}`, i + this.base, name(i));
    }
    // The reverse sweep runs downwards: the highest node with a non-finite adjoint is the first
    // one it produced, and the consumer that sent it is the op whose rule is to blame.
    let j = to - 1;
    while (j >= from && adj[j]! - adj[j]! === 0) j--;
    let consumer = -1;
    for (let i = j + 1; i < to && consumer < 0; i++) {
      const carried = op[i] === SELECT ? a[i - 1] === j : op[i] === ARG && (op[i + 1] === SELECT || op[i + 1] === CUSTOM);
      if (op[i]! > ARG && op[i] !== CUSTOM && (a[i] === j || b[i] === j)) consumer = i;
      else if (carried) consumer = op[i] === ARG ? i + 1 : i;
    }
    const at = consumer < 0 ? j : consumer;
    throw new NonFiniteError(
      consumer < 0
        ? `checkNaN: the adjoint of node #${j + this.base} (${name(j)}) is ${adj[j]}: the seed is not finite`
        : `checkNaN: ${name(consumer)} at node #${consumer + this.base} sent a non-finite adjoint (${adj[j]}) to node #${j + this.base} (${name(j)})`,
      at + this.base,
      name(at),
    );
  }

  /** Most nodes the limits allow at the current bytes per node. */
  private nodeLimit(): number {
    return Math.min(this.maxNodes, Math.floor(this.maxMemoryBytes / this.engine.nodeBytes()), 2 ** 31 - 8);
  }

  private grow(extra = 1): void {
    const needed = this.count + extra;
    const limit = this.nodeLimit();
    if (needed > limit) {
      const byNodes = this.maxNodes <= Math.floor(this.maxMemoryBytes / this.engine.nodeBytes());
      throw new CapacityError(
        `tape is full: ${byNodes ? `maxNodes = ${this.maxNodes}` : `maxMemoryBytes = ${this.maxMemoryBytes} (${this.engine.nodeBytes()} bytes per node)`} ` +
          `with ${this.count} nodes recorded; call tape.reset() to reuse it`,
        byNodes ? this.maxNodes : this.maxMemoryBytes,
      );
    }
    // Engines allocate in multiples of 8 nodes (f64 alignment); `capacity` below keeps the
    // façade at the exact limit.
    const ok = this.engine.reserve(needed, this.count, Math.ceil(limit / 8) * 8);
    this.cacheViews();
    if (!ok) {
      throw new CapacityError(
        `out of memory: the ${this.engine.kind} backend could not grow the tape past ${this.capacity} nodes ` +
          `(${this.engine.memoryBytes()} bytes); call tape.reset() to reuse it`,
        this.capacity,
      );
    }
  }

  private cacheViews(): void {
    const v = this.engine.views;
    this.capacity = Math.min(this.engine.capacity, this.nodeLimit());
    this.opV = v.op;
    this.aV = v.a;
    this.bV = v.b;
    this.valV = v.val;
  }

  private notAVar(v: unknown): Error {
    if (v instanceof Var) {
      return new ForeignHandleError(`Var #${v.id} belongs to another tape (${v.tape.backend}); operands must come from the same tape`);
    }
    if (typeof v === 'number') return new NotANumberError(`expected a Var of this tape here, got the number ${v}`);
    return new NotANumberError(`expected a Var or a number, got ${describe(v)}`);
  }

  private badHandle(h: unknown): Error {
    if (typeof h !== 'number') return new NotANumberError(`expected a handle (integer), got ${describe(h)}`);
    if (!Number.isInteger(h) || h < 0) return new InvalidHandleError(`${h} is not a handle: handles are non-negative integers`);
    if (h < this.base) return new StaleHandleError(`handle ${h} was recorded before tape.reset() (or on another tape); record it again on the current tape`);
    return new InvalidHandleError(`handle ${h} is not a node of this tape (its live handles are ${this.base}..${this.base + this.count - 1})`);
  }
}

function gather(from: Float64Array, indices: readonly number[]): Float64Array {
  const out = new Float64Array(indices.length);
  for (let k = 0; k < indices.length; k++) out[k] = from[indices[k]!]!;
  return out;
}

function checkNumber(x: unknown, what: string): number {
  if (typeof x !== 'number') throw new NotANumberError(`${what} entries must be numbers, got ${describe(x)}`);
  return x;
}

function checkLength(values: ArrayLike<number>, expected: number, what: string, against: string): void {
  if (values == null || typeof values.length !== 'number') throw new NotANumberError(`${what} must be an array of numbers, got ${describe(values)}`);
  if (values.length !== expected) {
    throw new TapegradError('INVALID_ARGUMENT', `${what} has ${values.length} entries but there are ${expected} ${against}`);
  }
}

function checkLimit(value: number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(value > 0)) throw new NotANumberError(`${name} must be a positive number, got ${describe(value)}`);
  return value;
}

type VarUnaryMethods = { [K in UnaryOpName]: () => Var };
type VarBinaryMethods = { [K in BinaryOpName]: (other: Operand) => Var };

// Declaration merging: the op methods below are generated from the op table.
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Var extends VarUnaryMethods, VarBinaryMethods {}

/**
 * A recorded value: a thin wrapper around a node handle of its tape. Every op of the table is a
 * method (`x.exp()`, `x.mul(y)`, `x.pow(2.5)`); binary methods take a Var or a number.
 */
export class Var {
  constructor(
    readonly tape: Tape,
    /** The node handle, usable with `tape.handles`. */
    readonly id: number,
  ) {}

  /** The value of this node (computed in a batch with everything recorded before it). */
  get value(): number {
    return this.tape.valueAt(this.tape.index(this));
  }

  /** d(seed * output)/d(this) from the last `tape.backward`. */
  get grad(): number {
    return this.tape.gradAt(this.tape.index(this));
  }

  toString(): string {
    return `Var(#${this.id})`;
  }
}

for (const name of UNARY_OPS) {
  const code = Op[name];
  Object.defineProperty(Var.prototype, name, {
    value: function (this: Var): Var { return this.tape.recordUnary(code, this); },
    writable: true, configurable: true,
  });
}
for (const name of BINARY_OPS) {
  const code = Op[name];
  Object.defineProperty(Var.prototype, name, {
    value: function (this: Var, other: Operand): Var { return this.tape.recordBinary(code, this, other); },
    writable: true, configurable: true,
  });
}

type HandleUnaryMethods = { [K in UnaryOpName]: (h: number) => number };
type HandleBinaryMethods = { [K in BinaryOpName]: (h1: number, h2: number) => number };

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface HandleApi extends HandleUnaryMethods, HandleBinaryMethods {}

/**
 * The handle-level API of a tape, for hot loops: every op takes and returns integer handles, so
 * recording allocates nothing. `pow(h1, h2)` takes two handles; `powConst(h, c)` a number.
 */
export class HandleApi {
  constructor(readonly tape: Tape) {}

  /** Records an input; returns its handle. */
  variable(x: number): number { return this.tape.leaf(INPUT, x); }
  /** Records a constant; returns its handle. */
  constant(c: number): number { return this.tape.leaf(CONST, c); }
  /** `h ** c` with a constant exponent (never touches log h). */
  powConst(h: number, c: number): number {
    const t = this.tape;
    const i = t.indexOfHandle(h);
    t.reserveNodes(2);
    return t.record(POW_CONST, i, t.constantIndex(c));
  }
  /** `cond ? ifTrue : ifFalse`, see `Tape.select`. */
  select(cond: number, ifTrue: number, ifFalse: number): number {
    const t = this.tape;
    return t.recordSelect(t.indexOfHandle(cond), t.indexOfHandle(ifTrue), t.indexOfHandle(ifFalse));
  }
  /** The value of a node. */
  value(h: number): number { return this.tape.valueAt(this.tape.indexOfHandle(h)); }
  /** The adjoint of a node from the last backward sweep. */
  grad(h: number): number { return this.tape.gradAt(this.tape.indexOfHandle(h)); }
  /** Reverse sweep from `h`, seeded with `seed`. */
  backward(h: number, seed = 1): void { this.tape.backwardIndex(this.tape.indexOfHandle(h), seed); }
  /** Wraps a handle as a Var. */
  toVar(h: number): Var {
    this.tape.indexOfHandle(h);
    return new Var(this.tape, h);
  }
}

for (const name of UNARY_OPS) {
  const code = Op[name];
  Object.defineProperty(HandleApi.prototype, name, {
    value: function (this: HandleApi, h: number): number {
      const t = this.tape;
      const i = t.indexOfHandle(h);
      return t.record(code, i, i);
    },
    writable: true, configurable: true,
  });
}
for (const name of BINARY_OPS) {
  const code = Op[name];
  Object.defineProperty(HandleApi.prototype, name, {
    value: function (this: HandleApi, h1: number, h2: number): number {
      const t = this.tape;
      return t.record(code, t.indexOfHandle(h1), t.indexOfHandle(h2));
    },
    writable: true, configurable: true,
  });
}
