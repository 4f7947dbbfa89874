// A faithful micrograd-style engine (Karpathy's micrograd/engine.py, ported): one object per
// scalar, one closure per op capturing its operands, `sub` as add(neg), `neg` as mul(-1), `div`
// as mul(pow(-1)), a topological sort over a visited Set, then the closures in reverse order.
// One change: micrograd's recursive build_topo overflows Node's stack on graphs deeper than a
// few thousand nodes (every workload here), so the same post-order DFS runs on an explicit stack.
// Ops micrograd lacks (sin, cos, log, log1p) are added in its style.
import type { Runner } from '../impls.ts';
import {
  CHAIN_H, COURANT, LLSQ_M, LOGREG_D, MLP_ALPHA, MLP_LR, MLP_PARAMS, NX, ODE_S, ODE_TF, TINY_POINTS, W1, B1, W2, B2, W3, B3,
  gmmConstants, gmmData, llsqT, logregData, mlpData, tinyPoints, type GmmData, type Instance,
} from '../workloads.ts';

const noop = (): void => {};

export class Value {
  data: number;
  grad = 0;
  _backward: () => void = noop;
  readonly _prev: Value[];
  readonly _op: string;

  constructor(data: number, children: Value[] = [], op = '') {
    this.data = data;
    this._prev = children;
    this._op = op;
  }

  add(other: Value | number): Value {
    const o = other instanceof Value ? other : new Value(other);
    const out = new Value(this.data + o.data, [this, o], '+');
    out._backward = () => {
      this.grad += out.grad;
      o.grad += out.grad;
    };
    return out;
  }

  mul(other: Value | number): Value {
    const o = other instanceof Value ? other : new Value(other);
    const out = new Value(this.data * o.data, [this, o], '*');
    out._backward = () => {
      this.grad += o.data * out.grad;
      o.grad += this.data * out.grad;
    };
    return out;
  }

  pow(k: number): Value {
    const out = new Value(this.data ** k, [this], `**${k}`);
    out._backward = () => {
      this.grad += k * this.data ** (k - 1) * out.grad;
    };
    return out;
  }

  relu(): Value {
    const out = new Value(this.data < 0 ? 0 : this.data, [this], 'ReLU');
    out._backward = () => {
      this.grad += (out.data > 0 ? 1 : 0) * out.grad;
    };
    return out;
  }

  tanh(): Value {
    const t = Math.tanh(this.data);
    const out = new Value(t, [this], 'tanh');
    out._backward = () => {
      this.grad += (1 - t * t) * out.grad;
    };
    return out;
  }

  exp(): Value {
    const out = new Value(Math.exp(this.data), [this], 'exp');
    out._backward = () => {
      this.grad += out.data * out.grad;
    };
    return out;
  }

  log(): Value {
    const out = new Value(Math.log(this.data), [this], 'log');
    out._backward = () => {
      this.grad += (1 / this.data) * out.grad;
    };
    return out;
  }

  log1p(): Value {
    const out = new Value(Math.log1p(this.data), [this], 'log1p');
    out._backward = () => {
      this.grad += (1 / (1 + this.data)) * out.grad;
    };
    return out;
  }

  sin(): Value {
    const out = new Value(Math.sin(this.data), [this], 'sin');
    out._backward = () => {
      this.grad += Math.cos(this.data) * out.grad;
    };
    return out;
  }

  cos(): Value {
    const out = new Value(Math.cos(this.data), [this], 'cos');
    out._backward = () => {
      this.grad -= Math.sin(this.data) * out.grad;
    };
    return out;
  }

  neg(): Value {
    return this.mul(-1);
  }

  sub(other: Value | number): Value {
    return this.add(other instanceof Value ? other.neg() : -other);
  }

  div(other: Value | number): Value {
    return this.mul(other instanceof Value ? other.pow(-1) : 1 / other);
  }

  backward(): void {
    const topo: Value[] = [];
    const visited = new Set<Value>();
    // build_topo(v): visit children first, then push v; iterative, same order as the recursion.
    const stack: Value[] = [this];
    const next: number[] = [0];
    visited.add(this);
    while (stack.length) {
      const v = stack[stack.length - 1]!;
      const k = next[next.length - 1]!;
      if (k < v._prev.length) {
        next[next.length - 1] = k + 1;
        const child = v._prev[k]!;
        if (!visited.has(child)) {
          visited.add(child);
          stack.push(child);
          next.push(0);
        }
      } else {
        topo.push(v);
        stack.pop();
        next.pop();
      }
    }
    this.grad = 1;
    for (let i = topo.length - 1; i >= 0; i--) topo[i]!._backward();
  }
}

// ───────────────────────────── the workloads, micrograd style ─────────────────────────────

function chain(x0: number, n: number, g: Float64Array): number {
  const input = new Value(x0);
  let x = input;
  for (let k = 0; k < n; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.mul(x).log1p()).mul(CHAIN_H));
  x.backward();
  g[0] = input.grad;
  return x.data;
}

function rosenbrock(x: Float64Array, g: Float64Array): number {
  const xs = Array.from(x, (v) => new Value(v));
  let s = new Value(0);
  for (let i = 0; i < xs.length - 1; i++) {
    const xi = xs[i]!;
    s = s.add(xs[i + 1]!.sub(xi.pow(2)).pow(2).mul(100)).add(new Value(1).sub(xi).pow(2));
  }
  s.backward();
  for (let i = 0; i < xs.length; i++) g[i] = xs[i]!.grad;
  return s.data;
}

function advection(qInit: Float64Array, nt: number, toon: boolean, g: Float64Array): number {
  const c = COURANT;
  const q0 = Array.from(qInit, (v) => new Value(v));
  const q = q0.slice();
  const flux: Value[] = new Array<Value>(NX - 1);
  for (let j = 0; j < nt; j++) {
    for (let i = 0; i < NX - 1; i++) {
      const a = q[i]!, b = q[i + 1]!;
      flux[i] = toon
        ? a.div(b).log().mul(c).exp().sub(1).mul(a).mul(b).div(a.sub(b))
        : a.add(b).add(a.sub(b).mul(c)).mul(0.5 * c);
    }
    for (let i = 1; i < NX - 1; i++) q[i] = q[i]!.add(flux[i - 1]!.sub(flux[i]!));
    q[0] = q[NX - 2]!;
    q[NX - 1] = q[1]!;
  }
  let s = q[0]!.pow(2);
  for (let i = 1; i < NX; i++) s = s.add(q[i]!.pow(2));
  s.backward();
  for (let i = 0; i < NX; i++) g[i] = q0[i]!.grad;
  return s.data;
}

function mlpStep(params: Value[], X: Float64Array, y: Float64Array, n: number, g: Float64Array): number {
  for (const p of params) p.grad = 0; // model.zero_grad()
  let data: Value | null = null;
  const h1: Value[] = new Array<Value>(16), h2: Value[] = new Array<Value>(16);
  for (let k = 0; k < n; k++) {
    const x0 = X[2 * k]!, x1 = X[2 * k + 1]!;
    for (let u = 0; u < 16; u++) h1[u] = params[B1 + u]!.add(params[W1 + 2 * u]!.mul(x0)).add(params[W1 + 2 * u + 1]!.mul(x1)).tanh();
    for (let u = 0; u < 16; u++) {
      let acc = params[B2 + u]!;
      for (let v = 0; v < 16; v++) acc = acc.add(params[W2 + 16 * u + v]!.mul(h1[v]!));
      h2[u] = acc.tanh();
    }
    let score = params[B3]!;
    for (let v = 0; v < 16; v++) score = score.add(params[W3 + v]!.mul(h2[v]!));
    const loss = score.mul(-y[k]!).add(1).relu();
    data = data ? data.add(loss) : loss;
  }
  let reg = params[0]!.mul(params[0]!);
  for (let i = 1; i < MLP_PARAMS; i++) reg = reg.add(params[i]!.mul(params[i]!));
  const total = data!.mul(1 / n).add(reg.mul(MLP_ALPHA));
  total.backward();
  for (let i = 0; i < MLP_PARAMS; i++) {
    const p = params[i]!;
    g[i] = p.grad;
    p.data -= MLP_LR * p.grad;
  }
  return total.data;
}

function lse(x: Float64Array, g: Float64Array): number {
  const xs = Array.from(x, (v) => new Value(v));
  let m = -Infinity;
  for (const v of x) if (v > m) m = v;
  let s = xs[0]!.sub(m).exp();
  for (let i = 1; i < xs.length; i++) s = s.add(xs[i]!.sub(m).exp());
  const f = s.log().add(m);
  f.backward();
  for (let i = 0; i < xs.length; i++) g[i] = xs[i]!.grad;
  return f.data;
}

function llsq(x: Float64Array, n: number, g: Float64Array): number {
  const xs = Array.from(x, (v) => new Value(v));
  let s: Value | null = null;
  for (let i = 0; i < n; i++) {
    const t = llsqT(i, n);
    let r = new Value(Math.sign(t));
    let acc = 1;
    for (let j = 0; j < LLSQ_M; j++) {
      r = r.sub(xs[j]!.mul(acc));
      acc *= t;
    }
    s = s ? s.add(r.pow(2)) : r.pow(2);
  }
  const f = s!.mul(0.5);
  f.backward();
  for (let j = 0; j < LLSQ_M; j++) g[j] = xs[j]!.grad;
  return f.data;
}

/** micrograd has no softplus: log(1 + exp(z)), in its style (fine for the |z| < 10 here). */
function logreg(p: Float64Array, X: Float64Array, y: Float64Array, n: number, g: Float64Array): number {
  const d = LOGREG_D;
  const ps = Array.from(p, (v) => new Value(v));
  let s: Value | null = null;
  for (let i = 0; i < n; i++) {
    let z = ps[d]!;
    for (let j = 0; j < d; j++) z = z.add(ps[j]!.mul(X[i * d + j]!));
    const term = z.exp().add(1).log().sub(z.mul(y[i]!));
    s = s ? s.add(term) : term;
  }
  const f = s!.mul(1 / n);
  f.backward();
  for (let j = 0; j <= d; j++) g[j] = ps[j]!.grad;
  return f.data;
}

/** micrograd has no max: each logsumexp shifts by the max of the values (a plain number, whose
 *  derivative cancels anyway). */
function logsumexpValues(v: Value[]): Value {
  let mx = -Infinity;
  for (const e of v) mx = Math.max(mx, e.data);
  let s = v[0]!.sub(mx).exp();
  for (let i = 1; i < v.length; i++) s = s.add(v[i]!.sub(mx).exp());
  return s.log().add(mx);
}

function gmm(G: GmmData, g: Float64Array): number {
  const { d, k, n, X, mu0, q0, l0, lsz, m, gamma } = G;
  const { CONSTANT, C } = gmmConstants(G);
  const ps = Array.from(G.p, (v) => new Value(v));
  const Qd = ps.slice(q0, l0).map((q) => q.exp());
  const sumQ: Value[] = [];
  for (let c = 0; c < k; c++) {
    let s = ps[q0 + c * d]!;
    for (let j = 1; j < d; j++) s = s.add(ps[q0 + c * d + j]!);
    sumQ.push(s);
  }
  let slse: Value | null = null;
  const xc: Value[] = new Array<Value>(d), Qxc: Value[] = new Array<Value>(d), main: Value[] = new Array<Value>(k);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      for (let j = 0; j < d; j++) xc[j] = ps[mu0 + c * d + j]!.neg().add(X[i * d + j]!);
      for (let j = 0; j < d; j++) Qxc[j] = Qd[c * d + j]!.mul(xc[j]!);
      let li = l0 + c * lsz;
      for (let a = 0; a < d; a++) for (let b = a + 1; b < d; b++) Qxc[b] = Qxc[b]!.add(ps[li++]!.mul(xc[a]!));
      let sq = Qxc[0]!.pow(2);
      for (let j = 1; j < d; j++) sq = sq.add(Qxc[j]!.pow(2));
      main[c] = ps[c]!.add(sumQ[c]!).sub(sq.mul(0.5));
    }
    const l = logsumexpValues(main);
    slse = slse ? slse.add(l) : l;
  }
  const lseAlpha = logsumexpValues(ps.slice(0, k));
  let out: Value | null = null;
  for (let c = 0; c < k; c++) {
    let frob = Qd[c * d]!.pow(2);
    for (let j = 1; j < d; j++) frob = frob.add(Qd[c * d + j]!.pow(2));
    for (let j = 0; j < lsz; j++) frob = frob.add(ps[l0 + c * lsz + j]!.pow(2));
    const term = frob.mul(0.5 * gamma * gamma).sub(sumQ[c]!.mul(m));
    out = out ? out.add(term) : term;
  }
  const f = slse!.add(CONSTANT).sub(lseAlpha.mul(n)).sub(out!).add(k * C);
  f.backward();
  for (let i = 0; i < ps.length; i++) g[i] = ps[i]!.grad;
  return f.data;
}

/** GradBench's ode, the RK4 steps on Values (ode.hpp's operations; micrograd's div is mul(pow(-1))). */
function ode(x: Float64Array, s: number, g: Float64Array): number {
  const n = x.length, h = ODE_TF / s;
  const xs = Array.from(x, (v) => new Value(v));
  const zero = new Value(0);
  let y: Value[] = new Array<Value>(n).fill(zero);
  const F = (v: Value[]): Value[] => v.map((_, i) => (i === 0 ? xs[0]! : xs[i]!.mul(v[i - 1]!)));
  for (let step = 0; step < s; step++) {
    const k1 = F(y);
    const k2 = F(y.map((yi, i) => yi.add(k1[i]!.mul(h).div(2))));
    const k3 = F(y.map((yi, i) => yi.add(k2[i]!.mul(h).div(2))));
    const k4 = F(y.map((yi, i) => yi.add(k3[i]!.mul(h))));
    y = y.map((yi, i) => yi.add(k1[i]!.add(k2[i]!.mul(2)).add(k3[i]!.mul(2)).add(k4[i]!).mul(h).div(6)));
  }
  const f = y[n - 1]!;
  f.backward();
  for (let i = 0; i < n; i++) g[i] = xs[i]!.grad;
  return f.data;
}

function tiny(pts: Float64Array, n: number, g: Float64Array): number {
  let s = 0, gx = 0, gy = 0, gz = 0;
  for (let k = 0; k < n; k++) {
    const o = 3 * (k % TINY_POINTS);
    const x = new Value(pts[o]!), y = new Value(pts[o + 1]!), z = new Value(pts[o + 2]!);
    const f = x
      .mul(y).sin()
      .add(y.mul(z).tanh().mul(x.pow(2).neg().exp()))
      .add(z.pow(2).log1p().div(y.pow(2).add(1)))
      .sub(x.add(y).add(z).cos());
    f.backward();
    s += f.data;
    gx += x.grad;
    gy += y.grad;
    gz += z.grad;
  }
  g[0] = gx;
  g[1] = gy;
  g[2] = gz;
  return s;
}

export function prepareMicrograd(inst: Instance): Runner {
  const g = new Float64Array(inst.x.length);
  const x = inst.x;
  const n = inst.n;
  let run: () => number;
  switch (inst.kind) {
    case 'chain': run = () => chain(x[0]!, n, g); break;
    case 'rosenbrock': run = () => rosenbrock(x, g); break;
    case 'advection-lw': run = () => advection(x, n, false, g); break;
    case 'advection-toon': run = () => advection(x, n, true, g); break;
    case 'mlp': {
      const params = Array.from(x, (v) => new Value(v));
      const { X, y } = mlpData(n);
      run = () => mlpStep(params, X, y, n, g);
      break;
    }
    case 'lse': run = () => lse(x, g); break;
    case 'llsq': run = () => llsq(x, n, g); break;
    case 'logreg': {
      const { X, y } = logregData(n);
      run = () => logreg(x, X, y, n, g);
      break;
    }
    case 'gmm': {
      const G = gmmData(n);
      run = () => gmm(G, g);
      break;
    }
    case 'ode': run = () => ode(x, ODE_S, g); break;
    case 'tiny': {
      const pts = tinyPoints();
      run = () => tiny(pts, n, g);
      break;
    }
  }
  return { grad: g, run };
}
