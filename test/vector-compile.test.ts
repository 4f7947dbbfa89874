// Compiled functions over vector tapes: record once with `{ vector: true }` (or scalar inputs
// feeding vector ops), replay at new inputs, batches, the tangent and second-order sweeps, guards,
// and the binary format (versions 2 and 3 store vector nodes; version-1 and version-2 bytes still
// load, their op codes translated).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { FORMAT_VERSION, compile, createTape, fromBytes, init, type Vec } from '../src/index.ts';
import { BACKENDS } from './support.ts';

beforeAll(async () => {
  await init();
});

// Every kind of vector node on one tape: matmul (and its parameters), transpose, slice, gather,
// concat, select, the reductions, broadcasting of a scalar and of a row.
function mixed(x: Vec): ReturnType<Vec['sum']> {
  const t = x.tape;
  const m = x.reshape([2, 3]);
  const y = m.matmul(m.transpose()).reshape([4]).add(x.slice(2).gather([0, 3, 1, 1]));
  const z = t.concat([y, x.get(0), x.slice(0, 2)]).tanh();
  const w = t.select(z.gt(0), z, z.square()).mul(m.add([1, 2, 3]).sum());
  return w.logSumExp().add(x.dot(x)).add(z.max()).add(x.sigmoid().mean());
}

const POINTS = [
  [0.5, -1, 2, 0.25, -0.75, 1.5],
  [0.1, 0.2, -0.3, 0.4, 0.5, -0.6],
  [-2, 1, 0.5, 3, -1, 0],
];

/** The same function on a fresh tape: value and gradient through Tape.gradient. */
function onTape(backend: 'wasm' | 'js', x: number[]): { value: number; grad: Float64Array; hv: Float64Array } {
  const tape = createTapeSync(backend);
  const v = tape.vector(x);
  const y = mixed(v);
  const grad = tape.gradient(y, [v]);
  const hv = tape.hvp(y, [v], [1, 0, -1, 0.5, 0, 2]);
  return { value: y.value, grad, hv };
}

let createTapeSync: (backend: 'wasm' | 'js') => Awaited<ReturnType<typeof createTape>>;
beforeAll(async () => {
  const wasm = await createTape({ backend: 'wasm' });
  const js = await createTape({ backend: 'js' });
  createTapeSync = (backend) => {
    const t = backend === 'wasm' ? wasm : js;
    t.reset();
    return t;
  };
});

describe.each(BACKENDS)('compiled vector functions (%s)', (backend) => {
  it('replays value, gradient, hvp, jvp and vjp bit-identically to a fresh recording at each point', () => {
    const f = compile(mixed, { inputs: 6, vector: true, backend, at: POINTS[0] });
    expect(f.generatedSweeps).toBe('none'); // vector nodes replay in the interpreter's vector rules
    for (const x of POINTS) {
      const ref = onTape(backend, x);
      expect(f.value(x)).toBe(ref.value);
      expect([...f.gradient(x)]).toEqual([...ref.grad]);
      expect([...f.hvp(x, [1, 0, -1, 0.5, 0, 2])]).toEqual([...ref.hv]);
      const t = [0.3, -0.2, 0.1, 1, 0, -1];
      expect(f.jvp(x, t)[0]).toBeCloseTo(ref.grad.reduce((s, g, k) => s + g * t[k]!, 0), 12);
      expect([...f.vjp(x, [2])]).toEqual([...ref.grad.map((g) => 2 * g)]);
    }
  });

  it('gradientBatch equals row-by-row gradients', () => {
    const f = compile(mixed, { inputs: 6, vector: true, backend });
    const X = Float64Array.from(POINTS.flat());
    const batched = f.gradientBatch(X, POINTS.length);
    const rows = POINTS.flatMap((x) => [...onTape(backend, x).grad]);
    expect([...batched]).toEqual(rows);
  });

  it('a vector output: value, jvp and vjp per element', () => {
    const f = compile((x: Vec) => x.exp().mul(x.get(1)).softmax(), { inputs: 3, vector: true, backend });
    const x = [0.1, -0.4, 0.7];
    const tape = createTapeSync(backend);
    const v = tape.vector(x);
    const y = v.exp().mul(v.get(1)).softmax();
    expect([...(f.value(x) as Float64Array)]).toEqual([...y.value]);
    const cot = [1, -2, 0.5];
    expect([...f.vjp(x, cot)]).toEqual([...tape.vjp([y], cot, [v])]);
    expect([...f.jvp(x, [1, 0, 0])]).toEqual([...tape.jvp([v], [1, 0, 0], [y])]);
  });

  it('scalar inputs feeding vector ops (stack) replay like scalar tapes', () => {
    const f = compile((x) => x[0]!.tape.stack(x).square().mul([1, 2, 3]).sum(), { inputs: 3, backend });
    expect([...f.gradient([1, 2, 3])]).toEqual([2, 8, 18]);
    expect([...f.gradient([-1, 0.5, 2])]).toEqual([-2, 2, 12]);
    expect([...f.gradientBatch(new Float64Array([1, 2, 3, -1, 0.5, 2]), 2)]).toEqual([2, 8, 18, -2, 2, 12]);
  });

  it('a guard read from a vector reduction records again when the branch changes', () => {
    const f = compile((x: Vec) => (x.sum().gt(0).value ? x.square().sum() : x.exp().sum()), { inputs: 2, vector: true, backend });
    expect([...f.gradient([1, 2])]).toEqual([2, 4]);
    expect([...f.gradient([-1, -2])]).toEqual([Math.exp(-1), Math.exp(-2)]);
    expect(f.rerecords).toBe(1);
  });

  it('toBytes / fromBytes: the same bytes from either backend, the same results on both', () => {
    const bytes = compile(mixed, { inputs: 6, vector: true, backend, at: POINTS[0] }).toBytes();
    const other = compile(mixed, { inputs: 6, vector: true, backend: backend === 'wasm' ? 'js' : 'wasm', at: POINTS[0] }).toBytes();
    expect([...bytes]).toEqual([...other]);
    expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(FORMAT_VERSION);
    for (const target of BACKENDS) {
      const g = fromBytes(bytes, { backend: target });
      for (const x of POINTS.slice(0, 2)) {
        const ref = onTape(target, x);
        expect(g.value(x)).toBe(ref.value);
        expect([...g.gradient(x)]).toEqual([...ref.grad]);
      }
    }
  });
});

describe('format version 1', () => {
  // Written by the build before vector ops (commit 4342870) from
  //   (x) => { r = rosenbrock(x0, x1); s = x2.gt(0).value ? x2.log() : x2.neg().exp();
  //            return r.add(s.mul(x0.pow(2.5))).add(x1.tanh()) }   at [1.2, 1, 0.5]
  // whose value and gradient there it printed as below.
  const bytes = new Uint8Array(readFileSync(new URL('./fixtures/format-v1.bin', import.meta.url)));

  it.each(BACKENDS)('still loads, on %s, and replays the recorded gradient', (backend) => {
    expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(1);
    const f = fromBytes(bytes, { backend });
    expect(f.value([1.2, 1, 0.5])).toBe(19.068195398140052);
    const g = f.gradient([1.2, 1, 0.5]);
    expect(g[0]).toBeCloseTo(209.32208592121722, 10);
    expect(g[1]).toBeCloseTo(-87.58002565838596, 10);
    expect(g[2]).toBeCloseTo(3.1548819312297565, 10);
    // Across the guard, a function loaded from bytes cannot record again.
    expect(() => f.gradient([1.2, 1, -0.5])).toThrow(/comes out the other way/);
  });
});

describe('format version 2', () => {
  // Written by the build before the special-function ops (commit 30ee734) from `mixed` above,
  // compiled with { vector: true } at POINTS[0]; it holds every vector op, whose codes move when
  // scalar ops are added. Values and gradients as that build printed them.
  const bytes = new Uint8Array(readFileSync(new URL('./fixtures/format-v2.bin', import.meta.url)));
  const expected: [number[], number, number[]][] = [
    [POINTS[0]!, 25.575117133899383, [2.041161361399102, -0.9771030204286834, 5.022319942094606, 1.5856301275483191, -0.5093843194236012, 4.112310721764372]],
    [POINTS[1]!, 12.461412529896467, [1.2734920961532752, 1.5300626472508918, -0.08091413556180616, 9.41038022394707, 5.933262101570231, -5.289190127578461]],
  ];

  it.each(BACKENDS)('still loads, on %s, and replays the recorded values and gradients', (backend) => {
    expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(2);
    const f = fromBytes(bytes, { backend });
    for (const [x, value, grad] of expected) {
      expect(f.value(x)).toBeCloseTo(value, 12);
      const g = f.gradient(x);
      grad.forEach((gk, k) => expect(g[k]).toBeCloseTo(gk, 12));
      // The same function recorded by this build gives the same results.
      expect(f.value(x)).toBe(onTape(backend, x).value);
    }
  });
});

describe('format version 3', () => {
  // Written by the build before version 4 (commit 355073f) from `special` below, compiled with
  // { vector: true } at POINTS[0]: every vector op (min too, which the version-2 file lacks),
  // special-function ops and a guard. Version 4
  // kept its layout and codes and moved the checksum over the header; these bytes' checksum
  // covers the body only. Values and gradients as that build printed them.
  const special = (x: Vec): ReturnType<Vec['sum']> => {
    const s = x.get(0).gt(0).value ? x.get(1).erfc() : x.get(1).normCdf();
    return mixed(x).add(s).add(x.get(3).erf()).add(x.get(2).lgamma()).add(x.min());
  };
  const bytes = new Uint8Array(readFileSync(new URL('./fixtures/format-v3.bin', import.meta.url)));
  const expected: [number[], number, number[]][] = [
    [POINTS[0]!, 26.694144317017333, [2.041161361399102, -0.3922105178492781, 5.445104277193073, 2.645644256924433, -0.5093843194236012, 4.112310721764372]],
    [POINTS[1]!, 14.531942346590261, [1.2734920961532752, 0.4459278601460288, 2.032395644073593, 10.371921522786378, 5.933262101570231, -4.289190127578461]],
  ];

  it.each(BACKENDS)('still loads, on %s, replays the recorded values and gradients, and saves as version 4', (backend) => {
    expect(new DataView(bytes.buffer).getUint16(4, true)).toBe(3);
    const f = fromBytes(bytes, { backend });
    const same = compile(special, { inputs: 6, vector: true, backend, at: POINTS[0] });
    for (const [x, value, grad] of expected) {
      expect(f.value(x)).toBeCloseTo(value, 12);
      const g = f.gradient(x);
      grad.forEach((gk, k) => expect(g[k]).toBeCloseTo(gk, 12));
      // The same function recorded by this build gives the same results.
      expect(f.value(x)).toBe(same.value(x));
    }
    const saved = f.toBytes();
    expect(new DataView(saved.buffer).getUint16(4, true)).toBe(FORMAT_VERSION);
    expect(saved).toEqual(same.toBytes());
  });
});

