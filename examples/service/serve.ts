// `npm run serve [-- --workers=2 --backend=wasm --port=8080 --host=127.0.0.1 --grace-ms=5000]`
// (or `--port 8080`): starts the gradient service (examples/service/app.ts) and stops it
// gracefully on SIGINT or SIGTERM: no new connections, the requests in flight are answered, then
// the workers stop. A client still sending its body after --grace-ms gets a 503 instead.
import { availableParallelism } from 'node:os';
import { startService } from './app.ts';

const FLAGS = ['workers', 'backend', 'port', 'host', 'grace-ms'];

/** A usage error: one line, no stack, and the exit code of a bad command line. */
function fail(message: string, code = 2): never {
  console.error(`serve: ${message}`);
  process.exit(code);
}

function parseFlags(args: string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let k = 0; k < args.length; k++) {
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(args[k]!);
    if (!match) fail(`unexpected argument ${JSON.stringify(args[k])}; the options are ${FLAGS.map((f) => `--${f}`).join(', ')}`);
    const [, name, inline] = match;
    if (!FLAGS.includes(name!)) fail(`unknown option --${name}; the options are ${FLAGS.map((f) => `--${f}`).join(', ')}`);
    const value = inline ?? args[++k];
    if (value === undefined) fail(`--${name} needs a value`);
    flags.set(name!, value);
  }
  return flags;
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
const shutdownGraceMs = integer(flags.get('grace-ms') ?? '5000', '--grace-ms');

const service = await startService({ workers, backend, port, host, shutdownGraceMs }).catch((error: NodeJS.ErrnoException) => {
  if (error.code === 'EADDRINUSE') fail(`port ${port} on ${host} is in use; stop what listens there or choose another --port`, 1);
  if (error.syscall === 'listen') fail(`cannot listen on ${host}:${port}: ${error.message}`, 1);
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
