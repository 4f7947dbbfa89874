// The example service (examples/service/): its answers against the models evaluated directly and
// against finance's textbook values, the same answers on the main thread and on a pool, bad
// requests answered with 4xx and never a crash, a graceful shutdown that a slow client cannot
// hold up, and the command line. It runs the built library through the package's own name, as a
// user's service would (`npm test` builds first).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { init, normCdf } from 'tapegrad';
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { MAX_BODY_BYTES, arrayLeases, startService, type Service } from '../examples/service/app.ts';
import { OPTION_FIELDS, PATH_INPUTS, compileModels, normals } from '../examples/service/models.ts';

// POSTs `bytes` of spaces with no content-length (chunked); the status and body, or the error.
function chunkedPost(service: Service, bytes: number): Promise<string> {
  return new Promise((resolve) => {
    const { hostname, port } = new URL(service.url);
    const req = request({ host: hostname, port, path: '/v1/options', method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    });
    req.on('error', (e) => resolve(`error ${e.message}`));
    const chunk = Buffer.alloc(1 << 16, 32);
    let sent = 0;
    const pump = (): void => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

interface Reply { status: number; body: any }

/** A client that declares a 1000-byte body, sends its first bytes and then nothing more; `received`
 *  is everything the service sent back, once the connection closes. */
function slowUpload(url: string): { socket: Socket; received: Promise<string> } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.write(`POST /v1/options HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"options":[`);
  let text = '';
  socket.on('data', (d: Buffer) => (text += d));
  socket.on('error', () => {}); // a reset is one of the ways a connection can end here
  return { socket, received: new Promise((resolve) => socket.once('close', () => resolve(text))) };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function post(service: Service, path: string, body: unknown): Promise<Reply> {
  const reply = await fetch(service.url + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: reply.status, body: await reply.json() };
}

const atTheMoney = { spot: 100, strike: 100, maturity: 1, rate: 0.05, volatility: 0.2 };

describe('the gradient service', () => {
  let main: Service, pooled: Service;
  beforeAll(async () => {
    [main, pooled] = await Promise.all([startService({ workers: 0, backend: 'wasm' }), startService({ workers: 2, backend: 'wasm' })]);
  });
  afterAll(async () => {
    await Promise.all([main.close(), pooled.close()]);
  });

  it('prices a call with every Greek: textbook values, gamma by hvp against a difference of deltas', async () => {
    const { status, body } = await post(pooled, '/v1/options', { options: [atTheMoney] });
    expect(status).toBe(200);
    const r = body.results[0];
    // Black–Scholes at S = K = 100, T = 1, r = 5%, σ = 20%, from the closed forms with an exact
    // normal CDF (the model takes the library's normCdf: to rounding).
    const textbook = { price: 10.450583572185565, delta: 0.6368306511756191, vega: 37.52403469169379, rho: 53.232481545376345, theta: -6.414027546438197, gamma: 0.018762017345846895 };
    for (const [key, value] of Object.entries(textbook)) expect(Math.abs(r[key] / value - 1), key).toBeLessThan(1e-12);
    const h = 1e-3;
    const { body: near } = await post(pooled, '/v1/options', { options: [{ ...atTheMoney, spot: 100 - h }, { ...atTheMoney, spot: 100 + h }] });
    expect(r.gamma).toBeCloseTo((near.results[1].delta - near.results[0].delta) / (2 * h), 6);
  });

  // An examples probe: an absolute-form request target (RFC 9112, 3.2.2: servers must accept it)
  // got 404 "no endpoint http://…/v1/options".
  it('takes an absolute-form request target as its path', async () => {
    const { hostname, port } = new URL(main.url);
    const body = JSON.stringify({ options: [atTheMoney] });
    const socket = connect(Number(port), hostname);
    socket.write(`POST http://${hostname}:${port}/v1/options?x=1 HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    let text = '';
    socket.on('data', (d: Buffer) => (text += d));
    await new Promise((resolve) => socket.once('close', resolve));
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).results[0].price).toBeCloseTo(10.450583572185565, 12);
  });

  it('every Greek equals its closed form, near expiry at the money too (where gamma is steepest)', async () => {
    const options = [
      { spot: 100, strike: 100, maturity: 1 / 365, rate: 0, volatility: 0.2 },
      { spot: 100, strike: 100, maturity: 1 / 8760, rate: 0, volatility: 0.05 },
      { spot: 120, strike: 100, maturity: 0.5, rate: 0.03, volatility: 0.3 },
      { spot: 80, strike: 100, maturity: 2, rate: 0.01, volatility: 0.15 },
      { spot: 100.5, strike: 100, maturity: 1e-4, rate: 0.05, volatility: 0.4 },
      // A volatility so large that σ² overflows: the call is worth the spot.
      { spot: 100, strike: 100, maturity: 1, rate: 0.05, volatility: 1e300 },
    ];
    const { status, body } = await post(pooled, '/v1/options', { options });
    expect(status).toBe(200);
    const pdf = (x: number): number => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
    options.forEach(({ spot: S, strike: K, maturity: T, rate: r, volatility: v }, k) => {
      const d1 = Math.log(S / K) / (v * Math.sqrt(T)) + (r / v + v / 2) * Math.sqrt(T), d2 = d1 - v * Math.sqrt(T);
      const Kd = K * Math.exp(-r * T);
      const want = {
        price: S * normCdf(d1) - Kd * normCdf(d2), delta: normCdf(d1), gamma: pdf(d1) / (S * v * Math.sqrt(T)), vega: S * pdf(d1) * Math.sqrt(T),
        rho: K * T * Math.exp(-r * T) * normCdf(d2), theta: -(S * pdf(d1) * v) / (2 * Math.sqrt(T)) - r * Kd * normCdf(d2),
      };
      for (const [key, value] of Object.entries(want)) expect(Math.abs(body.results[k][key] - value), `option ${k} ${key}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(value)));
    });
  });

  it('takes the documented 10,000 options of full-precision doubles in one request', async () => {
    const options = Array.from({ length: 10_000 }, (_, k) => ({ spot: 100 + Math.sin(k) / 3, strike: 100 + Math.cos(k) / 7, maturity: 0.5 + Math.sin(3 * k) / 9, rate: 0.03 + Math.sin(5 * k) / 97, volatility: 0.2 + Math.cos(7 * k) / 31 }));
    expect(JSON.stringify({ options }).length).toBeGreaterThan(1 << 20);
    const { status, body } = await post(pooled, '/v1/options', { options });
    expect(status).toBe(200);
    expect(body.results).toHaveLength(10_000);
  });

  it('answers the same bits on the main thread and on the pool, for every endpoint', async () => {
    const options = { options: Array.from({ length: 700 }, (_, k) => ({ spot: 60 + k / 10, strike: 100, maturity: 0.1 + (k % 9) / 4, rate: 0.02, volatility: 0.1 + (k % 7) / 20 })) };
    const mc = { ...atTheMoney, paths: 50_000, seed: 3 };
    const logreg = { weights: [0.5, -0.25, 0.1, 0, 0.3, -0.1, 0.2, 0.05, 0.1] };
    for (const [path, body] of [['/v1/options', options], ['/v1/mc', mc], ['/v1/logreg', logreg]] as const) {
      const [a, b] = await Promise.all([post(main, path, body), post(pooled, path, body)]);
      expect(a.status, path).toBe(200);
      expect(b.body, path).toEqual(a.body); // JSON carries every digit of a double
    }
  });

  it('Monte Carlo: price and pathwise sensitivities within 4 standard errors of Black–Scholes', async () => {
    const { body: exact } = await post(main, '/v1/options', { options: [atTheMoney] });
    const { status, body } = await post(pooled, '/v1/mc', { ...atTheMoney, paths: 200_000, seed: 11 });
    expect(status).toBe(200);
    for (const key of ['price', 'delta', 'vega', 'rho', 'theta'] as const) {
      expect(Math.abs(body[key].estimate - exact.results[0][key]), key).toBeLessThan(4 * body[key].standardError);
    }
  });

  it('a bad request gets a 4xx naming what is wrong (the library\'s own message where it refused), and the service carries on', async () => {
    const cases: [string, unknown, number, RegExp][] = [
      ['/v1/options', { options: [{ ...atTheMoney, strike: 'x' }] }, 400, /entry 1 must be a number, got the string "x"/],
      // JSON.stringify writes Infinity as null; 1e999 is how a client sends it.
      ['/v1/options', '{"options": [{"spot": 100, "strike": 1e999, "maturity": 1, "rate": 0.05, "volatility": 0.2}]}', 400, /options\[0\]\.strike must be a finite number, got Infinity/],
      ['/v1/options', { options: [{ ...atTheMoney, volatility: -0.2 }] }, 400, /options\[0\]\.volatility must be positive/],
      ['/v1/options', { options: [{ spot: 100 }] }, 400, /entry 1 must be a number, got undefined/],
      ['/v1/options', { options: [] }, 400, /non-empty array/],
      ['/v1/options', { options: [null] }, 400, /options\[0\] must be an object/],
      ['/v1/logreg', { weights: [1, 2, 3] }, 400, /9 inputs need at least 9 numbers, got 3/],
      ['/v1/logreg', { weights: Array(10).fill(0) }, 400, /has 10 entries, expected 9/],
      ['/v1/logreg', { weights: [0, 0, 0, 0, 0, 0, 0, 0, null] }, 400, /entry 8 must be a number, got null/],
      ['/v1/logreg', { weights: 'abc' }, 400, /need an array of at least 9 numbers/],
      ['/v1/mc', { ...atTheMoney, paths: 1e7 }, 400, /"paths" must be an integer/],
      ['/v1/mc', { ...atTheMoney, rate: '5%' }, 400, /"rate" must be a number/],
      ['/v1/mc', '{"spot": 1', 400, /not JSON/],
      ['/v1/mc', '[1, 2]', 400, /must be a JSON object/],
      // Finite but far outside the model's range: the model overflows, and the answer says so.
      ['/v1/options', { options: [{ ...atTheMoney, rate: -1e6 }] }, 422, /options\[0\]: the model is not finite/],
      ['/v1/mc', { ...atTheMoney, rate: 1e6 }, 422, /the model is not finite at these inputs \(price\)/],
      // A price that is finite with a standard error that is not, and a loss that overflows:
      // 422s where they answered 200 with nulls (found by a new-user probe).
      ['/v1/mc', { ...atTheMoney, spot: 1e300 }, 422, /the model is not finite at these inputs \(price\)/],
      ['/v1/logreg', { weights: [1e300, 0, 0, 0, 0, 0, 0, 0, 0] }, 422, /the model is not finite at these weights/],
      ['/v1/nothing', {}, 404, /no endpoint/],
      ['/v1/logreg', 'x'.repeat(MAX_BODY_BYTES + 1), 413, /limit is|over/],
    ];
    for (const service of [main, pooled]) {
      for (const [path, body, status, message] of cases) {
        const reply = await post(service, path, body);
        expect(reply.status, `${path} ${JSON.stringify(body).slice(0, 80)}`).toBe(status);
        expect(reply.body.error.message).toMatch(message);
      }
      // A spot of 1e-320: the call is worthless and every greek 0, their limits (a 422 until
      // 2026-12-07: gamma's tangent was NaN, log's infinite tangent at a subnormal meeting a zero
      // partial, which the tangent sweeps now leave out as the reverse sweep does).
      const tiny = await post(service, '/v1/options', { options: [atTheMoney, { ...atTheMoney, spot: 1e-320 }] });
      expect(tiny.status).toBe(200);
      expect(tiny.body.results[1]).toEqual({ price: 0, delta: 0, dStrike: 0, theta: 0, rho: 0, vega: 0, gamma: 0 });
      const get = await fetch(service.url + '/v1/options');
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      // /healthz exists, so another method is a 405 too, not a 404 saying there is no /healthz.
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const reply = await fetch(service.url + '/healthz', { method });
        expect(reply.status, method).toBe(405);
        expect(reply.headers.get('allow')).toBe('GET, HEAD');
        expect((await reply.json()).error.message).toMatch(/\/healthz takes GET or HEAD/);
      }
      const head = await fetch(service.url + '/healthz', { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      // A body over the limit that declares no length (chunked) gets its 413 too: the connection
      // was reset before any answer.
      expect(await chunkedPost(service, MAX_BODY_BYTES + (2 << 20))).toMatch(/^413 .*the body is over \d+ bytes/);
      expect((await post(service, '/v1/options', { options: [atTheMoney] })).status).toBe(200);
    }
  });

  it('arbitrary JSON bodies never get a 5xx, on either service', async () => {
    const field = fc.oneof(fc.double(), fc.string(), fc.constant(null), fc.boolean(), fc.array(fc.double(), { maxLength: 3 }));
    const option = fc.record({ spot: field, strike: field, maturity: field, rate: field, volatility: field }, { requiredKeys: [] });
    const body = fc.oneof(
      fc.record({ options: fc.oneof(fc.array(option, { maxLength: 4 }), fc.anything()) }),
      fc.record({ weights: fc.oneof(fc.array(field, { maxLength: 11 }), fc.anything()) }),
      fc.record({ spot: field, strike: field, maturity: field, rate: field, volatility: field, paths: fc.oneof(fc.integer({ min: -5, max: 2000 }), field), seed: field }, { requiredKeys: [] }),
      fc.anything(),
    );
    const path = fc.constantFrom('/v1/options', '/v1/logreg', '/v1/mc');
    await fc.assert(fc.asyncProperty(path, body, async (p, b) => {
      for (const service of [main, pooled]) {
        const reply = await post(service, p, JSON.stringify(b) ?? 'null');
        expect([200, 400]).toContain(reply.status);
      }
    }), { numRuns: 150, seed: 14 });
    expect((await post(pooled, '/v1/options', { options: [atTheMoney] })).status).toBe(200);
  });

  it('Monte Carlo standard errors are those of a two-pass reference, and exactly 0 where every path agrees', async () => {
    await init();
    const { payoff } = compileModels('wasm');
    // The one-pass s2/n − m² cancelled here: 3.6× too large at a volatility of 1e-8, 0 at 1e-9.
    for (const volatility of [1e-8, 1e-9, 0.2]) {
      const inputs = { ...atTheMoney, volatility, paths: 5000, seed: 9 };
      const { status, body } = await post(pooled, '/v1/mc', inputs);
      expect(status).toBe(200);
      const X = new Float64Array(inputs.paths * PATH_INPUTS);
      for (let r = 0; r < inputs.paths; r++) OPTION_FIELDS.forEach((field, j) => { X[r * PATH_INPUTS + j] = inputs[field]; });
      normals(inputs.seed, X, PATH_INPUTS, PATH_INPUTS - 1, inputs.paths);
      const [values, G] = payoff.valueAndGradientBatch(X, inputs.paths);
      const perPath = { price: values, delta: G.filter((_, k) => k % PATH_INPUTS === 0), dStrike: G.filter((_, k) => k % PATH_INPUTS === 1), theta: G.filter((_, k) => k % PATH_INPUTS === 2), rho: G.filter((_, k) => k % PATH_INPUTS === 3), vega: G.filter((_, k) => k % PATH_INPUTS === 4) };
      for (const [key, xs] of Object.entries(perPath)) {
        // Two passes, the second corrected for the rounding of the mean (Chan, Golub & LeVeque).
        const n = xs.length, mean = xs.reduce((a, b) => a + b, 0) / n;
        const deviations = xs.map((x) => x - mean), drift = deviations.reduce((a, d) => a + d, 0);
        const reference = Math.sqrt((deviations.reduce((a, d) => a + d * d, 0) - (drift * drift) / n) / (n * (n - 1)));
        // Where the paths agree but for rounding (rho is T K e^(−rT) on every path in the money),
        // both are noise far below what the one-pass formula made of it (1.05e-8 for a dStrike).
        expect(Math.abs(body[key].standardError - reference), `volatility ${volatility} ${key}`).toBeLessThanOrEqual(1e-6 * reference + 1e-16 * Math.abs(mean));
      }
    }
    // Every path ends in the money at this volatility, so every path's dStrike is −e^(−rT).
    for (const paths of [3, 5000]) {
      const { body } = await post(main, '/v1/mc', { ...atTheMoney, volatility: 1e-8, paths });
      expect(body.dStrike, `${paths} paths`).toEqual({ estimate: -Math.exp(-0.05), standardError: 0 });
    }
  });

  it('clients hanging up mid-upload are not logged as internal errors, nor warned about, and the service carries on', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const warnings: Error[] = [];
    const warn = (warning: Error): void => { warnings.push(warning); };
    process.on('warning', warn);
    try {
      for (const service of [main, pooled]) {
        const uploads = Array.from({ length: 12 }, () => slowUpload(service.url));
        await pause(100);
        for (const { socket } of uploads) socket.destroy();
        for (const { received } of uploads) expect(await received).toBe('');
        await pause(100);
        expect((await post(service, '/v1/options', { options: [atTheMoney] })).status).toBe(200);
      }
      expect(logged).not.toHaveBeenCalled();
      expect(warnings).toEqual([]);
    } finally {
      logged.mockRestore();
      process.off('warning', warn);
    }
  });
});

// A new-user probe: the arrays a request leases were kept by exact length, so every new "paths"
// pinned its arrays for good (30 requests: 222 MB to 2 GB).
it('keeps the arrays requests lease in a few power-of-two sizes, within a bound on the bytes held', () => {
  for (const shared of [false, true]) {
    const leases = arrayLeases(shared, 64 << 20);
    for (let paths = 600_000; paths < 600_030; paths++) {
      const views = [leases.lease(3 * paths), leases.lease(3 * paths), leases.lease(paths)];
      expect(views.map((v) => v.length)).toEqual([3 * paths, 3 * paths, paths]);
      expect(views[0]!.buffer instanceof SharedArrayBuffer).toBe(shared);
      for (const v of views) leases.release(v);
      expect(leases.heldBytes()).toBe(40 << 20);
    }
    // A size leased again is the array kept, not a new one.
    const first = leases.lease(1000);
    leases.release(first);
    expect(leases.lease(900).buffer).toBe(first.buffer);
  }
  // A probe: past the bounds a shared array was made for the request and dropped after, and the
  // workers, which hold every shared array they were sent, grew the service by gigabytes. Only
  // the arrays that will be kept are shared; the rest are plain, and none of them is kept.
  const leases = arrayLeases(true, 64 << 20);
  const sharedMade = new Set<ArrayBufferLike>();
  for (let burst = 0; burst < 5; burst++) {
    const views = Array.from({ length: 40 }, (_, k) => leases.lease(k % 2 ? 100_000 : 1_000_000 + k));
    for (const v of views) if (v.buffer instanceof SharedArrayBuffer) sharedMade.add(v.buffer);
    for (const v of views) leases.release(v);
    expect(leases.heldBytes()).toBeLessThanOrEqual(64 << 20);
  }
  // Made in the first burst while the 64 MiB allowed them (8 MiB and 1 MiB alternating: seven
  // of each, then one more of 1 MiB), and none after: the later bursts lease those again.
  expect(sharedMade.size).toBe(15);
});

it('shuts down gracefully: a request in flight is answered, then connections are refused', async () => {
  const service = await startService({ workers: 2, backend: 'wasm' });
  const slow = post(service, '/v1/mc', { ...atTheMoney, paths: 1_000_000, seed: 5 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const closed = service.close();
  const reply = await slow;
  expect(reply.status).toBe(200);
  expect(reply.body.paths).toBe(1_000_000);
  await closed;
  await expect(fetch(service.url + '/healthz')).rejects.toThrow();
});

it('shuts down in bounded time: a body still arriving past the grace gets a 503, a computation in flight its answer', async () => {
  const service = await startService({ workers: 1, backend: 'wasm', shutdownGraceMs: 100 });
  const upload = slowUpload(service.url);
  try {
    const slow = post(service, '/v1/mc', { ...atTheMoney, paths: 1_000_000, seed: 5 });
    await pause(50);
    const closed = service.close();
    // server.close() stops node's requestTimeout checks: without a grace of its own, a client
    // that never finishes its body kept the service open for as long as it kept the connection.
    const outcome = await Promise.race([closed.then(() => 'closed'), pause(10_000).then(() => 'still open')]);
    expect(outcome).toBe('closed');
    expect(await upload.received).toMatch(/^HTTP\/1\.1 503 .*\r\nconnection: close\r\n[^]*the service is shutting down/is);
    const reply = await slow;
    expect(reply.status).toBe(200);
    expect(reply.body.paths).toBe(1_000_000);
  } finally {
    upload.socket.destroy();
  }
});

describe('the command line (serve.ts)', () => {
  const SERVE = fileURLToPath(new URL('../examples/service/serve.ts', import.meta.url));

  function serve(args: string[]) {
    const { PORT: _, ...env } = process.env; // the port is the flags' alone here
    const child = spawn(process.execPath, ['--import', 'tsx', SERVE, ...args], { env });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d));
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
    const listening = async (): Promise<string> => {
      while (!/on (http:\S+)/.test(stdout)) {
        if (child.exitCode !== null) throw new Error(`serve exited (${child.exitCode}): ${stderr}`);
        await pause(20);
      }
      return /on (http:\S+)/.exec(stdout)![1]!;
    };
    return { child, exited, listening };
  }

  async function freePort(): Promise<number> {
    const probe = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => probe.once('listening', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    return port;
  }

  it('refuses a bad flag with one line naming it, and exits non-zero', async () => {
    const cases: [string[], RegExp][] = [
      [['--port=abc'], /^serve: --port must be an integer in \[0, 65535\], got "abc"$/],
      [['--port=-5'], /--port must be an integer in \[0, 65535\], got "-5"/],
      [['--port=99999'], /--port must be an integer in \[0, 65535\], got "99999"/],
      [['--port='], /--port must be an integer/],
      [['--port'], /Option '--port <value>' argument missing/],
      [['--workers=two'], /--workers must be an integer >= 0, got "two"/],
      [['--backend', 'gpu'], /--backend must be wasm or js, got "gpu"/],
      [['--prot=9000'], /Unknown option '--prot'; the options are --workers, --backend, --port, --host, --grace-ms/],
      [['9000'], /Unexpected argument '9000'/],
      // setTimeout made a longer grace 1 ms; a name that resolves nowhere threw with a stack (a probe).
      [['--grace-ms=3000000000'], /^serve: --grace-ms must be an integer in \[0, 2147483647\], got "3000000000"$/],
      [['--host=nonexistent.invalid', '--workers=0', '--port=0'], /^serve: --host "nonexistent\.invalid" is not an address of this machine or a name that resolves \(\w+\)$/],
    ];
    await Promise.all(cases.map(async ([args, message]) => {
      const { code, stdout, stderr } = await serve(args).exited;
      expect(code, args.join(' ')).toBe(2);
      expect(stdout).toBe('');
      expect(stderr.trimEnd().split('\n'), args.join(' ')).toHaveLength(1);
      expect(stderr.trim()).toMatch(message);
    }));
  });

  // A probe: the URL it printed for --host=::1 was http://::1:port, which is no URL.
  it('gives an IPv6 host in brackets', async () => {
    const service = serve(['--workers=0', '--port=0', '--host=::1']);
    const raced = await Promise.race([service.listening().then((url) => ({ url })), service.exited]);
    try {
      if ('url' in raced) {
        expect(raced.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
        expect(new URL(raced.url).hostname).toBe('[::1]');
      } else {
        // A machine without IPv6 loopback: the one-line refusal of the listen.
        expect(raced.code).toBe(1);
        expect(raced.stderr.trim()).toMatch(/^serve: cannot listen on ::1:0: /);
      }
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('says so in one line when the port is taken', async () => {
    const occupant = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => occupant.once('listening', resolve));
    const { port } = occupant.address() as AddressInfo;
    try {
      const { code, stderr } = await serve(['--workers=1', `--port=${port}`]).exited;
      expect(code).toBe(1);
      expect(stderr.trim()).toBe(`serve: port ${port} on 127.0.0.1 is in use; stop what listens there or choose another --port`);
    } finally {
      occupant.close();
    }
  });

  it('takes "--flag value" as "--flag=value", and SIGTERM stops it even while a client never finishes its body', async () => {
    const port = await freePort();
    const service = serve(['--workers', '0', '--port', String(port), '--grace-ms', '200']);
    expect(await service.listening()).toBe(`http://127.0.0.1:${port}`);
    const upload = slowUpload(`http://127.0.0.1:${port}`);
    try {
      await pause(50);
      service.child.kill('SIGTERM');
      const outcome = await Promise.race([service.exited, pause(10_000).then(() => null)]);
      expect(outcome?.code).toBe(0);
      expect(await upload.received).toMatch(/^HTTP\/1\.1 503 /);
    } finally {
      upload.socket.destroy();
      service.child.kill('SIGKILL');
    }
  });
});

// An examples probe: the demo's server printed a raw stack for a bad PORT or a port in use.
describe('the demo server\'s command line (examples/demo/serve.ts)', () => {
  const DEMO = fileURLToPath(new URL('../examples/demo/serve.ts', import.meta.url));
  const run = (port: string): Promise<{ code: number | null; stderr: string }> => new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', DEMO], { env: { ...process.env, PORT: port } });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.once('exit', (code) => resolve({ code, stderr }));
  });

  it('says a bad PORT, or a port in use, in one line and exits non-zero', async () => {
    const bad = await run('abc');
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('tapegrad demo: PORT must be an integer from 0 to 65535, got "abc"');
    const occupant = createServer().listen(0, '127.0.0.1');
    await new Promise((resolve) => occupant.once('listening', resolve));
    const { port } = occupant.address() as AddressInfo;
    try {
      const taken = await run(String(port));
      expect(taken.code).toBe(1);
      expect(taken.stderr.trim()).toBe(`tapegrad demo: port ${port} is in use; stop what listens there or choose another PORT`);
    } finally {
      occupant.close();
    }
  }, 30_000);
});
