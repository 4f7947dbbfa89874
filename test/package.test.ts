// Package hygiene: what `npm pack` would ship, what dist/ may contain so that the same files run
// in browsers and bundlers, how Node's require() treats the ESM build, and a size budget for the
// JS+wasm the core API pulls in. Reads the build made by `npm test`; builds nothing itself.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { CODEGEN_BUDGET, SIZE_BUDGET, measureBundle } from '../scripts/bundle-size.ts';
import { DIST, ROOT } from './browser/harness.ts';

interface PackageJson {
  main?: string;
  types?: string;
  exports: Record<string, Record<string, string> | string>;
  files: string[];
  sideEffects: unknown;
  scripts: Record<string, string>;
}
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as PackageJson;

// dist/pool/ is `tapegrad/pool`, the Node-only subpath (worker threads through piscina): the
// core entry never imports it, and test/pool.test.ts runs it.
const distJs = (readdirSync(DIST, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.js') && !f.startsWith(`pool${path.sep}`))
  .map((f) => path.join(DIST, f));

describe('package.json', () => {
  it('exports "." with types first, and every target exists in dist/', () => {
    const root = pkg.exports['.'] as Record<string, string>;
    expect(Object.keys(root)[0]).toBe('types');
    expect(root).toMatchObject({ types: './dist/index.d.ts', default: './dist/index.js' });
    for (const target of [...Object.values(root), pkg.main!, pkg.types!]) {
      expect(() => readFileSync(path.join(ROOT, target)), target).not.toThrow();
    }
  });

  it('declares sideEffects: false', () => {
    expect(pkg.sideEffects).toBe(false);
  });

  it('files lists only dist, README.md and LICENSE, and npm pack ships nothing else', () => {
    expect(pkg.files.filter((f) => !f.startsWith('!')).sort()).toEqual(['LICENSE', 'README.md', 'dist']);
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    // npm adds package.json (and README/LICENSE when present) whatever `files` says.
    const stray = files.filter((f) => !/^(package\.json|README\.md|LICEN[CS]E(\.\w+)?|dist\/.+)$/i.test(f));
    expect(stray).toEqual([]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    // ...and nothing points at one (35 files named a .map the package did not ship, a probe found).
    for (const file of distJs) expect(readFileSync(file, 'utf8'), path.relative(ROOT, file)).not.toMatch(/sourceMappingURL/);
    expect(files).toContain('LICENSE');
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/wasm/loader.js']));
  });

  // A probe: dist/ is not in git, and a fresh clone's `npm pack` shipped README, LICENSE and
  // package.json alone, main and exports pointing nowhere.
  it('builds dist before npm pack', () => {
    expect(pkg.scripts.prepack).toBe('npm run build');
  });
});

describe('dist/ runs anywhere', () => {
  it('has JavaScript to check', () => {
    expect(distJs.map((f) => path.relative(DIST, f))).toEqual(expect.arrayContaining(['index.js', 'wasm/loader.js']));
  });

  it('has no node: imports and no require( in any dist/**/*.js (comments aside)', () => {
    for (const file of distJs) {
      // esbuild drops comments, so a comment that mentions `node:` is not mistaken for code.
      const code = esbuild.transformSync(readFileSync(file, 'utf8'), { format: 'esm', minifyWhitespace: true }).code;
      const rel = path.relative(ROOT, file);
      expect(code, rel).not.toMatch(/\brequire\s*\(/);
      expect(code, rel).not.toMatch(/["'`]node:/);
    }
  });

  it('imports only its own files: every import is relative, none is require(), all resolve for a browser', async () => {
    const result = await esbuild.build({
      entryPoints: distJs, bundle: true, write: false, outdir: path.join(ROOT, 'unused'), format: 'esm',
      platform: 'browser', metafile: true, logLevel: 'silent',
    });
    for (const [input, { imports }] of Object.entries(result.metafile.inputs)) {
      expect(path.resolve(ROOT, input).startsWith(DIST + path.sep), input).toBe(true);
      // import() is fine (the loader fetches one core build on demand; bundlers split there).
      for (const i of imports) expect(['import-statement', 'dynamic-import'], `${input} -> ${i.path}`).toContain(i.kind);
    }
  });

  // A browser probe: with the generator in nine files, one failed download of a module its entry
  // imports stayed failed (the retry fetched the entry again, whose imports resolved to the failed
  // records), and the page kept the interpreter for good. One file retries as a whole.
  it('ships the code generator as one module, importing nothing of its own but the library\'s ops', () => {
    const dir = path.join(DIST, 'wasm', 'codegen');
    expect(readdirSync(dir).filter((f) => f.endsWith('.js'))).toEqual(['index.js']);
    const imports = [...readFileSync(path.join(dir, 'index.js'), 'utf8').matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
    expect(new Set(imports)).toEqual(new Set(['../../ops.js']));
  });

  it('has no top-level await (a bundle or a require() of it would need one otherwise)', () => {
    for (const file of distJs) {
      expect(() => esbuild.transformSync(readFileSync(file, 'utf8'), {
        format: 'esm', supported: { 'top-level-await': false }, logLevel: 'silent',
      }), path.relative(ROOT, file)).not.toThrow();
    }
  });

  it("require('tapegrad') of the ESM build works on this Node (with --experimental-require-module where needed)", () => {
    // Node 20.19+ and 22.12+ load ESM from require() by default; older 20.x need the flag.
    const unflagged = (process.features as { require_module?: boolean }).require_module === true;
    const script = [
      "const t = require('tapegrad');",
      't.createTape().then((tape) => {',
      '  const x = tape.variable(3); const y = x.mul(x).add(x);',
      '  tape.backward(y);',
      '  console.log(JSON.stringify({ backend: tape.backend, grad: x.grad, exports: Object.keys(t).length }));',
      '});',
    ].join('\n');
    // cwd is the package root: require('tapegrad') resolves by self-reference through "exports".
    const child = spawnSync(process.execPath, [...(unflagged ? [] : ['--experimental-require-module']), '-e', script], {
      cwd: ROOT, encoding: 'utf8',
    });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ backend: 'wasm', grad: 7 });
  });
});

describe('size budget', () => {
  // What a page downloads: the entry chunk and the chunks it imports statically, plus the chunks
  // it imports on demand: one core build and, for `compile`, the code generator (see
  // scripts/bundle-size.ts, which README's figures come from too).
  it(`the core API is under ${SIZE_BUDGET / 1024} KB gzipped, and the code generator under ${CODEGEN_BUDGET / 1024} KB more (esbuild, minified)`, async () => {
    const { coreApi, always, generator, all, coreBuilds, generators, onDemand } = await measureBundle(ROOT);
    expect(coreBuilds).toBe(2);
    expect(generators).toBe(1);
    expect(onDemand).toBe(3);
    console.log(`size: gzip -9 of the esbuild-minified dist/index.js: core API ${coreApi} B ` +
      `(${always} B always + ${coreApi - always} B for one core build), the code generator ${generator} B more; ` +
      `all chunks ${all} B; budgets ${SIZE_BUDGET} B and ${CODEGEN_BUDGET} B`);
    expect(coreApi).toBeLessThan(SIZE_BUDGET);
    expect(generator).toBeLessThan(CODEGEN_BUDGET);
  });
});
