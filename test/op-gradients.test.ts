// Every differentiable op against finite differences (6-point stencil) over the grid, on both
// backends, wherever the op is smooth; ops with zero gradient give exactly 0 everywhere.
import { beforeAll, describe, expect, it } from 'vitest';
import { finiteDifferenceGradient, normwiseError, type OpName, type Tape } from '../src/index.ts';
import {
  BINARY_REGIONS, EDGE_GRID, GRID, POW_CONST_EXPONENTS, RECORDABLE_OPS, SELECT_REGIONS,
  UNARY_EXTRA_POINTS, UNARY_REGIONS, ZERO_GRADIENT_OPS, pairs, powConstRegions, recordOp, show, smoothAt, step, type Region,
} from './op-cases.ts';
import { BACKENDS, tapeOn } from './support.ts';

const TOLERANCE = 1e-7;
// Operands for the branches of select: finite, signed zero, tiny and huge.
const BRANCH_VALUES = [0, -0, -1, 2.5, 5e-324, -1e300];

interface Sweep { checked: number; failures: string[] }

// Finite differences cannot see a change in one operand that is below the rounding of f (in
// 1e300 + z a step of 6e-6 in z is lost): their rounding error, about eps |f| / h, must stay well
// below the tolerance for the comparison to say anything.
function resolves(point: readonly number[], numeric: Float64Array, largestValue: number): boolean {
  const roundoff = (2 * Number.EPSILON * largestValue) / Math.min(...point.map(step));
  return roundoff < (TOLERANCE / 10) * Math.max(1, ...Array.from(numeric, Math.abs));
}

/** Compares tape and finite-difference gradients of `op` at every point where it is smooth. */
function sweep(tape: Tape, op: OpName, points: readonly number[][], regions: readonly Region[], exponent = 0): Sweep {
  let largestValue = 0;
  const valueAt = (p: ArrayLike<number>): number => {
    tape.reset();
    const value = recordOp(tape, op, tape.variables(p), exponent).value;
    largestValue = Math.max(largestValue, Math.abs(value));
    return value;
  };
  const failures: string[] = [];
  let checked = 0;
  for (const point of points) {
    if (!smoothAt(regions, point)) continue;
    largestValue = 0;
    const numeric = finiteDifferenceGradient(valueAt, point);
    if (!resolves(point, numeric, largestValue)) continue;
    checked++;
    tape.reset();
    const xs = tape.variables(point);
    const analytic = tape.gradient(recordOp(tape, op, xs, exponent), xs);
    const { error } = normwiseError(analytic, numeric);
    if (!(error < TOLERANCE)) {
      failures.push(`at (${point.map(show)}): tape ${Array.from(analytic)}, fd ${Array.from(numeric)}, error ${error}`);
    }
  }
  return { checked, failures };
}

function expectSmoothAgreement(result: Sweep, atLeast: number): void {
  expect(result.failures).toEqual([]);
  // Guards against a region so narrow that the check passes vacuously.
  expect(result.checked).toBeGreaterThanOrEqual(atLeast);
}

it('the tables cover every op a user can record', () => {
  const covered = new Set<string>([
    ...Object.keys(UNARY_REGIONS), ...Object.keys(BINARY_REGIONS), ...ZERO_GRADIENT_OPS, 'powConst', 'select',
  ]);
  expect(RECORDABLE_OPS.map(([name]) => name).filter((name) => !covered.has(name))).toEqual([]);
});

describe.each(BACKENDS)('op gradients match finite differences (%s)', (backend) => {
  let tape: Tape;
  beforeAll(async () => {
    tape = await tapeOn(backend);
  });

  it.each(Object.entries(UNARY_REGIONS))('%s', (op, regions) =>
    expectSmoothAgreement(sweep(tape, op as OpName, [...GRID, ...(UNARY_EXTRA_POINTS[op as keyof typeof UNARY_EXTRA_POINTS] ?? [])].map((x) => [x]), regions), 4));

  it.each(Object.entries(BINARY_REGIONS))('%s', (op, regions) =>
    expectSmoothAgreement(sweep(tape, op as OpName, pairs(GRID), regions), 60));

  it.each(POW_CONST_EXPONENTS)('powConst, x^%s', (c) =>
    expectSmoothAgreement(sweep(tape, 'powConst', GRID.map((x) => [x]), powConstRegions(c), c), 6));

  it('select', () => {
    const points = GRID.flatMap((c) => BRANCH_VALUES.flatMap((a) => BRANCH_VALUES.map((b) => [c, a, b])));
    expectSmoothAgreement(sweep(tape, 'select', points, SELECT_REGIONS), 300);
  });

  it.each(ZERO_GRADIENT_OPS)('%s has exactly zero gradient, NaN and Infinity included', (op) => {
    const points = RECORDABLE_OPS.find(([name]) => name === op)![1] === 1 ? EDGE_GRID.map((x) => [x]) : pairs(EDGE_GRID);
    const nonzero = points.flatMap((point) => {
      tape.reset();
      const xs = tape.variables(point);
      const g = Array.from(tape.gradient(recordOp(tape, op, xs), xs));
      return g.every((gk) => Object.is(gk, 0)) ? [] : [`at (${point.map(show)}): ${g.map(show)}`];
    });
    expect(nonzero).toEqual([]);
  });
});
