// Record once, replay many (CppAD's ADFun, JAX's jit for scalar code): the function is recorded
// on a tape of its own; every later call writes new inputs into the tape and runs the sweeps in
// the engine, with no JS work per node. Comparisons whose values the function read while
// recording are guards: a replay where one comes out the other way re-records (or throws).
import { copyNumbers, type Backend, type BackendChoice, type BackendKind } from './backend.ts';
import { checkExpectedNodes, createTapeSync, resolveBackend } from './create.ts';
import { BranchChangedError, NotANumberError, TapegradError, checkApart, checkOut, counted, describe, isArrayLike, lockFields, mayOverlap, newFloat64, checkHeld, disagrees, notAnOutput, unreadableError, unreadableView } from './errors.ts';
import { COMPARISON_OPS, ELEMENTWISE, OP_TABLE, Op, nodeKind, opNameOf } from './ops.ts';
import { BACKEND_RULE, CODEGEN_RULE, readOptions } from './options.ts';
import { toBytes } from './serialize.ts';
import { TANGENT_BYTES, Var, type Tape } from './tape.ts';
import { Vec } from './vector.ts';
import { MODULE_CACHE_SIZE, WasmBackend, type GeneratedSweeps, type ShippedSweeps } from './wasm/backend.ts';
import { callOn, transformPool, type RuntimeVector } from './transforms.ts';

/** What a compiled function may return: a Var or number, a Vec, or an array of them (Vecs
 *  flattened in order). */
export type CompiledOutput = Var | number | readonly (Var | number | Vec)[] | Vec;
/** A function `compile` takes: a Var[] of `inputs` Vars in (one Vec with `{ vector: true }`:
 *  VectorCompilableFunction), a CompiledOutput out. */
export type CompilableFunction<O extends CompiledOutput = CompiledOutput> = (x: Var[]) => O;
/** A function of one Vec, compiled with `{ vector: true }`. */
export type VectorCompilableFunction<O extends CompiledOutput = CompiledOutput> = (x: Vec) => O;
/** What `value` returns for a function returning O: a number for a Var or a number, a
 *  Float64Array for an array or a Vec, either when the type does not tell. */
export type CompiledValue<O extends CompiledOutput> =
  [O] extends [Var | number] ? number : [O] extends [readonly (Var | number | Vec)[] | Vec] ? Float64Array : number | Float64Array;

/** Options of `compile`: `inputs` is required. */
export interface CompileOptions {
  /** Number of inputs; the function receives a Var[] of this length (or one Vec, see `vector`). */
  inputs: number;
  /** Pass the inputs to f as one Vec of length `inputs` (vector ops: one node per op). */
  vector?: boolean | undefined;
  /** Throw NonFiniteError at the first NaN or ±Infinity a replay produces (value, adjoint or tangent),
   *  naming the op and the node, as `createTape({ checkNaN: true })`. Batches then run row by row. */
  checkNaN?: boolean | undefined;
  /** Engine (default 'wasm'; `await init()` first), see BackendChoice. */
  backend?: BackendChoice | undefined;
  /** Throw BranchChangedError instead of re-recording when a guard fails. */
  strict?: boolean | undefined;
  /** Where to record; by default, at the inputs of the first call. */
  at?: ArrayLike<number> | undefined;
  /** Batched replay with the SIMD kernel where the core has it (default true). */
  simd?: boolean | undefined;
  /** wasm: generate wasm for the tape's sweeps instead of interpreting it (default true). A tape
   *  that does not fold into a loop-structured program of at most 16,384 nodes replays by a
   *  schedule instead (runs of one op, stored partials) where the interpreter's op jump would
   *  mispredict, else by the interpreter; tapes with custom or vector ops are interpreted:
   *  `generatedSweepsReason` says why. 'require' throws that reason instead of interpreting node
   *  by node. Results are bit-identical either way. */
  codegen?: boolean | 'require' | undefined;
  /** The most nodes its recording is expected to hold, as `createTape`'s: its tape is made with
   *  room for them, and on wasm with memory for its planner beside them, so the first call grows
   *  no memory (a straight tape's schedule takes more). */
  expectedNodes?: number | undefined;
}

/** @internal What a recording leaves behind, and what serialization stores. */
export interface Recording {
  tape: Tape;
  inputs: number;
  /** Output slots: a node index, or -1 - element offset for the elements of a Vec output. */
  outputs: Int32Array;
  guards: Int32Array;
  expected: Float64Array;
  /** Inputs are the elements of one input vector (node 1) instead of nodes [0, inputs). */
  vectorInput: boolean;
  /** The output nodes themselves (a Vec output once), for seeding reverse sweeps. */
  outputNodes: Int32Array;
}

/**
 * A function recorded once and replayed at new inputs. Inputs are Float64Array or arrays;
 * methods that take `out` write into it: `gradient`, `vjp`, `jvp` and `hvp` then allocate
 * nothing on a replay of up to 64 inputs (past that a view or two, about 100-200 bytes), and the
 * batches nothing per row.
 */
export class CompiledFunction<V extends number | Float64Array = number | Float64Array> {
  /** How many times a failed guard made it record again. */
  get rerecords(): number {
    return this.recordedAgain;
  }
  // (A public field was writable through the declarations: a probe.)
  private recordedAgain = 0;
  private recording: Recording | null = null;
  // The tape of a recording given up (f threw while recording again): the next one reuses it.
  private spareTape: Tape | null = null;
  /** @internal compile's expectedNodes (0: none), for the tape its first recording makes. */
  expectedNodes = 0;
  private readonly row: Float64Array;
  private guardedInputs: Float64Array | null = null;
  // The tape's handle base when the recording was adopted: f's Vars hold the tape, and a program
  // that reset it and recorded something else there was replayed as if it were f (a probe got the
  // other program's gradient, silently). Only reset() moves the base.
  private recordedBase = -1;
  /** @internal The caller's row of a batch's first row, for the rows errors name: a pool's
   *  worker runs the rows from it on (they named the row within the worker's part). */
  rowBase = 0;
  /** @internal A pool's worker runs the batch: the calling thread kept its outputs apart from its
   *  rows (or sent them through its scratch), which the buffer objects here cannot tell (every
   *  task copied its rows: a review). */
  rowsApart = false;
  // A batch's rows, copied apart from its outputs where they may share memory (apart), but in a
  // pool's worker (rowsApart).
  private rowsFor(rows: Float64Array, length: number, ...outputs: (Float64Array | undefined | null)[]): Float64Array {
    return this.rowsApart ? rows : apart(rows, length, ...outputs);
  }
  // Set while record runs f (see record).
  private recordingNow = false;

  /** @internal */
  constructor(
    private readonly f: CompilableFunction | VectorCompilableFunction | null,
    /** Number of inputs (`compile`'s `inputs`): the length of x, and of each row of a batch. */
    readonly inputs: number,
    // 'auto' kept as given: a recording's tape falls back to the JS engine where the runtime gives
    // no more WebAssembly memories, as createTape's does.
    private readonly backend: BackendChoice,
    /** Whether a failed guard throws BranchChangedError instead of recording again (`compile`'s
     *  `strict`, default false; true for a function loaded from bytes). */
    readonly strict: boolean,
    recording: Recording | null = null,
    private readonly simd = true,
    /** For functions loaded from bytes: builds the recording again after a core trap. */
    private readonly reload: (() => Recording) | null = null,
    private readonly codegen: boolean | 'require' = true,
    /** f takes one Vec. */
    readonly vector = false,
    /** Check every replay for NaN and ±Infinity. */
    readonly checkNaN = false,
    /** Sweeps generated elsewhere for this very tape (a pool's worker): installed instead of
     *  generating them here. */
    private readonly shipped: ShippedSweeps | null = null,
  ) {
    // The constructor is private in the declarations; from JavaScript `new CompiledFunction()`
    // made an object that failed later with "expected undefined" (a probe).
    if (!Number.isInteger(inputs) || inputs < 1 || (f === null && recording === null)) {
      throw new TapegradError('INVALID_ARGUMENT', 'a CompiledFunction comes from compile(f, { inputs }) or fromBytes(bytes)');
    }
    this.row = new Float64Array(inputs);
    lockFields(this, ['inputs', 'strict', 'vector', 'checkNaN']);
    if (recording) this.adopt(recording);
  }

  /** Whether replays run generated wasm ('active'), will once the generator has loaded or the
   *  module has compiled in the background ('pending'), run a schedule of the tape's nodes
   *  ('scheduled': a tape too long to fold into code whose ops the interpreter's jump would
   *  mispredict), or interpret the tape ('none': JS backend, codegen off, custom or vector nodes,
   *  a tape too long to fold whose ops follow a pattern the interpreter predicts, a recording
   *  whose guards changed path before the one it replaced had paid for its generation, or much
   *  straight code or many steps, until its replays have paid for generating it, no room under
   *  maxMemoryBytes).
   *  `generatedSweepsReason` says which. */
  get generatedSweeps(): GeneratedSweeps {
    const engine = this.recording?.tape.engine;
    return engine instanceof WasmBackend ? engine.generated : 'none';
  }

  /** Why replays do not run generated code (yet): null when `generatedSweeps` is 'active'. */
  get generatedSweepsReason(): string | null {
    const rec = this.recording;
    if (!rec) return this.refusedBecause ?? 'nothing recorded yet';
    const engine = rec.tape.engine;
    if (!(engine instanceof WasmBackend)) return 'the JS backend interprets every tape';
    if (this.codegen === false) return 'compile was asked for { codegen: false }';
    if (rec.tape.hasVectorNodes) return 'the tape holds vector nodes (their rules are element loops already)';
    return engine.generated === 'active' ? null : engine.generatedReason;
  }

  /** Settles once pending generated sweeps are installed. */
  whenGenerated(): Promise<void> {
    const engine = this.recording?.tape.engine;
    if (engine instanceof WasmBackend) return engine.generatedReady;
    // Refused by { codegen: 'require' } while the generator loaded: no recording, but the wait is
    // still there (a probe: this resolved at once, and the next call was refused again).
    return this.generatorLoading ?? Promise.resolve();
  }

  // See whenGenerated.
  private generatorLoading: Promise<void> | null = null;
  /** @internal A 'require' refusal waits for the code generator to load (whenGenerated). */
  get waitsForGenerator(): boolean {
    return this.generatorLoading !== null;
  }

  // Why { codegen: 'require' } refused the last recording (it is not kept, so the reason is kept
  // instead: a probe read 'nothing recorded yet' after the refusal).
  private refusedBecause: string | null = null;

  // The recording holds custom nodes (their rules are user code: batches run a row per call).
  private customNodes = false;

  private adopt(recording: Recording): Recording {
    this.recording = recording;
    recording.tape.close(
      "this tape holds a compiled function's recording, which takes no more nodes: a Var that escaped the function can be read, not recorded onto (record onto a tape of your own, or inside the function)",
    );
    this.recordedBase = recording.tape.base;
    const engine = recording.tape.engine;
    // Just recorded (or loaded) there: the inputs at which every guard holds.
    this.guardedInputs = (recording.vectorInput ? engine.views.xval : engine.views.val).slice(0, this.inputs);
    engine.setGuards(recording.guards, recording.expected);
    engine.setVectorInput(recording.vectorInput);
    // Generated sweeps and the two-row SIMD kernel know scalar nodes only: a tape with vector
    // nodes replays in the interpreter, whose vector rules are loops over the elements already.
    const vectors = recording.tape.hasVectorNodes;
    if (engine instanceof WasmBackend) engine.simd = this.simd && !vectors;
    // Guards that keep choosing among more paths than the modules kept by their bytes compile a new
    // module at nearly every re-record, whose code V8 keeps (a probe: 9 paths of a data-dependent
    // loop, RSS 80 -> 222 MB over 200,000 calls, still rising; 8 paths level off): past that many
    // compiled, this function's recordings are interpreted ('require' still asks for code).
    const tooManyPaths = this.codegen === true && engine instanceof WasmBackend && engine.freshModules > MODULE_CACHE_SIZE;
    this.served = 0;
    this.generationDeferred = false;
    this.deferredByChurn = false;
    this.generationNs = 0;
    if (tooManyPaths) {
      engine.dropGeneratedSweeps();
      engine.generated = 'none';
      engine.generatedReason = `its guards chose among more than ${MODULE_CACHE_SIZE} paths, each a module compiled again and again: interpreted`;
    } else if (this.codegen === true && !vectors && engine instanceof WasmBackend && this.replacedUnpaid) {
      // Generating costs several times a recording (planning and emitting, even where the module
      // is cached by its bytes), which a path that holds for a few calls never earns back: guards
      // flipping on every call took 43-46 µs a call against 3.3 interpreted (new-user probes).
      // Ski rental: once a recording was replaced before its replays paid for its generation, the
      // next pays in interpreted replays first, so a path that holds costs at most twice the
      // generation and one that flips costs none. Waiting only after 4 such recordings, a
      // gradient descent on a Huber loss of 1,000 guarded samples generated 4 times (481 ms for
      // 400 steps against 225-230 interpreted, 309-344 with the wait; bench/codegen-cliffs.ts
      // --sweep=training).
      engine.dropGeneratedSweeps();
      engine.generated = 'none';
      this.deferredUntil = this.replaysToPay(recording.tape.size, this.estimatedGenerationNs(recording.tape.size));
      engine.generatedReason = `its guards changed path before the recording it replaced had served the replays that generating costs: interpreted until it has served ${this.deferredUntil}, then as any recording`;
      this.generationDeferred = true;
      this.deferredByChurn = true;
    } else if (this.codegen && !vectors && engine instanceof WasmBackend) {
      this.generateSweeps(recording, engine, this.codegen === true && !this.shipped);
    }
    // A schedule satisfies 'require': it dispatches once per run of one op, not per node. Replays
    // that wait for the generator itself (after init({ codegen: false })) or for a module
    // compiling in the background (a browser's main thread) interpret: refused too (new-user
    // probes got interpreted answers); `whenGenerated` waits, and the next call records again and
    // finds the module compiled (kept by its bytes). A function with no node but leaves
    // (returning an input, a constant, or nothing) has nothing to interpret.
    const nothingToRun = this.codegen === 'require' && onlyLeaves(engine.views.op, recording.tape.size);
    // Of this recording: the engine keeps its custom handler past a reset (a review probe: batches
    // ran row by row for the life of a function that once recorded a custom node).
    this.customNodes = engine.custom !== null && engine.views.op.subarray(0, recording.tape.size).includes(Op.custom);
    if (this.codegen === 'require' && !nothingToRun && (this.generatedSweeps === 'none' || this.generatedSweeps === 'pending')) {
      const reason = this.generatedSweepsReason;
      if (engine instanceof WasmBackend && this.generatedSweeps === 'pending') {
        // Once it has loaded, the reason no longer holds (a probe read "still loading" after
        // whenGenerated): nothing is recorded, and the next call records and generates.
        // A load that failed leaves the engine's reason for it instead.
        const loading = this.generatorLoading = engine.generatedReady.then(() => {
          if (this.refusedBecause === reason && this.generatorLoading === loading) this.refusedBecause = engine.generated === 'none' ? engine.generatedReason : null;
        });
      }
      this.recording = null; // never replayed by the interpreter
      this.refusedBecause = reason;
      throw new TapegradError('INVALID_ARGUMENT', `compile: generated sweeps are required ({ codegen: 'require' }), but ${reason}`);
    }
    this.refusedBecause = null;
    return recording;
  }

  private generateSweeps(recording: Recording, engine: WasmBackend, mayDefer = false): void {
    // A schedule, for a tape that does not fold into code, stays within the tape's memory limit
    // with room left for the tangents of a later jvp or hvp.
    const { size, maxMemoryBytes } = recording.tape;
    const budget = maxMemoryBytes - size * (engine.nodeBytes() + (engine.views.tan ? 0 : TANGENT_BYTES));
    const started = performance.now();
    // checkNaN reads every node's value after a replay, so its replays compute every node.
    if (this.shipped) engine.installShippedSweeps(this.shipped, this.inputs, size, recording.outputs, budget, this.checkNaN);
    else engine.generateSweeps(this.inputs, size, recording.outputs, budget, this.checkNaN, mayDefer ? deferredPast(size) : undefined);
    const code = engine.deferredCodeNodes, steps = engine.deferredSteps;
    if (code > 0 || steps > 0) {
      // Left before its bodies were described: the replays must first save what describing,
      // emitting and compiling them would cost (replayed generates them then).
      this.generationDeferred = true;
      this.deferredUntil = this.replaysToPay(size, code > 0 ? code * codegenDeferral.nsPerCodeNode : steps * codegenDeferral.nsPerStep);
      const what = code > 0 ? `${code} nodes of straight code` : `${steps} steps (bodies of a few shapes in the order of the data)`;
      engine.generatedReason = `its plan has ${what}, which cost more to describe, emit and compile than its first ` +
        `replays save: interpreted until it has served ${this.deferredUntil} replays, then generated`;
      return;
    }
    this.generationNs = (performance.now() - started) * 1e6;
    // The least measured: a first generation in a fresh process runs cold, and any may be slowed
    // by a busy machine (a probe's deferred threshold came from a 19.7 ms generation of a tape
    // that took 1.6-11 ms in warmer calls, and no generation came to correct it while deferred).
    const overModel = this.generationNs / modelGenerationNs(size);
    this.leastOverModel = this.leastOverModel === 0 ? overModel : Math.min(this.leastOverModel, overModel);
  }

  // Replays served by the current recording; whether the recording it replaced had served fewer
  // than generating it cost (replaysToPay); whether the current one waits for that many
  // (deferredUntil) before it is generated.
  private served = 0;
  private replacedUnpaid = false;
  private generationDeferred = false;
  private deferredUntil = 0;
  // The wait is churn's, after which the recording is generated as any recording is: its straight
  // code may wait longer still (a probe's recording, after churn, was generated whole after 24
  // replays, in one call of 50-65 ms, where a fresh one waited 3,998).
  private deferredByChurn = false;
  // What generating the current recording took (0: not generated), and the least any took over
  // what the model says (modelGenerationNs).
  private generationNs = 0;
  private leastOverModel = 0;

  // What generating a recording of `nodes` nodes should cost, from what generating cost this
  // function: the model's fixed cost and cost a node, scaled by the least ratio measured to it. A
  // total would charge a 25-node path the generation of a 20,005-node one (a review: 259-471 k
  // replays), and a cost a node would charge the large path the small one's fixed cost (another:
  // 30-950 k replays, against 326-428 that paid for generating it).
  private estimatedGenerationNs(nodes: number): number {
    return this.leastOverModel * modelGenerationNs(nodes);
  }

  // The replays a recording of `nodes` nodes serves before generating it, at `costNs`, has paid
  // for itself: settledReplays's model, or more where generating measured dearer than the model
  // says (a probe's loss of 1,000 guarded samples, 12 k nodes: 8-10 ms a re-record while V8 warms
  // the generator, 1.5-2 after, against the model's 0.2; its paths held for 30 calls each and
  // were generated every time, 8x the JS mode's time).
  private replaysToPay(nodes: number, costNs: number): number {
    return Math.max(settledReplays(nodes), Math.ceil(costNs / (GENERATED_SAVING_NS * Math.max(1, nodes))) + 8);
  }

  /** @internal The replays the current recording serves before its generation has paid for
   *  itself (replaysToPay: at what generating it cost, or the least a generation cost). */
  get replaysToSettle(): number {
    const rec = this.recording;
    if (!rec) return 0;
    return this.generationDeferred ? this.deferredUntil : this.replaysToPay(rec.tape.size, this.generationNs || this.estimatedGenerationNs(rec.tape.size));
  }

  // `rows` replays served by the current recording (a deferred one is generated once it has
  // served deferredUntil).
  private replayed(rows: number): void {
    this.served += rows;
    const rec = this.recording;
    if (!this.generationDeferred || !rec || this.served < this.deferredUntil) return;
    this.generationDeferred = false;
    const asAnyRecording = this.deferredByChurn && this.codegen === true && !this.shipped;
    this.deferredByChurn = false;
    if (!(rec.tape.engine instanceof WasmBackend)) return;
    this.generateSweeps(rec, rec.tape.engine, asAnyRecording);
    // Deferred again, for its straight code: counted on from the replays served so far.
    if (this.generationDeferred) return;
    // Its wait paid for it: the next re-record's check reads the estimate it waited for, not this
    // measurement, which a cold or slowed generation made count as churn again (a path that held
    // was interpreted on).
    this.generationNs = 0;
  }

  /** @internal Generates now what waits for replays to pay for it (a pool's copy: its workers
   *  never generate, and they replayed a deferred function's straight code interpreted for the
   *  pool's life, an async-lifecycle probe). */
  generateDeferredNow(): void {
    this.deferredByChurn = false;
    this.replayed(Math.max(0, this.deferredUntil - this.served));
  }

  /** @internal The generated sweeps' compiled modules, to ship with `toBytes()` to a core that
   *  loads the same tape (null when replays are not generated). */
  shipSweeps(): ShippedSweeps | null {
    const engine = this.recording?.tape.engine;
    return engine instanceof WasmBackend ? engine.shipSweeps() : null;
  }

  /** Number of outputs (known once recorded). */
  get outputs(): number {
    return this.recording?.outputs.length ?? 0;
  }

  /** The function returned a Var or a number (not an array or a Vec); null before the first
   *  recording and for functions loaded from bytes (but an array of one, which the bytes say). */
  private scalarOutput: boolean | null = null;

  /** @internal It returns an array of one scalar (which `value` gives as an array of one, and its
   *  bytes say: the output nodes alone read as one number). */
  get outputIsArrayOfOne(): boolean {
    const rec = this.recording;
    // Any number of output nodes: empty Vecs beside the one scalar (`[v.slice(0, 0), s]`) have
    // no entries, and the loaded copy gave the number (a review probe).
    return this.scalarOutput === false && rec !== null && rec.outputs.length === 1 && rec.outputs[0]! >= 0;
  }

  /** @internal For a function loaded from bytes that say its output is an array of one. */
  markArrayOfOne(): void {
    this.scalarOutput = false;
  }

  /** Nodes on the recorded tape (0 before the first call). */
  get size(): number {
    return this.recording?.tape.size ?? 0;
  }

  /** @internal */
  get recorded(): Recording | null {
    return this.recording;
  }

  /** @internal Whether its last recording was given up (f threw, or recorded what compile refuses). */
  get lastRecordingFailed(): boolean {
    return this.recording === null && this.gaveUp;
  }

  // (Not spareTape !== null: a large failed recording's tape is not kept, and toBytes then said
  // "nothing recorded yet": a review.)
  private gaveUp = false;

  /** The recorded tape as bytes (see `fromBytes` for the format), loadable in another process
   *  and on either backend. */
  toBytes(): Uint8Array<ArrayBuffer> {
    // Mid-recording (from inside f) the tape is half rewritten, and after a program reset f's tape
    // and recorded there it holds that program: both wrote bytes fromBytes refused, or another f.
    if (this.recordingNow) throw new TapegradError('INVALID_ARGUMENT', 'toBytes: the function is recording (from inside f)');
    const rec = this.recording;
    if (rec && rec.tape.base !== this.recordedBase) throw new TapegradError('INVALID_ARGUMENT', 'toBytes: its tape was reset since it recorded; call the function first');
    return toBytes(this);
  }

  /** f(x): a number for a scalar function (a Var or a number out), a Float64Array for a vector
   *  one (an array or a Vec out) and whenever `out` is given. */
  value(x: ArrayLike<number>): V;
  value(x: ArrayLike<number>, out: Float64Array): Float64Array;
  value(x: ArrayLike<number>, out?: Float64Array): V | Float64Array;
  value(x: ArrayLike<number>, out?: Float64Array): number | Float64Array {
    const rec = this.replay(x, 'value');
    const { val, xval } = rec.tape.engine.views;
    // Loaded from bytes that do not say (an array of one does), one scalar output is a number.
    const scalar = this.scalarOutput ?? (rec.outputs.length === 1 && rec.outputs[0]! >= 0);
    if (scalar && out === undefined) return val[rec.outputs[0]!]!;
    if (out !== undefined) checkOut(out, rec.outputs.length, 'value: out');
    const result = out ?? new Float64Array(rec.outputs.length);
    this.outputValues(rec, result, 0);
    this.stillHeld(result, rec.outputs.length, 'value: out');
    return result;
  }

  /** Gradient of a scalar function at x (forward replay + reverse sweep in one engine call). */
  gradient(x: ArrayLike<number>, out: Float64Array = new Float64Array(this.inputs)): Float64Array {
    // x read before out is checked: an accessor of x may resize or detach out's buffer (a probe:
    // a gradient cut short, or a raw TypeError), as the other calls and the batches read them.
    const row = this.toRow(x, 'gradient');
    checkOut(out, this.inputs, 'gradient: out');
    this.gradientRows(row, 1, out, null, 'gradient');
    this.stillHeld(out, this.inputs, 'gradient: out');
    return out;
  }

  /** [f(x), gradient]; the gradient is `out` when given. */
  valueAndGradient(x: ArrayLike<number>, out: Float64Array = new Float64Array(this.inputs)): [number, Float64Array] {
    const row = this.toRow(x, 'valueAndGradient');
    checkOut(out, this.inputs, 'valueAndGradient: out');
    this.gradientRows(row, 1, out, null, 'valueAndGradient');
    this.stillHeld(out, this.inputs, 'valueAndGradient: out');
    const rec = this.recording!;
    return [rec.tape.engine.views.val[rec.outputs[0]!]!, out];
  }

  /** Gradients for `rows` input rows of X (row-major, rows × inputs) in one call into the core;
   *  returns the rows × inputs gradients (into `out` when given). */
  gradientBatch(X: ArrayLike<number>, rows: number, out?: Float64Array): Float64Array {
    // X checked before out is allocated: a huge `rows` is X's length error, not the allocation's.
    const xs = this.batchRows(X, rows, 'gradientBatch');
    if (out === undefined) out = newFloat64(rows * this.inputs, 'gradientBatch: out');
    checkOut(out, rows * this.inputs, 'gradientBatch: out');
    this.gradientRows(this.rowsFor(xs, rows * this.inputs, out), rows, out, null, 'gradientBatch');
    this.stillHeld(out, rows * this.inputs, 'gradientBatch: out');
    return out;
  }

  // The reverse sweep of a replay; with checkNaN, which reads every adjoint, keeping those the
  // fused runs' kernels otherwise drop (a probe: an infinite adjoint inside a run of 1,100
  // elements went unchecked on wasm, where the tape and the JS engine found it). hvpAt keeps them
  // around its own sweep in the same few lines: a helper taking the sweep as a closure allocated
  // on every call, where calls with out allocate nothing (test/allocation.test.ts).
  private sweepReverse(engine: Backend, top: number): void {
    if (!this.checkNaN) return engine.sweepReverseReplay(top);
    engine.setKeepAdjoints(true);
    try {
      engine.sweepReverseReplay(top);
    } finally {
      engine.setKeepAdjoints(false);
    }
  }

  // checkNaN: rows one at a time, each replay and reverse sweep checked.
  private checkedRows(X: Float64Array, rows: number, out: Float64Array, values: Float64Array | null, what: string): void {
    const n = this.inputs;
    let r = 0;
    try {
      for (; r < rows; r++) {
        const rec = this.replay(rows === 1 && X.length === n ? X : X.subarray(r * n, (r + 1) * n), what);
        const engine = rec.tape.engine, top = this.scalarNode(rec, what);
        if (values) values[r] = engine.views.val[top]!;
        engine.clearAdjoints(rec.tape.size, false);
        engine.views.adj[top] = 1;
        this.sweepReverse(engine, top);
        rec.tape.assertFinite(0, top + 1, false, true);
        this.copyInputSlots(rec, engine.views.adj, engine.views.xadj, out, r * n);
      }
    } catch (e) {
      throw atRow(e, what, this.rowBase + r);
    }
  }

  /** Values and gradients of a scalar function for `rows` input rows in one call into the core:
   *  `[values (rows), gradients (rows × inputs)]`, into `values` and `out` when given. */
  valueAndGradientBatch(X: ArrayLike<number>, rows: number, out?: Float64Array, values?: Float64Array): [Float64Array, Float64Array] {
    const xs = this.batchRows(X, rows, 'valueAndGradientBatch');
    if (out === undefined) out = newFloat64(rows * this.inputs, 'valueAndGradientBatch: out');
    if (values === undefined) values = newFloat64(rows, 'valueAndGradientBatch: values');
    checkOut(out, rows * this.inputs, 'valueAndGradientBatch: out');
    checkOut(values, rows, 'valueAndGradientBatch: values');
    checkApart(out, rows * this.inputs, values, rows, 'valueAndGradientBatch');
    this.gradientRows(this.rowsFor(xs, rows * this.inputs, out, values), rows, out, values, 'valueAndGradientBatch');
    this.stillHeld(out, rows * this.inputs, 'valueAndGradientBatch: out');
    this.stillHeld(values, rows, 'valueAndGradientBatch: values');
    return [values, out];
  }

  /** vᵀJ for many rows: row r of `V` (rows × outputs) against the Jacobian at row r of `X`;
   *  rows × inputs out. One replay and one reverse sweep per row. With `values` (rows × outputs),
   *  the function's values at each row too. */
  vjpBatch(X: ArrayLike<number>, rows: number, V: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Float64Array {
    return this.perRow(X, rows, V, 'vjpBatch', 'outputs', (x, v, o) => this.vjpAt(x, v, o, 'vjpBatch'), 'inputs', out, values, 'vjp');
  }

  /** J·t for many rows: row r of `T` (rows × inputs) at row r of `X`; rows × outputs out. With
   *  `values` (rows × outputs), the function's values at each row too. */
  jvpBatch(X: ArrayLike<number>, rows: number, T: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Float64Array {
    return this.perRow(X, rows, T, 'jvpBatch', 'inputs', (x, t, o) => this.jvpAt(x, t, o, 'jvpBatch'), 'outputs', out, values, 'jvp');
  }

  /** H·v for many rows: row r of `V` (rows × inputs) at row r of `X`; rows × inputs out. With
   *  `values` (rows), the function's value at each row too. */
  hvpBatch(X: ArrayLike<number>, rows: number, V: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Float64Array {
    return this.perRow(X, rows, V, 'hvpBatch', 'inputs', (x, v, o) => this.hvpAt(x, v, o, 'hvpBatch', values !== undefined), 'inputs', out, values, 'hvp');
  }

  // The outputs of the function at the first row: of the recording, replayed there first where it
  // has guards (a probe: a batch took the count of whatever call came before, and refused rows
  // whose count was the same throughout), or recorded there if there is none yet. Its errors are
  // that row's, as a later row's are.
  private outputsNow(xs: Float64Array, rows: number, what: string): number {
    try {
      if (rows > 0 && (!this.recording || this.recording.guards.length > 0)) this.replay(xs.subarray(0, this.inputs), what);
    } catch (e) {
      throw atRow(e, what, this.rowBase);
    }
    return this.outputs;
  }

  // A per-row method over rows: X rows × inputs, D rows × (inputs or outputs) directions, as many
  // numbers out per row as `width` says. Rows run one call into the core at a time, through three
  // row buffers made once per call (a subarray per row allocated about 300 bytes a row: a probe).
  // `fused`: after a row, the rows that the engine's sweeps can take run through them without the
  // per-row calls around them (fusedRows, reverseRows).
  private perRow(
    X: ArrayLike<number>, rows: number, D: ArrayLike<number>, what: string, directionOf: 'inputs' | 'outputs',
    run: (x: Float64Array, d: Float64Array, out: Float64Array) => unknown, width: 'inputs' | 'outputs', out: Float64Array | undefined,
    values: Float64Array | undefined, fused: 'jvp' | 'hvp' | 'vjp',
  ): Float64Array {
    const xs = this.batchRows(X, rows, what);
    // Directions along the inputs are checked before f first records (cotangents need its outputs).
    const dWidth = directionOf === 'inputs' ? this.inputs : this.outputsNow(xs, rows, what);
    const ds = toFloat64(D, rows * dWidth, rowsOfEntries(what, rows, dWidth, directionOf === 'inputs' ? 'direction' : 'cotangent'));
    // X is read as its rows run: D's accessors (run just now) must not have shrunk it (a review's
    // getter resized X's buffer, and every row came out NaN on both engines).
    if (xs.length < rows * this.inputs) this.batchRows(X, rows, what);
    // hvp's rows have one output, or hvp refuses them (whatever the recording it starts from has).
    const hvp = what === 'hvpBatch';
    const outputs = hvp ? 1 : directionOf === 'outputs' ? dWidth : this.outputsNow(xs, rows, what);
    const w = width === 'inputs' ? this.inputs : outputs;
    if (out === undefined) out = newFloat64(rows * w, `${what}: out`);
    checkOut(out, rows * w, `${what}: out`);
    if (values !== undefined) checkOut(values, rows * outputs, `${what}: values`);
    checkApart(out, rows * w, values, rows * outputs, what);
    // Rows are read as they are run: results written over later rows would be read as input.
    const [xRows, dRows] = [this.rowsFor(xs, rows * this.inputs, out, values), this.rowsFor(ds, rows * dWidth, out, values)];
    // A guard recorded f again, returning another number of outputs than the rows of out, values
    // or the cotangents are laid out for: what the row wrote would be misplaced.
    const reshaped = () => !hvp && this.recording !== null && this.outputs !== outputs;
    const n = this.inputs;
    const xRow = new Float64Array(n), dRow = new Float64Array(dWidth), outRow = new Float64Array(w);
    let r = 0;
    this.fusedRow[0] = -1;
    try {
      while (r < rows) {
        // Row 0 by the call, which records f where it has no recording, and generates the tangent
        // sweeps where they are due.
        if (r > 0) {
          r = fused === 'vjp' ? this.reverseRows(xRows, dRows, r, rows, dWidth, out, values) : this.fusedRows(fused, xRows, dRows, r, rows, w, out, values);
          if (r === rows) break;
        }
        copyRow(xRows, r * n, n, xRow);
        copyRow(dRows, r * dWidth, dWidth, dRow);
        run(xRow, dRow, outRow);
        if (reshaped()) break;
        for (let k = 0; k < w; k++) out[r * w + k] = outRow[k]!;
        if (values !== undefined) this.outputValues(this.recording!, values, r * outputs);
        r++;
      }
    } catch (e) {
      // Or the row failed on that (jvp's out, vjp's cotangent too short): name the cause instead.
      if (!reshaped()) throw atRow(e, what, this.rowBase + (this.fusedRow[0]! >= 0 ? this.fusedRow[0]! : r));
    }
    if (r < rows) throw atRow(new TapegradError('INVALID_ARGUMENT', `f, recorded again here, returns ${this.outputs} output${this.outputs === 1 ? '' : 's'}, not the batch's ${outputs}`), what, this.rowBase + r);
    this.stillHeld(out, rows * w, `${what}: out`);
    if (values !== undefined) this.stillHeld(values, rows * outputs, `${what}: values`);
    return out;
  }

  // An output array checked again after a call whose custom rules ran user code, which could
  // detach or shrink it (a review: a rule's transfer of out's buffer had the gradient written
  // nowhere, without an error); without custom rules nothing runs that could.
  private stillHeld(out: Float64Array, n: number, what: string): void {
    // (The engine keeps its rules' handler past a recording: a batch whose guard recorded f again
    // without custom nodes may have run them in its earlier rows.)
    if (this.customNodes || this.recording?.tape.engine.custom) checkOut(out, n, what);
  }

  // The recording's output values, into `into` from `at`.
  private outputValues(rec: Recording, into: Float64Array, at: number): void {
    const nodes = rec.outputNodes;
    for (let k = 0; k < nodes.length; k++) if (rec.tape.isVector(nodes[k]!)) rec.tape.storeValues(nodes[k]!);
    const { val, xval } = rec.tape.engine.views;
    for (let j = 0; j < rec.outputs.length; j++) {
      const o = rec.outputs[j]!;
      into[at + j] = o >= 0 ? val[o]! : xval[-1 - o]!;
    }
  }

  // The rows as a Float64Array: as it is, or checked and copied once from any other array.
  private batchRows(X: ArrayLike<number>, rows: number, what: string): Float64Array {
    checkRows(rows, what);
    return toFloat64(X, rows * this.inputs, `${what}: ${rows} rows of ${this.inputs} inputs`);
  }

  /** vᵀJ at x for a vector function (one replay, one reverse sweep). */
  vjp(x: ArrayLike<number>, v: ArrayLike<number>, out: Float64Array = new Float64Array(this.inputs)): Float64Array {
    return this.vjpAt(x, v, out, 'vjp');
  }

  // `what`: the call its errors name (vjpBatch's rows said 'vjp: a comparison...').
  private vjpAt(x: ArrayLike<number>, v: ArrayLike<number>, out: Float64Array, what: string): Float64Array {
    const rec = this.replay(x, what);
    v = this.entries(v, rec.outputs.length, what, 'cotangent');
    const engine = rec.tape.engine;
    engine.clearAdjoints(rec.tape.size, false);
    const { adj, xadj } = engine.views;
    let top = 0;
    for (let k = 0; k < rec.outputNodes.length; k++) {
      const node = rec.outputNodes[k]!;
      // A vector output is claimed as a rule would claim it: zeroed once, then flagged.
      if (rec.tape.isVector(node) && adj[node] === 0) {
        const off = rec.tape.elementOffset(node);
        xadj.fill(0, off, off + rec.tape.elementLength(node));
        adj[node] = 1;
      }
      top = Math.max(top, node);
    }
    for (let j = 0; j < rec.outputs.length; j++) {
      const o = rec.outputs[j]!;
      if (o >= 0) adj[o] += v[j]!;
      else xadj[-1 - o] += v[j]!;
    }
    this.sweepReverse(engine, top);
    if (this.checkNaN) rec.tape.assertFinite(0, top + 1, false, true);
    // Literals, not a template: a string a call was vjp's one allocation with out (test/allocation).
    checkOut(out, this.inputs, what === 'vjp' ? 'vjp: out' : 'vjpBatch: out');
    this.copyInputSlots(rec, engine.views.adj, engine.views.xadj, out, 0);
    return out;
  }

  // The inputs' entries of a node region (or, for a vector input, of its element region; zeros
  // when the sweep never reached the input vector, whose adjoints are then not written), into
  // `out` from `at`, without a subarray or a zero array per call (a compiled gradient or hvp with
  // `out` allocates nothing).
  private copyInputSlots(rec: Recording, nodes: Float64Array, elements: Float64Array, out: Float64Array, at: number): void {
    const n = this.inputs;
    if (rec.vectorInput && rec.tape.engine.views.adj[1] === 0) {
      out.fill(0, at, at + n);
      return;
    }
    copyNumbers(rec.vectorInput ? elements : nodes, 0, out, at, n);
  }

  /** J·t at x (one replay, one tangent sweep). */
  jvp(x: ArrayLike<number>, t: ArrayLike<number>, out?: Float64Array): Float64Array {
    return this.jvpAt(x, t, out, 'jvp');
  }

  // `what`: the call its errors name, as vjpAt's.
  private jvpAt(x: ArrayLike<number>, t: ArrayLike<number>, out: Float64Array | undefined, what: string): Float64Array {
    const rec = this.forwardTangent(x, t, what) ?? this.replay(x, what);
    const tan = rec === this.fused ? rec.tape.engine.views.tan! : this.seedTangents(rec, t, rec.outputs, what);
    if (this.checkNaN) rec.tape.assertFiniteTangents(0, rec.tape.size, true, rec.outputs);
    // A vector output's entries are elements, whose tangents a fused run may have left out.
    rec.tape.tangentsOf(rec.outputNodes);
    const xtan = rec.tape.engine.views.xtan!;
    if (out !== undefined) checkOut(out, rec.outputs.length, what === 'jvp' ? 'jvp: out' : 'jvpBatch: out');
    const result = out ?? new Float64Array(rec.outputs.length);
    for (let j = 0; j < rec.outputs.length; j++) {
      const o = rec.outputs[j]!;
      result[j] = o >= 0 ? tan[o]! : xtan[-1 - o]!;
    }
    return result;
  }

  /** H·v at x for a scalar function (replay, tangent sweep, reverse sweep with tangents). */
  hvp(x: ArrayLike<number>, v: ArrayLike<number>, out: Float64Array = new Float64Array(this.inputs)): Float64Array {
    return this.hvpAt(x, v, out, 'hvp');
  }

  // `what`: the call its errors name (hvpBatch's rows said 'hvp needs...': a probe).
  // `valueRead`: the output's value is read after it (hvpBatch's values).
  private hvpAt(x: ArrayLike<number>, v: ArrayLike<number>, out: Float64Array, what: string, valueRead = false): Float64Array {
    // The replay may leave the output's value uncomputed unless read, here or by checkNaN's checks.
    const rec = this.forwardTangent(x, v, what) ?? this.replay(x, what, !valueRead && !this.checkNaN);
    const top = this.scalarNode(rec, what);
    this.topTarget[0] = top;
    if (rec === this.fused) (rec.tape.engine as WasmBackend).reverseTangentFused(top, 1, rec.tape.size, this.inputs);
    else {
      this.seedTangents(rec, v, this.topTarget, what, this.checkNaN ? -1 : top);
      // checkNaN reads every adjoint tangent, which fused runs' kernels otherwise drop.
      if (this.checkNaN) rec.tape.engine.setKeepAdjoints(true);
      try {
        rec.tape.engine.reverseTangentReplay(top, 1, rec.tape.size);
      } finally {
        if (this.checkNaN) rec.tape.engine.setKeepAdjoints(false);
      }
    }
    if (this.checkNaN) {
      rec.tape.assertFiniteTangents(0, top + 1, true, this.topTarget);
      rec.tape.assertFinite(0, top + 1, false, true);
      rec.tape.assertFiniteTangentAdjoints(0, top + 1, true);
    }
    checkOut(out, this.inputs, what === 'hvp' ? 'hvp: out' : 'hvpBatch: out');
    this.copyInputSlots(rec, rec.tape.engine.views.tanAdj!, rec.tape.engine.views.xtanAdj!, out, 0);
    return out;
  }

  // hvp's one target, in a slot of its own rather than an array a call.
  private readonly topTarget = new Int32Array(1);

  // The recording whose values and tangents `forwardTangent` has just computed.
  private fused: Recording | null = null;

  // Once the generated tangent sweeps exist (the first jvp or hvp makes them), values and tangents
  // at x along t in one generated sweep: the recording, or null where that does not apply (no
  // generated sweeps, a vector input, checkNaN, which checks the replayed values on their own) or
  // a guard failed (the general path then records again at x).
  private forwardTangent(x: ArrayLike<number>, t: ArrayLike<number>, what: string): Recording | null {
    this.fused = null;
    const live = this.forwardTangentRecording();
    if (!live) return null;
    let row = this.toRow(x, what);
    // x whole before t is read, as the other engine's path reads it: an accessor of t that
    // resized x's buffer left this sweep reading a shrunk x, NaN without an error (a review).
    if (row !== this.row) {
      for (let k = 0; k < this.inputs; k++) this.row[k] = row[k]!;
      row = this.row;
    }
    t = this.entries(t, this.inputs, what, DIRECTION);
    live.tape.ensureTangents();
    if ((live.tape.engine as WasmBackend).replayForwardTangent(row, t, this.inputs) >= 0) return null;
    this.replayed(1);
    return (this.fused = live);
  }

  // The recording whose generated forward-tangent sweep a jvp or hvp can run, or null.
  private forwardTangentRecording(): Recording | null {
    const live = this.recording;
    live?.tape.refuseInsideRule('cannot replay the compiled function it belongs to');
    const engine = live?.tape.engine;
    if (!this.onItsTape(live) || live.vectorInput || this.checkNaN || !(engine instanceof WasmBackend) || !engine.forwardTangentReady()) return null;
    return live;
  }

  // jvpBatch's or hvpBatch's rows [from, rows) (checked, apart from out and values) through the
  // generated forward-tangent sweep, as forwardTangent and the fused path of jvp and hvp run each
  // one (the same bits); returns the row reached: `rows`, a row whose guards failed (the per-row
  // call records there), or `from` where that sweep does not apply (outputs that are a vector or
  // its entries, which a fused run may leave uncomputed; hvp of other than one scalar output,
  // which the call refuses).
  // `width`: the numbers out per row the batch has laid `out` out for (the outputs of its first
  // row's recording, for jvp).
  private fusedRows(
    kind: 'jvp' | 'hvp', xs: Float64Array, ds: Float64Array, from: number, rows: number, width: number, out: Float64Array,
    values: Float64Array | undefined,
  ): number {
    const rec = this.forwardTangentRecording();
    if (!rec) return from;
    const outputs = rec.outputs;
    for (let j = 0; j < outputs.length; j++) if (outputs[j]! < 0 || rec.tape.isVector(rec.outputNodes[j]!)) return from;
    if (kind === 'hvp' ? outputs.length !== 1 : outputs.length !== width) return from;
    rec.tape.ensureTangents();
    const engine = rec.tape.engine as WasmBackend;
    const done = engine.forwardTangentRows(xs, ds, from, rows, this.inputs, kind === 'hvp' ? outputs[0]! : -1, outputs, rec.tape.size, out, values, this.fusedRow);
    this.fusedRow[0] = -1;
    this.replayed(done - from);
    return done;
  }

  // vjpBatch's rows [from, rows) (checked, apart from out and values) through the engine's batch
  // of replays and reverse sweeps, seeded with each row's cotangent as vjp seeds its one (the same
  // bits): one call into the core for the rows on the wasm engine, as a gradientBatch, with none
  // of vjp's per-row calls and checks. Returns the row reached: `rows`, a row whose guards failed
  // (the per-row call records there), or `from` where this does not apply (checkNaN, custom
  // rules, whose errors name their row, an input vector, outputs that are a vector or its
  // entries or none, a recording with other outputs than the batch's).
  private reverseRows(xs: Float64Array, vs: Float64Array, from: number, rows: number, width: number, out: Float64Array, values: Float64Array | undefined): number {
    const rec = this.recording;
    if (!this.onItsTape(rec) || rec.vectorInput || this.checkNaN || this.customNodes) return from;
    rec.tape.refuseInsideRule('cannot replay the compiled function it belongs to');
    const outputs = rec.outputs;
    // (No outputs: the core takes no seeds as a gradient's seed of 1.)
    if (outputs.length !== width || width === 0) return from;
    let top = 0;
    for (let j = 0; j < width; j++) {
      if (outputs[j]! < 0 || rec.tape.isVector(rec.outputNodes[j]!)) return from;
      top = Math.max(top, outputs[j]!);
    }
    this.fusedRow[0] = from;
    const done = rec.tape.engine.gradientBatch(xs, from, rows, this.inputs, rec.tape.size, top, out, values ?? null, { rows: vs, outputs });
    this.fusedRow[0] = -1;
    this.replayed(done - from);
    return done;
  }

  // The row fusedRows or reverseRows is at, which an error names, or -1.
  private readonly fusedRow = Int32Array.of(-1);

  // `targets`: the nodes whose tangents (jvp) or second-order results (hvp) the caller reads.
  private seedTangents(rec: Recording, direction: ArrayLike<number>, targets: ArrayLike<number>, what: string, hvpOutput = -1): Float64Array {
    const t = this.entries(direction, this.inputs, what, DIRECTION);
    const tan = rec.tape.ensureTangents();
    const engine = rec.tape.engine;
    if (!(engine instanceof WasmBackend && engine.tangentSweepsGenerated())) tan.fill(0, 0, rec.tape.size);
    const xtan = rec.tape.engine.views.xtan!;
    rec.tape.engine.clearElementTangents(rec.tape.size, rec.tape.elementCount);
    const seeded = rec.vectorInput ? xtan : tan;
    // One copy, not a loop over 10^5 (entries' kept buffer may be longer than the inputs).
    seeded.set(t.length === this.inputs ? t : t.subarray(0, this.inputs));
    rec.tape.tangentSweep(targets, true, rec.vectorInput ? 2 : this.inputs, hvpOutput);
    return tan;
  }

  // A tangent's or cotangent's entries, each read once and checked as it is copied (a Float64Array
  // as it is): read to check and again to use, a getter could hand over a BigInt the second time
  // (a review: a raw TypeError). Into a buffer kept for the next call, which then allocates nothing.
  private entries(x: ArrayLike<number>, expected: number, call: string, noun: string): Float64Array {
    this.refuseWhileReading(call);
    checkLength(x, expected, call, noun);
    if (x instanceof Float64Array && ArrayBuffer.isView(x)) return x;
    if (this.entryBuffer.length < expected) this.entryBuffer = new Float64Array(expected);
    const copy = this.entryBuffer;
    this.readingArguments = true;
    try {
      for (let k = 0; k < expected; k++) {
        const v = x[k];
        if (typeof v !== 'number') throw new NotANumberError(`${named(call, noun)}'s entry ${k} must be a number, got ${describe(v)}`);
        copy[k] = v;
      }
    } finally {
      this.readingArguments = false;
    }
    return copy;
  }
  private entryBuffer = new Float64Array(0);

  // `what`: the call its errors name (a probe: "the input has 1 entries, expected 2" said not which).
  private toRow(x: ArrayLike<number>, what: string): Float64Array {
    this.refuseWhileReading(what);
    checkLength(x, this.inputs, what, 'input');
    // isView: a Proxy of a Float64Array passes instanceof but reads through its traps.
    if (x instanceof Float64Array && ArrayBuffer.isView(x)) return x;
    this.readingArguments = true;
    try {
      for (let k = 0; k < this.inputs; k++) {
        const v = x[k];
        if (typeof v !== 'number') {
          // A compiled function called on Vars: inside a transform (a probe: a bare "must be a number").
          const hint = (v as unknown) instanceof Var ? ': a compiled function takes numbers and records its own tape, so it cannot be called on Vars (inside grad, hvp and the other transforms, call the function it compiles)' : '';
          throw new NotANumberError(`${what}: input ${k} must be a number, got ${describe(v)}${hint}`);
        }
        this.row[k] = v;
      }
    } finally {
      this.readingArguments = false;
    }
    return this.row;
  }

  // Whether a call is reading its arguments' entries, which may run code (a getter, a Proxy): a
  // call of this function from there would write its own over the kept row and entry buffers, or
  // replay the tape between this call's writing x and its reading the direction (a probe: jvp,
  // vjp and hvp answered at the getter's point, without an error).
  private readingArguments = false;

  private refuseWhileReading(what: string): void {
    if (this.readingArguments) {
      throw new TapegradError('INVALID_ARGUMENT', `${what}: this compiled function was called again while a call of it read its arguments (a getter or Proxy among them calls it); read them into an array first`);
    }
  }

  // Whether `rec` is still on its tape: a trap in the core empties the tape, and a reset through a
  // Var that escaped f moves its base (another program recorded there would be replayed as f).
  private onItsTape(rec: Recording | null): rec is Recording {
    return rec !== null && rec.tape.size > 0 && rec.tape.base === this.recordedBase;
  }

  /** The recording, or a new one at x if there is none or a trap in the core took it. */
  private live(x: Float64Array): Recording {
    const rec = this.recording;
    // A custom rule of this tape calling the function again: its replay would write its inputs
    // over those of the replay running the rule.
    rec?.tape.refuseInsideRule('cannot replay the compiled function it belongs to');
    if (this.onItsTape(rec)) return rec;
    if (rec && this.reload) return this.adopt(this.reload());
    return this.record(x.length === this.inputs ? x : x.subarray(0, this.inputs));
  }

  private gradientRows(X: Float64Array, rows: number, out: Float64Array, values: Float64Array | null, what: string): void {
    // No rows: nothing to record at (live would record f at an empty input list, and keep it).
    if (rows === 0) return;
    if (this.checkNaN) return this.checkedRows(X, rows, out, values, what);
    const n = this.inputs;
    let rec: Recording;
    // Recording there (the first call) or refusing to replay: row 0's error, as a later row's.
    try {
      rec = this.live(X);
      // Recorded last where f returns other outputs: this first row may record a scalar one.
      if (rec.outputs.length !== 1 || rec.outputs[0]! < 0) rec = this.replayUnchecked(X.subarray(0, n), what);
      // Not one scalar output at row 0 either: that row's error, as hvpBatch's (a probe).
      this.scalarNode(rec, what);
    } catch (e) {
      throw atRow(e, what, this.rowBase);
    }
    let row = 0;
    // A custom function's rules run user code, which may throw: row by row, so its error names the
    // row as vjpBatch's does (a probe); its calls into JS cost more than a call per row.
    const step = this.customNodes ? 1 : rows;
    while (row < rows) {
      const output = this.scalarNode(rec, what), to = Math.min(rows, row + step);
      let flipped = -1;
      const custom = this.customNodes ? rec.tape.engine.custom : null;
      if (custom) custom.thrownAt = -1;
      try {
        const from = row;
        row = rec.tape.engine.gradientBatch(X, row, to, n, rec.tape.size, output, out, values);
        this.replayed(row - from);
      } catch (e) {
        // A rule of the branch a guard leaves at this row (see replayUnchecked).
        if (custom) flipped = flippedGuard(rec, custom.thrownAt);
        if (flipped < 0) throw step === 1 ? atRow(e, what, this.rowBase + row) : e;
      }
      if (row === rows) break;
      if (row === to) continue;
      // A guard failed at this row: record there, take its gradient from the fresh tape.
      let top: number;
      try {
        rec = this.onBranchChange(X.subarray(row * n, (row + 1) * n), what, flipped);
        top = this.scalarNode(rec, what);
      } catch (e) {
        throw atRow(e, what, this.rowBase + row);
      }
      if (values) values[row] = rec.tape.engine.views.val[top]!;
      rec.tape.engine.reverse(top, 1, rec.tape.size);
      this.copyInputSlots(rec, rec.tape.engine.views.adj, rec.tape.engine.views.xadj, out, row * n);
      row++;
    }
  }

  // The output node of a recording with one scalar output, which gradients and hvp need: with
  // several outputs, or a Vec, outputs[0] alone would give a wrong answer without a word.
  private scalarNode(rec: Recording, what: string): number {
    const o = rec.outputs;
    if (o.length === 1 && o[0]! >= 0) return o[0]!;
    throw new TapegradError(
      'INVALID_ARGUMENT',
      `${what} needs a function with one scalar output; this one returns ${o.length === 1 ? 'a vector' : `${o.length} outputs`}: use vjp or vjpBatch (the gradient of a weighted sum of the outputs), or jvp`,
    );
  }

  // `forHvp`: an hvp's sweeps follow, and nothing reads the output's value (see replayForward).
  private replay(x: ArrayLike<number>, what: string, forHvp = false): Recording {
    const rec = this.replayUnchecked(x, what, forHvp);
    if (this.checkNaN) rec.tape.assertFinite(0, rec.tape.size, true, true);
    return rec;
  }

  private replayUnchecked(x: ArrayLike<number>, what: string, forHvp = false): Recording {
    const row = this.toRow(x, what);
    const rec = this.recording;
    // Recording at x computes its values at x: nothing to replay.
    if (!rec || (!this.onItsTape(rec) && !this.reload)) return this.record(row);
    const live = this.live(row);
    let node: number;
    const custom = live.tape.engine.custom;
    if (custom) custom.thrownAt = -1;
    try {
      const hvpOutput = forHvp && live.outputs.length === 1 ? live.outputs[0]! : -1;
      node = live.tape.engine.replayForward(row, this.inputs, live.tape.size, hvpOutput);
    } catch (error) {
      // A custom rule refusing these inputs may be one of the branch the guards leave (a review:
      // safeLog(-2) of the branch recorded at 2 threw, and the function never recorded again): a
      // guard computed before it that comes out the other way is a branch change. (Custom nodes
      // replay in the interpreter, so those guards' values are in the tape.)
      node = flippedGuard(live, custom?.thrownAt ?? -1);
      if (node < 0) throw error;
    }
    if (node < 0) {
      this.replayed(1);
      return live;
    }
    return this.onBranchChange(row, what, node);
  }

  private onBranchChange(x: Float64Array, what: string, flipped = -1): Recording {
    const rec = this.recording!;
    if (this.strict || !this.f) {
      const node = flipped >= 0 ? flipped : rec.tape.engine.replayForward(x, this.inputs, rec.tape.size);
      // Back to inputs where the guards hold: the failed replay left x's values in the tape, and
      // toBytes() would write a tape that fromBytes rejects.
      rec.tape.engine.replayForward(this.guardedInputs!, this.inputs, rec.tape.size);
      // Named by its call, as every message is (a probe: a loaded function's gradient named none);
      // a batch's row names it.
      throw new BranchChangedError(
        `${what.endsWith('Batch') ? '' : `${what}: `}a comparison recorded at node ${node} comes out the other way at these inputs` +
          (this.f ? ' (strict mode: not re-recording)' : ' and this function was loaded from bytes, so it cannot be re-recorded'),
        node,
      );
    }
    this.recordedAgain++;
    // For the recording this makes alone (adopt reads it): a recording after a reset, a trap or a
    // failed re-record kept a stale answer (reviews: one after 863,821 replays of a recording
    // that had paid waited again; one after a failed re-record waited 1.4 M replays).
    this.replacedUnpaid = this.served < this.replaysToSettle;
    try {
      return this.record(x);
    } finally {
      this.replacedUnpaid = false;
    }
  }

  private giveUp(tape: Tape): void {
    tape.reset();
    this.recording = null;
    // Not the peak of a large recording that failed, which the next may not need (a probe: 400 MB
    // kept by a function then holding 10 nodes); the transforms' pool draws the same line.
    this.spareTape = tape.memoryBytes <= transformPool.bytes ? tape : null;
    this.gaveUp = true;
  }

  /** @internal Records f at x (inputs are the first nodes), and its guards. */
  record(x: ArrayLike<number>): Recording {
    // f calling this function (itself, or a custom rule it uses, whose forward runs here) found no
    // recording to replay and recorded again, until the stack overflowed; a replay refuses the
    // same call by refuseInsideRule.
    if (this.recordingNow) {
      throw new TapegradError('INVALID_ARGUMENT', 'compile: f called its own compiled function while recording it (directly or by a custom rule)');
    }
    this.recordingNow = true;
    try {
      return this.recordOnce(x);
    } finally {
      this.recordingNow = false;
    }
  }

  private recordOnce(x: ArrayLike<number>): Recording {
    const f = this.f!;
    const tape = this.recording?.tape ?? this.spareTape ?? createTapeSync({ backend: this.backend, ...(this.expectedNodes > 0 ? { expectedNodes: this.expectedNodes } : {}) });
    this.spareTape = null;
    if (tape.engine instanceof WasmBackend) {
      tape.engine.simd = this.simd;
      tape.engine.planAhead = this.codegen !== false && !this.vector;
      tape.engine.dropGeneratedSweeps();
    }
    tape.reset();
    // A constant node per use keeps the recording's structure what the code's is: shared ones
    // save nodes on fresh recordings, but where a loop's numbers vary per iteration the cache's
    // hits and misses would break its period, and with it the generated loops.
    tape.shareConstants = false;
    tape.staleWhy = ' (a compiled function records again where a guard changes path: it is from an earlier recording of it)';
    const observed = new Set<number>();
    tape.observed = observed;
    let outputs: Int32Array;
    let outputNodes: Int32Array;
    try {
      const xs = this.vector ? tape.vector(x) : tape.variables(x);
      // f reset the tape it records on: its inputs are gone (a replay would write the new ones
      // over whatever was recorded first).
      const y = callOn(tape, f, xs, 'compile') as ReturnType<CompilableFunction> | ReturnType<VectorCompilableFunction>;
      const list = y instanceof Vec ? [y] : Array.isArray(y) ? (y as readonly (Var | number)[]) : [y as Var | number];
      this.scalarOutput = !(y instanceof Vec) && !Array.isArray(y);
      const outs = list.map((v) => (v instanceof Vec || v instanceof Var ? v : typeof v === 'number' ? tape.constant(v) : badOutput(v)));
      // Named as compile names f's other faults (a Var of another tape said nothing of the call).
      outputs = Int32Array.from(tape.outputSlots(outs, 'compile: the function\'s output'));
      outputNodes = Int32Array.from(outs, (v) => (v instanceof Vec ? tape.vindex(v) : tape.index(v)));
      tape.evaluate();
    } catch (e) {
      // What f recorded before it threw is no recording: none is kept, and the next call records
      // again (replaying the half-written tape under the old one's guards gave wrong values).
      this.giveUp(tape);
      throw e;
    } finally {
      tape.observed = null;
    }
    const { op, val } = tape.engine.views;
    // A value read in JS is baked into the recording: on replay at other inputs nothing would
    // recompute what the code did with it. Comparisons are the exception (they become guards);
    // any other read is refused here rather than replayed wrong.
    // So is a node computed from constants alone, whose value every replay has (a probe: a
    // constant's own value was refused, 'reused as a constant').
    const { a, b } = tape.engine.views;
    // The reads split into comparisons (the guards) and the rest in one pass, each sorted as a
    // typed array: spreads, filters and a sort with a comparator cost about 100 ns a guard at
    // every recording (a probe's 1,000 guards changing at every call: 328 -> 218 µs a call).
    let comparisons = 0;
    for (const i of observed) if (COMPARISON_OPS.has(op[i]!)) comparisons++;
    const guards = new Int32Array(comparisons), observedValues = new Int32Array(observed.size - comparisons);
    comparisons = 0;
    let others = 0;
    for (const i of observed) {
      if (COMPARISON_OPS.has(op[i]!)) guards[comparisons++] = i;
      else observedValues[others++] = i;
    }
    guards.sort();
    observedValues.sort();
    const fixed = observedValues.length > 0 ? constantsOnly(op, a, b, observedValues[observedValues.length - 1]! + 1) : null;
    const read = observedValues.filter((i) => !fixed![i]);
    if (read.length > 0) {
      const i = read[0]!;
      this.giveUp(tape);
      // An elementwise comparison is a comparison too, but only scalar ones become guards (read
      // whole, or an element of it: that advised x.gt(0).value, refused for a Vec, a probe).
      const compared = op[i] === Op.vget ? a[i]! : i;
      const vectorComparison = op[compared]! >= ELEMENTWISE && COMPARISON_OPS.has(op[compared]! - ELEMENTWISE);
      // A Vec's values read (v.value[0] > 0) got the scalar advice, x.gt(0).value, which a Vec's
      // comparison is refused for in turn (a probe).
      const vectorRead = !vectorComparison && nodeKind(op[i]!) === 'vector';
      throw new TapegradError(
        'INVALID_ARGUMENT',
        `compile: the function read the value of node #${i} (${opNameOf(op[i]!)}) while recording${read.length > 1 ? ` (and ${read.length - 1} more)` : ''}; ` +
          'it may depend on the inputs, and a replay at other inputs would reuse this value as a constant. ' +
          (vectorComparison
            ? 'Only scalar comparisons become guards: compare elements (v.get(k).gt(0).value), or use where, which replays both branches.'
            : vectorRead
            ? "A Vec's values are not guarded: branch on an element's comparison (v.get(k).gt(0).value: compiled functions guard those and record again when one changes), or use where/select, which replays both branches."
            : 'Branch on a comparison instead (x.gt(0).value: compiled functions guard those and record again when one changes), or use select/where, which replays both branches; ' +
              'for arithmetic use the ops (x.sin(), x.mul(2)): Math functions and operators on a Var compute on its value.'),
      );
    }
    // An input recorded inside f is not one of the compiled function's inputs: nothing would write
    // it on replay, its gradient would be dropped, and its bytes would not load (fromBytes wants
    // the inputs first). The SIMD batch kernel read stale lanes for it.
    const after = op.subarray(this.vector ? 2 : this.inputs, tape.size);
    const found = [after.indexOf(Op.input), after.indexOf(Op.vinput)].filter((k) => k >= 0);
    if (found.length > 0) {
      const i = Math.min(...found) + (this.vector ? 2 : this.inputs);
      this.giveUp(tape);
      throw new TapegradError(
        'INVALID_ARGUMENT',
        `compile: the function recorded a new input (node #${i}, ${opNameOf(op[i]!)}: tape.variable, variables or vector) while recording; ` +
          'a compiled function has only the inputs it is called with. Use a constant (a number, tape.constant) or make it one of its inputs.',
      );
    }
    const expected = new Float64Array(guards.length);
    for (let k = 0; k < guards.length; k++) expected[k] = val[guards[k]!]!;
    return this.adopt({ tape, inputs: this.inputs, outputs, guards, expected, vectorInput: this.vector, outputNodes });
  }
}

// Per node below `end`: 1 where its value is fixed by constants alone (a constant, or a scalar
// op of one or two operands that are), the same at every replay; vector nodes, selects, custom
// nodes and inputs count as depending on the inputs.
function constantsOnly(op: Uint8Array, a: Int32Array, b: Int32Array, end: number): Uint8Array {
  const fixed = new Uint8Array(end);
  for (let i = 0; i < end; i++) {
    const code = op[i]!;
    if (code === Op.const) fixed[i] = 1;
    else if (code >= Op.add && code < Op.select && OP_TABLE[code]![1] <= 2) fixed[i] = fixed[a[i]!]! & fixed[b[i]!]!;
  }
  return fixed;
}

/** @internal When a compiled function's generation waits for its replays: a plan with more
 *  computed ops of straight code (of distinct op sequences, counted before anything is described)
 *  than `codeNodes` and `perTapeNode` a node of its tape, whose describing, emitting and compiling
 *  is estimated at `nsPerCodeNode` a node (first generations of straight code and of a
 *  data-dependent mixture measured 9-13 µs), is generated once its replays have saved that at
 *  GENERATED_SAVING_NS a tape node. A probe's mixture loss of 1,000 samples (34 k nodes, 15 k
 *  nodes of code) took 155-211 ms to its first call against 9 interpreted, for replays a tenth
 *  faster. The bench's tapes plan at most a few hundred such ops. Likewise a plan of more steps
 *  (top-level bodies, each one step of a sweep) than `steps` and `stepsPerTapeNode` a node,
 *  estimated at `nsPerStep` a step: code whose branches follow the data, with samples too short
 *  for an inner loop, cuts into a step per sample or two (a logistic loss of 5 features: 2,160
 *  steps over 70 k nodes, 2,459 once short loops of known bodies were cut too; its first call 101-121 ms against 35-58 interpreted, for replays twice
 *  as fast: about 30 µs a step). The bench's losses plan a step per 88-105 nodes. Only
 *  bench/codegen-cliffs.ts and tests change it. */
export const codegenDeferral = { codeNodes: 1024, perTapeNode: 0.01, nsPerCodeNode: 10_000, steps: 256, stepsPerTapeNode: 1 / 64, nsPerStep: 30_000 };

// The straight code and steps past which a tape of `nodes` nodes waits: describing, emitting and
// compiling them would cost more than about twice recording the tape (10 µs a node of code
// against a fresh recording's 50 ns or so a node; 30 µs a step, one per 64 nodes, against the
// 0.5-0.8 µs a node a fresh recording of such data-dependent code took), and never less than
// codeNodes and steps, which small functions stay under.
const deferredPast = (nodes: number): { straightOps: number; steps: number } => ({
  straightOps: Math.max(codegenDeferral.codeNodes, codegenDeferral.perTapeNode * nodes),
  steps: Math.max(codegenDeferral.steps, codegenDeferral.stepsPerTapeNode * nodes),
});

/** @internal The most inputs a compiled function takes (a tape's default node limit). */
export const MAX_INPUTS = 2 ** 28;

/** @internal The replays a recording of `nodes` nodes serves before generating its sweeps pays
 *  for itself: a re-record that generates costs about 30 µs more, plus 15 ns a node, and a
 *  generated replay saves about 2.5 ns a node (measured with module caches warm: 11 nodes, +30
 *  µs against 0.024 µs a replay, 1,291 replays; 511, 53; 5,011, 18; 50,011, 6). A fixed 64 made
 *  a small function whose path held for 65 calls regenerate at every change, 10-14 times the
 *  interpreter's time (a probe). */
export function settledReplays(nodes: number): number {
  return Math.ceil(24_000 / Math.max(1, nodes)) + 8;
}

// What a generated replay saves over the interpreter per node (settledReplays's measurements).
const GENERATED_SAVING_NS = 2.5;

/** @internal What a re-record that generates costs by settledReplays's measurements: 30 µs and
 *  15 ns a node. */
export const modelGenerationNs = (nodes: number): number => 30_000 + 15 * Math.max(1, nodes);

/** @internal Where `toFloat64` puts its copy, and which Float64Arrays it takes as they are. */
export interface Float64Home { holds(x: Float64Array): boolean; make(length: number): Float64Array }
const ORDINARY: Float64Home = { holds: () => true, make: (length) => new Float64Array(length) };

/** @internal The first `needed` numbers of x as a Float64Array: x itself where `home` holds it,
 *  else checked and copied in once. */
export function toFloat64(x: ArrayLike<number>, needed: number, what: string, home: Float64Home = ORDINARY): Float64Array {
  checkArrayLength(x, needed, what);
  if (x instanceof Float64Array && home.holds(x)) return x;
  const copy = home === ORDINARY ? newFloat64(needed, what) : home.make(needed);
  if (x instanceof Float64Array) {
    copy.set(x.subarray(0, needed));
    return copy;
  }
  for (let k = 0; k < needed; k++) {
    const v = x[k];
    if (typeof v !== 'number') throw new NotANumberError(`${what}: entry ${k} must be a number, got ${describe(v)}`);
    copy[k] = v;
  }
  return copy;
}

/** @internal toFloat64's checks of `x` as an array of at least `needed` entries, alone (a pool
 *  makes them before it allocates anything for a call). */
export function checkArrayLength(x: unknown, needed: number, what: string): asserts x is ArrayLike<number> {
  if (!isArrayLike(x)) throw new NotANumberError(`${what} need an array of at least ${counted(needed, 'number')}, got ${describe(x)}`);
  // Its buffer gone (transferred, or shrunk under it): a batch of no rows took a view of it, V8's
  // raw TypeError (a probe).
  if (x.length === 0 && unreadableView(x)) throw unreadableError(what);
  // A typed array whose length property is not what it holds: one given a length of its own was
  // read past its end, and the engines disagreed (a review: 30 on wasm, NaN on the JS engine).
  if (disagrees(x)) checkHeld(x as unknown as ArrayBufferView, x.length, what);
  if (x.length < needed) throw new TapegradError('INVALID_ARGUMENT', `${what} need at least ${counted(needed, 'number')}, got ${x.length}`);
}

// from[first, first + length) into row.
function copyRow(from: Float64Array, first: number, length: number, row: Float64Array): void {
  for (let k = 0; k < length; k++) row[k] = from[first + k]!;
}

// A batch's input rows (only the `length` the batch reads: X may be a longer reused buffer whose
// tail holds out), copied where an output may share their memory (the caller's out over X).
function apart(rows: Float64Array, length: number, ...outputs: (Float64Array | undefined | null)[]): Float64Array {
  const used = rows.subarray(0, length);
  return outputs.some((o) => mayOverlap(used, o)) ? used.slice() : rows;
}

// Whether nodes [0, size) are all leaves (inputs, constants, a vector's metadata).
function onlyLeaves(op: Uint8Array, size: number): boolean {
  for (let i = 0; i < size; i++) {
    const code = op[i]!;
    if (code > Op.arg && code !== Op.vmeta && code !== Op.vparam && code !== Op.vinput && code !== Op.vconst) return false;
  }
  return true;
}

// Errors whose message already names a batch's row (a batch run inside f: the inner call's).
const rowNamed = new WeakSet<object>();

// The error of a batch's row (a guard a loaded function cannot record again, checkNaN), saying
// which row (single-row calls share these paths and need not). A message that starts with the
// call's name already loses it ("gradientBatch, row 1: gradientBatch needs..." read twice).
function atRow(e: unknown, what: string, row: number): unknown {
  if (e instanceof TapegradError && what.endsWith('Batch') && !rowNamed.has(e)) {
    const own = e.message.startsWith(`${what} `) ? e.message.slice(what.length + 1) : e.message;
    e.message = `${what}, row ${row}: ${own}`;
    rowNamed.add(e);
  }
  return e;
}

/** @internal How a batch's directions or cotangents are named in its length errors, by the
 *  single-threaded calls and the pool alike ('jvpBatch: 10 rows of 1 direction entry'). */
export function rowsOfEntries(what: string, rows: number, width: number, name: string): string {
  return `${what}: ${rows} rows of ${width} ${name} entr${width === 1 ? 'y' : 'ies'}`;
}

/** @internal A batch's row count, named by the call that got it. */
export function checkRows(rows: number, what: string): number {
  if (typeof rows !== 'number') throw new NotANumberError(`${what}: rows must be a non-negative integer, got ${describe(rows)}`);
  if (!Number.isInteger(rows) || rows < 0) throw new TapegradError('INVALID_ARGUMENT', `${what}: rows must be a non-negative integer, got ${describe(rows)}`);
  return rows;
}

function badOutput(v: unknown): never {
  throw new NotANumberError(`compile: the function must return a Var, a number or an array of them, got ${notAnOutput(v)}`);
}


// The array named with its call ("gradient: the input"), the message made only on an error: a
// string a call would allocate (a compiled gradient with `out` allocates nothing).
function checkLength(x: ArrayLike<number>, expected: number, call: string, noun: string): void {
  if (!isArrayLike(x)) throw new NotANumberError(`${named(call, noun)} must be an array of numbers, got ${describe(x)}`);
  // (A typed array's length property must be what it holds, as in checkArrayLength; the message
  // made only then: made on every call, its text was 64-130 bytes a call and a batch row.)
  if (disagrees(x)) checkHeld(x as unknown as ArrayBufferView, x.length, named(call, noun));
  if (x.length !== expected) {
    // An empty view whose buffer is gone is named as such, as the tape's calls name it (a probe
    // read "has 0 entries" for an input transferred to a worker).
    if (x.length === 0 && unreadableView(x)) throw unreadableError(named(call, noun));
    throw new TapegradError('INVALID_ARGUMENT', `${named(call, noun)} has ${x.length} entries, expected ${expected}`);
  }
}

// A jvp's direction is its tangent, an hvp's the vector H multiplies.
const DIRECTION = '';
const named = (call: string, noun: string): string => `${call}: the ${noun === DIRECTION ? (call.startsWith('jvp') ? 'tangent' : 'direction') : noun}`;


/**
 * Records `f` once and returns a CompiledFunction that replays it at new inputs:
 * `const g = compile((x) => x[0]!.mul(x[1]!).sin(), { inputs: 2 }); g.gradient([1, 2], out)`.
 * Data-dependent control flow must go through comparisons (`x.gt(0).value`, a guard that
 * records again where it comes out the other way) or `select`; reading any other node's value
 * while recording (`x.value > 0`, `Number(x)`) is an `INVALID_ARGUMENT` error, but for one computed
 * from constants alone, the same at every input.
 */
export function compile<O extends CompiledOutput>(f: VectorCompilableFunction<O>, options: CompileOptions & { vector: true }): CompiledFunction<CompiledValue<O>>;
export function compile<O extends CompiledOutput>(f: CompilableFunction<O>, options: CompileOptions & { vector?: false | undefined }): CompiledFunction<CompiledValue<O>>;
export function compile<O extends CompileOptions>(f: CompilableFunction | VectorCompilableFunction, options: O & RuntimeVector<O, CompileOptions>): CompiledFunction;
export function compile(f: CompilableFunction | VectorCompilableFunction, options: CompileOptions): CompiledFunction {
  if (typeof f !== 'function') throw new TapegradError('INVALID_ARGUMENT', `compile needs a function as its first argument, got ${describe(f)}`);
  options = readOptions(options, 'compile', {
    inputs: 'number', backend: BACKEND_RULE, strict: 'boolean', at: 'array', simd: 'boolean', codegen: CODEGEN_RULE, vector: 'boolean',
    checkNaN: 'boolean', expectedNodes: 'number',
  });
  // Read through ?. as `inputs` is: compile(f) alone is refused by its check below (a probe got a TypeError).
  if (options?.expectedNodes !== undefined) checkExpectedNodes(options.expectedNodes, 'compile');
  const n = options?.inputs;
  // At most a tape's default maxNodes, which the bytes store too: 1e12 failed allocating a row (a RangeError).
  if (!Number.isInteger(n) || n < 1 || n > MAX_INPUTS) throw new TapegradError('INVALID_ARGUMENT', `compile needs { inputs: n } with 1 <= n <= ${MAX_INPUTS}, got ${describe(n)}`);
  const backend = resolveBackend(options.backend);
  // What no recording can change refuses 'require' now, not at every call (a probe).
  const never = backend === 'js' ? 'the JS backend interprets every tape' : options.vector === true ? 'a vector input makes vector nodes, whose rules are element loops already' : null;
  if (options.codegen === 'require' && never) throw new TapegradError('INVALID_ARGUMENT', `compile: generated sweeps are required ({ codegen: 'require' }), but ${never}`);
  const compiled = new CompiledFunction(
    f, n, options.backend === 'auto' ? 'auto' : backend, options.strict ?? false, null, options.simd ?? true, null, options.codegen ?? true, options.vector === true,
    options.checkNaN === true,
  );
  compiled.expectedNodes = options.expectedNodes ?? 0;
  if (options.at) {
    checkLength(options.at, n, 'compile', "'at' point");
    // Entries checked here, under compile's name (they were named by the recording's `variables:`).
    const at = toFloat64(options.at, n, "compile: the 'at' point");
    try {
      compiled.record(at);
    } catch (error) {
      // 'require' refused the recording at `at` while the generator loads: the function that
      // could wait for it (whenGenerated) is never returned (an async-lifecycle probe).
      if (!compiled.waitsForGenerator) throw error;
      throw new TapegradError('INVALID_ARGUMENT', `${(error as Error).message}; with 'at', compile returns no function to wait on: await init() first, which loads it, or compile without 'at' and await f.whenGenerated()`);
    }
  }
  return compiled;
}

// The first guard before node `before` whose comparison, in the tape's values, comes out other
// than recorded, or -1.
function flippedGuard(rec: Recording, before: number): number {
  const val = rec.tape.engine.views.val;
  for (let k = 0; k < rec.guards.length; k++) {
    const g = rec.guards[k]!;
    if (g < before && val[g] !== rec.expected[k]) return g;
  }
  return -1;
}
