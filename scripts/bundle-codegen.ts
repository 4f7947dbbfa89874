// The code generator (src/wasm/codegen/, nine modules) is a chunk the library imports on demand,
// and a failed download is retried under a new specifier (src/wasm/loader.ts, importChunk). tsc
// emits one file per module, so in an unbundled page a failed download of one of the entry's
// static imports stayed failed: the retry fetched the entry again, whose imports resolved to the
// failed module records, and every compiled function of the page kept the interpreter (a browser
// probe, Chromium 150). This joins the generator into its entry file in dist, the rest of the
// library (../../ops.js) left as an import, and removes the other modules' JavaScript (their
// declarations stay, for the entry's).
import { readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import * as esbuild from 'esbuild';

const dir = path.join(process.argv[2] ?? 'dist', 'wasm', 'codegen');
const entry = path.join(dir, 'index.js');
// Imports from outside the folder stay imports (the library's own modules, loaded already).
const outside: esbuild.Plugin = {
  name: 'outside-codegen',
  setup(build) {
    build.onResolve({ filter: /^\.\.\// }, (args) => ({ path: args.path, external: true }));
  },
};
await esbuild.build({
  entryPoints: [entry], bundle: true, format: 'esm', platform: 'neutral', outfile: entry, allowOverwrite: true,
  plugins: [outside], logLevel: 'warning', legalComments: 'none',
});
let removed = 0;
for (const file of readdirSync(dir)) {
  if (file.endsWith('.js') && file !== 'index.js') {
    rmSync(path.join(dir, file));
    removed++;
  }
}
console.log(`joined the code generator into ${entry} (${removed} modules)`);
