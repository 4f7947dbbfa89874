// Shared by the browser and bundler suites: find and launch Chromium, serve files from localhost,
// open pages that record their errors and refuse to reach past 127.0.0.1 (so "works offline" is
// checked, not assumed).
import { accessSync, constants, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const DIST = path.join(ROOT, 'dist');

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const BROWSER_REQUIRED = Boolean(process.env.TAPEGRAD_REQUIRE_BROWSER);

export function chromiumFound(): boolean {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return statSync(CHROMIUM_PATH).isFile();
  } catch {
    return false;
  }
}

export const CHROMIUM_MISSING =
  `Chromium not found at ${CHROMIUM_PATH}; install with apt-get install -y chromium ` +
  '(or point CHROMIUM_PATH at a Chromium binary)';

/** Call from a plain test: passes with a notice, or fails when the browser suite is required. */
export function reportMissingChromium(suite: string): void {
  if (chromiumFound()) return;
  if (BROWSER_REQUIRED) {
    throw new Error(`${suite}: TAPEGRAD_REQUIRE_BROWSER is set but ${CHROMIUM_MISSING}`);
  }
  console.warn(`${suite} skipped: ${CHROMIUM_MISSING}`);
}

// --no-sandbox because CI runs as root. Playwright adds a fresh temporary --user-data-dir itself
// (it refuses one in args), so every launch starts from an empty profile.
const CHROMIUM_ARGS = [
  '--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true, timeout: 60_000 });
}

export interface CheckedPage {
  page: Page;
  /** Uncaught exceptions, console errors and blocked off-host requests, in order. */
  errors: string[];
  close(): Promise<void>;
}

/** A page in its own context: nothing cached from earlier tests, nothing fetched from outside
 *  127.0.0.1 (such requests are aborted and listed in `errors`). */
export async function openPage(browser: Browser, viewport = { width: 1000, height: 760 }): Promise<CheckedPage> {
  const context = await browser.newContext({ viewport });
  const errors: string[] = [];
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || url.protocol === 'data:' || url.protocol === 'blob:') return route.continue();
    errors.push(`blocked off-host request: ${url.href}`);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.stack ?? e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
  });
  return { page, errors, close: () => context.close() };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

/**
 * Serves directories under URL prefixes (`{ '/': pages, '/dist/': dist }`, longest prefix wins)
 * on 127.0.0.1 at an ephemeral port. GET/HEAD only; paths that resolve outside their directory
 * are 404, as are directories without index.html.
 */
export async function startStaticServer(mounts: Record<string, string>): Promise<StaticServer> {
  const table = Object.entries(mounts)
    .map(([prefix, dir]) => [prefix.endsWith('/') ? prefix : `${prefix}/`, path.resolve(dir)] as const)
    .sort((x, y) => y[0].length - x[0].length);
  const server = createServer((req, res) => {
    void (async () => {
      const pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://127.0.0.1').pathname);
      const mount = table.find(([prefix]) => pathname.startsWith(prefix));
      let file = mount ? path.resolve(mount[1], `.${pathname.slice(mount[0].length - 1)}`) : '';
      if (mount && file !== mount[1] && !file.startsWith(mount[1] + path.sep)) file = '';
      if (file && pathname.endsWith('/')) file = path.join(file, 'index.html');
      if (!file || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(file ? 405 : 404).end();
        return;
      }
      try {
        const body = await readFile(file);
        res.writeHead(200, {
          'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
          'content-length': body.length,
          'cache-control': 'no-store',
        });
        res.end(req.method === 'HEAD' ? undefined : body);
      } catch {
        res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${pathname}`);
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
