// README's figures that change with the code sit between <!-- readme:NAME --> markers and are
// written by `npm run readme` (scripts/update-readme.ts) from the scripts that measure them: this
// fails when a region differs from what the script would write now from the committed bench
// results, the built dist/ and build/. The test count is left to the script and the hook that
// checks it against the report of `npm test`: a test comparing it here would count itself.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, measuredRegions, regionNames, regionText, rewrite } from '../scripts/update-readme.ts';

const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README regions written by npm run readme', () => {
  it('marks the test count, the bundle sizes, the embedded core sizes, the bench tables, the codegen (cliffs and training), per-node, recording, handle I/O and vector cost tables and the pool and service figures', () => {
    expect(regionNames(readme).sort()).toEqual([
      'bench-tables', 'codegen-cliffs', 'codegen-schedule', 'codegen-straight-length', 'codegen-straight-size', 'codegen-training', 'handle-io', 'loadtest-results', 'per-node', 'pool-results',
      'record-inlining', 'size-core', 'size-core-budget', 'size-generator', 'size-generator-budget', 'size-generator-kb', 'size-unsplit', 'test-count', 'vector-costs', 'wasm-base64-kb', 'wasm-hex-kb',
    ]);
    expect(regionText(readme, 'test-count')).toMatch(/^\(\d+ tests$/);
  });

  it('every measured region holds what the script writes (run `npm run readme` after a change)', async () => {
    const regions = await measuredRegions(ROOT, null);
    expect(Object.keys(regions)).not.toContain('test-count');
    for (const [name, text] of Object.entries(regions)) expect(regionText(readme, name), name).toBe(text);
    expect(rewrite(readme, regions)).toBe(readme);
  }, 60_000);

  it('rewrite replaces only between matching markers', () => {
    const text = 'a <!-- readme:x -->1<!-- /readme:x --> b <!-- readme:y -->\n2\n<!-- /readme:y --> <!-- readme:z -->3<!-- /readme:z -->';
    expect(rewrite(text, { x: '10', y: '\n20\n' })).toBe(
      'a <!-- readme:x -->10<!-- /readme:x --> b <!-- readme:y -->\n20\n<!-- /readme:y --> <!-- readme:z -->3<!-- /readme:z -->',
    );
  });
});
