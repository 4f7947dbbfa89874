// The second panel of the demo page: trains the classifier of classifier.js live on the backend
// its radio buttons pick, and draws the decision boundary (P(+1) on a GRID×GRID grid, one forward
// pass per frame), the points and the loss curve. demo.js hangs the returned controls on
// `window.demo.mlp`: mlp.run(100) returns the 100 losses.
import { createTape } from '/dist/index.js';
import { frame, hiDpiContext, lossCurve } from './canvas.js';
import { VIEW, makeClassifier, makePoints } from './classifier.js';
import { fastestBatch } from './timing.js';

const AUTOPLAY_STEPS = 1500; // after this many steps on its own it rests; Start runs until Stop
const GRID = 60;
const $ = (id) => document.getElementById(id);

export async function classifierPanel() {
  const tapes = { js: await createTape({ backend: 'js' }) };
  try {
    tapes.wasm = await createTape({ backend: 'wasm' });
  } catch (e) {
    document.querySelector('input[name=mlp-backend][value=wasm]').disabled = true;
    $('mlp-time-wasm').textContent = `unavailable: ${e.message}`;
  }
  let backend = tapes.wasm ? 'wasm' : 'js';
  let data, trainers;
  let losses = [];
  let playing = true, budget = AUTOPLAY_STEPS;
  const timing = { wasm: { ms: 0, steps: 0 }, js: { ms: 0, steps: 0 } };

  /** New data from the dataset picker, and fresh trainers on it (one per backend). */
  function load() {
    data = makePoints($('mlp-data').value);
    trainers = Object.fromEntries(Object.entries(tapes).map(([k, tape]) => [k, makeClassifier(tape, data)]));
    losses = [];
  }

  /** Switching carries the weights and Adam's moments over, so training continues where it was. */
  function setBackend(kind) {
    if (!trainers[kind]) throw new Error(`backend ${kind} is not available here`);
    const from = trainers[backend].state, to = trainers[kind].state;
    to.theta = from.theta.slice();
    to.m = from.m.slice();
    to.v = from.v.slice();
    to.t = from.t;
    backend = kind;
    document.querySelector(`input[name=mlp-backend][value=${kind}]`).checked = true;
  }

  function steps(n) {
    const trainer = trainers[backend];
    const out = [];
    const t0 = performance.now();
    for (let i = 0; i < n; i++) out.push(trainer.step());
    // A moving window, as the curve panel's (demo.js): the cold first steps fade from the label.
    const t = timing[backend];
    t.ms = 0.9 * t.ms + (performance.now() - t0);
    t.steps = 0.9 * t.steps + n;
    losses.push(...out);
    return out;
  }

  /** Times both backends on throwaway trainers so both labels show a figure from the start. */
  function calibrate() {
    for (const kind of Object.keys(tapes)) timing[kind] = fastestBatch(makeClassifier(tapes[kind], data), 10, 20, 4);
  }

  function reset() {
    for (const t of Object.values(trainers)) t.reset();
    losses = [];
    draw();
  }

  // ---- drawing ----
  const { ctx, W, H } = hiDpiContext($('mlp-plot'));

  const FIELD = { x: 14, y: 14, w: 400, h: 400 };
  const LOSS = { x: 440, y: 14, w: W - 454, h: 400 };
  const COLORS = { [-1]: [58, 98, 196], [1]: [210, 68, 46] }; // class −1 blue, +1 red
  // The grid is painted into a GRID×GRID image and scaled up smoothly onto the field.
  const cells = new OffscreenCanvas(GRID, GRID);
  const image = new ImageData(GRID, GRID);

  function drawField() {
    // Light tints, white along the boundary p = 1/2.
    const p = trainers[backend].grid(GRID);
    for (let k = 0; k < p.length; k++) {
      const c = COLORS[p[k] > 0.5 ? 1 : -1], strength = 0.55 * Math.abs(2 * p[k] - 1);
      for (let j = 0; j < 3; j++) image.data[4 * k + j] = 255 + strength * (c[j] - 255);
      image.data[4 * k + 3] = 255;
    }
    cells.getContext('2d').putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(cells, FIELD.x, FIELD.y, FIELD.w, FIELD.h);
    const sx = (x) => FIELD.x + ((x + VIEW) / (2 * VIEW)) * FIELD.w;
    const sy = (y) => FIELD.y + ((VIEW - y) / (2 * VIEW)) * FIELD.h;
    ctx.strokeStyle = '#fff';
    ctx.lineWidth = 1;
    for (let i = 0; i < data.n; i++) {
      ctx.fillStyle = `rgb(${COLORS[data.labels[i]]})`;
      ctx.beginPath();
      ctx.arc(sx(data.xy[2 * i]), sy(data.xy[2 * i + 1]), 3.5, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    frame(ctx, FIELD, 'data and P(red) of the network');
  }

  function drawLoss() {
    lossCurve(ctx, LOSS, losses);
  }

  function draw() {
    ctx.clearRect(0, 0, W, H);
    drawField();
    drawLoss();
    for (const kind of Object.keys(tapes)) {
      const t = timing[kind];
      if (t.steps) $(`mlp-time-${kind}`).textContent = `${((1000 * t.ms) / t.steps).toFixed(0)} µs/step`;
    }
    const trainer = trainers[backend];
    const last = losses.length ? losses[losses.length - 1].toPrecision(4) : '–';
    $('mlp-readout').textContent = `${backend} · ${data.kind} · step ${losses.length} · loss ${last} · ` +
      `accuracy ${(100 * trainer.accuracy()).toFixed(1)}% · ${trainer.net.size} weights, ${trainer.state.nodes} nodes per step`;
  }

  // ---- the loop and the controls ----
  function tick() {
    if (playing) {
      steps(Number($('mlp-speed').value));
      draw();
      if (losses.length >= budget) stop();
    }
    requestAnimationFrame(tick);
  }

  function start() {
    budget = Infinity;
    playing = true;
    $('mlp-play').textContent = 'Stop';
  }

  function stop() {
    playing = false;
    $('mlp-play').textContent = 'Start';
  }

  function setDataset(kind) {
    $('mlp-data').value = kind;
    load();
    draw();
  }

  for (const input of document.querySelectorAll('input[name=mlp-backend]')) {
    input.addEventListener('change', () => setBackend(input.value));
  }
  $('mlp-play').addEventListener('click', () => (playing ? stop() : start()));
  $('mlp-reset').addEventListener('click', reset);
  $('mlp-data').addEventListener('change', () => setDataset($('mlp-data').value));
  $('mlp-speed').addEventListener('input', () => ($('mlp-speed-value').textContent = $('mlp-speed').value));

  load();
  calibrate();
  draw();
  requestAnimationFrame(tick);

  return {
    /** Runs n steps at once on the active backend, redraws, returns their losses. */
    run(n) {
      const out = steps(n);
      draw();
      return out;
    },
    reset, start, stop, setBackend, setDataset,
    state: () => ({
      backend, dataset: data.kind, steps: losses.length, accuracy: trainers[backend].accuracy(),
      timing: structuredClone(timing),
    }),
  };
}
