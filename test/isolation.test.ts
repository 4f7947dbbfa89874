// Tapes are isolated from each other: many tapes recording at once, op by op, or two async
// functions interleaving their recordings across `await`, each get exactly what the same graph
// gives when it is recorded alone on a fresh tape (bit for bit: same backend, same sweeps), and
// no tape accepts another's Vars or handles.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ForeignHandleError, TapegradError, type BackendKind, type Tape, type Var } from '../src/index.ts';
import { dagArbitrary, dagSteps, recordDag, type Dag, type RecordedDag } from './dag-arbitrary.ts';
import { tapeOn } from './support.ts';

/** recordDag, one node per step: the caller decides what happens between two nodes. */
function* recordSteps(tape: Tape, dag: Dag): Generator<Var, RecordedDag, void> {
  const inputs = tape.variables(dag.inputs);
  const nodes: Var[] = [];
  for (const v of dagSteps(dag, inputs)) {
    nodes.push(v);
    yield v;
  }
  let output = nodes[0]!;
  for (let k = 1; k < nodes.length; k++) output = output.add(nodes[k]!);
  return { inputs, nodes, output };
}

/** Values of every node and gradients of every input and node, as bits (-0 and NaN payloads count). */
interface Result {
  values: BigUint64Array;
  gradients: BigUint64Array;
  size: number;
}

function bitsOf(xs: readonly number[]): BigUint64Array {
  return new BigUint64Array(Float64Array.from(xs).buffer);
}

function valuesOf(r: RecordedDag): BigUint64Array {
  return bitsOf([...r.nodes, r.output].map((v) => v.value));
}

function gradientsOf(r: RecordedDag): BigUint64Array {
  return bitsOf([...r.inputs, ...r.nodes].map((v) => v.grad));
}

/** The same graph recorded alone on a fresh tape, in one go. */
async function alone(backend: BackendKind, dag: Dag): Promise<Result> {
  const tape = await tapeOn(backend);
  const r = recordDag(tape, dag);
  tape.backward(r.output);
  return { values: valuesOf(r), gradients: gradientsOf(r), size: tape.size };
}

const smallDag = dagArbitrary({ maxInputs: 4, maxNodes: 40 });

describe('isolation', () => {
  // A probe: the constructor was public, and a second tape over t1's engine gave t1 wrong values
  // and gradients without an error.
  it.each(['wasm', 'js'] as const)('a tape over another tape\'s engine is refused, and that tape works on (%s)', async (backend) => {
    const t1 = await tapeOn(backend);
    const TapeClass = t1.constructor as new (engine: Tape['engine']) => Tape;
    expect(() => new TapeClass(t1.engine)).toThrow(TapegradError);
    expect(() => new TapeClass(t1.engine)).toThrow(/^this engine belongs to another tape: make each tape with createTape or createTapeSync$/);
    const a = t1.variable(2), fa = a.mul(a);
    expect(fa.value).toBe(4);
    expect(t1.gradient(fa, [a])).toEqual(Float64Array.of(4));
  });

  it('50 tapes recording at once, op by op, each differentiate their own graph only', async () => {
    const backends: BackendKind[] = Array.from({ length: 50 }, (_, k) => (k % 2 ? 'js' : 'wasm'));
    await fc.assert(
      fc.asyncProperty(fc.array(smallDag, { minLength: 50, maxLength: 50 }), fc.nat(), async (dags, reader) => {
        const tapes = await Promise.all(backends.map((b) => tapeOn(b)));
        const runs = tapes.map((t, k) => recordSteps(t, dags[k]!));
        const results: (RecordedDag | null)[] = tapes.map(() => null);
        // Round robin, one node per tape per turn; every few turns some tape reads a value, which
        // evaluates its pending nodes while the others have theirs pending too.
        for (let turn = 0, live = tapes.length; live > 0; turn++) {
          live = 0;
          runs.forEach((run, k) => {
            if (results[k]) return;
            const step = run.next();
            if (step.done) results[k] = step.value;
            else {
              live++;
              if ((turn + k + reader) % 5 === 0) step.value.value;
            }
          });
        }
        // Every tape sweeps before any gradient is read: one tape's sweep must not touch another's.
        results.forEach((r, k) => tapes[k]!.backward(r!.output));
        const wants: Result[] = [];
        for (let k = 0; k < tapes.length; k++) {
          const want = await alone(backends[k]!, dags[k]!);
          wants.push(want);
          expect(tapes[k]!.size).toBe(want.size);
          expect(valuesOf(results[k]!)).toEqual(want.values);
          expect(gradientsOf(results[k]!)).toEqual(want.gradients);
        }
        // No tape takes another's Vars, nor its raw handles. (Handle ranges start about 8e8/(tapes
        // created so far) apart, far more than the few dozen live nodes of each tape.)
        for (let j = 0; j < tapes.length; j++) {
          for (let k = 0; k < tapes.length; k++) {
            if (j === k) continue;
            const theirs = results[k]!.output;
            expect(() => tapes[j]!.backward(theirs)).toThrow(ForeignHandleError);
            expect(() => results[j]!.inputs[0]!.add(theirs)).toThrow(ForeignHandleError);
            let error: unknown = null;
            try {
              tapes[j]!.handles.value(theirs.id);
            } catch (e) {
              error = e;
            }
            expect(error).toBeInstanceOf(TapegradError);
            expect(['STALE_HANDLE', 'INVALID_HANDLE']).toContain((error as TapegradError).code);
          }
        }
        // The rejected attempts recorded nothing and left every tape's gradients as they were.
        results.forEach((r, k) => {
          expect(tapes[k]!.size).toBe(wants[k]!.size);
          expect(gradientsOf(r!)).toEqual(wants[k]!.gradients);
        });
      }),
      { numRuns: 5, seed: 70_501 },
    );
  });

  it('a reset of one tape among many leaves the others recording', async () => {
    const tapes = await Promise.all(Array.from({ length: 50 }, (_, k) => tapeOn(k % 2 ? 'js' : 'wasm')));
    // Tape k records sum_{j<=k} x^j / j! (a truncated exponential series) while tape k-1 resets.
    const xs = tapes.map((t, k) => t.variable(k / 50));
    const sums = xs.map((x) => x.mul(0).add(1));
    const terms = xs.map((x) => x.mul(0).add(1));
    for (let j = 1; j <= 20; j++) {
      tapes.forEach((_, k) => {
        terms[k] = terms[k]!.mul(xs[k]!).div(j);
        sums[k] = sums[k]!.add(terms[k]!);
      });
      if (j === 10) {
        // Every third tape starts over: the others must not notice.
        for (let k = 0; k < tapes.length; k += 3) {
          tapes[k]!.reset();
          xs[k] = tapes[k]!.variable(k / 50);
          sums[k] = xs[k]!.mul(0).add(1);
          terms[k] = xs[k]!.mul(0).add(1);
          for (let i = 1; i <= 10; i++) {
            terms[k] = terms[k]!.mul(xs[k]!).div(i);
            sums[k] = sums[k]!.add(terms[k]!);
          }
        }
      }
    }
    tapes.forEach((t, k) => {
      const x = k / 50;
      let value = 0, term = 1, derivative = 0;
      // d/dx sum_{j<=20} x^j/j! = sum_{j<=19} x^j/j!.
      for (let j = 0; j <= 20; j++) {
        if (j > 0) term *= x / j;
        value += term;
        if (j < 20) derivative += term;
      }
      t.backward(sums[k]!);
      expect(Math.abs(sums[k]!.value - value)).toBeLessThan(1e-15 * value);
      expect(Math.abs(xs[k]!.grad - derivative)).toBeLessThan(1e-14 * derivative);
    });
  });

  const PAIRS: ReadonlyArray<[BackendKind, BackendKind]> = [['wasm', 'wasm'], ['wasm', 'js'], ['js', 'js']];

  it.each(PAIRS)('two tapes (%s, %s) interleaved across await get the gradients of sequential runs', async (b1, b2) => {
    // Realistic interleaving: each loop awaits a microtask, a macrotask or a timer between ops.
    const pause = (k: number): Promise<unknown> =>
      k % 3 === 0 ? Promise.resolve() : k % 3 === 1 ? new Promise((r) => setImmediate(r)) : new Promise((r) => setTimeout(r, 0));
    async function run(backend: BackendKind, dag: Dag, shift: number): Promise<RecordedDag> {
      const tape = await tapeOn(backend);
      const steps = recordSteps(tape, dag);
      let k = shift;
      for (let step = steps.next(); ; step = steps.next()) {
        if (step.done) {
          tape.backward(step.value.output);
          // The other tape records and sweeps meanwhile; our adjoints must stay ours.
          await pause(k++);
          await pause(k++);
          return step.value;
        }
        if (k % 4 === 0) step.value.value;
        await pause(k++);
      }
    }
    // Graphs of at least 100 nodes: that many pauses in each loop.
    const dags = fc.sample(dagArbitrary({ maxInputs: 4, maxNodes: 300 }).filter((d) => d.nodes.length >= 100), { numRuns: 2, seed: 11 });
    const [r1, r2] = await Promise.all([run(b1, dags[0]!, 0), run(b2, dags[1]!, 1)]);
    for (const [r, backend, dag] of [[r1, b1, dags[0]!], [r2, b2, dags[1]!]] as const) {
      const want = await alone(backend, dag);
      expect(valuesOf(r)).toEqual(want.values);
      expect(gradientsOf(r)).toEqual(want.gradients);
    }
  });

  it('any interleaving of two async recordings (fast-check scheduler) gives the sequential results', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), smallDag, smallDag, fc.constantFrom(...PAIRS), async (s, d1, d2, [b1, b2]) => {
        // The tapes exist before the scheduler runs: it only releases the promises it scheduled.
        const [t1, t2] = [await tapeOn(b1), await tapeOn(b2)];
        async function run(tape: Tape, dag: Dag, name: string): Promise<RecordedDag> {
          const steps = recordSteps(tape, dag);
          for (let step = steps.next(), k = 0; ; step = steps.next(), k++) {
            if (step.done) {
              tape.backward(step.value.output);
              await s.schedule(Promise.resolve(`${name} swept`));
              return step.value;
            }
            if (k % 3 === 0) step.value.value;
            await s.schedule(Promise.resolve(`${name} node ${k}`));
          }
        }
        const both = Promise.all([run(t1, d1, 'first'), run(t2, d2, 'second')]);
        await s.waitAll();
        const [r1, r2] = await both;
        const [w1, w2] = [await alone(b1, d1), await alone(b2, d2)];
        expect(valuesOf(r1)).toEqual(w1.values);
        expect(gradientsOf(r1)).toEqual(w1.gradients);
        expect(valuesOf(r2)).toEqual(w2.values);
        expect(gradientsOf(r2)).toEqual(w2.gradients);
      }),
      { numRuns: 60, seed: 7_002 },
    );
  });
});
