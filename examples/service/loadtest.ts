// `npm run loadtest`: drives the gradient service with autocannon, one service process at a time
// (main thread, 1 worker, N workers; wasm and the JS mode), and prints requests/s and p50/p99
// latency per configuration and endpoint, the scaling from 1 to N workers, and the memory of
// the service over 10^5 requests. Writes bench/results/loadtest.json.
//   node --import tsx examples/service/loadtest.ts [--duration=8] [--connections=16] [--requests=100000]
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const DURATION = Number(arg('duration') ?? 8);
const CONNECTIONS = Number(arg('connections') ?? 16);
const MEMORY_REQUESTS = Number(arg('requests') ?? 100_000);
const CORES = availableParallelism();
const OUT = arg('out') ?? fileURLToPath(new URL('../../bench/results/loadtest.json', import.meta.url));
const SERVE = fileURLToPath(new URL('./serve.ts', import.meta.url));

function option(k: number): Record<string, number> {
  return { spot: 80 + (k % 41), strike: 100, maturity: 0.25 + (k % 8) * 0.25, rate: 0.03, volatility: 0.1 + (k % 5) * 0.05 };
}

/** What each request asks, sized so one request is a few milliseconds of differentiation. */
const SCENARIOS = {
  'options x100': { path: '/v1/options', body: JSON.stringify({ options: Array.from({ length: 100 }, (_, k) => option(k)) }) },
  'mc 20k paths': { path: '/v1/mc', body: JSON.stringify({ spot: 100, strike: 105, maturity: 1, rate: 0.03, volatility: 0.25, paths: 20_000, seed: 7 }) },
  logreg: { path: '/v1/logreg', body: JSON.stringify({ weights: [0.5, -0.25, 0.1, 0, 0.3, -0.1, 0.2, 0.05, 0.1] }) },
} as const;
type Scenario = keyof typeof SCENARIOS;

interface Service { url: string; child: ChildProcess }

function startService(workers: number, backend: string, port: number): Promise<Service> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', SERVE, `--workers=${workers}`, `--backend=${backend}`, `--port=${port}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /on (http:\/\/\S+)/.exec(text);
      if (match) resolve({ url: match[1]!, child });
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before it listened: ${text}`)));
  });
}

async function stopService(service: Service): Promise<void> {
  const exited = new Promise<number | null>((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  const code = await exited;
  if (code !== 0) throw new Error(`the service did not shut down cleanly (exit code ${code})`);
}

function fire(url: string, scenario: Scenario, limits: { duration?: number; amount?: number }) {
  const { path, body } = SCENARIOS[scenario];
  return autocannon({ url: url + path, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections: CONNECTIONS, ...limits });
}

async function memory(url: string): Promise<{ rss: number; heapUsed: number; external: number }> {
  const reply = await fetch(`${url}/healthz?gc=1`);
  const { memory: m } = (await reply.json()) as { memory: { rss: number; heapUsed: number; external: number } };
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
}

interface Measurement {
  backend: string; workers: number; scenario: Scenario;
  requestsPerSecond: number; p50: number; p99: number; p99OverP50: number; errors: number; non2xx: number;
}

const configs = [...new Set([0, 1, CORES])];
const measurements: Measurement[] = [];
let port = 18_400;
for (const backend of ['wasm', 'js']) {
  for (const workers of configs) {
    const service = await startService(workers, backend, port++);
    try {
      for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
        await fire(service.url, scenario, { duration: 2 }); // warm-up: JIT, pools, buffers
        const r = await fire(service.url, scenario, { duration: DURATION });
        const m: Measurement = {
          backend, workers, scenario, requestsPerSecond: r.requests.average, p50: r.latency.p50, p99: r.latency.p99,
          p99OverP50: r.latency.p99 / Math.max(r.latency.p50, 1), errors: r.errors + r.timeouts, non2xx: r.non2xx,
        };
        measurements.push(m);
        console.log(`${backend} ${workers === 0 ? 'main thread' : `${workers} worker(s)`} ${scenario}: ${m.requestsPerSecond.toFixed(0)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, errors ${m.errors}, non-2xx ${m.non2xx}`);
      }
    } finally {
      await stopService(service);
    }
  }
}

// Memory over many requests: N workers, wasm, the option endpoint; RSS and the main thread's heap
// after a collection, at every tenth of the run.
const service = await startService(CORES, 'wasm', port++);
const samples: { requests: number; rss: number; heapUsed: number; external: number }[] = [];
let errors = 0;
try {
  await fire(service.url, 'options x100', { amount: MEMORY_REQUESTS / 10 });
  samples.push({ requests: 0, ...(await memory(service.url)) });
  for (let k = 1; k <= 10; k++) {
    const r = await fire(service.url, 'options x100', { amount: MEMORY_REQUESTS / 10 });
    errors += r.errors + r.timeouts + r.non2xx;
    samples.push({ requests: (k * MEMORY_REQUESTS) / 10, ...(await memory(service.url)) });
  }
} finally {
  await stopService(service);
}
const MB = (b: number): string => (b / 2 ** 20).toFixed(1);
console.log(`memory over ${MEMORY_REQUESTS} requests (${CORES} workers, wasm; after warm-up of ${MEMORY_REQUESTS / 10}; errors ${errors}):`);
console.log(`  RSS MB     ${samples.map((s) => MB(s.rss)).join(' ')}`);
console.log(`  heap MB    ${samples.map((s) => MB(s.heapUsed)).join(' ')}`);

const rate = (backend: string, workers: number, scenario: Scenario): number =>
  measurements.find((m) => m.backend === backend && m.workers === workers && m.scenario === scenario)?.requestsPerSecond ?? NaN;
console.log(`\n${CORES} cores (${cpus()[0]?.model}), load average ${loadavg()[0]!.toFixed(2)}, ${CONNECTIONS} connections, ${DURATION} s per run`);
console.log('| backend | endpoint | main thread req/s | 1 worker req/s | ' + `${CORES} workers req/s | p50 / p99 ms (main, 1, ${CORES}) | scaling 1 → ${CORES} workers (efficiency) |`);
console.log('| --- | --- | ---: | ---: | ---: | --- | ---: |');
for (const backend of ['wasm', 'js']) {
  for (const scenario of Object.keys(SCENARIOS) as Scenario[]) {
    const lat = configs.map((w) => measurements.find((m) => m.backend === backend && m.workers === w && m.scenario === scenario)!).map((m) => `${m.p50}/${m.p99}`).join(', ');
    const one = rate(backend, 1, scenario), n = rate(backend, CORES, scenario);
    console.log(`| ${backend} | ${scenario} | ${rate(backend, 0, scenario).toFixed(0)} | ${one.toFixed(0)} | ${n.toFixed(0)} | ${lat} | ${(n / one).toFixed(2)}× (${(n / one / CORES).toFixed(2)}) |`);
  }
}
writeFileSync(OUT, JSON.stringify({
  generated: new Date().toISOString(), machine: { cpu: cpus()[0]?.model, cores: CORES, node: process.version }, loadAverage: loadavg(),
  connections: CONNECTIONS, durationSeconds: DURATION, measurements, memory: { requests: MEMORY_REQUESTS, errors, samples },
}, null, 2) + '\n');
console.log(`wrote ${OUT}`);
