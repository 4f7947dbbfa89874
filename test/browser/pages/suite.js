// Runs inside the page: the worked examples, the per-op gradient sweep and the wasm-vs-JS
// random-graph parity check, against whatever module the page handed in (the real dist/).
// Everything returns plain data; the vitest side (test/browser.test.ts) does the asserting, so
// the expected values never live next to the code that computes the results.

import { VECTOR_PROGRAMS } from './vector-programs.js';

/** Runs every vector program on one backend: value, gradient, H·v along a fixed direction, and
 *  the finite-difference gradient. Shared with Node (browser.test.ts runs the same programs). */
export function runVectorPrograms(tapegrad, backend) {
  const { createTapeSync, finiteDifferenceGradient } = tapegrad;
  const tape = createTapeSync({ backend });
  return VECTOR_PROGRAMS.map(({ name, point, f }) => {
    const direction = point.map((_, k) => 1 - 0.3 * k);
    const record = (at) => {
      tape.reset();
      const x = tape.vector(at);
      return { x, y: f(tape, x) };
    };
    let { x, y } = record(point);
    const grad = Array.from(tape.gradient(y, [x]));
    ({ x, y } = record(point));
    const hv = Array.from(tape.hvp(y, [x], direction));
    const value = y.value;
    const numeric = Array.from(finiteDifferenceGradient((at) => record(at).y.value, point));
    tape.reset();
    return { name, value, grad, hv, numeric };
  });
}

/** @param {typeof import('../../../dist/index.js')} tapegrad  @param {typeof import('fast-check')} fc */
export function makeSuite(tapegrad, fc) {
  // The vector ops have their own checks below; the sweeps here cover every scalar op.
  const { createTape, SCALAR_OP_TABLE: OP_TABLE, compile, fromBytes } = tapegrad;
  const OP_NAMES = OP_TABLE.map(([name]) => name);

  /** Compiled tapes across environments: loads `bytes` (made in Node) on both backends and
   *  takes gradients at `points`; also compiles the same function here and returns its bytes
   *  for Node to load. The function must match the one the test compiles in Node. */
  async function replayBytes(bytes, points) {
    const loaded = {};
    for (const backend of ['wasm', 'js']) {
      const f = fromBytes(new Uint8Array(bytes), { backend });
      loaded[backend] = points.map((x) => Array.from(f.gradient(x)));
    }
    const here = compile((x) => x[0].mul(x[1]).sin().add(x[0].exp().mul(x[2])).sub(x[2].square().log1p()), { inputs: 3, at: points[0] });
    return { loaded, bytes: Array.from(here.toBytes()) };
  }

  /** Generated replay sweeps on the page's main thread, where Chromium may refuse to compile
   *  wasm over 4 KB synchronously: a loop (Lax-Wendroff-like), straight code and a loss whose
   *  dispatchers walk a table of steps, each compiled with and without codegen; gradients before
   *  and after the generated sweeps are installed. */
  async function generatedSweeps() {
    const cells = 12;
    const loop = (q0) => {
      let q = q0.slice();
      for (let t = 0; t < 200; t++) {
        const flux = q.slice(0, -1).map((a, i) => a.add(q[i + 1]).add(a.sub(q[i + 1]).mul(0.125)).mul(0.0625));
        q = q.map((v, i) => (i === 0 || i === cells - 1 ? v : v.add(flux[i - 1].sub(flux[i]))));
      }
      return q.reduce((s, v) => s.add(v.square()), q[0].mul(0));
    };
    const straight = (x) => {
      let y = x[0];
      let seed = 99;
      for (let k = 0; k < 400; k++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        y = seed >>> 31 ? y.mul(x[1]) : y.add(x[k % cells]).sin();
      }
      return y;
    };
    // A logistic loss with a branch on each label (17 features and a bias, inputs of its own): a
    // step per sample or two in the order of the labels (2,542 over 214 k nodes), more than the
    // 2,048 a dispatcher calls in turn, so its dispatchers walk a table of steps in the tape's
    // memory; fewer than one per 64 nodes (0.76 of that), so it generates at once
    // (codegenDeferral).
    const samples = 4000, d = 17;
    let labelSeed = 7;
    const labels = Array.from({ length: samples }, () => ((labelSeed = (Math.imul(labelSeed, 1103515245) + 12345) >>> 0) >>> 30) & 1);
    const branchy = (w) => {
      let loss = w[0].mul(0);
      for (let i = 0; i < samples; i++) {
        let z = w[d];
        for (let j = 0; j < d; j++) z = z.add(w[j].mul(Math.sin(1.3 * (i * d + j))));
        loss = loss.add(labels[i] === 1 ? z.softplus().sub(z) : z.softplus());
      }
      return loss;
    };
    const branchyAt = Array.from({ length: d + 1 }, (_, i) => (1.5 + 0.5 * Math.sin(i)) / 10);
    const at = Array.from({ length: cells }, (_, i) => 1.5 + 0.5 * Math.sin(i));
    const x = at.map((v, i) => v + 0.01 * i);
    const out = {};
    for (const [name, f, point, near] of [['loop', loop, at, x], ['straight', straight, at, x], ['branchy', branchy, branchyAt, branchyAt.map((v, i) => v + 0.001 * i)]]) {
      const generated = compile(f, { inputs: point.length, at: point });
      const first = generated.generatedSweeps;
      const before = Array.from(generated.gradient(near));
      await generated.whenGenerated();
      out[name] = {
        first, final: generated.generatedSweeps, before, after: Array.from(generated.gradient(near)),
        interpreted: Array.from(compile(f, { inputs: point.length, at: point, codegen: false }).gradient(near)),
        steps: generated.recorded.tape.engine.plan?.order.length ?? 0,
      };
    }
    return out;
  }

  async function workedExamples(backend) {
    const tape = await createTape({ backend });
    const out = { backend: tape.backend };

    out.sigmoid = [0.5, 0].map((x0) => {
      tape.reset();
      const x = tape.variable(x0);
      const s = tape.constant(1).div(x.neg().exp().add(1));
      tape.backward(s);
      return { x: x0, value: s.value, grad: x.grad };
    });

    tape.reset();
    const x1 = tape.variable(2), x2 = tape.variable(5);
    const f = x1.log().add(x1.mul(x2)).sub(x2.sin());
    tape.backward(f);
    out.logMulSin = { value: f.value, grad: [x1.grad, x2.grad], gradient: Array.from(tape.gradient(f, [x1, x2])) };

    tape.reset();
    const x = tape.variable(2);
    const y = x.mul(3).square();
    tape.backward(y);
    const seed1 = x.grad;
    tape.backward(y, 4);
    out.chain = { value: y.value, grad: seed1, gradSeed4: x.grad };

    out.fanOut = [-3, 0, 0.5, 7].map((x0) => {
      tape.reset();
      const v = tape.variable(x0);
      const w = v.mul(v).add(v);
      tape.backward(w);
      return { x: x0, grad: v.grad };
    });

    tape.reset();
    const u = tape.variable(1);
    const z = u.pow(2).mul(3);
    tape.backward(z, -2);
    out.seeded = { value: z.value, grad: u.grad };
    return out;
  }

  // Sample points per domain, kept away from kinks, ties, integers and half-integers so the
  // central differences see a smooth function (floor, sign, ... are then flat: FD gives 0).
  const REAL = [-2.3, -0.7, -0.15, 0.35, 1.3, 3.1];
  const POSITIVE = [0.15, 0.35, 1.3, 3.1, 12];
  const UNIT = [-0.9, -0.35, 0.2, 0.75];
  const ABOVE_ONE = [1.2, 2.5, 9];
  const PAIRS = [[-2.3, 0.35], [-0.7, 1.3], [0.35, -0.15], [1.3, 3.1], [3.1, -2.3], [-0.15, -0.7]];
  const POSITIVE_BASE = [[0.35, 1.3], [1.3, -0.7], [3.1, 0.35], [12, -0.15], [0.15, 2]];
  const UNARY_DOMAIN = {
    sqrt: POSITIVE, log: POSITIVE, log1p: [-0.6, ...POSITIVE], log2: POSITIVE, log10: POSITIVE,
    asin: UNIT, acos: UNIT, atanh: UNIT, acosh: ABOVE_ONE, ndtri: [0.05, 0.35, 0.6, 0.97],
  };
  const points1 = (xs) => xs.map((v) => [v]);

  /** How to record each op on Vars, and where to sample it; null for ops we do not know how to
   *  call (leaves, internal carriers, anything new), which the test then has to account for. */
  function casesFor(name, arity) {
    if (name === 'pow') return [{ label: 'x.pow(y)', build: (t, [x, y]) => x.pow(y), points: POSITIVE_BASE }];
    if (name === 'powConst') {
      // pow with a number exponent is what records powConst.
      return [
        { label: 'x.pow(2.5)', build: (t, [x]) => x.pow(2.5), points: points1(POSITIVE) },
        { label: 'x.pow(3)', build: (t, [x]) => x.pow(3), points: points1(REAL) },
        { label: 'x.pow(-2)', build: (t, [x]) => x.pow(-2), points: points1(REAL) },
      ];
    }
    if (name === 'select') {
      return [
        { label: 'select(c, a, b)', build: (t, [c, a, b]) => t.select(c, a, b), points: [[1.3, 0.35, -2.3], [-0.7, 3.1, 1.3]] },
        // A comparison as the condition reaches the false branch without a discontinuity at c.
        { label: 'select(c < 0.5, a, b)', build: (t, [c, a, b]) => t.select(c.lt(0.5), a, b), points: [[0.1, 0.35, -2.3], [0.9, 0.35, -2.3]] },
      ];
    }
    if (arity === 1 && name !== 'arg') {
      return [{ label: `x.${name}()`, build: (t, [x]) => x[name](), points: points1(UNARY_DOMAIN[name] ?? REAL) }];
    }
    if (arity === 2) {
      return [
        { label: `x.${name}(y)`, build: (t, [x, y]) => x[name](y), points: PAIRS },
        { label: `x.${name}(0.6)`, build: (t, [x]) => x[name](0.6), points: points1(REAL) },
      ];
    }
    return null;
  }

  // Central 6-point stencil, h = cbrt(eps) * max(1, |x|) (as Stan): written here independently
  // of the library's own finiteDifferenceGradient so the two do not vouch for each other.
  const STENCIL = [[1, 3 / 4], [2, -3 / 20], [3, 1 / 60]];
  function centralDifferences(f, x) {
    const p = x.slice();
    return x.map((xk, k) => {
      const h = Math.cbrt(Number.EPSILON) * Math.max(1, Math.abs(xk));
      let sum = 0;
      for (const [j, c] of STENCIL) {
        p[k] = xk + j * h;
        const up = f(p);
        p[k] = xk - j * h;
        sum += c * (up - f(p));
      }
      p[k] = xk;
      return sum / h;
    });
  }

  async function opSweep(backend) {
    const tape = await createTape({ backend });
    const swept = [];
    const unknown = [];
    for (const [name, arity] of OP_TABLE) {
      const cases = casesFor(name, arity);
      if (!cases) {
        unknown.push(name);
        continue;
      }
      const results = [];
      for (const { label, build, points } of cases) {
        // Every evaluation records afresh on the same backend: the differences test this
        // backend's forward rules against its own reverse rules.
        const valueAt = (p) => {
          tape.reset();
          return build(tape, tape.variables(p)).value;
        };
        for (const point of points) {
          tape.reset();
          const xs = tape.variables(point);
          const out = build(tape, xs);
          const analytic = Array.from(tape.gradient(out, xs));
          const value = out.value;
          results.push({ label, point, value, analytic, numeric: centralDifferences(valueAt, point) });
        }
      }
      swept.push({ op: name, results });
    }
    return { backend: tape.backend, opNames: [...OP_NAMES], swept, unknown };
  }

  /** Random DAGs from fast-check (seeded by the test), recorded on both backends; every node's
   *  value and adjoint must agree within `rtol`. Returns fast-check's verdict as plain data.
   *
   *  The backends may differ in the last bit of a transcendental (DESIGN.md §4), and a graph can
   *  amplify that without bound: cosh(log(3.7e-247)) differs by one ulp (1.4e246), and tan of it
   *  then differs in the first digit. So where node k is the first whose values disagree, node k
   *  is replayed alone on a JS tape from the wasm operand values: if that reproduces the wasm
   *  value, the op is exact and the graph merely ill-conditioned (discarded with fc.pre and
   *  counted); if not, it is a real mismatch. Adjoints are compared without that excuse. */
  async function dagParity(seed, numRuns, rtol) {
    const wasm = await createTape({ backend: 'wasm' });
    const js = await createTape({ backend: 'js' });
    const replay = await createTape({ backend: 'js' });
    const unary = OP_TABLE.filter(([n, k]) => k === 1 && n !== 'arg').map(([n]) => n);
    const binary = OP_TABLE.filter(([n, k]) => k === 2 && n !== 'powConst').map(([n]) => n);
    const ops = [...unary, ...binary, 'select'];
    const opCounts = Object.fromEntries(ops.map((n) => [n, 0]));

    const value = fc.double({ min: -4, max: 4, noNaN: true });
    const node = fc.record({
      op: fc.constantFrom(...ops),
      a: fc.nat(), b: fc.nat(), c: fc.nat(),
      // A number as the second operand records a constant (and pow then records powConst).
      constant: fc.option(value, { freq: 3 }),
    });
    const graph = fc.record({
      inputs: fc.array(value, { minLength: 1, maxLength: 4 }),
      nodes: fc.array(node, { minLength: 1, maxLength: 30 }),
      seed: fc.double({ min: -3, max: 3, noNaN: true }),
    });

    // Node k's operands as indices into the graph's nodes (inputs first).
    const operands = (g, k) => {
      const { op, a, b, c, constant } = g.nodes[k];
      const n = g.inputs.length + k;
      if (op === 'select') return [a % n, b % n, c % n];
      if (binary.includes(op)) return constant === null ? [a % n, b % n] : [a % n];
      return [a % n];
    };
    const apply = (tape, g, k, args) => {
      const { op, constant } = g.nodes[k];
      if (op === 'select') return tape.select(args[0], args[1], args[2]);
      if (binary.includes(op)) return args[0][op](constant ?? args[1]);
      return args[0][op]();
    };

    function run(tape, g) {
      tape.reset();
      const vars = tape.variables(g.inputs);
      for (let k = 0; k < g.nodes.length; k++) vars.push(apply(tape, g, k, operands(g, k).map((i) => vars[i])));
      const grads = Array.from(tape.gradient(vars[vars.length - 1], vars, g.seed));
      return { values: vars.map((v) => v.value), grads };
    }

    // Relative agreement, except among subnormals (below 2^-1022 a last-bit difference is a
    // large relative one, so there the absolute difference has to be subnormal too).
    const agree = (x, y) => x === y || (Number.isNaN(x) && Number.isNaN(y)) ||
      (Number.isFinite(x) && Number.isFinite(y) &&
        Math.abs(x - y) <= Math.max(rtol * Math.max(Math.abs(x), Math.abs(y)), 2 ** -1022));
    const where = (g, i) => (i < g.inputs.length ? `input ${i}` : `node ${i} (${g.nodes[i - g.inputs.length].op})`);

    let graphs = 0;
    let illConditioned = 0;
    const details = fc.check(fc.property(graph, (g) => {
      graphs++;
      for (const { op } of g.nodes) opCounts[op]++;
      const w = run(wasm, g), j = run(js, g);
      const i = w.values.findIndex((x, n) => !agree(x, j.values[n]));
      if (i >= 0) {
        const k = i - g.inputs.length;
        replay.reset();
        const alone = apply(replay, g, k, operands(g, k).map((n) => replay.variable(w.values[n]))).value;
        if (!agree(alone, w.values[i])) {
          throw new Error(`values differ at ${where(g, i)}: wasm ${w.values[i]}, js ${j.values[i]} ` +
            `(js from the wasm operands: ${alone})`);
        }
        illConditioned++;
        fc.pre(false);
      }
      const m = w.grads.findIndex((x, n) => !agree(x, j.grads[n]));
      if (m >= 0) throw new Error(`adjoints differ at ${where(g, m)}: wasm ${w.grads[m]}, js ${j.grads[m]}`);
    }), { seed, numRuns });

    return {
      failed: details.failed,
      numRuns: details.numRuns,
      numSkips: details.numSkips,
      seed: details.seed,
      graphs,
      illConditioned,
      opCounts,
      counterexample: details.counterexample ? fc.stringify(details.counterexample) : null,
      error: details.failed ? String(details.errorInstance?.message ?? details.errorInstance) : null,
    };
  }

  async function vectorPrograms(backend) {
    await tapegrad.init();
    return runVectorPrograms(tapegrad, backend);
  }

  return { workedExamples, opSweep, dagParity, replayBytes, generatedSweeps, vectorPrograms };
}
