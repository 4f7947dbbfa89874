// Bundler smoke tests: a tiny app importing 'tapegrad' by name (test/browser/fixtures/app.js),
// bundled by Vite, esbuild and webpack with no wasm-specific configuration, then loaded in
// headless Chromium. The app lives in a temp dir whose node_modules/tapegrad links to this
// package, so resolution goes through package.json "exports" exactly as for a user.
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as esbuild from 'esbuild';
import type { Browser } from 'playwright-core';
import { build as viteBuild } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import webpack from 'webpack';
import {
  ROOT, chromiumFound, launchChromium, openPage, reportMissingChromium, startStaticServer, type StaticServer,
} from './browser/harness.ts';

const FIXTURES = path.join(ROOT, 'test/browser/fixtures');

type Bundle = (app: string, out: string) => Promise<void>;

// Each is the bundler's plain API with only entry and output named. Vite gets base './' so the
// page works from a sub-path of the test server; nothing mentions wasm.
const BUNDLERS: Record<string, Bundle> = {
  async vite(app, out) {
    await viteBuild({
      root: app, configFile: false, logLevel: 'warn', base: './',
      build: { outDir: out, emptyOutDir: true },
    });
  },
  async esbuild(app, out) {
    await esbuild.build({
      entryPoints: [path.join(app, 'app.js')], outdir: out, bundle: true, format: 'esm', minify: true, logLevel: 'warning',
    });
    await copyFile(path.join(app, 'index.html'), path.join(out, 'index.html'));
  },
  async webpack(app, out) {
    await new Promise<void>((resolve, reject) => {
      webpack({
        mode: 'production', context: app, entry: './app.js', output: { path: out, filename: 'app.js' },
      }, (err, stats) => {
        if (err) reject(err);
        else if (stats?.hasErrors()) reject(new Error(stats.toString('errors-only')));
        else resolve();
      });
    });
    await copyFile(path.join(app, 'index.html'), path.join(out, 'index.html'));
  },
};

interface AppResult {
  error?: string;
  wasm: { backend: string; value: number; grad: number[]; errorName: string };
  js: { backend: string; value: number; grad: number[]; errorName: string };
}

describe('bundlers', () => {
  let tmp: string;
  let app: string;

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tapegrad-bundlers-'));
    app = path.join(tmp, 'app');
    await mkdir(path.join(app, 'node_modules'), { recursive: true });
    await symlink(ROOT, path.join(app, 'node_modules/tapegrad'), 'dir');
    await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    for (const f of ['app.js', 'index.html']) await copyFile(path.join(FIXTURES, f), path.join(app, f));
  });

  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('finds Chromium for the bundled apps, or says why they were not run', () => {
    reportMissingChromium('bundler browser checks');
  });

  describe.each(Object.keys(BUNDLERS))('%s', (name) => {
    const out = (): string => path.join(tmp, `out-${name}`);

    it('bundles the app with zero configuration for wasm, and emits no separate .wasm file', async () => {
      await BUNDLERS[name]!(app, out());
      const files = await readdir(out(), { recursive: true });
      expect(files).toContain('index.html');
      expect(files.filter((f) => f.endsWith('.wasm'))).toEqual([]);
    });

    describe.runIf(chromiumFound())('in headless Chromium', () => {
      let browser: Browser;
      let server: StaticServer;
      beforeAll(async () => {
        [browser, server] = await Promise.all([launchChromium(), startStaticServer({ '/': out() })]);
      });
      afterAll(async () => {
        await browser?.close();
        await server?.close();
      });

      it('computes the gradient of log(x1) + x1*x2 - sin(x2) at (2, 5) on both backends', async () => {
        const { page, errors, close } = await openPage(browser);
        try {
          await page.goto(`${server.url}/index.html`);
          await page.waitForFunction(() => (window as unknown as { __result?: unknown }).__result !== undefined, undefined, { timeout: 20_000 })
            .catch((e: unknown) => { throw new Error(`the ${name} bundle never reported: ${errors.join('\n') || String(e)}`); });
          const r = await page.evaluate(() => (window as unknown as { __result: AppResult }).__result);
          expect(r.error).toBeUndefined();
          for (const backend of ['wasm', 'js'] as const) {
            expect(r[backend].backend).toBe(backend);
            expect(r[backend].value).toBeCloseTo(Math.log(2) + 10 - Math.sin(5), 13);
            expect(r[backend].grad[0]).toBe(5.5);
            expect(r[backend].grad[1]).toBeCloseTo(2 - Math.cos(5), 14);
            // Minified, errors still say their class (a browser probe saw "Y", "r" and "a").
            expect(r[backend].errorName).toBe('StaleHandleError');
          }
          expect(await page.title()).toBe(`grad ${r.wasm.grad.join(' ')}`);
          expect(errors).toEqual([]);
        } finally {
          await close();
        }
      });
    });
  });
});
