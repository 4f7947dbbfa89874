// Fuzzing fromBytes: no byte string may crash, trap or hang the core. Random bytes, and valid
// tapes mutated (bit flips, byte and word overwrites, truncations, insertions) with the checksum
// forged again so the structural checks are what stands between the bytes and the core. Each
// input either throws FormatError, or loads into a function whose every entry point returns
// numbers; the only errors allowed from a loaded function are tapegrad's own (BranchChangedError
// where a guard fails at the inputs we try).
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { BranchChangedError, CapacityError, FormatError, TapegradError, compile, fromBytes, init, type CompiledFunction, type Var, type Vec } from '../src/index.ts';
import { dagArbitrary, dagSum } from './dag-arbitrary.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

/** Header bytes: 32 for format version 1, 40 for version 2. */
function headerOf(bytes: Uint8Array): number {
  return bytes.length >= 6 && bytes[4] === 1 && bytes[5] === 0 ? 32 : 40;
}

/** FNV-1a, 32 bits: the checksum the format stores at offset 28, of every other byte (version
 *  4) or of the bytes after the header (versions 1 to 3). */
function forgeChecksum(bytes: Uint8Array): Uint8Array {
  const header = headerOf(bytes);
  if (bytes.length < header) return bytes;
  const whole = bytes[4]! >= 4 || bytes[5] !== 0;
  let h = 2166136261;
  if (whole) for (let i = 0; i < 28; i++) h = Math.imul(h ^ bytes[i]!, 16777619) >>> 0;
  for (let i = whole ? 32 : header; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 16777619) >>> 0;
  new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).setUint32(28, h, true);
  return bytes;
}

// ---- a corpus of valid tapes that together hold every kind of section and node ----


const CORPUS: Uint8Array[] = [
  // select (arg + select nodes), a guard, two outputs
  compile(
    (x) => {
      const [a, b] = x as [Var, Var];
      const s = a.tape.select(a.lt(b), a.mul(2), b.add(1));
      return a.gt(0).value ? [s.mul(a), b.exp()] : [s, b];
    },
    { inputs: 2, backend: 'js', at: [0.5, 1.5] },
  ).toBytes(),
  // several guards (a loop), transcendental ops
  compile(
    (x) => {
      let y = x[0]!;
      while (y.gt(0.1).value) y = y.mul(0.5).sin();
      return y.add(x[1]!.log1p());
    },
    { inputs: 2, backend: 'js', at: [3, 0.5] },
  ).toBytes(),
  // min/max/abs/relu, comparisons as data, pow, a constant output
  compile(
    (x) => {
      const [a, b, c] = x as [Var, Var, Var];
      return [a.min(b).add(c.abs()).mul(b.max(c).relu()).add(a.pow(b)).add(c.le(a)), 3];
    },
    { inputs: 3, backend: 'js', at: [0.25, 2, -1] },
  ).toBytes(),
  // a plain input as the output; the smallest tape
  compile((x) => x[0]!, { inputs: 1, backend: 'js', at: [2] }).toBytes(),
  // one input vector through every kind of vector node: matmul (vparam), transpose, slice,
  // gather (a constant index vector), concat (arg carriers), select (its arg), reductions
  compile(
    (x) => {
      const m = x.reshape([2, 3]);
      const y = m.matmul(m.transpose()).reshape([4]).add(x.slice(2).gather([0, 3, 1, 1]));
      const z = x.tape.concat([y, x.get(0), x.slice(0, 2)]).tanh();
      return x.tape.select(z.gt(0), z, z.square()).logSumExp().add(x.dot(x)).add(z.max());
    },
    { inputs: 6, vector: true, backend: 'js', at: [0.5, -1, 2, 0.25, -0.75, 1.5] },
  ).toBytes(),
  // scalar inputs feeding vector ops, a vector output
  compile((x) => x[0]!.tape.stack(x).exp().mul(x[1]!).softmax(), { inputs: 3, backend: 'js', at: [0.1, 0.2, 0.3] }).toBytes(),
];

// ---- mutations ----

type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'word'; at: number; value: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'remove'; at: number; length: number };

const mutationArbitrary: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.nat({ max: 7 }) }),
  fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.nat({ max: 255 }) }),
  // Small integers land as op codes, operand ids, outputs and guards near the valid range.
  fc.record({ kind: fc.constant('word' as const), at: fc.nat(), value: fc.oneof(fc.integer({ min: -3, max: 60 }), fc.integer()) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }) }),
  fc.record({ kind: fc.constant('remove' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 16 }) }),
);

function mutate(source: Uint8Array, mutations: readonly Mutation[]): Uint8Array {
  let bytes = source.slice();
  for (const m of mutations) {
    if (bytes.length === 0) break;
    const at = m.at % bytes.length;
    switch (m.kind) {
      case 'flip': bytes[at] ^= 1 << m.bit; break;
      case 'byte': bytes[at] = m.value; break;
      case 'word': {
        // 4-byte aligned, where the format keeps its i32 fields.
        const w = at & ~3;
        if (w + 4 <= bytes.length) new DataView(bytes.buffer).setInt32(w, m.value, true);
        break;
      }
      case 'truncate': bytes = bytes.slice(0, at); break;
      case 'insert': {
        const next = new Uint8Array(bytes.length + m.bytes.length);
        next.set(bytes.subarray(0, at));
        next.set(m.bytes, at);
        next.set(bytes.subarray(at), at + m.bytes.length);
        bytes = next;
        break;
      }
      case 'remove': bytes = Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + m.length)]); break;
    }
  }
  return bytes;
}

// ---- the property ----

function expectOnlyTapegradErrors(call: () => unknown, what: string): void {
  try {
    call();
  } catch (e) {
    if (!(e instanceof TapegradError)) throw new Error(`${what} threw a non-tapegrad error: ${String(e)}`, { cause: e });
  }
}

function expectNumbers(values: unknown, length: number, what: string): void {
  expect(values, what).toBeInstanceOf(Float64Array);
  expect((values as Float64Array).length, what).toBe(length);
}

/** Every entry point of a loaded function at a few inputs: numbers out, or a tapegrad error. */
function exercise(f: CompiledFunction, recorded: Float64Array): void {
  const n = f.inputs;
  const rows = [recorded, new Float64Array(n), new Float64Array(n).fill(-1.5), new Float64Array(n).fill(NaN)];
  for (const x of rows) {
    expectOnlyTapegradErrors(() => expectNumbers(f.gradient(x), n, 'gradient'), 'gradient');
    expectOnlyTapegradErrors(() => {
      const v = f.value(x);
      if (typeof v !== 'number') expectNumbers(v, f.outputs, 'value');
    }, 'value');
    expectOnlyTapegradErrors(() => expectNumbers(f.hvp(x, x), n, 'hvp'), 'hvp');
    expectOnlyTapegradErrors(() => expectNumbers(f.jvp(x, x), f.outputs, 'jvp'), 'jvp');
    expectOnlyTapegradErrors(() => expectNumbers(f.vjp(x, new Float64Array(f.outputs).fill(1)), n, 'vjp'), 'vjp');
  }
  const X = new Float64Array(5 * n);
  for (let r = 0; r < 5; r++) X.set(rows[r % rows.length]!, r * n);
  expectOnlyTapegradErrors(() => expectNumbers(f.gradientBatch(X, 5), 5 * n, 'gradientBatch'), 'gradientBatch');
  // The recorded inputs satisfy every guard (fromBytes checked them) but for rounding ties, which
  // load for bytes of the other engine: so these succeed, or cross a guard whose operands are
  // equal but for rounding: the gradient where the tape has one scalar output, vjp with any number.
  atRecordedInputs(f, () => {
    if (f.outputs === 1 && f.recorded!.outputs[0]! >= 0) {
      expectNumbers(f.gradient(recorded), n, 'gradient at the recorded inputs');
      return;
    }
    // The replay comes first: a guard it crosses is the error there, checked as a tie above.
    let refused: unknown = null;
    try {
      f.gradient(recorded);
    } catch (e) {
      if (e instanceof BranchChangedError) throw e;
      refused = e;
    }
    expect(String((refused as Error | null)?.message)).toContain('needs a function with one scalar output');
  });
  atRecordedInputs(f, () => expectNumbers(f.vjp(recorded, new Float64Array(f.outputs).fill(1)), n, 'vjp at the recorded inputs'));
}

function atRecordedInputs(f: CompiledFunction, call: () => void): void {
  try {
    call();
  } catch (e) {
    if (!(e instanceof BranchChangedError)) throw e;
    const { a, b, val } = f.recorded!.tape.engine.views;
    const x = val[a[e.node]!]!, y = val[b[e.node]!]!;
    expect(Math.abs(x - y), `guard ${e.node} crossed at the recorded inputs: ${x} against ${y}`).toBeLessThanOrEqual(2 ** -40 * Math.max(Math.abs(x), Math.abs(y)));
  }
}

/** fromBytes on both backends: FormatError on both, or a function that survives `exercise`. */
const FUZZ_MEMORY = 64 << 20;

function check(bytes: Uint8Array): 'refused' | 'loaded' | 'too large' {
  const outcomes = BACKENDS.map((backend) => {
    let loaded: CompiledFunction;
    try {
      // A valid header can describe a tape far larger than its bytes (an outer product of two
      // short vectors): the memory limit turns that into a CapacityError instead of gigabytes.
      loaded = fromBytes(bytes, { backend, maxMemoryBytes: FUZZ_MEMORY });
    } catch (e) {
      if (e instanceof CapacityError) return 'too large' as const;
      if (!(e instanceof FormatError)) throw new Error(`fromBytes on ${backend} threw ${String(e)}, not a FormatError`, { cause: e });
      expect(e.code).toBe('INVALID_FORMAT');
      return 'refused' as const;
    }
    // The first leaves are the input nodes (or the input vector's elements, the first element
    // values): their stored values are the recorded inputs.
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const [n, inputs, m, g, l] = [8, 12, 16, 20, 24].map((o) => view.getUint32(o, true)) as [number, number, number, number, number];
    const leaves = Math.ceil((headerOf(bytes) + Math.ceil(n / 4) * 4 + 8 * n + 4 * m + 4 * g) / 8) * 8;
    const first = (view.getUint16(6, true) & 1) === 1 ? leaves + 8 * l + 8 * g : leaves;
    const recorded = Float64Array.from({ length: inputs }, (_, k) => view.getFloat64(first + 8 * k, true));
    exercise(loaded, recorded);
    return 'loaded' as const;
  });
  // Validation happens before the engine is involved: both backends decide alike.
  expect(outcomes[1]).toBe(outcomes[0]);
  return outcomes[0]!;
}

describe('fromBytes never crashes, traps or hangs on malformed input', () => {
  it('accepts and exercises the unmutated corpus', () => {
    for (const bytes of CORPUS) expect(check(bytes)).toBe('loaded');
  });

  it('random byte strings are refused with FormatError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.boolean(), (bytes, withMagic) => {
        if (withMagic && bytes.length >= 8) {
          // Past the magic and version checks, into the header and length checks.
          bytes.set([0x54, 0x47, 0x52, 0x44, 1, 0], 0);
          forgeChecksum(bytes);
        }
        expect(check(bytes)).toBe('refused');
      }),
      { numRuns: 2000 },
    );
  });

  it('random headers over a random body, checksum forged, are refused or load safely', () => {
    const small = fc.integer({ min: 0, max: 12 });
    fc.assert(
      fc.property(small, small, small, small, small, fc.uint8Array({ maxLength: 600 }), (n, inputs, m, g, l, body) => {
        // A header whose sizes match the body length, so the structural checks run on random content.
        const at = Math.ceil((32 + Math.ceil(n / 4) * 4 + 8 * n + 4 * m + 4 * g) / 8) * 8 + 8 * l + 8 * g;
        const bytes = new Uint8Array(at);
        bytes.set(body.subarray(0, Math.max(0, at - 32)), 32);
        const view = new DataView(bytes.buffer);
        bytes.set([0x54, 0x47, 0x52, 0x44, 1, 0], 0);
        [n, inputs, m, g, l].forEach((v, k) => view.setUint32(8 + 4 * k, v, true));
        check(forgeChecksum(bytes));
      }),
      { numRuns: 1000 },
    );
  });

  it('random programs (valid op codes, small operand ids, any leaf values), checksum forged, are refused or load safely', () => {
    // Closer to valid than random bytes: inputs first, op codes mostly in the table, operands
    // mostly earlier nodes, a consistent leaf count. Many load, and run arbitrary op sequences
    // (arg and select in any arrangement the checks let through) at any values.
    const program = fc.integer({ min: 1, max: 24 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        inputs: fc.integer({ min: 1, max: n }),
        ops: fc.array(fc.oneof({ weight: 9, arbitrary: fc.integer({ min: 0, max: 50 }) }, { weight: 1, arbitrary: fc.nat({ max: 255 }) }), { minLength: n, maxLength: n }),
        a: fc.array(fc.integer({ min: -1, max: n }), { minLength: n, maxLength: n }),
        b: fc.array(fc.integer({ min: -1, max: n }), { minLength: n, maxLength: n }),
        outputs: fc.array(fc.integer({ min: 0, max: n - 1 }), { minLength: 1, maxLength: 3 }),
        guards: fc.array(fc.integer({ min: 0, max: n - 1 }), { maxLength: 2 }),
        values: fc.array(fc.oneof(fc.double(), fc.double({ min: -2, max: 2 })), { minLength: n, maxLength: n }),
        expected: fc.array(fc.constantFrom(0, 1), { minLength: 2, maxLength: 2 }),
      }),
    );
    let loaded = 0;
    fc.assert(
      fc.property(program, (p) => {
        const ops = p.ops.map((op, i) => (i < p.inputs ? 1 : op === 1 ? 0 : op));
        const leafValues = p.values.filter((_, i) => ops[i]! <= 1);
        const [n, m, g, l] = [p.n, p.outputs.length, p.guards.length, leafValues.length];
        const opsEnd = 32 + Math.ceil(n / 4) * 4;
        const leavesAt = Math.ceil((opsEnd + 8 * n + 4 * m + 4 * g) / 8) * 8;
        const bytes = new Uint8Array(leavesAt + 8 * l + 8 * g);
        const view = new DataView(bytes.buffer);
        bytes.set([0x54, 0x47, 0x52, 0x44, 1, 0], 0);
        [n, p.inputs, m, g, l].forEach((v, k) => view.setUint32(8 + 4 * k, v, true));
        bytes.set(ops, 32);
        for (let i = 0; i < n; i++) {
          view.setInt32(opsEnd + 4 * i, p.a[i]!, true);
          view.setInt32(opsEnd + 4 * n + 4 * i, p.b[i]!, true);
        }
        p.outputs.forEach((o, j) => view.setInt32(opsEnd + 8 * n + 4 * j, o, true));
        p.guards.forEach((o, k) => view.setInt32(opsEnd + 8 * n + 4 * m + 4 * k, o, true));
        leafValues.forEach((v, k) => view.setFloat64(leavesAt + 8 * k, v, true));
        p.guards.forEach((_, k) => view.setFloat64(leavesAt + 8 * l + 8 * k, p.expected[k]!, true));
        if (check(forgeChecksum(bytes)) === 'loaded') loaded++;
      }),
      { numRuns: 8000 },
    );
    expect(loaded).toBeGreaterThan(50);
  });

  it('mutated valid tapes with the checksum forged again are refused or load safely', () => {
    const counts = { refused: 0, loaded: 0, 'too large': 0 };
    fc.assert(
      fc.property(fc.nat({ max: CORPUS.length - 1 }), fc.array(mutationArbitrary, { minLength: 1, maxLength: 4 }), (pick, mutations) => {
        counts[check(forgeChecksum(mutate(CORPUS[pick]!, mutations)))]++;
      }),
      { numRuns: 8000 },
    );
    // Bit flips in leaf values keep a tape valid: the fuzzer does reach loaded functions.
    expect(counts.loaded).toBeGreaterThan(50);
    expect(counts.refused).toBeGreaterThan(50);
  });

  it('mutated random-DAG tapes with the checksum forged again are refused or load safely', () => {
    fc.assert(
      fc.property(dagArbitrary({ maxNodes: 40, maxInputs: 4 }), fc.array(mutationArbitrary, { minLength: 1, maxLength: 3 }), (dag, mutations) => {
        const bytes = compile(dagSum(dag), { inputs: dag.inputs.length, backend: 'js', at: dag.inputs }).toBytes();
        check(forgeChecksum(mutate(bytes, mutations)));
      }),
      { numRuns: 1000 },
    );
  });
});
