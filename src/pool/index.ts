// tapegrad/pool: compiled functions evaluated on worker threads (Node; built on piscina). The core
// entry does not import this module, so it stays free of dependencies and of `node:` imports.
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { CompiledFunction, checkArrayLength, checkRows, rowsOfEntries, toFloat64 } from '../compile.ts';
import { coreModule, loadBackend } from '../create.ts';
import { CapacityError, FormatError, NotANumberError, TapegradError, checkApart, checkOut, describe, lockFields, madeShared, mayOverlap, newFloat64 } from '../errors.ts';
import { BACKEND_RULE, readOptions } from '../options.ts';
import { fromBytes, isUint8Array, loadBytes } from '../serialize.ts';
import { Op } from '../ops.ts';
import type { TapeLimits } from '../tape.ts';
import type { BackendChoice } from '../backend.ts';
import type { GeneratedSweeps, ShippedSweeps } from '../wasm/backend.ts';
import { reviveError, type BatchMethod, type Registration, type Reply, type Task, type WorkerData } from './protocol.ts';

/** Options of `createPool`. */
export interface PoolOptions {
  /** Worker threads (default: the machine's available parallelism). They start with the pool
   *  and stay until `close()`. */
  threads?: number | undefined;
  /** Engine in the workers (default 'wasm'), see BackendChoice. */
  backend?: BackendChoice | undefined;
  /** A batch is split into at most one part per thread, and never into parts of fewer rows than
   *  this (default 1024): below it, posting a task costs more than the rows. */
  minRowsPerTask?: number | undefined;
}

const POOL_OPTIONS = { threads: 'number', backend: BACKEND_RULE, minRowsPerTask: 'number' } as const;
const CUSTOM_OP = Op.custom;

/** A Float64Array over a SharedArrayBuffer: fill batch inputs into one and the workers read them
 *  where they are. */
export function sharedFloat64(length: number): Float64Array {
  if (typeof length !== 'number') throw new NotANumberError(`sharedFloat64 needs a non-negative integer length, got ${describe(length)}`);
  if (!Number.isInteger(length) || length < 0) throw new TapegradError('INVALID_ARGUMENT', `sharedFloat64 needs a non-negative integer length, got ${describe(length)}`);
  try {
    return new Float64Array(madeShared(new SharedArrayBuffer(length * 8)));
  } catch {
    throw new CapacityError(`sharedFloat64: the runtime could not allocate ${length} numbers`, length);
  }
}

const isShared = (x: unknown): x is Float64Array => x instanceof Float64Array && x.buffer instanceof SharedArrayBuffer;

/** A worker ended while it ran part of a call (a crash, or `terminate()`); the pool replaces it,
 *  and the next call works. */
export class WorkerExitError extends TapegradError {
  declare readonly code: 'WORKER_EXIT';
  constructor(message: string, options?: { cause?: unknown }) { super('WORKER_EXIT', message, options); this.name = 'WorkerExitError'; }
}

/**
 * Starts a pool of worker threads that share the main thread's compiled core:
 * `const pool = await createPool(); const g = await pool.register(compile(f, { inputs: 3, at }));
 * const G = await g.gradientBatch(X, rows); await pool.close()`.
 */
export async function createPool(options: PoolOptions = {}): Promise<GradientPool> {
  options = readOptions(options, 'createPool', POOL_OPTIONS);
  const threads = options.threads ?? availableParallelism();
  if (!Number.isInteger(threads) || threads < 1) throw new TapegradError('INVALID_ARGUMENT', `createPool: threads must be an integer >= 1, got ${describe(threads)}`);
  const minRows = options.minRowsPerTask ?? 1024;
  if (!Number.isInteger(minRows) || minRows < 1) throw new TapegradError('INVALID_ARGUMENT', `createPool: minRowsPerTask must be an integer >= 1, got ${describe(minRows)}`);
  // A bundle of a Node program holds this module but not the worker's script, which the threads
  // load by path: every register then failed as WorkerExitError, a crash it was not (a probe).
  const script = workerScript(), path = script.protocol === 'file:' ? fileURLToPath(script) : null;
  if (path !== null && !existsSync(path)) {
    throw new TapegradError(
      'INVALID_ARGUMENT',
      `createPool: the workers' script ${path} is missing; ${KEEP_EXTERNAL}, or ship tapegrad's dist/pool/ beside this module with the rest of its dist/ one folder up, as in the package`,
    );
  }
  // 'auto' as createTape takes it (an audit: the first pool threw, the second took js; a review:
  // later pools never tried the core again).
  const backend = await loadBackend(options.backend);
  const data: WorkerData = { backend, module: backend === 'wasm' ? await coreModule() : null };
  return new GradientPool(threads, backend, minRows, data);
}

// What a bundled program does so that the workers load tapegrad: the package whole, for the pool
// imported from outside a bundle that holds the core brings its own copy of the core, whose
// compiled functions are not the bundle's (register refused the bundle's as not one).
const KEEP_EXTERNAL = "a bundle must keep the package external (esbuild's --external:tapegrad, which keeps tapegrad/pool too)";

/** The workers' script, beside this module (the sources, run through tsx, whose loader the
 *  workers inherit, start the worker's source). */
function workerScript(): URL {
  const here: unknown = import.meta.url;
  // A CommonJS bundle (esbuild's default for --platform=node) leaves import.meta empty: nothing
  // says where the workers' script is (a packaging probe got a raw TypeError from `endsWith`).
  if (typeof here !== 'string') {
    throw new TapegradError('INVALID_ARGUMENT', `createPool: this module was bundled where import.meta.url is not defined (a CommonJS bundle), so the workers' script cannot be found; ${KEEP_EXTERNAL}, or bundle as an ES module (--format=esm)`);
  }
  // From dist, through a CommonJS entry that imports worker.js (see worker-entry.cjs). The base
  // from a local, not `new URL(..., import.meta.url)`: webpack reads that form as an asset
  // lookup into its bundle, which threw a raw "Cannot find module" (a packaging probe).
  return new URL(here.endsWith('.ts') ? './worker.ts' : './worker-entry.cjs', here);
}

/** Worker threads that run the batch calls of registered compiled functions; made by
 *  `createPool`, whose workers start at once and stay until `close()`. */
export class GradientPool {
  private readonly piscina: Piscina<Task, Reply>;
  private readonly registrations = new Map<number, Registration>();
  private nextId = 1;
  private closed = false;
  private destroying = false;
  private readonly inFlight = new Set<Promise<unknown>>();
  // Shared scratch no call holds now. A worker keeps every SharedArrayBuffer it has been sent
  // until it collects garbage, which a worker allocating next to nothing rarely does: a new buffer
  // for each call's output grew memory by the output's size per call (9.6 MB a call of 400,000
  // rows, to 3 GB; a new-user probe). Calls copy through these instead, sized in powers of two,
  // so the workers see few buffers.
  private readonly spare: SharedArrayBuffer[] = [];
  /** @internal The most scratch a call leases, and the largest buffer kept for the next (tests
   *  lower it); a call that would copy more runs in pieces (PooledFunction.inPieces). */
  scratchLimit = 1 << 26;

  /** @internal */
  constructor(
    /** Worker threads (`createPool`'s `threads`, default the machine's available parallelism). */
    readonly threads: number,
    /** The engine in the workers, 'auto' resolved: every registered function runs on it. */
    readonly backend: 'wasm' | 'js',
    /** Fewest rows a part of a batch gets (`createPool`'s `minRowsPerTask`, default 1024); a
     *  smaller batch runs on the calling thread. */
    readonly minRowsPerTask: number,
    workerData: WorkerData,
  ) {
    // Private in the declarations; from JavaScript `new GradientPool()` started a pool of no
    // threads that took calls (a probe).
    if (!Number.isInteger(threads) || threads < 1 || workerData === null || typeof workerData !== 'object') {
      throw new TapegradError('INVALID_ARGUMENT', 'a GradientPool comes from createPool(options)');
    }
    // Read-only from JavaScript too, as a compiled function's fields (a probe's pool.threads = 0
    // registered functions on no thread).
    lockFields(this, ['threads', 'backend', 'minRowsPerTask']);
    this.piscina = new Piscina<Task, Reply>({
      filename: workerScript().href,
      minThreads: threads, maxThreads: threads, idleTimeout: Infinity, workerData,
      // A task is one part of a batch: at most one part per thread is in flight per call.
      concurrentTasksPerWorker: 1,
    });
    // A worker that fails to start or dies also fails the task it held (WorkerExitError); piscina
    // emits the error too, and an 'error' event nobody listens to ended the whole process.
    this.piscina.on('error', () => {});
    this.piscina.on('workerDestroy', () => setImmediate(() => this.failStranded()));
  }

  // Tasks wait in piscina's queue for a worker. After a worker fails while it starts, piscina
  // starts no replacement (so as not to start failing workers over and over) until a new task
  // comes: with every worker gone, the queued calls and close() waited for ever (a probe ended
  // each replacement as it started). They fail instead, with WorkerExitError; the next call
  // starts new workers.
  private failStranded(): void {
    // Until close() destroys the workers: the calls it waits for fail here too (a probe's
    // workers, killed after close() began, left them and close() waiting for ever).
    if (this.destroying || this.piscina.threads.length > 0 || this.piscina.queueSize === 0) return;
    const queued = this.queued;
    this.queued = unlimited(new AbortController());
    queued.abort(new WorkerExitError(`every worker of the pool ended, the last while starting, and none replaced them: the calls waiting for a worker fail${this.closed ? '' : '; the next call starts new workers'}`));
  }

  // The signal of every task: aborted (failStranded) only when no worker is left to run one.
  private queued = unlimited(new AbortController());

  /** @internal A task on a worker. */
  runTask(task: Task): Promise<Reply> {
    return this.piscina.run(task, { signal: this.queued.signal });
  }

  /** The worker threads (piscina's), e.g. to watch their resource use. */
  get workers(): readonly import('node:worker_threads').Worker[] {
    return this.piscina.threads;
  }

  /**
   * Registers a compiled function (recorded already: called once, or compiled with `at`) or its
   * `toBytes()`. The main thread loads the bytes once (checking them: `FormatError`) and, on the
   * wasm backend, generates its sweeps; every worker receives the bytes and the compiled sweeps,
   * so no worker records or generates code. Settles when every live worker holds the function.
   * `checkNaN` (default: the compiled function's own, false for bytes) checks every row as
   * `compile(f, { checkNaN: true })` does, in every thread. `maxNodes` and `maxMemoryBytes` limit
   * the tape loaded in every thread, as `fromBytes`'s do: bytes from elsewhere may describe a
   * tape far larger than themselves.
   */
  register(
    f: CompiledFunction | Uint8Array,
    options: { checkNaN?: boolean | undefined; maxNodes?: number | undefined; maxMemoryBytes?: number | undefined } = {},
  ): Promise<PooledFunction> {
    // In flight from its start, as a batch call: close() waits for it (it ended the workers under
    // the loads, and register failed with WORKER_EXIT; later, bytes still generating their
    // sweeps when close() began failed as "closed": two new-user probes).
    return this.closed ? Promise.reject(closedError('register')) : this.track(this.load(f, options));
  }

  /** @internal `work` in flight: close() waits for it to settle. */
  track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const untrack = (): void => void this.inFlight.delete(work);
    work.then(untrack, untrack);
    return work;
  }

  private async load(
    f: CompiledFunction | Uint8Array,
    options: { checkNaN?: boolean | undefined; maxNodes?: number | undefined; maxMemoryBytes?: number | undefined },
  ): Promise<PooledFunction> {
    options = readOptions(options, 'register', { checkNaN: 'boolean', maxNodes: 'number', maxMemoryBytes: 'number' });
    const checkNaN = options.checkNaN ?? (f instanceof CompiledFunction && f.checkNaN);
    // Bytes untrusted: a probe's 24 KB of bytes took 500 MB across the threads, with no limit to give.
    const limits: TapeLimits = {
      ...(options.maxNodes === undefined ? {} : { maxNodes: options.maxNodes }),
      ...(options.maxMemoryBytes === undefined ? {} : { maxMemoryBytes: options.maxMemoryBytes }),
    };
    let bytes: Uint8Array;
    if (f instanceof CompiledFunction) {
      // toBytes's own message names toBytes, which the caller never called.
      if (!f.recorded) throw new TapegradError('INVALID_ARGUMENT', 'register: the compiled function has not recorded yet; call it once (or compile it with { at }) before registering it');
      // (toBytes's own message named toBytes and said nothing of the pool: a probe.)
      if (f.recorded.tape.engine.views.op.subarray(0, f.recorded.tape.size).includes(CUSTOM_OP)) {
        throw new TapegradError('INVALID_ARGUMENT', 'register: a function with custom functions (defineFunction) cannot go to the workers: their rules are JS code, which bytes do not carry; run it on this thread');
      }
      bytes = f.toBytes();
    } else if (isUint8Array(f)) {
      // A copy: the workers that replace one that died load these bytes later, and a caller who
      // reused its buffer had them load another function (a probe).
      bytes = new Uint8Array(f);
    }
    else if (typeof (f as { toBytes?: unknown } | null)?.toBytes === 'function' && typeof (f as { gradientBatch?: unknown }).gradientBatch === 'function') {
      // One of another copy of tapegrad: a bundle that holds the core, with the pool external.
      throw new TapegradError('INVALID_ARGUMENT', `register: the compiled function comes from another copy of tapegrad than this pool's (a bundle that holds tapegrad while tapegrad/pool stays external?); ${KEEP_EXTERNAL}, or register its bytes (f.toBytes())`);
    } else throw new TapegradError('INVALID_ARGUMENT', `register needs a compiled function or its bytes (a Uint8Array), got ${describe(f)}`);
    // The main thread keeps a copy loaded from the same bytes, as the workers load it (small
    // batches run on it, and like theirs it cannot record again). A function with active
    // generated sweeps lends them to the workers and to that copy, made at its first small
    // batch; otherwise the copy is made now, checking the bytes and generating sweeps where its
    // tape allows them.
    let local: CompiledFunction | (() => CompiledFunction);
    let sweeps: ShippedSweeps | null;
    // (With checkNaN, which f may not have, the copies replay by a schedule: made now, they say so.)
    if (f instanceof CompiledFunction && f.recorded?.tape.backend === this.backend && this.backend === 'wasm' && f.generatedSweeps === 'active' && !checkNaN) {
      const shipped = sweeps = f.shipSweeps();
      local = () => loadBytes(bytes, 'wasm', shipped, true, limits, checkNaN);
    } else {
      try {
        local = fromBytes(bytes, { backend: this.backend, checkNaN, ...limits });
      } catch (error) {
        throw asRegister(error);
      }
      local.generateDeferredNow();
      await local.whenGenerated();
      sweeps = this.backend === 'wasm' ? local.shipSweeps() : null;
    }
    const registration: Registration = { id: this.nextId++, bytes, sweeps, checkNaN, limits };
    const about = typeof local === 'function' ? { inputs: (f as CompiledFunction).inputs, outputs: (f as CompiledFunction).outputs, generatedSweeps: 'active' as const } : local;
    this.registrations.set(registration.id, registration);
    // One task per thread: each idle thread takes one. A thread that takes none (it was busy, or
    // started later) is sent the function with its first task instead.
    const replies = await this.everyThread({ kind: 'register', registration, failed: this.failed });
    const loads: WorkerLoad[] = [];
    try {
      for (const reply of replies) {
        if (reply.status === 'rejected') throw new WorkerExitError(`register: a worker ended while loading the function: ${String(reply.reason)}`, { cause: reply.reason });
        const r = reply.value;
        if ('error' in r) throw reviveError(r.error);
        if ('ok' in r) loads.push({ ms: r.ms, generatedSweeps: r.generatedSweeps ?? 'none' });
      }
    } catch (error) {
      // A registration that failed is never called: kept, it was a leak (a review probe), and so
      // were the tapes of the workers that had loaded it (a new-user probe).
      this.registrations.delete(registration.id);
      this.failed.push(registration.id);
      throw asRegister(error);
    }
    return new PooledFunction(this, registration.id, local, about, loads);
  }

  // Registrations that failed: every task names them, and the worker that takes it drops any it
  // holds (tasks of their own for that went to whichever threads were idle, and a busy worker
  // kept the tape: a review probe). Ids are never reused, so the list only grows by failures.
  private readonly failed: number[] = [];

  // One task per thread, settled (each idle thread takes one).
  private everyThread(task: Task): Promise<PromiseSettledResult<Reply>[]> {
    return Promise.allSettled(Array.from({ length: this.threads }, () => this.runTask(task)));
  }

  /** Stops the workers once the calls in flight are done. Later calls throw. */
  close(): Promise<void> {
    // Every call of close() settles when the workers have stopped (a second one resolved at once
    // while calls were still running, a new-user probe).
    this.closing ??= this.stop();
    return this.closing;
  }

  private closing: Promise<void> | null = null;

  private async stop(): Promise<void> {
    this.closed = true;
    this.spare.length = 0;
    // piscina's close would end a worker whose task is still running: let the calls (and the
    // registrations loading) finish first.
    await Promise.allSettled(this.inFlight);
    this.destroying = true;
    // destroy, not close: with nothing left to run they do the same, but close leaves a 30 s
    // timer holding the whole pool (a probe: 60 closed pools held 7 MB until their timers ran).
    await this.piscina.destroy();
  }

  /** @internal Shared scratch of at least `bytes` for one call, until `release`. At most two
   *  buffers per thread exist, leased or spare: a call that finds none waits for one (the
   *  workers run `threads` parts at a time, so the queue is piscina's or this). Leasing a new
   *  buffer for each call beyond them, and dropping it after, grew memory by the calls' scratch
   *  with every burst of calls at once, since the workers keep each buffer they were sent until
   *  they collect garbage (16 calls of 10^6 rows at once: +550 MB of RSS a burst, to 8.4 GB; a
   *  probe). */
  async lease(bytes: number, method: string): Promise<SharedArrayBuffer> {
    for (;;) {
      let best = -1;
      for (let k = 0; k < this.spare.length; k++) {
        const size = this.spare[k]!.byteLength;
        if (size >= bytes && (best < 0 || size < this.spare[best]!.byteLength)) best = k;
      }
      if (best >= 0) {
        this.leased++;
        return this.spare.splice(best, 1)[0]!;
      }
      if (this.leased + this.spare.length < 2 * this.threads || this.spare.length > 0) {
        // None large enough: a new one, in place of the smallest spare where they are all made
        // (sizes only grow, by powers of two, so the buffers dropped so are few).
        const size = 2 ** Math.max(16, Math.ceil(Math.log2(bytes)));
        let buffer: SharedArrayBuffer;
        try {
          buffer = new SharedArrayBuffer(size);
        } catch {
          // The wake-up this call took passes on, or the calls behind it (and close()) waited for
          // ever once no lease was left to release (a review). (A raw RangeError before: a probe.)
          this.waiting.shift()?.();
          throw new CapacityError(`${method}: the pool's scratch for this call (${size} bytes of shared memory) is more than the runtime allocates`, size);
        }
        if (this.leased + this.spare.length >= 2 * this.threads) {
          this.spare.sort((p, q) => q.byteLength - p.byteLength);
          this.spare.length--;
        }
        this.leased++;
        this.scratchMade++;
        return buffer;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** @internal Scratch back for the next call (none over scratchLimit is kept: one large call
   *  pinned its scratch for the pool's life, a probe), and the call waiting longest woken. */
  release(buffer: SharedArrayBuffer): void {
    this.leased--;
    if (!this.closed && buffer.byteLength <= this.scratchLimit) this.spare.push(buffer);
    this.waiting.shift()?.();
  }

  // Counted against the two buffers a thread (see lease): those calls hold, and the wake-ups of
  // the calls waiting for one.
  private leased = 0;
  /** @internal Scratch buffers made over the pool's life (for tests). */
  scratchMade = 0;
  private readonly waiting: (() => void)[] = [];

  /** @internal Scratch no call holds now: buffers and bytes (for tests). */
  get spareScratch(): { buffers: number; bytes: number } {
    return { buffers: this.spare.length, bytes: this.spare.reduce((sum, b) => sum + b.byteLength, 0) };
  }

  /** @internal */
  checkOpen(where: string): void {
    if (this.closed) throw closedError(where);
  }

  /** @internal Runs `method` over `rows` rows split across the threads, in shared memory. */
  async runBatch(
    id: number, method: BatchMethod, rows: number, X: Float64Array, D: Float64Array | null, out: Float64Array, values: Float64Array | null, firstRow = 0,
  ): Promise<void> {
    const parts = Math.max(1, Math.min(this.threads, Math.floor(rows / this.minRowsPerTask)));
    const tasks: Promise<void>[] = [];
    for (let k = 0; k < parts; k++) {
      const from = Math.floor((rows * k) / parts), to = Math.floor((rows * (k + 1)) / parts);
      tasks.push(this.runPart({ kind: 'run', id, registration: null, method, from, to, firstRow, X, D, out, values, failed: this.failed }));
    }
    const settled = await Promise.allSettled(tasks);
    // Every part has stopped writing before the call settles; the error is the first row's, as
    // one thread going through the rows in order would have met it.
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  private async runPart(task: Task & { kind: 'run' }): Promise<void> {
    let reply: Reply;
    try {
      reply = await this.runTask(task);
      if ('missing' in reply) reply = await this.runTask({ ...task, registration: this.registrations.get(task.id)! });
    } catch (error) {
      const stranded = (error as { cause?: unknown })?.cause;
      const rows = `rows ${task.firstRow + task.from}..${task.firstRow + task.to - 1} of ${task.method}`;
      if (stranded instanceof WorkerExitError) throw new WorkerExitError(`${rows} waited for a worker: ${stranded.message}`, { cause: error });
      throw new WorkerExitError(`a worker ended while it computed ${rows} (${String((error as Error)?.message ?? error)})${this.closed ? '' : '; it is replaced, later calls work'}`, { cause: error });
    }
    if ('error' in reply) throw reviveError(reply.error);
    if ('missing' in reply) throw new WorkerExitError('a worker lost the function while loading it');
  }
}

/** How one worker loaded a registered function. */
export interface WorkerLoad {
  /** Milliseconds to load the bytes and install the sweeps (the worker's own clock). */
  ms: number;
  /** 'active' when the main thread's generated sweeps were installed; 'scheduled' for a tape too
   *  large to fold into code, which each worker schedules for itself; 'none' on the JS backend or
   *  for a tape that is interpreted (vector nodes; `register` refuses custom ones). */
  generatedSweeps: GeneratedSweeps;
}

/** A compiled function registered with a pool: the batch calls of `CompiledFunction`, split
 *  across the workers, returning promises. Results are bit-identical to the single-threaded
 *  calls, rows in the caller's order; each output is a new plain Float64Array (pass `out` to
 *  fill one of your own). A batch of fewer than `minRowsPerTask` rows runs on the calling thread, on the same tape and
 *  sweeps: posting it to a worker would cost more than its rows. */
export class PooledFunction {
  /** Number of inputs of the registered function: the length of each row of X. */
  readonly inputs: number;
  /** Number of outputs of the registered function. */
  readonly outputs: number;
  /** Whether the main thread generated sweeps for it (then shipped to every worker). */
  readonly generatedSweeps: GeneratedSweeps;

  /** @internal */
  constructor(
    private readonly pool: GradientPool, private readonly id: number,
    /** The main thread's copy, or how to make it: small batches run on it. */
    private copy: CompiledFunction | (() => CompiledFunction),
    about: Pick<CompiledFunction, 'inputs' | 'outputs' | 'generatedSweeps'>,
    /** One entry per register task: the workers that took it while `register` ran. */
    readonly workerLoads: readonly WorkerLoad[],
  ) {
    if (!(pool instanceof GradientPool)) throw new TapegradError('INVALID_ARGUMENT', 'a PooledFunction comes from pool.register(f)');
    this.inputs = about.inputs;
    this.outputs = about.outputs;
    this.generatedSweeps = about.generatedSweeps;
    // (A probe's g.inputs = 4 on a function of 3 gave a batch of 4-number rows, silently.)
    lockFields(this, ['inputs', 'outputs', 'generatedSweeps', 'workerLoads']);
  }

  private get local(): CompiledFunction {
    if (typeof this.copy === 'function') this.copy = this.copy();
    return this.copy;
  }

  private inline(rows: number, where: string): boolean {
    this.pool.checkOpen(where);
    return rows < this.pool.minRowsPerTask;
  }


  /** Gradients of rows × inputs rows of X (row-major); rows × inputs out. */
  async gradientBatch(X: ArrayLike<number>, rows: number, out?: Float64Array): Promise<Float64Array> {
    if (this.inline(rows, 'gradientBatch')) return this.local.gradientBatch(X, rows, out);
    return (await this.run('gradientBatch', rows, X, null, 0, '', out, this.inputs, 'none', 0))[0];
  }

  /** [values (rows), gradients (rows × inputs)]. */
  async valueAndGradientBatch(X: ArrayLike<number>, rows: number, out?: Float64Array, values?: Float64Array): Promise<[Float64Array, Float64Array]> {
    if (this.inline(rows, 'valueAndGradientBatch')) return this.local.valueAndGradientBatch(X, rows, out, values);
    const [G, v] = await this.run('valueAndGradientBatch', rows, X, null, 0, '', out, this.inputs, values === undefined ? 'new' : values, 1);
    return [v!, G];
  }

  /** vᵀJ per row: V is rows × outputs; rows × inputs out, and the values (rows × outputs) into
   *  `values` when given. */
  vjpBatch(X: ArrayLike<number>, rows: number, V: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Promise<Float64Array> {
    return this.directional('vjpBatch', X, rows, V, this.outputs, 'cotangent', this.inputs, out, values, this.outputs);
  }

  /** J·t per row: T is rows × inputs; rows × outputs out, and the values (rows × outputs) into
   *  `values` when given. */
  jvpBatch(X: ArrayLike<number>, rows: number, T: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Promise<Float64Array> {
    return this.directional('jvpBatch', X, rows, T, this.inputs, 'direction', this.outputs, out, values, this.outputs);
  }

  /** H·v per row: V is rows × inputs; rows × inputs out, and the values (rows) into `values`
   *  when given. */
  hvpBatch(X: ArrayLike<number>, rows: number, V: ArrayLike<number>, out?: Float64Array, values?: Float64Array): Promise<Float64Array> {
    return this.directional('hvpBatch', X, rows, V, this.inputs, 'direction', this.inputs, out, values, 1);
  }

  private async directional(
    method: 'vjpBatch' | 'jvpBatch' | 'hvpBatch', X: ArrayLike<number>, rows: number, D: ArrayLike<number>, dWidth: number, dName: string, width: number,
    out: Float64Array | undefined, values: Float64Array | undefined, valueWidth: number,
  ): Promise<Float64Array> {
    if (this.inline(rows, method)) return this.local[method](X, rows, D, out, values);
    // null is a direction the caller gave (run takes null for "none"): refused as on one thread.
    if (D === null) {
      checkRows(rows, method);
      checkArrayLength(D as unknown as ArrayLike<number>, rows * dWidth, rowsOfEntries(method, rows, dWidth, dName));
    }
    return (await this.run(method, rows, X, D, dWidth, dName, out, width, values === undefined ? 'none' : values, valueWidth))[0];
  }

  // `method` over the rows in the workers: X (rows × inputs) and D (rows × dWidth) in, results
  // (rows × width) into `out` and the values (rows × valueWidth) into `values` (or a new array
  // for 'new', none for 'none'). The caller's arrays in shared memory go to the workers as they
  // are; any other is checked and copied through the pool's scratch (see GradientPool.spare), and
  // so is every output the caller did not give in shared memory, which then comes back in a new
  // plain array. In flight as a whole: close() lets every piece of a large call run (it failed
  // the pieces after the one running: a new-user probe).
  private run(...args: Parameters<PooledFunction['compute']>): ReturnType<PooledFunction['compute']> {
    return this.pool.track(this.compute(...args));
  }

  private async compute(
    method: BatchMethod, rows: number, X: ArrayLike<number>, D: ArrayLike<number> | null, dWidth: number, dName: string,
    out: Float64Array | undefined, width: number, values: Float64Array | 'new' | 'none', valueWidth: number,
  ): Promise<[Float64Array, Float64Array | null]> {
    checkRows(rows, method);
    const n = rows * this.inputs, dn = rows * dWidth, on = rows * width, vn = rows * valueWidth;
    // Lengths before the scratch is leased: a huge `rows` is X's length error, not an allocation's.
    const xWhat = `${method}: ${rows} rows of ${this.inputs} inputs`, dWhat = rowsOfEntries(method, rows, dWidth, dName);
    checkArrayLength(X, n, xWhat);
    if (D !== null) checkArrayLength(D, dn, dWhat);
    if (out !== undefined) checkOut(out, on, `${method}: out`);
    if (values !== 'none' && values !== 'new') {
      checkOut(values, vn, `${method}: values`);
      if (out !== undefined) checkApart(out, on, values, vn, method);
    }
    // Scratch for what is not in shared memory: X, D, the output and the values, in that order.
    const copied = (x: unknown): boolean => !isShared(x);
    // An output over the rows (the caller's out sharing X's memory) is written through the scratch
    // too: the workers read their rows while others write theirs.
    const inPlace = (o: unknown): boolean => isShared(o) && !mayOverlap(o, head(X, n)) && !mayOverlap(o, head(D, dn));
    const perRow = [copied(X) ? this.inputs : 0, D !== null && copied(D) ? dWidth : 0, inPlace(out) ? 0 : width, values === 'none' || inPlace(values) ? 0 : valueWidth];
    const rowBytes = 8 * perRow.reduce((sum, k) => sum + k, 0);
    const limit = this.pool.scratchLimit;
    if (rowBytes * rows > limit) {
      // In pieces, each piece's results are written before the next piece reads its rows: an
      // input an output shares memory with is read from a snapshot of its own, through the
      // scratch, as one thread reads it apart (a review probe: a jvp with `out` over X).
      const outputs = [out, values === 'none' || values === 'new' ? undefined : values];
      const snapshot = (input: ArrayLike<number> | null, length: number): ArrayLike<number> | null =>
        input !== null && outputs.some((o) => o !== undefined && mayOverlap(head(input, length), o)) ? (input as Float64Array).slice(0, length) : input;
      const xs = snapshot(X, n)!, ds = snapshot(D, dn);
      const pieceRow = [xs !== X ? this.inputs : perRow[0]!, ds !== D ? dWidth : perRow[1]!, perRow[2]!, perRow[3]!];
      const pieceBytes = 8 * pieceRow.reduce((sum, k) => sum + k, 0);
      return this.inPieces(method, rows, xs, ds, dWidth, out, width, values, valueWidth, pieceRow, Math.max(1, Math.floor(limit / pieceBytes)), xWhat, dWhat);
    }
    const sizes = perRow.map((k) => k * rows);
    const total = sizes.reduce((sum, k) => sum + k, 0);
    const scratch = total > 0 ? await this.pool.lease(8 * total, method) : null;
    try {
      let at = 0;
      const part = (k: number): Float64Array => {
        const view = new Float64Array(scratch!, 8 * at, sizes[k]);
        at += sizes[k]!;
        return view;
      };
      // Checked as the single-threaded calls check them, with their messages.
      const xs = toFloat64(X, n, xWhat, { holds: isShared, make: () => part(0) });
      const ds = D === null ? null : toFloat64(D, dn, dWhat, { holds: isShared, make: () => part(1) });
      const o = out !== undefined && inPlace(out) ? out : part(2);
      const v = values === 'none' ? null : values !== 'new' && inPlace(values) ? values : part(3);
      if (rows > 0) await this.pool.runBatch(this.id, method, rows, xs, ds, o, v);
      const result = o === out ? out : copyInto(out, o);
      const valuesOut = v === null || v === values ? v : copyInto(values === 'new' || values === 'none' ? undefined : values, v);
      return [result, valuesOut];
    } finally {
      if (scratch) this.pool.release(scratch);
    }
  }

  // `run` for a call whose copies would take more than the pool's scratchLimit: its rows go
  // through one lease of at most that, `pieceRows` at a time. A new buffer per call that size was
  // never reused, and the workers kept each one they were sent until they collected garbage,
  // which they seldom do: 1.5 M rows grew RSS by 72 MB a call, to 4.2 GB (a probe). Entries are
  // checked as toFloat64 checks them, named by the caller's index.
  private async inPieces(
    method: BatchMethod, rows: number, X: ArrayLike<number>, D: ArrayLike<number> | null, dWidth: number,
    out: Float64Array | undefined, width: number, values: Float64Array | 'new' | 'none', valueWidth: number,
    perRow: readonly number[], pieceRows: number, xWhat: string, dWhat: string,
  ): Promise<[Float64Array, Float64Array | null]> {
    const [xRow, dRow, outRow, valuesRow] = perRow as [number, number, number, number];
    // Every entry checked before any piece runs, as one thread checks them before any row: a bad
    // entry in a later piece was reported after the earlier pieces had run (another error of
    // theirs first, or their results written: a new-user probe).
    if (xRow) checkNumbers(X, rows * this.inputs, xWhat);
    if (D !== null && dRow) checkNumbers(D, rows * dWidth, dWhat);

    // The outputs are made once the first piece's entries are checked: a bad X is its own error,
    // before gigabytes are asked for.
    let result = out ?? null, valuesOut = values === 'none' || values === 'new' ? null : values;
    const scratch = await this.pool.lease(8 * pieceRows * (xRow + dRow + outRow + valuesRow), method);
    try {
      for (let first = 0; first < rows; first += pieceRows) {
        const k = Math.min(pieceRows, rows - first);
        let at = 0;
        const part = (length: number): Float64Array => {
          const view = new Float64Array(scratch, 8 * at, length);
          at += length;
          return view;
        };
        const xs = xRow ? copyRows(X, first * xRow, k * xRow, part(k * xRow), xWhat) : (X as Float64Array).subarray(first * this.inputs, (first + k) * this.inputs);
        const ds = D === null ? null : dRow ? copyRows(D, first * dRow, k * dRow, part(k * dRow), dWhat) : (D as Float64Array).subarray(first * dWidth, (first + k) * dWidth);
        result ??= newFloat64(rows * width, `${method}: out`);
        if (values === 'new') valuesOut ??= newFloat64(rows * valueWidth, `${method}: values`);
        const o = outRow ? part(k * width) : result.subarray(first * width, (first + k) * width);
        const v = valuesOut === null ? null : valuesRow ? part(k * valueWidth) : valuesOut.subarray(first * valueWidth, (first + k) * valueWidth);
        await this.pool.runBatch(this.id, method, k, xs, ds, o, v, first);
        if (outRow) result.set(o, first * width);
        if (valuesRow && v && valuesOut) valuesOut.set(v, first * valueWidth);
      }
      // (A call in pieces has rows: the outputs were made by the first.)
      return [result!, valuesOut];
    } finally {
      this.pool.release(scratch);
    }
  }
}

// Every task listens on the signal while it waits or runs: past 10 at once Node warns of a
// listener leak (they are removed as tasks finish).
function unlimited(controller: AbortController): AbortController {
  setMaxListeners(0, controller.signal);
  return controller;
}

// Named by the call, as every other error (a README probe read a bare "this pool is closed").
function closedError(where: string): TapegradError {
  return new TapegradError('INVALID_ARGUMENT', `${where}: this pool is closed`);
}

// Each of x's first `length` entries a number (toFloat64's check and message): a call in pieces
// checks them all before its first piece.
function checkNumbers(x: ArrayLike<number>, length: number, what: string): void {
  if (x instanceof Float64Array) return;
  for (let k = 0; k < length; k++) {
    if (typeof x[k] !== 'number') throw new NotANumberError(`${what}: entry ${k} must be a number, got ${describe(x[k])}`);
  }
}

// Entries [from, from + length) of x into `into`, each a number (toFloat64's check and message,
// with the caller's index: the caller may change x while the pieces run).
function copyRows(x: ArrayLike<number>, from: number, length: number, into: Float64Array, what: string): Float64Array {
  if (x instanceof Float64Array) {
    into.set(x.subarray(from, from + length));
    return into;
  }
  for (let k = 0; k < length; k++) {
    const v = x[from + k];
    if (typeof v !== 'number') throw new NotANumberError(`${what}: entry ${from + k} must be a number, got ${describe(v)}`);
    into[k] = v;
  }
  return into;
}

// A limit's error of loading the bytes, as register's: the caller passed the limit to register,
// and the message said "pass fromBytes a larger maxNodes" (a review probe).
function asRegister(error: unknown): unknown {
  // A limit out of range (maxNodes: 0) too, which fromBytes names now (it named no call: a probe).
  // The bytes' format errors too (they named no call, then fromBytes: a probe).
  const aboutTheBytes = error instanceof CapacityError || error instanceof FormatError ||
    (error instanceof TapegradError && error.code === 'INVALID_ARGUMENT' && /^fromBytes: max(Nodes|MemoryBytes) /.test(error.message));
  if (aboutTheBytes && error.message.startsWith('fromBytes: ')) error.message = `register: ${error.message.slice(11).replaceAll('pass fromBytes', 'pass register')}`;
  return error;
}

// The first n entries of a typed array (the rows a call reads of a longer buffer), or x itself.
function head(x: unknown, n: number): unknown {
  return ArrayBuffer.isView(x) && 'subarray' in x ? (x as Float64Array).subarray(0, n) : x;
}

// A call's output from the pool's scratch: into the caller's array, or a new plain one. A new
// shared one per call (no worker saw it) was freed only lazily on the main thread under Node 20:
// 400,000-row batches without `out` grew RSS past 1.7 GB and rising (a probe); plain arrays are
// collected as any. Pass `out` in shared memory to get results there.
function copyInto(target: Float64Array | undefined, from: Float64Array): Float64Array {
  const into = target ?? new Float64Array(from.length);
  into.set(from);
  return into;
}
