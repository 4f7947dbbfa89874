// reset() reuses the tape: many record/backward/reset cycles stay correct and keep memory flat,
// and what was recorded before a reset leaves no trace in what is recorded after it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidHandleError, StaleHandleError, type Tape, type Var } from '../src/index.ts';
import { dagArbitrary, recordDag } from './dag-arbitrary.ts';
import { BACKENDS, tapeOn } from './support.ts';

// f(x, y) = y * sum_k sin(a_k x): five nodes per term (constant, mul, sin, mul, add).
const TERMS = 200;
const A = Array.from({ length: TERMS }, (_, k) => (k + 1) / 100);

function recordSines(tape: Tape, x0: number, y0: number): { x: Var; y: Var; f: Var; terms: Var[] } {
  const x = tape.variable(x0), y = tape.variable(y0);
  const terms: Var[] = [];
  let f = tape.constant(0);
  for (const a of A) {
    const t = x.mul(a).sin().mul(y);
    terms.push(t);
    f = f.add(t);
  }
  return { x, y, f, terms };
}

function sinesGradient(x: number, y: number): [number, number] {
  let dx = 0, dy = 0;
  for (const a of A) {
    dx += y * a * Math.cos(a * x);
    dy += Math.sin(a * x);
  }
  return [dx, dy];
}

function bits(vars: readonly Var[]): BigUint64Array {
  return new BigUint64Array(Float64Array.from(vars, (v) => v.grad).buffer);
}

describe.each(BACKENDS)('reset (%s)', (backend) => {
  it('10^4 record/backward/reset cycles of a 1000-node graph: right gradients, flat memory', async () => {
    const tape = await tapeOn(backend);
    let memory = 0, capacity = 0;
    for (let cycle = 0; cycle < 10_000; cycle++) {
      tape.reset();
      expect(tape.size).toBe(0);
      const x0 = -3 + (cycle % 97) / 16, y0 = 0.5 + (cycle % 13) / 8;
      const { x, y, f, terms } = recordSines(tape, x0, y0);
      expect(tape.size).toBeGreaterThanOrEqual(1000);
      tape.backward(f);
      const [dx, dy] = sinesGradient(x0, y0);
      // Summation order differs between the sweep and the loop above: relative, not exact.
      const scale = Math.max(1, Math.abs(dx), Math.abs(dy));
      if (Math.abs(x.grad - dx) > 1e-12 * scale || Math.abs(y.grad - dy) > 1e-12 * scale) {
        expect.fail(`cycle ${cycle}: gradient (${x.grad}, ${y.grad}), expected (${dx}, ${dy})`);
      }
      if (cycle === 0) {
        memory = tape.memoryBytes;
        capacity = tape.engine.capacity;
      } else if (tape.memoryBytes !== memory || tape.engine.capacity !== capacity) {
        expect.fail(`cycle ${cycle}: memory grew from ${memory} to ${tape.memoryBytes} bytes`);
      }
      if (cycle % 1000 === 999) {
        const all = [x, y, ...terms];
        const first = bits(all);
        tape.backward(f);
        expect(bits(all)).toEqual(first);
      }
    }
  });

  it('a graph recorded after reset() has the bits it has on a fresh tape, whatever came before', async () => {
    const used = await tapeOn(backend);
    await fc.assert(
      fc.asyncProperty(dagArbitrary(), dagArbitrary(), fc.nat(), fc.boolean(), async (before, after, cut, sweep) => {
        const clean = await tapeOn(backend);
        const expected = recordDag(clean, after);
        clean.backward(expected.output);

        used.reset();
        const old = recordDag(used, before);
        // Leave the tape half evaluated (values are computed lazily) or fully swept.
        old.nodes[cut % old.nodes.length]!.value;
        if (sweep) used.backward(old.output, -7);
        used.reset();
        const got = recordDag(used, after);
        used.backward(got.output);

        const values = (r: typeof got) => Float64Array.from(r.nodes, (v) => v.value);
        expect(values(got)).toEqual(values(expected));
        expect(bits([...got.inputs, ...got.nodes])).toEqual(bits([...expected.inputs, ...expected.nodes]));
      }),
      { numRuns: 40 },
    );
  });
});

// README, Handle API: ranges restart once they near 2^30, at a scattered offset of each tape's
// own, so staleness stays exact until the live range reaches an old handle again, and only then
// can a kept Var alias a live node (a new-user probe found that; this pins it, as documented).
// Restarting at 0 had made restarted tapes take each other's handles, and small numbers, as
// nodes (a second probe found that).
describe.each(BACKENDS)('stale Vars and handles across the range restart (%s)', (backend) => {
  const chunk = new Float64Array(1 << 22).fill(1.5);
  // Resets until the tape's range has restarted, recording `chunk` each time; returns the handle
  // and the Var recorded last before the restart.
  const restart = (tape: Tape): { handle: number; v: Var; vector: number } => {
    for (let resets = 0; resets < 400; resets++) {
      const before = tape.base;
      const handle = tape.handles.variable(2), v = tape.variable(3), vector = tape.handles.vec.variable([1, 2]);
      tape.handles.variables(chunk);
      tape.reset();
      if (tape.base < before) return { handle, v, vector };
    }
    throw new Error('the range did not restart');
  };

  it('a handle or Var of the cycle before is stale, and restarted tapes keep scattered ranges', async () => {
    const a = await tapeOn(backend), b = await tapeOn(backend);
    const fromA = restart(a);
    restart(b);
    expect(a.base).not.toBe(b.base);
    expect(Math.min(a.base, b.base)).toBeGreaterThanOrEqual(2 ** 20);
    expect(() => a.handles.value(fromA.handle)).toThrow(StaleHandleError);
    expect(() => fromA.v.value).toThrow(StaleHandleError);
    // A vector handle of the cycle before lies above the new base: stale through tape.handles.vec
    // too (a probe: InvalidHandleError there, StaleHandleError through the scalar ops).
    expect(() => a.handles.vec.value(fromA.vector)).toThrow(StaleHandleError);
    expect(() => a.handles.vec.sum(fromA.vector)).toThrow(StaleHandleError);
    expect(() => a.handles.exp(fromA.vector)).toThrow(StaleHandleError);
    const x = a.handles.variable(2), y = b.handles.variable(1000);
    // Each tape's handle is no node of the other (it may lie in the other's earlier ranges), and
    // small numbers are no handles.
    const notHere = /not a node of this tape|before tape\.reset\(\) \(or on another tape\)/;
    expect(() => a.handles.mul(x, y)).toThrow(notHere);
    expect(() => b.handles.mul(y, x)).toThrow(notHere);
    for (const small of [0, 1, 2, 3]) expect(() => a.handles.mul(x, small)).toThrow(InvalidHandleError);
    expect(a.handles.value(a.handles.mul(x, x))).toBe(4);
  }, 60_000);

  it('stale until the live range reaches the old handle again, which may then alias', async () => {
    const tape = await tapeOn(backend);
    const h = tape.handles;
    const x = tape.variable(42), hx = h.variable(7);
    // A number the tape's constant cache now holds with a handle of this cycle (one reset() no
    // longer clears it: a handle below the live range is refused anyway).
    x.mul(0.8125);
    const vector = tape.vector([1, 2, 3]);
    // Checked through the cycle it was recorded in and the next; only then can the range reach it.
    let restarts = 0, aliased = false;
    for (let resets = 0; restarts < 2 && !aliased; resets++) {
      const before = tape.base;
      tape.reset();
      if (tape.base < before) restarts++;
      h.variables(chunk);
      const base = tape.base;
      if (base <= x.id && x.id < base + tape.size) aliased = true;
      else if (restarts < 2 && resets % 17 === 0) {
        expect(() => x.value).toThrow(StaleHandleError);
        expect(() => h.value(hx)).toThrow(StaleHandleError);
      }
    }
    expect(restarts + (aliased ? 1 : 0)).toBeGreaterThan(0);
    if (aliased) {
      // The documented limit: the stale Var reads the live node at its id.
      expect(x.value).toBe(1.5);
      // A stale Vec whose node is a scalar now is stale still: as a vector it read offsets out of
      // the neighbours' operands (a probe: the core trapped, losing the live recording).
      expect(tape.base <= ~vector.id && ~vector.id < tape.base + tape.size).toBe(true);
      expect(() => vector.value).toThrow(StaleHandleError);
      expect(() => vector.sum()).toThrow(StaleHandleError);
      expect(tape.size).toBeGreaterThan(0);
      // The cache of numbers as operands restarted with the range: its handle of the first cycle
      // (live again) is not taken for the constant.
      expect(tape.variable(2).mul(0.8125).value).toBe(1.625);
    }
    // A Var from after the restart is still caught.
    const fresh = tape.variable(3);
    tape.reset();
    expect(() => fresh.value).toThrow(StaleHandleError);
  }, 120_000);
});
