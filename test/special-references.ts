// The mpmath references for the special-function ops (scripts/special-references.py writes them):
// per op, rows [x, f(x), f'(x), f''(x)], each the double nearest the 60-digit value.
import { readFileSync } from 'node:fs';

export const SPECIAL_OPS = ['erf', 'erfc', 'normCdf', 'normLogCdf', 'ndtri', 'lgamma', 'digamma'] as const;
export type SpecialOp = (typeof SPECIAL_OPS)[number];

type Row = readonly [x: number, value: number, first: number, second: number];

const raw = JSON.parse(readFileSync(new URL('./fixtures/special-references.json', import.meta.url), 'utf8')) as Record<SpecialOp, string[][]>;

export const REFERENCES: Record<SpecialOp, readonly Row[]> = Object.fromEntries(
  SPECIAL_OPS.map((op) => [op, raw[op].map((row) => row.map(Number) as unknown as Row)]),
) as unknown as Record<SpecialOp, readonly Row[]>;

/** The reference row at exactly x (the sign of zero counts); throws if the grid lacks x. */
export function referenceAt(op: SpecialOp, x: number): Row {
  const row = REFERENCES[op].find((r) => Object.is(r[0], x));
  if (!row) throw new Error(`no ${op} reference at ${x}: add it to scripts/special-references.py`);
  return row;
}

/** Units in the last place of `want` between got and want (0 when both are the same NaN,
 *  infinity or zero of either sign; Infinity when only one is finite). The ulp of a subnormal
 *  is 2^-1074. */
export function ulpError(got: number, want: number): number {
  if (got === want || (Number.isNaN(got) && Number.isNaN(want))) return 0;
  if (!Number.isFinite(got) || !Number.isFinite(want)) return Infinity;
  const a = Math.abs(want);
  const ulp = a < 2 ** -1022 ? 2 ** -1074 : 2 ** (Math.floor(Math.log2(a)) - 52);
  // log2 can round up just below a power of two: one ulp too coarse there would halve the error.
  const exact = 2 ** Math.floor(Math.log2(a)) > a ? ulp / 2 : ulp;
  return Math.abs(got - want) / exact;
}
