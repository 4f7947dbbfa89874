// The model the demo fits, free of any DOM or import so it runs the same in the page and in
// Node: noisy samples of y = a·sin(b·x + c) + d from a seeded PRNG, and an Adam loop whose
// gradients come from a tapegrad tape (wasm or JS, handed in by the caller).

/** The curve the data is drawn from; the fit starts elsewhere and has to find it. */
export const TRUTH = { a: 1.4, b: 1.8, c: 0.6, d: 0.3 };
export const START = { a: 0.5, b: 1.4, c: 0, d: -0.4 };
export const PARAMS = ['a', 'b', 'c', 'd'];

/** mulberry32: a tiny seeded PRNG, so every load of the page shows the same data. */
export function mulberry32(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makeData(n = 60, seed = 7, noise = 0.25) {
  const rand = mulberry32(seed);
  const xs = [], ys = [];
  for (let i = 0; i < n; i++) {
    const x = -3 + (6 * (i + rand())) / n; // jittered grid: spread out, not clumped
    // Box–Muller; 1 - rand() keeps log away from 0.
    const gauss = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    xs.push(x);
    ys.push(TRUTH.a * Math.sin(TRUTH.b * x + TRUTH.c) + TRUTH.d + noise * gauss);
  }
  return { xs, ys };
}

export const curve = (p, x) => p.a * Math.sin(p.b * x + p.c) + p.d;

/**
 * Gradient descent (Adam) on the mean squared error. Each step records the loss afresh on the
 * tape (reset is O(1)), runs one reverse sweep and moves the parameters.
 */
export function makeTrainer(tape, data, { lr = 0.05, beta1 = 0.9, beta2 = 0.999 } = {}) {
  const state = { params: { ...START }, m: [0, 0, 0, 0], v: [0, 0, 0, 0], t: 0, nodes: 0 };

  /** Loss and gradient at `params`, recorded on the tape. */
  function lossAndGradient(params) {
    tape.reset();
    const [a, b, c, d] = tape.variables(PARAMS.map((k) => params[k]));
    let sum = tape.constant(0);
    for (let i = 0; i < data.xs.length; i++) {
      const residual = b.mul(data.xs[i]).add(c).sin().mul(a).add(d).sub(data.ys[i]);
      sum = sum.add(residual.square());
    }
    const loss = sum.div(data.xs.length);
    const grad = tape.gradient(loss, [a, b, c, d]);
    state.nodes = tape.size;
    return { loss: loss.value, grad };
  }

  /** One Adam step; returns the loss before it. */
  function step() {
    const { loss, grad } = lossAndGradient(state.params);
    state.t++;
    PARAMS.forEach((k, i) => {
      state.m[i] = beta1 * state.m[i] + (1 - beta1) * grad[i];
      state.v[i] = beta2 * state.v[i] + (1 - beta2) * grad[i] * grad[i];
      const mHat = state.m[i] / (1 - beta1 ** state.t);
      const vHat = state.v[i] / (1 - beta2 ** state.t);
      state.params[k] -= (lr * mHat) / (Math.sqrt(vHat) + 1e-8);
    });
    return loss;
  }

  function reset() {
    state.params = { ...START };
    state.m = [0, 0, 0, 0];
    state.v = [0, 0, 0, 0];
    state.t = 0;
  }

  return { state, step, reset, lossAndGradient };
}
