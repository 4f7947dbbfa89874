// The demo page: trains the model of model.js live, on the backend the radio buttons pick, and
// draws the data, the fitted curve and the loss curve on one canvas. `window.demo` lets a test
// (or the console) drive it: demo.run(100) returns the 100 losses; demo.mlp drives the second
// panel (classifier-panel.js) the same way.
import { createTape } from '/dist/index.js';
import { frame, hiDpiContext, lossCurve } from './canvas.js';
import { classifierPanel } from './classifier-panel.js';
import { PARAMS, TRUTH, curve, makeData, makeTrainer } from './model.js';
import { fastestBatch } from './timing.js';

const AUTOPLAY_STEPS = 600; // long enough to watch it converge, then it rests
const data = makeData();
const $ = (id) => document.getElementById(id);

// One tape per backend, created up front so switching is instant. A runtime without
// WebAssembly still gets the JS one.
const tapes = { js: await createTape({ backend: 'js' }) };
try {
  tapes.wasm = await createTape({ backend: 'wasm' });
} catch (e) {
  document.querySelector('input[value=wasm]').disabled = true;
  $('time-wasm').textContent = `unavailable: ${e.message}`;
}
const trainers = Object.fromEntries(Object.entries(tapes).map(([k, tape]) => [k, makeTrainer(tape, data)]));

let backend = tapes.wasm ? 'wasm' : 'js';
let params = { ...trainers[backend].state.params };
let losses = [];
let playing = true;
// Time per step per backend over a moving window: each batch counts 0.9 of the one after it. A
// mean over every step kept the cold first ones in the label (136 µs/step where warm steps took
// 13, a browser probe).
const timing = { wasm: { ms: 0, steps: 0 }, js: { ms: 0, steps: 0 } };
const DECAY = 0.9;

/** The trainer of the active backend, carrying on from the current parameters. Adam's moments
 *  move with the parameters, so a switch mid-run continues the same trajectory. */
function active() {
  return trainers[backend];
}

function setBackend(kind) {
  if (!trainers[kind]) throw new Error(`backend ${kind} is not available here`);
  const from = active().state, to = trainers[kind].state;
  to.params = { ...from.params };
  to.m = [...from.m];
  to.v = [...from.v];
  to.t = from.t;
  backend = kind;
  document.querySelector(`input[value=${kind}]`).checked = true;
}

function steps(n) {
  const trainer = active();
  const out = [];
  const t0 = performance.now();
  for (let i = 0; i < n; i++) out.push(trainer.step());
  const t = timing[backend];
  t.ms = DECAY * t.ms + (performance.now() - t0);
  t.steps = DECAY * t.steps + n;
  params = { ...trainer.state.params };
  losses.push(...out);
  return out;
}

// Times both backends on a throwaway trainer so both labels show a figure from the start.
function calibrate() {
  for (const kind of Object.keys(trainers)) timing[kind] = fastestBatch(makeTrainer(tapes[kind], data), 1, 60, 5);
}

function reset() {
  for (const t of Object.values(trainers)) t.reset();
  params = { ...active().state.params };
  losses = [];
  draw();
}

// ---- drawing ----
const { ctx, W, H } = hiDpiContext($('plot'));

const FIT = { x: 50, y: 14, w: W - 70, h: 320, x0: -3.2, x1: 3.2, y0: -2, y1: 2.6 };
const LOSS = { x: 50, y: 374, w: W - 70, h: 150 };

function plotCurve(p, color, dash = []) {
  const sx = (x) => FIT.x + ((x - FIT.x0) / (FIT.x1 - FIT.x0)) * FIT.w;
  const sy = (y) => FIT.y + (1 - (y - FIT.y0) / (FIT.y1 - FIT.y0)) * FIT.h;
  ctx.save();
  ctx.beginPath();
  ctx.rect(FIT.x, FIT.y, FIT.w, FIT.h);
  ctx.clip();
  ctx.strokeStyle = color;
  ctx.setLineDash(dash);
  ctx.lineWidth = 2.5;
  ctx.beginPath();
  for (let i = 0; i <= 300; i++) {
    const x = FIT.x0 + ((FIT.x1 - FIT.x0) * i) / 300;
    if (i === 0) ctx.moveTo(sx(x), sy(curve(p, x)));
    else ctx.lineTo(sx(x), sy(curve(p, x)));
  }
  ctx.stroke();
  ctx.restore();
  return { sx, sy };
}

function draw() {
  ctx.clearRect(0, 0, W, H);
  frame(ctx, FIT, 'data, truth (dashed) and fit');
  const { sx, sy } = plotCurve(TRUTH, '#b8bfcc', [6, 5]);
  ctx.fillStyle = '#3a62c4';
  for (let i = 0; i < data.xs.length; i++) {
    ctx.beginPath();
    ctx.arc(sx(data.xs[i]), sy(data.ys[i]), 3.5, 0, 2 * Math.PI);
    ctx.fill();
  }
  plotCurve(params, '#d2442e');

  lossCurve(ctx, LOSS, losses);

  for (const kind of Object.keys(trainers)) {
    const t = timing[kind];
    if (t.steps) $(`time-${kind}`).textContent = `${((1000 * t.ms) / t.steps).toFixed(0)} µs/step`;
  }
  const last = losses.length ? losses[losses.length - 1].toPrecision(5) : '–';
  $('readout').textContent = `${backend} · step ${losses.length} · loss ${last} · ` +
    PARAMS.map((k) => `${k} = ${params[k].toFixed(3)}`).join('  ') + ` · ${active().state.nodes} nodes per step`;
}

// ---- the loop and the controls ----
function tick() {
  if (playing) {
    steps(Number($('speed').value));
    draw();
    if (losses.length >= AUTOPLAY_STEPS) pause();
  }
  requestAnimationFrame(tick);
}

function play() {
  if (losses.length >= AUTOPLAY_STEPS) reset();
  playing = true;
  $('play').textContent = 'Pause';
}

function pause() {
  playing = false;
  $('play').textContent = 'Play';
}

for (const input of document.querySelectorAll('input[name=backend]')) {
  input.addEventListener('change', () => setBackend(input.value));
}
$('play').addEventListener('click', () => (playing ? pause() : play()));
$('reset').addEventListener('click', reset);
$('speed').addEventListener('input', () => ($('speed-value').textContent = $('speed').value));

calibrate();
reset();
requestAnimationFrame(tick);
const mlp = await classifierPanel();

window.demo = {
  ready: true,
  /** Runs n steps at once on the active backend, redraws, returns their losses. */
  run(n) {
    const out = steps(n);
    draw();
    return out;
  },
  reset, play, pause, setBackend, mlp,
  state: () => ({ backend, params: { ...params }, steps: losses.length, timing: structuredClone(timing) }),
};
