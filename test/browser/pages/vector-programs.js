// Vector programs run both in the page (suite.js) and in Node (browser.test.ts), so the page's
// results can be compared with Node's, engine by engine, and with finite differences. Each takes
// the tape and one input Vec and returns a scalar Var. `exact`: only + − × ÷, sqrt and sums, so
// the two engines (and Node and the page) must agree bit for bit.

/** @type {{ name: string, exact: boolean, point: number[], f: (tape: any, x: any) => any }[]} */
export const VECTOR_PROGRAMS = [
  {
    name: 'arithmetic with broadcasting', exact: true, point: [0.5, -1.25, 2, 0.75, -0.5, 1.5],
    f: (t, x) => {
      const m = x.reshape([2, 3]);
      return m.mul(x.slice(0, 3)).add(2).div(m.square().add(1)).sub([1, 2, 3]).sum().add(x.abs().sqrt().relu().sum().mul(0.5));
    },
  },
  {
    name: 'matmul, matvec, vecmat, outer, transpose', exact: true, point: [0.5, -1.25, 2, 0.75, -0.5, 1.5],
    f: (t, x) => {
      const a = x.reshape([2, 3]);
      const aat = a.matmul(a.transpose());
      return aat.matvec(x.slice(0, 2)).dot(x.slice(3, 5)).add(x.slice(0, 2).vecmat(a).sum()).add(x.slice(0, 2).outer(x.slice(4)).sumSquares());
    },
  },
  {
    name: 'slice, concat, stack, gather, get, select', exact: true, point: [0.5, -1.25, 2, 0.75, -0.5, 1.5],
    f: (t, x) => {
      const y = t.concat([x.slice(1, 4), x.get(0), x.gather([5, 5, 2])]);
      const s = t.stack([x.get(1), x.get(2).mul(x.get(3)), 4]);
      return t.select(y.gt(0), y.mul(y), y.neg()).sum().add(s.dot(s)).add(y.max()).sub(y.min());
    },
  },
  {
    name: 'every unary op, elementwise', exact: false, point: [0.3, 0.45, 0.6, 0.15],
    f: (t, x) => {
      const ops = ['neg', 'recip', 'square', 'sqrt', 'cbrt', 'exp', 'expm1', 'log', 'log1p', 'log2', 'log10', 'sin', 'cos', 'tan',
        'asin', 'acos', 'atan', 'sinh', 'cosh', 'tanh', 'asinh', 'atanh', 'abs', 'sigmoid', 'softplus', 'relu',
        'erf', 'erfc', 'normCdf', 'normLogCdf', 'ndtri', 'lgamma', 'digamma'];
      return ops.reduce((acc, op) => acc.add(x[op]().sum()), x.add(1).acosh().sum());
    },
  },
  {
    name: 'binary ops and reductions', exact: false, point: [0.3, 0.45, 0.6, 0.15],
    f: (t, x) => {
      const z = x.add(0.5);
      return x.pow(z).add(x.pow(2.5)).add(x.atan2(z)).add(x.hypot(z)).add(x.max(0.4)).add(x.min(z)).sum()
        .add(x.logSumExp()).add(x.softmax().dot(z)).add(x.logSoftmax().sum()).add(x.norm()).add(x.mean());
    },
  },
  {
    name: 'a small MLP layer with a logistic loss', exact: false, point: [0.2, -0.4, 0.6, 0.1, -0.3, 0.5, 0.05, -0.15],
    f: (t, x) => {
      const X = t.constantVector([1, 2, -1, 0.5, 0.25, -2], [3, 2]);
      const W = x.slice(0, 6).reshape([2, 3]);
      const h = X.matmul(W).add(x.slice(5, 8)).tanh();
      return h.matvec([0.5, -1, 2]).mul([1, -1, 1]).neg().softplus().mean().add(W.sumSquares().mul(1e-2));
    },
  },
];
