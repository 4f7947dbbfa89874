// `npm start`: the worked examples on both backends, a few transforms, and a short timing table
// (wasm core vs pure-JS mode vs the plain function). The full benchmarks are `npm run bench`.
import {
  compile, createTape, createTapeSync, grad, hessian, init, jacobian, type Tape, type Var, type Vec,
} from 'tapegrad';

await init();

function line(label: string, value: string): void {
  console.log(`  ${label.padEnd(44)} ${value}`);
}

console.log('tapegrad showcase\n\nWorked examples (wasm core | pure-JS mode):');
const tapes = { wasm: await createTape(), js: await createTape({ backend: 'js' }) };
const both = (f: (tape: Tape) => string): string => `${f(tapes.wasm)} | ${f(tapes.js)}`;

line('sigmoid 1/(1+e^-x) at 0.5, d/dx', both((t) => {
  t.reset();
  const x = t.variable(0.5);
  t.backward(t.constant(1).div(x.neg().exp().add(1)));
  return x.grad.toFixed(4);
}));
line('log(x1) + x1*x2 - sin(x2) at (2, 5)', both((t) => {
  t.reset();
  const x1 = t.variable(2), x2 = t.variable(5);
  const f = x1.log().add(x1.mul(x2)).sub(x2.sin());
  const [g1, g2] = t.gradient(f, [x1, x2]);
  return `f=${f.value.toFixed(3)} grad=(${g1}, ${g2!.toFixed(4)})`;
}));
line('u = 3x, y = u^2 at 2: dy/dx, seed 1 and 4', both((t) => {
  t.reset();
  const x = t.variable(2);
  const y = x.mul(3).square();
  t.backward(y);
  const g1 = x.grad;
  t.backward(y, 4);
  return `${g1}, ${x.grad}`;
}));
line('y = x^2 + x at 3 (fan-out): 2x + 1', both((t) => {
  t.reset();
  const x = t.variable(3);
  t.backward(x.mul(x).add(x));
  return String(x.grad);
}));
line('u = x^2, y = 3u at 1, seed -2', both((t) => {
  t.reset();
  const x = t.variable(1);
  t.backward(x.pow(2).mul(3), -2);
  return String(x.grad);
}));

console.log('\nTransforms:');
const rosenbrock = (x: Var[]): Var => {
  let s: Var = x[0]!.mul(0);
  for (let i = 0; i + 1 < x.length; i++) {
    s = s.add(x[i + 1]!.sub(x[i]!.square()).square().mul(100)).add(x[i]!.neg().add(1).square());
  }
  return s;
};
line('grad(rosenbrock)([1.2, 1])', Array.from(grad(rosenbrock)([1.2, 1]), (v) => v.toFixed(2)).join(', '));
line('hessian(rosenbrock, [1.2, 1])', Array.from(hessian(rosenbrock, [1.2, 1]).data).join(', '));
const jac = jacobian((x: Var[]) => [x[0]!.mul(x[1]!), x[0]!.sin(), x[1]!.exp()], [0.5, 2]);
line(`jacobian of [x0*x1, sin x0, exp x1] (${jac.mode}, ${jac.sweeps} sweeps)`, Array.from(jac.data, (v) => v.toFixed(3)).join(', '));
const branchy = compile((x) => (x[0]!.gt(0).value ? x[0]!.square() : x[0]!.neg().sin()), { inputs: 1 });
line('compiled branch at 3 and -1 (re-records)', `${branchy.gradient([3])[0]}, ${branchy.gradient([-1])[0]!.toFixed(4)}; rerecords ${branchy.rerecords}`);

// Timing: the transcendental chain, record + reverse, median of 7 after warm-up.
const STEPS = 100_000, H = 1e-5;
function chainOnTape(tape: Tape): number {
  tape.reset();
  const x0 = tape.variable(0.3);
  let x = x0;
  for (let k = 0; k < STEPS; k++) x = x.add(x.sin().mul(x.cos().exp()).sub(x.square().log1p()).mul(H));
  tape.backward(x);
  return x0.grad;
}
function chainPlain(x0: number): number {
  let x = x0;
  for (let k = 0; k < STEPS; k++) x = x + H * (Math.sin(x) * Math.exp(Math.cos(x)) - Math.log1p(x * x));
  return x;
}
function median(run: () => unknown): number {
  const times: number[] = [];
  for (let r = 0; r < 10; r++) {
    const t0 = performance.now();
    run();
    if (r >= 3) times.push(performance.now() - t0);
  }
  return times.sort((p, q) => p - q)[times.length >> 1]!;
}
const wasmMs = median(() => chainOnTape(tapes.wasm));
const jsMs = median(() => chainOnTape(tapes.js));
const plainMs = median(() => chainPlain(0.3));
console.log(`\nTiming: ${STEPS} steps of x += 1e-5 (sin x e^cos x - log1p x^2), record + reverse, median ms:`);
line('wasm core', `${wasmMs.toFixed(2)} ms  (${(wasmMs / plainMs).toFixed(1)}x the plain function)`);
line('pure-JS mode', `${jsMs.toFixed(2)} ms  (wasm is ${(jsMs / wasmMs).toFixed(2)}x faster)`);
line('plain JS function, no derivative', `${plainMs.toFixed(2)} ms`);
line('tape bytes per node', `${tapes.wasm.nodeBytes}`);

// Record once, replay many: the same chain compiled, then replayed at new inputs.
const chainVars = (x: Var[]): Var => {
  let v = x[0]!;
  for (let k = 0; k < STEPS; k++) v = v.add(v.sin().mul(v.cos().exp()).sub(v.square().log1p()).mul(H));
  return v;
};
const generated = compile(chainVars, { inputs: 1, at: [0.3] });
const interpreted = compile(chainVars, { inputs: 1, at: [0.3], codegen: false });
const out = new Float64Array(1);
const generatedMs = median(() => generated.gradient([0.3], out));
const interpretedMs = median(() => interpreted.gradient([0.3], out));
console.log(`
The same chain compiled (${generated.size} nodes), one replayed gradient, median ms:`);
line(`generated sweeps ('${generated.generatedSweeps}')`, `${generatedMs.toFixed(2)} ms  (${(generatedMs / plainMs).toFixed(1)}x the plain function)`);
line('interpreted tape', `${interpretedMs.toFixed(2)} ms  (${(interpretedMs / plainMs).toFixed(1)}x)`);
// Vector ops: a logistic-regression loss over 2000 x 20 data, one node per array op.
const ROWS = 2000, COLS = 20;
let seed = 7;
const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const X = Float64Array.from({ length: ROWS * COLS }, random);
const labels = Float64Array.from({ length: ROWS }, () => (random() > 0 ? 1 : 0));
const w0 = Float64Array.from({ length: COLS }, () => 0.1 * random());
const loss = (w: Vec): Var => {
  const z = w.tape.constantVector(X, [ROWS, COLS]).matvec(w);
  return z.softplus().sub(z.mul(labels)).mean();
};
function lossPlain(w: Float64Array): number {
  let s = 0;
  for (let i = 0; i < ROWS; i++) {
    let z = 0;
    for (let j = 0; j < COLS; j++) z += X[i * COLS + j]! * w[j]!;
    s += Math.max(z, 0) + Math.log1p(Math.exp(-Math.abs(z))) - labels[i]! * z;
  }
  return s / ROWS;
}
const vectorOn = (tape: Tape): Float64Array => {
  tape.reset();
  const w = tape.vector(w0);
  return tape.gradient(loss(w), [w]);
};
const vecWasm = median(() => vectorOn(tapes.wasm));
const vecJs = median(() => vectorOn(tapes.js));
const vecPlain = median(() => lossPlain(w0));
const compiledLoss = compile(loss, { inputs: COLS, vector: true, at: w0 });
const gradient = new Float64Array(COLS);
const vecReplay = median(() => compiledLoss.gradient(w0, gradient));
tapes.wasm.reset();
const wv = tapes.wasm.vector(w0);
const lv = loss(wv);
// The same loss written with scalar Vars, recorded to count its nodes (a probe found the count
// printed here before, a guess, a third short).
const scalarNodes = ((): number => {
  const tape = createTapeSync();
  const w = tape.variables(w0);
  let s: Var = tape.constant(0);
  for (let i = 0; i < ROWS; i++) {
    let z: Var = w[0]!.mul(X[i * COLS]!);
    for (let j = 1; j < COLS; j++) z = z.add(w[j]!.mul(X[i * COLS + j]!));
    s = s.add(z.softplus().sub(z.mul(labels[i]!)));
  }
  s.div(ROWS);
  return tape.size;
})();
console.log(`\nVector ops: logistic-regression loss over ${ROWS} x ${COLS} data (${tapes.wasm.size} nodes; the same loss with scalar Vars records ${scalarNodes}), median ms:`);
line('wasm core, record + reverse', `${vecWasm.toFixed(3)} ms  (${(vecWasm / vecPlain).toFixed(1)}x the plain function)`);
line('pure-JS mode, record + reverse', `${vecJs.toFixed(3)} ms  (wasm is ${(vecJs / vecWasm).toFixed(2)}x faster)`);
line('compiled, one replayed gradient', `${vecReplay.toFixed(3)} ms  (${(vecReplay / vecPlain).toFixed(1)}x)`);
line('plain JS function, no derivative', `${vecPlain.toFixed(3)} ms; loss ${lv.value.toFixed(6)}`);

console.log('\nFull benchmarks, each implementation in processes of its own: npm run bench');
