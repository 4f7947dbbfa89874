// Fused run kernels (src/wasm/codegen/emit-runs.ts) against the block sweep they replace: random
// elementwise chains shorter and longer than a block (runs form above 1024 elements), with every operand
// form a run meets (run nodes, outside vectors, constant vectors, scalar Vars, numbers, one
// vector on both sides), intermediates used again after the run, and gradients taken with
// respect to inputs, scalars and intermediates. Fused and block sweeps must agree bit for bit on
// every value and adjoint; the JS engine (no runs at all) agrees to rounding on the
// transcendental ops and bit for bit on the arithmetic ones.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTape, init, type Tape, type Var, type Vec } from '../src/index.ts';
import { runKernelLimits, type WasmBackend } from '../src/wasm/backend.ts';
import { countingCompiles } from './support.ts';

const SEED = 20_261_130;
// (floor, ceil, stopGradient, recip, log, min and lt too: the kernels spell out their values,
// and the partials the generated sweeps spell out, where they called the core per element.)
const UNARY = ['neg', 'square', 'exp', 'sin', 'tanh', 'sigmoid', 'softplus', 'sqrt', 'abs', 'relu', 'log1p', 'floor', 'ceil', 'stopGradient', 'recip', 'log'] as const;
const BINARY = ['add', 'sub', 'mul', 'div', 'max', 'hypot', 'atan2', 'min', 'lt'] as const;
const ARITHMETIC = new Set<string>(['neg', 'square', 'add', 'sub', 'mul', 'div', 'floor', 'ceil', 'stopGradient', 'min', 'lt']);

interface Step { unary: boolean; op: number; a: number; b: number; form: number }
interface Program { n: number; steps: Step[]; arithmetic: boolean; special: boolean; slices: number[] }

const stepArbitrary = fc.record({ unary: fc.boolean(), op: fc.nat(), a: fc.nat(), b: fc.nat(), form: fc.nat({ max: 5 }) });
const programArbitrary: fc.Arbitrary<Program> = fc.record({
  n: fc.constantFrom(17, 18, 300, 1025, 1500, 3001, 1026, 1027),
  steps: fc.array(stepArbitrary, { minLength: 2, maxLength: 12 }),
  arithmetic: fc.boolean(),
  special: fc.boolean(),
  // Slices of one wider input, by start, in recording order (runs read them in place and may
  // absorb them: assembly/vector.ts, "Slices").
  slices: fc.array(fc.nat({ max: 2 }), { maxLength: 3 }),
});

const data = (n: number, seed: number): Float64Array => Float64Array.from({ length: n }, (_, i) => 0.8 * Math.sin(0.37 * i + seed));

interface Recorded { x: Vec; s: Var; wide: Vec; vecs: Vec[]; out: Var }

// `sumOnly`: the output is the last step's sum and nothing after it (an hvp then leaves the run
// summed into it to the reverse tangent kernel, its tangent sweep skipping it).
function record(tape: Tape, p: Program, sumOnly = false): Recorded {
  tape.reset();
  // Zeros where the rules skip zero partials; with `special`, an infinity and a NaN too (the
  // kernels' masks must keep 0·∞ out exactly where the block sweep does).
  const xs = data(p.n, 0.1);
  for (let i = 3; i < p.n; i += 5) xs[i] = 0;
  if (p.special) { xs[p.n - 2] = Infinity; xs[p.n >> 1] = NaN; xs[11] = -Infinity; }
  const x = tape.vector(xs);
  const s = tape.variable(0.7);
  const constant = tape.constantVector(data(p.n, 2.3));
  // Just long enough for its slices (so two at starts 0 and 1 cover it: a fresh parent).
  const wide = tape.vector(data(p.n + Math.max(0, ...p.slices), 1.7));
  const vecs: Vec[] = [x, ...p.slices.map((start) => wide.slice(start, start + p.n))];
  const unary = p.arithmetic ? UNARY.filter((o) => ARITHMETIC.has(o)) : UNARY;
  const binary = p.arithmetic ? BINARY.filter((o) => ARITHMETIC.has(o)) : BINARY;
  for (const step of p.steps) {
    const a = vecs[vecs.length - 1 - (step.a % vecs.length)]!;
    let v: Vec;
    if (step.unary) {
      const name = unary[step.op % unary.length]!;
      // Keep values in range: sqrt and log1p of a square (plus 1 for log1p's domain).
      v = name === 'sqrt' ? a.square().sqrt() : name === 'log1p' ? a.square().log1p() : name === 'exp' ? a.tanh().exp() : (a[name] as () => Vec).call(a);
    } else {
      const name = binary[step.op % binary.length]!;
      const b = vecs[vecs.length - 1 - (step.b % vecs.length)]!;
      const other: Vec | Var | number | Float64Array | Vec[] = [b, constant, s, 1.5, a, b][step.form]!;
      // Division by something bounded away from zero.
      const divisor = (o: typeof other): Vec | Var => (o instanceof Object && 'square' in o ? (o as Vec).square().add(1) : s.square().add(1));
      v = name === 'div' ? a.div(divisor(other)) : (a[name] as (o: unknown) => Vec).call(a, other);
    }
    vecs.push(v);
  }
  // Use intermediates after the run too, so some run nodes have consumers outside it.
  const mid = vecs[Math.floor(vecs.length / 2)]!;
  const out = sumOnly ? vecs[vecs.length - 1]!.sum() : vecs[vecs.length - 1]!.sum().add(mid.mul(mid).sum().mul(0.25)).add(mid.get(7));
  return { x, s, wide, vecs, out };
}

interface Result { values: Float64Array[]; grad: Float64Array; value: number; jvp: Float64Array; hvp: Float64Array; hvpOfSum: Float64Array }

function run(tape: Tape, p: Program): Result {
  const { x, s, wide, vecs, out } = record(tape, p);
  const value = out.value;
  // The inputs' gradient first (the sweep that may leave adjoints out), then every node's.
  const inputs = tape.gradient(out, [x, s, wide]);
  const values = vecs.map((v) => v.value);
  const grad = Float64Array.from([...inputs, ...tape.gradient(out, [x, s, wide, ...vecs.slice(1)])]);
  // Tangents along a direction with zeros (and with \`special\`, an infinity and a NaN), on a fresh
  // recording (its runs' values deferred again): every node's, then an hvp on another one.
  const direction = Float64Array.from({ length: 1 + (p.n + Math.max(0, ...p.slices)) + p.n }, (_, k) => (k % 4 === 1 ? 0 : Math.cos(0.7 * k)));
  if (p.special) { direction[5] = Infinity; direction[p.n + 9] = NaN; }
  // Element tangents a sweep leaves unwritten must not be read (seeding clears only the leaves').
  const poison = (): void => void (tape as unknown as { engine: { views: { xtan: Float64Array | null } } }).engine.views.xtan?.fill(NaN);
  const again = record(tape, p);
  poison();
  const jvp = tape.jvp([again.s, again.wide, again.x], direction, [...again.vecs.slice(1), again.out]);
  const third = record(tape, p);
  poison();
  const hvp = tape.hvp(third.out, [third.s, third.wide, third.x], direction);
  const fourth = record(tape, p, true);
  poison();
  const hvpOfSum = tape.hvp(fourth.out, [fourth.s, fourth.wide, fourth.x], direction);
  return { values, grad, value, jvp, hvp, hvpOfSum };
}

function sameBits(actual: Float64Array, expected: Float64Array): boolean {
  if (actual.length !== expected.length) return false;
  for (let k = 0; k < actual.length; k++) if (!Object.is(actual[k], expected[k])) return false;
  return true;
}

describe('fused run kernels', async () => {
  await init();
  const wasm = await createTape({ backend: 'wasm' });
  const js = await createTape({ backend: 'js' });
  const engine = (wasm as unknown as { engine: WasmBackend }).engine;

  it(`equal the block sweep bit for bit, and the JS engine (seed ${SEED})`, () => {
    let fusedRuns = 0, absorbing = 0, tangentKernels = 0, reverseTangentKernels = 0;
    fc.assert(
      fc.property(programArbitrary, (p) => {
        engine.setRunFusion(false);
        const blocked = run(wasm, p);
        engine.setRunFusion(true);
        // Values and adjoints a fused sweep does not store must not be read: not the block
        // sweep's, left in the same memory, but NaN.
        engine.views.xval.fill(NaN);
        engine.views.xadj.fill(NaN);
        const fused = run(wasm, p);
        const slots = (engine as unknown as { runSlots: Map<string, number> }).runSlots;
        fusedRuns += [...slots.values()].filter((slot) => slot > 0).length;
        // Reverse kernels that absorbed a slice (KIND_SLICE = -16 in their signature).
        absorbing += [...slots.keys()].filter((key) => /^simd:\d*[13579],.*,-1[6-9],/.test(key)).length;
        // Tangent kernels (kind 32) in their slots.
        tangentKernels += [...slots].filter(([key, slot]) => /^simd:3[24],/.test(key) && slot > 0).length;
        reverseTangentKernels += [...slots].filter(([key, slot]) => /^simd:3[35],/.test(key) && slot > 0).length;
        expect(Object.is(fused.value, blocked.value)).toBe(true);
        fused.values.forEach((v, k) => expect(sameBits(v, blocked.values[k]!), `value of step ${k}`).toBe(true));
        expect(sameBits(fused.grad, blocked.grad), 'gradient').toBe(true);
        expect(sameBits(fused.jvp, blocked.jvp), 'jvp').toBe(true);
        expect(sameBits(fused.hvp, blocked.hvp), 'hvp').toBe(true);
        expect(sameBits(fused.hvpOfSum, blocked.hvpOfSum), 'hvp of the last step\'s sum').toBe(true);
        const reference = run(js, p);
        for (const key of ['grad', 'jvp', 'hvp', 'hvpOfSum'] as const) {
          if (p.arithmetic) {
            expect(sameBits(fused[key], reference[key]), `${key} vs JS`).toBe(true);
            continue;
          }
          for (let k = 0; k < reference[key].length; k++) {
            const [a, b] = [fused[key][k]!, reference[key][k]!];
            if (Number.isFinite(b)) expect(Math.abs(a - b), `${key} vs JS`).toBeLessThanOrEqual(1e-12 * (1 + Math.abs(b)));
            else expect(a, `${key} vs JS`).toBe(b);
          }
        }
      }),
      { seed: SEED, numRuns: 40 },
    );
    // The kernels did run (a run of two or more nodes met the generator).
    expect(fusedRuns).toBeGreaterThan(0);
    expect(absorbing).toBeGreaterThan(0);
    expect(tangentKernels).toBeGreaterThan(0);
    expect(reverseTangentKernels).toBeGreaterThan(0);
  });

  // The ops whose values (relu, abs, max, min, floor, ceil, stopGradient) and partials (those
  // NATIVE_PARTIAL spells, and none for the zero-gradient ones) the kernels spell out instead of
  // calling the core per element: a run of each, in kernels once they are compiled, against the
  // block sweep, bit for bit, with zeros, infinities and a NaN among the elements.
  it('spell out the cheap ops and the zero-gradient ones as the block sweep computes them', async () => {
    const xs = data(3001, 0.4);
    for (let i = 3; i < xs.length; i += 7) xs[i] = 0;
    xs[5] = Infinity; xs[8] = -Infinity; xs[13] = NaN; xs[17] = -0;
    const ops: [string, (v: Vec) => Vec][] = [
      ['relu', (v) => v.relu()], ['abs', (v) => v.abs()], ['max', (v) => v.max(v.mul(-0.5))], ['min', (v) => v.min(0.25)],
      ['floor', (v) => v.floor()], ['ceil', (v) => v.ceil()], ['stopGradient', (v) => v.stopGradient()], ['lt', (v) => v.lt(0.1)],
      ['recip', (v) => v.recip()], ['log', (v) => v.log()], ['sqrt', (v) => v.sqrt()], ['div', (v) => v.div(v.square().add(1))],
    ];
    for (const [name, op] of ops) {
      const own = await createTape({ backend: 'wasm' });
      const ownEngine = (own as unknown as { engine: WasmBackend }).engine;
      const sweep = (): Float64Array => {
        own.reset();
        const x = own.vector(xs);
        const y = op(x.mul(1.5)).mul(x).add(x).sum();
        return Float64Array.from([y.value, ...own.gradient(y, [x])]);
      };
      ownEngine.setRunFusion(false);
      const blocked = sweep();
      ownEngine.setRunFusion(true);
      // The kernels compile in the background: sweep until both are in their slots.
      const slots = (ownEngine as unknown as { runSlots: Map<string, number> }).runSlots;
      for (let tries = 0; tries < 200 && [...slots.values()].filter((slot) => slot > 0).length < 2; tries++) {
        sweep();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect([...slots.values()].filter((slot) => slot > 0).length, `${name}: kernels`).toBe(2);
      expect(sameBits(sweep(), blocked), name).toBe(true);
    }
  });

  // The kernels' second-order formulas of recip, sqrt and div multiply a tangent in; past a
  // finite tangent they call the core's rule, which takes each operand's term apart and leaves
  // out one whose second partial is 0 (recip at 1.5e110: 2/x³ underflows; div by an infinite z:
  // -1/z² is 0), as the block sweep does: fused and blocked hvps alike, bit for bit.
  it('take an infinite tangent as the block sweep does in an hvp\'s second-order terms', async () => {
    const ones = new Float64Array(3001).fill(1);
    const cases: [string, (v: Vec, tape: Tape) => Vec, number][] = [
      ['recip', (v) => v.recip(), 1e110], ['sqrt', (v) => v.sqrt(), 1e-300], ['div', (v, tape) => tape.constantVector(ones).div(v), Infinity],
    ];
    for (const [name, op, special] of cases) {
      const xs = data(3001, 0.9).map((v) => 2 + v);
      const direction = new Float64Array(3001).fill(1);
      for (let i = 0; i < xs.length; i += 7) { xs[i] = special; direction[i] = Infinity; }
      const own = await createTape({ backend: 'wasm' });
      const ownEngine = (own as unknown as { engine: WasmBackend }).engine;
      const hvp = (): Float64Array => {
        own.reset();
        const x = own.vector(xs);
        return own.hvp(op(x.mul(1.5), own).sum(), [x], direction);
      };
      ownEngine.setRunFusion(false);
      const blocked = hvp();
      ownEngine.setRunFusion(true);
      const slots = (ownEngine as unknown as { runSlots: Map<string, number> }).runSlots;
      const reverseTangent = (): number => [...slots].filter(([key, slot]) => /^(simd|scalar):3[35],/.test(key) && slot > 0).length;
      for (let tries = 0; tries < 200 && reverseTangent() === 0; tries++) {
        hvp();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(reverseTangent(), `${name}: a reverse tangent kernel`).toBeGreaterThan(0);
      expect(sameBits(hvp(), blocked), name).toBe(true);
      if (name !== 'sqrt') expect(blocked[0], `${name} at ${special}`).toBe(0);
    }
  });

  it('sweep Rosenbrock in kernels with the block sweep\'s results', async () => {
    const x0 = data(4097, 0.5);
    const rosenbrock = (tape: Tape): Float64Array => {
      tape.reset();
      const x = tape.vector(x0);
      const a = x.slice(0, -1), b = x.slice(1);
      const f = b.sub(a.square()).square().mul(100).add(a.sub(1).square()).sum();
      return Float64Array.from([f.value, ...tape.gradient(f, [x])]);
    };
    // A tape of its own: the property above may have filled the shared engine's kernel slots.
    const own = await createTape({ backend: 'wasm' });
    const ownEngine = (own as unknown as { engine: WasmBackend }).engine;
    ownEngine.setRunFusion(false);
    const blocked = rosenbrock(own);
    ownEngine.setRunFusion(true);
    const fused = rosenbrock(own);
    expect(sameBits(fused, blocked)).toBe(true);
    expect(sameBits(fused, rosenbrock(js))).toBe(true);
    // One kernel for the forward run (with the sum) and one for the reverse.
    expect((ownEngine as unknown as { runSlots: Map<string, number> }).runSlots.size).toBe(2);
  });
});

// A scaling probe: past 256 kernels an instance swept every later signature block by block, and
// past 1,024 modules the process did, for good (a tape of 200 chain shapes, a service meeting new
// models: 3-6x slower). Both bounds now let the least recently used go.
describe('past the kernel bounds, new signatures still get kernels', async () => {
  await init();
  const chains = (tape: Tape, shapes: number, offset: number): Float64Array => {
    tape.reset();
    const x = tape.vector(data(4096, 0.25));
    const steps = [(v: Vec) => v.add(0.5), (v: Vec) => v.mul(0.9), (v: Vec) => v.square(), (v: Vec) => v.sub(0.1)];
    let s = x.sum();
    for (let k = 0; k < shapes; k++) {
      let v = x;
      for (let j = 0, d = k + offset; j < 4; j++, d >>= 2) v = steps[d & 3]!(v);
      s = s.add(v.sum());
    }
    return Float64Array.from([s.value, ...tape.gradient(s, [x])]);
  };

  it('an instance fills its slots again, and the process compiles evicted modules again, with the block sweep\'s results', async () => {
    const tape = await createTape({ backend: 'wasm' });
    const engine = (tape as unknown as { engine: WasmBackend }).engine;
    const slots = (engine as unknown as { runSlots: Map<string, number> }).runSlots;
    const { perInstance, perProcess } = runKernelLimits;
    try {
      runKernelLimits.perInstance = 6;
      runKernelLimits.perProcess = 5;
      let before = new Set<string>();
      for (const offset of [0, 40, 80]) {
        engine.setRunFusion(false);
        const blocked = chains(tape, 12, offset);
        engine.setRunFusion(true);
        const fused = chains(tape, 12, offset);
        expect(sameBits(fused, blocked)).toBe(true);
        // This sweep's signatures in kernels: the slots hold new ones (past the bounds they kept
        // the first six for good, and every later one swept block by block).
        const now = [...slots].filter(([, slot]) => slot > 0).map(([key]) => key);
        expect(now.filter((key) => !before.has(key)).length, `shapes from ${offset}`).toBeGreaterThan(0);
        before = new Set(now);
        expect(slots.size).toBeLessThanOrEqual(6);
        expect((engine as unknown as { kernelSlots: number[] }).kernelSlots.length).toBeLessThanOrEqual(6);
      }
    } finally {
      Object.assign(runKernelLimits, { perInstance, perProcess });
    }
  });
});

// A memory probe: each kernel's module keeps 40-50 KB of compiled code, and a new chain shape
// cost a compile of 1.3-2.3 ms at its first gradient, which one met once never earns back. By
// default a signature gets its kernel the 3rd time a run asks for it (once a sweep), sweeping
// block by block until then, with the same bits (checked here at 3 and 8).
describe('a signature is compiled once it has been met compileAfter times', async () => {
  await init();
  it.each([3, 8])('sweeps block by block, bit for bit, until then, and compiles no module (%i)', async (after) => {
    const tape = await createTape({ backend: 'wasm' });
    const engine = (tape as unknown as { engine: WasmBackend }).engine;
    const slots = (engine as unknown as { runSlots: Map<string, number> }).runSlots;
    // A shape no other test records (nor the other case: as many hypots as `after`): its
    // signature is new to the process.
    const gradient = (): Float64Array => {
      tape.reset();
      const x = tape.vector(data(3000, 0.45));
      let y = x.mul(0.37).atan2(x.add(2.5)).square();
      for (let k = 0; k < after; k++) y = y.hypot(x);
      const f = y.sum();
      return Float64Array.from([f.value, ...tape.gradient(f, [x])]);
    };
    engine.setRunFusion(false);
    const blocked = gradient();
    engine.setRunFusion(true);
    const { compileAfter } = runKernelLimits;
    try {
      runKernelLimits.compileAfter = after;
      countingCompiles((compiled) => {
        for (let k = 1; k < after; k++) {
          expect(sameBits(gradient(), blocked), `gradient ${k}`).toBe(true);
          expect(compiled(), `gradient ${k}`).toBe(0);
          expect([...slots.values()].some((slot) => slot > 0)).toBe(false);
        }
        expect(sameBits(gradient(), blocked), `gradient ${after}`).toBe(true);
        expect(compiled()).toBeGreaterThan(0);
        expect([...slots.values()].some((slot) => slot > 0)).toBe(true);
        expect(sameBits(gradient(), blocked), 'the gradient after').toBe(true);
      });
    } finally {
      runKernelLimits.compileAfter = compileAfter;
    }
  });
});
