// jax-js peers on its 'wasm' device, float64 (jax-js has f64 storage and arithmetic; its f64
// sin/cos/exp/log are only accurate to ~1e-8, see the tolerance in impls.ts). Eager mode runs
// valueAndGrad(f) afresh each call; jit mode compiles jit(valueAndGrad(f)) once, in the first
// (untimed) run. jax-js arrays are reference counted and every call consumes its arguments, so
// an array used k times is passed k-1 times as `x.ref` and once as itself.
import type { Runner } from '../impls.ts';
import {
  CHAIN_H, COURANT, LLSQ_M, LOGREG_D, MLP_ALPHA, MLP_LR, NX, ODE_S, ODE_TF, TINY_POINTS, gmmConstants, gmmData, gmmLowerScatter,
  logregData, mlpData, tinyPoints, type Instance,
} from '../workloads.ts';

type Jax = typeof import('@jax-js/jax');
type Arr = import('@jax-js/jax').Array;

export async function loadJax(): Promise<Jax> {
  // Node 20 has no Float16Array, which jax-js checks for when it builds arrays.
  if (typeof (globalThis as { Float16Array?: unknown }).Float16Array === 'undefined') {
    const { Float16Array } = await import('@petamoriken/float16');
    (globalThis as { Float16Array?: unknown }).Float16Array = Float16Array;
  }
  const jax = await import('@jax-js/jax');
  const devices = await jax.init('wasm');
  if (!devices.includes('wasm')) throw new Error(`jax-js has no wasm device here (devices: ${devices.join(', ')})`);
  jax.defaultDevice('wasm');
  return jax;
}

export async function prepareJax(inst: Instance, mode: 'eager' | 'jit'): Promise<Runner> {
  const jax = await loadJax();
  const np = jax.numpy;
  const f64 = { dtype: np.float64 };
  const g = new Float64Array(inst.x.length);
  const n = inst.n;
  const x = inst.x;
  const wrap = <F extends (...args: never[]) => unknown>(f: F): F => (mode === 'jit' ? (jax.jit(f as never) as unknown as F) : f);

  /** One value-and-gradient call on a fresh input array; reading the results frees them. */
  const single = (fn: (a: Arr) => Arr, input: () => Float64Array): Runner => {
    const vg = wrap(jax.valueAndGrad(fn) as unknown as (a: Arr) => [Arr, Arr]);
    return {
      grad: g,
      run() {
        const [v, gr] = vg(np.array(input(), f64));
        const value = (v.dataSync() as Float64Array)[0]!;
        g.set(gr.dataSync() as Float64Array);
        return value;
      },
    };
  };

  switch (inst.kind) {
    case 'chain':
      return single((x0: Arr) => {
        let y = x0;
        for (let k = 0; k < n; k++) {
          const s = np.sin(y.ref), e = np.exp(np.cos(y.ref)), l = np.log1p(y.ref.mul(y.ref));
          y = y.add(s.mul(e).sub(l).mul(CHAIN_H));
        }
        return np.sum(y);
      }, () => x);
    case 'rosenbrock':
      return single((v: Arr) => {
        const a = v.ref.slice([0, n - 1]), b = v.slice([1, n]);
        const t = b.sub(np.square(a.ref));
        return np.sum(np.square(t).mul(100).add(np.square(np.subtract(1, a))));
      }, () => x);
    case 'advection-lw':
    case 'advection-toon': {
      const toon = inst.kind === 'advection-toon';
      const c = COURANT;
      return single((q0: Arr) => {
        let q = q0;
        for (let j = 0; j < n; j++) {
          const a = q.ref.slice([0, NX - 1]), b = q.ref.slice([1, NX]);
          const flux = toon
            ? np.exp(np.log(a.ref.div(b.ref)).mul(c)).sub(1).mul(a.ref).mul(b.ref).div(a.sub(b))
            : a.ref.add(b.ref).add(a.sub(b).mul(c)).mul(0.5 * c);
          const inner = q.slice([1, NX - 1]).add(flux.ref.slice([0, NX - 2]).sub(flux.slice([1, NX - 1])));
          q = np.concatenate([inner.ref.slice([NX - 3, NX - 2]), inner.ref, inner.slice([0, 1])]);
        }
        return np.sum(np.square(q));
      }, () => x);
    }
    case 'lse':
      // GradBench's own JAX tool (tools/jax/lse.py), max inside and differentiated through:
      // log(sum(exp(x - max x))) + max x. Not nn.logsumexp, whose max is under stopGradient.
      return single((v: Arr) => {
        const a = np.max(v.ref);
        return np.log(np.sum(np.exp(v.sub(a.ref)))).add(a);
      }, () => x);
    case 'llsq':
      // t, sign(t) and the powers built inside the function, as GradBench's JAX tool
      // (tools/jax/llsq.py: cumprod of [1, t, t, ...] per point), then a matvec.
      return single((v: Arr) => {
        const t = np.arange(n).astype(np.float64).mul(2).div(n - 1).add(-1);
        const s = np.sign(t.ref);
        const T = np.cumprod(np.concatenate([np.ones([n, 1], f64), np.tile(t.reshape([n, 1]), [1, LLSQ_M - 1])], 1), 1);
        return np.sum(np.square(s.sub(np.matmul(T, v)))).mul(0.5);
      }, () => x);
    case 'logreg': {
      const { X, y } = logregData(n);
      const d = LOGREG_D;
      const Xa = np.array(X, f64).reshape([n, d]);
      const ya = np.array(y, f64);
      const loss = ([w, b]: Arr[]): Arr => {
        const z = np.matmul(Xa.ref, w!).add(b!);
        return np.mean(jax.nn.softplus(z.ref).sub(ya.ref.mul(z)));
      };
      const vg = wrap(jax.valueAndGrad(loss as never) as unknown as (ps: Arr[]) => [Arr, Arr[]]);
      const w0 = x.slice(0, d), b0 = x.slice(d);
      return {
        grad: g,
        run() {
          const [v, [gw, gb]] = vg([np.array(w0, f64), np.array(b0, f64)]) as [Arr, [Arr, Arr]];
          const value = (v.dataSync() as Float64Array)[0]!;
          g.set(gw.dataSync() as Float64Array, 0);
          g.set(gb.dataSync() as Float64Array, d);
          return value;
        },
      };
    }
    case 'gmm': {
      // GradBench's JAX/PyTorch gmm_objective, vectorised over points and components; the
      // strictly lower parts are scattered into K d×d matrices by a 0/1 matmul (jax-js has no
      // .at[].set), and the Wishart normaliser is a precomputed constant (no multigammaln).
      // nn.logsumexp (max under stopGradient) as jax.scipy.special.logsumexp in GradBench's.
      const G = gmmData(n);
      const { d, k, lsz, m, gamma, mu0, q0, l0 } = G;
      const { CONSTANT, C } = gmmConstants(G);
      const Xa = np.array(G.X, f64).reshape([n, 1, d]);
      const Sa = np.array(gmmLowerScatter(d), f64).reshape([lsz, d * d]);
      const loss = ([alpha, mu, q, l]: Arr[]): Arr => {
        const Qd = np.exp(q!.ref);
        const sumQ = np.sum(q!, 1);
        const Ls = np.matmul(l!.ref, Sa.ref).reshape([k, d, d]);
        const xc = Xa.ref.sub(mu!.reshape([1, k, d]));
        // GradBench's einsum('ijk,mik->mij', Ls, xc) as a batched matmul over components: jax-js's
        // einsum parser needs iterator helpers (Node >= 22) and fails on Node 20.
        const Lxc = np.transpose(np.matmul(np.transpose(xc.ref, [1, 0, 2]), np.transpose(Ls, [0, 2, 1])), [1, 0, 2]);
        const Lx = Qd.ref.mul(xc).add(Lxc);
        const inner = alpha!.ref.add(sumQ.ref).sub(np.sum(np.square(Lx), 2).mul(0.5));
        const slse = np.sum(jax.nn.logsumexp(inner, 1));
        const lseAlpha = jax.nn.logsumexp(alpha!);
        const frob = np.sum(np.square(Qd), 1).add(np.sum(np.square(l!), 1));
        const out = np.sum(frob.mul(0.5 * gamma * gamma).sub(sumQ.mul(m)));
        return slse.add(CONSTANT).sub(lseAlpha.mul(n)).sub(out).add(k * C);
      };
      const vg = wrap(jax.valueAndGrad(loss as never) as unknown as (ps: Arr[]) => [Arr, Arr[]]);
      const parts: [number, number, number[]][] = [[0, mu0, [k]], [mu0, q0, [k, d]], [q0, l0, [k, d]], [l0, x.length, [k, lsz]]];
      return {
        grad: g,
        run() {
          const [v, grads] = vg(parts.map(([a, b, shape]) => np.array(x.slice(a, b), f64).reshape(shape)));
          const value = (v.dataSync() as Float64Array)[0]!;
          for (let i = 0; i < parts.length; i++) g.set(grads[i]!.dataSync() as Float64Array, parts[i]![0]);
          return value;
        },
      };
    }
    case 'mlp': {
      const { X, y } = mlpData(n);
      const Xa = np.array(X, f64).reshape([n, 2]);
      const ya = np.array(y, f64);
      const shapes: [number, number][] = [[16, 2], [16, 1], [16, 16], [16, 1], [1, 16], [1, 1]];
      let params: Arr[] = [];
      let o = 0;
      for (const [r, k] of shapes) {
        const a = np.array(x.slice(o, o + r * k), f64);
        params.push(k === 1 ? a : a.reshape([r, k]));
        o += r * k;
      }
      const loss = (ps: Arr[]): Arr => {
        const [W1, b1, W2, b2, W3, b3] = ps as [Arr, Arr, Arr, Arr, Arr, Arr];
        const h1 = np.tanh(np.matmul(Xa.ref, np.transpose(W1.ref)).add(b1.ref));
        const h2 = np.tanh(np.matmul(h1, np.transpose(W2.ref)).add(b2.ref));
        const score = np.matmul(h2, np.transpose(W3.ref)).add(b3.ref).reshape([n]);
        const data = np.mean(jax.nn.relu(np.subtract(1, ya.ref.mul(score))));
        let reg = np.sum(np.square(W1));
        for (const p of [b1, W2, b2, W3, b3]) reg = reg.add(np.sum(np.square(p)));
        return data.add(reg.mul(MLP_ALPHA));
      };
      const vg = wrap(jax.valueAndGrad(loss as never) as unknown as (ps: Arr[]) => [Arr, Arr[]]);
      return {
        grad: g,
        run() {
          const [v, grads] = vg(params.map((p) => p.ref));
          const value = (v.dataSync() as Float64Array)[0]!;
          let off = 0;
          const next: Arr[] = [];
          for (let i = 0; i < grads.length; i++) {
            const gi = grads[i]!;
            const d = gi.ref.dataSync() as Float64Array;
            g.set(d, off);
            off += d.length;
            next.push(params[i]!.sub(gi.mul(MLP_LR)));
          }
          params = next;
          return value;
        },
      };
    }
    case 'ode': {
      // GradBench's own JAX tool (tools/jax/ode.py): F(y) = where(i == 0, x, x · roll(y, 1)), the
      // RK4 body with its grouping; its lax.scan over the s steps is a loop here (jax-js has no
      // scan), so jit traces the steps unrolled. Output: the last element of y.
      const s = ODE_S, h = ODE_TF / s;
      const first = np.equal(np.arange(n), 0);
      return single((v: Arr) => {
        // v's last use (the last k4) consumes it.
        const F = (y: Arr, last = false): Arr => np.where(first.ref, v.ref, (last ? v : v.ref).mul(np.roll(y, 1)));
        let y = np.zeros([n], f64);
        for (let step = 0; step < s; step++) {
          const k1 = F(y.ref);
          const k2 = F(y.ref.add(k1.ref.mul(h / 2)));
          const k3 = F(y.ref.add(k2.ref.mul(h / 2)));
          const k4 = F(y.ref.add(k3.ref.mul(h)), step === s - 1);
          y = y.add(k1.add(k2.mul(2).add(k3.mul(2)).add(k4)).mul(h / 6));
        }
        return np.sum(y.slice([n - 1, n]));
      }, () => x);
    }
    case 'tiny': {
      const pts = tinyPoints();
      const f = (a: Arr, b: Arr, c: Arr): Arr =>
        np.sin(a.ref.mul(b.ref))
          .add(np.tanh(b.ref.mul(c.ref)).mul(np.exp(np.negative(np.square(a.ref)))))
          .add(np.log1p(np.square(c.ref)).div(np.square(b.ref).add(1)))
          .sub(np.cos(a.add(b).add(c)));
      const vg = wrap(jax.valueAndGrad(f as never, { argnums: [0, 1, 2] }) as unknown as (a: Arr, b: Arr, c: Arr) => [Arr, Arr[]]);
      return {
        grad: g,
        run() {
          let s = 0, gx = 0, gy = 0, gz = 0;
          for (let k = 0; k < n; k++) {
            const o = 3 * (k % TINY_POINTS);
            const [v, [ga, gb, gc]] = vg(np.array(pts[o]!, f64), np.array(pts[o + 1]!, f64), np.array(pts[o + 2]!, f64)) as [Arr, [Arr, Arr, Arr]];
            s += (v.dataSync() as Float64Array)[0]!;
            gx += (ga.dataSync() as Float64Array)[0]!;
            gy += (gb.dataSync() as Float64Array)[0]!;
            gz += (gc.dataSync() as Float64Array)[0]!;
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
