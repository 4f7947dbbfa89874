// The function the worker test differentiates, shared by the main thread and the workers so
// both record exactly the same graph. Plain JS (workers import it without a TS loader); it only
// calls Var methods, so it works with the library from src/ and from dist/ alike.

/** Number of inputs of `objective`. */
export const INPUTS = 6;

/** A chained Rosenbrock term per pair, transcendental terms, and a data-dependent branch read
 *  through a comparison (so a compiled copy has a guard and re-records across x0 = 0). */
export function objective(x) {
  let f = x[0].mul(0);
  for (let i = 0; i + 1 < x.length; i++) {
    const a = x[i].neg().add(1);
    const b = x[i + 1].sub(x[i].square());
    f = f.add(a.square()).add(b.square().mul(100));
  }
  f = f.add(x[0].mul(x[1]).sin()).add(x[2].square().log1p()).add(x[3].neg().exp().mul(x[1].tanh()));
  f = f.add(x[4].hypot(x[5])).add(x[5].atan2(x[4].add(3)));
  return x[0].gt(0).value ? f.add(x[0].sqrt().mul(x[3].cos())) : f.sub(x[0].neg().softplus());
}
