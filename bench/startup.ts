// Start-up of the built package in fresh processes: `import` of dist/index.js and `init()`, in
// ms, medians over the runs; with --base, another build's dist directory, run in alternation
// (a slow spell of the machine falls on both alike).
//   npm run build && npx tsx bench/startup.ts [--runs=10] [--base=/path/to/other/dist]
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './protocol.ts';

const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const runs = Number(arg('runs') ?? 10);
const builds: [string, string][] = [['this build', resolve(dirname(fileURLToPath(import.meta.url)), '..', 'dist')]];
const base = arg('base');
if (base) builds.unshift(['base', resolve(base)]);

interface Startup { importMs: number; initMs: number }
function once(dist: string): Startup {
  const url = pathToFileURL(join(dist, 'index.js')).href;
  const script = `const t0 = performance.now(); const m = await import(${JSON.stringify(url)}); const t1 = performance.now();
await m.init(); const t2 = performance.now(); console.log(JSON.stringify({ importMs: t1 - t0, initMs: t2 - t1 }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`start-up of ${dist} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim()) as Startup;
}

const results = builds.map((): Startup[] => []);
for (let k = 0; k < runs; k++) builds.forEach(([, dist], b) => results[b]!.push(once(dist)));
console.log(`Medians of ${runs} fresh processes each, alternating, ${new Date().toISOString().slice(0, 10)}, on ${cpus()[0]?.model.trim()}, ${cpus().length} cores, Node ${process.version}.\n`);
console.log('| build | import, ms | init(), ms |\n| --- | ---: | ---: |');
builds.forEach(([label, dist], b) => {
  const rs = results[b]!;
  console.log(`| ${label} (${dist}) | ${median(rs.map((r) => r.importMs)).toFixed(1)} | ${median(rs.map((r) => r.initMs)).toFixed(1)} |`);
});
