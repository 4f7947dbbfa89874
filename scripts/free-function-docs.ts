// The free functions (`sin`, `mul`...) are exported by destructuring one object per arity, so tsc
// declares them all in one `export declare const` with no documentation, and editors showed
// nothing for them (a probe). This splits that declaration in dist/ into one per function, each
// with its op's text from src/op-docs.ts, the one place the op methods are documented.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const src = process.argv[2] ?? 'src', dist = process.argv[3] ?? 'dist';
const docs = new Map<string, string>();
for (const [, doc, name] of readFileSync(path.join(src, 'op-docs.ts'), 'utf8').matchAll(/(\/\*\*(?:(?!\*\/)[^])*\*\/)\s*(\w+)\(\.\.\.operands/g)) {
  docs.set(name!, doc!.replace(/\n\s*\*/g, '\n *'));
}
const file = path.join(dist, 'functions.d.ts');
let declared = 0;
const text = readFileSync(file, 'utf8').replace(/^export declare const ((?:\w+: \w+(?:, )?)+);$/gm, (line, list: string) => {
  const entries = list.split(', ').map((entry) => entry.split(': ') as [string, string]);
  if (!entries.every(([name]) => docs.has(name))) return line;
  declared += entries.length;
  return entries.map(([name, type]) => `${docs.get(name)}\nexport declare const ${name}: ${type};`).join('\n');
});
// Every op the table documents has a free function (select and where are declared on their own).
if (declared !== docs.size) throw new Error(`${file}: documented ${declared} free functions, op-docs.ts has ${docs.size}`);
writeFileSync(file, text);
console.log(`documented ${declared} free functions in ${file}`);
