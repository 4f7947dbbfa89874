// `npm run serve [-- --workers=2 --backend=wasm --port=8080]`: starts the gradient service
// (examples/service/app.ts) and stops it gracefully on SIGINT or SIGTERM: no new connections,
// the requests in flight are answered, then the workers stop.
import { availableParallelism } from 'node:os';
import { startService } from './app.ts';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const workers = Number(arg('workers') ?? availableParallelism());
const backend = arg('backend') ?? 'wasm';
if (!Number.isInteger(workers) || workers < 0) throw new Error(`--workers must be an integer >= 0, got ${arg('workers')}`);
if (backend !== 'wasm' && backend !== 'js') throw new Error(`--backend must be wasm or js, got ${backend}`);

const service = await startService({ workers, backend, port: Number(arg('port') ?? process.env.PORT ?? 8080), host: arg('host') ?? '127.0.0.1' });
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
