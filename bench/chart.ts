// The results as an SVG bar chart: one group per workload, one horizontal bar per implementation,
// time per run at the workload's full n on a log axis. Bars of peers run at a smaller n and
// scaled up are drawn hatched and marked "~". tapegrad rows carry their peak RSS and tape bytes
// per node. Also a CLI: tsx bench/chart.ts [results.json] [out.svg]
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildResult } from './protocol.ts';

export interface ChartInput {
  generated: string;
  mode: string;
  commit: string;
  machine: { cpu: string; cores: number; node: string };
  workloads: { id: string; title: string; n?: number; sizeUnit?: string }[];
  implementations: { id: string; label: string; family: string; precision: string }[];
  results: ChildResult[];
}

const COLORS: Record<string, string> = {
  plain: '#9e9e9e',
  hand: '#616161',
  'wasm-var': '#1565c0',
  'wasm-handle': '#42a5f5',
  'js-var': '#2e7d32',
  'js-handle': '#81c784',
  'wasm-vec': '#0d47a1',
  'wasm-vec-replay': '#4fc3f7',
  'js-vec': '#1b5e20',
  'js-vec-replay': '#a5d6a7',
  'wasm-vec-literal': '#283593',
  'js-vec-literal': '#558b2f',
  micrograd: '#ef6c00',
  'tfjs-cpu': '#c62828',
  'tfjs-wasm': '#f06292',
  'jax-eager': '#6a1b9a',
  'jax-jit': '#ba68c8',
};

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

// Three significant digits, without exponent notation (+ drops trailing zeros: "1000 s").
function fmt(ms: number): string {
  if (ms >= 1000) return `${+(ms / 1000).toPrecision(3)} s`;
  if (ms >= 1) return `${+ms.toPrecision(3)} ms`;
  return `${+(ms * 1000).toPrecision(3)} µs`;
}

function fmtRate(perS: number): string {
  return perS >= 1e6 ? `${+(perS / 1e6).toPrecision(3)}M` : perS >= 1e3 ? `${+(perS / 1e3).toPrecision(3)}k` : `${Math.round(perS)}`;
}

export function renderSvg(input: ChartInput): string {
  const labelW = 250, plotW = 560, noteW = 270, barH = 13, gap = 3, headerH = 24, top = 64, bottom = 40;
  const width = labelW + plotW + noteW;

  // Time per run at the workload's full n (capped peers scaled linearly).
  const timeOf = (r: ChildResult): number | null => {
    if (r.status !== 'ok' || r.medianMs === undefined) return null;
    const nominal = r.nominalN ?? r.n;
    return (r.medianMs * nominal) / r.n;
  };
  const all = input.results.map(timeOf).filter((t): t is number => t !== null && t > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...all))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all))));
  const x = (ms: number): number => labelW + (plotW * Math.log10(ms / lo)) / Math.log10(hi / lo);

  const parts: string[] = [];
  let y = top;
  for (const w of input.workloads) {
    const rows = input.results.filter((r) => r.workload === w.id);
    if (!rows.length) continue;
    const size = w.n !== undefined ? `, n = ${w.n.toLocaleString('en-US')} ${w.sizeUnit ?? ''}` : '';
    parts.push(`<text x="8" y="${y + 16}" class="group">${esc(`${w.title}${size}`)}</text>`);
    y += headerH;
    for (const r of rows) {
      const impl = input.implementations.find((i) => i.id === r.impl);
      const label = `${impl?.label ?? r.impl}${impl?.precision === 'f32' ? ' (f32)' : ''}`;
      parts.push(`<text x="${labelW - 6}" y="${y + barH - 3}" class="label" text-anchor="end">${esc(label)}</text>`);
      const t = timeOf(r);
      if (t === null) {
        const why = `${r.status}${r.reason ? `: ${r.reason}` : ''}`;
        parts.push(`<text x="${labelW + 4}" y="${y + barH - 3}" class="na">${esc(why.length > 110 ? `${why.slice(0, 107)}...` : why)}</text>`);
      } else {
        const scaled = (r.nominalN ?? r.n) !== r.n;
        const color = COLORS[r.impl] ?? '#777';
        const x1 = x(t);
        parts.push(
          `<rect x="${labelW}" y="${y}" width="${Math.max(1, x1 - labelW).toFixed(1)}" height="${barH}" fill="${scaled ? `url(#hatch-${r.impl})` : color}" stroke="${color}" stroke-width="${scaled ? 1 : 0}"/>`,
        );
        parts.push(`<text x="${(x1 + 4).toFixed(1)}" y="${y + barH - 3}" class="value">${scaled ? '~' : ''}${esc(fmt(t))}</text>`);
        const info = r.info ?? {};
        const notes: string[] = [];
        if (scaled) notes.push(`ran n=${r.n}`);
        if (typeof info.nodeBytes === 'number') notes.push(`${info.nodeBytes} B/node`);
        if (r.peakRssBytes !== undefined && (typeof info.nodeBytes === 'number' || scaled)) notes.push(`RSS ${Math.round(r.peakRssBytes / 2 ** 20)} MB`);
        if (r.gradientsPerSecond !== undefined) notes.unshift(`${fmtRate(r.gradientsPerSecond)} grad/s`);
        if (notes.length) parts.push(`<text x="${labelW + plotW + 70}" y="${y + barH - 3}" class="note">${esc(notes.join(', '))}</text>`);
      }
      y += barH + gap;
    }
    y += 6;
  }
  const height = y + bottom;

  // Decade grid lines and labels.
  const grid: string[] = [];
  for (let d = lo; d <= hi * 1.0001; d *= 10) {
    const gx = x(d).toFixed(1);
    grid.push(`<line x1="${gx}" y1="${top - 6}" x2="${gx}" y2="${y}" class="grid"/>`);
    grid.push(`<text x="${gx}" y="${top - 10}" class="axis" text-anchor="middle">${esc(fmt(d))}</text>`);
    grid.push(`<text x="${gx}" y="${y + 14}" class="axis" text-anchor="middle">${esc(fmt(d))}</text>`);
  }
  const hatches = Object.entries(COLORS).map(
    ([id, c]) =>
      `<pattern id="hatch-${id}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="${c}" fill-opacity="0.25"/><line x1="0" y1="0" x2="0" y2="6" stroke="${c}" stroke-width="3"/></pattern>`,
  );
  const title = `tapegrad benchmarks (${input.mode}): time per run at the workload's n, log scale, shorter is better`;
  const sub = `${input.machine.cpu}, ${input.machine.cores} cores, node ${input.machine.node}, commit ${input.commit}, ${input.generated.slice(0, 16).replace('T', ' ')} UTC. Hatched "~": peer run at a smaller n, scaled linearly.`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
    `<defs>${hatches.join('')}</defs>`,
    '<style>.group{font-size:13px;font-weight:bold}.label{font-size:11px}.value{font-size:10px}.note{font-size:10px;fill:#555}.na{font-size:10px;fill:#999;font-style:italic}.axis{font-size:10px;fill:#555}.grid{stroke:#ddd;stroke-width:1}.title{font-size:14px;font-weight:bold}.sub{font-size:10px;fill:#555}</style>',
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="8" y="18" class="title">${esc(title)}</text>`,
    `<text x="8" y="34" class="sub">${esc(sub)}</text>`,
    ...grid,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

function cli(): void {
  const here = dirname(fileURLToPath(import.meta.url));
  const input = process.argv[2] ?? join(here, 'results', 'latest.json');
  const output = process.argv[3] ?? input.replace(/\.json$/, '.svg');
  writeFileSync(output, renderSvg(JSON.parse(readFileSync(input, 'utf8')) as ChartInput));
  console.log(`wrote ${output}`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) cli();
