// The op list compiled into the wasm core and the one in src/ops.ts are written separately; this
// is the test that fails when they drift (a new op added to one only, a renumbering, an arity).
import { describe, expect, it } from 'vitest';
import { Op, OP_NAMES, OP_TABLE, SCALAR_OP_TABLE, ZERO_GRADIENT, ZERO_GRADIENT_OPS, opNameOf } from '../src/ops.ts';
import { opArity } from '../src/index.ts';
import { instantiateCore, loadCoreModule, readCoreString, simdAvailable, type CoreExports } from '../src/wasm/loader.ts';

// Every build of the core that ships; SIMD only where this runtime validates it.
const VARIANTS = simdAvailable() ? (['scalar', 'simd'] as const) : (['scalar'] as const);

describe.each(VARIANTS)('the %s core', (variant) => {
  const core = async (): Promise<CoreExports> => instantiateCore(await loadCoreModule(variant));

  it('lists the same (code, name, arity) as OP_TABLE, in the same order', async () => {
    const c = await core();
    const fromCore = Array.from({ length: c.opCount() }, (_, code) => [code, readCoreString(c, c.opName(code)), c.opArity(code)]);
    const fromTable = OP_TABLE.map(([name, arity], code) => [code, name, arity]);
    expect(fromCore).toEqual(fromTable);
  });

  it('knows no op past its count', async () => {
    // An understated opCount would hide ops the table lacks.
    const c = await core();
    expect(readCoreString(c, c.opName(c.opCount()))).toBe('');
    expect(c.opArity(c.opCount())).toBe(-1);
  });
});

it('Op, OP_NAMES and opArity are views of OP_TABLE', () => {
  expect(OP_NAMES).toEqual(OP_TABLE.map(([name]) => name));
  for (const [code, [name, arity]] of OP_TABLE.entries()) {
    expect(Op[name]).toBe(code);
    expect(opArity(name)).toBe(arity);
  }
  expect(new Set(OP_NAMES).size).toBe(OP_NAMES.length);
});

// A probe: `OP_NAMES.sort()` from JavaScript renamed every op the library reported (log's NaN
// named digamma, valid bytes refused); typed readonly, now frozen too, rows and all, as Op is.
it('the exported op tables are frozen, and opNameOf refuses what is no op code', () => {
  for (const table of [OP_NAMES, OP_TABLE, SCALAR_OP_TABLE, ...OP_TABLE]) expect(Object.isFrozen(table)).toBe(true);
  expect(() => (OP_NAMES as string[]).sort()).toThrow(TypeError);
  expect(opNameOf(Op.exp)).toBe('exp');
  for (const bad of [Symbol('op'), 'abc', {}, 1n]) {
    expect(() => opNameOf(bad as unknown as number)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^opNameOf: expected an op code \(a number\), got /) }));
  }
});

// The core tells the zero-gradient ops by a range of codes (zeroGradient in assembly/ops.ts); JS by
// the list. An op added inside the range, or one of the list moved out of it, would part them.
it('the zero-gradient ops are exactly the codes from floor to eq, and ZERO_GRADIENT marks them', () => {
  const codes = ZERO_GRADIENT_OPS.map((name) => Op[name]).sort((p, q) => p - q);
  expect(codes).toEqual(Array.from({ length: Op.eq - Op.floor + 1 }, (_, k) => Op.floor + k));
  expect(Array.from(ZERO_GRADIENT.keys()).filter((code) => ZERO_GRADIENT[code])).toEqual(codes);
});

it('opArity names a name no op has (from JS it reached a raw TypeError)', () => {
  expect(opArity('add')).toBe(2);
  expect(() => opArity('bogus' as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'opArity: no op is named the string "bogus"' }));
});
