// The gradient service: node:http, JSON in and out, every model compiled once at start-up and
// evaluated on the main thread (workers: 0) or on a tapegrad/pool of worker threads.
//
//   POST /v1/options    { "options": [{ spot, strike, maturity, rate, volatility }, ...] } (≤ 10,000)
//                       → price and every Greek of each European call (gamma by hvp)
//   POST /v1/mc         { spot, strike, maturity, rate, volatility, paths (≤ 10^6), seed? }
//                       → Monte Carlo price and pathwise sensitivities, with standard errors
//   POST /v1/logreg     { "weights": [8 numbers, then the bias] } → loss and gradient over the
//                       service's dataset
//   GET  /healthz       → { ok, workers, backend, memory } (HEAD too, without the body)
//
// Bad requests get a 400 whose message is the library's own error (a string where a number
// belongs, a wrong length) or names the field; bodies over 4 MiB get a 413; a method an endpoint
// does not take a 405 with Allow.
import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TapegradError, init, type CompiledFunction } from 'tapegrad';
import { createPool, sharedFloat64, type GradientPool, type PooledFunction } from 'tapegrad/pool';
import { FEATURES, OPTION_FIELDS, PATH_INPUTS, compileModels, normals } from './models.ts';

// 10,000 options of full-precision doubles take about 1.45 MB of JSON.
export const MAX_BODY_BYTES = 4 << 20;
export const MAX_OPTIONS = 10_000;
export const MAX_PATHS = 1_000_000;

export interface ServiceOptions {
  /** Worker threads; 0 evaluates on the main thread. */
  workers: number;
  backend: 'wasm' | 'js';
  port?: number;
  host?: string;
  /** How long close() waits for the clients before it stops waiting for them (default 5000 ms). */
  shutdownGraceMs?: number;
}

export interface Service {
  url: string;
  /** Stops accepting connections, answers the requests in flight, then stops the workers. Past
   *  the grace, a body still arriving gets a 503 and a response its client has not taken is cut
   *  off; a computation under way is never cut off, and gets a grace of its own to be answered. */
  close(): Promise<void>;
}

/** The batch calls both a CompiledFunction and a PooledFunction offer, as promises. */
interface Batches {
  valueAndGradientBatch(X: ArrayLike<number>, rows: number, out?: Float64Array, values?: Float64Array): Promise<[Float64Array, Float64Array]>;
  hvpBatch(X: ArrayLike<number>, rows: number, V: ArrayLike<number>): Promise<Float64Array>;
}

function local(f: CompiledFunction): Batches {
  return {
    valueAndGradientBatch: async (X, rows, out, values) => f.valueAndGradientBatch(X, rows, out, values),
    hvpBatch: async (X, rows, V) => f.hvpBatch(X, rows, V),
  };
}

/** A client's mistake: answered with its status and message, never a crash. */
class RequestError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

/** The client hung up before its body arrived: nobody to answer, and no fault of the service. */
class ClientHungUp extends Error {}

const shuttingDown = (): RequestError => new RequestError(503, 'the service is shutting down and the body did not arrive in time');

/** The body, unless it grows past the limit or is still arriving when `stopReading` aborts. */
function readBody(req: IncomingMessage, stopReading: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (declared > MAX_BODY_BYTES) {
      reject(new RequestError(413, `the body is ${declared} bytes; the limit is ${MAX_BODY_BYTES}`));
      return;
    }
    if (stopReading.aborted) {
      reject(shuttingDown());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onStop = (): void => refuse(shuttingDown());
    // Read no more, and let the handler answer (and close the connection after it): destroying
    // the request here reset the connection before any answer.
    const refuse = (error: Error): void => {
      req.removeAllListeners('data');
      req.pause();
      stopReading.removeEventListener('abort', onStop);
      reject(error);
    };
    stopReading.addEventListener('abort', onStop);
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // A chunked body declares no size.
      if (size > MAX_BODY_BYTES) refuse(new RequestError(413, `the body is over ${MAX_BODY_BYTES} bytes`));
      else chunks.push(chunk);
    });
    req.on('end', () => {
      stopReading.removeEventListener('abort', onStop);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', () => refuse(new ClientHungUp()));
  });
}

/** Resolves once every promise in `pending` has settled, those added while it waits included. */
async function settled(pending: Set<Promise<unknown>>): Promise<void> {
  while (pending.size > 0) await Promise.allSettled(pending);
}

function remember(pending: Set<Promise<unknown>>, work: Promise<unknown>): void {
  pending.add(work);
  void work.finally(() => pending.delete(work));
}

/** `work`, or nothing once `ms` have passed. */
async function atMost(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise((resolve) => { timer = setTimeout(resolve, ms); })]);
  clearTimeout(timer);
}

function parseJson(text: string): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new RequestError(400, `the body is not JSON: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A refusal by the library is the client's mistake: a 400 with the library's message, and the
 *  field it concerns. */
async function withField<T>(work: Promise<T>, field: () => string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof TapegradError && (error.code === 'NOT_A_NUMBER' || error.code === 'INVALID_ARGUMENT')) {
      throw new LibraryRefusal(error, field());
    }
    throw error;
  }
}

class LibraryRefusal extends Error {
  constructor(readonly error: TapegradError, readonly field: string) { super(error.message); }
}

// JSON has no NaN or Infinity, but 1e999 parses to Infinity: a model input must be finite.
function checkFinite(values: ArrayLike<number>, names: (k: number) => string): void {
  for (let k = 0; k < values.length; k++) {
    if (!Number.isFinite(values[k])) throw new RequestError(400, `${names(k)} must be a finite number, got ${values[k]}`);
  }
}

function positive(value: number, name: string): void {
  if (!(value > 0)) throw new RequestError(400, `${name} must be positive, got ${value}`);
}

export async function startService(options: ServiceOptions): Promise<Service> {
  const { workers, backend, shutdownGraceMs = 5000 } = options;
  if (backend === 'wasm') await init();
  const models = compileModels(backend);
  let pool: GradientPool | null = null;
  let blackScholes: Batches, payoff: Batches, logreg: Batches;
  if (workers > 0) {
    pool = await createPool({ threads: workers, backend, minRowsPerTask: 256 });
    const [b, p, l]: PooledFunction[] = await Promise.all([pool.register(models.blackScholes), pool.register(models.payoff), pool.register(models.logreg)]);
    [blackScholes, payoff, logreg] = [b!, p!, l!];
  } else {
    [blackScholes, payoff, logreg] = [local(models.blackScholes), local(models.payoff), local(models.logreg)];
  }

  async function optionsEndpoint(body: Record<string, unknown>): Promise<unknown> {
    const list = body.options;
    if (!Array.isArray(list) || list.length === 0) throw new RequestError(400, '"options" must be a non-empty array of { spot, strike, maturity, rate, volatility }');
    if (list.length > MAX_OPTIONS) throw new RequestError(400, `at most ${MAX_OPTIONS} options per request, got ${list.length}`);
    const rows = list.length, n = OPTION_FIELDS.length;
    // Passed on as they came: the library checks that every entry is a number (NotANumberError)
    // while it copies them once into its own (or the pool's shared) memory.
    const raw: unknown[] = new Array(rows * n);
    list.forEach((o, r) => {
      if (o === null || typeof o !== 'object') throw new RequestError(400, `options[${r}] must be an object`);
      OPTION_FIELDS.forEach((field, j) => { raw[r * n + j] = (o as Record<string, unknown>)[field]; });
    });
    const field = (k: number): string => `options[${Math.floor(k / n)}].${OPTION_FIELDS[k % n]}`;
    const V = new Float64Array(rows * n);
    for (let r = 0; r < rows; r++) V[r * n] = 1; // direction e_spot: (H e_spot)_spot is gamma
    const X = raw as number[];
    const [[prices, G], H] = await withField(
      Promise.all([blackScholes.valueAndGradientBatch(X, rows), blackScholes.hvpBatch(X, rows, V)]),
      () => field(raw.findIndex((v) => typeof v !== 'number')),
    );
    // Numbers now; the model needs them finite and, but for the rate, positive.
    checkFinite(X, field);
    for (let r = 0; r < rows; r++) for (const j of [0, 1, 2, 4]) positive(X[r * n + j]!, field(r * n + j));
    const results = Array.from({ length: rows }, (_, r) => ({
      price: prices[r]!, delta: G[r * n]!, dStrike: G[r * n + 1]!, theta: -G[r * n + 2]!, rho: G[r * n + 3]!, vega: G[r * n + 4]!, gamma: H[r * n]!,
    }));
    // Finite inputs far outside the model's range (a rate of -1e6) can
    // still overflow it: a 422 naming the option, never a 200 with nulls (JSON's NaN).
    results.forEach((greeks, r) => {
      const bad = Object.entries(greeks).find(([, v]) => !Number.isFinite(v));
      if (bad) throw new RequestError(422, `options[${r}]: the model is not finite at these inputs (${bad[0]} ${bad[1]})`);
    });
    return { results };
  }

  async function monteCarloEndpoint(body: Record<string, unknown>): Promise<unknown> {
    const paths = body.paths ?? 10_000, seed = body.seed ?? 1;
    if (!Number.isInteger(paths) || (paths as number) < 2 || (paths as number) > MAX_PATHS) throw new RequestError(400, `"paths" must be an integer in [2, ${MAX_PATHS}], got ${JSON.stringify(paths)}`);
    if (!Number.isInteger(seed)) throw new RequestError(400, `"seed" must be an integer, got ${JSON.stringify(seed)}`);
    const params = OPTION_FIELDS.map((f) => body[f]);
    params.forEach((v, j) => {
      if (typeof v !== 'number') throw new RequestError(400, `"${OPTION_FIELDS[j]}" must be a number, got ${v === undefined ? 'nothing' : JSON.stringify(v)}`);
    });
    const p = Float64Array.from(params as number[]);
    checkFinite(p, (j) => `"${OPTION_FIELDS[j]}"`);
    for (const j of [0, 1, 2, 4]) positive(p[j]!, `"${OPTION_FIELDS[j]}"`);
    const rows = paths as number;
    // The rows, gradients and values live in arrays leased per request and returned after it: a
    // fresh megabyte of (shared) memory per request made the collector stop the service often
    // enough to set its p99 latency (8.7× p50 on one worker in the load test).
    const X = lease(rows * PATH_INPUTS), G = lease(rows * PATH_INPUTS), values = lease(rows);
    try {
      for (let r = 0; r < rows; r++) X.set(p, r * PATH_INPUTS);
      normals(seed as number, X, PATH_INPUTS, PATH_INPUTS - 1, rows);
      await payoff.valueAndGradientBatch(X, rows, G, values);
      const answer = monteCarloAnswer(rows, values, G) as Record<string, unknown>;
      const bad = Object.entries(answer).find(([, v]) => {
        if (typeof v === 'number') return !Number.isFinite(v);
        const { estimate, standardError } = v as { estimate: number; standardError: number };
        return !Number.isFinite(estimate) || !Number.isFinite(standardError);
      });
      if (bad) throw new RequestError(422, `the model is not finite at these inputs (${bad[0]})`);
      return answer;
    } finally {
      release(X); release(G); release(values);
    }
  }

  const { lease, release } = arrayLeases(workers > 0);

  function monteCarloAnswer(rows: number, values: Float64Array, G: Float64Array): unknown {
    // Welford's update: the one-pass s2/n − m² cancelled when the spread is small next to the
    // mean (standard errors 3.6× too large at a volatility of 1e-8, 0 at 1e-9), and where every
    // path agrees each step adds exactly 0.
    const mean = (at: (r: number) => number): { estimate: number; standardError: number } => {
      let m = 0, squares = 0;
      for (let r = 0; r < rows; r++) {
        const v = at(r), step = v - m;
        m += step / (r + 1);
        squares += step * (v - m);
      }
      return { estimate: m, standardError: Math.sqrt(squares / (rows * (rows - 1))) };
    };
    const g = (j: number) => mean((r) => G[r * PATH_INPUTS + j]!);
    const theta = g(2);
    return {
      paths: rows, price: mean((r) => values[r]!), delta: g(0), dStrike: g(1),
      theta: { estimate: -theta.estimate, standardError: theta.standardError }, rho: g(3), vega: g(4),
    };
  }

  async function logregEndpoint(body: Record<string, unknown>): Promise<unknown> {
    const w = body.weights;
    // The library checks the entries and a short array; a long one it would read the start of.
    if (Array.isArray(w) && w.length > FEATURES + 1) throw new RequestError(400, `"weights" has ${w.length} entries, expected ${FEATURES + 1} (${FEATURES} weights, then the bias)`);
    const [[loss], G] = await withField(logreg.valueAndGradientBatch(w as number[], 1), () => 'weights');
    checkFinite(w as number[], (k) => `weights[${k}]`);
    // Finite weights can still overflow the loss: a 422, never a 200 with nulls (JSON's NaN).
    if (!Number.isFinite(loss) || G.some((g) => !Number.isFinite(g))) throw new RequestError(422, 'the model is not finite at these weights');
    return { loss, gradient: Array.from(G) };
  }

  const routes = new Map<string, (body: Record<string, unknown>) => Promise<unknown>>([
    ['/v1/options', optionsEndpoint], ['/v1/mc', monteCarloEndpoint], ['/v1/logreg', logregEndpoint],
  ]);
  // Aborted when the shutdown grace is over: the bodies still arriving then are not waited for.
  const stopReading = new AbortController();
  setMaxListeners(Infinity, stopReading.signal); // one listener per body being read, however many
  // The requests whose handler has not returned, and those whose response has not been written
  // out (or whose connection has not gone).
  const handling = new Set<Promise<unknown>>(), answering = new Set<Promise<unknown>>();

  const send = (res: ServerResponse, status: number, payload: unknown): void => {
    if (res.headersSent || res.destroyed) return;
    const text = JSON.stringify(payload);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The path of an origin-form target (/v1/…) or an absolute-form one (http://host/v1/…), which
    // HTTP/1.1 servers must accept (RFC 9112, 3.2.2: it answered 404, an examples probe).
    let path = '';
    try {
      path = new URL(req.url ?? '/', 'http://service.invalid').pathname;
    } catch {
      // No path: the 404 below names what came.
    }
    const route = routes.get(path);
    // node answers HEAD with the headers of the GET, without its body.
    const methods = path === '/healthz' ? ['GET', 'HEAD'] : route ? ['POST'] : null;
    if (!methods) {
      send(res, 404, { error: { message: `no endpoint ${path || req.url}; POST /v1/options, /v1/mc or /v1/logreg, or GET /healthz` } });
      return;
    }
    if (!methods.includes(req.method!)) {
      res.setHeader('allow', methods.join(', '));
      send(res, 405, { error: { message: `${path} takes ${methods.join(' or ')}` } });
      return;
    }
    if (!route) {
      // ?gc=1 collects garbage first where node runs with --expose-gc (the load test's memory check).
      const collect = (globalThis as { gc?: () => void }).gc;
      if (req.url?.endsWith('?gc=1') && collect) collect();
      send(res, 200, { ok: true, workers, backend, memory: process.memoryUsage() });
      return;
    }
    try {
      send(res, 200, await route(parseJson(await readBody(req, stopReading.signal))));
    } catch (error) {
      if (error instanceof ClientHungUp) return;
      if (error instanceof RequestError) {
        // The rest of an unread body would be taken for the next request.
        if (!req.complete) res.setHeader('connection', 'close');
        send(res, error.status, { error: { message: error.message } });
      } else if (error instanceof LibraryRefusal) {
        send(res, 400, { error: { code: error.error.code, message: error.message, field: error.field } });
      } else {
        send(res, 500, { error: { message: 'internal error' } });
        console.error(error);
      }
    }
  }

  let closing: Promise<void> | null = null;
  const server = createServer((req, res) => {
    // A keep-alive client would otherwise send its next request to a service that is going.
    if (closing) res.setHeader('connection', 'close');
    remember(answering, new Promise((resolve) => res.once('close', resolve)));
    remember(handling, handle(req, res));
  });
  server.requestTimeout = 30_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
    });
  } catch (error) {
    await pool?.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  return {
    // An IPv6 address in brackets (http://::1:8080 is no URL: a probe).
    url: `http://${(options.host ?? '127.0.0.1').includes(':') ? `[${options.host}]` : options.host ?? '127.0.0.1'}:${port}`,
    close: () => closing ??= (async () => {
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // server.close() stops node's requestTimeout checks, so the grace is the only bound on a
      // client that never finishes its body or never reads its answer.
      await atMost(shutdownGraceMs, settled(answering));
      stopReading.abort();
      await settled(handling);
      // An answer computed past the grace gets a grace of its own to reach its client.
      await atMost(shutdownGraceMs, settled(answering));
      server.closeAllConnections();
      await stopped;
      await pool?.close();
    })(),
  };
}

/** Arrays leased to one request at a time (shared memory when `shared`, a pool computing), as
 *  views of the first `length` numbers of arrays sized in powers of two. Kept by exact length,
 *  every new "paths" a client sent pinned its arrays for good (a probe: 30 requests took the
 *  service from 222 MB to 2 GB). Past the bounds arrays are not kept, so they are plain memory:
 *  the pool copies them through its own reused scratch, where a new shared array per request
 *  stayed allocated in every worker. */
export function arrayLeases(shared: boolean, maxHeldBytes = 256 << 20): {
  lease(length: number): Float64Array; release(view: Float64Array): void; heldBytes(): number;
} {
  const free = new Map<number, Float64Array[]>();
  const MAX_KEPT = 1 << 22, MAX_OF_A_SIZE = 32;
  // Arrays made to be kept, per size, and their bytes: a shared one is made only where it will be
  // kept, since the workers hold every shared array they were sent (one made past the bounds
  // and dropped on release took a probe's service to 1.4 GB over 12 bursts of 24 requests, and to
  // 4.6 GB with random path counts; flat at 230 MB without workers).
  const made = new Map<number, number>();
  let held = 0, madeBytes = 0;
  const keeps = (capacity: number): boolean =>
    capacity <= MAX_KEPT && (made.get(capacity) ?? 0) < MAX_OF_A_SIZE && madeBytes + 8 * capacity <= maxHeldBytes;
  return {
    lease(length) {
      const capacity = 2 ** Math.max(10, Math.ceil(Math.log2(Math.max(length, 1))));
      let whole = free.get(capacity)?.pop();
      if (whole) held -= whole.byteLength;
      else if (keeps(capacity)) {
        made.set(capacity, (made.get(capacity) ?? 0) + 1);
        madeBytes += 8 * capacity;
        whole = shared ? sharedFloat64(capacity) : new Float64Array(capacity);
      } else {
        whole = new Float64Array(capacity);
      }
      return whole.subarray(0, length);
    },
    release(view) {
      // Kept for as many requests as run at once: the arrays made to be kept, and no other.
      const whole = new Float64Array(view.buffer);
      const list = free.get(whole.length) ?? [];
      // (Within maxHeldBytes so: at most as many of a size as were made to be kept.)
      if ((!shared || view.buffer instanceof SharedArrayBuffer) && list.length < (made.get(whole.length) ?? 0)) {
        list.push(whole);
        held += whole.byteLength;
      }
      free.set(whole.length, list);
    },
    heldBytes: () => held,
  };
}
