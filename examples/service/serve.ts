// `npm run serve [-- --workers=2 --backend=wasm --port=8080 --host=127.0.0.1 --grace-ms=5000]`
// (or `--port 8080`; node:util's parseArgs reads them): starts the gradient service
// (examples/service/app.ts) and stops it gracefully on SIGINT or SIGTERM: no new connections, the
// requests in flight are answered, then the workers stop. A client still sending its body after --grace-ms gets a 503 instead.
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { startService } from './app.ts';

const FLAGS = ['workers', 'backend', 'port', 'host', 'grace-ms'] as const;

/** A usage error: one line, no stack, and the exit code of a bad command line. */
function fail(message: string, code = 2): never {
  console.error(`serve: ${message}`);
  process.exit(code);
}

// Node's own parser: `--name=value` and `--name value`, unknown options and stray arguments refused.
function parseFlags(args: string[]): Map<string, string> {
  try {
    const { values } = parseArgs({ args, strict: true, allowPositionals: false, options: Object.fromEntries(FLAGS.map((f) => [f, { type: 'string' }])) });
    return new Map(Object.entries(values).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch (error) {
    return fail(`${(error as Error).message.split('\n')[0]}; the options are ${FLAGS.map((f) => `--${f}`).join(', ')}`);
  }
}

function integer(text: string, name: string, max?: number): number {
  // Number() would take '', ' 8', '0x10' and '1e3'.
  if (!/^\d+$/.test(text) || Number(text) > (max ?? Number.MAX_SAFE_INTEGER)) {
    fail(`${name} must be an integer ${max === undefined ? '>= 0' : `in [0, ${max}]`}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

const flags = parseFlags(process.argv.slice(2));
const workers = integer(flags.get('workers') ?? String(availableParallelism()), '--workers');
const backend = flags.get('backend') ?? 'wasm';
if (backend !== 'wasm' && backend !== 'js') fail(`--backend must be wasm or js, got ${JSON.stringify(backend)}`);
const portText = flags.get('port') ?? process.env.PORT;
const port = portText === undefined ? 8080 : integer(portText, flags.has('port') ? '--port' : 'PORT', 65535);
const host = flags.get('host') ?? '127.0.0.1';
// setTimeout takes at most 2^31 - 1 ms, and made a longer grace 1 ms (a probe).
const shutdownGraceMs = integer(flags.get('grace-ms') ?? '5000', '--grace-ms', 2 ** 31 - 1);

const service = await startService({ workers, backend, port, host, shutdownGraceMs }).catch((error: NodeJS.ErrnoException) => {
  if (error.code === 'EADDRINUSE') fail(`port ${port} on ${host} is in use; stop what listens there or choose another --port`, 1);
  if (error.syscall === 'listen') fail(`cannot listen on ${host}:${port}: ${error.message}`, 1);
  // A host that names no address is a bad value (it threw with a stack: a probe).
  if (error.syscall === 'getaddrinfo') fail(`--host ${JSON.stringify(host)} is not an address of this machine or a name that resolves (${error.code})`);
  throw error;
});
console.log(`tapegrad service on ${service.url} (${workers === 0 ? 'main thread' : `${workers} worker${workers > 1 ? 's' : ''}`}, ${backend})`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`${signal}: finishing the requests in flight`);
    service.close().then(() => process.exit(0), (error) => {
      console.error(error);
      process.exit(1);
    });
  });
}
