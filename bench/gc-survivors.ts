// What the Var API's inputs cost in scavenges, without tapegrad: a pure-JS replica of one large
// recording, 112,500 small objects kept for the whole run (the inputs, one per variable) while
// 900,000 short-lived ones are made (one per op), each object shaped like a Var. The kept objects
// are made and held in several ways; every survivor is copied by the scavenges that run while it
// lives, whatever the way. One process per way, median of 60 runs, ms per run:
//   npx tsx bench/gc-survivors.ts
import { execFileSync } from 'node:child_process';
import { median } from './protocol.ts';

const KEPT = 112_500, SHORT_LIVED = 900_000;
const WAYS = ['none', 'array', 'chunks', 'linked', 'proto-literal', 'object-create'] as const;
type Way = (typeof WAYS)[number];

class Node2 {
  constructor(readonly tape: unknown, readonly id: number) {}
}
const TAPE = {};

function kept(way: Way): unknown {
  switch (way) {
    case 'none': return null;
    case 'array': {
      const xs = new Array<Node2>(KEPT);
      for (let i = 0; i < KEPT; i++) xs[i] = new Node2(TAPE, i);
      return xs;
    }
    case 'chunks': {
      const chunks: Node2[][] = [];
      for (let c = 0; c < KEPT; c += 1024) {
        const chunk = new Array<Node2>(Math.min(1024, KEPT - c));
        for (let i = 0; i < chunk.length; i++) chunk[i] = new Node2(TAPE, c + i);
        chunks.push(chunk);
      }
      return chunks;
    }
    case 'linked': {
      let last: unknown = null;
      for (let i = 0; i < KEPT; i++) last = new Node2(last, i);
      return last;
    }
    case 'proto-literal': {
      const xs = new Array<unknown>(KEPT);
      for (let i = 0; i < KEPT; i++) xs[i] = { __proto__: Node2.prototype, tape: TAPE, id: i };
      return xs;
    }
    case 'object-create': {
      const xs = new Array<unknown>(KEPT);
      for (let i = 0; i < KEPT; i++) xs[i] = Object.assign(Object.create(Node2.prototype) as object, { tape: TAPE, id: i });
      return xs;
    }
  }
}

function run(way: Way): number {
  const keep = kept(way);
  let s = new Node2(TAPE, 0), sum = 0;
  for (let i = 0; i < SHORT_LIVED; i++) {
    s = new Node2(TAPE, s.id + 1);
    sum += s.id;
  }
  return sum + (keep === null ? 0 : 1);
}

const childArg = process.argv.find((a) => a.startsWith('--child='));
if (childArg) {
  const way = childArg.slice(8) as Way;
  const times: number[] = [];
  for (let r = 0; r < 80; r++) {
    const t0 = performance.now();
    run(way);
    if (r >= 20) times.push(performance.now() - t0);
  }
  console.log(String(median(times)));
} else {
  console.log(`| kept objects (${KEPT.toLocaleString('en-US')}) | ms per run |\n| --- | ---: |`);
  for (const way of WAYS) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'bench/gc-survivors.ts', `--child=${way}`], { encoding: 'utf8' });
    console.log(`| ${way} | ${Number(out.trim().split('\n').pop()).toFixed(2)} |`);
  }
}
