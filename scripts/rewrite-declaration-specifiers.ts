// tsc rewrites the `.ts` import specifiers of src/ to `.js` in the JavaScript it emits
// (rewriteRelativeImportExtensions) but not in the declarations: a dist/*.d.ts importing
// './tape.ts' names a file the package does not ship, and a consumer's TypeScript, under
// moduleResolution node16, nodenext or bundler, either rejects it or loses the types behind it.
// This rewrites every relative `.ts` specifier in the emitted .d.ts files to `.js`, as in the JS.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2] ?? 'dist';
const RELATIVE_TS = /(['"])(\.\.?\/[^'"\n]+)\.ts\1/g;
let files = 0;
for (const file of readdirSync(dir, { recursive: true }) as string[]) {
  if (!file.endsWith('.d.ts')) continue;
  const full = path.join(dir, file);
  const text = readFileSync(full, 'utf8');
  const rewritten = text.replace(RELATIVE_TS, '$1$2.js$1');
  if (rewritten !== text) {
    writeFileSync(full, rewritten);
    files++;
  }
}
console.log(`rewrote the .ts import specifiers of ${files} declaration files in ${dir}/ to .js`);
