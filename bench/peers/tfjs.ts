// TensorFlow.js peers, float32 (tfjs has no float64), on its pure-JS 'cpu' backend or its 'wasm'
// backend (single-threaded here: Node has no Web Workers). Scalar style where the workload is a
// chain of scalars (chain, tiny: one 0-d tensor per value), vectorised where that is natural
// (Rosenbrock, advection per time step, MLP and logistic regression as matmuls, lse, llsq as a
// matvec, the GMM over points × components with batched matmuls).
import type { Runner } from '../impls.ts';
import {
  CHAIN_H, COURANT, LLSQ_M, LOGREG_D, MLP_ALPHA, MLP_LR, NX, ODE_S, ODE_TF, TINY_POINTS, gmmConstants, gmmData, gmmLowerScatter,
  logregData, mlpData, tinyPoints, type Instance,
} from '../workloads.ts';

type TF = typeof import('@tensorflow/tfjs');
type Tensor = import('@tensorflow/tfjs').Tensor;

export async function loadTfjs(backend: 'cpu' | 'wasm'): Promise<TF> {
  // tfjs greets Node users on stdout; keep that line out of the benchmark output.
  const log = console.log;
  console.log = () => {};
  try {
    const tf = await import('@tensorflow/tfjs');
    if (backend === 'wasm') await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend(backend))) throw new Error(`tfjs backend '${backend}' did not initialise`);
    await tf.ready();
    if (tf.getBackend() !== backend) throw new Error(`tfjs runs on '${tf.getBackend()}', not '${backend}'`);
    return tf;
  } finally {
    console.log = log;
  }
}

function readGrad(t: Tensor, g: Float64Array, offset = 0): void {
  const d = t.dataSync();
  for (let i = 0; i < d.length; i++) g[offset + i] = d[i]!;
}

export async function prepareTfjs(inst: Instance, backend: 'cpu' | 'wasm'): Promise<Runner> {
  const tf = await loadTfjs(backend);
  const g = new Float64Array(inst.x.length);
  const n = inst.n;
  const x32 = Float32Array.from(inst.x);

  /** Runs a value-and-gradient closure inside tidy and copies the results out. */
  const once = (f: () => { value: Tensor; grads: Tensor[] }): number => {
    const { value, grads } = tf.tidy(f);
    const v = value.dataSync()[0]!;
    let o = 0;
    for (const t of grads) {
      readGrad(t, g, o);
      o += t.size;
    }
    value.dispose();
    tf.dispose(grads);
    return v;
  };

  switch (inst.kind) {
    case 'chain': {
      const vg = tf.valueAndGrad((x0: Tensor) => {
        let x = x0;
        for (let k = 0; k < n; k++) {
          x = tf.add(x, tf.mul(tf.sub(tf.mul(tf.sin(x), tf.exp(tf.cos(x))), tf.log1p(tf.mul(x, x))), CHAIN_H));
        }
        return x;
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.scalar(x32[0]!)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'rosenbrock': {
      const vg = tf.valueAndGrad((x: Tensor) => {
        const a = tf.slice(x, 0, n - 1), b = tf.slice(x, 1, n - 1);
        const t = tf.sub(b, tf.square(a));
        return tf.sum(tf.add(tf.mul(tf.square(t), 100), tf.square(tf.sub(1, a))));
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.tensor1d(x32)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'advection-lw':
    case 'advection-toon': {
      const toon = inst.kind === 'advection-toon';
      const c = COURANT;
      const vg = tf.valueAndGrad((q0: Tensor) => {
        let q = q0;
        for (let j = 0; j < n; j++) {
          const a = tf.slice(q, 0, NX - 1), b = tf.slice(q, 1, NX - 1);
          const flux = toon
            ? tf.div(tf.mul(tf.mul(tf.sub(tf.exp(tf.mul(tf.log(tf.div(a, b)), c)), 1), a), b), tf.sub(a, b))
            : tf.mul(tf.add(tf.add(a, b), tf.mul(tf.sub(a, b), c)), 0.5 * c);
          // Interior update, then the boundary copies q[0] = q[NX-2], q[NX-1] = q[1].
          const inner = tf.add(tf.slice(q, 1, NX - 2), tf.sub(tf.slice(flux, 0, NX - 2), tf.slice(flux, 1, NX - 2)));
          q = tf.concat([tf.slice(inner, NX - 3, 1), inner, tf.slice(inner, 0, 1)]);
        }
        return tf.sum(tf.square(q));
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.tensor1d(x32)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'mlp': {
      const { X, y } = mlpData(n);
      const Xt = tf.tensor2d(Float32Array.from(X), [n, 2]);
      const yt = tf.tensor1d(Float32Array.from(y));
      const p = inst.x;
      const shapes: [number, number][] = [[16, 2], [16, 1], [16, 16], [16, 1], [1, 16], [1, 1]];
      let params: Tensor[] = [];
      let o = 0;
      for (const [r, k] of shapes) {
        params.push(k === 1 ? tf.tensor1d(Float32Array.from(p.subarray(o, o + r))) : tf.tensor2d(Float32Array.from(p.subarray(o, o + r * k)), [r, k]));
        o += r * k;
      }
      const loss = (W1: Tensor, b1: Tensor, W2: Tensor, b2: Tensor, W3: Tensor, b3: Tensor): Tensor => {
        const h1 = tf.tanh(tf.add(tf.matMul(Xt, W1 as never, false, true), b1));
        const h2 = tf.tanh(tf.add(tf.matMul(h1, W2 as never, false, true), b2));
        const score = tf.reshape(tf.add(tf.matMul(h2, W3 as never, false, true), b3), [n]);
        const data = tf.mean(tf.relu(tf.sub(1, tf.mul(yt, score))));
        const reg = tf.addN([W1, b1, W2, b2, W3, b3].map((t) => tf.sum(tf.square(t))));
        return tf.add(data, tf.mul(reg, MLP_ALPHA));
      };
      const vg = tf.valueAndGrads(loss as (...args: Tensor[]) => Tensor);
      return {
        grad: g,
        run() {
          const { value, grads } = tf.tidy(() => vg(params));
          const v = value.dataSync()[0]!;
          let off = 0;
          for (const t of grads) {
            readGrad(t, g, off);
            off += t.size;
          }
          const next = tf.tidy(() => params.map((t, i) => tf.sub(t, tf.mul(grads[i]!, MLP_LR))));
          tf.dispose([...params, ...grads, value]);
          params = next;
          return v;
        },
      };
    }
    case 'lse': {
      // As GradBench's own TF.js tool (js/tensorflow/lse.ts): the max inside, differentiated through.
      const vg = tf.valueAndGrad((x: Tensor) => {
        const a = tf.max(x);
        return tf.add(a, tf.log(tf.sum(tf.exp(tf.sub(x, a)))));
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.tensor1d(x32)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'llsq': {
      // t, sign(t) and the power matrix are built inside the timed function, as GradBench's
      // primal gets only x and n (its TF.js tool builds t by tf.range there): the powers as a
      // cumulative product of [1, t, t, ...] along each row (its JAX tool's cumprod), then a matvec.
      const vg = tf.valueAndGrad((x: Tensor) => {
        const t = tf.sub(tf.mul(tf.range(0, n), 2 / (n - 1)), 1);
        const s = tf.reshape(tf.sign(t), [n, 1]);
        const T = tf.cumprod(tf.concat([tf.ones([n, 1]), tf.tile(tf.reshape(t, [n, 1]), [1, LLSQ_M - 1])], 1), 1);
        const r = tf.sub(s, tf.matMul(T, tf.reshape(x, [LLSQ_M, 1])));
        return tf.mul(tf.sum(tf.square(r)), 0.5);
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.tensor1d(x32)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'logreg': {
      const { X, y } = logregData(n);
      const d = LOGREG_D;
      const Xt = tf.tensor2d(Float32Array.from(X), [n, d]);
      const yt = tf.tensor1d(Float32Array.from(y));
      const vg = tf.valueAndGrads(((w: Tensor, b: Tensor): Tensor => {
        const z = tf.add(tf.reshape(tf.matMul(Xt, tf.reshape(w, [d, 1])), [n]), b);
        return tf.mean(tf.sub(tf.softplus(z), tf.mul(yt, z)));
      }) as (...args: Tensor[]) => Tensor);
      const w0 = Float32Array.from(inst.x.subarray(0, d)), b0 = Float32Array.from(inst.x.subarray(d));
      return { grad: g, run: () => once(() => { const r = vg([tf.tensor1d(w0), tf.tensor1d(b0)]); return { value: r.value, grads: r.grads }; }) };
    }
    case 'gmm': {
      // GradBench's PyTorch/JAX gmm_objective, vectorised over points and components: the lower
      // parts scattered into K d×d matrices by a 0/1 matmul, L_k (x_i − μ_k) as a batched matmul
      // over components; the Wishart normaliser is a precomputed constant.
      const G = gmmData(n);
      const { d, k, lsz, m, gamma, mu0, q0, l0 } = G;
      const { CONSTANT, C } = gmmConstants(G);
      const Xt = tf.tensor3d(Float32Array.from(G.X), [n, 1, d]);
      const St = tf.tensor2d(Float32Array.from(gmmLowerScatter(d)), [lsz, d * d]);
      const vg = tf.valueAndGrads(((alpha: Tensor, mu: Tensor, q: Tensor, l: Tensor): Tensor => {
        const Qd = tf.exp(q);
        const sumQ = tf.sum(q, 1);
        const Ls = tf.reshape(tf.matMul(l as never, St), [k, d, d]);
        const xc = tf.sub(Xt, tf.reshape(mu, [1, k, d]));
        const Lxc = tf.transpose(tf.matMul(tf.transpose(xc, [1, 0, 2]) as never, Ls as never, false, true), [1, 0, 2]);
        const Lx = tf.add(tf.mul(Qd, xc), Lxc);
        const inner = tf.sub(tf.add(alpha, sumQ), tf.mul(tf.sum(tf.square(Lx), 2), 0.5));
        const slse = tf.sum(tf.logSumExp(inner, 1));
        const lseAlpha = tf.logSumExp(alpha);
        const frob = tf.add(tf.sum(tf.square(Qd), 1), tf.sum(tf.square(l), 1));
        const out = tf.sum(tf.sub(tf.mul(frob, 0.5 * gamma * gamma), tf.mul(sumQ, m)));
        return tf.add(tf.sub(tf.sub(tf.add(slse, CONSTANT), tf.mul(lseAlpha, n)), out), k * C);
      }) as (...args: Tensor[]) => Tensor);
      const p = inst.x;
      const parts: [number, number, number[]][] = [[0, mu0, [k]], [mu0, q0, [k, d]], [q0, l0, [k, d]], [l0, p.length, [k, lsz]]];
      const p32 = parts.map(([a, b]) => Float32Array.from(p.subarray(a, b)));
      return {
        grad: g,
        run: () => once(() => {
          const r = vg(parts.map(([, , shape], i) => tf.tensor(p32[i]!, shape)));
          return { value: r.value, grads: r.grads };
        }),
      };
    }
    case 'ode': {
      // GradBench has no TF.js ode tool: written as its JAX tool, F(y) = x · [1, y_0 .. y_{n-2}] (the
      // shift as a slice and a concat), the s RK4 steps as a loop, the output's last element.
      const s = ODE_S, h = ODE_TF / s;
      const vg = tf.valueAndGrad((x: Tensor) => {
        const one = tf.ones([1]);
        const F = (v: Tensor): Tensor => tf.mul(x, tf.concat([one, tf.slice(v, 0, n - 1)]));
        let y = tf.zeros([n]);
        for (let step = 0; step < s; step++) {
          const k1 = F(y);
          const k2 = F(tf.add(y, tf.div(tf.mul(k1, h), 2)));
          const k3 = F(tf.add(y, tf.div(tf.mul(k2, h), 2)));
          const k4 = F(tf.add(y, tf.mul(k3, h)));
          y = tf.add(y, tf.div(tf.mul(tf.add(tf.add(tf.add(k1, tf.mul(k2, 2)), tf.mul(k3, 2)), k4), h), 6));
        }
        return tf.sum(tf.slice(y, n - 1, 1));
      });
      return { grad: g, run: () => once(() => { const r = vg(tf.tensor1d(x32)); return { value: r.value, grads: [r.grad] }; }) };
    }
    case 'tiny': {
      const pts = tinyPoints();
      const f = (x: Tensor, y: Tensor, z: Tensor): Tensor =>
        tf.sub(
          tf.add(
            tf.add(tf.sin(tf.mul(x, y)), tf.mul(tf.tanh(tf.mul(y, z)), tf.exp(tf.neg(tf.square(x))))),
            tf.div(tf.log1p(tf.square(z)), tf.add(tf.square(y), 1)),
          ),
          tf.cos(tf.add(tf.add(x, y), z)),
        );
      const vg = tf.valueAndGrads(f as (...args: Tensor[]) => Tensor);
      return {
        grad: g,
        run() {
          let s = 0, gx = 0, gy = 0, gz = 0;
          for (let k = 0; k < n; k++) {
            const o = 3 * (k % TINY_POINTS);
            const { value, grads } = tf.tidy(() => vg([tf.scalar(pts[o]!), tf.scalar(pts[o + 1]!), tf.scalar(pts[o + 2]!)]));
            s += value.dataSync()[0]!;
            gx += grads[0]!.dataSync()[0]!;
            gy += grads[1]!.dataSync()[0]!;
            gz += grads[2]!.dataSync()[0]!;
            tf.dispose([value, ...grads]);
          }
          g[0] = gx;
          g[1] = gy;
          g[2] = gz;
          return s;
        },
      };
    }
  }
}
