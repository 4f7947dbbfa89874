// Fused runs store only what may be read later (assembly/vector.ts, "deferred values and dropped
// adjoints"): a run node consumed only inside its run has no values in memory, and the reverse
// kernels leave out the adjoints of run nodes. Every way to reach what was left out must see the
// block sweep's bits: values read afterwards, a later recording that consumes a deferred node,
// gradients with respect to run nodes, `.grad` after backward, jvp and hvp, checkNaN, compiled
// functions returning an intermediate. Each case runs on the wasm engine with fused kernels and
// is compared with the same engine sweeping block by block and with the JS engine.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile, createTape, init, type Tape, type Var, type Vec } from '../src/index.ts';
import type { WasmBackend } from '../src/wasm/backend.ts';

const N = 3001;
const data = (seed: number, size = N): Float64Array => Float64Array.from({ length: size }, (_, i) => 0.5 + 0.4 * Math.sin(0.37 * i + seed));

function sameBits(actual: ArrayLike<number>, expected: ArrayLike<number>): void {
  expect(actual.length).toBe(expected.length);
  for (let k = 0; k < actual.length; k++) if (!Object.is(actual[k], expected[k])) expect(`${k}: ${actual[k]}`).toBe(`${k}: ${expected[k]}`);
}

/** A chain of seven elementwise nodes (Rosenbrock's), its intermediates kept for the test. */
function chain(tape: Tape): { x: Vec; nodes: Vec[]; f: Var } {
  tape.reset();
  const x = tape.vector(data(0.1));
  const t1 = x.square();
  const t2 = x.sub(t1);
  const t3 = t2.square();
  const t4 = t3.mul(100);
  const t5 = x.sub(1);
  const t6 = t5.square();
  const t7 = t4.add(t6);
  return { x, nodes: [t1, t2, t3, t4, t5, t6, t7], f: t7.sum() };
}

describe('deferred values and dropped adjoints of fused runs', async () => {
  await init();
  const wasm = await createTape({ backend: 'wasm' });
  const js = await createTape({ backend: 'js' });
  const engine = (wasm as unknown as { engine: WasmBackend }).engine;
  const scribble = (): void => {
    engine.views.xval.fill(NaN);
    engine.views.xadj.fill(NaN);
  };

  /** `scenario` on the fused engine (SIMD kernels, then the scalar kernels of a runtime without
   *  SIMD), the block-swept engine and the JS engine: the same bits. Returns the signatures of
   *  the kernels the SIMD run used. */
  function agree(scenario: (tape: Tape) => ArrayLike<number>): string[] {
    engine.setRunFusion(true);
    engine.setRunKernelSimd(true);
    // What a sweep leaves out must not be read: memory holds NaN, not an earlier run's values.
    scribble();
    const fused = Array.from(scenario(wasm));
    const signatures = [...(engine as unknown as { runSlots: Map<string, number> }).runSlots.keys()];
    engine.setRunKernelSimd(false);
    scribble();
    const scalar = Array.from(scenario(wasm));
    engine.setRunKernelSimd(true);
    engine.setRunFusion(false);
    const blocked = Array.from(scenario(wasm));
    engine.setRunFusion(true);
    sameBits(fused, blocked);
    sameBits(scalar, blocked);
    sameBits(fused, Array.from(scenario(js)));
    return signatures;
  }
  // Whether a reverse kernel absorbed a slice (its signature names one: KIND_SLICE = -16).
  const absorbs = (signatures: string[]): boolean => signatures.some((k) => /^simd:\d*[13579],.*,-1[6-9],/.test(k));

  // A node the kernels compute through a call of the core's rule (exp here) keeps its values,
  // which the reverse kernel loads instead of computing them again; a replayed gradient whose
  // output is the run's sum still leaves the whole run to the reverse kernel (exp once).
  it('store the values of nodes a kernel computes through a rule call, unless a replay leaves the run whole', () => {
    const lse = (x: Vec): Var => {
      const A = x.max();
      return x.sub(A).exp().sum().log().add(A);
    };
    const scenario = (tape: Tape): number[] => {
      tape.reset();
      const x = tape.vector(data(0.3));
      const y = lse(x);
      return [y.value, ...tape.gradient(y, [x])];
    };
    engine.setRunFusion(true);
    engine.setRunKernelSimd(true);
    scribble();
    const fused = scenario(wasm);
    const keys = [...(engine as unknown as { runSlots: Map<string, number> }).runSlots.keys()];
    engine.setRunFusion(false);
    const blocked = scenario(wasm);
    engine.setRunFusion(true);
    sameBits(fused, blocked);
    const reference = scenario(js);
    fused.forEach((v, k) => expect(v).toBeCloseTo(reference[k]!, 12));
    // The forward kernel of [sub, exp] taking the sum in (kind 2, 2 nodes): sub deferred (flag 8), exp stored.
    const words = keys.map((k) => k.split(':')[1]!.split(',').map(Number)).find((w) => w[0] === 2 && w[1] === 2)!;
    expect(words[5]! & 8).toBe(8);
    expect(words[9]! & 8).toBe(0);
    // Compiled with the run's sum as its output, the gradient's reverse kernel takes the sum's
    // value in (kind 19) and computes exp there, once (its flag 8: deferred).
    const expSum = (x: Vec): Var => x.mul(0.5).exp().sum();
    const f = compile(expSum, { inputs: N, vector: true, backend: 'wasm' });
    const g = compile(expSum, { inputs: N, vector: true, backend: 'js' });
    const at = data(0.7);
    const [value, grad] = f.valueAndGradient(at);
    const [expectedValue, expectedGrad] = g.valueAndGradient(at);
    expect(value).toBeCloseTo(expectedValue as number, 12);
    grad.forEach((v, k) => expect(v).toBeCloseTo(expectedGrad[k]!, 12));
    const compiledKeys = [...((f as unknown as { recording: { tape: { engine: WasmBackend } } }).recording.tape.engine as unknown as { runSlots: Map<string, number> }).runSlots.keys()];
    const reverse = compiledKeys.map((k) => k.split(':')[1]!.split(',').map(Number)).find((w) => w[0] === 19 && w[1] === 2);
    expect(reverse, compiledKeys.join(' | ')).toBeDefined();
    expect(reverse![9]! & 8).toBe(8);
  });

  it('read every intermediate after the sweeps, in any order', () => {
    const signatures = agree((tape) => {
      const { x, nodes, f } = chain(tape);
      const value = f.value;
      const grad = tape.gradient(f, [x]);
      return [value, ...grad, ...nodes.slice().reverse().flatMap((v) => Array.from(v.value))];
    });
    expect(signatures.length).toBeGreaterThan(0);
  });

  it('let a later recording consume a deferred node', () => {
    agree((tape) => {
      const { x, nodes, f } = chain(tape);
      const value = f.value;
      // t3 had no consumer outside the run when its values were computed.
      const g = nodes[2]!.mul(nodes[4]!).sum().add(f);
      return [value, g.value, ...tape.gradient(g, [x])];
    });
  });

  it('give gradients with respect to run nodes, and .grad after backward', () => {
    agree((tape) => {
      const { x, nodes, f } = chain(tape);
      const wrt = tape.gradient(f, [nodes[1]!, x, nodes[4]!]);
      tape.backward(f, 0.5);
      return [...wrt, ...nodes.flatMap((v) => Array.from(v.grad)), ...x.grad];
    });
  });

  // A gradient's read-out copies a leading run of scalar nodes at once and looks for dropped
  // vector adjoints only after it: the Vecs after the run must still be swept again.
  it('give gradients with respect to scalar inputs followed by run nodes', () => {
    agree((tape) => {
      tape.reset();
      const s = tape.variables([0.25, -1.5, 2]);
      const x = tape.vector(data(0.1));
      const t1 = x.square().mul(s[0]!);
      const t2 = x.sub(t1).square().mul(s[1]!);
      const f = t2.sum().add(s[2]!.mul(s[0]!));
      // First: no sweep before it kept t1's adjoints (a later one would leave them in memory).
      const runThenOne = tape.vjp([f], [1], [...s, t1]);
      const wrt = tape.gradient(f, [...s, t1, s[1]!, x, t2], 1, new Float64Array(4 + 3 * N));
      const runThenInput = tape.gradient(f, [...s, x]);
      return [...wrt, ...runThenOne, ...runThenInput, ...tape.gradient(f, [s[0]!, s[1]!, t2]), ...t1.grad];
    });
  });

  it('give vjp with a run node among the outputs', () => {
    agree((tape) => {
      const { x, nodes, f } = chain(tape);
      void f.value;
      const cotangent = [1.5, ...Array.from({ length: N }, (_, k) => Math.cos(k))];
      return tape.vjp([f, nodes[3]!], cotangent, [x, nodes[1]!]);
    });
  });

  it('give jvp and hvp through deferred nodes', () => {
    agree((tape) => {
      const { x, f } = chain(tape);
      void f.value;
      void tape.gradient(f, [x]);
      const v = Array.from({ length: N }, (_, k) => Math.sin(k));
      return [...tape.jvp([x], v, [f]), ...tape.hvp(f, [x], v)];
    });
  });

  it('check values and adjoints under checkNaN', async () => {
    const checked = await createTape({ backend: 'wasm', checkNaN: true });
    const { x, nodes, f } = chain(checked);
    const unchecked = chain(wasm);
    sameBits(checked.gradient(f, [x]), wasm.gradient(unchecked.f, [unchecked.x]));
    sameBits(nodes[5]!.grad, unchecked.nodes[5]!.grad);
    // A NaN produced inside the run is still found, at its node.
    checked.reset();
    const y = checked.vector(data(0.2));
    const bad = y.sub(2).sqrt().mul(3).add(y).sum();
    expect(() => bad.value).toThrow(/sqrt/);
  });

  it.each([N, N + 1])('absorb the slices of Rosenbrock\'s stencil (%i elements), and give them back on request', (size) => {
    const signatures = agree((tape) => {
      tape.reset();
      // (An even and an odd number of terms: the kernel's pairs, and a last element alone.)
      const x = tape.vector(data(0.1, size));
      const a = x.slice(0, -1), b = x.slice(1);
      const f = b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
      const value = f.value;
      const grad = tape.gradient(f, [x]);
      // Their adjoints were never stored (a sweep again stores them), their values never copied.
      return [value, ...grad, ...tape.gradient(f, [b, a]), ...a.value, ...b.value, ...b.grad];
    });
    expect(absorbs(signatures)).toBe(true);
  });

  it('keep the rules\' zero skips where a term is 0 times an infinity (kernels that try a pair without masks)', () => {
    // x[i] = 0 before x[i + 1] = Infinity: square's partial 2·0 meets an infinite adjoint, where
    // the rule skips the term (0) and an unmasked product makes a NaN. Also a NaN, and -0.
    const x0 = data(0.3);
    x0[100] = 0; x0[101] = Infinity; x0[500] = NaN; x0[900] = -0; x0[1501] = -Infinity; x0[1500] = 0;
    agree((tape) => {
      tape.reset();
      const x = tape.vector(x0);
      const a = x.slice(0, -1), b = x.slice(1);
      const f = b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
      return [f.value, ...tape.gradient(f, [x])];
    });
  });

  // Elements where one slice's total is 0 · Infinity (NaN) without the masks and +0 with them,
  // and the other's is not NaN: the pairs are tried again with the masks for a NaN in any slice's
  // total, the slice the kernel takes first (a² · b², after 1e200 then 0) or last (a · b², after
  // 0 then Infinity). (No transcendental op: the engines agree bit for bit on these.)
  // With x read after the run too, its adjoints hold terms when the kernel runs, which adds to
  // them and tries each pair on its own instead.
  it.each([
    ['a · b²', (a: Vec, b: Vec) => a.mul(b.square()), 0, Infinity, false],
    ['a² · b²', (a: Vec, b: Vec) => a.square().mul(b.square()), 1e200, 0, false],
    ['a · b², x read after', (a: Vec, b: Vec) => a.mul(b.square()), 0, Infinity, true],
    ['a² · b², x read after', (a: Vec, b: Vec) => a.square().mul(b.square()), 1e200, 0, true],
  ] as const)('keep a zero skip that only one slice\'s total misses (%s)', (_, term, first, second, readAfter) => {
    const x0 = data(0.3);
    for (const i of [100, 700, 1501]) { x0[i] = first; x0[i + 1] = second; }
    const signatures = agree((tape) => {
      tape.reset();
      const x = tape.vector(x0);
      let f = term(x.slice(0, -1), x.slice(1)).sum();
      if (readAfter) f = f.add(x.div(7).sum());
      return [f.value, ...tape.gradient(f, [x])];
    });
    expect(absorbs(signatures)).toBe(true);
  });

  // A sub's term to its second operand (-g) is kept as g in that operand's register, and that
  // node's terms take the sign back (emitReverseTerms and emitReverseTangentTerms, `negated`):
  // through each kind of node, a node read again after the sub (its next term subtracted), a sub
  // of a sub; in the gradient and in an hvp's reverse sweep with tangents. (Ops the engines
  // compute alike bit for bit: no transcendental one.)
  it.each([
    ['neg', (a: Vec, b: Vec) => a.sub(b.neg())],
    ['a rule (sqrt)', (a: Vec, b: Vec) => a.sub(b.abs().add(1).sqrt())],
    ['div', (a: Vec, b: Vec) => a.sub(b.div(a.add(3)))],
    ['square', (a: Vec, b: Vec) => a.sub(b.square())],
    ['mul', (a: Vec, b: Vec) => a.sub(b.mul(a))],
    ['add', (a: Vec, b: Vec) => a.sub(b.add(a.square()))],
    ['sub of a sub', (a: Vec, b: Vec) => a.sub(b.sub(a.square()))],
    ['read again', (a: Vec, b: Vec) => { const t = b.square(), u = t.mul(a); return a.sub(t).add(u); }],
  ] as const)('give the gradient and an hvp through a sub\'s second operand: %s', (_, term) => {
    const direction = Array.from({ length: N }, (_, k) => Math.cos(0.3 * k));
    agree((tape) => {
      tape.reset();
      const x = tape.vector(data(0.2));
      const f = term(x.slice(0, -1), x.slice(1)).square().sum();
      return [f.value, ...tape.gradient(f, [x]), ...tape.hvp(f, [x], direction)];
    });
  });

  // The sub's second operand outside the run (an input of its own, read once there), whose terms
  // go to memory: the sign taken back before they are written.
  it('give the gradient and an hvp where a sub\'s second operand is outside the run', () => {
    const direction = Array.from({ length: 2 * N }, (_, k) => Math.cos(0.3 * k));
    agree((tape) => {
      tape.reset();
      const x = tape.vector(data(0.2)), z = tape.vector(data(0.9));
      const f = x.square().sub(z).mul(x).square().sum();
      return [f.value, ...tape.gradient(f, [x, z]), ...tape.hvp(f, [x, z], direction)];
    });
  });

  const stencil = (order: number[], extra: (x: Vec, s: Vec[]) => Var | null) => (tape: Tape): Float64Array => {
    tape.reset();
    const x = tape.vector(data(0.7));
    const s: Vec[] = [];
    for (const k of order) s[k] = x.slice(k, N - 2 + k);
    const more = extra(x, s);
    let f = s[0]!.mul(s[1]!).sub(s[2]!.square().mul(0.3)).add(s[1]!.square()).sum();
    if (more) f = f.add(more);
    return Float64Array.from([f.value, ...tape.gradient(f, [x])]);
  };

  it('absorb three slices of one parent when their starts rise with their order', () => {
    expect(absorbs(agree(stencil([0, 1, 2], () => null)))).toBe(true);
  });

  it('keep slices out where absorbing them would change the order of the sums', () => {
    // Starts against node order; a slice also read outside the run; the parent used between.
    expect(absorbs(agree(stencil([2, 0, 1], () => null)))).toBe(false);
    expect(absorbs(agree(stencil([0, 1, 2], (_, s) => s[1]!.sum())))).toBe(false);
    expect(absorbs(agree(stencil([0, 1, 2], (x) => x.mul(0.5).sum())))).toBe(false);
  });

  // A new-user probe: slices recorded with starts 0, 2, 1 (a product of all three) gave x.grad
  // 1-3 ulp off the JS engine's, and reading a slice's gradient (a keeping sweep) then changed
  // x.grad: the run absorbed the one slice whose own checks passed, beside the two that failed.
  // Every order of three and four starts, each read twice around a slice's gradient.
  it('absorb slices of a parent only when every one of them may be; any order of starts gives the JS engine\'s bits', () => {
    const permutations = (xs: number[]): number[][] =>
      xs.length <= 1 ? [xs] : xs.flatMap((v, k) => permutations([...xs.slice(0, k), ...xs.slice(k + 1)]).map((p) => [v, ...p]));
    for (const order of [...permutations([0, 1, 2]), ...permutations([0, 1, 2, 3])]) {
      agree((tape) => {
        tape.reset();
        const x = tape.vector(data(0.3));
        const s = order.map((k) => x.slice(k, N - 3 + k));
        let product = s[0]!;
        for (let k = 1; k < s.length; k++) product = product.mul(s[k]!);
        const f = product.sum();
        tape.backward(f);
        const first = x.grad, slice = s[0]!.grad, again = x.grad;
        sameBits(Array.from(again), Array.from(first));
        return Float64Array.from([f.value, ...first, ...slice]);
      });
    }
    // With slices of other parents among them (a review probe: the list was packed while it was
    // still read, and a slice of the failing parent was kept alone again past two of others).
    for (const order of ['x0 z1 y1 x2 x1', 'x0 y1 z1 x2 x1', 'z1 x0 y1 x2 x1', 'x0 x2 z1 y1 x1', 'x2 z1 x0 y1 x1']) {
      agree((tape) => {
        tape.reset();
        const parents: Record<string, Vec> = { x: tape.vector(data(0.3)), y: tape.vector(data(1.1)), z: tape.vector(data(2.2)) };
        const s = order.split(' ').map((p) => parents[p[0]!]!.slice(Number(p[1]), N - 3 + Number(p[1])));
        let product = s[0]!;
        for (let k = 1; k < s.length; k++) product = product.mul(s[k]!);
        const f = product.sum();
        tape.backward(f);
        const first = parents.x!.grad, slice = s[0]!.grad, again = parents.x!.grad;
        sameBits(Array.from(again), Array.from(first));
        return Float64Array.from([f.value, ...first, ...slice, ...parents.y!.grad, ...parents.z!.grad]);
      });
    }
  });

  it('sweep absorbed slices block by block where the run has no kernel (select)', () => {
    agree((tape) => {
      tape.reset();
      const x = tape.vector(data(0.4));
      const a = x.slice(0, -1), b = x.slice(1);
      const c = b.sub(a.square());
      const f = tape.select(c.gt(0), c.square(), c.neg().mul(a)).mul(3).sum();
      return [f.value, ...tape.gradient(f, [x]), ...c.value];
    });
  });

  // Sizes that leave 0, 1, 2 and 3 elements after the groups of four a kernel adds its sum in.
  it.each([N, N + 1, N + 2, N + 3])('replay compiled runs the same (%i inputs): gradients one row and in batches, across a guard, hvp', (size) => {
    const rosenbrock = (x: Vec): Var => {
      const a = x.slice(0, -1), b = x.slice(1);
      const f = b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
      // A branch on a value: rows on the other side record again.
      return x.get(0).gt(0.5).value ? f : f.mul(2);
    };
    const fused = compile(rosenbrock, { inputs: size, vector: true, backend: 'wasm' });
    const reference = compile(rosenbrock, { inputs: size, vector: true, backend: 'js' });
    // The last row has a zero before an infinity: a kernel that tried it without masks runs it
    // again with them (see speculates in emit-runs.ts).
    const special = data(0.2, size);
    special[10] = 0; special[11] = Infinity; special[size - 3] = NaN;
    const rows = [data(0.1, size), data(0.9, size), data(-1.2, size).map((v) => v - 0.5), special];
    const X = new Float64Array(rows.length * size);
    rows.forEach((x, r) => X.set(x, r * size));
    // A gradient replay whose output is the run's sum leaves the sum to the reverse kernel: with
    // SIMD kernels, then the scalar ones.
    for (const simd of [true, false]) {
      if (fused.recorded) (fused.recorded.tape.engine as WasmBackend).setRunKernelSimd(simd);
      for (const x of rows) {
        const [value, grad] = fused.valueAndGradient(x);
        const [expectedValue, expectedGrad] = reference.valueAndGradient(x);
        expect(Object.is(value, expectedValue)).toBe(true);
        sameBits(grad, expectedGrad);
      }
      const values = new Float64Array(rows.length), expectedValues = new Float64Array(rows.length);
      sameBits(fused.valueAndGradientBatch(X, rows.length, undefined, values)[1], reference.valueAndGradientBatch(X, rows.length, undefined, expectedValues)[1]);
      sameBits(values, expectedValues);
    }
    expect(fused.rerecords).toBeGreaterThan(0);
    const v = data(0.5, size);
    sameBits(fused.hvp(rows[0]!, v), reference.hvp(rows[0]!, v));
  });

  it('sweep in blocks where one sweep\'s kernel is not ready (still compiling in a browser)', () => {
    // The forward kernel deferred values and slices; the reverse sweep finds no kernel, so it
    // materializes what it reads and absorbs its slices block by block. And the other way round.
    const patched = engine as unknown as { fuseRun(sig: number, words: number): number; core: { memory: WebAssembly.Memory } };
    const original = patched.fuseRun.bind(engine);
    for (const refuse of [1, 0]) {
      engine.setRunKernelSimd(true); // forgets the kernels the core and the engine hold
      patched.fuseRun = (sig, words) => ((new Int32Array(patched.core.memory.buffer, sig, 1)[0]! & 1) === refuse ? 0 : original(sig, words));
      try {
        const scenario = (tape: Tape): number[] => {
          tape.reset();
          const x = tape.vector(data(0.6));
          const a = x.slice(0, -1), b = x.slice(1);
          const f = b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
          return [f.value, ...tape.gradient(f, [x]), ...tape.gradient(f, [a])];
        };
        scribble();
        sameBits(scenario(wasm), scenario(js));
      } finally {
        patched.fuseRun = original;
      }
    }
  });

  it('hand a compiled function\'s intermediate output its values', () => {
    const fn = (x: Vec): Vec => {
      const t = x.square().sub(x);
      void t.mul(3).add(1).sum();
      return t;
    };
    const fused = compile(fn, { inputs: N, vector: true, backend: 'wasm' });
    const reference = compile(fn, { inputs: N, vector: true, backend: 'js' });
    const at = data(0.3);
    sameBits(fused.value(at) as Float64Array, reference.value(at) as Float64Array);
    sameBits(fused.value(data(0.4)) as Float64Array, reference.value(data(0.4)) as Float64Array);
  });
});

// Stencil programs: arithmetic on slices of one input, ending in a sum, the shape the fused runs
// take whole (deferred nodes, absorbed slices, neighbours, fresh parents, kernels without masks,
// a replay's sum left to the reverse kernel). Random ops and slice starts, with and without zeros
// next to infinities; taped and compiled, fused against the JS engine bit for bit.
describe('stencil programs', async () => {
  await init();
  const wasm = await createTape({ backend: 'wasm' });
  const js = await createTape({ backend: 'js' });
  const OPS = ['add', 'sub', 'mul'] as const;
  interface Stencil { n: number; starts: number[]; steps: { op: number; a: number; b: number; unary: boolean; c: number }[]; special: boolean }
  const stencilArbitrary: fc.Arbitrary<Stencil> = fc.record({
    n: fc.constantFrom(2049, 2050, 2051, 2052),
    starts: fc.uniqueArray(fc.nat({ max: 3 }), { minLength: 1, maxLength: 3 }),
    steps: fc.array(fc.record({ op: fc.nat(), a: fc.nat(), b: fc.nat(), unary: fc.boolean(), c: fc.nat({ max: 2 }) }), { minLength: 1, maxLength: 8 }),
    special: fc.boolean(),
  });
  const fnOf = (p: Stencil) => (x: Vec): Var => {
    const len = p.n - Math.max(...p.starts);
    const vecs: Vec[] = p.starts.map((s) => x.slice(s, s + len));
    for (const step of p.steps) {
      const a = vecs[vecs.length - 1 - (step.a % vecs.length)]!;
      if (step.unary) vecs.push(step.c === 0 ? a.square() : step.c === 1 ? a.neg() : a.mul(0.5));
      else vecs.push((a[OPS[step.op % OPS.length]!] as (o: Vec) => Vec).call(a, vecs[vecs.length - 1 - (step.b % vecs.length)]!));
    }
    return vecs[vecs.length - 1]!.sum();
  };
  const point = (p: Stencil): Float64Array => {
    const x = Float64Array.from({ length: p.n }, (_, i) => 0.9 * Math.sin(0.37 * i + 0.2));
    if (p.special) { x[40] = 0; x[41] = Infinity; x[p.n - 2] = NaN; x[700] = -Infinity; x[701] = 0; }
    return x;
  };
  it('equal the JS engine bit for bit, taped and compiled', () => {
    fc.assert(fc.property(stencilArbitrary, (p) => {
      const x0 = point(p);
      const taped = (tape: Tape): number[] => {
        tape.reset();
        const x = tape.vector(x0);
        const f = fnOf(p)(x);
        return [f.value, ...tape.gradient(f, [x])];
      };
      const expected = taped(js);
      expect(Object.is(expected.length, p.n + 1)).toBe(true);
      const got = taped(wasm);
      for (let k = 0; k < got.length; k++) if (!Object.is(got[k], expected[k])) expect(`${k}: ${got[k]}`).toBe(`${k}: ${expected[k]}`);
      const fused = compile(fnOf(p), { inputs: p.n, vector: true, backend: 'wasm' });
      const reference = compile(fnOf(p), { inputs: p.n, vector: true, backend: 'js' });
      for (const at of [x0, x0.map((v) => v * 1.5)]) {
        const [value, grad] = fused.valueAndGradient(at);
        const [expectedValue, expectedGrad] = reference.valueAndGradient(at);
        expect(Object.is(value, expectedValue)).toBe(true);
        for (let k = 0; k < grad.length; k++) if (!Object.is(grad[k], expectedGrad[k])) expect(`${k}: ${grad[k]}`).toBe(`${k}: ${expectedGrad[k]}`);
      }
    }), { seed: 20_261_201, numRuns: 40 });
  });
});
