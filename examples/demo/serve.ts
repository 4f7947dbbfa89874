// Serves the demo page and the built dist/ on localhost: `npm run demo`, then open the printed
// URL. Nothing is fetched from anywhere else, so the demo works offline. PORT=... picks the port.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const DEMO = fileURLToPath(new URL('.', import.meta.url));
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** Resolves a URL path to a file under the demo folder or dist/, or null (never outside them). */
function resolveFile(pathname: string): string | null {
  const [root, rest] = pathname.startsWith('/dist/') ? [DIST, pathname.slice(6)] : [DEMO, pathname.slice(1)];
  const file = path.resolve(root, rest || 'index.html');
  return file.startsWith(root) ? file : null;
}

export async function startDemoServer(port = 0, host = '127.0.0.1'): Promise<{ url: string; close(): Promise<void> }> {
  if (!existsSync(path.join(DIST, 'index.js'))) throw new Error('dist/ is missing: run `npm run build` first');
  const server = createServer((req, res) => {
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
    } catch {
      // A malformed escape (%E0%A4%A) threw out of the handler and took the server down.
      res.writeHead(400).end();
      return;
    }
    const file = resolveFile(pathname);
    const type = file && TYPES[path.extname(file)];
    if (!file || !type) {
      res.writeHead(404).end();
      return;
    }
    readFile(file).then(
      (body) => res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  // One line for a bad PORT or a port in use, as the service's serve.ts says them (a raw stack
  // before: an examples probe).
  const port = Number(process.env.PORT ?? 8000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`tapegrad demo: PORT must be an integer from 0 to 65535, got ${JSON.stringify(process.env.PORT)}`);
    process.exit(2);
  }
  try {
    const { url } = await startDemoServer(port);
    console.log(`tapegrad demo: ${url}/  (Ctrl+C to stop)`);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    console.error(`tapegrad demo: ${code === 'EADDRINUSE' ? `port ${port} is in use; stop what listens there or choose another PORT` : (error as Error).message}`);
    process.exit(1);
  }
}
