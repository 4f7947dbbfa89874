// The same dist/ in a real browser: headless Chromium loads it with a plain <script type="module">
// from a localhost server and runs the worked examples, a gradient check of every op on both
// backends, a seeded random-graph parity check wasm vs JS, the no-WebAssembly fallback and the
// demo page. The pages compute; every assertion is here. Nothing is built: `npm test` has run
// the build before vitest.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoServer } from '../examples/demo/serve.ts';
import * as tapegrad from '../src/index.ts';
import { SCALAR_OP_TABLE, compile, fromBytes, init, type Var } from '../src/index.ts';
import { runVectorPrograms } from './browser/pages/suite.js';
import { VECTOR_PROGRAMS } from './browser/pages/vector-programs.js';
import {
  DIST, ROOT, chromiumFound, launchChromium, openPage, reportMissingChromium, startStaticServer,
  type CheckedPage, type StaticServer,
} from './browser/harness.ts';

// The page sweeps every scalar op; the vector ops have their own checks.
const OP_NAMES = SCALAR_OP_TABLE.map(([name]) => name);

// fast-check seed for the random graphs; override with TAPEGRAD_SEED to explore, and quote it
// when reporting a failure.
const SEED = Number(process.env.TAPEGRAD_SEED ?? 20251129);
const GRAPH_RUNS = 300;
const PARITY_RTOL = 1e-12;
// Normwise error allowed between the reverse sweep and 6-point central differences.
const FD_TOLERANCE = 1e-7;

// Entries of the op table that are not differentiable primitives, so the sweep has no case for
// them. Anything else the page cannot call is a new op missing from the sweep.
const NOT_SWEPT: Record<string, string> = {
  const: 'a leaf: no operands',
  input: 'a leaf: no operands',
  arg: 'carries an extra operand of select/custom; never recorded alone',
  custom: 'a user-defined function: its gradient is whatever the user supplies',
};
// Zero gradient by definition (DESIGN.md §4). stopGradient is also not a smooth function of
// its input as far as differences see (its value is x), so it is checked against 0 only.
const ZERO_GRADIENT = new Set(['floor', 'ceil', 'round', 'sign', 'stopGradient', 'lt', 'le', 'gt', 'ge', 'eq']);

type Backend = 'wasm' | 'js';
interface Worked {
  backend: string;
  sigmoid: { x: number; value: number; grad: number }[];
  logMulSin: { value: number; grad: number[]; gradient: number[] };
  chain: { value: number; grad: number; gradSeed4: number };
  fanOut: { x: number; grad: number }[];
  seeded: { value: number; grad: number };
}
interface SweepResult { label: string; point: number[]; value: number; analytic: number[]; numeric: number[] }
interface Sweep { backend: string; opNames: string[]; swept: { op: string; results: SweepResult[] }[]; unknown: string[] }
interface Parity {
  failed: boolean; numRuns: number; numSkips: number; seed: number; graphs: number; illConditioned: number;
  opCounts: Record<string, number>; counterexample: string | null; error: string | null;
}
interface VectorRun { name: string; value: number; grad: number[]; hv: number[]; numeric: number[] }
interface SuiteWindow {
  suiteReady?: boolean;
  suite: {
    workedExamples(backend: Backend): Promise<Worked>;
    opSweep(backend: Backend): Promise<Sweep>;
    dagParity(seed: number, numRuns: number, rtol: number): Promise<Parity>;
    vectorPrograms(backend: Backend): Promise<VectorRun[]>;
    replayBytes(bytes: number[], points: number[][]): Promise<{ loaded: Record<Backend, number[][]>; bytes: number[] }>;
    generatedSweeps(): Promise<Record<'loop' | 'straight' | 'branchy', { first: string; final: string; before: number[]; after: number[]; interpreted: number[]; steps: number }>>;
  };
}
interface DemoWindow {
  demo?: {
    ready: boolean;
    run(n: number): number[];
    reset(): void;
    pause(): void;
    setBackend(kind: Backend): void;
    state(): { backend: string; steps: number; params: Record<string, number> };
    mlp: {
      run(n: number): number[];
      reset(): void;
      stop(): void;
      setBackend(kind: Backend): void;
      setDataset(kind: 'moons' | 'spirals'): void;
      state(): { backend: string; dataset: string; steps: number; accuracy: number };
    };
  };
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

function normwiseError(g: number[], ref: number[]): number {
  const scale = Math.max(1, ...ref.map(Math.abs));
  return Math.max(0, ...g.map((v, k) => Math.abs(v - ref[k]!) / scale));
}

describe('browser suite', () => {
  it('finds Chromium, or says why the browser tests did not run', () => {
    reportMissingChromium('browser suite');
  });

  describe.runIf(chromiumFound())('in headless Chromium, against dist/', () => {
    let browser: Browser;
    let server: StaticServer;
    const open: CheckedPage[] = [];

    beforeAll(async () => {
      await init();
      [browser, server] = await Promise.all([
        launchChromium(),
        startStaticServer({
          '/': path.join(ROOT, 'test/browser/pages'),
          '/dist/': DIST,
          '/node_modules/fast-check/': path.join(ROOT, 'node_modules/fast-check'),
          '/node_modules/pure-rand/': path.join(ROOT, 'node_modules/pure-rand'),
        }),
      ]);
    });

    afterAll(async () => {
      await Promise.all(open.map((p) => p.close()));
      await browser?.close();
      await server?.close();
    });

    /** Opens `url` in a fresh context and waits until `ready` holds in the page. */
    async function load(url: string, ready: () => unknown): Promise<CheckedPage> {
      const p = await openPage(browser);
      open.push(p);
      await p.page.goto(url);
      try {
        await p.page.waitForFunction(ready, undefined, { timeout: 20_000, polling: 50 });
      } catch (e) {
        throw new Error(`${url} never became ready: ${p.errors.join('\n') || String(e)}`);
      }
      return p;
    }

    let suitePage: Promise<CheckedPage> | undefined;
    /** One suite page shared by the tests below (they only call pure functions on it). */
    function suite(): Promise<CheckedPage> {
      suitePage ??= load(`${server.url}/suite.html`, () => (window as unknown as SuiteWindow).suiteReady === true);
      return suitePage;
    }

    describe.each(['wasm', 'js'] as const)('worked examples (%s)', (backend) => {
      let r: Worked;
      beforeAll(async () => {
        const { page } = await suite();
        r = await page.evaluate((b) => (window as unknown as SuiteWindow).suite.workedExamples(b), backend);
      });

      it('runs on the backend asked for', () => {
        expect(r.backend).toBe(backend);
      });

      it('sigmoid 1/(1+exp(-x)) from primitives: 0.2350 at 0.5, 0.25 at 0', () => {
        const [half, zero] = r.sigmoid;
        expect(half!.value).toBeCloseTo(sigmoid(0.5), 15);
        expect(half!.grad).toBeCloseTo(sigmoid(0.5) * (1 - sigmoid(0.5)), 15);
        expect(half!.grad.toFixed(4)).toBe('0.2350');
        expect(zero!.value).toBe(0.5);
        expect(zero!.grad).toBe(0.25);
      });

      it('log(x1) + x1*x2 - sin(x2) at (2, 5) gives (5.5, 2 - cos 5)', () => {
        expect(r.logMulSin.value).toBeCloseTo(Math.log(2) + 10 - Math.sin(5), 13);
        expect(r.logMulSin.grad[0]).toBe(5.5);
        expect(r.logMulSin.grad[1]).toBeCloseTo(2 - Math.cos(5), 14);
        expect(r.logMulSin.gradient).toEqual(r.logMulSin.grad);
      });

      it('u = 3x, y = u^2 at x = 2: 36, and 144 with seed 4', () => {
        expect(r.chain).toEqual({ value: 36, grad: 36, gradSeed4: 144 });
      });

      it('y = x^2 + x has dy/dx = 2x + 1', () => {
        expect(r.fanOut).toEqual([-3, 0, 0.5, 7].map((x) => ({ x, grad: 2 * x + 1 })));
      });

      it('u = x^2, y = 3u at x = 1 with seed -2 gives -12', () => {
        expect(r.seeded).toEqual({ value: 3, grad: -12 });
      });
    });

    describe.each(['wasm', 'js'] as const)('every op vs central differences (%s)', (backend) => {
      let r: Sweep;
      beforeAll(async () => {
        const { page } = await suite();
        r = await page.evaluate((b) => (window as unknown as SuiteWindow).suite.opSweep(b), backend);
      });

      it('dist/ has the op table of src/, and the sweep covers every differentiable op', () => {
        expect(r.backend).toBe(backend);
        expect(r.opNames).toEqual([...OP_NAMES]);
        expect(r.unknown.filter((op) => !(op in NOT_SWEPT))).toEqual([]);
        expect(r.swept.map((s) => s.op).sort()).toEqual(OP_NAMES.filter((op) => !(op in NOT_SWEPT)).sort());
        for (const { op, results } of r.swept) expect(results.length, op).toBeGreaterThanOrEqual(2);
      });

      it('reverse-mode gradients match 6-point central differences', () => {
        const failures: string[] = [];
        for (const { op, results } of r.swept) {
          if (op === 'stopGradient') continue; // checked below: its gradient is 0 by definition
          for (const { label, point, analytic, numeric, value } of results) {
            const error = normwiseError(analytic, numeric);
            if (!(error <= FD_TOLERANCE) || !Number.isFinite(value)) {
              failures.push(`${label} at (${point}): value ${value}, analytic ${analytic}, differences ${numeric}, error ${error}`);
            }
          }
        }
        expect(failures).toEqual([]);
      });

      it('zero-gradient ops give exactly 0 (stopGradient passes its value through)', () => {
        for (const { op, results } of r.swept.filter((s) => ZERO_GRADIENT.has(s.op))) {
          for (const { label, point, analytic } of results) {
            expect(analytic.every((g) => g === 0), `${label} at (${point}): ${analytic}`).toBe(true);
          }
          if (op === 'stopGradient') for (const { point, value } of results) expect(value).toBe(point[0]);
        }
      });
    });

    it(`random graphs: wasm and JS agree on every value and adjoint within ${PARITY_RTOL} (seed ${SEED})`, async () => {
      const { page } = await suite();
      const r = await page.evaluate(
        ([seed, runs, rtol]) => (window as unknown as SuiteWindow).suite.dagParity(seed, runs, rtol),
        [SEED, GRAPH_RUNS, PARITY_RTOL] as const,
      );
      expect(r.error, `seed ${r.seed}, counterexample ${r.counterexample}`).toBeNull();
      expect(r.failed).toBe(false);
      expect(r.numRuns).toBe(GRAPH_RUNS);
      // Graphs excused as ill-conditioned (a last-bit difference amplified, see suite.js) must
      // stay rare, or the check would be checking little.
      expect(r.illConditioned).toBeLessThanOrEqual(GRAPH_RUNS / 100);
      const unused = Object.entries(r.opCounts).filter(([, n]) => n === 0).map(([op]) => op);
      expect(unused, 'ops never drawn into a graph').toEqual([]);
    });

    it('vector programs: every vector op against finite differences, wasm against JS, the page against Node', async () => {
      const { page } = await suite();
      const inPage = {
        wasm: await page.evaluate((b) => (window as unknown as SuiteWindow).suite.vectorPrograms(b), 'wasm' as const),
        js: await page.evaluate((b) => (window as unknown as SuiteWindow).suite.vectorPrograms(b), 'js' as const),
      };
      const inNode = { wasm: runVectorPrograms(tapegrad, 'wasm'), js: runVectorPrograms(tapegrad, 'js') };
      expect(inPage.wasm.map((r) => r.name)).toEqual(VECTOR_PROGRAMS.map((p) => p.name));
      VECTOR_PROGRAMS.forEach(({ name, exact }, k) => {
        const [w, j] = [inPage.wasm[k]!, inPage.js[k]!];
        for (const r of [w, j]) {
          expect(Number.isFinite(r.value), name).toBe(true);
          expect(normwiseError(r.grad, r.numeric), `${name}: gradient vs finite differences`).toBeLessThan(1e-6);
        }
        // The same engine gives the same bits in Node and in the page: always for the wasm core
        // (its own libm), and for the JS mode where no transcendental function is involved
        // (Chromium's V8 and Node's may differ in the last bit of Math.sin and friends).
        expect(inPage.wasm[k], `${name} (wasm): page vs Node`).toEqual(inNode.wasm[k]);
        if (exact) expect(inPage.js[k], `${name} (js): page vs Node`).toEqual(inNode.js[k]);
        else expect(normwiseError(inPage.js[k]!.grad, inNode.js[k]!.grad), `${name} (js): page vs Node`).toBeLessThan(1e-13);
        if (exact) {
          expect([w.value, w.grad, w.hv], `${name}: wasm vs JS, bit for bit`).toEqual([j.value, j.grad, j.hv]);
        } else {
          expect(Math.abs(w.value - j.value) / Math.max(1, Math.abs(j.value)), name).toBeLessThan(1e-12);
          expect(normwiseError(w.grad, j.grad), `${name}: wasm vs JS gradient`).toBeLessThan(1e-12);
          expect(normwiseError(w.hv, j.hv), `${name}: wasm vs JS H·v`).toBeLessThan(1e-12);
        }
      });
    });

    it('compiled tapes cross between Node and the page: bytes from either replay in the other, on both backends', async () => {
      const { page } = await suite();
      // The same function as replayBytes in suite.js.
      const f = (x: Var[]): Var => x[0]!.mul(x[1]!).sin().add(x[0]!.exp().mul(x[2]!)).sub(x[2]!.square().log1p());
      const points = [[0.3, -1.2, 0.7], [1.5, 0.25, -2], [-0.8, 2, 0.1]];
      const inNode = compile(f, { inputs: 3, backend: 'js', at: points[0] });
      const expected = points.map((x) => {
        const [x0, x1, x2] = x as [number, number, number];
        const c = Math.cos(x0 * x1);
        return [c * x1 + Math.exp(x0) * x2, c * x0, Math.exp(x0) - (2 * x2) / (1 + x2 * x2)];
      });
      const r = await page.evaluate(([bytes, pts]) => (window as unknown as SuiteWindow).suite.replayBytes(bytes, pts), [Array.from(inNode.toBytes()), points] as const);
      for (const backend of ['wasm', 'js'] as const) {
        r.loaded[backend].forEach((g, k) => expect(normwiseError(g, expected[k]!), `${backend} point ${k}`).toBeLessThan(1e-14));
      }
      const fromPage = fromBytes(Uint8Array.from(r.bytes), { backend: 'wasm' });
      points.forEach((x, k) => expect(normwiseError(Array.from(fromPage.gradient(x)), expected[k]!)).toBeLessThan(1e-14));
      expect(Uint8Array.from(r.bytes)).toEqual(inNode.toBytes());
    });

    it('generated replay sweeps on the main thread: installed (compiled in the background where needed), bit-identical to the interpreter', async () => {
      const { page } = await suite();
      const r = await page.evaluate(() => (window as unknown as SuiteWindow).suite.generatedSweeps());
      expect(Object.keys(r)).toEqual(['loop', 'straight', 'branchy']);
      // The branchy loss's plan has more steps than a dispatcher calls in turn (TABLE_STEPS).
      expect(r.branchy.steps).toBeGreaterThan(2048);
      for (const [name, run] of Object.entries(r)) {
        expect(['pending', 'active'], name).toContain(run.first);
        expect(run.final, name).toBe('active');
        expect(run.before.length, name).toBe(name === 'branchy' ? 18 : 12);
        run.interpreted.forEach((g, k) => {
          expect(Object.is(run.before[k], g), `${name} before, component ${k}`).toBe(true);
          expect(Object.is(run.after[k], g), `${name} after, component ${k}`).toBe(true);
        });
        console.log(`browser: generated sweeps for the ${name} function were '${run.first}' right after compile()`);
      }
    });

    it('the page saw no errors and fetched nothing off-host', async () => {
      const { errors } = await suite();
      expect(errors).toEqual([]);
    });

    // A browser probe: a chunk that failed to download once (a 503) failed init(), createTape and
    // every later call for the page's life, though the browser fetches a failed import again, and
    // the optional generator's failure took the core down with it. Chromium 150 keeps a failed import
    // for the page (156 fetches it again): a second failure is imported afresh under a query
    // string. Each chunk fails twice here, so that either browser takes that path.
    it('a chunk that fails to download once is fetched again: the core by the next init(), the generator by the next recording', async () => {
      const retried: string[] = [];
      const failTwice = async (p: CheckedPage, pattern: string): Promise<void> => {
        let failed = 0;
        await p.page.route(pattern, (route) => {
          if (failed === 2) return route.continue();
          failed++;
          return route.fulfill({ status: 503, body: 'busy' });
        });
        p.page.on('request', (request) => {
          if (request.url().includes('?retry=')) retried.push(new URL(request.url()).pathname);
        });
      };
      const core = await openPage(browser);
      open.push(core);
      await failTwice(core, '**/dist/wasm/core*.generated.js');
      await core.page.goto(`${server.url}/blank.html`);
      // As source text: vitest rewrites an import() written in this file for Node.
      const c = await core.page.evaluate(`(async () => {
        const m = await import('/dist/index.js');
        const out = {};
        await m.init().then(() => (out.first = 'resolved'), (e) => (out.first = [e.name, e.message]));
        try { m.createTapeSync(); } catch (e) { out.sync = e.message; }
        await m.init();
        const tape = await m.createTape();
        const x = tape.variable(2);
        out.grad = tape.gradient(x.square(), [x])[0];
        return out;
      })()`) as Record<string, unknown>;
      expect(c.first).toEqual(['TapegradError', expect.stringMatching(/^the wasm core could not be loaded \(.*\); the next init\(\) or createTape tries again/)]);
      expect(c.sync).toMatch(/not loaded yet: await init\(\).*\(the last load failed: the wasm core could not be loaded/);
      expect(c.grad).toBe(4);
      expect(retried).toEqual([expect.stringMatching(/^\/dist\/wasm\/core(-simd)?\.generated\.js$/)]);
      const generator = await openPage(browser);
      open.push(generator);
      await failTwice(generator, '**/dist/wasm/codegen/index.js');
      await generator.page.goto(`${server.url}/blank.html`);
      const g = await generator.page.evaluate(`(async () => {
        const m = await import('/dist/index.js');
        await m.init();
        const tape = m.createTapeSync();
        const x = tape.variable(3);
        const f = m.compile((v) => v[0].sin().mul(v[1]), { inputs: 2 });
        f.value([1, 2]);
        const first = [f.generatedSweeps, f.generatedSweepsReason];
        await f.whenGenerated();
        return { grad: tape.gradient(x.square(), [x])[0], first, after: f.generatedSweeps };
      })()`);
      expect(g).toEqual({ grad: 6, first: ['pending', expect.stringMatching(/still loading/)], after: 'active' });
      expect(retried.slice(1)).toEqual(['/dist/wasm/codegen/index.js']);
    });

    it("without WebAssembly: 'auto' falls back to JS, the default refuses with a clear error", async () => {
      const p = await load(`${server.url}/nowasm.html`, () => (window as unknown as { result?: unknown }).result !== undefined);
      const r = await p.page.evaluate(() => (window as unknown as { result: Record<string, unknown> }).result);
      expect(r.error).toBeUndefined();
      expect(r.wasmGlobal).toBe('undefined');
      const auto = r.auto as { backend: string; grad: number[] };
      expect(auto.backend).toBe('js');
      expect(auto.grad[0]).toBe(5.5);
      expect(auto.grad[1]).toBeCloseTo(2 - Math.cos(5), 14);
      const transforms = r.autoTransforms as { grad: number[]; compiled: number[]; compiledBackend: string };
      expect(transforms.grad).toEqual(auto.grad);
      expect(transforms.compiled).toEqual(auto.grad);
      expect(transforms.compiledBackend).toBe('js');
      const fallback = r.default as { threw: boolean; isTapegradError: boolean; name: string; message: string };
      expect(fallback.threw, 'the default backend must not fall back').toBe(true);
      expect(fallback, `${fallback.name}: ${fallback.message}`).toMatchObject({ isTapegradError: true });
      expect(fallback.message).toMatch(/WebAssembly/);
      expect(fallback.message).toMatch(/'js'|'auto'/);
    });

    it("under a Content-Security-Policy without 'wasm-unsafe-eval': init() and the default name the directive, 'auto' falls back to JS", async () => {
      const p = await load(`${server.url}/csp.html`, () => (window as unknown as { result?: unknown }).result !== undefined);
      const r = await p.page.evaluate(() => (window as unknown as { result: Record<string, unknown> }).result);
      expect(r.error).toBeUndefined();
      expect(r.wasmGlobal).toBe('object');
      for (const key of ['init', 'default', 'sync']) {
        const refused = r[key] as { threw: boolean; isTapegradError: boolean; code: string; message: string };
        expect(refused.threw, `${key} must refuse`).toBe(true);
        expect(refused, refused.message).toMatchObject({ isTapegradError: true, code: 'INVALID_ARGUMENT' });
        expect(refused.message).toContain("'wasm-unsafe-eval'");
        expect(refused.message).not.toMatch(/await init\(\)/);
      }
      const auto = r.auto as { backend: string; grad: number[] };
      expect(auto.backend).toBe('js');
      expect(auto.grad[0]).toBe(5.5);
      expect(auto.grad[1]).toBeCloseTo(2 - Math.cos(5), 14);
      expect(r.autoSync).toEqual({ tape: 'js', grad: auto.grad, compiled: auto.grad, compiledBackend: 'js' });
      expect(r.again).toEqual({ backend: 'js', value: 9 });
    });

    describe('demo page (examples/demo)', () => {
      let demo: { url: string; close(): Promise<void> };
      beforeAll(async () => {
        demo = await startDemoServer(0);
      });
      afterAll(async () => {
        await demo?.close();
      });

      it('answers a malformed path with a 400 and keeps serving', async () => {
        expect((await fetch(`${demo.url}/%E0%A4%A`)).status).toBe(400);
        expect((await fetch(`${demo.url}/`)).status).toBe(200);
      });

      it('fits the curve: 100 steps lower the loss on both backends, and draws it', async () => {
        const p = await load(`${demo.url}/`, () => (window as unknown as DemoWindow).demo?.ready === true);
        const run = (backend: Backend): Promise<number[]> => p.page.evaluate((b) => {
          const d = (window as unknown as DemoWindow).demo!;
          d.pause();
          d.setBackend(b);
          d.reset();
          return d.run(100);
        }, backend);

        const js = await run('js');
        const wasm = await run('wasm'); // last, so the screenshot shows the wasm run
        for (const losses of [wasm, js]) {
          expect(losses).toHaveLength(100);
          expect(losses.every(Number.isFinite)).toBe(true);
          // From the start (loss ≈ 1) to near the noise floor (σ² = 0.0625).
          expect(losses[99]!).toBeLessThan(losses[0]! / 5);
          expect(Math.min(...losses.slice(90))).toBeLessThan(Math.min(...losses.slice(0, 10)));
        }
        // Same arithmetic on both engines up to last-bit differences in sin.
        for (let i = 0; i < 100; i++) expect(Math.abs(wasm[i]! - js[i]!)).toBeLessThanOrEqual(1e-9 * js[i]!);

        const state = await p.page.evaluate(() => (window as unknown as DemoWindow).demo!.state());
        expect(state).toMatchObject({ backend: 'wasm', steps: 100 });
        for (const id of ['#time-wasm', '#time-js']) await expect(p.page.textContent(id)).resolves.toMatch(/\d+ µs\/step/);

        await mkdir(path.join(ROOT, 'test-artifacts'), { recursive: true });
        await p.page.screenshot({ path: path.join(ROOT, 'test-artifacts/demo.png'), fullPage: true });
        expect(p.errors).toEqual([]);
      });

      it('trains the MLP classifier with vector ops: 200 steps lower the loss on both backends', async () => {
        const p = await load(`${demo.url}/`, () => (window as unknown as DemoWindow).demo?.ready === true);
        const run = (backend: Backend): Promise<{ losses: number[]; accuracy: number }> => p.page.evaluate((b) => {
          const m = (window as unknown as DemoWindow).demo!.mlp;
          m.stop();
          m.setDataset('moons');
          m.setBackend(b);
          m.reset();
          return { losses: m.run(200), accuracy: m.state().accuracy };
        }, backend);

        const js = await run('js');
        const wasm = await run('wasm');
        for (const { losses, accuracy } of [wasm, js]) {
          expect(losses).toHaveLength(200);
          expect(losses.every(Number.isFinite)).toBe(true);
          // From ln 2-ish at the start to a clean separation (about 0.012 by step 200).
          expect(losses[199]!).toBeLessThan(losses[0]! / 20);
          expect(accuracy).toBeGreaterThanOrEqual(0.98);
        }
        for (let i = 0; i < 200; i++) expect(Math.abs(wasm.losses[i]! - js.losses[i]!)).toBeLessThanOrEqual(1e-9 * js.losses[i]!);
        for (const id of ['#mlp-time-wasm', '#mlp-time-js']) await expect(p.page.textContent(id)).resolves.toMatch(/\d+ µs\/step/);
        expect(p.errors).toEqual([]);
      });

      // An examples probe: a run of about 125,000 steps spread its loss history into Math.min's
      // arguments, overflowed the stack, and stopped the panel for good.
      it('draws a loss curve of 300,000 steps, two points a pixel at most', async () => {
        const p = await load(`${demo.url}/`, () => (window as unknown as DemoWindow).demo?.ready === true);
        // As source text: the test runner would rewrite a dynamic import in a function.
        const drawn = (await p.page.evaluate(`(async () => {
          const { lossCurve } = await import('./canvas.js');
          const ctx = document.createElement('canvas').getContext('2d');
          let lines = 0;
          const lineTo = ctx.lineTo.bind(ctx);
          ctx.lineTo = (x, y) => { lines++; lineTo(x, y); };
          lossCurve(ctx, { x: 0, y: 0, w: 300, h: 200 }, Array.from({ length: 300000 }, (_, i) => 1 / (1 + i)));
          return lines;
        })()`)) as number;
        expect(drawn).toBeGreaterThan(300);
        expect(drawn).toBeLessThanOrEqual(2 * 300 + 1);
        expect(p.errors).toEqual([]);
      });
    });
  });
});
