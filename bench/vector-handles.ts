// Recording vector ops through `tape.handles.vec` against the same ops through Vecs: a chain of
// `sin` and `mul` by a scalar on a vector of 4 elements (the cost of the record itself, not of the
// elements' arithmetic), 10^5 steps. In each process the two APIs alternate on one tape; a
// process per engine, three passes, ns per op, the median process:
//   npx tsx bench/vector-handles.ts
import { createTape, type BackendKind } from '../src/index.ts';
import { childOrParent, median, measuredOn, medianProcess } from './protocol.ts';

const STEPS = 100_000;
const RUNS = 15;
const PROCESSES = 3;

interface Measured { handles: number; vecs: number }

async function child(backend: BackendKind): Promise<Measured> {
  const tape = await createTape({ backend });
  const h = tape.handles, vh = h.vec;
  const viaHandles = (): void => {
    let v = vh.variable([1, 2, 3, 4]);
    const s = h.variable(0.5);
    for (let k = 0; k < STEPS; k++) v = vh.mul(vh.sin(v), s);
  };
  const viaVecs = (): void => {
    let v = tape.vector([1, 2, 3, 4]);
    const s = tape.variable(0.5);
    for (let k = 0; k < STEPS; k++) v = v.sin().mul(s);
  };
  const times: Measured[] = [];
  const time = (record: () => void): number => {
    tape.reset();
    const t0 = performance.now();
    record();
    return ((performance.now() - t0) * 1e6) / (2 * STEPS);
  };
  for (let r = 0; r < RUNS + 3; r++) times.push({ handles: time(viaHandles), vecs: time(viaVecs) });
  const kept = times.slice(3);
  return { handles: median(kept.map((m) => m.handles)), vecs: median(kept.map((m) => m.vecs)) };
}

async function parent(): Promise<void> {
  console.log(`Measured ${measuredOn()} (\`npx tsx bench/vector-handles.ts\`; ns per op, ${STEPS.toLocaleString('en-US')} steps of sin and mul by a scalar on 4 elements, median of ${RUNS} runs, the median of ${PROCESSES} processes).\n`);
  console.log('| engine | tape.handles.vec | Vec methods |\n| --- | ---: | ---: |');
  for (const backend of ['wasm', 'js'] as const) {
    const m = medianProcess<Measured>('bench/vector-handles.ts', backend, PROCESSES, (r) => r.handles);
    console.log(`| ${backend} | ${m.handles.toFixed(1)} | ${m.vecs.toFixed(1)} |`);
  }
}

await childOrParent((backend) => child(backend as BackendKind), parent);
