// Package hygiene: what `npm pack` would ship, what dist/ may contain so that the same files run
// in browsers and bundlers, how Node's require() treats the ESM build, and a size budget for the
// JS+wasm the core API pulls in. Reads the build made by `npm test`; builds nothing itself.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';
import { measureBundle } from '../scripts/bundle-size.ts';
import { DIST, ROOT } from './browser/harness.ts';

// Bytes of gzip for the minified bundle of dist/index.js. 40 KB until the vector ops (38.8 KB
// measured then); array-valued nodes added about 17 KB: their rules in both engines (the core's
// two builds grew 8 KB), the Vec façade and the validator of format version 2. 70 KB since the
// special-function ops (60,346 bytes before, 68,901 after): their coefficients and code ship
// twice, in the JS engine (4.8 KB more gzipped) and in each core build (3.7 KB more); the fused
// run kernels' glue in the core and the façade, the pool's sweep installer and the API's argument
// checks added about 1.2 KB more. 71 KB since the fused forward-tangent sweep for hvp and the
// fast paths of the four interpreted sweeps and of recording (71,775 bytes measured, 1.45 KB over
// the session before; jvp and hvp on fresh tapes 1.4-2.6x faster, record 9.2 -> 5.5 ns/node).
// 72 KB since the SIMD build's own two-lane exp for logSumExp (inlined in its hot loops: copies
// called once per pair measured 30% slower), the planner's use counts in the core and the batch
// reset of adjoints (73,074 bytes measured, 1,299 B more; lse 2.1x the JS mode, from 1.65x; the
// nested tape's first compile 2.07 -> 1.73x its recording, GMM's gradients 2.14 -> 1.36 ns/node).
// 75 KB since fused runs store only what may be read (deferred values and slices, dropped
// adjoints, sums and slices taken into the kernels, the kernel cache, a gradient replay's sum
// left to the reverse kernel, materialization and the sweep again that stores what was left
// out: 2.9 KB, 75,971 bytes measured; Rosenbrock's vector form 14.7 -> 2.2x the plain function).
// 77 KB since the planner's top-level loop search and the bodies' fingerprints moved into the
// core (78,440 bytes measured, 1,837 B more with the repeats check; the branchy loss's first generation 54-62 -> 42-47
// ms on the same machine, its first call 3.0-3.5 -> 2.5-2.7x its recording).
// 78 KB since each op method is its own fast path, so that V8 inlines more of them into a loop
// body (78,932 bytes measured, 100 B more; recording 10.65 -> 7.88 ns/node on the transcendental
// chain through Vars, 9.07 -> 6.39 on the mixed Rosenbrock through Vars, 5.01 -> 4.18 through
// handles: bench/record-inlining.ts). 79 KB since the handle API's bulk inputs and gradients
// (179 B), the interpreted sweeps' region bases kept in locals (142 B: V8 reloads a mutable
// global at every use; a mixed scalar tape's forward and reverse 3.4 -> 3.0 ns/node in bench/ab.ts)
// and the refusal of recording, reset and sweeps of a tape inside its custom rules (229 B), which
// lets the sweeps keep those bases: 80,126 bytes measured. 80 KB since the checks a new-user probe
// asked for (compiled functions' scalar-output and `at` checks, limits and handle ranges named
// exactly, trmv's and defineFunction's options, pow's limits at x = 0 in both engines, softmax
// shifted by its max): 80,896 bytes measured, 821 B more than before them. 81 KB since the next
// probes' fixes (errors that name what is wrong, domain-correct second derivatives, vector handles
// empty or in the scalar API, checkNaN in the pool and on tangents, unsigned views past 2 GiB, a
// BranchChangedError restoring the recorded inputs): 81,802 bytes measured, 906 B more. 82 KB
// since the scheduled replay of tapes too long to fold into generated code (assembly/schedule.ts:
// the list scheduler, the forward by runs of one op, the reverse by stored partials): 83,688
// bytes measured, 1,886 B more; the 10^5-op straight tape's gradient 5.8 -> 4.1 ns/node. 83 KB
// since the schedule works window by window and only where a predictor of the ops says it pays
// (with the reasons it gives otherwise) and compile refuses a new input recorded inside f: 84,242
// bytes measured, 540 B more; 84,616 with the schedule's build in short calls. 84 KB since the
// checks two new-user probes asked for (an empty batch, unchecked tangent and cotangent entries,
// reuse arrays, carrier ids as handles, f resetting its tape, a rule replaying its own compiled
// function or reading a value not computed yet, jvp inputs, gradcheck's step and tolerance) and
// their messages: 85,337 bytes measured, 434 B more.
const SIZE_BUDGET = 84 * 1024;
// More bytes of gzip for the code generator chunk: 6 KB (5.7 KB measured) until it also emitted
// the fused elementwise run kernels (about 1.4 KB more); 8 KB (7,839 B measured) until the planner
// found loops nested in loop bodies and the sweeps were split into functions (9,371 B, +1,532 B);
// 10 KB until the tangent sweeps spelled out their rules per op and hvp got its fused forward
// tangent sweep (10,530 B measured, about 1.2 KB more); 11 KB until bodies of one shape shared a
// function (data-dependent code: the branchy logistic regression's 9,398 nodes of code fell to
// 167; 12,011 B measured, 978 B more than with the partials of eleven more ops written out just
// before); 12 KB until run kernels recomputed deferred values, added up a trailing sum in sum4's
// order, absorbed slices, tried pairs without masks and took a replay's sum in (13,802 B
// measured, 1,791 B more); 14 KB until a body that repeats an earlier one node for node shared its
// description and the planner's links came from the core (15,002 B measured, 1,200 B more; the
// branchy loss's first generation 135 -> 62 ms); 15 KB until values and adjoints carried from one
// iteration to the next stayed in locals, in the replay and tangent sweeps (16,202 B measured,
// 951 B more with the planner's per-step timing and one rewrite per shape; steady gradients of
// the branchy loss 2.1 -> 1.4 ns/node, of the nested tape 3.3 -> 2.5); 16 KB until loops of
// another count shared a description where the facts it holds at every iteration hold at theirs
// (16,872 B measured, 534 B more; the branchy loss's descriptions 33 -> 12, its first generation
// 36.8 -> 32.4 ms); 17 KB since.
const CODEGEN_BUDGET = 17 * 1024;

interface PackageJson {
  main?: string;
  types?: string;
  exports: Record<string, Record<string, string> | string>;
  files: string[];
  sideEffects: unknown;
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

  it('files lists only dist and README.md, and npm pack ships nothing else', () => {
    expect(pkg.files.filter((f) => !f.startsWith('!')).sort()).toEqual(['README.md', 'dist']);
    const pack = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(pack.status, pack.stderr).toBe(0);
    const files = (JSON.parse(pack.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    // npm adds package.json (and README/LICENSE when present) whatever `files` says.
    const stray = files.filter((f) => !/^(package\.json|README\.md|LICEN[CS]E(\.\w+)?|dist\/.+)$/i.test(f));
    expect(stray).toEqual([]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/wasm/loader.js']));
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
