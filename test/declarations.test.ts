// The shipped types as a user's compiler sees them: `npm pack` the package, unpack it into a temp
// consumer project's node_modules, and type-check a strict consumer under every moduleResolution
// a user may pick (node16, nodenext, bundler) with TypeScript 5.9 and with the project's own
// TypeScript, library checking on (skipLibCheck: false), so an error inside dist/*.d.ts fails too.
// Reads the build made by `npm test`; builds nothing itself.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BINARY_OPS, UNARY_OPS } from '../src/ops.ts';
import { DIST, ROOT } from './browser/harness.ts';

const COMPILERS = {
  'TypeScript 5.9': path.join(ROOT, 'node_modules/typescript5/bin/tsc'),
  "the project's TypeScript": path.join(ROOT, 'node_modules/typescript/bin/tsc'),
};
const RESOLUTIONS = [
  { moduleResolution: 'node16', module: 'node16' },
  { moduleResolution: 'nodenext', module: 'nodenext' },
  { moduleResolution: 'bundler', module: 'esnext' },
] as const;

// Strict user code meeting the API: every assignment must type without a cast.
const CONSUMER = `
import {
  CompiledFunction, StaleHandleError, Tape, TapegradError, Vec, compile, createTape, grad, gradcheck, init, mul, exp, add, sub, select, sin, valueAndGrad, where,
  type CustomRule, type Operand, type TapegradErrorCode, type TransformOptions, type Var,
} from 'tapegrad';

await init();
const tape = await createTape();
const x: Var = tape.variable(2);
const y: Var = select(x.gt(0), x.log(), x.neg());
const v: Vec = tape.vector([1, 2, 3]);
const w: Vec = where(v.gt(1), v, 0);
const g: Float64Array = grad((z: Var[]) => z[0]!.mul(z[1]!))([1, 2]);
const d: number = grad((z: Var) => z.sin())(0);
const scalar: CompiledFunction<number> = compile((z) => z[0]!.mul(z[1]!), { inputs: 2 });
const value: number = scalar.value([1, 2]);
const values: Float64Array = compile((z) => [z[0]!, z[1]!], { inputs: 2 }).value([1, 2]);
const ok: boolean = gradcheck((z) => z[0]!.exp(), [0.5]).ok;
// { vector: true } types an unannotated parameter as a Vec; options of the wide type still pick an overload.
const gv: Float64Array = grad((z) => z.sum(), { vector: true })([1, 2]);
const vg: [number, Float64Array] = valueAndGrad((z) => z.sum(), { vector: true })([1, 2]);
const options: TransformOptions = { vector: true };
const wide: number | Float64Array = grad((z: Vec) => z.sum(), options)([1, 2]);
// exactOptionalPropertyTypes: every option also takes undefined, as at run time (a probe found
// \`vector: undefined\` refused by every overload).
const gu: Float64Array = grad((z: Var[]) => z[0]!.sin(), { vector: undefined })([1]);
const cu: CompiledFunction<number> = compile((z) => z[0]!.sin(), { inputs: 1, vector: undefined, checkNaN: undefined });
const oku: boolean = gradcheck((z) => z[0]!.exp(), [0.5], { vector: undefined }).ok;
const lu: Vec = tape.vector([1, 0, 2, 3], [2, 2]).trmv([1, 1], { lower: undefined });
// A type parameter's operands: one body for numbers and Vars; operands typed Var | Vec (a probe).
function sq<T extends Operand>(z: T) { return mul(z, z); }
const sqn: number = sq(3);
const sqv: Var = sq(x);
const either: Var | Vec = Math.random() > 2 ? v : x;
const ue: Operand | Vec = exp(either);
const ua: Operand | Vec = add(either, 1);
const us: Var | Vec = tape.select(x.gt(0), either, 0);
const sn: number = select(1, 2, 3);
const sv: Var = select(x, sin(2), 3);
// A vector function returning a Vec beside a Var; value's out, possibly undefined.
const mixed: Float64Array = compile((z: Vec) => [z, z.sum()], { inputs: 2, vector: true }).value([1, 2]);
const maybe = (out?: Float64Array): number | Float64Array => scalar.value([1, 2], out);
export const used = [y, w, g, d, value, values, ok, gv, vg, wide, gu, cu, oku, lu, tape.gradient(y, [x]), sqn, sqv, ue, ua, us, sn, sv, mixed, maybe];
// An Operand argument may be a number: its result is an Operand, never typed a Var (a review probe).
declare const someOperand: Operand;
const maybeNumber: Operand = sin(someOperand);
// @ts-expect-error: sin of a number is a number
export const notAVar: Var = sin(someOperand);
// @ts-expect-error: likewise mul of two Operands
export const notAVar2: Var = mul(someOperand, 2 as Operand);
export const usedToo = [maybeNumber];
// A packaging probe: under TypeScript 5.9 with lib dom, a Uint8Array of any buffer is no BlobPart
// (it may be shared), so saving a function's bytes needed a cast; toBytes' is an ArrayBuffer's.
export const saved = (): Blob => new Blob([scalar.toBytes()]);
// @ts-expect-error: an array needs a Vec beside it (it threw NotANumberError at run time)
export const arrayAlone = () => tape.select(x, [1, 2], 0);
// @ts-expect-error: the same for the free function
export const arrayAloneFree = () => select(1, [1, 2], x);
// @ts-expect-error: a tape comes from createTape (two tapes over one engine wrote each other's nodes)
export const newTape = () => new Tape(undefined as never);
// @ts-expect-error: a Vec comes from a tape
export const newVec = () => new Vec();
// @ts-expect-error: a compiled function comes from compile
export const newCompiled = () => new CompiledFunction();
// A probe: the engine, a parameter property, stayed public in the declarations (and writable
// through them), rerecords was a writable field, a subclass's code was the whole union, and a
// custom rule's optional rules refused an explicit undefined.
// @ts-expect-error: the engine is internal
export const engineOf = () => tape.engine;
// @ts-expect-error: rerecords is read-only
export const setRerecords = () => { scalar.rerecords = 1; };
declare const caught: unknown;
export const codeOf = (): TapegradErrorCode | undefined => (caught instanceof StaleHandleError ? (caught.code satisfies 'STALE_HANDLE') : caught instanceof TapegradError ? caught.code : undefined);
export const rule: CustomRule = { name: 'sq', forward: (a) => a[0]! * a[0]!, vjp: (a, _y, gr) => [2 * a[0]! * gr], jvp: undefined, vjpTangent: undefined };
// A types probe: a generic model with a number among the operands lost Var (an Operand for a Var).
function model<T extends Operand>(m: T) { return add(mul(m, m), 1); }
function gate<T extends Operand>(m: T) { return select(m, exp(sub(m, 3)), 0); }
export const modelOfVar: Var = model(x), modelOfNumber: number = model(3), gateOfVar: Var = gate(x), gateOfNumber: number = gate(2);
// @ts-expect-error: a number's model is no Var
export const modelNotVar: Var = model(3);
// Operands typed any (JSON.parse's) stay numbers, as they were (a review).
declare const parsed: any;
export const anyAdd: number = add(parsed.a, 1), anySelect: number = select(parsed.a, 1, 2), anyMul: string = mul(parsed.a, 2).toFixed(2);
// Types that fell back to \`any\` would accept this, and the unused directive would be the error.
// @ts-expect-error: a scalar function's compiled value is a number
export const wrong: string = compile((z) => z[0]!.sin(), { inputs: 1 }).value([1]);
`;

const dir = mkdtempSync(path.join(os.tmpdir(), 'tapegrad-consumer-'));

beforeAll(() => {
  // What npm would install: the packed tarball, unpacked as node_modules/tapegrad.
  const pack = spawnSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' });
  expect(pack.status, pack.stderr).toBe(0);
  const tarball = path.join(dir, (JSON.parse(pack.stdout) as { filename: string }[])[0]!.filename);
  const target = path.join(dir, 'node_modules/tapegrad');
  mkdirSync(target, { recursive: true });
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1'], { encoding: 'utf8' });
  expect(untar.status, untar.stderr).toBe(0);
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  writeFileSync(path.join(dir, 'index.ts'), CONSUMER);
  // The pool's peer dependency, as a user installs it beside the package.
  symlinkSync(path.join(ROOT, 'node_modules/piscina'), path.join(dir, 'node_modules/piscina'), 'dir');
  README_BLOCKS.forEach((block, k) => writeFileSync(path.join(dir, `readme-${k}.ts`), `${block}\nexport {};\n`));
});

// Every TypeScript block of README, as a user copies it into a module of their own.
const README_BLOCKS = [...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((m) => m[1]!);

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function declarationFiles(): string[] {
  return (readdirSync(DIST, { recursive: true }) as string[]).filter((f) => f.endsWith('.d.ts')).map((f) => path.join(DIST, f));
}

describe('dist/*.d.ts', () => {
  it('import only .js specifiers (never a .ts file the package does not ship)', () => {
    const files = declarationFiles();
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      expect(readFileSync(file, 'utf8'), path.relative(ROOT, file)).not.toMatch(/['"]\.\.?\/[^'"\n]+\.ts['"]/);
    }
  });

  // Under exactOptionalPropertyTypes a property declared `name?: T` refuses an explicit
  // undefined, which every option takes at run time (a probe: `vector?: false`, the pool's
  // `checkNaN?: boolean`).
  it('declare every optional property as also taking undefined', () => {
    const missing: string[] = [];
    for (const file of declarationFiles()) {
      readFileSync(file, 'utf8').split('\n').forEach((line, k) => {
        const property = /^\s+(?:readonly )?[A-Za-z_$][\w$]*\?: (.*);$/.exec(line);
        if (property && !/\bundefined\b|^unknown$|^any$/.test(property[1]!)) missing.push(`${path.relative(ROOT, file)}:${k + 1}: ${line.trim()}`);
      });
    }
    expect(missing).toEqual([]);
  });

  // A probe: stripInternal left these classes TypeScript's default constructor, public and of no
  // parameters (`new PooledFunction()` type-checked and threw a raw TypeError).
  it('declare the internal constructors private, the pool\'s among them', () => {
    const constructors = (file: string): string[] =>
      [...readFileSync(path.join(DIST, file), 'utf8').matchAll(/^export declare class (\w+)[^{]*\{\n    private constructor\(\);$/gm)].map((m) => m[1]!);
    expect(constructors('tape.d.ts')).toEqual(['Tape']);
    expect(constructors('vector.d.ts')).toEqual(['Vec']);
    expect(constructors('compile.d.ts')).toEqual(['CompiledFunction']);
    expect(constructors('pool/index.d.ts')).toEqual(['GradientPool', 'PooledFunction']);
  });

  it('type the embedded wasm as a string, not as a literal of the whole module', () => {
    for (const name of ['core.generated.d.ts', 'core-simd.generated.d.ts']) {
      const text = readFileSync(path.join(DIST, 'wasm', name), 'utf8');
      expect(text).toMatch(/WASM_TEXT: string;/);
      expect(statSync(path.join(DIST, 'wasm', name)).size).toBeLessThan(200);
    }
  });
});

// A probe: the free functions, exported by destructuring, had no documentation in the
// declarations, so editors showed none for `sin` or `mul` (the op methods had theirs).
describe('the free functions as an editor sees them', () => {
  it('each has its op\'s documentation, the method\'s text', () => {
    const consumer = path.join(dir, 'docs.ts');
    writeFileSync(consumer, `import * as tg from 'tapegrad';\nexport const t = tg;\n`);
    const program = ts.createProgram([consumer], {
      module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, noEmit: true,
    });
    const checker = program.getTypeChecker();
    const source = program.getSourceFile(consumer)!;
    const moduleSymbol = checker.getSymbolAtLocation((source.statements[0] as ts.ImportDeclaration).moduleSpecifier)!;
    const resolved = (symbol: ts.Symbol): ts.Symbol => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
    const exports = new Map(checker.getExportsOfModule(moduleSymbol).map((symbol) => [symbol.name, resolved(symbol)]));
    const varMethods = checker.getDeclaredTypeOfSymbol(exports.get('Var')!);
    const text = (symbol: ts.Symbol | undefined): string => ts.displayPartsToString(symbol?.getDocumentationComment(checker) ?? []);
    const undocumented = [...UNARY_OPS, ...BINARY_OPS].filter((name) => {
      const doc = text(exports.get(name));
      return doc === '' || doc !== text(varMethods.getProperty(name));
    });
    expect(undocumented).toEqual([]);
    expect(text(exports.get('sqrt'))).toBe('√x: NaN below 0, gradient +Infinity at 0.');
  });
});

describe.each(Object.entries(COMPILERS))('a strict consumer type-checks with %s', (_name, tsc) => {
  it.each(RESOLUTIONS)('moduleResolution $moduleResolution', ({ moduleResolution, module }) => {
    const config = path.join(dir, `tsconfig.${moduleResolution}.json`);
    writeFileSync(config, JSON.stringify({
      compilerOptions: {
        target: 'es2022', module, moduleResolution, lib: ['es2022', 'dom'], types: [], strict: true,
        noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, skipLibCheck: false, noEmit: true,
      },
      files: ['index.ts'],
    }));
    const run = spawnSync(process.execPath, [tsc, '-p', config, '--pretty', 'false'], { cwd: dir, encoding: 'utf8' });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe("README's TypeScript blocks, each copied into a strict consumer of the packed package", () => {
  it('are there (the quick start, the handle API, vectors, transforms, compile, the pool...)', () => {
    expect(README_BLOCKS.length).toBeGreaterThanOrEqual(9);
  });

  // With what `tsc --init --strict` turns on (TypeScript 5.9): a probe's README blocks failed
  // under noUncheckedIndexedAccess, and the options under exactOptionalPropertyTypes.
  it('type-check with the project\'s TypeScript, library checking on, as `tsc --init --strict` sets it', () => {
    const config = path.join(dir, 'tsconfig.readme.json');
    writeFileSync(config, JSON.stringify({
      compilerOptions: {
        target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: ['node'],
        typeRoots: [path.join(ROOT, 'node_modules/@types')], strict: true, skipLibCheck: false, noEmit: true,
        noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, verbatimModuleSyntax: true,
      },
      files: README_BLOCKS.map((_, k) => `readme-${k}.ts`),
    }));
    const run = spawnSync(process.execPath, [COMPILERS["the project's TypeScript"], '-p', config, '--pretty', 'false'], { cwd: dir, encoding: 'utf8' });
    expect(run.stdout + run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it.each(README_BLOCKS.map((block, k) => [k, block.split('\n')[0]!]))('run without an error: block %i (%s)', (k) => {
    const tsx = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/esm/index.mjs')).href;
    const run = spawnSync(process.execPath, ['--import', tsx, `readme-${k}.ts`], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
