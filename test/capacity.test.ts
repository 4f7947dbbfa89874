// Capacity: a tape with limits (maxNodes, maxMemoryBytes) filled by any mix of ops stops with a
// CapacityError naming the limit that binds, records nothing of the op that did not fit, keeps
// what it holds intact, and after reset() records the next graph as a fresh tape would. And a
// tape of 10^7 nodes records and differentiates correctly on both backends.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CapacityError, compile, createTape, createTapeSync, defineFunction, fromBytes, type BackendKind, type Tape, type Var } from '../src/index.ts';
import { dagArbitrary, recordDag } from './dag-arbitrary.ts';
import { ROOT } from './browser/harness.ts';
import { BACKENDS, tapeOn } from './support.ts';

const sum3 = defineFunction({
  name: 'sum3',
  forward: (xs) => xs[0]! + xs[1]! + xs[2]!,
  vjp: (_xs, _y, g) => [g, g, g],
});

/** One recording step: `shape` picks the op (and so how many nodes it records at once). */
interface Step {
  shape: number;
  a: number;
  b: number;
  c: number;
}

// Nodes each shape records: single-node ops, an op with a number operand (the constant too),
// powConst through the handle API, select with a number branch (constant, arg, select), and a
// custom function of three Vars (two arg nodes and the custom node).
const SHAPE_NODES = [1, 1, 2, 2, 3, 1, 2, 3, 1];

function apply(tape: Tape, vars: Var[], { shape, a, b, c }: Step): Var {
  const x = vars[a % vars.length]!, z = vars[b % vars.length]!;
  switch (shape) {
    case 0: return x.sin();
    case 1: return x.mul(z);
    case 2: return x.add(c);
    case 3: return x.pow(2);
    case 4: return tape.select(x, z, c);
    case 5: return tape.variable(c);
    case 6: return tape.handles.toVar(tape.handles.powConst(x.id, 3));
    case 7: return sum3(x, z, x);
    default: return tape.constant(c);
  }
}

const step = fc.record({
  shape: fc.integer({ min: 0, max: SHAPE_NODES.length - 1 }),
  a: fc.nat(),
  b: fc.nat(),
  c: fc.double({ min: -2, max: 2, noNaN: true }),
});

function bitsOf(vars: readonly Var[], read: (v: Var) => number): BigUint64Array {
  return new BigUint64Array(Float64Array.from(vars, read).buffer);
}

// README (Memory): under a small maxMemoryBytes the JS engine's node and element regions each
// grow within the limit on their own (the first to grow taking what it holds, a floor the other
// does not shrink), so a tape of a vector alone holds at most twice the limit and 7 nodes' and 7
// elements' bytes (the README said 7 nodes' bytes until a probe's vector of 10 took 456 under 210).
describe('the JS engine past a small maxMemoryBytes', () => {
  it('at most twice the limit and 287 bytes, what it records within the limit', async () => {
    for (let n = 1; n <= 60; n++) {
      for (let spare = 0; spare < 200; spare += 13) {
        const limit = 3 * 25 + 16 * n + spare;
        const t = await createTape({ backend: 'js', maxMemoryBytes: limit });
        const v = t.vector(new Float64Array(n).fill(1)), s = v.sum();
        expect(s.value).toBe(n);
        expect(t.memoryBytes, `a vector of ${n} under ${limit}`).toBeLessThanOrEqual(2 * limit + 7 * 25 + 7 * 16);
      }
    }
  });
});

describe.each(BACKENDS)('capacity (%s)', (backend) => {
  // Limits that are whole multiples of 8 nodes: see the failing tests below for the others.
  const limits = fc.record({
    nodes: fc.option(fc.integer({ min: 1, max: 400 }).map((k) => 8 * k), { nil: undefined }),
    memoryNodes: fc.option(fc.integer({ min: 1, max: 400 }).map((k) => 8 * k), { nil: undefined }),
    slack: fc.integer({ min: 0, max: 24 }),
  }).filter((l) => l.nodes !== undefined || l.memoryNodes !== undefined);

  it('random limits and op mixes: CapacityError names the binding limit, the failed op records nothing, reset() frees it all', async () => {
    const nodeBytes = (await tapeOn(backend)).nodeBytes;
    await fc.assert(
      fc.asyncProperty(limits, fc.array(step, { minLength: 1, maxLength: 50 }), dagArbitrary({ maxNodes: 60 }), async (limit, steps, next) => {
        const maxNodes = limit.nodes;
        const maxMemoryBytes = limit.memoryNodes === undefined ? undefined : limit.memoryNodes * nodeBytes + limit.slack;
        const tape = await tapeOn(backend, { maxNodes, maxMemoryBytes });
        const byMemory = maxMemoryBytes === undefined ? Infinity : Math.floor(maxMemoryBytes / nodeBytes);
        const room = Math.min(maxNodes ?? Infinity, byMemory);
        const [name, value] = (maxNodes ?? Infinity) <= byMemory ? ['maxNodes', maxNodes!] : ['maxMemoryBytes', maxMemoryBytes!];
        // The same steps on a tape without limits: what the limited tape holds must match it.
        const free = await tapeOn(backend);
        const vars = [tape.variable(0.5)], freeVars = [free.variable(0.5)];
        let error: unknown = null;
        for (let k = 0; error === null; k++) {
          const s = steps[k % steps.length]!;
          const before = tape.size;
          try {
            vars.push(apply(tape, vars, s));
          } catch (e) {
            error = e;
            // Nothing of the op that did not fit was recorded, and it did not fit.
            expect(tape.size).toBe(before);
            expect(before + SHAPE_NODES[s.shape]!).toBeGreaterThan(room);
            break;
          }
          freeVars.push(apply(free, freeVars, s));
          expect(tape.size).toBeLessThanOrEqual(room);
        }
        expect(error).toBeInstanceOf(CapacityError);
        expect((error as CapacityError).code).toBe('CAPACITY');
        expect((error as CapacityError).limit).toBe(value);
        expect((error as Error).message).toContain(`${name} = ${value}`);
        expect(tape.size * tape.nodeBytes).toBeLessThanOrEqual(maxMemoryBytes ?? Infinity);
        // What it holds is intact: values, and a sweep over it.
        expect(bitsOf(vars, (v) => v.value)).toEqual(bitsOf(freeVars, (v) => v.value));
        tape.backward(vars[vars.length - 1]!);
        free.backward(freeVars[freeVars.length - 1]!);
        expect(bitsOf(vars, (v) => v.grad)).toEqual(bitsOf(freeVars, (v) => v.grad));
        // Still full: the next op throws again.
        expect(() => { for (let k = 0; k <= room; k++) tape.constant(k); }).toThrow(CapacityError);

        // After reset: the next graph is what a fresh tape makes of it, if it fits at all.
        tape.reset();
        const fresh = await tapeOn(backend);
        const want = recordDag(fresh, next);
        fresh.backward(want.output);
        if (fresh.size <= room) {
          const got = recordDag(tape, next);
          tape.backward(got.output);
          const all = (r: typeof got) => [...r.inputs, ...r.nodes, r.output];
          expect(bitsOf(all(got), (v) => v.value)).toEqual(bitsOf(all(want), (v) => v.value));
          expect(bitsOf(all(got), (v) => v.grad)).toEqual(bitsOf(all(want), (v) => v.grad));
        } else {
          expect(() => recordDag(tape, next)).toThrow(CapacityError);
        }
        // And the whole budget is usable again, not just what the last graph left.
        tape.reset();
        const h = tape.handles;
        let hx = h.variable(1);
        while (tape.size < room) hx = h.cos(hx);
        expect(() => h.cos(hx)).toThrow(CapacityError);
      }),
      { numRuns: 60, seed: 4_242 },
    );
  });
});

// ---- Failing tests: bugs found by this file (see the report of issue 7) ----

// FAILING (bug): both engines allocate whole multiples of 8 slots, and when the limit is not one,
// they stop at the multiple below it: the tape holds fewer nodes than the limit allows, and the
// error says "out of memory: could not grow the tape past N nodes" with limit N, not the limit the
// user set. With maxNodes < 8 nothing can be recorded at all.
describe.each(BACKENDS)('a limit that is not a multiple of 8 nodes (%s)', (backend) => {
  it('maxNodes = 5, 13, 5003 and maxMemoryBytes = 100100 (4004 nodes): the tape holds that many and the error names the limit', async () => {
    const problems: string[] = [];
    const cases: Array<[{ maxNodes?: number; maxMemoryBytes?: number }, string, number]> = [
      [{ maxNodes: 5 }, 'maxNodes = 5', 5],
      [{ maxNodes: 13 }, 'maxNodes = 13', 13],
      [{ maxNodes: 5003 }, 'maxNodes = 5003', 5003],
      [{ maxMemoryBytes: 100_100 }, 'maxMemoryBytes = 100100', 100_100],
    ];
    for (const [options, named, limit] of cases) {
      const tape = await tapeOn(backend, options);
      const h = tape.handles;
      let error: unknown = null;
      try {
        let hx = h.variable(1);
        for (;;) hx = h.sin(hx);
      } catch (e) {
        error = e;
      }
      const room = options.maxNodes ?? Math.floor(options.maxMemoryBytes! / tape.nodeBytes);
      const message = (error as Error).message;
      if (!(error instanceof CapacityError) || !message.includes(named) || error.limit !== limit || tape.size !== room) {
        problems.push(`${named}: ${tape.size} nodes recorded (room for ${room}); ${(error as CapacityError).limit} in "${message}"`);
      }
    }
    expect(problems).toEqual([]);
  });
});

// FAILING (bug): CapacityError documents "Nothing was recorded", but two multi-node records do
// not reserve their room first: tape.variables(xs) records inputs one by one until the tape is
// full, and a custom function records constants for its number operands before reserving room
// for its arg and custom nodes.
describe.each(BACKENDS)('multi-node records that do not fit record nothing (%s)', (backend) => {
  it('tape.variables([1, 2, 3]) with one slot left; sum3(x, 2, 3) (a custom function with number operands) with two', async () => {
    const problems: string[] = [];
    const cases: Array<[string, number, (t: Tape, x: Var) => unknown]> = [
      ['variables([1, 2, 3])', 15, (t) => t.variables([1, 2, 3])],
      ['sum3(x, 2, 3)', 14, (_t, x) => sum3(x, 2, 3)],
    ];
    for (const [label, fill, call] of cases) {
      const tape = await tapeOn(backend, { maxNodes: 16 });
      let x = tape.variable(1);
      while (tape.size < fill) x = x.sin();
      expect(() => call(tape, x)).toThrow(CapacityError);
      if (tape.size !== fill) problems.push(`${label} recorded ${tape.size - fill} node(s) before throwing`);
    }
    expect(problems).toEqual([]);
  });
});

// Tangents (jvp, hvp) add 16 bytes per node and per element: a tape filled to its byte budget
// grew 64% past it (25 -> 41 bytes per node over the same capacity) before they looked at
// maxMemoryBytes; now they throw CapacityError where they do not fit.
describe.each(BACKENDS)('tangents stay within maxMemoryBytes (%s)', (backend) => {
  // A probe: "41 bytes per node, 2765 for 5 nodes" counted the elements' bytes without a word.
  it('the CapacityError counts nodes and elements', async () => {
    const tape = await tapeOn(backend, { maxMemoryBytes: 1850 });
    const v = tape.vector(Array.from({ length: 40 }, (_, k) => k / 40));
    const y = v.mul(v).sum();
    expect(() => tape.jvp([v], new Float64Array(40).fill(1), [y])).toThrow(
      /^tape is full: tangents need 41 bytes per node and 32 per element, \d+ for 5 nodes and 80 elements, over maxMemoryBytes = 1850$/,
    );
    expect(y.value).toBeCloseTo(Array.from({ length: 40 }, (_, k) => (k / 40) ** 2).reduce((s, x) => s + x), 12);
  });

  it('jvp on a tape filled to maxMemoryBytes = 100000', async () => {
    const maxMemoryBytes = 100_000;
    const tape = await tapeOn(backend, { maxMemoryBytes });
    const h = tape.handles;
    const hx = h.variable(1);
    let hy = hx;
    while (tape.size < Math.floor(maxMemoryBytes / tape.nodeBytes) - 1) hy = h.cos(hy);
    try {
      tape.jvp([h.toVar(hx)], [1], [h.toVar(hy)]);
    } catch (error) {
      expect(error).toBeInstanceOf(CapacityError);
    }
    expect(tape.engine.capacity * tape.nodeBytes).toBeLessThanOrEqual(maxMemoryBytes);
  });

  // A probe: after a recording filled the limit and a reset, a jvp of 2 nodes added tangents for
  // the capacity that recording left, 1.64 times maxMemoryBytes, which no later recording could use.
  it('a small jvp after a reset from a full tape: the capacity shrinks to what the limit holds with tangents', async () => {
    const maxMemoryBytes = 1_000_000;
    const tape = await tapeOn(backend, { maxMemoryBytes });
    const h = tape.handles;
    const hx = h.variable(2), c = h.constant(1.0000001);
    let hy = hx;
    expect(() => { for (;;) hy = h.add(h.mul(hy, c), hx); }).toThrow(CapacityError);
    const full = tape.memoryBytes;
    tape.reset();
    const a = tape.variable(1);
    expect(tape.jvp([a], [1], [a.sin()])[0]).toBeCloseTo(Math.cos(1), 15);
    // Within the limit but for the 8-node alignment of the engines' capacity.
    expect(tape.engine.capacity * tape.nodeBytes).toBeLessThanOrEqual(maxMemoryBytes + 8 * tape.nodeBytes);
    // (A wasm memory never shrinks: it holds the tangents in what it has.)
    expect(tape.memoryBytes).toBeLessThanOrEqual(backend === 'js' ? maxMemoryBytes + 8 * tape.nodeBytes : full);
    // And a recording fills it again up to the limit, with its tangents.
    tape.reset();
    let n = 0;
    const y = tape.variable(2);
    let w = y;
    expect(() => { for (;;) { w = w.mul(1.0000001); n++; } }).toThrow(CapacityError);
    expect(n).toBeGreaterThan(Math.floor(maxMemoryBytes / tape.nodeBytes) - 10);
    expect(tape.jvp([y], [1], [w])[0]).toBeGreaterThan(0);
  });

  // A review: the same after a large vector, whose element capacity the tangents doubled (a jvp
  // of 3 elements held twice the limit).
  it('and after a large vector: the element capacity shrinks to the live elements', async () => {
    const maxMemoryBytes = 8 * 2 ** 20;
    const tape = await tapeOn(backend, { maxMemoryBytes });
    tape.vector(new Float64Array(maxMemoryBytes / 16 - 64)).sum().value;
    const full = tape.memoryBytes;
    tape.reset();
    const w = tape.vector([1, 2, 3]);
    expect(Array.from(tape.jvp([w], [1, 1, 1], [w.mul(w).sum()]))).toEqual([12]);
    expect(tape.memoryBytes).toBeLessThanOrEqual(backend === 'js' ? maxMemoryBytes : full);
    expect(tape.engine.elementCapacity * (tape.engine.elementBytes() + 16) + tape.engine.capacity * tape.nodeBytes).toBeLessThanOrEqual(maxMemoryBytes + 8 * tape.nodeBytes);
    // Vectors grow again as far as the limit allows, tangents included.
    tape.reset();
    const v = tape.vector(new Float64Array(100_000).fill(1));
    expect(tape.jvp([v], new Float64Array(100_000).fill(1), [v.mul(v).sum()])[0]).toBe(200_000);
  });
});

// ---- 10^7 nodes ----

// y = c^n with c = 1 + x/n, as one chain of n multiplications by the same node c (depth n and a
// fan-out of n at once). Closed forms: y = c^n and dy/dx = n c^(n-1) (1/n), with c computed in
// JS exactly as the tape does. Each of the n roundings of the chain (and of the sweep's products
// and sums) is at most 2^-53 relative, so both agree to n·2^-53 ≈ 1.1e-9 at worst (3 n u for the
// gradient); and (1 + x/n)^n -> e^x with relative error about x²/(2n), its derivative
// (1 + x/n)^(n-1) with about x/n + x²/(2n).
describe.each(BACKENDS)('10^7 nodes (%s)', (backend: BackendKind) => {
  it('records and differentiates (1 + x/n)^n, n ~ 10^7, within the rounding bound of the closed form', async () => {
    const total = 10_000_000, n = total - 4, x0 = 1.5;
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const started = performance.now();
    const hx = h.variable(x0);
    const inv = h.constant(1 / n);
    const hc = h.add(h.mul(hx, inv), h.constant(1));
    let hy = hc;
    for (let k = 1; k < n; k++) hy = h.mul(hy, hc);
    const recorded = performance.now();
    expect(tape.size).toBe(total);
    const value = h.value(hy);
    const evaluated = performance.now();
    h.backward(hy);
    const swept = performance.now();
    const gradient = h.grad(hx);

    const c = x0 * (1 / n) + 1;
    const u = 2 ** -53;
    expect(Math.abs(value - c ** n) / c ** n).toBeLessThan(n * u);
    const want = n * c ** (n - 1) * (1 / n);
    expect(Math.abs(gradient - want) / want).toBeLessThan(3 * n * u);
    expect(Math.abs(value - Math.exp(x0)) / Math.exp(x0)).toBeLessThan((x0 * x0) / n);
    expect(Math.abs(gradient - Math.exp(x0)) / Math.exp(x0)).toBeLessThan((x0 + x0 * x0) / n);

    // Reported, not asserted (timings depend on the machine).
    console.log(
      `[capacity] ${backend} 10^7 nodes: record ${(recorded - started).toFixed(0)} ms, forward ${(evaluated - recorded).toFixed(0)} ms, ` +
        `backward ${(swept - evaluated).toFixed(0)} ms; memoryBytes ${tape.memoryBytes} (${(tape.memoryBytes / 2 ** 20).toFixed(1)} MiB), ` +
        `nodeBytes ${tape.nodeBytes}, capacity ${tape.engine.capacity}; relative error vs c^n ${(Math.abs(value - c ** n) / c ** n).toExponential(1)}, ` +
        `vs n c^(n-1)/n ${(Math.abs(gradient - want) / want).toExponential(1)}`,
    );
    expect(tape.memoryBytes).toBeGreaterThanOrEqual(total * tape.nodeBytes);
  }, 300_000);
});

// Found by a new-user probe: the core computed its regions' ends in 32 bits, so tangents for a
// tape of 2^27 nodes' capacity (41 bytes each: 5.5 GB) passed the size check with a wrapped end
// and were laid over the other regions: a raw RangeError, then wrong gradients with no error, and
// jvp and vector nodes refused until the process ended. Then a CapacityError, for the tape's
// life, though its live nodes would fit (another probe): the capacity now shrinks to what fits
// with tangents, keeping the nodes and the vector elements. The capacity is reserved as a
// recording of 7·10^7 nodes would grow it (untouched pages cost no memory).
// A review probe: where the runtime caps wasm memory below what tangents at the capacity need (a
// browser's limit, Node's --wasm-max-mem-pages), the shrink to wasm32's bound was not enough and a
// jvp of 2 nodes was refused for the tape's life. The capacity now shrinks to the live nodes'.
it('wasm: tangents where the runtime gives less memory than the capacity needs shrink it to the live nodes', () => {
  const script = `
    const { createTapeSync, init } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/index.js')).href)});
    await init();
    const tape = createTapeSync();
    tape.reserveNodes(1 << 26);
    tape.reset();
    const x = tape.variable(2);
    console.log(JSON.stringify([...tape.jvp([x], [1], [x.mul(x)]), ...tape.hvp(x.mul(x), [x], [1])]));`;
  const run = spawnSync(process.execPath, ['--wasm-max-mem-pages=40000', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.stdout.trim()).toBe('[4,2]');
});

// A probe: under a runtime's cap on wasm memory (a browser's, Node's --wasm-max-mem-pages), a tape
// keeps its node capacity across reset, and a vector after a large scalar recording was refused
// for the tape's life (1.5 M scalars and a vector of 10^6 elements in 64 MiB); the other way
// round too. The capacity a larger recording left shrinks to the live part first.
it('wasm: under a runtime memory cap, nodes after elements and elements after nodes take the room a reset left', () => {
  const script = `
    const { createTapeSync, init } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/index.js')).href)});
    await init();
    const attempt = (f) => { try { return f(); } catch (e) { return e.code; } };
    const nodesFirst = createTapeSync();
    nodesFirst.variables(new Float64Array(1500000));
    nodesFirst.reset();
    const elementsFirst = createTapeSync();
    elementsFirst.vector(new Float64Array(1500000));
    elementsFirst.reset();
    // Ops of both kinds until one is refused: it records nothing (a review: a vector op's constant
    // stayed recorded when the shrinking was the core's own).
    const full = createTapeSync();
    full.variables(new Float64Array(1500000));
    let w = full.vector(new Float64Array(20000).fill(1)), acc = full.variable(1), refused = 'none';
    const c = new Float64Array(20000).fill(2);
    for (let step = 0; step < 4000 && refused === 'none'; step++) {
      const nodes = full.size, elements = full.elementCount;
      try {
        if (step % 3 === 2) acc = acc.mul(acc); else w = w.add(c);
      } catch (e) {
        refused = e.code + (full.size === nodes && full.elementCount === elements ? ', nothing recorded' : ', partly recorded');
      }
    }
    console.log(JSON.stringify([
      attempt(() => nodesFirst.vector(new Float64Array(1000000).fill(1)).sum().value),
      attempt(() => { const xs = elementsFirst.variables(new Float64Array(1500000).fill(2)); return elementsFirst.gradient(xs[0].mul(xs[1499999]), [xs[0]])[0]; }),
      refused,
    ]));`;
  const run = spawnSync(process.execPath, ['--wasm-max-mem-pages=1024', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.stdout.trim()).toBe('[1000000,2,"CAPACITY, nothing recorded"]');
});

// Under a runtime's cap the core grew by doubling only: a fresh tape under 64 MiB refused a vector
// of 2.1 M elements and its 2^21st scalar node, in 52 of its 64 MiB (probes); and near the cap
// the two kinds, each shrunk to its live part for the other's doubling, took each other's room at
// every op, each time moving the tape (a review: 8 ms an op, then refused all the same). A grow
// that fails halves its overshoot until one succeeds.
it('wasm: under a runtime memory cap, a grow takes the room the cap leaves, and mixed ops near it go on', () => {
  const script = `
    const { createTapeSync, init } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/index.js')).href)});
    await init();
    const attempt = (f) => { try { return f(); } catch (e) { return e.code; } };
    const big = attempt(() => createTapeSync().vector(new Float64Array(2100000).fill(1)).sum().value);
    const chain = createTapeSync();
    let x = chain.variable(1);
    const steps = attempt(() => { for (let k = 0; k < 2500000; k++) x = x.mul(1); return chain.size; });
    const mixed = createTapeSync();
    // The times the tape gives way to the other kind, moving it whole.
    const engine = Object.getPrototypeOf(mixed.engine), fit = engine.fitCapacities;
    let moves = 0;
    engine.fitCapacities = function (...args) { moves++; return fit.apply(this, args); };
    mixed.variables(new Float64Array(1500000));
    const c = new Float64Array(100).fill(2);
    let w = mixed.vector(new Float64Array(100).fill(1)), acc = mixed.variable(1);
    const a = acc;
    const pairs = attempt(() => { for (let k = 0; k < 5000; k++) { w = w.add(c); acc = acc.mul(1.5).div(1.5); } return 'done'; });
    const last = attempt(() => [w.get(99).value, mixed.gradient(acc, [a])[0]]);
    console.log(JSON.stringify([big, steps, pairs, mixed.elementCount, last, moves <= 4 || moves]));`;
  const run = spawnSync(process.execPath, ['--wasm-max-mem-pages=1024', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  expect(run.stdout.trim()).toBe(JSON.stringify([2100000, 2500002, 'done', 1000100, [10001, 1], true]));
});

// Probes: a vector of 2^27 elements took all of 4 GiB beside its tape's node capacity, and its
// own two nodes were refused, the tape then refusing every node for its life, reset() or not; a
// scalar recording of 2^27 nodes left no room for any element alike. Where one kind has no room,
// the other's capacity past what is live goes first. (Reserved, not written: untouched pages
// cost no memory.)
describe.each(BACKENDS)('capacities a larger recording left give way to the other kind past 4 GiB (%s)', (backend) => {
  it('nodes after 2^27 elements, elements after 2^27 nodes', async () => {
    const elementsFirst = await tapeOn(backend);
    elementsFirst.reserveVector(2, 2 ** 27 + 1);
    elementsFirst.reset();
    const x = elementsFirst.variable(3);
    expect(Array.from(elementsFirst.gradient(x.mul(x), [x]))).toEqual([6]);
    const nodesFirst = await tapeOn(backend);
    nodesFirst.reserveNodes(2 ** 27 + 8);
    nodesFirst.reset();
    const v = nodesFirst.vector([1, 2]);
    expect(Array.from(nodesFirst.gradient(v.dot(v), [v]))).toEqual([2, 4]);
  }, 60_000);
});

it('wasm: tangents for a capacity past 4 GiB shrink it to what fits, and the tape keeps its values and gradients', async () => {
  const tape = await tapeOn('wasm');
  const v = tape.vector([1, 2, 3]), w = v.mul(2);
  const x = tape.variable(1);
  tape.reserveNodes(70_000_000);
  const y = x.square().add(w.sum());
  tape.backward(y);
  expect([x.grad, ...v.grad]).toEqual([2, 2, 2, 2]);
  expect(Array.from(tape.jvp([x], [1], [y]))).toEqual([2]);
  expect(Array.from(tape.jvp([v], [1, 1, 1], [y]))).toEqual([6]);
  tape.backward(y);
  expect([x.grad, ...v.grad]).toEqual([2, 2, 2, 2]);
  const y3 = x.square().add(w.sum().mul(3));
  tape.backward(y3);
  expect([x.grad, ...v.grad]).toEqual([2, 6, 6, 6]);
  tape.reset();
  expect(Array.from(tape.vector([1, 2, 3]).mul(2).value)).toEqual([2, 4, 6]);
  // A new tape sized for a small recording has room for its tangents.
  const fresh = await tapeOn('wasm');
  const a = fresh.variable(2);
  expect(Array.from(fresh.hvp(a.square(), [a], [1]))).toEqual([2]);
});

// Found by a new-user probe: with vector elements taking their share of maxMemoryBytes, the
// error named maxNodes although memory was the limit hit; and a two-node op at one node's room
// said only how many were recorded.
describe.each(BACKENDS)('the binding limit named with vector elements (%s)', (backend) => {
  it('maxMemoryBytes with the elements\' share, and how many nodes an op needed', async () => {
    const tape = await tapeOn(backend, { maxNodes: 30, maxMemoryBytes: 1000 });
    tape.vector(new Float64Array(40));
    let error: unknown = null;
    for (let k = 0; k < 100 && !error; k++) {
      try { tape.variable(k); } catch (e) { error = e; }
    }
    expect(error).toBeInstanceOf(CapacityError);
    expect((error as CapacityError).limit).toBe(1000);
    expect((error as Error).message).toMatch(/^tape is full: maxMemoryBytes = 1000 \(\d+ bytes per node, 640 taken by 40 vector elements\) with \d+ nodes recorded; call tape.reset\(\) to reuse it$/);
    // One node of room, an op of two (a number operand's constant node and the op).
    const small = await tapeOn(backend, { maxNodes: 8 });
    const xs = small.variables([1, 2, 3, 4, 5, 6, 7]);
    expect(() => xs[0]!.mul(2.5)).toThrow(/^tape is full: maxNodes = 8 with 7 nodes recorded and 2 more needed; call tape.reset\(\) to reuse it$/);
    expect(small.size).toBe(7);
  });
});

// A probe counted 218 bytes a call of h.gradient with `into` on the wasm engine (a closure per
// call into the core, a view of the adjoints), where README says it allocates nothing. A young
// generation of 1 MB: 85 scavenges in these 4·10^5 gradients before on wasm, more on the JS
// engine (a 16-byte allocation a call would make 6); now none alone, one in 4·10^6, and up to
// two under the test suite's load, where V8's own work (tier-ups, in the background) allocates.
it.each(BACKENDS)('%s: a handle gradient into a buffer allocates nothing', (backend) => {
  const script = `
    const { createTapeSync, init } = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/index.js')).href)});
    await init();
    const tape = createTapeSync({ backend: '${backend}' }), h = tape.handles;
    const xs = h.variables([0.5, 1.5, 2.5]);
    const y = h.add(h.mul(h.sin(xs[0]), xs[1]), h.exp(xs[2]));
    const into = new Float64Array(3), wrt = Int32Array.of(y, xs[0], xs[1], xs[2]), into4 = new Float64Array(4);
    let sink = 0;
    for (let k = 0; k < 20000; k++) { h.gradient(y, xs, 1, into); h.gradient(y, wrt, 1, into4); sink += into[0]; }
    console.log('start');
    for (let k = 0; k < 200000; k++) { h.gradient(y, xs, 1, into); h.gradient(y, wrt, 1, into4); sink += into[0] + into4[1]; }
    console.log('end', sink > 0);`;
  const run = spawnSync(process.execPath, ['--max-semi-space-size=1', '--trace-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  const lines = run.stdout.split('\n');
  const from = lines.indexOf('start'), to = lines.indexOf('end true');
  expect(from).toBeGreaterThan(-1);
  expect(to).toBeGreaterThan(from);
  expect(lines.slice(from, to).filter((line) => line.includes('Scavenge')).length).toBeLessThanOrEqual(3);
});

// A probe: the JS engine took a 46,000² outer product (34 GB of regions on a 23 GB machine), its
// typed arrays given lazily, where the wasm core, whose memory holds 4 GiB, refused it. Both
// engines hold at most 4 GiB of tape now and refuse the same way, the tape usable after.
describe.each(BACKENDS)('a tape past 4 GiB (%s)', (backend) => {
  it('is a CapacityError that records nothing', async () => {
    const tape = await tapeOn(backend);
    const v = tape.vector(new Float64Array(46_000).fill(1));
    const size = tape.size, elements = tape.elementCount;
    expect(() => v.outer(v)).toThrow(expect.objectContaining({ name: 'CapacityError', code: 'CAPACITY', message: expect.stringMatching(/could not grow its element regions to 2116046000 elements/) }));
    expect([tape.size, tape.elementCount]).toEqual([size, elements]);
    expect(v.dot(v).value).toBe(46_000);
  });
});

// A probe: a tape keeps its capacities across reset, so a scalar recording to maxMemoryBytes, then
// a vector one as large, held both regions: twice the limit, on both engines, for the tape's life.
describe.each(BACKENDS)('capacities kept across reset stay within maxMemoryBytes (%s)', (backend) => {
  it('scalar, then vector, then scalar recordings each fill the limit, and the tape never holds more', async () => {
    const limit = 4 << 20;
    const tape = await tapeOn(backend, { maxMemoryBytes: limit });
    // The regions' bytes at their capacities (the wasm engine's memoryBytes is its whole memory,
    // 32 MiB reserved from the start).
    const engine = (tape as unknown as { engine: { capacity: number; elementCapacity: number; nodeBytes(): number; elementBytes(): number } }).engine;
    const held = (): number => engine.capacity * engine.nodeBytes() + engine.elementCapacity * engine.elementBytes();
    const fillScalars = (): number => {
      tape.reset();
      const h = tape.handles;
      let x = h.variable(0.5);
      expect(() => { for (;;) x = h.cos(x); }).toThrow(CapacityError);
      return tape.size;
    };
    const first = fillScalars();
    expect(held()).toBeLessThanOrEqual(limit * 1.01);
    for (const n of [60_000, 120_000]) {
      tape.reset();
      const v = tape.vector(new Float64Array(n).fill(0.25));
      tape.backward(v.exp().sum());
      expect(v.grad[0]).toBe(Math.exp(0.25));
      expect(held(), `vector of ${n}`).toBeLessThanOrEqual(limit * 1.01);
    }
    expect(fillScalars()).toBe(first);
    expect(held()).toBeLessThanOrEqual(limit * 1.01);
  });

  // A memory-limits probe: each region grew up to what the limit left beside the other's
  // recorded count, not its capacity (582,144 bytes held under 480,000).
  it('a region grows only into what the other region\'s capacity leaves, within one recording and after a reset', async () => {
    const limit = 480_000;
    const tape = await tapeOn(backend, { maxMemoryBytes: limit });
    const engine = (tape as unknown as { engine: { capacity: number; elementCapacity: number; nodeBytes(): number; elementBytes(): number } }).engine;
    const held = (): number => engine.capacity * engine.nodeBytes() + engine.elementCapacity * engine.elementBytes();
    const h = tape.handles;
    const fill = (): void => {
      let x = h.variable(0.5);
      expect(() => { for (;;) x = h.cos(x); }).toThrow(CapacityError);
    };
    h.variables(new Float64Array(4000).fill(0.5));
    const v = tape.vector(new Float64Array(10_000).fill(0.25));
    fill();
    // Rounding of 7 slots a region at most.
    expect(held()).toBeLessThanOrEqual(limit + 7 * (engine.nodeBytes() + engine.elementBytes()));
    expect([tape.elementCount, v.shape[0]]).toEqual([10_000, 10_000]);
    tape.reset();
    tape.vector(new Float64Array(2_100).fill(1));
    tape.reset();
    fill();
    // The floors of 1,024 slots a region are README's allowance.
    expect(held()).toBeLessThanOrEqual(limit + 1024 * engine.elementBytes());
  });

  // The review of that fix: each region growing only into what the other's capacity left grew
  // both a few slots at a time near the limit, a copy of the tape each (2,784 and 2,782 growths
  // of a chain of 8-element vector ops under 8 MB, 17 s; 10 and 8 before the fix).
  it('filling both regions to the limit takes few growths, each within it', async () => {
    const limit = 8_000_000;
    const tape = await tapeOn(backend, { maxMemoryBytes: limit });
    const engine = (tape as unknown as { engine: { capacity: number; elementCapacity: number; nodeBytes(): number; elementBytes(): number } }).engine;
    let growths = 0, worst = 0;
    let v = tape.vector(new Float64Array(8).fill(1));
    let last = [engine.capacity, engine.elementCapacity];
    expect(() => {
      for (;;) {
        v = v.add(1);
        if (engine.capacity !== last[0] || engine.elementCapacity !== last[1]) growths++;
        last = [engine.capacity, engine.elementCapacity];
        worst = Math.max(worst, engine.capacity * engine.nodeBytes() + engine.elementCapacity * engine.elementBytes());
      }
    }).toThrow(CapacityError);
    expect(growths).toBeLessThan(40);
    expect(worst).toBeLessThanOrEqual(limit + 7 * (engine.nodeBytes() + engine.elementBytes()));
    // Full to within one more op (three nodes: the number is a constant node, and 8 elements).
    expect(tape.recordedBytes).toBeGreaterThan(limit - 8 * engine.elementBytes() - 3 * engine.nodeBytes());
  }, 30_000);
});

// A probe: a jvp of 2 nodes after a reset from a recording of 5·10^6 enabled tangents at the
// capacity that recording left, and wrote them whole: 128 MB more RSS for a 2-node call.
describe.each(BACKENDS)('tangents enabled after a reset from a large recording (%s)', (backend) => {
  it('take the capacity of what is live (with room), and a large recording after them grows it again', async () => {
    const tape = await tapeOn(backend);
    const engine = (tape as unknown as { engine: { capacity: number } }).engine;
    const chain = (n: number): number => {
      tape.reset();
      const h = tape.handles;
      const x = h.variable(0.5);
      let f = x;
      for (let k = 0; k < n; k++) f = h.sin(f);
      return f;
    };
    chain(300_000);
    expect(engine.capacity).toBeGreaterThan(300_000);
    tape.reset();
    const x = tape.variable(0.25);
    expect([...tape.jvp([x], [2], [x.sin()])]).toEqual([2 * Math.cos(0.25)]);
    expect(engine.capacity).toBeLessThanOrEqual(1 << 16);
    const top = chain(300_000);
    expect(tape.size).toBe(300_001);
    expect(Number.isFinite(tape.handles.value(top))).toBe(true);
  });
});

// Found by a probe: an array-like of 10^10 entries (or a sparse Array of 2^32 - 1) was read into
// a buffer of that length first, and the runtime's RangeError came out, not a TapegradError; an
// empty tape's error advised tape.reset(), which cannot help it.
describe.each(BACKENDS)('inputs more than a tape holds (%s)', (backend) => {
  it('variables, handles.variables and vector refuse them with a CapacityError, record nothing, and the tape goes on', async () => {
    const tape = await tapeOn(backend);
    const huge = { length: 1e10 } as ArrayLike<number>;
    for (const [what, act] of [
      ['variables', () => tape.variables(huge)],
      ['handles.variables', () => tape.handles.variables(huge)],
      ['variables, a sparse Array', () => tape.variables(new Array<number>(2 ** 32 - 1))],
    ] as const) {
      const error = (() => { try { act(); } catch (e) { return e as CapacityError; } })();
      expect(error, what).toBeInstanceOf(CapacityError);
      expect(error!.message, what).toMatch(/^tape cannot hold \d+ nodes: maxNodes = 268435456$/);
      expect(tape.size, what).toBe(0);
    }
    expect(() => tape.vector(huge)).toThrow(expect.objectContaining({ code: 'CAPACITY', message: 'tape cannot hold 10000000000 elements: 2147483640 is the most a tape holds' }));
    expect(tape.size).toBe(0);
    // Refused before an entry is read, under maxMemoryBytes too (a probe: vector, constantVector
    // and a vector handle read 10^8 entries for 29-43 s before refusing them on a tape of 10 KB).
    const small = await tapeOn(backend, { maxMemoryBytes: 10_000 });
    let reads = 0;
    const counted = new Proxy({ length: 1e6 } as ArrayLike<number>, { get(target, key) { if (key !== 'length') reads++; return key === 'length' ? 1e6 : 1; } });
    for (const act of [() => small.vector(counted), () => small.constantVector(counted), () => small.handles.vec.variable(counted)]) {
      expect(act).toThrow(/^tape cannot hold 1000000 more elements \(16 bytes each\) and 2 nodes: maxMemoryBytes = 10000$/);
    }
    expect(reads).toBe(0);
    expect(small.size).toBe(0);
    expect(Array.from(small.vector([1, 2]).value)).toEqual([1, 2]);
    const [x, y] = tape.variables([2, 5]) as [Var, Var];
    expect(Array.from(tape.gradient(x.mul(y), [x, y]))).toEqual([5, 2]);
    // With nodes recorded, the error still advises a reset.
    expect(() => tape.variables(huge)).toThrow(/^tape is full: maxNodes = 268435456 with 3 nodes recorded and 10000000000 more needed; call tape\.reset\(\) to reuse it$/);
  });

  // A browser probe: variables of 134,217,726 inputs (below a tape's nodes) passed V8's most
// elements of one array while its Vars were made, and the raw RangeError left the inputs
// recorded. (The array's own failure is stood in for here: making 1.3·10^8 Vars takes 17 s.)
describe.each(BACKENDS)('more Vars than one array holds (%s)', (backend) => {
  it('is a CapacityError, with the inputs taken back', async () => {
    const tape = await tapeOn(backend);
    const x = tape.variable(1);
    const proto = Object.getPrototypeOf(tape) as { newInputVars: (...args: unknown[]) => unknown };
    const original = proto.newInputVars;
    proto.newInputVars = () => { throw new RangeError('Invalid array length'); };
    try {
      expect(() => tape.variables([1, 2, 3])).toThrow(expect.objectContaining({ code: 'CAPACITY', message: 'variables: 3 Vars are more than the runtime holds in one array (Invalid array length); nothing was recorded (tape.handles.variables records them as handles in an Int32Array)' }));
    } finally {
      proto.newInputVars = original;
    }
    expect(tape.size).toBe(1);
    const [a, b] = tape.variables([2, 5]) as [Var, Var];
    expect(Array.from(tape.gradient(a.mul(b).add(x), [a, b, x]))).toEqual([5, 2, 1]);
  });
});

// A README audit: a vector too large for an empty tape's maxMemoryBytes was "tape is full" and
  // advised a reset, which changes nothing, where the scalar inputs' error gives none.
  it('a vector an empty tape cannot hold gives no advice to reset it', async () => {
    const tape = await tapeOn(backend, { maxMemoryBytes: 1000 });
    for (const act of [() => tape.vector(new Float64Array(100)), () => tape.constantVector(new Float64Array(100)), () => tape.handles.vec.variable(new Float64Array(100))]) {
      expect(act).toThrow(expect.objectContaining({ code: 'CAPACITY', message: 'tape cannot hold 100 more elements (16 bytes each) and 2 nodes: maxMemoryBytes = 1000' }));
      expect(tape.size).toBe(0);
    }
    const x = tape.vector([1, 2]);
    expect(() => tape.vector(new Float64Array(100))).toThrow(/^tape is full: .*; call tape\.reset\(\) to reuse it$/);
    expect(Array.from(tape.gradient(x.square().sum(), [x]))).toEqual([2, 4]);
  });
});

// A README check: the limits were writable own properties, and tape.maxNodes = 5 changed the limit
// the tape enforced ('x' broke every later recording); a compiled function's inputs likewise.
describe.each(BACKENDS)('a tape\'s limits and a compiled function\'s sizes (%s)', (backend) => {
  it('are read-only at run time, not only in the types', async () => {
    const tape = await tapeOn(backend, { maxNodes: 10, checkNaN: false });
    for (const field of ['maxNodes', 'maxMemoryBytes', 'checkNaN', 'engine'] as const) {
      expect(() => { (tape as unknown as Record<string, unknown>)[field] = 5; }, field).toThrow(TypeError);
    }
    expect([tape.maxNodes, tape.maxMemoryBytes, tape.checkNaN]).toEqual([10, Infinity, false]);
    const xs = tape.variables([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(() => tape.variable(11)).toThrow(CapacityError);
    expect(xs.length).toBe(10);
    const f = compile((x: Var[]) => x[0]!.mul(x[1]!), { inputs: 2, backend });
    for (const field of ['inputs', 'strict', 'vector', 'checkNaN'] as const) {
      expect(() => { (f as unknown as Record<string, unknown>)[field] = 3; }, field).toThrow(TypeError);
    }
    expect(Array.from(f.gradient([3, 4]))).toEqual([4, 3]);
  });
});

// createTape({ expectedNodes }): room for that many nodes from the start, so recordings up to it
// never grow the tape (on wasm, never its memory: test/array-buffer-detach.test.ts), with the
// same results; a hint checked against the limits, never a limit itself.
describe.each(BACKENDS)('expectedNodes (%s)', (backend) => {
  it('makes room up front, records past it as any tape does, and gives the same results', async () => {
    const sized = await createTape({ backend, expectedNodes: 300_000 });
    const plain = await createTape({ backend });
    const engine = (t: Tape): { capacity: number; memoryBytes(): number } => (t as unknown as { engine: { capacity: number; memoryBytes(): number } }).engine;
    expect(engine(sized).capacity).toBeGreaterThanOrEqual(300_000);
    expect(engine(plain).capacity).toBeLessThan(300_000);
    const memory = engine(sized).memoryBytes();
    const run = (t: Tape, n: number): Float64Array => {
      t.reset();
      const xs = t.variables([0.3, -0.7]);
      let s = xs[0]!;
      for (let i = 0; i < n; i++) s = s.mul(xs[1]!).add(xs[0]!).sin();
      return t.gradient(s, xs);
    };
    // Up to the expected size the capacity stays as it was made; past it the tape grows.
    expect(run(sized, 99_000)).toEqual(run(plain, 99_000));
    expect(engine(sized).memoryBytes()).toBe(memory);
    expect(run(sized, 110_000)).toEqual(run(plain, 110_000));
    expect(engine(sized).capacity).toBeGreaterThanOrEqual(330_000);
    const sync = createTapeSync({ backend, expectedNodes: 10_000 });
    expect(engine(sync).capacity).toBeGreaterThanOrEqual(10_000);
    expect(run(sync, 100)).toEqual(run(plain, 100));
    expect(engine(await createTape({ backend, expectedNodes: 0 })).capacity).toBe(engine(await createTape({ backend })).capacity);
  });

  it('refuses what is no node count, or more than the limits allow, naming the option', async () => {
    for (const bad of [-1, 1.5, Number.NaN, Infinity, '10' as unknown as number]) {
      await expect(createTape({ backend, expectedNodes: bad })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/expectedNodes/) });
      expect(() => createTapeSync({ backend, expectedNodes: bad })).toThrow(/createTapeSync: .*expectedNodes/);
    }
    await expect(createTape({ backend, expectedNodes: 1001, maxNodes: 1000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/expectedNodes = 1001 is more than maxNodes = 1000/) });
    await expect(createTape({ backend, expectedNodes: 1000, maxMemoryBytes: 24_999 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/25000 bytes .* maxMemoryBytes = 24999/) });
    await expect(createTape({ backend, expectedNodes: 2e8 })).rejects.toMatchObject({ code: 'CAPACITY', message: expect.stringMatching(/4 GiB/) });
    // At the limits exactly: made.
    const full = await createTape({ backend, expectedNodes: 1000, maxNodes: 1000, maxMemoryBytes: 25_000 });
    expect(full.size).toBe(0);
  });

  it('compile takes it for the tape of its first recording, with the same results, and checks it at once', () => {
    const f = (x: Var[]): Var => {
      let s = x[0]!;
      for (let i = 0; i < 20_000; i++) s = s.mul(x[1]!).add(x[0]!).sin();
      return s;
    };
    const sized = compile(f, { inputs: 2, backend, expectedNodes: 60_002 });
    const plain = compile(f, { inputs: 2, backend });
    expect(sized.gradient([0.3, -0.7])).toEqual(plain.gradient([0.3, -0.7]));
    const tapeOf = (c: typeof sized): { capacity: number } => (c as unknown as { recording: { tape: { engine: { capacity: number } } } }).recording.tape.engine;
    // Made for them exactly (a multiple of 8), where the plain one doubled its way to 2^16.
    expect(tapeOf(sized).capacity).toBeGreaterThanOrEqual(60_002);
    expect(tapeOf(sized).capacity).toBeLessThan(tapeOf(plain).capacity);
    expect(sized.gradient([0.1, 0.2])).toEqual(plain.gradient([0.1, 0.2]));
    for (const bad of [-1, 0.5, Number.NaN]) {
      expect(() => compile(f, { inputs: 2, backend, expectedNodes: bad })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^compile: expectedNodes must be a non-negative integer/) }));
    }
    expect(() => compile(f, { inputs: 2, backend, expectedNodes: 2e8 })).toThrow(expect.objectContaining({ code: 'CAPACITY', message: expect.stringMatching(/^compile: expectedNodes = 200000000 needs more than the 4 GiB/) }));
    // The limit the message gives is the one it holds (a probe: it said 25 bytes a node, and the
    // limit it computed from that, 1.7·10^8 nodes, was refused from 1.48·10^8).
    const past = 147_957_690;
    // `limit` holds that most, not the request (a probe read 147957690).
    expect(() => compile(f, { inputs: 2, backend, expectedNodes: past })).toThrow(expect.objectContaining({ code: 'CAPACITY', limit: 147_957_689, message: expect.stringMatching(/\(29 bytes a node and 4 MiB: at most 147957689 nodes\)$/) }));
  });
});

// expectedNodes on the wasm engine: the memory it starts with.
describe('expectedNodes and the wasm memory', () => {
  // A probe: fromBytes of a 10-node function took 8 ms a call, collecting garbage for the 32 MiB
  // of memory each tape starts with (V8 counts it as external memory); 0.6 ms with 4 MiB.
  it('sizes the wasm memory for them, below the default 32 MiB too, and grows it past them', async () => {
    const backend = 'wasm';
    const memoryOf = (t: Tape): number => (t as unknown as { engine: { core: { memory: WebAssembly.Memory } } }).engine.core.memory.buffer.byteLength;
    const pages = (n: number): number => 65536 * Math.ceil((29 * n + 2 ** 22) / 65536);
    expect(memoryOf(await createTape({ backend }))).toBe(32 * 2 ** 20);
    for (const n of [0, 1000, 100_000]) expect(memoryOf(await createTape({ backend, expectedNodes: n }))).toBe(pages(n));
    expect(memoryOf(await createTape({ backend, expectedNodes: 2_000_000 }))).toBe(pages(2_000_000));
    const f = (x: Var[]): Var => x[0]!.mul(x[1]!).sin().add(x[1]!.exp());
    const loaded = fromBytes(compile(f, { inputs: 2, backend, at: [1, 2] }).toBytes());
    expect(memoryOf(loaded.recorded!.tape)).toBe(pages(loaded.size));
    // Past what its pages hold, a small tape grows as any tape does, with the same results.
    const small = await createTape({ backend, expectedNodes: 10 }), plain = await createTape({ backend });
    const run = (t: Tape): Float64Array => {
      const xs = t.variables([0.3, -0.7]);
      let y = xs[0]!;
      for (let i = 0; i < 100_000; i++) y = y.mul(xs[1]!).add(xs[0]!).sin();
      return t.gradient(y, xs);
    };
    expect(run(small)).toEqual(run(plain));
    expect(memoryOf(small)).toBeGreaterThan(pages(10));
  });
});
