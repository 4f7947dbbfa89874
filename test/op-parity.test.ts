// The wasm core and the JS twin give the same values and gradients for every op, over the grid
// with NaN, ±Infinity, ±0 and domain edges, and over random doubles: bit for bit where the op
// is IEEE-exact, within 1e-12 relative where it calls a transcendental (DESIGN.md section 4).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tape, type OpName } from '../src/index.ts';
import { forwardRule, partials } from '../src/js/rules.ts';
import { Op } from '../src/ops.ts';
import { WasmBackend } from '../src/wasm/backend.ts';
import { loadCoreModule, simdAvailable } from '../src/wasm/loader.ts';
import {
  EDGE_GRID, EXACT_OPS, POW_CONST_EXPONENTS, RECORDABLE_OPS, pairs, recordOp, sameNumber, show, valueAndGradient,
} from './op-cases.ts';
import { tapeOn } from './support.ts';

const RELATIVE = 1e-12;
// tanh' = 1 - y² and sigmoid' = y(1 - y) are read off the stored output y: near y = ±1 a last-bit
// difference in y survives the cancellation as an absolute difference of a few eps, however
// small the derivative. Measured: at most ~2e-16 apart.
const CANCELLING_GRADIENTS: ReadonlySet<OpName> = new Set<OpName>(['tanh', 'sigmoid']);
const ABSOLUTE_FLOOR = 1e-15;

const EXPONENTS = [...POW_CONST_EXPONENTS, -0, NaN, Infinity, -Infinity, 1e300, -1e300, 5e-324];
const SELECT_POINTS = pairs([0, -0, 1, -1, NaN, Infinity, 5e-324]).flatMap(([c, a]) =>
  [NaN, -Infinity, 0, 3].map((b) => [c!, a!, b]));

// lgamma and digamma (lgamma's gradient) on the negative axis are differences of two terms of
// order 1 (the reflection formula): near their zeros a last-bit difference in those terms is a
// large relative one of the result, so there the engines agree to 1e-12 of max(1, |f|).
const CANCELLING_VALUES: ReadonlySet<OpName> = new Set<OpName>(['lgamma', 'digamma']);

function agree(op: OpName, a: number, b: number, isGradient: boolean): boolean {
  if (sameNumber(a, b)) return true;
  if (EXACT_OPS.has(op)) return false;
  const diff = Math.abs(a - b);
  if (diff <= RELATIVE * Math.max(Math.abs(a), Math.abs(b), CANCELLING_VALUES.has(op) ? 1 : 0)) return true;
  return isGradient && CANCELLING_GRADIENTS.has(op) && diff <= ABSOLUTE_FLOOR;
}

// Both builds of the core: they share the op rules but not their memory layout.
const VARIANTS = simdAvailable() ? (['scalar', 'simd'] as const) : (['scalar'] as const);

let js: Tape;
beforeAll(async () => {
  js = await tapeOn('js');
});

/** Where the two backends disagree on `op` at `point`, as messages. */
function disagreements(wasm: Tape, op: OpName, point: readonly number[], exponent = 0): string[] {
  const w = valueAndGradient(wasm, op, point, exponent);
  const j = valueAndGradient(js, op, point, exponent);
  const bad = w.flatMap((wk, k) => (agree(op, wk, j[k]!, k > 0) ? [] : [k === 0 ? 'value' : `d/dx${k}`]));
  const at = op === 'powConst' ? `${show(point[0]!)}^${show(exponent)}` : point.map(show).join(', ');
  return bad.length ? [`${op}(${at}) ${bad.join(' ')}: wasm [${w.map(show)}] js [${j.map(show)}]`] : [];
}

function gridPoints(arity: number): number[][] {
  return arity === 1 ? EDGE_GRID.map((x) => [x]) : arity === 2 ? pairs(EDGE_GRID) : SELECT_POINTS;
}

describe.each(VARIANTS)('wasm (%s core) and js agree', (variant) => {
  let wasm: Tape;
  beforeAll(async () => {
    wasm = new Tape(new WasmBackend(await loadCoreModule(variant)));
  });

  it.each(RECORDABLE_OPS.filter(([op]) => op !== 'powConst'))('%s over the grid', (op, arity) => {
    expect(gridPoints(arity).flatMap((p) => disagreements(wasm, op, p))).toEqual([]);
  });

  it('powConst over the grid', () => {
    const found = EXPONENTS.flatMap((c) => EDGE_GRID.flatMap((x) => disagreements(wasm, 'powConst', [x], c)));
    expect(found).toEqual([]);
  });

  // Full-range doubles hit the special values; moderate ones hit where the libms disagree most.
  const double = fc.oneof(fc.double(), fc.double({ min: -40, max: 40 }));
  it.each(RECORDABLE_OPS.filter(([op]) => op !== 'powConst'))('%s on random doubles', (op, arity) => {
    const point = fc.tuple(...Array.from({ length: arity }, () => double));
    fc.assert(fc.property(point, (p) => disagreements(wasm, op, p).length === 0), { numRuns: 300 });
  });

  it('powConst on random doubles', () => {
    fc.assert(fc.property(double, double, (x, c) => disagreements(wasm, 'powConst', [x], c).length === 0), { numRuns: 1000 });
  });
});

// The JS engine's sweeps write the commonest ops out (add... and exp, log, log1p, sin, cos, sqrt,
// tanh; the partials of exp, log, log1p and sqrt, in the reverse and tangent sweeps) instead of
// calling its rules: they must give the rules' own bits, for every op of one operand, on the grid
// (a gradient and a tangent along 1 are pa, left out where pa is 0).
it.each(RECORDABLE_OPS.filter(([, arity]) => arity === 1))('the JS engine\'s sweeps give its rules\' bits: %s', (op) => {
  const code = Op[op as keyof typeof Op] as number;
  const wrong = EDGE_GRID.flatMap((x) => {
    const [value, gradient] = valueAndGradient(js, op, [x]);
    // The tangent sweep along 1 takes the same partial.
    js.reset();
    const input = js.variable(x), tangent = js.jvp([input], [1], [recordOp(js, op, [input])])[0]!;
    const y = forwardRule(code, x, x, 0), pa = partials(code, x, x, y);
    const want = [y, pa !== 0 ? 0 + pa : 0, pa !== 0 ? pa : 0];
    const got = [value!, gradient!, tangent];
    return got.every((v, k) => sameNumber(v, want[k]!)) ? [] : [`${op}(${show(x)}): [${got.map(show)}], rules [${want.map(show)}]`];
  });
  expect(wrong).toEqual([]);
});

it('exact ops are compared bit for bit (-0 against +0 is a disagreement)', () => {
  expect(agree('add', -0, 0, false)).toBe(false);
  expect(agree('exp', -0, 0, false)).toBe(true);
});
