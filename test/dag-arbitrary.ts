// Random computation graphs for property tests: a graph is some inputs in [-1, 1] plus an array of
// `{op, a, b}` nodes, each over earlier values. Shrinking drops nodes and inputs and lowers the
// operand numbers, so a failure shrinks towards a short chain.
//
// Each op below is one op of the table, wrapped with affine maps so that on [-1, 1] (with slack:
// every domain edge is at least 1 beyond it) the node stays in [-1, 1], is smooth, and the sum of
// the magnitudes of its partials is at most 1. So values stay in range however deep the graph,
// the gradient of a sum of n nodes has magnitude at most n (it cannot blow up along chains), and
// central differences stay meaningful. The offsets also keep 0 from being a quadratic attractor:
// a chain of x -> x^2 would underflow in ten steps and turn the check into a test of subnormals.
import fc from 'fast-check';
import type { Tape, Var } from '../src/index.ts';

type Recipe = (x: Var, z: Var) => Var;

export const DAG_OPS = {
  add: (x, z) => x.add(z).mul(0.5),
  sub: (x, z) => x.sub(z).mul(0.5),
  mul: (x, z) => x.mul(z).mul(0.5).add(0.25),
  div: (x, z) => x.div(z.add(3)),
  neg: (x) => x.neg(),
  recip: (x) => x.add(3).recip(),
  square: (x) => x.square().mul(0.5).sub(0.25),
  sqrt: (x) => x.add(2).sqrt().sub(1),
  // A negative argument: cbrt is odd, unlike pow with a fractional exponent.
  cbrt: (x) => x.sub(2).cbrt().add(1.2),
  pow: (x, z) => x.add(2).pow(z.mul(0.25)).sub(1),
  // A negative base with an integer exponent: the rule must not touch log(base).
  powConst: (x) => x.sub(2).pow(3).mul(1 / 27),
  exp: (x) => x.sub(1).exp(),
  expm1: (x) => x.mul(0.5).expm1(),
  log: (x) => x.add(3).log().sub(1),
  log1p: (x) => x.square().log1p().sub(0.5),
  log2: (x) => x.add(3).log2().sub(1.5),
  log10: (x) => x.add(2).log10(),
  sin: (x) => x.sin(),
  cos: (x) => x.cos(),
  tan: (x) => x.mul(0.5).tan(),
  asin: (x) => x.mul(0.5).asin(),
  acos: (x) => x.mul(0.5).acos().sub(1.5),
  atan: (x) => x.atan(),
  atan2: (x, z) => x.atan2(z.add(3)),
  sinh: (x) => x.mul(0.5).sinh(),
  cosh: (x) => x.mul(0.5).cosh().sub(1.1),
  tanh: (x) => x.tanh(),
  asinh: (x) => x.asinh(),
  acosh: (x) => x.add(3).acosh().sub(1.5),
  atanh: (x) => x.mul(0.5).atanh(),
  hypot: (x, z) => x.mul(0.5).hypot(z.mul(0.5).add(2)).sub(2),
  sigmoid: (x) => x.sigmoid(),
  softplus: (x) => x.softplus().sub(0.5),
  erf: (x) => x.mul(0.8).erf(),
  erfc: (x) => x.mul(0.8).erfc().sub(1),
  normCdf: (x) => x.normCdf().mul(2).sub(1),
  normLogCdf: (x) => x.mul(0.5).normLogCdf().add(0.7),
  ndtri: (x) => x.mul(0.25).add(0.5).ndtri(),
  lgamma: (x) => x.add(2.5).lgamma().mul(0.5),
  digamma: (x) => x.add(3).digamma().mul(0.5).sub(0.4),
} satisfies Record<string, Recipe>;

export type DagOpName = keyof typeof DAG_OPS;
export const DAG_OP_NAMES = Object.keys(DAG_OPS) as DagOpName[];

/** `a` and `b` pick operands among the values before the node (see `operandIndex`); unary ops
 *  ignore `b`. */
export interface DagNode {
  readonly op: DagOpName;
  readonly a: number;
  readonly b: number;
}

export interface Dag {
  /** The point: one value per input, each in [-1, 1]. */
  readonly inputs: readonly number[];
  readonly nodes: readonly DagNode[];
}

export interface DagOptions {
  maxInputs?: number;
  maxNodes?: number;
  ops?: readonly DagOpName[];
}

/** The value an operand number refers to, for a node with `available` values before it
 *  (inputs first, then nodes): 0 is the value just before, larger numbers reach further back.
 *  Taken modulo `available`, so every operand number is valid wherever shrinking moves it. */
export function operandIndex(available: number, raw: number): number {
  return available - 1 - (raw % available);
}

export function dagArbitrary(options: DagOptions = {}): fc.Arbitrary<Dag> {
  const ops = options.ops ?? DAG_OP_NAMES;
  const node = fc.record({ op: fc.constantFrom(...ops), a: fc.nat(), b: fc.nat() });
  return fc.record({
    inputs: fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 1, maxLength: options.maxInputs ?? 16, size: 'max' }),
    nodes: fc.array(node, { minLength: 1, maxLength: options.maxNodes ?? 500, size: 'max' }),
  });
}

export interface RecordedDag {
  inputs: Var[];
  /** One Var per graph node, in order. */
  nodes: Var[];
  /** The sum of every node: each node reaches the output, none is dead code. */
  output: Var;
}

/** The graph's nodes applied to `inputs`, one Var per step, in order. */
export function* dagSteps(dag: Dag, inputs: readonly Var[]): Generator<Var, void, void> {
  const values: Var[] = [...inputs];
  for (const { op, a, b } of dag.nodes) {
    const n = values.length;
    const v = DAG_OPS[op](values[operandIndex(n, a)]!, values[operandIndex(n, b)]!);
    values.push(v);
    yield v;
  }
}

/** The graph's nodes applied to `inputs`, one Var per node, in order. */
export function dagNodes(dag: Dag, inputs: readonly Var[]): Var[] {
  return [...dagSteps(dag, inputs)];
}

/** Records the graph on `tape` at `point` (default: the graph's own inputs). */
export function recordDag(tape: Tape, dag: Dag, point: ArrayLike<number> = dag.inputs): RecordedDag {
  const inputs = tape.variables(point);
  const nodes = dagNodes(dag, inputs);
  let output = nodes[0]!;
  for (let k = 1; k < nodes.length; k++) output = output.add(nodes[k]!);
  return { inputs, nodes, output };
}

/** A random DAG as a function of its inputs; the outputs are the nodes numbered in `picks`
 *  (modulo the node count) followed by the sum of all nodes. */
export function dagFunction(dag: Dag, picks: readonly number[] = []): (x: Var[]) => Var[] {
  return (x) => {
    const nodes = dagNodes(dag, x);
    const sum = nodes.reduce((s, v) => s.add(v));
    return [...picks.map((p) => nodes[p % nodes.length]!), sum];
  };
}

/** The graph's output at `point`, by recording it again from a reset tape. */
export function dagValue(tape: Tape, dag: Dag, point: ArrayLike<number>): number {
  tape.reset();
  return recordDag(tape, dag, point).output.value;
}

/** The sum of every node of the graph, as a function of its inputs. */
export function dagSum(dag: Dag): (x: Var[]) => Var {
  return (x) => dagNodes(dag, x).reduce((s, v) => s.add(v));
}
