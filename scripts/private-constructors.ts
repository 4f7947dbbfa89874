// tsc's stripInternal drops a constructor marked @internal from the declarations, and a class
// declared without one has TypeScript's default: public, with no parameters. So `new Vec()`,
// `new CompiledFunction()` or `new Tape(otherTape.engine)` type-checked and failed at run time, or
// worse (a probe). This declares `private constructor();` in dist/ for each class whose
// constructor the sources mark @internal: users get the tape's factories' own error instead.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const src = process.argv[2] ?? 'src', dist = process.argv[3] ?? 'dist';
const INTERNAL_CONSTRUCTOR = /\/\*\*[^]*?@internal[^]*?\*\/\s*constructor\(/g;
let classes = 0;
for (const file of readdirSync(src, { recursive: true }) as string[]) {
  if (!file.endsWith('.ts')) continue;
  const text = readFileSync(path.join(src, file), 'utf8');
  const names = new Set<string>();
  for (const match of text.matchAll(INTERNAL_CONSTRUCTOR)) {
    // The class is the last one declared before the constructor; its doc comment is the
    // constructor's own (the lazy match above starts at the last `/**` before it).
    const before = text.slice(0, match.index + match[0].length);
    const doc = before.lastIndexOf('/**');
    const classes = [...before.slice(0, doc).matchAll(/^export (?:abstract )?class (\w+)/gm)];
    const name = classes.at(-1)?.[1];
    if (name && /@internal/.test(before.slice(doc))) names.add(name);
  }
  if (names.size === 0) continue;
  const declarations = path.join(dist, file.replace(/\.ts$/, '.d.ts'));
  let d = readFileSync(declarations, 'utf8');
  for (const name of names) {
    const head = new RegExp(`^export declare (?:abstract )?class ${name}\\b[^{]*\\{\\n`, 'm');
    const found = head.exec(d);
    if (!found) throw new Error(`${declarations}: no declaration of class ${name}`);
    if (d.slice(found.index + found[0].length).match(/^\s*(?:private )?constructor\(/)) continue;
    d = d.slice(0, found.index + found[0].length) + '    private constructor();\n' + d.slice(found.index + found[0].length);
    classes++;
  }
  writeFileSync(declarations, d);
}
console.log(`declared private constructors of ${classes} classes whose constructors are @internal`);
