// README's worker-pool and service figures, as markdown, from the results files the two
// measuring scripts write: bench/pool.ts (bench/results/pool.json) and
// examples/service/loadtest.ts (bench/results/loadtest.json). scripts/update-readme.ts puts
// them between README's pool-results and loadtest-results markers.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface Machine { cpu: string; cores: number; node: string }
interface PoolResults {
  generated: string; machine: Machine; loadAverage: number[]; rows: number; runs: number;
  results: { backend: string; where: string; ms: number; rowsPerSecond: number; speedup: number | null; efficiency: number | null }[];
  startup: { threads: number; registerToFirstResultMs: number; workerLoadMs: number[]; generatedSweeps: string[] }[];
}
interface LoadtestResults {
  generated: string; machine: Machine; loadAverage: number[]; connections: number; durationSeconds: number;
  measurements: { backend: string; workers: number; scenario: string; requestsPerSecond: number; p50: number; p99: number; errors: number; non2xx: number }[];
  memory?: { requests: number; errors: number; samples: { requests: number; rss: number; heapUsed: number }[] };
}

const read = <T>(root: string, file: string): T | null => {
  const at = path.join(root, file);
  return existsSync(at) ? (JSON.parse(readFileSync(at, 'utf8')) as T) : null;
};
const engine = (backend: string): string => (backend === 'js' ? 'JS mode' : backend);
const fixed = (x: number, digits: number): string => x.toFixed(digits);
const measured = (r: { generated: string; machine: Machine; loadAverage: number[] }): string =>
  `Measured ${r.generated.slice(0, 10)} on ${r.machine.cpu}, ${r.machine.cores} cores, Node ${r.machine.node} ` +
  `(load average ${fixed(r.loadAverage[0]!, 2)} at the start).`;

/** The pool's scaling table and start-up sentence. */
export function poolText(root: string): string | null {
  const r = read<PoolResults>(root, 'bench/results/pool.json');
  if (!r) return null;
  const lines = [measured(r), '', '| engine | where | ms | rows/s | speed-up over 1 worker | efficiency |', '| --- | --- | ---: | ---: | ---: | ---: |'];
  for (const x of r.results) {
    lines.push(`| ${engine(x.backend)} | ${x.where} | ${fixed(x.ms, 1)} | ${fixed(x.rowsPerSecond / 1e6, 2)} M | ` +
      `${x.speedup === null ? '–' : fixed(x.speedup, 2)} | ${x.efficiency === null ? '–' : fixed(x.efficiency, 2)} |`);
  }
  const startup = r.startup.map((s) =>
    `${fixed(s.registerToFirstResultMs, 1)} ms with ${s.threads} worker${s.threads > 1 ? 's' : ''} ` +
    `(loading the bytes and installing the sweeps: ${s.workerLoadMs.map((ms) => fixed(ms, 1)).join(' and ')} ms; sweeps ${[...new Set(s.generatedSweeps)].join('/')})`);
  lines.push('', `From \`pool.register\` to the first result of a batch that reaches every worker: ${startup.join('; ')}.`);
  return `\n${lines.join('\n')}\n\n`;
}

/** The load test's table and the memory sentence. */
export function loadtestText(root: string): string | null {
  const r = read<LoadtestResults>(root, 'bench/results/loadtest.json');
  if (!r) return null;
  const lines = [
    `${measured(r)} ${r.connections} connections, ${r.durationSeconds} s per run; requests per second, and p50/p99 latency in ms.`, '',
    '| engine | endpoint | main thread | 1 worker | 2 workers | p50/p99: main, 1, 2 | worst p99 / p50 | errors, non-2xx |',
    '| --- | --- | ---: | ---: | ---: | --- | ---: | ---: |',
  ];
  const keys = [...new Set(r.measurements.map((m) => `${m.backend}|${m.scenario}`))];
  for (const key of keys) {
    const [backend, scenario] = key.split('|') as [string, string];
    const row = [0, 1, 2].map((w) => r.measurements.find((m) => m.backend === backend && m.scenario === scenario && m.workers === w));
    const rate = row.map((m) => (m ? fixed(m.requestsPerSecond, 0) : '–'));
    const latency = row.map((m) => (m ? `${m.p50}/${m.p99}` : '–')).join(', ');
    const worst = Math.max(...row.filter((m) => m).map((m) => m!.p99 / m!.p50));
    const bad = row.reduce((n, m) => n + (m ? m.errors + m.non2xx : 0), 0);
    lines.push(`| ${engine(backend)} | ${scenario} | ${rate.join(' | ')} | ${latency} | ${fixed(worst, 1)} | ${bad} |`);
  }
  const mem = r.memory;
  if (mem && mem.samples.length > 1) {
    const first = mem.samples[1] ?? mem.samples[0]!, last = mem.samples[mem.samples.length - 1]!;
    const mb = (b: number): string => fixed(b / 1e6, 1);
    lines.push('', `Memory over ${mem.requests.toLocaleString('en-US')} requests (sampled after a collection every 10^4): ` +
      `resident ${mb(first.rss)} MB after the first 10^4 and ${mb(last.rss)} MB after the last, the main thread's heap ` +
      `${mb(first.heapUsed)} to ${mb(last.heapUsed)} MB; ${mem.errors} errors.`);
  }
  return `\n${lines.join('\n')}\n\n`;
}
