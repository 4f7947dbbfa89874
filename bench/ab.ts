// Before and after in one process: an earlier build (a git revision, checked out and its core built
// in a worktree) and this one, each imported as a module of its own, timed in alternation, so that
// a slow spell of the machine (single processes of one build moved by up to 2x from hour to hour
// on the bench VM) falls on both alike. Each build times its own copy of a case's function (made
// from its source text), so V8's type feedback is not shared between them.
//   npx tsx bench/ab.ts --base=<rev>                       # every case, 3 processes each
//   npx tsx bench/ab.ts --base=<rev> --case=chain-reverse --processes=5
// The worktree goes to $TMPDIR/tapegrad-ab-<rev>; node_modules is linked from this checkout.
import { execFileSync } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './protocol.ts';
import { STRAIGHT_INPUTS, logregData, straightTape } from './workloads.ts';

type Api = typeof import('../src/index.ts');
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const arg = (name: string): string | undefined => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

// A case: what one timed call does with a build (`setup` once per build, then `run`), the unit
// its time is divided by, and how many calls are timed. `run` is copied through its source text,
// so it reads nothing but its arguments and holds no named inner function (esbuild's name helper
// would be undefined there).
interface Case {
  what: string;
  unit: string;
  calls: number;
  setup: (api: Api, data: Data) => Promise<unknown>;
  run: (state: unknown, data: Data) => number;
}
interface Data { X: Float64Array; y: Float64Array; p: Float64Array; x: Float64Array; steps: number; backend: 'wasm' | 'js' }

// bench/codegen-cliffs.ts's non-periodic tape of 10^5 ops, every node live, compiled (scheduled
// replay): a gradient per timed call, or only its value (the forward).
function straightLive(valueOnly: boolean): Case {
  return {
    what: `bench/codegen-cliffs.ts's non-periodic tape of 10^5 ops, every node live, compiled (scheduled replay), ${valueOnly ? 'its value (the forward)' : 'a gradient'}`,
    unit: 'ns/node', calls: 300,
    setup: async (api) => ({ f: api.compile(straightTape(100_000, true) as never, { inputs: STRAIGHT_INPUTS }), valueOnly }),
    run: (state, { x }) => {
      const { f, valueOnly: value } = state as { f: ReturnType<Api['compile']>; valueOnly: boolean };
      if (value) f.value(x.subarray(0, 32));
      else f.gradient(x.subarray(0, 32));
      return f.size;
    },
  };
}

const CHAIN = (api: Api, steps: number, options: object) => api.compile((v) => {
  let x = v[0]!;
  for (let k = 0; k < steps; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(1e-5));
  return x;
}, { inputs: 1, ...options });

// A Rosenbrock of mixed scalar ops (1.25·10^5 terms) compiled without codegen.
const MIXED = (api: Api) => api.compile((v) => {
  let s = v[0]!.mul(0);
  for (let i = 0; i + 1 < v.length; i++) {
    const t = v[i + 1]!.sub(v[i]!.square());
    s = s.add(t.square().mul(100)).add(v[i]!.sub(1).neg().square());
  }
  return s;
}, { inputs: 125_001, codegen: false });

// bench/vector-costs.ts's compiled vector Rosenbrock of 10^5 elements.
function vectorRosenbrock(what: string, run: Case['run']): Case {
  return {
    what: `a compiled vector Rosenbrock of 10^5 elements, ${what}`, unit: 'ns/call', calls: 300,
    setup: async (api, { backend }) => api.compile(((x: InstanceType<Api['Vec']>) => {
      const p = x.slice(0, 99_999), q = x.slice(1);
      return q.sub(p.square()).square().mul(100).add(p.neg().add(1).square()).sum();
    }) as never, { inputs: 100_000, vector: true, backend }),
    run,
  };
}

// A chain through the ops whose generated second-order terms test their tangents (div, sqrt,
// recip: past a finite tangent they call the core's rule), 10^5 steps compiled with `options`.
const ROOTS = (api: Api, steps: number, options: object) => api.compile((v) => {
  let x = v[0]!;
  for (let k = 0; k < steps; k++) x = x.square().add(1).sqrt().div(x.square().add(2)).add(x.mul(0.5)).recip();
  return x;
}, { inputs: 1, ...options });

// A 20-node function of three inputs, compiled on `backend`.
const TINY = (api: Api, backend: Data['backend']) => api.compile((v) => {
  const [a, b, c] = v as [InstanceType<Api['Var']>, InstanceType<Api['Var']>, InstanceType<Api['Var']>];
  const y = a.mul(b).add(c.sin()).mul(a.exp()).sub(b.square().mul(0.5));
  return y.add(a.mul(c).tanh()).mul(y.sigmoid()).add(b.log1p().mul(c)).sub(a.sqrt().mul(b)).add(c.cos().square());
}, { inputs: 3, backend });

// A directional batch of the tiny function, 10,000 rows, each with a direction or cotangent of
// `width` entries (its 3 inputs, its 1 output). `run` reads the method from the state, as it is
// copied through its source text.
function tinyBatch(method: 'jvpBatch' | 'hvpBatch' | 'vjpBatch', width: number): Case {
  return {
    what: `the same function compiled, ${method} of 10,000 rows`, unit: 'ns/row', calls: 200,
    setup: async (api, { backend }) => ({ f: TINY(api, backend), method, width }),
    run: (state, { x }) => {
      const { f, method, width } = state as { f: Record<string, (...args: unknown[]) => unknown>; method: string; width: number };
      f[method]!.call(f, x.subarray(0, 30_000), 10_000, x.subarray(30_000, 30_000 + 10_000 * width), new Float64Array(method === 'jvpBatch' ? 10_000 : 30_000));
      return 10_000;
    },
  };
}

// The chain of 10^5 steps compiled with `options`, 40 timed calls of `run`.
function compiledChain(what: string, options: object, run: Case['run']): Case {
  return { what: `the transcendental chain (10^5 steps) compiled, ${what}`, unit: 'ns/step', calls: 40, setup: async (api) => CHAIN(api, 100_000, options), run };
}

const CASES: Record<string, Case> = {
  'logreg-record': {
    what: "the bench's logistic regression (2,000 × 20) recorded through Vars", unit: 'ns/node', calls: 120,
    setup: (api) => api.createTape(),
    run: (tape, { X, y, p }) => {
      const t = tape as InstanceType<Api['Tape']>;
      t.reset();
      const ps = t.variables(p);
      const d = p.length - 1;
      let s = null as null | InstanceType<Api['Var']>;
      for (let i = 0; i < y.length; i++) {
        let z = ps[d]!;
        for (let j = 0; j < d; j++) z = z.add(ps[j]!.mul(X[i * d + j]!));
        const term = z.softplus().sub(z.mul(y[i]!));
        s = s ? s.add(term) : term;
      }
      s!.div(y.length);
      return t.size;
    },
  },
  'chain-record': {
    what: 'the transcendental chain (3·10^4 steps) recorded through Vars (tape.reset, then the loop)', unit: 'ns/node', calls: 200,
    setup: async (api, { backend }) => api.createTape({ backend }),
    run: (tape) => {
      const t = tape as InstanceType<Api['Tape']>;
      t.reset();
      let x = t.variable(0.3);
      for (let k = 0; k < 30_000; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(1e-5));
      return t.size;
    },
  },
  'mixed-record-handles': {
    what: "per-node.ts's mixed Rosenbrock (1.25·10^4 terms) recorded through handles", unit: 'ns/node', calls: 400,
    setup: async (api, { backend }) => ({ tape: await api.createTape({ backend }), xs: new Int32Array(12_501) }),
    run: (state, { x }) => {
      const { tape, xs } = state as { tape: InstanceType<Api['Tape']>; xs: Int32Array };
      tape.reset();
      const h = tape.handles, v = x.subarray(0, 12_501);
      h.variables(v, xs);
      const c100 = h.constant(100), one = h.constant(1);
      let s = h.constant(0);
      for (let i = 0; i + 1 < v.length; i++) {
        const xi = xs[i]!;
        const t = h.sub(xs[i + 1]!, h.square(xi));
        s = h.add(h.add(s, h.mul(c100, h.square(t))), h.square(h.sub(one, xi)));
      }
      return tape.size;
    },
  },
  'chain-reverse': {
    what: 'the transcendental chain (10^5 steps) recorded once, its reverse sweep (tape.backward)', unit: 'ns/step', calls: 200,
    setup: async (api, { backend }) => {
      const tape = await api.createTape({ backend });
      const x0 = tape.variable(0.3);
      let x = x0;
      for (let k = 0; k < 100_000; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(1e-5));
      return { tape, x };
    },
    run: (state) => {
      const { tape, x } = state as { tape: InstanceType<Api['Tape']>; x: InstanceType<Api['Var']> };
      tape.backward(x);
      return 100_000;
    },
  },
  'mixed-sweeps': {
    what: 'a Rosenbrock of mixed scalar ops (1.25·10^5 terms) compiled without codegen, a gradient (the interpreter\'s forward and reverse sweeps)',
    unit: 'ns/node', calls: 200,
    setup: async (api) => MIXED(api),
    run: (f, { x }) => {
      const g = f as ReturnType<Api['compile']>;
      g.gradient(x);
      return g.size;
    },
  },
  'mixed-forward': {
    what: 'the same mixed Rosenbrock compiled without codegen, its value (the interpreter\'s forward sweep: a serial sum through add)',
    unit: 'ns/node', calls: 200,
    setup: async (api) => MIXED(api),
    run: (f, { x }) => {
      const g = f as ReturnType<Api['compile']>;
      g.value(x);
      return g.size;
    },
  },
  'chain-replay': {
    what: 'the transcendental chain (3·10^5 steps) compiled, a gradient (generated sweeps)', unit: 'ns/step', calls: 60,
    setup: async (api, { steps }) => CHAIN(api, steps, {}),
    run: (f, { steps }) => {
      (f as ReturnType<typeof CHAIN>).gradient([0.3]);
      return steps;
    },
  },
  'vjp-many-outputs': {
    what: 'the vjp transform of a function of 1,000 inputs and 1,000 scalar outputs (4,000 nodes)', unit: 'µs/call', calls: 200,
    setup: async (api) => api,
    run: (api, { x }) => {
      const n = 1000, xs = Array.from(x.subarray(0, n));
      (api as Api).vjp((v: InstanceType<Api['Var']>[]) => v.map((xi, i) => xi.sin().mul(v[(i + 1) % n]!).add(v[(i + n - 1) % n]!.exp())), xs, new Float64Array(n).fill(1));
      return 1000;
    },
  },
  'guard-churn': {
    what: 'a compiled function of 1,000 guards (x.gt(0).value branches), called at points whose signs differ each call (it records again each call)', unit: 'µs/call', calls: 200,
    setup: async (api) => {
      const n = 1000;
      let seed = 1;
      const rnd = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5;
      const points = Array.from({ length: 64 }, () => Float64Array.from({ length: n }, rnd));
      const f = api.compile((x) => {
        let s = x[0]!.mul(0);
        for (let i = 0; i < n; i++) s = s.add(x[i]!.gt(0).value ? x[i]!.square() : x[i]!.neg().exp());
        return s;
      }, { inputs: n });
      return { f, points, k: 0 };
    },
    run: (state) => {
      const st = state as { f: ReturnType<Api['compile']>; points: Float64Array[]; k: number };
      st.f.gradient(st.points[st.k++ % st.points.length]!);
      return 1000;
    },
  },
  'tiny-gradient': {
    what: 'a 20-node function recorded through Vars and differentiated (tape.gradient), 1,000 times a call', unit: 'ns/gradient', calls: 400,
    setup: (api, { backend }) => api.createTape({ backend }),
    run: (tape, { p }) => {
      const t = tape as InstanceType<Api['Tape']>;
      for (let r = 0; r < 1000; r++) {
        t.reset();
        const [a, b, c] = t.variables(p.subarray(0, 3)) as [InstanceType<Api['Var']>, InstanceType<Api['Var']>, InstanceType<Api['Var']>];
        let y = a.mul(b).add(c.sin()).mul(a.exp()).sub(b.square().mul(0.5));
        y = y.add(a.mul(c).tanh()).mul(y.sigmoid()).add(b.log1p().mul(c)).sub(a.sqrt().mul(b)).add(c.cos().square());
        t.gradient(y, [a, b, c]);
      }
      return 1000;
    },
  },
  'tiny-compiled': {
    what: 'the same function compiled, gradient(x, out), 10,000 times a call', unit: 'ns/gradient', calls: 400,
    setup: async (api, { backend }) => TINY(api, backend),
    run: (f, { p }) => {
      const g = f as ReturnType<Api['compile']>;
      const x = p.subarray(0, 3), out = new Float64Array(3);
      for (let r = 0; r < 10_000; r++) g.gradient(x, out);
      return 10_000;
    },
  },
  'tiny-jvp-batch': tinyBatch('jvpBatch', 3),
  'tiny-hvp-batch': tinyBatch('hvpBatch', 3),
  'tiny-vjp-batch': tinyBatch('vjpBatch', 1),
  'vector-gradient': vectorRosenbrock('a gradient', (f, { x }) => {
    (f as ReturnType<Api['compile']>).gradient(x.subarray(0, 100_000));
    return 1;
  }),
  'vector-jvp': vectorRosenbrock('a jvp', (f, { x }) => {
    (f as ReturnType<Api['compile']>).jvp(x.subarray(0, 100_000), x.subarray(25_000, 125_000));
    return 1;
  }),
  'vector-hvp': vectorRosenbrock('an hvp', (f, { x }) => {
    (f as ReturnType<Api['compile']>).hvp(x.subarray(0, 100_000), x.subarray(25_000, 125_000));
    return 1;
  }),
  'chain-forward': compiledChain('without codegen, its value (the interpreter\'s forward sweep)', { codegen: false }, (f) => {
    (f as ReturnType<typeof CHAIN>).value([0.3]);
    return 100_000;
  }),
  'chain-gradient-interpreted': compiledChain('without codegen, a gradient (the interpreter\'s forward and reverse sweeps)', { codegen: false }, (f) => {
    (f as ReturnType<typeof CHAIN>).gradient([0.3]);
    return 100_000;
  }),
  'straight-live': straightLive(false),
  'straight-live-value': straightLive(true),
  'chain-gradient-js': {
    what: 'the transcendental chain (10^5 steps) compiled on --backend (js: the JS engine\'s forward and reverse sweeps), a gradient', unit: 'ns/step', calls: 40,
    setup: async (api, { backend }) => CHAIN(api, 100_000, { backend, codegen: false }),
    run: (f) => {
      (f as ReturnType<typeof CHAIN>).gradient([0.3]);
      return 100_000;
    },
  },
  'chain-jvp-js': {
    what: 'the transcendental chain (10^5 steps) compiled on --backend (js: the JS engine\'s forward and tangent sweeps), a jvp', unit: 'ns/step', calls: 40,
    setup: async (api, { backend }) => CHAIN(api, 100_000, { backend, codegen: false }),
    run: (f) => {
      (f as ReturnType<typeof CHAIN>).jvp([0.3], [1]);
      return 100_000;
    },
  },
  'chain-jvp': compiledChain('without codegen, a jvp', { codegen: false }, (f) => {
    (f as ReturnType<typeof CHAIN>).jvp([0.3], [1]);
    return 100_000;
  }),
  'chain-hvp': compiledChain('an hvp (generated sweeps)', {}, (f) => {
    (f as ReturnType<typeof CHAIN>).hvp([0.3], [1]);
    return 100_000;
  }),
  'roots-hvp': {
    what: 'a chain of square, sqrt, div and recip (10^5 steps) compiled, an hvp (generated sweeps)', unit: 'ns/step', calls: 40,
    setup: async (api) => ROOTS(api, 100_000, {}),
    run: (f) => {
      (f as ReturnType<typeof ROOTS>).hvp([0.3], [1]);
      return 100_000;
    },
  },
  'chain-hvp-interpreted': compiledChain('without codegen, an hvp', { codegen: false }, (f) => {
    (f as ReturnType<typeof CHAIN>).hvp([0.3], [1]);
    return 100_000;
  }),
};

// A fresh function from the same source: its own feedback, its own optimised code.
const copy = <F>(f: F): F => new Function(`return (${String(f)})`)() as F;

async function child(caseName: string, baseDir: string): Promise<void> {
  const c = CASES[caseName]!;
  const [base, ours] = await Promise.all([
    import(pathToFileURL(join(baseDir, 'src/index.ts')).href) as Promise<Api>,
    import('../src/index.ts'),
  ]);
  await base.init();
  await ours.init();
  const { X, y, p } = logregData(2000);
  const x = Float64Array.from({ length: 125_001 }, (_, i) => 0.5 + 0.4 * Math.sin(0.37 * i + 0.1));
  const data: Data = { X, y, p, x, steps: 300_000, backend: (arg('backend') ?? 'wasm') as Data['backend'] };
  const builds = await Promise.all([base, ours].map(async (api) => ({ state: await c.setup(api, data), run: copy(c.run), times: [] as number[] })));
  for (let r = 0; r < c.calls; r++) {
    // Alternating which goes first.
    for (const b of r & 1 ? builds : [...builds].reverse()) {
      const t = performance.now();
      const units = b.run(b.state, data);
      const ms = performance.now() - t;
      if (r >= c.calls / 5) b.times.push((ms * 1e6) / units);
    }
  }
  console.log(JSON.stringify(builds.map((b) => median(b.times))));
}

function worktree(rev: string): string {
  const sha = execFileSync('git', ['rev-parse', '--short', rev], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `tapegrad-ab-${sha}`);
  if (!existsSync(join(dir, 'src/wasm/core.generated.ts'))) {
    if (!existsSync(dir)) execFileSync('git', ['worktree', 'add', '--detach', dir, sha], { cwd: ROOT, stdio: 'inherit' });
    if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    execFileSync('npm', ['run', 'build:wasm'], { cwd: dir, stdio: 'inherit' });
    execFileSync('npm', ['run', 'build:embed'], { cwd: dir, stdio: 'inherit' });
  }
  return dir;
}

async function main(): Promise<void> {
  const only = arg('case');
  if (process.argv.includes('--child')) return child(only!, arg('base-dir')!);
  const rev = arg('base');
  if (!rev) throw new Error('--base=<git revision> is required');
  const dir = worktree(rev);
  const processes = Number(arg('processes') ?? 3);
  const backend = arg('backend');
  for (const name of only ? [only] : Object.keys(CASES)) {
    if (!CASES[name]) throw new Error(`no case ${name}; cases: ${Object.keys(CASES).join(', ')}`);
    const pairs: number[][] = [];
    for (let k = 0; k < processes; k++) {
      const out = execFileSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', `--case=${name}`, `--base-dir=${dir}`,
        ...(backend ? [`--backend=${backend}`] : [])], { cwd: ROOT, encoding: 'utf8' });
      pairs.push(JSON.parse(out.trim().split('\n').pop()!) as number[]);
    }
    const f = (xs: number[]): string => xs.map((v) => v.toFixed(1)).join(', ');
    console.log(`${name}${backend ? ` (${backend})` : ''}: ${CASES[name]!.what}; ${CASES[name]!.unit}, one process each: ${rev} ${f(pairs.map((q) => q[0]!))} | this build ${f(pairs.map((q) => q[1]!))}`);
  }
}

await main();
