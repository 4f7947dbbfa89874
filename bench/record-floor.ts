// What recording costs without the API: the mixed Rosenbrock tape of bench/per-node.ts (nine
// nodes a term through the API; the loops below write `one - x` twice, ten) written by one loop through one small function with the façade's checks (a
// handle is a number, an integer, a live node; room left), its state in three places:
//   small  a small object whose arrays V8 may treat as constants
//   tape   the tape's own fields and views (which are replaced whenever memory grows)
//   api    the handle API itself (tape.handles), for comparison
// One process per variant, median of 60 runs after warm-up, ns per node:
//   npx tsx bench/record-floor.ts
import { execFileSync } from 'node:child_process';
import { createTape } from '../src/index.ts';
import { median } from './protocol.ts';
import { rosenbrockMixedHandles } from './workloads.ts';

const TERMS = 125_000;
type Variant = 'small' | 'tape' | 'api';

interface RecordState { count: number; capacity: number; base: number; opV: Uint8Array; aV: Int32Array; bV: Int32Array }

async function child(variant: Variant): Promise<number> {
  const tape = await createTape();
  const internal = tape as unknown as RecordState & { reserveNodes(k: number): void };
  const capacity = 11 * (TERMS + 2);
  internal.reserveNodes(capacity);
  const st: RecordState = variant === 'small'
    ? { count: 0, capacity, base: 1000, opV: internal.opV, aV: internal.aV, bV: internal.bV }
    : internal;
  const record = (op: number, h1: number, h2: number): number => {
    const n = st.count, i = h1 - st.base, j = h2 - st.base;
    if (typeof h1 === 'number' && typeof h2 === 'number' && n < st.capacity && i >>> 0 === i && j >>> 0 === j && i < n && j < n) {
      st.opV[n] = op;
      st.aV[n] = i;
      st.bV[n] = j;
      st.count = n + 1;
      return h1 - i + n;
    }
    throw new Error('off the fast path');
  };
  const xs = new Int32Array(TERMS + 1);
  const x = new Float64Array(TERMS + 1).fill(0.5);
  const run = (): number => {
    tape.reset();
    if (variant === 'api') {
      rosenbrockMixedHandles(tape, x, xs);
      return tape.size;
    }
    st.count = 0;
    for (let i = 0; i < xs.length; i++) {
      const n = st.count;
      st.opV[n] = 4;
      st.aV[n] = st.bV[n] = n;
      st.count = n + 1;
      xs[i] = n + st.base;
    }
    const c100 = record(0, xs[0]!, xs[0]!), one = record(0, xs[1]!, xs[1]!);
    let s = record(0, xs[2]!, xs[2]!);
    for (let i = 0; i + 1 < xs.length; i++) {
      const xi = xs[i]!;
      const t = record(2, xs[i + 1]!, record(7, xi, xi));
      s = record(1, record(1, s, record(3, c100, record(7, t, t))), record(7, record(2, one, xi), record(2, one, xi)));
    }
    return st.count;
  };
  const times: number[] = [];
  let nodes = 0;
  for (let r = 0; r < 80; r++) {
    const t0 = performance.now();
    nodes = run();
    if (r >= 20) times.push(performance.now() - t0);
  }
  return (median(times) * 1e6) / nodes;
}

const childArg = process.argv.find((a) => a.startsWith('--child='));
if (childArg) {
  console.log(String(await child(childArg.slice(8) as Variant)));
} else {
  console.log('| state | ns per node |\n| --- | ---: |');
  for (const variant of ['small', 'tape', 'api'] as const) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/record-floor.ts', `--child=${variant}`], { encoding: 'utf8' });
    console.log(`| ${variant} | ${Number(out.trim().split('\n').pop()).toFixed(2)} |`);
  }
}
