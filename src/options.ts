// Options objects are checked where they enter: an unknown key (a typo, or an option another
// function takes, like checkNaN on compile) or a value out of its set is an INVALID_ARGUMENT
// naming the function, the option and what it accepts, never silently ignored.
import { TapegradError, describe } from './errors.ts';

type Rule = 'boolean' | 'number' | 'string' | 'array' | 'function' | 'module' | readonly (string | boolean | number)[];

/** Checks `options` (undefined is fine) against the known keys and what each accepts, and
 *  returns the values it read, in an object of its own, which the caller reads from then on: a
 *  function kept for later calls (grad(f, options)) read the caller's object again at every call
 *  and took what was changed since unchecked (a probe: `vector: 'yes'` set after was taken for
 *  true), and one read again after the check took a getter's next value (a probe's vjp gave f a
 *  Vec, checked as vector: false, and named createTapeSync for a backend changed since). */
export function readOptions<T extends object>(options: T, where: string, rules: Readonly<Record<string, Rule>>): T;
export function readOptions<T extends object>(options: T | undefined, where: string, rules: Readonly<Record<string, Rule>>): T | undefined;
export function readOptions<T extends object>(options: T | undefined, where: string, rules: Readonly<Record<string, Rule>>): T | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TapegradError('INVALID_ARGUMENT', `${where}: options must be an object, got ${describe(options)}`);
  }
  // Unknown keys: own and inherited enumerable ones (for...in).
  for (const key in options) {
    if (!Object.hasOwn(rules, key)) {
      throw new TapegradError('INVALID_ARGUMENT', `${where}: unknown option '${key}' (it takes ${Object.keys(rules).join(', ')})`);
    }
  }
  // Values as the functions read them: through the prototype and getters too (a probe's
  // Object.create({ mode: 'bogus' }) went unchecked and was ignored).
  const read: Record<string, unknown> = {};
  for (const key of Object.keys(rules)) {
    const rule = rules[key]!, value = (options as Record<string, unknown>)[key];
    if (value === undefined) continue;
    read[key] = value;
    if (accepts(rule, value)) continue;
    const wanted = typeof rule === 'string' ? `${rule === 'array' ? 'an' : 'a'} ${rule}` : `one of ${rule.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ')}`;
    throw new TapegradError('INVALID_ARGUMENT', `${where}: option '${key}' must be ${wanted}, got ${describe(value)}`);
  }
  return read as T;
}

function accepts(rule: Rule, value: unknown): boolean {
  switch (rule) {
    case 'boolean': return typeof value === 'boolean';
    case 'number': return typeof value === 'number';
    case 'string': return typeof value === 'string';
    case 'array': return value != null && typeof value === 'object' && typeof (value as ArrayLike<number>).length === 'number';
    case 'function': return typeof value === 'function';
    case 'module': return typeof WebAssembly !== 'undefined' && value instanceof WebAssembly.Module;
    default: return (rule as readonly unknown[]).includes(value);
  }
}

export const BACKEND_RULE = ['wasm', 'js', 'auto'] as const;
export const CODEGEN_RULE = [true, false, 'require'] as const;
