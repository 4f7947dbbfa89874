// Rewrites the figures in README.md that change with the code, each between markers
// <!-- readme:NAME --> and <!-- /readme:NAME -->, from the scripts that measure them:
//   test-count        `(N tests`, N from the report `npm test` writes (test-artifacts/vitest.json)
//   bench-tables      the tables `npx tsx bench/table.ts bench/results/latest.json` prints
//   size-*            the gzipped bundle sizes scripts/bundle-size.ts measures on dist/, and
//                     the budgets test/package.test.ts holds them to (also there)
//   wasm-*-kb         the scalar core embedded as hex and as base64, gzipped (build/tapegrad.wasm)
//   pool-results      bench/results/pool.json (npm run bench:pool), via scripts/service-tables.ts
//   loadtest-results  bench/results/loadtest.json (npm run loadtest), likewise
//   codegen-*         the markdown bench/codegen-cliffs.ts writes to bench/results/codegen-*.md
//   per-node          the markdown bench/per-node.ts writes to bench/results/per-node.md
//   record-inlining   the markdown bench/record-inlining.ts writes to bench/results/record-inlining.md
//   handle-io         the markdown bench/handle-io.ts writes to bench/results/handle-io.md
//   vector-costs      the markdown bench/vector-costs.ts writes to bench/results/vector-costs.md
// `npm run readme` writes README.md; `npm run readme -- --check` only says which regions differ.
// Run it after `npm test` (which builds, and writes the test report) or after `npm run bench`.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { CODEGEN_BUDGET, SIZE_BUDGET, measureBundle } from './bundle-size.ts';
import { loadtestText, poolText } from './service-tables.ts';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
const REGION = /<!-- readme:([\w-]+) -->([\s\S]*?)<!-- \/readme:\1 -->/g;

/** The names of the regions README marks, in order. */
export function regionNames(readme: string): string[] {
  return [...readme.matchAll(REGION)].map((m) => m[1]!);
}

/** The text between one region's markers. */
export function regionText(readme: string, name: string): string | undefined {
  return [...readme.matchAll(REGION)].find((m) => m[1] === name)?.[2];
}

const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;
const bytes = (n: number): string => `${n.toLocaleString('en-US')} bytes`;

/** What each region should hold now. `testCount` null leaves the test count as it is. */
export async function measuredRegions(root: string, testCount: number | null): Promise<Record<string, string>> {
  const tables = spawnSync(path.join(root, 'node_modules/.bin/tsx'), ['bench/table.ts', 'bench/results/latest.json'], { cwd: root, encoding: 'utf8' });
  if (tables.status !== 0) throw new Error(`bench/table.ts failed: ${tables.stderr}`);
  const size = await measureBundle(root);
  const wasm = readFileSync(path.join(root, 'build/tapegrad.wasm'));
  const gz = (text: string): number => gzipSync(Buffer.from(text), { level: 9 }).length;
  const regions: Record<string, string> = {
    'bench-tables': `\n${tables.stdout.trimEnd()}\n\n`,
    'size-core': bytes(size.coreApi),
    'size-generator': `${bytes(size.generator)} more`,
    'size-generator-kb': kb(size.generator),
    'size-unsplit': bytes(size.unsplit),
    // KiB spelled out with its bytes: "93,469 bytes | 90 KB" read as over a budget of 92,160.
    'size-core-budget': `${SIZE_BUDGET / 1024} KiB (${bytes(SIZE_BUDGET)})`,
    'size-generator-budget': `${CODEGEN_BUDGET / 1024} KiB (${bytes(CODEGEN_BUDGET)})`,
    'wasm-hex-kb': kb(gz(wasm.toString('hex'))),
    'wasm-base64-kb': kb(gz(wasm.toString('base64'))),
  };
  // Tables bench/codegen-cliffs.ts writes as markdown (its run over every case, its straight
  // sweep), and bench/per-node.ts's phases per node.
  for (const name of ['codegen-cliffs', 'codegen-training', 'codegen-schedule', 'codegen-straight-length', 'codegen-straight-size', 'per-node', 'record-inlining', 'handle-io', 'vector-costs']) {
    const file = path.join(root, 'bench/results', `${name}.md`);
    if (existsSync(file)) regions[name] = `\n${readFileSync(file, 'utf8').trimEnd()}\n\n`;
  }
  const pool = poolText(root), loadtest = loadtestText(root);
  if (pool !== null) regions['pool-results'] = pool;
  if (loadtest !== null) regions['loadtest-results'] = loadtest;
  if (testCount !== null) regions['test-count'] = `(${testCount} tests`;
  return regions;
}

/** The number of tests in the last `npm test` report, or null without one. */
export function reportedTestCount(root: string): number | null {
  const file = path.join(root, 'test-artifacts/vitest.json');
  if (!existsSync(file)) return null;
  return (JSON.parse(readFileSync(file, 'utf8')) as { numTotalTests: number }).numTotalTests;
}

/** README with every region whose value is known rewritten. */
export function rewrite(readme: string, regions: Record<string, string>): string {
  return readme.replace(REGION, (whole, name: string) =>
    regions[name] === undefined ? whole : `<!-- readme:${name} -->${regions[name]}<!-- /readme:${name} -->`);
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const file = path.join(ROOT, 'README.md');
  const readme = readFileSync(file, 'utf8');
  const count = reportedTestCount(ROOT);
  if (count === null) console.warn('no test-artifacts/vitest.json (run npm test first): the test count is left as it is');
  const regions = await measuredRegions(ROOT, count);
  const unknown = regionNames(readme).filter((n) => !(n in regions) && n !== 'test-count');
  if (unknown.length > 0) {
    throw new Error(`README marks regions with nothing to write: ${unknown.join(', ')} (unknown names, or results files missing: ` +
      'bench/results/codegen-*.md from bench/codegen-cliffs.ts, pool.json from npm run bench:pool, loadtest.json from npm run loadtest)');
  }
  const changed = regionNames(readme).filter((n) => regions[n] !== undefined && regionText(readme, n) !== regions[n]);
  if (check) {
    console.log(changed.length === 0 ? 'README is up to date' : `README differs in: ${changed.join(', ')}`);
    process.exitCode = changed.length === 0 ? 0 : 1;
    return;
  }
  writeFileSync(file, rewrite(readme, regions));
  console.log(changed.length === 0 ? 'README was up to date' : `rewrote README regions: ${changed.join(', ')}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
