// What a page downloads from tapegrad, gzipped: dist/index.js bundled as a user's bundler would
// (esbuild, minified, ESM with code splitting), then gzip -9 per chunk. The entry chunk and the
// chunks it imports statically always load; of the chunks it imports on demand, one core build
// (the loader imports exactly one, SIMD or scalar, so the larger counts) and, for `compile` on
// the wasm backend, the code generator (init() loads it). test/package.test.ts holds these
// figures to their budgets and scripts/update-readme.ts writes them into README.
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

export interface BundleSize {
  /** Bytes of gzip a page downloads for the core API: the static closure plus one core build. */
  coreApi: number;
  /** The static closure of the entry chunk alone. */
  always: number;
  /** Bytes more for compile's code generator chunk. */
  generator: number;
  /** Every chunk. */
  all: number;
  /** How many chunks of each kind the entry imports on demand (2 core builds, 1 generator). */
  coreBuilds: number;
  generators: number;
  onDemand: number;
}

export async function measureBundle(root: string): Promise<BundleSize> {
  const result = await esbuild.build({
    entryPoints: [path.join(root, 'dist/index.js')], bundle: true, minify: true, format: 'esm', splitting: true,
    platform: 'browser', write: false, metafile: true, outdir: path.join(root, 'size-check'), logLevel: 'silent',
  });
  const gz = new Map(result.outputFiles.map((f) => [path.relative(root, f.path), gzipSync(f.contents, { level: 9 }).length]));
  const outputs = result.metafile.outputs;
  const closure = (chunk: string, seen = new Set<string>()): Set<string> => {
    if (seen.has(chunk)) return seen;
    seen.add(chunk);
    for (const i of outputs[chunk]!.imports) if (i.kind === 'import-statement') closure(i.path, seen);
    return seen;
  };
  const sum = (chunks: Iterable<string>): number => [...chunks].reduce((n, c) => n + gz.get(c)!, 0);
  const entry = Object.keys(outputs).find((o) => outputs[o]!.entryPoint)!;
  const always = closure(entry);
  const onDemand = [...always].flatMap((c) => outputs[c]!.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
  const sizeOf = (chunk: string): number => sum([...closure(chunk)].filter((x) => !always.has(x)));
  const coreBuilds = onDemand.filter((c) => /core(-simd)?\.generated/.test(c));
  const generators = onDemand.filter((c) => /codegen/.test(c));
  return {
    coreApi: sum(always) + Math.max(...coreBuilds.map(sizeOf)),
    always: sum(always),
    generator: generators.length > 0 ? sizeOf(generators[0]!) : 0,
    all: sum(gz.keys()),
    coreBuilds: coreBuilds.length,
    generators: generators.length,
    onDemand: onDemand.length,
  };
}
