import { DEFERRED_VALUES, DROPPED_ADJOINT, type Backend, type BackendKind, type CustomHandler } from './backend.ts';
import {
  CapacityError, ForeignHandleError, InvalidHandleError, NonFiniteError, NotANumberError, ShapeError, StaleHandleError,
  TapegradError, booleanCondition, checkHeld, extraArgument, checkOut, counted, describe, isArrayLike, lockFields, newFloat64, typedArrayKind, unreadableError, unreadableView,
} from './errors.ts';
import { BINARY_OPS, ELEMENTWISE, OP_TABLE, Op, UNARY_OPS, ZERO_GRADIENT, opNameOf, scalarValued, type BinaryOpName, type OpName, type UnaryOpName, type VectorOpName } from './ops.ts';
import { partialZ, partialZTangent, partials, partialsTangent } from './js/rules.ts';
import { Vec, VectorHandleApi, concatOn, elementwise, sizeOf, vectorOf, type Shape, type VecOperand } from './vector.ts';
import type { BinaryOps, UnaryOps } from './op-docs.ts';

const {
  const: CONST, input: INPUT, arg: ARG, select: SELECT, pow: POW, powConst: POW_CONST, custom: CUSTOM,
  vmeta: VMETA, vparam: VPARAM, vinput: VINPUT, vconst: VCONST, vgather: VGATHER,
} = Op;

// Handles are small integers (Smis in V8: no allocation per op). Each tape hands out a fresh
// range after every reset, so a handle from before the reset falls below the live range and is
// caught. Tapes start at scattered offsets from 2^20 (golden-ratio hashing of a serial number), so a raw
// handle of another tape lands outside this tape's live range unless the two ranges happen to
// overlap (odds about live nodes / 8e8). Ranges restart once they near 2^30, at a scattered
// offset of their own in [2^20, 2^28), not at 0: restarted tapes all at 0 took each other's
// handles and small numbers (h.mul(x, 1)) as nodes. A handle of the cycle before is still
// caught as stale until the live range reaches it again, at least 2^29 nodes later. Vars carry
// their tape, so a Var of another tape is always caught; a Var's id is its handle, so a stale one
// aliases after that as a handle does (README, Handle API).
const HANDLE_LIMIT = 2 ** 30;
const HANDLE_WRAP_AT = HANDLE_LIMIT - 2 ** 28;
const RESTART_FROM = 2 ** 20, RESTART_SPREAD = 2 ** 28 - RESTART_FROM;
const scattered = (serial: number): number => (serial * 0.6180339887498949) % 1;
const DEFAULT_MAX_NODES = 2 ** 28;
// Tape.lastSweep: none, a backward, a vjp.
const NO_SWEEP = 0, BACKWARD_SWEEP = 1, VJP_SWEEP = 2;
// Tape.swept besides a node count: no sweep yet; the last one failed and the one before runs
// again on the next read; the last one failed with none before it to run.
const NOT_SWEPT = -1, SWEEP_AGAIN = -2, FAILED_SWEEP = -3;
// Tape.index's `what` for an entry of a list of Vars and Vecs: this, then the call's name if any.
const LIST = '\u0000list ';
// The op or call a `what` of Tape.index names, if any.
const nameOf = (what: string | number | undefined): string | undefined =>
  typeof what === 'number' ? opNameOf(what) : what?.startsWith(LIST) ? what.slice(LIST.length) || undefined : what;
// That name and ': ', the start of an error's message ('' for none: undefined, or an op code of -1).
const prefixOf = (what: string | number | undefined): string => {
  const name = typeof what === 'number' && what < 0 ? undefined : nameOf(what);
  return name === undefined ? '' : `${name}: `;
};
/** @internal Bytes a node of the tangent regions (jvp, hvp). */
export const TANGENT_BYTES = 16;
const CONSTANT_SLOTS = 64;
let tapeSerial = 0;
// The engines' least capacity of nodes and of elements (MIN_CAPACITY in assembly/layout.ts and
// src/js/backend.ts).
const MIN_REGION = 1024;
/** @internal Where the handle range of the tape of serial `serial` starts (see the constructor). */
export function firstHandle(serial: number): number {
  return RESTART_FROM + Math.floor(scattered(serial) * (HANDLE_WRAP_AT - RESTART_FROM));
}

/** A Var or a plain number (recorded as a constant). */
export type Operand = Var | number;

/** A tape's limits and NaN checks, as `createTape` takes them (part of TapeOptions). */
export interface TapeLimits {
  /** Most nodes the tape may hold (default 2^28 = 268,435,456, and never more than memory allows). */
  maxNodes?: number | undefined;
  /** Most bytes of tape storage (all per-node regions together). */
  maxMemoryBytes?: number | undefined;
  /** Throw NonFiniteError at the first NaN or ±Infinity an op produces (value, adjoint or tangent),
   *  naming the op and the node. Off by default: IEEE semantics, NaN propagates. */
  checkNaN?: boolean | undefined;
}

/**
 * A recording of scalar operations for reverse-mode differentiation. Create one with
 * `createTape()`. Record with `tape.variable(x)` and Var methods, differentiate with
 * `tape.backward(y)` or `tape.gradient(y, inputs)`, start over with `tape.reset()`.
 */
export class Tape {
  /** Handle-level API: numbers in, numbers out, no allocation per op. */
  readonly handles: HandleApi;
  /** Most nodes the tape may hold (`createTape({ maxNodes })`, default 2^28); past it a
   *  recording throws CapacityError. */
  readonly maxNodes: number;
  /** Most bytes of tape storage (`createTape({ maxMemoryBytes })`, default Infinity); past it a
   *  recording throws CapacityError. */
  readonly maxMemoryBytes: number;
  /** Whether NaN/Infinity checks are on (`createTape({ checkNaN: true })`). */
  readonly checkNaN: boolean;
  /** @internal While compiling: the nodes whose values user code read (branch guards). */
  observed: Set<number> | null = null;
  /** @internal Whether number operands reuse cached constant nodes (see sharedConstantIndex). */
  shareConstants = true;

  // The tape state the façade owns; the backend owns the arrays. The op methods (end of this
  // file) read and write count, base, capacity and the three op arrays directly. Each of these
  // fields holds a value of its kind from the start (0, an empty array), never undefined until
  // the constructor sets it: recording the transcendental chain through Vars measured 8.5 -> 7.9
  // ns/node with that alone (`bench/ab.ts --case=chain-record`).
  /** @internal */
  count = 0;
  private evaluated = 0;
  /** @internal The custom node whose forward rule runs, or -1. */
  ruleForwardAt = -1;
  private swept = -1;
  // The last first-order reverse sweep, to run again storing every adjoint when one it left out
  // (a fused run's node, see DROPPED_ADJOINT) is read: backward's output, seed and node count, or
  // vjp's outputs and cotangent. Fields, not a closure: a closure made per call was a third of a
  // 20-node gradient's time run through tsx, whose esbuild names every such closure with
  // Object.defineProperty (bench/workloads.ts, tiny).
  private lastSweep = NO_SWEEP;
  private lastOut = 0;
  private lastSeed = 0;
  private lastCount = 0;
  private lastOuts: Int32Array = new Int32Array(0);
  private lastCotangent: Float64Array = new Float64Array(0);
  // After a sweep that threw part-way (a custom rule, a trap): swept is SWEEP_AGAIN where the last
  // complete first-order sweep (its fields restored above) runs again on the next read of an
  // adjoint, whose `swept` this was; FAILED_SWEEP where there is none to run.
  private sweptBeforeFailure = -1;
  /** @internal */
  base = 0;
  // Where this cycle of handles began, and the cycle before it ([previousStart, previousEnd), empty
  // before the first restart): a handle not live now was of an earlier recording if it lies in
  // either.
  private cycleStart = 0;
  private previousStart = 0;
  private previousEnd = 0;
  /** @internal */
  capacity = 0;
  /** @internal */
  opV: Uint8Array = new Uint8Array(0);
  /** @internal */
  aV: Int32Array = new Int32Array(0);
  /** @internal */
  bV: Int32Array = new Int32Array(0);
  private valV: Float64Array = new Float64Array(0);
  // Elements of array-valued nodes: the fill pointer into the engine's element regions.
  private elements = 0;
  private vectorNodes = false;
  // The nodes whose tangents (or, for hvp, second-order results) the running tangent sweep serves,
  // and which nodes' tangents can reach them (computed at the first custom node without a jvp
  // rule; see tangentReaches).
  private tangentTargets: ArrayLike<number> | null = null;
  private tangentMask: Uint8Array | null = null;
  // Numbers passed as operands (`x.mul(2)`) share one constant node per value while it stays in
  // this small cache (direct-mapped by value; cleared by reset), instead of a node per use.
  private readonly constantValues = new Float64Array(CONSTANT_SLOTS);
  private readonly constantHandles = new Int32Array(CONSTANT_SLOTS).fill(-1);

  /** @internal The regions and sweeps (the wasm core's or the JS engine's): not a parameter
   *  property, whose declaration kept it public in the .d.ts (a probe wrote into its views). */
  readonly engine: Backend;

  /** @internal Tapes come from createTape and createTapeSync, each with an engine of its own. */
  constructor(engine: Backend, limits: TapeLimits = {}, where = 'createTape') {
    // Private in the declarations; from JavaScript `new Tape()` threw a raw TypeError (a probe).
    if (engine === null || typeof engine !== 'object') throw new TapegradError('INVALID_ARGUMENT', 'a Tape comes from createTape or createTapeSync');
    this.engine = engine;
    // Two tapes over one engine wrote each other's nodes (a probe: `new Tape(t1.engine)` gave t1
    // wrong values and gradients, without an error).
    if (ownedEngines.has(engine)) throw new TapegradError('INVALID_ARGUMENT', 'this engine belongs to another tape: make each tape with createTape or createTapeSync');
    ownedEngines.add(engine);
    // Named by the call that made the tape, as its other options' errors are (a probe).
    this.maxNodes = checkLimit(limits.maxNodes, 'maxNodes', where) ?? DEFAULT_MAX_NODES;
    this.maxMemoryBytes = checkLimit(limits.maxMemoryBytes, 'maxMemoryBytes', where) ?? Infinity;
    // A limit below one node could never record anything (and its CapacityError advised a reset).
    if (this.maxMemoryBytes < engine.nodeBytes()) {
      throw new TapegradError('INVALID_ARGUMENT', `${where}: maxMemoryBytes = ${this.maxMemoryBytes} holds no node: a node takes ${engine.nodeBytes()} bytes`);
    }
    this.checkNaN = limits.checkNaN === true;
    lockFields(this, ['engine', 'maxNodes', 'maxMemoryBytes', 'checkNaN']);
    // A trap replaced the engine's memory: what was recorded is gone, as after a reset.
    engine.onTrap = () => this.reset();
    // From RESTART_FROM, as a restarted range: a range starting at 0 (the first tape's, before
    // serials began at 1) or near it (the golden ratio's multiples of Fibonacci serials: 700 at
    // the 514,229th tape, 0 at the 102,334,155th, a probe) made small numbers passed as handles
    // (h.mul(x, 1000) for x times 1000) valid nodes of it.
    this.base = firstHandle(++tapeSerial);
    this.cycleStart = this.base;
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

  /** @internal Bytes the live recording holds, nodes and elements. */
  get recordedBytes(): number {
    return this.count * this.engine.nodeBytes() + this.elements * this.engine.elementBytes();
  }

  /** Bytes the engine currently holds (wasm memory, or the JS typed arrays). */
  get memoryBytes(): number {
    return this.engine.memoryBytes();
  }

  /** Records an input with value `x`. */
  variable(x: number): Var {
    return new Var(this, this.leaf(INPUT, x));
  }

  /**
   * Records several inputs at once. With `reuse`, an array of Vars an earlier call returned for
   * an earlier recording on this tape (or an empty array), its Vars are pointed at the new input
   * nodes instead of new Vars being made, and it is returned, resized to `xs.length`: a program
   * that records many times over many inputs then keeps no new objects per recording (see
   * README, "Memory"). Those Vars stand for the new inputs from then on. A Var of the current
   * recording in `reuse` is refused (`INVALID_ARGUMENT`), since its nodes would change meaning.
   */
  variables(xs: ArrayLike<number>, reuse?: Var[]): Var[] {
    // The count recorded, not xs.length read again (a getter could answer otherwise).
    const first = this.recordInputs(xs, reuse), len = this.count - first, base = this.base;
    if (reuse !== undefined) {
      try {
        return this.repoint(reuse, first + base, len);
      } catch (error) {
        // An array whose length or slots cannot be written in ways the checks before recording
        // do not see (a read-only length or slot, a getter): the inputs are taken back (a probe
        // got a TypeError with them recorded).
        this.takeBack(first);
        this.unpoint(reuse, first + base, len);
        throw new TapegradError('INVALID_ARGUMENT', `variables: reuse could not be resized and written (${(error as Error).message}); nothing was recorded`);
      }
    }
    // Sized up front: growing the array by push copies it, and large input lists then cost
    // young-generation GC time on every recording.
    try {
      return this.newInputVars(new Array<Var>(len), first + base);
    } catch (error) {
      // More Vars than the runtime puts in one array (V8: 2^27 - 3, below a tape's nodes): the
      // inputs are taken back (a probe got V8's raw RangeError with 1.3·10^8 inputs recorded).
      if (!(error instanceof RangeError)) throw error;
      this.takeBack(first);
      throw new CapacityError(`variables: ${len} Vars are more than the runtime holds in one array (${error.message}); nothing was recorded (tape.handles.variables records them as handles in an Int32Array)`, len);
    }
  }

  // variables' loop, alone (see inputRunLength).
  private newInputVars(out: Var[], firstId: number): Var[] {
    for (let k = 0; k < out.length; k++) out[k] = new Var(this, firstId + k);
    return out;
  }

  /** @internal Records the numbers of `xs` as inputs and returns the first one's node. All or
   *  nothing: every value (and `reuse`) is checked and room is made before the first is written. */
  recordInputs(xs: ArrayLike<number>, reuse?: Var[], what = 'variables', into?: Int32Array): number {
    if (!isArrayLike(xs)) throw new NotANumberError(`${what}: expected an array of numbers, got ${describe(xs)}`);
    const len = xs.length;
    // More inputs than the tape may hold: its CapacityError before the values are read into a
    // buffer of that length (a probe's { length: 1e10 } threw the runtime's RangeError). Only past
    // the capacity: nodeLimit's double on every call cost 32 bytes of garbage (a probe).
    if (this.count + len > this.capacity && this.count + len > this.nodeLimit()) this.grow(len);
    // Literals: a template here cost 32 bytes a call (a probe; handles.variables with `into`
    // allocates nothing).
    const where = what === 'variables' ? 'variables: input' : 'handles.variables: input';
    const values = readNumbers(xs, len, where);
    if (reuse !== undefined) {
      this.checkReusable(reuse, len);
      // xs itself where it is a Float64Array: reuse's getters ran code since, which could detach
      // or shrink its buffer before the copy below (a review: a raw TypeError, or an earlier
      // recording's values taken as inputs). (Checked after the values, not before: a getter of
      // xs put a Var of this recording into reuse past its check, another review.)
      if (values === xs) checkHeld(values, len, where);
    }
    // After the values are read, whose getters could detach or shrink it (a review: the handles
    // were written nowhere, three inputs recorded).
    if (into !== undefined) checkOut(into, len, 'handles.variables: into', Int32Array);
    this.reserveNodes(len);
    const { opV: op, aV: a, bV: b, valV: val } = this;
    const first = this.count;
    op.fill(INPUT, first, first + len);
    val.set(values, first);
    writeSelfOperands(a, b, first, first + len);
    if (this.evaluated === first) this.evaluated = first + len;
    this.count = first + len;
    return first;
  }

  private checkReusable(reuse: unknown, len: number): asserts reuse is Var[] {
    if (!Array.isArray(reuse)) {
      throw new TapegradError('INVALID_ARGUMENT', `variables: reuse must be an array (of Vars from an earlier recording on this tape), got ${describe(reuse)}`);
    }
    // repoint resizes it and writes its slots, after the inputs are recorded.
    if (!Object.isExtensible(reuse)) {
      throw new TapegradError('INVALID_ARGUMENT', 'variables: reuse must be an array variables can resize and write, got a frozen, sealed or non-extensible one');
    }
    for (let k = 0, end = Math.min(len, reuse.length); k < end; k++) {
      const v: unknown = reuse[k];
      if ((v as Var)?.tape === this && ((v as Var).id - this.base) >>> 0 < this.count) {
        throw new TapegradError('INVALID_ARGUMENT', `variables: reuse[${k}] is ${v} of the current recording; reuse takes the Vars of an earlier one`);
      }
    }
  }

  // Input Vars kept across recordings are promoted to the old generation once; new ones would be
  // copied by every scavenge of each recording (about 70 ns each here, see README "Memory").
  private repoint(reuse: Var[], firstId: number, len: number): Var[] {
    reuse.length = len;
    return this.repointEach(reuse, firstId, len);
  }

  // After a failed repoint: Vars of `reuse` already pointed at the inputs taken back would read
  // the nodes recorded next (a probe: two stale Vars took part in a new gradient). They go stale
  // again, at the last id of the recording before (their old ids were stale too: reuse holds none
  // of the current recording; -1, which they took before, is a vector handle's, and the stale
  // error named a Var that never was: a probe). Their own ids are not kept: a store per input
  // slowed every reuse by 7-25% (a review).
  private unpoint(reuse: Var[], firstId: number, len: number): void {
    for (let k = 0; k < Math.min(len, reuse.length); k++) {
      try {
        const v: unknown = reuse[k];
        if ((v as Var)?.tape === this && ((v as Var).id - firstId) >>> 0 < len) (v as { id: number }).id = Math.max(0, this.base - 1);
      } catch {
        // A slot that cannot be read or a Var that cannot be written was not pointed either.
      }
    }
  }

  // repoint's loop, alone (see inputRunLength).
  private repointEach(reuse: Var[], firstId: number, len: number): Var[] {
    for (let k = 0; k < len; k++) {
      const v: unknown = reuse[k];
      // `constructor === Var`, not instanceof: through tsx (esbuild keeping class names) each
      // instanceof Var took about 8 ns here. A Var already pointed at an earlier slot's input (one
      // Var in several slots) stays there, and this slot gets a Var of its own.
      if ((v as Var)?.tape === this && (v as Var).constructor === Var && ((v as Var).id - firstId) >>> 0 >= k) (v as { id: number }).id = firstId + k;
      else reuse[k] = new Var(this, firstId + k);
    }
    return reuse;
  }

  /** Records a constant: it never receives gradient. */
  constant(c: number): Var {
    return new Var(this, this.leaf(CONST, c));
  }

  /** Records an input vector (one node, n elements); `shape` makes it a matrix (row-major). */
  vector(values: ArrayLike<number>, shape?: Shape): Vec {
    return vectorOf(this, VINPUT, values, shape, 'vector');
  }

  /** Records a constant vector or matrix: one node, never differentiated. */
  constantVector(values: ArrayLike<number>, shape?: Shape): Vec {
    return vectorOf(this, VCONST, values, shape, 'constantVector');
  }

  /** Scalars (Vars or numbers) as one vector; k Vecs of one shape s as one of shape [k, ...s]
   *  (vectors [n] as the rows of a matrix), as NumPy's stack. */
  stack(parts: readonly (Var | number)[] | readonly Vec[], axis?: never): Vec {
    // NumPy's axis was ignored: stack([a, b], 1) stacked along a new first axis (a probe).
    if (axis !== undefined) throw extraArgument('stack: takes no axis, it stacks along a new first axis (for columns, stack the rows and transpose: .T)', axis);
    const first = Array.isArray(parts) ? parts[0] : undefined;
    // The shapes are checked before concat records anything. Matrices (and a Vec among scalars)
    // were joined end to end: two [2, 2] gave [4, 2] (a new-user probe).
    if (first instanceof Vec || (Array.isArray(parts) && parts.some((p) => p instanceof Vec))) {
      const shape = first instanceof Vec ? first.shape : [];
      for (const p of parts as readonly Vec[]) {
        // Neither a Vec nor a Var or number: NOT_A_NUMBER, as among scalars (it was shown as a
        // scalar of shape []: a probe).
        if (!(p instanceof Vec) && !((p as unknown) instanceof Var) && typeof p !== 'number') {
          throw new NotANumberError(`stack: expected Vecs, Vars or numbers, got ${describe(p)}`);
        }
        if (!(p instanceof Vec) || p.shape.length !== shape.length || p.shape.some((d, k) => d !== shape[k])) {
          const shapes = (parts as readonly Vec[]).map((q) => (q instanceof Vec ? q.shape : []));
          throw new ShapeError(`stack: every operand needs shape [${shape.join(', ')}], got ${shapes.map((q) => `[${q.join(', ')}]`).join(', ')}`, 'stack', shapes);
        }
      }
      return concatOn(this, parts as readonly Vec[], 'stack').reshape([parts.length, ...shape]);
    }
    return concatOn(this, parts as readonly (Var | number)[], 'stack');
  }

  /** Vectors, scalars and numbers joined end to end (matrices: along rows). */
  concat(parts: readonly (Vec | Var | number)[], axis?: never): Vec {
    // NumPy's axis was ignored: concat([A, A], 1) joined along rows (a probe).
    if (axis !== undefined) throw extraArgument('concat: takes no axis, it joins along the first (for columns, join the transposes and transpose back)', axis);
    return concatOn(this, parts, 'concat');
  }

  /** `cond ? ifTrue : ifFalse` per value (true unless 0 or NaN). The branch not taken gets
   *  exactly zero gradient, even where its value is NaN or Infinity. With a Vec among the
   *  operands it runs elementwise, broadcasting (arrays then count as constant vectors), and
   *  returns a Vec. */
  select(cond: Operand, ifTrue: Operand, ifFalse: Operand): Var;
  select(cond: Vec, ifTrue: VecOperand, ifFalse: VecOperand): Vec;
  select(cond: VecOperand, ifTrue: Vec, ifFalse: VecOperand): Vec;
  select(cond: VecOperand, ifTrue: VecOperand, ifFalse: Vec): Vec;
  // Operands typed `Var | Vec`: either, as the values decide (arrays need a Vec beside them).
  select(cond: Operand | Vec, ifTrue: Operand | Vec, ifFalse: Operand | Vec): Var | Vec;
  select(cond: VecOperand, ifTrue: VecOperand, ifFalse: VecOperand): Var | Vec {
    if (typeof cond === 'boolean') throw booleanCondition(cond);
    if (isVectorOperand(cond) || isVectorOperand(ifTrue) || isVectorOperand(ifFalse)) {
      return elementwise(this, SELECT, 'select', [cond, ifTrue, ifFalse]);
    }
    // An array without a Vec beside it: named here (the operand check names no op).
    if (isArrayLike(cond) || isArrayLike(ifTrue) || isArrayLike(ifFalse)) {
      const operands = [cond, ifTrue, ifFalse], array = operands.findIndex((o) => isArrayLike(o));
      throw new NotANumberError(`select: an array needs a Vec beside it (only a Vec makes select elementwise), got ${describe(operands[array])} as ${['cond', 'ifTrue', 'ifFalse'][array]}`);
    }
    const [c, t, f] = this.operandIds([cond as Operand, ifTrue as Operand, ifFalse as Operand], 2, Op.select);
    return new Var(this, this.recordSelect(c!, t!, f!));
  }

  /** Reverse sweep from `output`, seeded with `seed` (default 1). Afterwards `v.grad` is
   *  d(seed * output)/dv for every Var of this tape. Running it twice gives identical adjoints. */
  backward(output: Var, seed = 1): void {
    this.backwardIndex(this.index(output, 'backward'), seed);
  }

  /** Runs `backward(output, seed)` and returns the gradients of `wrt`, in order (a Vec in
   *  `wrt` contributes its elements), written into `out` when given (no allocation). */
  gradient(output: Var, wrt: readonly (Var | Vec)[], seed = 1, out?: Float64Array): Float64Array {
    // The list's nodes go into an array the tape keeps, which the gather after the sweep reads: a
    // call made meanwhile (by a getter of the list; by a custom rule, which the sweep refuses
    // after its list was read, unless the rule catches that) takes one of its own, as
    // handles.gradient does (a review: the outer call gathered the inner list's nodes).
    this.refuseInsideRule('cannot run a reverse sweep');
    const kept = Array.isArray(wrt) ? this.holdScratch(wrt.length) : null;
    try {
      const nodes = this.nodesOf(wrt, 'gradient', kept);
      const entries = out === undefined ? 0 : this.entryCount(nodes);
      if (out !== undefined) checkOut(out, entries, 'gradient: out');
      this.backwardIndex(this.index(output, 'gradient'), seed, 'gradient');
      // Again after the sweep, whose custom rules could detach it (a review: the gradient
      // written nowhere, without an error), and after the sweep again that keeps the adjoints a
      // fused run dropped, which runs them too (another review: V8's raw TypeError).
      // Only where custom rules can have run (the engine has their handler): the pass that finds
      // the leading run of inputs made a gradient of 2·10^4 of them with out a fifth slower (a
      // review).
      if (out !== undefined && this.engine.custom !== null) {
        if (this.vectorNodes) this.keepAdjointsOf(nodes, liveRunLength(nodes, this.opV, nodes[0]!));
        checkOut(out, entries, 'gradient: out');
      }
      return this.gatherEntries(nodes, this.engine.views.adj, this.engine.views.xadj, true, out);
    } finally {
      if (kept) this.scratchBusy = false;
    }
  }

  /** @internal The array the tape keeps for a gradient's list (its nodes, or a handle gradient's
   *  handles), of at least `length` entries, held until the call sets `scratchBusy` back; null
   *  where a call holds it already (a getter of its list called again) or the list is longer than
   *  is kept (KEPT_LIST: so that one long list holds no memory past its call). */
  holdScratch(length: number): Int32Array | null {
    if (this.scratchBusy || length > KEPT_LIST) return null;
    if (this.nodeScratch.length < length) this.nodeScratch = new Int32Array(Math.min(KEPT_LIST, Math.max(length, 2 * this.nodeScratch.length)));
    this.scratchBusy = true;
    return this.nodeScratch;
  }
  /** @internal See holdScratch. */
  scratchBusy = false;
  private nodeScratch = new Int32Array(0);

  /** Vector-Jacobian product in one reverse sweep: the gradient of sum_j cotangent[j] *
   *  outputs[j] with respect to `wrt` (Vecs count as their elements, in order). */
  vjp(outputs: readonly (Var | Vec)[], cotangent: ArrayLike<number>, wrt: readonly (Var | Vec)[]): Float64Array {
    this.refuseInsideRule('cannot run a reverse sweep');
    this.refuseWhileCompiling('a reverse sweep (vjp)');
    const start = this.base, outs = this.nodesOf(outputs, 'vjp');
    checkLength(cotangent, this.entryCount(outs), 'vjp: cotangent', 'outputs');
    // (Copied: a sweep run again must not see the caller's later writes.)
    const seeds = readNumbers(cotangent, cotangent.length, 'vjp: cotangent', true);
    const nodes = this.nodesOf(wrt, 'vjp');
    this.checkNotResetSince(start, 'vjp');
    this.evaluate();
    const sweep = this.lastSweep, out = this.lastOut, seed = this.lastSeed, count = this.lastCount, before = this.lastOuts, cotangentBefore = this.lastCotangent;
    const swept = this.completeSwept(), base = this.base;
    this.swept = NOT_SWEPT;
    this.lastSweep = VJP_SWEEP;
    this.lastOuts = outs;
    this.lastCotangent = seeds;
    try {
      this.sweepKeeping(this.checkNaN);
    } catch (error) {
      if (this.base === base) this.sweepFailed(sweep, out, seed, count, before, cotangentBefore, swept);
      throw error;
    }
    this.swept = this.count;
    if (this.checkNaN) {
      let top = 0;
      for (let k = 0; k < outs.length; k++) top = Math.max(top, outs[k]!);
      try {
        this.assertFinite(0, top + 1, false);
      } catch (error) {
        this.sweepFailed(sweep, out, seed, count, before, cotangentBefore, swept);
        throw error;
      }
    }
    return this.gatherEntries(nodes, this.engine.views.adj, this.engine.views.xadj, true);
  }

  private seedAndSweep(outs: Int32Array, cotangent: ArrayLike<number>): void {
    this.engine.clearAdjoints(this.count, false);
    const { adj, xadj } = this.engine.views;
    let top = 0;
    for (let j = 0, pos = 0; j < outs.length; j++) {
      const o = outs[j]!;
      if (this.opV[o]! >= VINPUT) {
        const off = this.aV[o - 1]!, n = this.bV[o - 1]!;
        // Claimed as a rule would (see claim in assembly/vector.ts): zeroed once, then flagged.
        if (adj[o] === 0) xadj.fill(0, off, off + n);
        adj[o] = 1;
        for (let k = 0; k < n; k++) xadj[off + k] += cotangent[pos++]!;
      } else {
        adj[o] += cotangent[pos++]!;
      }
      top = Math.max(top, o);
    }
    this.engine.sweepReverse(top);
  }

  /** Runs the last reverse sweep (lastSweep) with the engine told whether to store every adjoint. */
  private sweepKeeping(keep: boolean): void {
    if (!keep) { this.runLastSweep(); return; }
    this.engine.setKeepAdjoints(true);
    try {
      this.runLastSweep();
    } finally {
      this.engine.setKeepAdjoints(false);
    }
  }

  private runLastSweep(): void {
    if (this.lastSweep === BACKWARD_SWEEP) this.engine.reverse(this.lastOut, this.lastSeed, this.lastCount);
    else if (this.lastSweep === VJP_SWEEP) this.seedAndSweep(this.lastOuts, this.lastCotangent);
  }

  /** Before reading adjoints of vector nodes: the last sweep again, storing them all, if it left
   *  out one of `nodes` (the same sweep, so the same values: see DROPPED_ADJOINT). */
  private keepAdjointsOf(nodes: Int32Array | readonly number[], from = 0): void {
    const adj = this.engine.views.adj;
    if (this.lastSweep === NO_SWEEP) return;
    // A loop, not `some` with a closure (a probe: the read-out of 2·10^4 inputs took twice as long
    // with a vector node on the tape).
    const op = this.opV;
    for (let k = from; k < nodes.length; k++) {
      const i = nodes[k]!;
      if (op[i]! >= VINPUT && adj[i] === DROPPED_ADJOINT) { this.sweepKeeping(true); return; }
    }
  }

  /** Jacobian-vector product in one forward (tangent) sweep over the recorded tape: the
   *  directional derivatives of `outputs` when `inputs` move along `tangent`. */
  jvp(inputs: readonly (Var | Vec)[], tangent: ArrayLike<number>, outputs: readonly (Var | Vec)[]): Float64Array {
    const outs = this.nodesOf(outputs, 'jvp');
    this.seedTangents(inputs, tangent, outs);
    if (this.checkNaN) this.assertFiniteTangents(0, this.count, false, outs);
    this.tangentsOf(outs);
    return this.gatherEntries(outs, this.engine.views.tan!, this.engine.views.xtan!, false);
  }

  /** @internal Before reading the element tangents of the vector nodes among `nodes`: those a
   *  fused run's tangent kernel left out, computed. */
  tangentsOf(nodes: ArrayLike<number>): void {
    for (let k = 0; k < nodes.length; k++) if (this.opV[nodes[k]!]! >= VINPUT) this.engine.materializeTangent(nodes[k]!);
  }

  /** Hessian-vector product by forward over reverse: H·v of `seed * output` with respect to
   *  `inputs`, in one tangent sweep and one reverse sweep. Also leaves the gradient in `.grad`. */
  hvp(output: Var, inputs: readonly (Var | Vec)[], v: ArrayLike<number>, seed = 1): Float64Array {
    const out = this.index(output, 'hvp');
    // (checkNaN reads the output's tangent too.)
    const nodes = this.seedTangents(inputs, v, [out], 'the direction', this.checkNaN ? -1 : out);
    if (typeof seed !== 'number') throw new NotANumberError(`hvp: the seed must be a number, got ${describe(seed)}`);
    const sweep = this.lastSweep, last = this.lastOut, lastSeed = this.lastSeed, count = this.lastCount, outs = this.lastOuts, cotangent = this.lastCotangent;
    const swept = this.completeSwept(), base = this.base;
    this.swept = NOT_SWEPT;
    this.lastSweep = NO_SWEEP;
    // The fused runs' reverse kernels drop their nodes' adjoints and adjoint tangents unless told
    // to keep them: the first are swept again where read (the backward sweep below), the second
    // only checkNaN reads (hvp's inputs are the tape's inputs).
    const keep = this.checkNaN;
    if (keep) this.engine.setKeepAdjoints(true);
    try {
      this.engine.reverseTangent(out, seed, this.count);
    } catch (error) {
      if (this.base === base) this.sweepFailed(sweep, last, lastSeed, count, outs, cotangent, swept);
      throw error;
    } finally {
      if (keep) this.engine.setKeepAdjoints(false);
    }
    // Its adjoints are backward(output, seed)'s, and it runs again as that sweep (to store every
    // adjoint, or after a failed sweep): a failed backward after an hvp lost them (a review).
    this.lastSweep = BACKWARD_SWEEP;
    this.lastOut = out;
    this.lastSeed = seed;
    this.lastCount = this.count;
    this.swept = this.count;
    if (this.checkNaN) {
      try {
        this.assertFiniteTangents(0, out + 1, false, [out]);
        this.assertFinite(0, out + 1, false);
        this.assertFiniteTangentAdjoints(0, out + 1);
      } catch (error) {
        this.sweepFailed(sweep, last, lastSeed, count, outs, cotangent, swept);
        throw error;
      }
    }
    return this.gatherEntries(nodes, this.engine.views.tanAdj!, this.engine.views.xtanAdj!, true);
  }

  /** @internal The node of each Var and Vec of `list`, every one checked before anything runs.
   *  Its callers index it: `for...of` over an Int32Array made V8 deoptimise jvp's seeding three
   *  times a call, each time (jvp 4.3 against 3.4 ns/node on the bench's Rosenbrock). */
  nodesOf(list: readonly (Var | Vec)[], what?: string, scratch: Int32Array | null = null): Int32Array {
    if (!Array.isArray(list)) throw new NotANumberError(`${what === undefined ? '' : `${what}: `}expected an array of Vars and Vecs, got ${describe(list)}`);
    // An Int32Array, not a number[]: an array of 10^5 entries is a large object in fresh pages
    // on every call (filling it took 7.6 ns per entry there, this 2.7 with its allocation).
    // `scratch`: a list used only within the call (gradient's) goes into the array the tape keeps
    // (holdScratch; a probe: 80 KB a call for 2·10^4 inputs, with `out` given).
    // The length read once, and the loops below go by the array it sized: a Proxy whose length
    // changed from read to read had entries dropped, silently (a review).
    const length = list.length;
    return this.writeNodes(list, scratch && scratch.length >= length ? scratch.subarray(0, length) : new Int32Array(length), this.count, this.base, what);
  }

  // nodesOf's loop: live Vars of this tape in liveVarIds, anything else (a Vec, a fault to name)
  // through the checks here, one at a time.
  private writeNodes(list: readonly (Var | Vec)[], nodes: Int32Array, n: number, base: number, what: string | undefined): Int32Array {
    for (let k = liveVarIds(list, nodes, this, n, base, 0); k < nodes.length; k = liveVarIds(list, nodes, this, n, base, k + 1)) {
      const v = list[k]!;
      nodes[k] = v instanceof Vec ? this.vindex(v, LIST + (what ?? '')) : this.index(v as Var, LIST + (what ?? ''));
    }
    this.checkNotResetSince(base, what);
    return nodes;
  }

  /** @internal Throws where reading an argument ran user code (an accessor, a Proxy) that reset
   *  the tape since `base` was read: the nodes checked before then are of the last recording (a
   *  probe's vjp, jvp, hvp and gather read the reset tape's memory and returned its numbers). */
  checkNotResetSince(base: number, what: string | undefined): void {
    if (this.base !== base) {
      throw new StaleHandleError(`${prefixOf(what)}the tape was reset while the call read its arguments (by an accessor or a Proxy); the Vars and Vecs it had checked are stale`);
    }
  }

  /** Scalar entries of the nodes: a vector counts its elements. `run`: how many of the first
   *  nodes are a run of scalar ones (liveRunLength), where the caller has it. */
  private entryCount(nodes: Int32Array, run?: number): number {
    // Without vector nodes every node is one entry (a pass reading each node's op cost a Var
    // gradient with `out` 1.4 ns an input, a third of its read-out).
    if (!this.vectorNodes) return nodes.length;
    let n = run ?? liveRunLength(nodes, this.opV, nodes[0]!);
    for (let k = n; k < nodes.length; k++) {
      const i = nodes[k]!;
      n += this.opV[i]! >= VINPUT ? this.bV[i - 1]! : 1;
    }
    return n;
  }

  /** @internal The nodes' entries of a node region and its element region, flat and in order;
   *  constants (scalar or vector) give 0 whatever their slots hold, and so do the adjoints
   *  (`flagged`) of a vector the sweep did not reach. A vector is one range copy. */
  gatherEntries(nodes: Int32Array, from: Float64Array, elements: Float64Array, flagged: boolean, into?: Float64Array): Float64Array {
    if (!this.vectorNodes) {
      // Scalars only: one entry per node, in one pass (a leading run in one copy).
      const out = into ?? new Float64Array(nodes.length), op = this.opV;
      for (let k = copyLeadingRun(nodes, op, from, out); k < nodes.length; k++) {
        const i = nodes[k]!;
        out[k] = op[i] === CONST ? 0 : from[i]!;
      }
      return out;
    }
    // A leading run of scalar nodes (the inputs as `variables` records them) holds no vector
    // adjoint to keep and is one copy, as without vector nodes: a gradient's read-out of 2·10^4
    // inputs with a vector node on the tape took 118 µs beyond the sweep, 3 ns an input more.
    const op = this.opV, run = liveRunLength(nodes, op, nodes[0]!);
    if (flagged && from === this.engine.views.adj) this.keepAdjointsOf(nodes, run);
    const out = into ?? new Float64Array(this.entryCount(nodes, run));
    if (run > 0) copyRange(from, nodes[0]!, run, out);
    const adj = this.engine.views.adj;
    for (let k = run, pos = run; k < nodes.length; k++) {
      const i = nodes[k]!;
      const code = op[i]!;
      if (code >= VINPUT) {
        const off = this.aV[i - 1]!, n = this.bV[i - 1]!;
        if (code !== VCONST && !(flagged && adj[i] === 0)) out.set(elements.subarray(off, off + n), pos);
        else if (into) out.fill(0, pos, pos + n);
        pos += n;
      } else {
        out[pos++] = code === CONST ? 0 : from[i]!;
      }
    }
    return out;
  }

  /** @internal Output slots of Vars and Vecs, flat: a scalar node index (>= 0), or -1 - offset
   *  for each element of a vector (compiled functions read their outputs through these). */
  outputSlots(list: readonly (Var | Vec)[], what?: string): number[] {
    const slots: number[] = [];
    const nodes = this.nodesOf(list, what);
    for (let k = 0; k < nodes.length; k++) {
      const i = nodes[k]!;
      if (this.opV[i]! < VINPUT) slots.push(i);
      else for (let k = 0, off = this.aV[i - 1]!, n = this.bV[i - 1]!; k < n; k++) slots.push(-1 - (off + k));
    }
    return slots;
  }


  /** @internal The tangent array, allocating the tangent regions on first use. */
  ensureTangents(): Float64Array {
    if (!this.engine.views.tan) {
      const bytes = this.count * (this.engine.nodeBytes() + TANGENT_BYTES) + this.elements * (this.engine.elementBytes() + TANGENT_BYTES);
      if (bytes > this.maxMemoryBytes) {
        throw new CapacityError(
          `tape is full: tangents need ${this.engine.nodeBytes() + TANGENT_BYTES} bytes per node${this.elements > 0 ? ` and ${this.engine.elementBytes() + TANGENT_BYTES} per element` : ''}, ${bytes} for ${this.count} nodes${this.elements > 0 ? ` and ${this.elements} elements` : ''}, over maxMemoryBytes = ${this.maxMemoryBytes}`,
          this.maxMemoryBytes,
        );
      }
      // Within the limit with tangents, where the capacities a larger recording left pass it: the
      // elements down to the live ones, and the nodes to what the rest holds.
      const perNode = this.engine.nodeBytes() + TANGENT_BYTES, perElement = this.engine.elementBytes() + TANGENT_BYTES;
      const over = this.engine.capacity * perNode + this.engine.elementCapacity * perElement > this.maxMemoryBytes;
      const elements = over ? this.elements : this.engine.elementCapacity;
      const most = Math.floor((this.maxMemoryBytes - elements * perElement) / perNode);
      // And at most 4 times what is live (at least 2^16), where a larger recording left them far
      // above it: tangents at those capacities are written whole once (a probe: a jvp of 2 nodes
      // after a reset from 5·10^6 took 128 MB more RSS). A later large recording grows them again.
      const roomy = (live: number, capacity: number): number => Math.min(capacity, Math.max(4 * live, 1 << 16));
      const ok = this.engine.enableTangents(this.count, Math.min(most, roomy(this.count, this.engine.capacity), 2 ** 31 - 8), Math.min(elements, roomy(this.elements, this.engine.elementCapacity), 2 ** 31 - 8));
      this.cacheViews();
      if (!ok) {
        // The engines shrink a capacity a larger recording left to what fits: these nodes alone do not.
        throw new CapacityError(
          `out of memory: no room for tangents of ${this.count} nodes, ${this.engine.nodeBytes() + TANGENT_BYTES} bytes each with them ` +
            `(and the elements'): the runtime gives no more memory; a smaller graph fits`,
          this.capacity,
        );
      }
    }
    return this.engine.views.tan!;
  }

  private seedTangents(inputs: readonly (Var | Vec)[], tangent: ArrayLike<number>, targets: ArrayLike<number>, name = 'tangent', hvpOutput = -1): Int32Array {
    this.refuseInsideRule('cannot run a tangent sweep');
    this.refuseWhileCompiling('a tangent sweep (jvp or hvp)');
    const call = name === 'the direction' ? 'hvp' : 'jvp', base = this.base;
    const nodes = this.nodesOf(inputs, call);
    // The tangent sweep computes every other node's tangent from its operands': one seeded on a
    // computed node would be overwritten, and its jvp read 0.
    for (let k = 0; k < nodes.length; k++) {
      const i = nodes[k]!;
      const op = this.opV[i]!;
      if (op !== INPUT && op !== CONST && op !== VINPUT && op !== VCONST) {
        throw new TapegradError(
          'INVALID_ARGUMENT',
          `${call}: jvp and hvp take the tape's inputs (variable, variables, vector) as their inputs; ${this.nodeLabel(i, false)} (${opNameOf(op)}) is computed from other nodes (its tangent follows from theirs; a gradient with respect to it is a vjp)`,
        );
      }
    }
    // Named by the call, as vjp's cotangent (a probe read a bare "tangent has 1 entry").
    const what = name === 'the direction' ? 'hvp: the direction' : `jvp: the ${name}`;
    checkLength(tangent, this.entryCount(nodes), what, 'inputs');
    const t = readNumbers(tangent, tangent.length, what);
    this.checkNotResetSince(base, call);
    this.evaluate();
    const tan = this.ensureTangents();
    tan.fill(0, 0, this.count);
    const xtan = this.engine.views.xtan!;
    this.engine.clearElementTangents(this.count, this.elements);
    // A constant listed as an input keeps tangent 0: constants are not differentiated. An input
    // listed twice gets the sum of its tangents, each added to -0, which gives a lone tangent
    // bit for bit, -0 included, as a compiled function's seeding does (added to +0, a tangent of
    // -0 came out +0: a probe's jvp of x => [x[0]]).
    for (let pass = 0; pass < 2; pass++) {
      for (let k = 0, pos = 0; k < nodes.length; k++) {
        const i = nodes[k]!;
        const op = this.opV[i]!;
        if (op >= VINPUT) {
          const off = this.aV[i - 1]!, n = this.bV[i - 1]!;
          if (op !== VCONST) for (let e = 0; e < n; e++) xtan[off + e] = pass === 0 ? -0 : xtan[off + e]! + t[pos + e]!;
          pos += n;
        } else {
          if (op !== CONST) tan[i] = pass === 0 ? -0 : tan[i]! + t[pos]!;
          pos++;
        }
      }
    }
    this.tangentSweep(targets, false, 0, hvpOutput);
    return nodes;
  }

  /** @internal Runs a tangent sweep serving `targets` (see tangentReaches): the engine's over the
   *  whole tape, or with `replay` a compiled function's from node `from` (no closure: a compiled
   *  jvp or hvp with `out` allocates nothing). `hvpOutput`: the output of the hvp it is the first
   *  half of, whose own tangent nothing reads (see the engines' setHvpOutput), or -1. */
  tangentSweep(targets: ArrayLike<number>, replay: boolean, from: number, hvpOutput = -1): void {
    this.tangentTargets = targets;
    if (hvpOutput >= 0) this.engine.setHvpOutput(hvpOutput);
    try {
      if (replay) this.engine.tangentReplay(from, this.count);
      else this.engine.tangent(from, this.count);
    } finally {
      if (hvpOutput >= 0) this.engine.setHvpOutput(-1);
      this.tangentTargets = null;
      this.tangentMask = null;
    }
  }

  /** @internal Whether node i's tangent can reach a node the running tangent sweep serves: only
   *  then does a custom node need its jvp rule (one that only feeds a comparison, a select's
   *  condition or stopGradient, or leads nowhere, gets tangent 0 instead, as README says a rule is
   *  needed only where a sweep needs it). Conservative: true on tapes with vector nodes. */
  tangentReaches(i: number): boolean {
    const targets = this.tangentTargets;
    if (targets === null || this.vectorNodes) return true;
    this.tangentMask ??= tangentReach(this.opV, this.aV, this.bV, this.engine.views.val, this.count, targets);
    return this.tangentMask[i] === 1;
  }

  /** Forgets every node in O(1), keeping the memory for the next recording. Every Var and
   *  handle recorded before throws StaleHandleError from now on. */
  reset(): void {
    this.refuseInsideRule('cannot reset');
    this.base += this.count;
    if (this.base >= HANDLE_WRAP_AT) {
      this.previousStart = this.cycleStart;
      this.previousEnd = this.base;
      this.base = this.cycleStart = RESTART_FROM + Math.floor(scattered(++tapeSerial) * RESTART_SPREAD);
      // Within a cycle every handle the constant cache holds falls below the new base, so its
      // check refuses it; a restart could bring one back into the live range.
      this.constantHandles.fill(-1);
    }
    this.count = 0;
    this.evaluated = 0;
    this.engine.custom?.clear();
    if (this.closedBecause !== null) {
      this.closedBecause = null;
      this.capacity = this.room();
    }
    this.swept = NOT_SWEPT;
    this.lastSweep = NO_SWEEP;
    this.vectorNodes = false;
    if (this.elements !== 0) {
      this.elements = 0;
      this.engine.setLiveElements(0);
    }
    // Compiled replay may have grown memory (scratch) since the views were cached.
    this.cacheViews();
  }

  // ---- internals shared by Var and HandleApi (not part of the public surface) ----

  /** @internal `what`: the op (its code) or method its errors name. */
  index(v: Var, what?: string | number): number {
    // Only a Var can hold this tape in `.tape` (the field is set by this module alone), so the
    // tape comparison doubles as the type check and instanceof stays on the error path.
    if (v != null && v.tape === this) {
      const i = v.id - this.base;
      // A live Var's node holds a scalar: past a restart of the handle range a stale one can name
      // a vector's node (as a stale Vec a scalar's, see vindex).
      if (i >= 0 && i < this.count && scalarValued(this.opV[i]!)) return i;
      if (v instanceof Var) throw new StaleHandleError(this.stale(`Var #${v.id}`, what));
    }
    throw this.notAVar(v, what);
  }

  /** @internal */
  indexOfHandle(h: number, op: number | string = -1): number {
    if (typeof h !== 'number') throw this.badHandle(h, op);
    const i = h - this.base;
    if (i >= 0 && i < this.count && (i | 0) === i && scalarValued(this.opV[i]!)) return i;
    throw this.badHandle(h, op);
  }

  /** @internal Index of a node for the operand: a Var's own, or a new constant's. */
  operandId(o: Operand): number {
    return typeof o === 'number' ? this.sharedConstantIndex(o) : this.index(o);
  }

  /** @internal Node indices for several operands, all or nothing: every operand is checked
   *  and room made for its constants and `extra` more nodes before anything is recorded. */
  operandIds(operands: readonly Operand[], extra: number, what?: string | number): number[] {
    let constants = 0;
    for (const o of operands) {
      if (typeof o === 'number') constants++;
      else this.index(o, what);
    }
    this.reserveNodes(constants + extra);
    return operands.map((o) => this.operandId(o));
  }

  /** @internal A new constant node. */
  constantIndex(c: number): number {
    return this.leaf(CONST, c) - this.base;
  }

  /** @internal A constant node holding exactly `c` (-0 and 0 apart): the one recorded for an
   *  earlier operand of that value while it stays cached, else a new one. */
  sharedConstantIndex(c: number): number {
    if (typeof c !== 'number') throw new NotANumberError(`expected a number, got ${describe(c)}`);
    if (!this.shareConstants) return this.constantIndex(c);
    const cached = this.cachedConstant(c);
    if (cached >= 0) return cached;
    const i = this.constantIndex(c);
    if (c === c) this.rememberConstant(c, i + this.base);
    return i;
  }

  /** Caches constant node `handle` as the one holding `c` (not NaN). */
  private rememberConstant(c: number, handle: number): void {
    const slot = constantSlot(c);
    this.constantValues[slot] = c;
    this.constantHandles[slot] = handle;
  }

  /** The live constant node the cache holds for exactly `c`, or -1. */
  private cachedConstant(c: number): number {
    const slot = constantSlot(c);
    // An empty slot holds handle -1, which falls below the live range.
    const i = this.constantHandles[slot]! - this.base;
    const v = this.constantValues[slot]!;
    return v === c && (c !== 0 || 1 / c === 1 / v) && i >>> 0 < this.count ? i : -1;
  }

  /** @internal */
  leaf(op: number, x: number): number {
    if (typeof x !== 'number') throw new NotANumberError(`${op === INPUT ? 'variable' : 'constant'}: expected a number, got ${describe(x)}`);
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
    const i = this.index(x, op);
    return new Var(this, this.record(op, i, i));
  }

  /** @internal */
  recordBinary(op: number, x: Var, y: Operand): Var {
    const i = this.index(x, op);
    let j: number;
    if (typeof y === 'number') {
      // Room for the constant and the op together, so a full tape records neither.
      j = this.constantForOp(y);
      if (op === POW) op = POW_CONST;
    } else {
      j = this.index(y, op);
    }
    return new Var(this, this.record(op, i, j));
  }

  /** @internal `c op y` for a number c (the free functions: `sub(1, y)`): y checked first, then
   *  room for both nodes, so a failure records nothing, and c's constant node shared as `y.op(c)`
   *  shares it. */
  recordNumberBinary(op: number, c: number, y: Var): Var {
    const j = this.index(y, op);
    return new Var(this, this.record(op, this.constantForOp(c), j));
  }

  /** @internal The node of constant c for an op recorded right after it, room for both made
   *  first: one node where c's constant is cached (two were asked for, so a tape with one slot
   *  left refused what the op's fast path records: a probe). */
  constantForOp(c: number): number {
    const cached = this.shareConstants && typeof c === 'number' ? this.cachedConstant(c) : -1;
    this.reserveNodes(cached >= 0 ? 1 : 2);
    return cached >= 0 ? cached : this.sharedConstantIndex(c);
  }

  /** @internal `x op c` for a number c whose constant node the cache holds (see
   *  sharedConstantIndex), else binaryVarNewConstant; x is a Var of this tape (the op methods' `this`),
   *  `op` POW_CONST for pow. */
  binaryVarNumber(op: number, x: Var, c: number): Var {
    const n = this.count, b = this.base, i = x.id - b, j = this.cachedConstant(c);
    if (j >= 0 && i >>> 0 < n && n < this.capacity) {
      this.opV[n] = op;
      this.aV[n] = i;
      this.bV[n] = j;
      this.count = n + 1;
      return new Var(this, n + b);
    }
    return this.binaryVarNewConstant(op, x, c);
  }

  /** @internal `x op c` recording a new constant node for c, where binaryVarNumber's cache
   *  missed: data as operands (`w.mul(X[i])`) miss on nearly every use, and through the checked
   *  path a logistic regression's Var recording took 10-20 ns/node against 8.5-15 this way. Same
   *  nodes and cache entry as recordBinary; NaN (never cached), a stale x or a full tape take the
   *  checked path. */
  binaryVarNewConstant(op: number, x: Var, c: number): Var {
    const n = this.count, b = this.base, i = x.id - b;
    if (i >>> 0 < n && n + 2 <= this.capacity && c === c) {
      this.opV[n] = CONST;
      this.aV[n] = n;
      this.bV[n] = n;
      this.valV[n] = c;
      if (this.shareConstants) this.rememberConstant(c, n + b);
      this.opV[n + 1] = op;
      this.aV[n + 1] = i;
      this.bV[n + 1] = n;
      this.count = n + 2;
      return new Var(this, n + 1 + b);
    }
    return this.recordBinary(op, x, c);
  }

  /** @internal The checked path of the handle API's unary ops. */
  recordUnaryHandle(op: number, h: number): number {
    const i = this.indexOfHandle(h, op);
    return this.record(op, i, i);
  }

  /** @internal The checked path of the handle API's binary ops. */
  recordBinaryHandle(op: number, h1: number, h2: number): number {
    return this.record(op, this.indexOfHandle(h1, op), this.indexOfHandle(h2, op));
  }

  /** @internal Makes room for `k` more nodes now, so a multi-node record fails before it starts. */
  reserveNodes(k: number): void {
    if (this.count + k > this.capacity) this.grow(k);
  }

  /** @internal Room for `n` nodes in all, and no more (expectedNodes: the memory's pages past
   *  them stay free for a compiled function's planner, where a growth takes every page there is). */
  reserveExactly(n: number): void {
    if (n > this.capacity) this.grow(n - this.count, true);
  }

  /** @internal */
  recordSelect(cond: number, ifTrue: number, ifFalse: number): number {
    this.reserveNodes(2);
    this.record(ARG, ifFalse, ifFalse);
    return this.record(SELECT, cond, ifTrue);
  }

  /** @internal Replaces the recording with the given arrays (validated by the caller) and
   *  evaluates it. Leaf values go to the const and input nodes, in order; element values to the
   *  vector leaves (vinput, vconst), in order. Element ranges are laid out again here, in node
   *  order, whatever offsets the vmeta nodes held. */
  load(op: Uint8Array, a: Int32Array, b: Int32Array, leafValues: Float64Array, elementValues = new Float64Array(0)): void {
    this.reset();
    const n = op.length;
    let elements = 0;
    for (let i = 0; i < n; i++) if (op[i] === VMETA) elements += b[i]!;
    try {
      if (n > this.capacity) this.grow(n);
      // With the nodes' share: count is still 0, and the limit was checked against each alone.
      if (elements > 0) this.allocateElements(elements, n);
    } catch (error) {
      // The advice of a recording's CapacityError (reset the tape) cannot help a tape loaded whole.
      if (!(error instanceof CapacityError)) throw error;
      const limit = error.limit === this.maxNodes ? 'maxNodes' : error.limit === this.maxMemoryBytes ? 'maxMemoryBytes' : 0;
      throw new CapacityError(
        `fromBytes: the serialized tape (${n} nodes, ${elements} elements) needs more than ${limit ? `${limit} = ${error.limit}; pass fromBytes a larger ${limit}` : `the ${this.backend} backend's memory`}`,
        error.limit,
      );
    }
    this.vectorNodes = elements > 0 || op.some((code) => code >= VMETA);
    this.opV.set(op);
    this.aV.set(a);
    this.bV.set(b);
    const xval = this.engine.views.xval;
    for (let i = 0, k = 0, e = 0, off = 0; i < n; i++) {
      const code = op[i]!;
      if (code <= INPUT) this.valV[i] = leafValues[k++]!;
      else if (code === VMETA) {
        this.aV[i] = off;
        if (op[i + 1] === VINPUT || op[i + 1] === VCONST) xval.set(elementValues.subarray(e, (e += b[i]!)), off);
        off += b[i]!;
      }
    }
    this.count = n;
    this.evaluate();
  }

  // A compiled function's recording is closed to more nodes (close): a Var that escaped f recorded
  // onto it, growing its size and its bytes (a probe), where a transform's escaped Vars go stale.
  // The op methods' fast paths see no room (capacity = count) and take the checked path, which
  // refuses in grow(); reset() opens the tape again.
  private closedBecause: string | null = null;

  /** @internal Refuses every node recorded from now until the next reset, saying `why`. */
  close(why: string): void {
    this.closedBecause = why;
    this.capacity = this.count;
  }

  // The nodes the façade may record up to: none past the count while closed.
  private room(): number {
    return this.closedBecause !== null ? this.count : Math.min(this.engine.capacity, this.nodeLimit());
  }

  // Custom rules run user JS from inside a sweep, which reads the regions where they were when
  // it started (both engines): recording (which can move them), reset and another sweep of this
  // tape are refused until the rule returns. The op methods' fast paths see no room left
  // (capacity = count) and take the checked path, which refuses in grow().
  private rulesRunning = 0;

  /** @internal Runs a custom rule's JS for a sweep of this tape. */
  insideRule<T>(rule: () => T): T {
    const capacity = this.enterRule();
    try {
      return rule();
    } finally {
      this.leaveRule(capacity);
    }
  }

  /** @internal insideRule's two halves, for callers that call a rule without a closure (the
   *  custom nodes' visits: a closure each was part of 1.15 KB a node a replay, a probe). Returns
   *  what leaveRule takes back. */
  enterRule(): number {
    const capacity = this.capacity;
    this.rulesRunning++;
    this.capacity = this.count;
    return capacity;
  }

  /** @internal */
  leaveRule(capacity: number): void {
    this.rulesRunning--;
    this.capacity = capacity;
  }

  /** @internal The last error refuseInsideRule threw. A custom forward that throws it leaves its
   *  node to compute at the next read; any other error, a TapegradError of a transform or tape the
   *  rule used included, makes the node NaN (a probe's rule calling grad() with a bad argument
   *  left the node uncomputed, and every later read of the tape ran the rule and threw again). */
  refusal: unknown = null;

  /** @internal Throws INVALID_ARGUMENT, saying `what` cannot be done, while a sweep of this tape
   *  runs a custom rule. */
  refuseInsideRule(what: string): void {
    if (this.rulesRunning > 0) {
      throw (this.refusal = new TapegradError('INVALID_ARGUMENT', `${what} while a sweep of this tape runs a custom rule: a rule computes with the numbers it is given, and may not record onto, reset or sweep the tape it is part of, nor read its gradients before the sweep ends`));
    }
  }

  /** @internal Throws INVALID_ARGUMENT while compile records onto this tape: the results of a
   *  sweep run inside f would be baked into the recording as constants, and a replay at other
   *  inputs would be silently wrong (a new-user probe: y·dy/dx from tape.gradient replayed as
   *  y·(its value at the recording point)). */
  refuseWhileCompiling(sweep: string): void {
    if (this.observed !== null) {
      throw new TapegradError(
        'INVALID_ARGUMENT',
        `compile: the function ran ${sweep} on the tape it records on, whose results a replay would reuse as constants; take derivatives outside f`,
      );
    }
  }

  /** @internal */
  installCustomHandler(make: (engine: Backend) => CustomHandler): CustomHandler {
    return (this.engine.custom ??= make(this.engine));
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
    // Inside a custom rule's forward, what the running sweep has computed is the nodes before the
    // rule's (read as they are; refused before, and a replay's later nodes read last replay's).
    if (this.ruleForwardAt >= 0 ? i >= this.ruleForwardAt : i >= this.evaluated) {
      // Computing it would run the forward sweep, and the rule in it, again.
      this.refuseInsideRule('cannot read a value not computed yet');
      this.evaluate();
    }
    // A rule's read is the rule's, made again at every replay's sweep, not f's (compile refused
    // a forward rule reading an earlier node as f baking in a value: a probe).
    if (this.observed !== null && this.rulesRunning === 0) this.observed.add(i);
    const value = this.valV[i]!;
    // checkNaN: every read of a value it rejects throws, not only the read that ran the check (a
    // probe's second .value of a NaN returned it), naming the op that produced it.
    if (this.checkNaN && value - value !== 0 && this.ruleForwardAt < 0) this.assertFinite(i, i + 1, true);
    return value;
  }

  // The node whose op made node i's value non-finite: back from i through an operand whose value
  // (or an element) is not finite either, to a node with none (a leaf's, which checkNaN takes as
  // given, counting as none), or one whose operands the walk does not read: a custom function, a
  // select, concat, gather. Plain scalar ops read a and b; their elementwise forms too; get, the
  // reductions, transpose and slice their vector a; dot and matmul a and b (a probe's second read
  // of log(v).get(1) named vget, where the first named log[]).
  private nonFiniteOrigin(i: number): number {
    const { op, a, b } = this.engine.views;
    for (;;) {
      const code = op[i]!;
      // The op table's operand counts (gather's b, its indices, is left out; a select's or a custom
      // function's, carried by arg nodes, end the walk).
      const arity = code === ARG || code === CUSTOM || code === VGATHER ? 0 : OP_TABLE[code >= ELEMENTWISE ? code - ELEMENTWISE : code]?.[1];
      if ((arity === 1 || arity === 2) && this.madeNonFinite(a[i]!, i)) i = a[i]!;
      else if (arity === 2 && this.madeNonFinite(b[i]!, i)) i = b[i]!;
      else return i;
    }
  }

  // Whether operand x of node i holds a non-finite value (or element) an op made: a scalar's
  // value (get, the reductions and dot are scalar-valued vector ops: a review), a vector's elements.
  private madeNonFinite(x: number, i: number): boolean {
    const code = this.opV[x]!;
    if (x >= i || code <= INPUT || code === VMETA || code === VPARAM || code === VINPUT || code === VCONST) return false;
    if (scalarValued(code)) return this.valV[x]! - this.valV[x]! !== 0;
    this.storeValues(x);
    return this.badElement(x, this.engine.views.xval, false) >= 0;
  }

  /** @internal */
  gradAt(i: number): number {
    if (this.swept < 0) this.checkSwept();
    return i < this.swept && this.opV[i] !== CONST ? this.engine.views.adj[i]! : 0;
  }

  /** @internal */
  backwardIndex(out: number, seed: number, what = 'backward'): void {
    this.refuseInsideRule('cannot run a reverse sweep');
    this.refuseWhileCompiling('a reverse sweep (backward or gradient)');
    if (typeof seed !== 'number') throw new NotANumberError(`${what}: the seed must be a number, got ${describe(seed)}`);
    this.evaluate();
    // A sweep that throws part-way (a custom rule, a trap) leaves partial adjoints, which .grad
    // never returns: the complete sweep before it runs again when an adjoint is read (its
    // gradients were lost before: a probe), or, with none, .grad says so.
    const sweep = this.lastSweep, lastOut = this.lastOut, lastSeed = this.lastSeed, lastCount = this.lastCount, swept = this.completeSwept(), base = this.base;
    this.swept = NOT_SWEPT;
    this.lastSweep = BACKWARD_SWEEP;
    this.lastOut = out;
    this.lastSeed = seed;
    this.lastCount = this.count;
    try {
      this.sweepKeeping(this.checkNaN);
    } catch (error) {
      // A trap of the core resets the tape (recover): nothing of the sweep before is left.
      if (this.base === base) this.sweepFailed(sweep, lastOut, lastSeed, lastCount, this.lastOuts, this.lastCotangent, swept);
      throw error;
    }
    this.swept = this.count;
    if (!this.checkNaN) return;
    // A sweep checkNaN rejects is one that threw: .grad gives the complete one before it.
    try {
      this.assertFinite(0, out + 1, false);
    } catch (error) {
      this.sweepFailed(sweep, lastOut, lastSeed, lastCount, this.lastOuts, this.lastCotangent, swept);
      throw error;
    }
  }

  // After a sweep that threw: the complete first-order sweep before it (these were its fields)
  // is what the adjoints hold again, once it runs on the next read (SWEEP_AGAIN).
  private sweepFailed(sweep: number, out: number, seed: number, count: number, outs: Int32Array, cotangent: Float64Array, swept: number): void {
    if (sweep === NO_SWEEP || swept < 0) {
      this.swept = FAILED_SWEEP;
      this.lastSweep = NO_SWEEP;
      return;
    }
    this.lastSweep = sweep;
    this.lastOut = out;
    this.lastSeed = seed;
    this.lastCount = count;
    this.lastOuts = outs;
    this.lastCotangent = cotangent;
    this.sweptBeforeFailure = swept;
    this.swept = SWEEP_AGAIN;
  }

  // The `swept` of the last complete sweep, whose fields lastSweep... hold: before a failed one
  // interrupted, the one that will run again.
  private completeSwept(): number {
    return this.swept === SWEEP_AGAIN ? this.sweptBeforeFailure : this.swept;
  }

  // Runs the sweep a failed one interrupted, if one waits (see sweepFailed), before an adjoint is
  // read.
  private settleSweep(): void {
    if (this.swept !== SWEEP_AGAIN) return;
    // From a rule, that sweep would run inside the one running the rule (a probe).
    this.refuseInsideRule('cannot read a gradient (.grad) after a reverse sweep that threw (the last complete one would run again)');
    // A rule that throws again leaves SWEEP_AGAIN, and the next read tries again (it said there
    // had been no complete sweep: an audit); a trap's reset leaves NOT_SWEPT.
    this.sweepKeeping(this.checkNaN);
    this.swept = this.sweptBeforeFailure;
  }

  // For reads of adjoints: a complete sweep's, or NO_GRADIENT.
  private checkSwept(): void {
    this.settleSweep();
    if (this.swept >= 0) return;
    // A rule reading .grad of its own tape mid-sweep: its adjoints are partial (a probe got
    // "no gradient yet: call tape.backward", after complete sweeps).
    this.refuseInsideRule('cannot read a gradient (.grad)');
    throw new TapegradError('NO_GRADIENT', this.swept === FAILED_SWEEP
      ? 'no gradient: the last reverse sweep stopped part-way (it threw), with no complete one before it; call tape.backward(output) again'
      : 'no gradient yet: call tape.backward(output) after recording, before reading .grad');
  }

  /** @internal Computes every value recorded since the last evaluation. */
  evaluate(): void {
    if (this.evaluated < this.count) {
      const from = this.evaluated;
      const custom = this.engine.custom;
      if (custom) custom.failedForward = -1;
      try {
        this.engine.forward(from, this.count);
      } catch (error) {
        this.forwardPastFailedRules(error, from);
      }
      this.evaluated = this.count;
      if (this.checkNaN) this.assertFinite(from, this.count, true);
    }
  }

  // A custom rule's forward threw (or returned no number) at a node: that node's value is NaN, as
  // an invalid IEEE operation gives, the sweep goes on past it (and past each later such node),
  // and the first error reaches the read that ran the sweep. Left unevaluated, the node ran its
  // rule again at every later read of any node and threw again, until reset. Any other error
  // leaves the values as they were.
  private forwardPastFailedRules(error: unknown, from: number): never {
    const custom = this.engine.custom;
    let failed = custom ? custom.failedForward : -1;
    if (!custom || failed < from) throw error;
    while (failed >= from) {
      custom.failedForward = -1;
      this.engine.views.val[failed] = NaN;
      try {
        this.engine.forward(failed + 1, this.count);
        failed = -1;
      } catch (later) {
        if (custom.failedForward <= failed) throw later;
        failed = custom.failedForward;
      }
    }
    this.evaluated = this.count;
    throw error;
  }

  /** @internal Throws NonFiniteError at the first NaN/±Infinity value (or adjoint) in [from, to).
   *  Nodes are named by handle, or by index (`byIndex`) for a compiled function, whose handles
   *  the caller never sees and whose workers' tapes number them differently. */
  assertFinite(from: number, to: number, values: boolean, byIndex = false): void {
    // A sweep reads the values of the nodes it reaches: one checkNaN rejected throws again, as a
    // read of it does (a probe's second backward from an Infinity it had refused passed).
    if (!values) this.assertReachedFinite(from, to, this.engine.views.adj, byIndex);
    if (this.engine.firstNonFinite(from, to, values) < 0) return;
    const { op, a, b, val, adj } = this.engine.views;
    const name = (i: number): string => opNameOf(op[i]!);
    const id = (i: number): number => this.nodeId(i, byIndex);
    const node = (i: number): string => this.nodeLabel(i, byIndex);
    const { xval, xadj } = this.engine.views;
    // The first element of vector node i that is not finite, in values or adjoints.
    const badElement = (i: number, data: Float64Array): number => this.badElement(i, data, data === xadj);
    if (values) {
      // Named by the op that made it so, which may come before `from` (a read of new nodes that
      // consume an old NaN).
      const i = this.nonFiniteOrigin(this.engine.firstNonFinite(from, to, true));
      const k = badElement(i, xval);
      if (k >= 0) {
        throw new NonFiniteError(`checkNaN: ${name(i)} at ${node(i)} (a vector) produced ${xval[a[i - 1]! + k]} at element ${k}`, id(i), name(i));
      }
      // A unary op records its operand twice: name it once.
      const unary = OP_TABLE[op[i]!]?.[1] === 1;
      // A custom node's operands, as many as it has (its message named none).
      const xs = op[i] === CUSTOM ? this.engine.custom!.operandValues(i) : op[i]! >= VMETA ? [] : unary ? [val[a[i]!]!] : [val[a[i]!]!, val[b[i]!]!];
      const operands = xs.length === 0 ? '' : ` from operand${xs.length > 1 ? 's' : ''} ${xs.join(', ')}`;
      // A custom node by its function's name, as the adjoint and tangent messages give it (a probe).
      const who = op[i] === CUSTOM ? `custom function '${this.engine.custom!.ruleName(i)}'` : name(i);
      throw new NonFiniteError(`checkNaN: ${who} at ${node(i)} produced ${val[i]}${operands}`, id(i), name(i));
    }
    // The reverse sweep runs downwards: the highest node with a non-finite adjoint is the first
    // one it produced, and the consumer that sent it is the op whose rule is to blame.
    let j = to - 1;
    while (j >= from && adj[j]! - adj[j]! === 0 && badElement(j, xadj) < 0) j--;
    // The sweep adds each consumer's adjoint times its partial, neither 0, and the consumers
    // above j have finite adjoints: blame the one whose term is not finite (blameConsumer).
    const consumer = this.blameConsumer(j, to, (i) => {
      const g = adj[i]!, pa = partials(op[i]!, val[a[i]!]!, val[b[i]!]!, val[i]!), pb = partialZ[0]!;
      return g === 0 ? 0 : (a[i] === j && pa !== 0 ? g * pa : 0) + (b[i] === j && pb !== 0 ? g * pb : 0);
    });
    const at = consumer < 0 ? j : consumer;
    const element = badElement(j, xadj);
    const shown = element < 0 ? `${adj[j]}` : `${xadj[a[j - 1]! + element]} at element ${element}`;
    throw new NonFiniteError(
      consumer < 0
        ? `checkNaN: the adjoint of ${node(j)} (${name(j)}) is ${shown}: the seed is not finite`
        : `checkNaN: ${op[consumer] === CUSTOM ? `custom function '${this.engine.custom!.ruleName(consumer)}'` : name(consumer)} at ${node(consumer)} sent a non-finite adjoint (${shown}) to ${node(j)} (${name(j)})`,
      id(at),
      name(at),
    );
  }

  // A node in [from, to) a sweep reached (`reached`: its adjoints, or tangents, with the tangent
  // sweep's `targets`: a tangent no target uses reached nothing) whose value an op made
  // non-finite, named as a read of it names it.
  private assertReachedFinite(from: number, to: number, reached: Float64Array, byIndex: boolean, targets?: ArrayLike<number>): void {
    const { op, a, b, val } = this.engine.views;
    let reach: Uint8Array | null = null;
    for (let i = from; i < to; i++) {
      if (reached[i] !== 0 && val[i]! - val[i]! !== 0 && op[i]! > ARG && op[i]! < VMETA
        && (!targets || this.vectorNodes || (reach ??= tangentReach(op, a, b, val, this.count, targets))[i])) this.assertFinite(i, i + 1, true, byIndex);
    }
  }

  /** @internal Throws NonFiniteError at the first node in [from, to) whose tangent (or a tangent
   *  element) is NaN or ±Infinity, after a tangent sweep (jvp, hvp) serving `targets`; names as
   *  assertFinite. */
  assertFiniteTangents(from: number, to: number, byIndex: boolean, targets: ArrayLike<number>): void {
    this.engine.materializeTangents(to);
    const { op, a, b, val, tan, xtan } = this.engine.views;
    // A value checkNaN rejected that the sweep carried a tangent through to a target throws
    // again, as a read of it does; one no target uses does not (a review: jvp of an output that
    // did not use the rejected node threw, where its gradient did not).
    this.assertReachedFinite(from, to, tan!, byIndex, targets);
    let reach: Uint8Array | null = null;
    for (let i = from; i < to; i++) {
      let t = tan![i]!, k = -1;
      // A vector names its element, as values and adjoints do; an input's tangent is the caller's
      // direction, which no op produced (a probe found both reported as an op's).
      if (op[i]! >= VINPUT) while (++k < b[i - 1]! && (t = xtan![a[i - 1]! + k]!) - t === 0);
      if (t - t !== 0) {
        // Not a tangent that reaches no target (the branch a select did not take, one behind floor,
        // a node nothing uses), which the sweep takes as none (a probe: checkNaN refused the jvp of
        // where(x > 0, sqrt(x), 2x) at 0, whose value and gradient it passed).
        if (op[i] !== INPUT && !this.vectorNodes && !(reach ??= tangentReach(op, a, b, val, this.count, targets))[i]) continue;
        const at = k < 0 ? t : `${t} at element ${k}`, name = opNameOf(op[i]!);
        throw new NonFiniteError(op[i] === INPUT || op[i] === VINPUT
          ? `checkNaN: the tangent of ${this.nodeLabel(i, byIndex)} (${name}) is ${at}: the direction is not finite`
          : `checkNaN: ${op[i] === CUSTOM ? `custom function '${this.engine.custom!.ruleName(i)}'` : name} at ${this.nodeLabel(i, byIndex)} produced a non-finite tangent (${at})`, this.nodeId(i, byIndex), name);
      }
    }
  }

  /** @internal Throws NonFiniteError where hvp's reverse sweep with tangents left a non-finite
   *  adjoint tangent in [from, to) (what hvp returns: a second derivative that overflowed, as
   *  pow(x, 1.5)'' at 0, where values, adjoints and tangents are all finite). As for adjoints,
   *  the highest such node is the first the sweep produced, and the consumer whose term (its
   *  adjoint's tangent times the partial, plus its adjoint times the partial's tangent, recomputed
   *  by the JS engine's rules) is not finite is blamed; then one whose term is not recomputed (a
   *  select's, a custom function's, a vector op's), then the first plain one. */
  assertFiniteTangentAdjoints(from: number, to: number, byIndex = false): void {
    const { op, a, b, val, adj, tan, tanAdj, xtanAdj } = this.engine.views;
    const notFinite = (i: number): [number, number] | null => {
      const t = tanAdj![i]!;
      if (t - t !== 0) return [t, -1];
      const k = this.badElement(i, xtanAdj!, true);
      return k < 0 ? null : [xtanAdj![a[i - 1]! + k]!, k];
    };
    let j = to - 1, bad: [number, number] | null = null;
    while (j >= from && (bad = notFinite(j)) === null) j--;
    if (bad === null) return;
    // Each consumer's term: its adjoint's tangent times the partial plus its adjoint times the
    // partial's tangent, recomputed by the JS engine's rules.
    const consumer = this.blameConsumer(j, to, (i) => {
      const code = op[i]!, g = adj[i]!, gt = tanAdj![i]!, x = val[a[i]!]!, z = val[b[i]!]!, y = val[i]!;
      const pa = partials(code, x, z, y), pb = partialZ[0]!;
      const dpa = partialsTangent(code, x, z, y, tan![a[i]!]!, tan![b[i]!]!, tan![i]!), dpb = partialZTangent[0]!;
      const term = (p: number, dp: number): number => (gt !== 0 && p !== 0 ? gt * p : 0) + (g !== 0 && dp !== 0 ? g * dp : 0);
      return (a[i] === j ? term(pa, dpa) : 0) + (b[i] === j && OP_TABLE[code]?.[1] === 2 ? term(pb, dpb) : 0);
    });
    const [t, element] = bad;
    const shown = element < 0 ? `${t}` : `${t} at element ${element}`;
    const at = consumer < 0 ? j : consumer, name = opNameOf(op[at]!);
    const who = op[at] === CUSTOM ? `custom function '${this.engine.custom!.ruleName(at)}'` : name;
    throw new NonFiniteError(
      consumer >= 0
        ? `checkNaN: ${who} at ${this.nodeLabel(at, byIndex)} produced a non-finite second-order adjoint (${shown}) for ${this.nodeLabel(j, byIndex)} (hvp)`
        : `checkNaN: the second-order adjoint of ${this.nodeLabel(j, byIndex)} (${name}) is ${shown} (hvp)`,
      this.nodeId(at, byIndex), name);
  }

  // The first element of vector node i that is not finite in `data` (values, adjoints or their
  // tangents), or -1; with `reached`, only where a sweep reached the node (its adjoint flag).
  private badElement(i: number, data: Float64Array, reached: boolean): number {
    const { op, a, b, adj } = this.engine.views;
    if (op[i]! < VINPUT || (reached && adj[i] === 0)) return -1;
    const off = a[i - 1]!, n = b[i - 1]!;
    for (let k = 0; k < n; k++) if (data[off + k]! - data[off + k]! !== 0) return k;
    return -1;
  }

  // The consumer of node j in (j, to) to blame for its non-finite adjoint (or adjoint tangent):
  // the first plain op whose term `sent(i)` is not finite; else the first select, custom function
  // or vector op reading j, whose terms are not recomputed; else the first plain consumer (terms
  // each finite whose sum overflowed; a probe saw mul named for the Infinity a custom vjp sent);
  // -1 with none.
  private blameConsumer(j: number, to: number, sent: (i: number) => number): number {
    const op = this.engine.views.op;
    let opaque = -1, plain = -1;
    for (let i = j + 1; i < to; i++) {
      const reader = this.operandReader(i, j, to);
      if (reader < 0) continue;
      const code = op[reader]!;
      if (code === SELECT || code === CUSTOM || code >= VMETA) {
        if (opaque < 0) opaque = reader;
        continue;
      }
      const term = sent(i);
      if (term - term !== 0) return i;
      if (plain < 0) plain = i;
    }
    return opaque >= 0 ? opaque : plain;
  }

  // The node that reads node j as an operand through node i, or -1: i itself, or for an arg node
  // the select or custom op its run of arg nodes carries operands for. Only operand fields count
  // (a vector's metadata holds element offsets and lengths, a vget an element index, which a
  // probe saw matched as node numbers); a select reads its branches (its condition gets no
  // adjoint).
  private operandReader(i: number, j: number, to: number): number {
    const { op, a, b } = this.engine.views;
    const code = op[i]!;
    if (code === ARG) {
      if (a[i] !== j && b[i] !== j) return -1;
      let c = i + 1;
      while (c < to && op[c] === ARG) c++;
      return c < to && (op[c] === CUSTOM || (op[c] === SELECT && c === i + 1 && a[i] === j)) ? c : -1;
    }
    if (code >= ELEMENTWISE) return a[i] === j || b[i] === j ? i : -1;
    if (code === SELECT) return b[i] === j ? i : -1;
    const arity = code === CUSTOM ? 0 : OP_TABLE[code]?.[1] ?? 0;
    return (arity >= 1 && a[i] === j) || (arity === 2 && b[i] === j) ? i : -1;
  }

  // How checkNaN's errors name node i: by handle, or by index for a compiled function.
  // A vector node by its vector handle (~(i + base)), which the API reads (a probe: `node` was a
  // number every handle call refused).
  private nodeId(i: number, byIndex: boolean): number {
    return byIndex ? i : this.isVector(i) ? ~(i + this.base) : i + this.base;
  }

  private nodeLabel(i: number, byIndex: boolean): string {
    return byIndex ? `node ${i}` : this.isVector(i) ? `vector handle ${~(i + this.base)}` : `node #${i + this.base}`;
  }

  // ---- array-valued nodes (the Vec façade lives in vector.ts) ----

  /** @internal Node index of a Vec of this tape (Vec handles are ~(node + base): negative). */
  vindex(v: Vec, what?: string): number {
    if (v != null && v.tape === this) {
      const i = ~v.id - this.base;
      // A live Vec's node is a vector: past a restart of the handle range a stale Vec can alias
      // a scalar node, which as a vector read offsets out of its neighbours' operands (a probe:
      // the core trapped and the live recording was lost; the JS engine made up elements).
      // Of its own size too: a stale Vec over a live vector of another size read past it into
      // its neighbours (a review: a [2, 3] Vec's transpose over a 2-element vector).
      if (i >= 0 && i < this.count && this.opV[i]! >= VINPUT && this.bV[i - 1] === sizeOf(v.shape)) return i;
      throw new StaleHandleError(this.stale(`Vec #${~v.id}`, what));
    }
    const named = prefixOf(what);
    if (v instanceof Vec) throw new ForeignHandleError(`${named}Vec #${~v.id} belongs to another tape (${v.tape.backend}); operands must come from the same tape${capturedHint(this, v.tape, 'Vec')}`);
    if ((v as unknown) instanceof Var) throw new ShapeError(`${named}expected a Vec here, got a scalar Var; stack([...]) makes a vector of scalars`, nameOf(what) ?? 'vector', [[]]);
    throw new NotANumberError(`${named}expected a Vec, got ${describe(v)}`);
  }

  /** @internal Node index of a vector handle (as vindex). */
  vindexOfHandle(h: number, what = 'vector'): number {
    if (typeof h !== 'number' || !Number.isInteger(h) || h >= 0) {
      if (typeof h !== 'number') throw this.badHandle(h, what === 'vector' ? -1 : what);
      if (!Number.isInteger(h)) throw new InvalidHandleError(`${vectorWhere(what)}${h} is not a vector handle of this tape: vector handles are negative integers`);
      // A live scalar is the wrong shape; any other non-negative integer is no node to read here
      // (a new-user probe: 5 and 12345 on a tape of three nodes were "a scalar").
      const i = h - this.base;
      if (i >= 0 && i < this.count && scalarValued(this.opV[i]!)) throw new ShapeError(`${what}: handle ${h} is a scalar; a vector handle is expected here`, what, [[]]);
      if (i >= 0 && i < this.count && this.isVector(i)) throw new InvalidHandleError(`${vectorWhere(what)}handle ${h} is vector handle ${~h}'s node`);
      throw this.badHandle(h, what === 'vector' ? -1 : what);
    }
    const i = ~h - this.base;
    if (i >= 0 && i < this.count && this.opV[i]! >= VINPUT) return i;
    // Past a restart of the handle range, a handle of the cycle before may lie above the base.
    if (this.wasLive(~h)) throw new StaleHandleError(`${vectorWhere(what)}vector handle ${h} was recorded before tape.reset() (or on another tape); record it again on the current tape`);
    throw new InvalidHandleError(`${vectorWhere(what)}${h} is not a vector handle of this tape`);
  }

  /** @internal Whether node i is array-valued. */
  isVector(i: number): boolean {
    return this.opV[i]! >= VINPUT;
  }

  /** @internal Element offset and length of vector node i. */
  elementOffset(i: number): number {
    return this.aV[i - 1]!;
  }

  /** @internal */
  elementLength(i: number): number {
    return this.bV[i - 1]!;
  }

  /** @internal Elements recorded since the last reset. */
  get elementCount(): number {
    return this.elements;
  }

  /** @internal Whether any array-valued node was recorded since the last reset. */
  get hasVectorNodes(): boolean {
    return this.vectorNodes;
  }

  /** @internal Records a vector node of n elements: `carriers` (pairs of integers: arg or vparam
   *  nodes, in order) then its vmeta node, then the node. All or nothing: room for the nodes and
   *  the elements is made before anything is written. Returns the node index. */
  recordVector(op: number, ia: number, ib: number, n: number, carrierOps: readonly number[] = NO_CARRIERS, carriers: readonly number[] = NO_CARRIERS): number {
    this.reserveNodes(carrierOps.length + 2);
    const off = this.allocateElements(n, carrierOps.length + 2);
    this.vectorNodes = true;
    for (let c = 0; c < carrierOps.length; c++) this.record(carrierOps[c]!, carriers[2 * c]!, carriers[2 * c + 1]!);
    this.record(VMETA, off, n);
    return this.record(op, ia, ib) - this.base;
  }

  /** @internal A vector leaf (input or constant) holding `values`; its values are known now.
   *  Callers make room first (reserveVector), so that `values` is not read past the limits. */
  recordVectorLeaf(op: number, values: ArrayLike<number>, n = values.length): number {
    const entries = readNumbers(values, n, op === VCONST ? 'constant vector' : 'vector');
    const caughtUp = this.evaluated === this.count;
    const i = this.recordVector(op, 0, 0, n);
    const { xval } = this.engine.views;
    xval.set(entries, this.aV[i - 1]!);
    this.aV[i] = i;
    this.bV[i] = i;
    if (caughtUp) this.evaluated = this.count;
    return i;
  }

  /** @internal Values of vector node i (a copy). */
  vectorValues(i: number): Float64Array {
    if (i >= this.evaluated) this.evaluate();
    this.storeValues(i);
    // Every read of what checkNaN rejected throws, a Vec's as a Var's (a probe's second read of
    // a rejected Vec returned its NaN).
    if (this.checkNaN && this.ruleForwardAt < 0) this.assertFinite(i, i + 1, true);
    if (this.observed !== null && this.rulesRunning === 0) this.observed.add(i);
    const off = this.aV[i - 1]!;
    return this.engine.views.xval.slice(off, off + this.bV[i - 1]!);
  }

  /** @internal Puts the values of vector node i in memory where a fused run left them out. */
  storeValues(i: number): void {
    if (this.engine.views.val[i] === DEFERRED_VALUES) this.engine.materialize(i);
  }

  /** @internal Adjoints of vector node i from the last reverse sweep (zeros for constants). */
  vectorGrads(i: number, from: 'adj' | 'tanAdj' = 'adj'): Float64Array {
    if (this.swept < 0) this.checkSwept();
    const off = this.aV[i - 1]!, n = this.bV[i - 1]!;
    if (from === 'adj') this.keepAdjointsOf([i]);
    // A constant, or a vector no rule reached in the last sweep, has no adjoint written: 0.
    if (i >= this.swept || this.opV[i] === Op.vconst || this.engine.views.adj[i] === 0) return new Float64Array(n);
    const src = from === 'adj' ? this.engine.views.xadj : this.engine.views.xtanAdj!;
    return src.slice(off, off + n);
  }

  /** @internal Makes room for `nodes` more nodes and `elements` more elements now (both limits
   *  checked together, regions grown), so an op that records several vector nodes (its constants,
   *  then itself) fails before it records the first. */
  reserveVector(nodes: number, elements: number): void {
    // Nodes first, as recordVector takes them: growing the nodes may shrink the element capacity
    // to the live elements (grow), which would let go of room reserved for these.
    this.reserveNodes(nodes);
    this.reserveElements(elements, nodes);
  }

  /** Takes n elements; `nodes` are the nodes about to be recorded with them, which must fit too
   *  (else the elements would be taken by a record that then fails on its nodes). */
  private allocateElements(n: number, nodes = 0): number {
    const needed = this.reserveElements(n, nodes);
    const off = this.elements;
    this.elements = needed;
    this.engine.setLiveElements(needed);
    if (this.maxMemoryBytes !== Infinity) this.capacity = this.room();
    return off;
  }

  /** Checks the limits for n more elements and `nodes` more nodes and grows the element regions;
   *  changes nothing recorded. Returns the element count after taking them. */
  private reserveElements(n: number, nodes: number): number {
    this.refuseInsideRule('cannot record');
    // Before the regions grow, as grow() refuses the nodes after (a refused op grew them: a review).
    if (this.closedBecause !== null) throw new TapegradError('INVALID_ARGUMENT', this.closedBecause);
    const needed = this.elements + n;
    // Without a limit, no call into the core for the sizes (every vector op comes here).
    if (this.maxMemoryBytes !== Infinity && needed * this.engine.elementBytes() + (this.count + nodes) * this.engine.nodeBytes() > this.maxMemoryBytes) {
      const elementBytes = this.engine.elementBytes();
      // Room for nodes alone (a composite's, mean's) named as such (a probe: "0 more elements").
      const more = n > 0 ? `${n} more elements (${elementBytes} bytes each)${nodes > 0 ? ` and ${nodes} nodes` : ''}` : `${nodes} more nodes (${this.engine.nodeBytes()} bytes each)`;
      // An empty tape's names no reset, which would change nothing (a README audit), as grow's.
      throw new CapacityError(
        this.count === 0 ? `tape cannot hold ${more}: maxMemoryBytes = ${this.maxMemoryBytes}`
          : `tape is full: ${more} with ${counted(this.elements, 'element')} and ${counted(this.count, 'node')} recorded exceed maxMemoryBytes = ${this.maxMemoryBytes}; call tape.reset() to reuse it`,
        this.maxMemoryBytes,
      );
    }
    // Element offsets are 32-bit in the core: a count past 2^31 wrapped there and was recorded
    // with a wrong size (a 46341 x 46341 outer product).
    if (needed > 2 ** 31 - 8) {
      throw new CapacityError(this.count === 0 ? `tape cannot hold ${n} elements: ${2 ** 31 - 8} is the most a tape holds`
        : `tape is full: ${n} more elements with ${this.elements} recorded pass the ${2 ** 31 - 8} a tape holds; call tape.reset() to reuse it`, 2 ** 31 - 8);
    }
    if (needed > this.engine.elementCapacity) {
      const limit = this.growthRoom(false, this.count + nodes, needed, Math.min(2 ** 31 - 8, Math.floor(this.maxMemoryBytes / this.engine.elementBytes())));
      let ok = this.engine.reserveElements(needed, this.elements, Math.ceil(limit / 8) * 8);
      // The node capacity past the live nodes and those the op reserved goes first, as in grow.
      if (!ok && this.engine.capacity > Math.max(this.count + nodes, MIN_REGION)) {
        this.engine.fitCapacities(this.count + nodes + 7, this.engine.elementCapacity, this.count);
        ok = this.engine.reserveElements(needed, this.elements, Math.ceil(limit / 8) * 8);
      }
      this.cacheViews();
      if (!ok) {
        throw new CapacityError(
          `out of memory: the ${this.engine.kind} backend could not grow its element regions to ${needed} elements ` +
            `(${this.engine.memoryBytes()} bytes in use; a tape holds at most 4 GiB, and the runtime may give less)${this.count > 0 ? '; call tape.reset() to reuse it' : ''}`,
          this.engine.elementCapacity,
        );
      }
    }
    return needed;
  }

  /** The most the growing region (`nodesGrow`: the nodes', else the elements') may take, its
   *  `most` by the limits as recorded: where its doubling beside the other region's capacity would
   *  pass maxMemoryBytes, the room left past what both hold is shared in proportion to what each
   *  holds, and the other region's capacity shrinks to its share first. Kept across reset from a
   *  larger recording, a region's capacity beside the other's held both, twice the limit
   *  (recordings alternating a scalar peak and a vector one: a probe); a region doubling up to the
   *  limit beside the other's spare capacity held up to 1.4 times it (a memory-limits probe); one
   *  growing only into what the other's capacity left grew a few slots at a time, each growth a
   *  copy of the tape, quadratic (the review after it). Shared so, the growths near the limit are
   *  few. The limit itself still counts what is recorded, to the byte. */
  private growthRoom(nodesGrow: boolean, nodes: number, elements: number, most: number): number {
    if (this.maxMemoryBytes === Infinity) return most;
    const nb = this.engine.nodeBytes(), eb = this.engine.elementBytes();
    const cap = this.engine.capacity, ecap = this.engine.elementCapacity;
    // Up to what the other region's capacity leaves, where that is a doubling at least.
    const doubled = Math.min(most, nodesGrow ? Math.max(nodes, 2 * cap) : Math.max(elements, 2 * ecap));
    const beside = Math.floor(nodesGrow ? (this.maxMemoryBytes - ecap * eb) / nb : (this.maxMemoryBytes - cap * nb) / eb);
    if (beside >= doubled) return Math.min(most, beside);
    // The room left, in the shares the two regions hold now: a recording that grows both at
    // their rates fills both shares together.
    const free = Math.max(0, this.maxMemoryBytes - nodes * nb - elements * eb);
    const nodeShare = (nodes * nb) / Math.max(1, nodes * nb + elements * eb);
    const nodeRoom = nodes + Math.floor((free * nodeShare) / nb), elementRoom = elements + Math.floor((free * (1 - nodeShare)) / eb);
    if (nodesGrow) {
      if (ecap > elementRoom) this.engine.fitCapacities(cap, elementRoom, this.count);
      return Math.min(most, nodeRoom);
    }
    if (cap > nodeRoom) this.engine.fitCapacities(nodeRoom, ecap, this.count);
    return Math.min(most, elementRoom);
  }

  /** Most nodes the limits allow at the current bytes per node (elements take their share of
   *  maxMemoryBytes first). */
  private nodeLimit(): number {
    const forNodes = this.maxMemoryBytes - this.elements * this.engine.elementBytes();
    return Math.min(this.maxNodes, Math.floor(forNodes / this.engine.nodeBytes()), 2 ** 31 - 8);
  }

  private grow(extra = 1, exactly = false): void {
    this.refuseInsideRule('cannot record');
    if (this.closedBecause !== null) throw new TapegradError('INVALID_ARGUMENT', this.closedBecause);
    const needed = this.count + extra;
    const limit = this.nodeLimit();
    if (needed > limit) {
      // The limit that binds, with the vector elements' share of the memory taken first (maxNodes
      // was named where elements had used up maxMemoryBytes, a new-user probe).
      const elementBytes = this.elements * this.engine.elementBytes();
      const byNodes = this.maxNodes <= Math.floor((this.maxMemoryBytes - elementBytes) / this.engine.nodeBytes());
      const memory = `maxMemoryBytes = ${this.maxMemoryBytes} (${this.engine.nodeBytes()} bytes per node${elementBytes > 0 ? `, ${elementBytes} taken by ${this.elements} vector elements` : ''})`;
      // An empty tape that cannot take the nodes asked for at once: resetting it changes nothing
      // (a probe: "with 0 nodes recorded ...; call tape.reset()" for 10^10 inputs).
      throw new CapacityError(
        this.count === 0
          ? `tape cannot hold ${extra} nodes: ${byNodes ? `maxNodes = ${this.maxNodes}` : memory}`
          : `tape is full: ${byNodes ? `maxNodes = ${this.maxNodes}` : memory} ` +
            `with ${counted(this.count, 'node')} recorded${extra > 1 ? ` and ${extra} more needed` : ''}; call tape.reset() to reuse it`,
        byNodes ? this.maxNodes : this.maxMemoryBytes,
      );
    }
    // Engines allocate in multiples of 8 nodes (f64 alignment); `capacity` below keeps the
    // façade at the exact limit.
    const room = this.growthRoom(true, needed, this.elements, limit), most = Math.ceil((exactly ? needed : room) / 8) * 8;
    let ok = this.engine.reserve(needed, this.count, most);
    // A reset keeps both capacities: where the memory (4 GiB, or a runtime's cap) has no room for
    // the nodes, the element capacity past the live elements goes first (probes: after a vector
    // of 2^27 elements, or 1.5 M scalars under a 64 MiB cap, the tape refused the other kind for
    // its life, reset() or not). Always reserved before elements (reserveVector), so no room an
    // op has reserved goes.
    if (!ok && this.engine.elementCapacity > Math.max(this.elements, MIN_REGION)) {
      this.engine.fitCapacities(this.engine.capacity, 0, this.count);
      ok = this.engine.reserve(needed, this.count, most);
    }
    this.cacheViews();
    if (!ok) {
      throw new CapacityError(
        `out of memory: the ${this.engine.kind} backend could not grow the tape to ${needed} nodes (it holds ${this.capacity}, ` +
          `in ${this.engine.memoryBytes()} bytes; a tape holds at most 4 GiB, and the runtime may give less)` +
          `${this.count > 0 ? '; call tape.reset() to reuse it' : ''}`,
        this.capacity,
      );
    }
  }

  // The nodes from `first` on taken back (variables' inputs where it could not hand them out).
  private takeBack(first: number): void {
    this.count = first;
    if (this.evaluated > first) this.evaluated = first;
  }

  private cacheViews(): void {
    const v = this.engine.views;
    this.capacity = this.room();
    this.opV = v.op;
    this.aV = v.a;
    this.bV = v.b;
    this.valV = v.val;
  }

  /** @internal Why a Var of this tape goes stale without the caller's reset, for its message: set
   *  on the transforms' pooled tapes, which they reset after each call, and on a compiled
   *  function's, which records again where a guard changes path (a probe read "recorded before
   *  tape.reset()" for neither). */
  staleWhy = '';

  private stale(which: string, op: string | number | undefined): string {
    const what = nameOf(op);
    // A Var kept from an earlier transform call reached the next one on the same pooled tape: the
    // user never called reset (a probe).
    return `${what === undefined ? '' : `${what}: `}${which} was recorded before tape.reset()${this.staleWhy}; record it again on the current tape`;
  }

  private notAVar(v: unknown, op?: string | number): Error {
    // A probe: in a long expression, a message naming no op left the failing call to guess.
    const what = nameOf(op), named = prefixOf(op);
    if (v instanceof Vec) {
      return new ShapeError(`${named}expected a scalar Var here, got a Vec of shape [${v.shape.join(', ')}]; take .get(i), .sum() or another reduction${typeof op === 'number' ? ` (${what}(s, v) broadcasts s)` : ''}`, what ?? 'scalar', [v.shape]);
    }
    if (v instanceof Var) {
      return new ForeignHandleError(`${named}Var #${v.id} belongs to another tape (${v.tape.backend}); operands must come from the same tape${capturedHint(this, v.tape)}`);
    }
    if (typeof v === 'number') return new NotANumberError(`${named}expected a Var of this tape here, got the number ${v}`);
    // An op takes numbers; a list of nodes (gradient's, vjp's) takes Vecs; a method's output (backward's) neither.
    const list = typeof op === 'string' && op.startsWith(LIST);
    return new NotANumberError(`${named}expected a Var${typeof op === 'number' || op === undefined ? ' or a number' : list ? ' or a Vec' : ''}, got ${describe(v)}`);
  }

  // `op`: the op the handle is an operand of, which a ShapeError names (-1: none).
  // `op`: the op code, or the name of the call reading the handle ('value', 'gradient'...).
  private badHandle(h: unknown, op: number | string = -1): Error {
    // The call or op the handle reached, named first as the Var API's errors are (a probe: a stale
    // handle to h.mul said nothing of mul).
    const where = prefixOf(op);
    if (typeof h !== 'number') return new NotANumberError(`${where}expected a handle (integer), got ${describe(h)}`);
    // Reached with a negative integer only where a scalar handle is needed, as Var methods give a
    // Vec there (tape.backward(vec)).
    const v = ~h - this.base;
    if (h < 0 && Number.isInteger(h) && v >= 0 && v < this.count && this.isVector(v)) {
      const what = typeof op === 'string' ? op : op < 0 ? 'scalar' : opNameOf(op);
      return new ShapeError(`${what === 'scalar' ? '' : `${what}: `}handle ${h} is a vector, where a scalar handle is needed (tape.handles.vec reads vectors: value, grad, sum)`, what, [[this.elementLength(v)]]);
    }
    if (h < 0 && Number.isInteger(h) && this.wasLive(~h)) {
      return new StaleHandleError(`${where}vector handle ${h} was recorded before tape.reset() (or on another tape); record it again on the current tape`);
    }
    // An op's operand: the handle ops take handles only, where Var's take numbers too (a new-user
    // probe wrote h.mul(a, 3) and read only that 3 was no node).
    // Not for a handle's size (one past the last, another tape's): a probe was told to record
    // 497706708 as a number.
    const asNumber = typeof op === 'number' && op >= 0 && (!Number.isInteger(h) || h < RESTART_FROM) ? `; record a number first: tape.handles.constant(${h})` : '';
    if (!Number.isInteger(h) || h < 0) return new InvalidHandleError(`${where}${h} is not a handle: scalar handles are non-negative integers, vector handles negative ones of tape.handles.vec${asNumber}`);
    if (this.wasLive(h)) return new StaleHandleError(`${where}handle ${h} was recorded before tape.reset() (or on another tape); record it again on the current tape`);
    const i = h - this.base;
    if (i >= 0 && i < this.count) {
      // Ids the API never hands out as scalar handles, reached by arithmetic on handles.
      if (this.isVector(i)) return new ShapeError(`${where}handle ${h} is the node of vector handle ${~h}, where a scalar handle is needed`, typeof op === 'string' ? op : 'scalar', [[this.elementLength(i)]]);
      return new InvalidHandleError(`${where}handle ${h} is no value: it carries operands for the node after it (a select, a custom function or a vector)`);
    }
    return new InvalidHandleError(`${where}handle ${h} is not a node of this tape (${this.liveRange()})${asNumber}`);
  }

  private wasLive(h: number): boolean {
    return (h >= this.cycleStart && h < this.base) || (h >= this.previousStart && h < this.previousEnd);
  }

  private liveRange(): string {
    return this.count === 0 ? 'it holds no nodes yet' : `its live handles are ${this.base}..${this.base + this.count - 1}`;
  }
}

// Only a Vec makes select elementwise; arrays are constant vectors once a Vec is among the
// operands (as jnp.where), and otherwise the NotANumberError they always were.
function isVectorOperand(o: unknown): boolean {
  return o instanceof Vec;
}

// The op or call a vector handle reached, named first as elsewhere (a probe: a stale vector handle
// to exp named nothing; 'vector', the default, names none); built only for an error, as vector
// handle ops allocate nothing.
function vectorWhere(what: string): string {
  return prefixOf(what === 'vector' ? undefined : what);
}

// The cache slot of a constant: any mix of its bits does (equality decides a hit).
function constantSlot(c: number): number {
  return ((c * 1_000_003) ^ (c * 0.0009765625)) & (CONSTANT_SLOTS - 1);
}

// The entries as a Float64Array, each read once and checked as it is copied (a Float64Array as it
// is, or a copy with `copy`). Read twice, checked and then copied, an accessor or a Proxy ran
// user code in between (probes: a getter recording a Var took the first input's node; a vector's
// copy went to regions a valueOf had moved; an entry turned BigInt threw a raw TypeError after a
// vector's nodes were recorded).

function readNumbers(xs: ArrayLike<number>, len: number, what: string, copy = false): Float64Array {
  // An empty view may be one whose buffer is gone: copying it threw a raw TypeError, after a
  // vector's nodes were recorded (a probe).
  if (len === 0 && unreadableView(xs)) throw unreadableError(what);
  // isView: a Proxy of a Float64Array passes instanceof but reads through its traps.
  if (xs instanceof Float64Array && ArrayBuffer.isView(xs)) {
    checkHeld(xs, len, what);
    return copy ? xs.slice(0, len) : xs;
  }
  // Any other typed array by what it holds too (a review: a Float32Array claiming 2 of its 3
  // entries recorded 2 inputs).
  if (typedArrayKind(xs) !== undefined) checkHeld(xs as unknown as ArrayBufferView, len, what);
  const out = newFloat64(len, what);
  for (let k = 0; k < len; k++) {
    const v = xs[k];
    if (typeof v !== 'number') throw new NotANumberError(`${what} entries must be numbers, got ${describe(v)} at index ${k}`);
    out[k] = v;
  }
  return out;
}

function checkLength(values: ArrayLike<number>, expected: number, what: string, against: string): void {
  if (!isArrayLike(values)) throw new NotANumberError(`${what} must be an array of numbers, got ${describe(values)}`);
  if (values.length !== expected) {
    // A view whose buffer is gone reads as empty: named as such (a probe read "has 0 entries").
    if (values.length === 0 && unreadableView(values)) throw unreadableError(what);
    throw new TapegradError('INVALID_ARGUMENT', `${what} has ${values.length} ${values.length === 1 ? 'entry' : 'entries'} but there ${expected === 1 ? `is 1 ${against.slice(0, -1)}` : `are ${expected} ${against}`}`);
  }
}


// Which nodes' tangents reach `targets` through the operands a node's tangent depends on: not
// those of ops of zero gradient (comparisons, stopGradient, floor...), nor a select's condition.
// One pass from the last node down, as a reverse sweep visits them.
function tangentReach(op: Uint8Array, a: Int32Array, b: Int32Array, val: Float64Array, count: number, targets: ArrayLike<number>): Uint8Array {
  const reach = new Uint8Array(count);
  for (let k = 0; k < targets.length; k++) if (targets[k]! >= 0) reach[targets[k]!] = 1;
  for (let i = count - 1; i >= 0; i--) {
    const code = op[i]!;
    if (!reach[i] || code <= ARG || ZERO_GRADIENT[code]) continue;
    if (code === SELECT) {
      // The branch taken alone, as the tangent sweep reads it: a custom function without a jvp
      // rule in the other one needs none (a probe got MissingRuleError from jvp and hvp there).
      const c = val[a[i]!]!;
      reach[c !== 0 && c === c ? b[i]! : a[i - 1]!] = 1;
    } else if (code === CUSTOM) {
      for (let k = 0, n = b[i]!; k < n; k++) reach[customOperand(a, b, i, k)] = 1;
    } else {
      reach[a[i]!] = 1;
      reach[b[i]!] = 1;
    }
  }
  return reach;
}

/** @internal Operand k of custom node i: its operands ride on the carrier nodes recordCustom puts
 *  before it, two per carrier (b[i] holds their count). */
export function customOperand(a: Int32Array, b: Int32Array, i: number, k: number): number {
  return (k & 1 ? b : a)[i - ((b[i]! + 1) >> 1) + (k >> 1)]!;
}

function checkLimit(value: number | undefined, name: 'maxNodes' | 'maxMemoryBytes', where: string): number | undefined {
  if (value === undefined) return undefined;
  const whole = value === Infinity || Number.isInteger(value);
  if (typeof value !== 'number' || !(value > 0) || !whole) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: ${name} must be a positive integer (or Infinity), got ${describe(value)}`);
  }
  return value;
}

// Declaration merging: the op methods below are generated from the op table, and documented
// in op-docs.ts.
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Var extends UnaryOps<[], Var>, BinaryOps<[y: Operand], Var> {}

// Here rather than in ops.ts, which imports nothing (the errors module there cost the bundle 232
// bytes of chunking).
/** The number of operands of an op, by name (-1 for an op of any number: `custom`, `vconcat`);
 *  INVALID_ARGUMENT for a name no op has. */
export function opArity(name: OpName | VectorOpName): number {
  const row = OP_TABLE[Op[name]];
  // From JS a misspelt name reached a raw TypeError.
  if (!row) throw new TapegradError('INVALID_ARGUMENT', `opArity: no op is named ${describe(name)}`);
  return row[1];
}

// The engines a tape was made over.
const ownedEngines = new WeakSet<Backend>();

// A vector node without carriers (a `[]` default made two arrays a call).
const NO_CARRIERS: readonly number[] = Object.freeze([]);

/**
 * A recorded value: a thin wrapper around a node handle of its tape. Every op of the table is a
 * method (`x.exp()`, `x.mul(y)`, `x.pow(2.5)`); binary methods take a Var or a number.
 */
export class Var {
  // Declared, not class fields: a class with fields runs an initializer check in its constructor,
  // which takes the constructor over V8's small-function size (see the op methods, end of file).
  /** The tape this Var was recorded on. */
  declare readonly tape: Tape;
  /** The node handle, usable with `tape.handles`. */
  declare readonly id: number;
  /** Not for use: Vars come from a tape (`variable`, the ops, `handles.toVar`), which checks the
   *  id; this takes any id unchecked, and a Var made with it reads whatever node that is. */
  constructor(tape: Tape, id: number) {
    this.tape = tape;
    this.id = id;
  }

  /** The value of this node (computed in a batch with everything recorded before it). */
  get value(): number {
    return this.tape.valueAt(this.tape.index(this, 'value'));
  }

  /** d(seed * output)/d(this) from the last complete reverse sweep (`backward`, `gradient`, `vjp`,
   *  `hvp`); one that threw part-way leaves the one before it. */
  get grad(): number {
    return this.tape.gradAt(this.tape.index(this, 'grad'));
  }

  /** The value, so a Var converts like a number (`Number(x)`, `+x`, and `x > 0` in JavaScript;
   *  TypeScript refuses that comparison: write `x.value > 0`). Like
   *  `.value`, it is invisible to the tape: inside `compile` a read of anything but a comparison
   *  or a value computed from constants alone is refused. */
  valueOf(): number {
    return this.value;
  }

  /** `Var(#id)`, with its node handle: what `String(x)` and a template give. */
  toString(): string {
    return `Var(#${this.id})`;
  }

  /** `Var(#id)`, as `toString`: `JSON.stringify` of a Var threw a raw TypeError about its tape's
   *  circular structure (a new-user probe); its number is `x.value`. (Not an error: `%j` in a log
   *  line would then end the program, where it printed [Circular]: a review.) */
  toJSON(): string {
    return this.toString();
  }

  /** How Node's console and util.inspect show it (they printed its whole tape: a probe). */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }
}

for (const name of UNARY_OPS) Object.defineProperty(Var.prototype, name, { value: unaryVarMethod(Op[name]), writable: true, configurable: true });
for (const name of BINARY_OPS) Object.defineProperty(Var.prototype, name, { value: binaryVarMethod(Op[name]), writable: true, configurable: true });

// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface HandleApi extends UnaryOps<[h: number], number>, BinaryOps<[h1: number, h2: number], number> {}

/**
 * The handle-level API of a tape, for hot loops: every op takes and returns integer handles, so
 * recording allocates nothing. `pow(h1, h2)` takes two handles; `powConst(h, c)` a number.
 */
export class HandleApi {
  /** The tape these handles name nodes of. */
  // Declared and set in the constructor, not a parameter property (a class field, undefined until
  // the constructor set it): the op methods read it first, and recording the per-node bench's
  // Rosenbrock through handles took 3.7 -> 3.5 ns/node (`bench/ab.ts --case=mixed-record-handles`).
  declare readonly tape: Tape;
  constructor(tape: Tape) {
    // Anything else (a Var for its tape, undefined) made an API whose first call was a raw
    // TypeError (a probe).
    if (!(tape instanceof Tape)) throw new TapegradError('INVALID_ARGUMENT', `new HandleApi(tape) takes a Tape (from createTape or createTapeSync), got ${tapeArgument(tape)}`);
    this.tape = tape;
    this.vec = new VectorHandleApi(tape);
  }

  /** Vector handles (negative integers) and the ops on them; see README, "Vectors". */
  readonly vec: VectorHandleApi;

  /** Records an input; returns its handle. */
  variable(x: number): number { return this.tape.leaf(INPUT, x); }
  /** Records an input per number of `xs` (all checked first); returns their handles in order,
   *  consecutive integers, written into `into` when given (no allocation). */
  variables(xs: ArrayLike<number>, into?: Int32Array): Int32Array {
    const t = this.tape, at = t.recordInputs(xs, undefined, 'handles.variables', into), first = at + t.base, len = t.count - at;
    return writeRange(into ?? new Int32Array(len), first, len);
  }
  /** Records a constant; returns its handle. */
  constant(c: number): number { return this.tape.leaf(CONST, c); }
  /** `h ** c` with a constant exponent (never touches log h). */
  powConst(h: number, c: number): number {
    const t = this.tape;
    const i = t.indexOfHandle(h, POW_CONST);
    // Named here: the constant's own check named no op (a probe).
    if (typeof c !== 'number') throw new NotANumberError(`powConst: the exponent must be a number, got ${describe(c)}`);
    return t.record(POW_CONST, i, t.constantForOp(c));
  }
  /** `cond ? ifTrue : ifFalse`, see `Tape.select`. */
  select(cond: number, ifTrue: number, ifFalse: number): number {
    const t = this.tape;
    return t.recordSelect(t.indexOfHandle(cond, SELECT), t.indexOfHandle(ifTrue, SELECT), t.indexOfHandle(ifFalse, SELECT));
  }
  /** The value of a node. */
  value(h: number): number { return this.tape.valueAt(this.tape.indexOfHandle(h, 'value')); }
  /** The adjoint of a node from the last backward sweep. */
  grad(h: number): number { return this.tape.gradAt(this.tape.indexOfHandle(h, 'grad')); }
  /** Reverse sweep from `h`, seeded with `seed`. */
  backward(h: number, seed = 1): void { this.tape.backwardIndex(this.tape.indexOfHandle(h, 'backward'), seed, 'handles.backward'); }
  /** Runs `backward(output, seed)` and returns the adjoints of the handles `wrt`, in order (what
   *  `grad` reads, in one call), written into `into` when given (no allocation). Every handle is
   *  checked before the sweep runs. */
  gradient(output: number, wrt: ArrayLike<number>, seed = 1, into?: Float64Array): Float64Array {
    const t = this.tape;
    if (!isArrayLike(wrt)) throw new NotANumberError(`handles.gradient: expected an array of handles, got ${describe(wrt)}`);
    const len = wrt.length;
    // Refused before the list goes into the array below, which a running sweep's call reads after
    // its sweep.
    t.refuseInsideRule('cannot run a reverse sweep');
    // The handles are read once, into an array of this API's own (kept from call to call, a new
    // one where a getter of the list calls this again), which the checks, the sweep and the gather
    // after it read: the list itself, read again after the sweep, let a getter or Proxy change an
    // entry meanwhile (NaN, or a reset tape's adjoints, without an error: a probe), a custom rule
    // change a typed list during the sweep, and the gradients written into `into` overwrite a list
    // over its memory (a probe's Int32Array over the same buffer, or two SharedArrayBuffer objects
    // of one memory, read gradients as handles). An Int32Array is copied whole, anything else
    // entry by entry, checked (a Float64Array's 2.5 was cut to 2).
    // (The tape's kept array, holdScratch's: of at least len entries, the first len used.)
    if (len === 0 && unreadableView(wrt)) throw unreadableError('handles.gradient: the handles');
    const kept = t.holdScratch(len), handles = kept ?? new Int32Array(len);
    try {
      // isView: a Proxy of an Int32Array passes instanceof but reads through its traps, which set
      // converts unchecked (a review: a fraction cut to another node's handle).
      if (wrt instanceof Int32Array && ArrayBuffer.isView(wrt)) {
        // Its length as the buffer holds it: one of its own made the kept array's old entries
        // handles (a review).
        checkHeld(wrt, len, 'handles.gradient: the handles');
        handles.set(wrt);
      }
      else handlesReadOnce(t, wrt, len, handles);
      // After the list is read, whose getters could detach or shrink it (a review: the gradient
      // written nowhere, or a raw TypeError).
      if (into !== undefined) checkOut(into, len, 'handles.gradient: into');
      // indexOfHandle's test in the loop (a gradient reads every input: two calls per input were
      // a fifth of a gradient's reverse phase on the bench's Rosenbrock); the call names the fault.
      const base = t.base, count = t.count;
      const op = t.opV;
      const run = leadingInputRun(handles, len, base, count, op);
      for (let k = run; k < len; k++) {
        const h = handles[k]!;
        if (!((h - base) >>> 0 === h - base && h - base < count && scalarValued(op[h - base]!))) t.indexOfHandle(h, 'gradient');
      }
      t.backwardIndex(t.indexOfHandle(output, 'gradient'), seed, 'handles.gradient');
      // Again after the sweep, whose custom rules could detach it (a review).
      if (into !== undefined) checkOut(into, len, 'handles.gradient: into');
      // What gradAt reads after a sweep of the whole tape, through views read after it (a custom
      // rule's JS runs inside it).
      const out = into ?? new Float64Array(len), ops = t.opV, adj = t.engine.views.adj;
      if (run > 0) copyRange(adj, handles[0]! - base, run, out);
      for (let k = run; k < len; k++) {
        const i = handles[k]! - base;
        out[k] = ops[i] === CONST ? 0 : adj[i]!;
      }
      return out;
    } finally {
      if (kept) t.scratchBusy = false;
    }
  }
  /** Wraps a handle as a Var. */
  toVar(h: number): Var {
    this.tape.indexOfHandle(h, 'toVar');
    return new Var(this.tape, h);
  }
}

for (const name of UNARY_OPS) Object.defineProperty(HandleApi.prototype, name, { value: unaryHandleMethod(Op[name]), writable: true, configurable: true });
for (const name of BINARY_OPS) Object.defineProperty(HandleApi.prototype, name, { value: binaryHandleMethod(Op[name]), writable: true, configurable: true });

/** Where one of two tapes is recording a transform's f (a pooled tape, which its `staleWhy` names
 *  and which holds nodes only while f records) or a compiled function's (`observed` only while it
 *  records), f used a Var of the caller's code beside its own: said so, whichever side of the op
 *  it is on (a new-user probe, and reviews: `x.mul(v)` with the captured x first; a Var kept from
 *  a finished transform got the hint; a transform inside compile was named as compile). */
function capturedHint(tape: Tape, other: Tape, kind = 'Var'): string {
  const transform = (t: Tape): boolean => t.staleWhy.includes('transform') && t.size > 0;
  const inTransform = transform(tape) || transform(other), inCompile = tape.observed !== null || other.observed !== null;
  // Both at once (one inside the other): which is f's is not known here (a review).
  const who = inTransform && inCompile ? 'a transform or compile' : inTransform ? 'the transform' : inCompile ? 'compile' : '';
  // A transform inside a transform's f: `.value` would run, and make the outer derivative through
  // it 0 (a GradBench probe's saddle, nested as JAX writes it, followed that advice to dF/dx = 0).
  if (transform(tape) && transform(other)) {
    return `: transforms do not nest (an inner transform's f used a ${kind} of an enclosing one, or one kept from an earlier transform), and its .value would be a constant, whose derivative is 0; for second order use hvp, hessian, or a custom function whose rules call transforms`;
  }
  return who ? `: f uses a ${kind} of the caller's tape beside its own, and ${who} records f on a tape of its own; make the caller's value an input of f, or use its number (.value)` : '';
}

/** What was given where a Tape was expected, for the handle APIs' constructors. */
export function tapeArgument(value: unknown): string {
  return value instanceof Var ? 'a Var (its tape is x.tape)' : describe(value);
}

/** The longest list a tape keeps its array for between gradients (holdScratch; a list past it
 *  gets an array per call: 256 KB, against the gradient of as many inputs). */
const KEPT_LIST = 1 << 16;

/** `list`'s first `length` entries, each read once, into `handles`; an entry that is no integer is
 *  named by `indexOfHandle`'s error (handles.gradient checks the rest). */
function handlesReadOnce(tape: Tape, list: ArrayLike<number>, length: number, handles: Int32Array): void {
  // A typed list by what it holds, as an Int32Array's (a review: a Float64Array of 3 handles
  // claiming 2 gave 2 gradients).
  if (typedArrayKind(list) !== undefined) checkHeld(list as unknown as ArrayBufferView, length, 'handles.gradient: the handles');
  for (let k = 0; k < length; k++) {
    const h = list[k];
    if (typeof h !== 'number' || (h | 0) !== h) tape.indexOfHandle(h!, 'gradient');
    handles[k] = h!;
  }
}

/** How many of `list`'s first entries (of `length`) are the handles of consecutive input nodes of the live
 *  recording (`count` nodes, handles from `offset`), as `variables` records them: the handle
 *  gradient's check of those is one compare and one op read each, and their adjoints one copy
 *  (the check per handle, then a gather with its own run test, took 0.35-0.45 ns per node of the
 *  bench's mixed Rosenbrock, one input in nine nodes). */
function leadingInputRun(list: ArrayLike<number>, length: number, offset: number, count: number, op: Uint8Array): number {
  const h = list[0];
  if (length === 0 || typeof h !== 'number') return 0;
  const first = h - offset;
  if (first >>> 0 !== first) return 0;
  return inputRunLength(list, h, op, first, Math.min(length, count - first));
}

// The long loops a call runs once (over inputs, node lists) each stand alone in a function of
// its arguments, with nothing after the loop but its result. V8 allocates a function's feedback
// vector during the first long call's loop, so code run once a call before or after such a loop
// had no feedback when V8 optimised the function: the code failed there, in some processes on
// every call (copyLeadingRun: 1,766 deoptimisations in one bench process), or failed once and
// left the loop unoptimised from then on.
function inputRunLength(list: ArrayLike<number>, h: number, op: Uint8Array, first: number, end: number): number {
  let run = 0;
  while (run < end && list[run] === h + run && op[first + run] === INPUT) run++;
  return run;
}

/** Writes the node of each entry of `list` from `from` on into `nodes` while it is a live Var of
 *  `tape` (`count` nodes, ids from `base`: the checks of index() in a few loads); returns where it
 *  stopped. A function of its arguments alone (see inputRunLength): as a method, with the
 *  other kinds' checks in its loop, it took 2.3 ns a Var of 10^5, 1.5 as it is. */
function liveVarIds(list: readonly (Var | Vec)[], nodes: Int32Array, tape: Tape, count: number, base: number, from: number): number {
  const length = nodes.length;
  for (let k = from; k < length; k++) {
    const v = list[k];
    // Not `v?.tape === tape ? ... : -1` in one test: that took a fifth longer.
    if (v == null || v.tape !== tape) return k;
    const i = v.id - base;
    if (!(i >= 0 && i < count)) return k;
    nodes[k] = i;
  }
  return length;
}

// How many of `nodes`' first entries are consecutive scalar nodes but constants, from `first`.
function liveRunLength(nodes: Int32Array, op: Uint8Array, first: number): number {
  let run = 0;
  while (run < nodes.length && nodes[run] === first + run && op[first + run] !== CONST && op[first + run]! < VINPUT) run++;
  return run;
}

function writeRange(out: Int32Array, first: number, len: number): Int32Array {
  for (let k = 0; k < len; k++) out[k] = first + k;
  return out;
}

function writeSelfOperands(a: Int32Array, b: Int32Array, from: number, to: number): void {
  for (let n = from; n < to; n++) {
    a[n] = n;
    b[n] = n;
  }
}

/** How many of `nodes`' first entries are consecutive non-constant nodes, as `variables` records
 *  its inputs; their entries of `from` are copied into `out` in one piece (a gradient's gather of
 *  10^5 inputs: 1.6 -> 0.13 ns per input). */
function copyLeadingRun(nodes: Int32Array, op: Uint8Array, from: Float64Array, out: Float64Array): number {
  const first = nodes[0]!;
  const run = liveRunLength(nodes, op, first);
  if (run > 0) copyRange(from, first, run, out);
  return run;
}

/** `from[first .. first + length)` into the start of `out`: through a view of the range (one
 *  allocation, a memcpy: 0.1 ns a number against 0.45 for a loop) where the range is long, by a
 *  loop where the view would be most of the cost, so a gradient of a few inputs allocates
 *  nothing (a probe counted 96 bytes a call). */
function copyRange(from: Float64Array, first: number, length: number, out: Float64Array): void {
  if (length >= 256) {
    out.set(from.subarray(first, first + length));
    return;
  }
  for (let k = 0; k < length; k++) out[k] = from[first + k]!;
}

// The op methods of Var and HandleApi. Recording is most of the cost of a gradient, and a loop
// body calls many ops. V8 inlines at most about 920 bytes of bytecode into one optimised function
// (functions of at most 27 bytes, like Var's constructor, whatever is left, though their bytes
// count too), and an op it does not inline is a call that returns an escaping Var. So each method
// is its whole fast path (operands live nodes of this tape, room left) in as few bytecodes as it
// takes, instead of a wrapper around a shared one, and calls the checked path (same results,
// descriptive errors) otherwise. `i >>> 0 < n`: i is an integer in [0, n), for the ids a Var holds.
// bench/record-inlining.ts measures what this saves and what inlining every op would.
function unaryVarMethod(code: number) {
  return unaryVarFastPath(code, checkedPath(Var.prototype, function checkedVarUnary(this: Var): Var { return this.tape.recordUnary(code, this); }), Var);
}

// The class and the checked path's key reach the fast paths as parameters of their factory: a
// closure's read of a module's class or a function's const is checked for its temporal dead zone.
function unaryVarFastPath(code: number, checked: symbol, VarClass: typeof Var) {
  return function varUnary(this: Var): Var {
    const t = this.tape, n = t.count, b = t.base, i = this.id - b;
    if (i >>> 0 < n && n < t.capacity) {
      t.opV[n] = code;
      t.aV[n] = t.bV[n] = i;
      t.count = n + 1;
      return new VarClass(t, n + b);
    }
    return (this as unknown as CheckedPaths<Var>)[checked]!();
  };
}

function binaryVarMethod(code: number) {
  const numberCode = code === POW ? POW_CONST : code;
  return binaryVarFastPath(
    code,
    numberCode,
    checkedPath(Var.prototype, function checkedVarBinary(this: Var, y?: Operand): Var { return this.tape.recordBinary(code, this, y!); }),
    Var,
  );
}

function binaryVarFastPath(code: number, numberCode: number, checked: symbol, VarClass: typeof Var) {
  return function varBinary(this: Var, y: Operand): Var {
    const t = this.tape;
    // A named method (the same for every op), not one per op under a key: the op methods share
    // their inline caches, and a key per op made this call megamorphic.
    if (typeof y === 'number') return t.binaryVarNumber(numberCode, this, y);
    if (y?.tape === t) {
      const n = t.count, b = t.base, i = this.id - b, j = y.id - b;
      if (i >>> 0 < n && j >>> 0 < n && n < t.capacity) {
        t.opV[n] = code;
        t.aV[n] = i;
        t.bV[n] = j;
        t.count = n + 1;
        return new VarClass(t, n + b);
      }
    }
    return (this as unknown as CheckedPaths<Var>)[checked]!(y);
  };
}

type CheckedPaths<R> = Record<symbol, (...operands: unknown[]) => R>;

// An op method's checked path, a method of its own under a symbol (`this[key](y)`: a call of at
// most two arguments needs no register moves, and every op method 10-25 bytes fewer).
function checkedPath(prototype: object, method: (this: never, ...operands: never[]) => unknown): symbol {
  const key = Symbol('checked path');
  Object.defineProperty(prototype, key, { value: method, writable: true, configurable: true });
  return key;
}

function unaryHandleMethod(code: number): (this: HandleApi, h: number) => number {
  return unaryHandleFastPath(code, checkedPath(HandleApi.prototype, function checkedHandleUnary(this: HandleApi, h?: number): number { return this.tape.recordUnaryHandle(code, h!); }));
}

function unaryHandleFastPath(code: number, checked: symbol) {
  return function handleUnary(this: HandleApi, h: number): number {
    const t = this.tape, n = t.count;
    if (typeof h === 'number') {
      // o[i] is defined: i is an integer in [0, capacity).
      const b = t.base, i = h - b, o = t.opV;
      if (i < n && n < t.capacity && o[i] !== undefined) {
        o[n] = code;
        t.aV[n] = t.bV[n] = i;
        t.count = n + 1;
        return n + b;
      }
    }
    return (this as unknown as CheckedPaths<number>)[checked]!(h);
  };
}

function binaryHandleMethod(code: number): (this: HandleApi, h1: number, h2: number) => number {
  return binaryHandleFastPath(code, checkedPath(HandleApi.prototype, function checkedHandleBinary(this: HandleApi, h1?: number, h2?: number): number { return this.tape.recordBinaryHandle(code, h1!, h2!); }));
}

function binaryHandleFastPath(code: number, checked: symbol) {
  return function handleBinary(this: HandleApi, h1: number, h2: number): number {
    const t = this.tape, n = t.count;
    if (typeof h1 === 'number' && typeof h2 === 'number') {
      const b = t.base, i = h1 - b, j = h2 - b, o = t.opV;
      if (i < n && j < n && n < t.capacity && o[i] !== undefined && o[j] !== undefined) {
        o[n] = code;
        t.aV[n] = i;
        t.bV[n] = j;
        t.count = n + 1;
        return n + b;
      }
    }
    return (this as unknown as CheckedPaths<number>)[checked]!(h1, h2);
  };
}
