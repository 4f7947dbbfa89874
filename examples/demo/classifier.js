// The classifier of the second panel, free of any DOM so it runs the same in the page and in
// Node: a seeded 2-D dataset (two moons or two spirals) and a 2-16-16-1 tanh MLP trained by Adam
// with vector ops. Every step records the whole batch as about twenty array ops (matmul,
// broadcast bias, tanh, softplus), runs one reverse sweep and reads one flat gradient.
import { mulberry32 } from './model.js';

/** The square of the plane the panel shows, [-VIEW, VIEW]²; every point lies inside it. */
export const VIEW = 2.25;

/** n points with labels ±1, half of each class, in the order drawn (seeded: same every load). */
export function makePoints(kind = 'moons', n = 200, seed = 11) {
  const rand = mulberry32(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const xy = new Float64Array(2 * n), labels = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const label = i % 2 ? 1 : -1;
    let x, y;
    if (kind === 'moons') {
      const t = Math.PI * rand();
      // The standard two moons, centred on 0 and scaled to the view.
      [x, y] = label > 0 ? [Math.cos(t) - 0.5, Math.sin(t) - 0.25] : [0.5 - Math.cos(t), 0.25 - Math.sin(t)];
      [x, y] = [1.2 * x + 0.1 * gauss(), 1.2 * y + 0.1 * gauss()];
    } else if (kind === 'spirals') {
      const r = 0.2 + 1.6 * rand(), t = 4 * r + (label > 0 ? 0 : Math.PI);
      [x, y] = [r * Math.cos(t) + 0.05 * gauss(), r * Math.sin(t) + 0.05 * gauss()];
    } else {
      throw new Error(`unknown dataset ${kind}`);
    }
    xy[2 * i] = x;
    xy[2 * i + 1] = y;
    labels[i] = label;
  }
  return { kind, xy, labels, n };
}

/** The parameters: name and shape, packed in this order into one flat Float64Array. */
export function layout(sizes = [2, 16, 16, 1]) {
  const params = [];
  let offset = 0;
  for (let l = 1; l < sizes.length; l++) {
    for (const [name, shape] of [[`W${l}`, [sizes[l - 1], sizes[l]]], [`b${l}`, [sizes[l]]]]) {
      const size = shape.reduce((p, d) => p * d, 1);
      params.push({ name, shape, offset, size });
      offset += size;
    }
  }
  return { sizes, params, size: offset };
}

/** Glorot-uniform weights from a seeded PRNG, zero biases. */
export function initialTheta(net, seed = 3) {
  const rand = mulberry32(seed);
  const theta = new Float64Array(net.size);
  for (const { name, shape, offset, size } of net.params) {
    if (name[0] !== 'W') continue;
    const limit = Math.sqrt(6 / (shape[0] + shape[1]));
    for (let k = 0; k < size; k++) theta[offset + k] = limit * (2 * rand() - 1);
  }
  return theta;
}

/** The network's score f(x), the logit of P(label = +1), for the rows of X [n, 2]: hidden
 *  layers tanh(h·W + b) with the bias [k] broadcast over the rows [n, k], a linear last layer.
 *  `params` are the Vecs W1, b1, W2, b2, … in layout order. */
function forward(X, params) {
  let h = X;
  for (let l = 0; l < params.length; l += 2) {
    h = h.matmul(params[l]).add(params[l + 1]);
    if (l + 2 < params.length) h = h.tanh();
  }
  return h.reshape([X.shape[0]]);
}

/**
 * Adam on the mean logistic loss softplus(−y·f(x)) plus (l2 / 2)·Σ W² over the weights. The
 * parameters live in one flat array, `state.theta`, so the optimiser is a loop over one array.
 */
export function makeClassifier(tape, data, { sizes, lr = 0.01, l2 = 1e-4, beta1 = 0.9, beta2 = 0.999 } = {}) {
  const net = layout(sizes);
  const state = { theta: initialTheta(net), m: new Float64Array(net.size), v: new Float64Array(net.size), t: 0, nodes: 0 };
  const negLabels = data.labels.map((y) => -y);

  /** theta on the tape, one Vec per parameter: inputs to differentiate, or constants. */
  const record = (theta, differentiate) => net.params.map(({ offset, size, shape }) => {
    const values = theta.subarray(offset, offset + size);
    return differentiate ? tape.vector(values, shape) : tape.constantVector(values, shape);
  });

  /** Loss and its gradient with respect to theta (flat, in layout order). */
  function lossAndGradient(theta) {
    tape.reset();
    const params = record(theta, true);
    const f = forward(tape.constantVector(data.xy, [data.n, 2]), params);
    const weights = params.filter((_, k) => k % 2 === 0);
    const penalty = weights.map((W) => W.sumSquares()).reduce((a, b) => a.add(b));
    const loss = f.mul(negLabels).softplus().mean().add(penalty.mul(l2 / 2));
    const grad = tape.gradient(loss, params);
    state.nodes = tape.size;
    return { loss: loss.value, grad };
  }

  /** One Adam step; returns the loss before it. */
  function step() {
    const { loss, grad } = lossAndGradient(state.theta);
    const { theta, m, v } = state;
    state.t++;
    const c1 = 1 - beta1 ** state.t, c2 = 1 - beta2 ** state.t;
    for (let k = 0; k < theta.length; k++) {
      m[k] = beta1 * m[k] + (1 - beta1) * grad[k];
      v[k] = beta2 * v[k] + (1 - beta2) * grad[k] * grad[k];
      theta[k] -= (lr * m[k]) / c1 / (Math.sqrt(v[k] / c2) + 1e-8);
    }
    return loss;
  }

  /** Scores of the current network at points xy (x0, y0, x1, y1, …): a forward pass alone. */
  function scores(xy) {
    tape.reset();
    return forward(tape.constantVector(xy, [xy.length / 2, 2]), record(state.theta, false));
  }

  /** P(label = +1) at the centres of an n×n grid over [-VIEW, VIEW]², row by row from the top. */
  function grid(n) {
    const xy = new Float64Array(2 * n * n);
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < n; c++) {
        xy[2 * (r * n + c)] = -VIEW + (2 * VIEW * (c + 0.5)) / n;
        xy[2 * (r * n + c) + 1] = VIEW - (2 * VIEW * (r + 0.5)) / n;
      }
    }
    return scores(xy).sigmoid().value;
  }

  /** Fraction of the training points on their own side of the boundary. */
  function accuracy() {
    const f = scores(data.xy).value;
    return f.reduce((hits, fk, k) => hits + (fk * data.labels[k] > 0 ? 1 : 0), 0) / data.n;
  }

  function reset() {
    state.theta = initialTheta(net);
    state.m.fill(0);
    state.v.fill(0);
    state.t = 0;
  }

  return { net, state, step, reset, grid, accuracy, lossAndGradient };
}
