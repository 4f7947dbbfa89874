// Type-level tests of the public API, checked by `npm run typecheck` (never run): the assignments
// must compile under strict mode without casts, and each `@ts-expect-error` line must be an error,
// so the overloads cannot quietly widen (Var in, Var out; number for a scalar compiled function).
import {
  add, compile, createTapeSync, exp, finiteDifferenceGradient, grad, gradcheck, hessian, hvp, jacobian, jvp, max, mul, select,
  sin, sqrt, valueAndGrad, vjp, where, type CompiledFunction, type GradcheckResult, type JacobianResult, type Matrix,
  type Operand, type Var, type Vec, type TransformOptions, type GradcheckOptions, type CompileOptions, type JacobianOptions, type RuntimeVector,
} from '../../src/index.ts';

declare const tape: ReturnType<typeof createTapeSync>;
declare const a: Var, b: Var, v: Vec;

// Free functions keep the kind of their operands.
const selected: Var = select(a.gt(0), a, b);
const selectedMixed: Var = where(a.gt(0), a.log(), 0);
const selectedNumber: number = select(1, 2, 3);
const selectedVec: Vec = where(v.gt(0), v, 0);
const product: Var = mul(a, 2);
const productNumber: number = mul(2, 3);
const sine: Var = sin(a);
const larger: Vec = max(v, a);
// @ts-expect-error: a Var among the operands never gives a number
const notANumber: number = select(a, 1, 2);
// An operand typed any counts as a number: beside a Var a Var, alone or with numbers a number
// (a probe: `mul(v, k)` for a `k: any` from JSON.parse was typed number).
declare const fromJson: any;
const anyAndVar: Var = mul(a, fromJson);
const anyFirst: Var = add(fromJson, a);
const anyCondition: Var = select(fromJson, a, b);
const anyAndNumber: number = add(fromJson, 1);
// @ts-expect-error: neither does a Vec give a Var
const notAVar: Var = where(v, 1, 2);
// A unary function as a callback keeps its operands' kind (a probe: `xs.map(exp)` of Vars was a
// (Vec | Operand)[], typed by the last overload, a catch-all).
declare const vars: Var[], vecs: Vec[], either: Var | Vec, operand: Operand;
const mappedVars: Var[] = vars.map(exp);
const mappedNumbers: number[] = [1, 4].map(sqrt);
const mappedVecs: Vec[] = vecs.map(sin);
const sineOfEither: Operand | Vec = sin(either);
const sineOfOperand: Operand = sin(operand);
const sineOfAny: Operand | Vec = sin(fromJson);
// In generic functions, the constraint's kind (a review: a Vec's `sum` was missing, a number's
// arithmetic refused).
const layerSum = <T extends Vec>(x: T): Var => sin(x).sum();
const half = <T extends number>(x: T): number => exp(x) / 2;
const ofOperand = <T extends Operand>(x: T): Operand => sqrt(x);
// @ts-expect-error: a Var never gives a number
const sineNotANumber: number = sin(a);
// @ts-expect-error: nor a Vec a Var
const sineNotAVar: Var = sin(v);

// One calling convention: a number x gives f one Var, an array x a Var[], { vector: true } a Vec.
const rosen = (x: Var[]): Var => x[1]!.sub(x[0]!.square()).square().mul(100).add(x[0]!.neg().add(1).square());
const g1: number = grad((x: Var) => x.sin())(0);
const g2: Float64Array = grad(rosen)([1.2, 1]);
const g3: Float64Array = grad((x: Vec) => x.square().sum(), { vector: true })(new Float64Array(3));
const vg: [number, Float64Array] = valueAndGrad(rosen)([1.2, 1]);
const check: GradcheckResult = gradcheck((x) => x[0]!.mul(x[1]!).sin(), [0.3, 1.2]);
const checkScalar: GradcheckResult = gradcheck((x) => x.exp(), 0.5);
const checkVec: GradcheckResult = gradcheck((x) => x.sumSquares(), [1, 2], { vector: true });
const secondOrder: number = gradcheck((x) => x[0]!.exp(), [0.5], { order: 2 }).secondOrderError;
// @ts-expect-error: order is 1 or 2
gradcheck((x) => x[0]!.exp(), [0.5], { order: 3 });
// The function's parameter is typed from x without annotation, in every transform.
const vjpResult: Float64Array = vjp((x) => [x[0]!.mul(x[1]!), x[0]!.sin()], [0.5, 2], [1, 3]);
const jvpResult: Float64Array = jvp((x) => x.exp(), 1, 1);
const jac: JacobianResult = jacobian((x) => [x[0]!.mul(x[1]!)], [0.5, 2], { mode: 'reverse' });
const hv: Float64Array = hvp((x) => x.sumSquares(), [1, 2], [1, 0], { vector: true });
const hess: Matrix = hessian((x) => x.square().mul(x), 2);
const fd: Float64Array = finiteDifferenceGradient((p) => p[0]! * p[1]!, [1, 2]);
const fdScalar: number = finiteDifferenceGradient((p) => p * p, 3);
// @ts-expect-error: gradcheck takes a function of one array, not one Var per input
gradcheck((x: Var, y: Var) => x.mul(y), [1, 2]);
// @ts-expect-error: a Var[] function with a number input
grad(rosen)(2);
// @ts-expect-error: an unknown jacobian mode
jacobian(rosen, [1, 2], { mode: 'bogus' });

// Options whose `vector` is known only at run time still type-check (the result is then wider).
declare const runtimeOptions: TransformOptions, runtimeCheck: GradcheckOptions, runtimeCompile: CompileOptions;
const anyForm: Float64Array = vjp(rosen, [1, 2], [1], runtimeOptions);
const anyJacobian: JacobianResult = jacobian(rosen, [1, 2], runtimeOptions);
const anyHessian: Matrix = hessian(rosen, [1, 2], runtimeOptions);
const anyCheck: GradcheckResult = gradcheck(rosen, [1, 2], runtimeCheck);
const anyCompiled: number | Float64Array = compile(rosen, runtimeCompile).value([1, 2]);
declare const flag: boolean;
const flagged: Float64Array | number = grad((x: Vec) => x.sum(), { vector: flag })([1, 2]);
const flaggedJs: Float64Array | number = grad((x: Vec) => x.sum(), { vector: flag, backend: 'js' })([1, 2]);
const flaggedCheck: GradcheckResult = gradcheck(rosen, [1, 2], { vector: flag, tolerance: 1e-6 });
const flaggedCompile: number | Float64Array = compile(rosen, { inputs: 2, vector: flag, checkNaN: true }).value([1, 2]);
// A misspelt key with such a `vector` is refused as in a literal (a probe: it passed, and every
// call threw INVALID_ARGUMENT at run time).
// @ts-expect-error: gradcheck takes no 'tolerence'
gradcheck(rosen, [1, 2], { vector: flag, tolerence: 1e-9 });
// @ts-expect-error: compile takes no 'chekNaN'
compile(rosen, { inputs: 2, vector: flag, chekNaN: true });
// @ts-expect-error: jacobian takes no 'mdoe'
jacobian(rosen, [1, 2], { vector: flag, mdoe: 'reverse' });
// @ts-expect-error: grad takes no 'backnd'
grad(rosen, { vector: flag, backnd: 'js' });
// ...but a literal `vector` (or none) picks the overload of its form: f of the other form is refused.
// @ts-expect-error: a Vec function without { vector: true }
grad((x: Vec) => x.sum());
// @ts-expect-error: the same with other options
hvp((x: Vec) => x.sum(), [1, 2], [1, 0], { backend: 'js' });
// @ts-expect-error: a Var[] function with { vector: true }
grad((x: Var[]) => x[0]!, { vector: true });
// @ts-expect-error: a one-Var function at an array
hessian((x: Var) => x.exp(), [1, 2]);
// @ts-expect-error: a Var[] function at a number
jvp((x: Var[]) => x[0]!.exp(), 1, 1);
// @ts-expect-error: gradcheck of a Var[] function with { vector: true }
gradcheck((x: Var[]) => x[0]!.exp(), [1], { vector: true });
// @ts-expect-error: compile of a Vec function without { vector: true }
compile((x: Vec) => x.sum(), { inputs: 2 });
// @ts-expect-error: compile of a Var[] function with { vector: true }
compile((x: Var[]) => x[0]!, { inputs: 2, vector: true });

// compile: value is a number for a scalar function, a Float64Array for a vector one.
const scalarCompiled: CompiledFunction<number> = compile((x) => x[0]!.mul(x[1]!), { inputs: 2 });
const scalarValue: number = scalarCompiled.value([1, 2]);
const intoOut: Float64Array = scalarCompiled.value([1, 2], new Float64Array(1));
const constantValue: number = compile(() => 3, { inputs: 1 }).value([0]);
const vectorValue: Float64Array = compile((x) => [x[0]!, x[1]!.exp()], { inputs: 2 }).value([1, 2]);
const vecValue: Float64Array = compile((x) => x.exp(), { inputs: 2, vector: true }).value([1, 2]);
const vecScalarValue: number = compile((x) => x.sum(), { inputs: 2, vector: true }).value([1, 2]);
// @ts-expect-error: a vector function's value is not a number
const wrongValue: number = compile((x) => [x[0]!], { inputs: 1 }).value([1]);
// @ts-expect-error: nor a scalar function's an array
const wrongArray: Float64Array = compile((x) => x[0]!.sin(), { inputs: 1 }).value([1]);

// 'auto' is a backend wherever one is taken, as createTape's; other strings are not.
const autoGrad: Float64Array = grad((x: Var[]) => x[0]!.exp(), { backend: 'auto' })([1]);
const autoCompiled: CompiledFunction = compile((x) => x[0]!.sin(), { inputs: 1, backend: 'auto' });
const autoCheck: GradcheckResult = gradcheck((x: Var[]) => x[0]!.exp(), [1], { backend: 'auto' });
// @ts-expect-error: no such backend
grad((x: Var[]) => x[0]!.exp(), { backend: 'gpu' });

// The Tape API keeps Vars.
const tapeSelected: Var = tape.select(a.lt(b), a, b);
const tapeVec: Vec = tape.select(v.gt(0), v, 0);

export const used = [
  selected, selectedMixed, selectedNumber, selectedVec, product, productNumber, sine, larger, notANumber, notAVar, g1, g2,
  g3, vg, check, checkScalar, checkVec, vjpResult, jvpResult, jac, hv, hess, fd, fdScalar, scalarValue, intoOut,
  constantValue, vectorValue, vecValue, vecScalarValue, wrongValue, wrongArray, tapeSelected, tapeVec,
  anyAndVar, anyFirst, anyCondition, anyAndNumber, anyForm, anyJacobian, anyHessian, anyCheck, anyCompiled, autoGrad, autoCompiled, autoCheck,
  flaggedJs, flaggedCheck, flaggedCompile,
];

// Options passed on from a wrapper's optional parameter (a probe: every transform refused
// `opts?: TransformOptions`, and RuntimeVector, which the overloads use, was not exported).
export function gradOf(opts?: TransformOptions): (x: never) => number | Float64Array { return grad(rosen, opts); }
export function jacobianOf(opts?: JacobianOptions): JacobianResult { return jacobian(rosen, [1, 2], opts); }
export function checkOf(opts?: GradcheckOptions): GradcheckResult { return gradcheck(rosen, [1, 2], opts); }
export function hvpOf(opts?: TransformOptions): Float64Array { return hvp(rosen, [1, 2], [1, 0], opts); }
export function hessianOf(opts?: TransformOptions): Matrix { return hessian(rosen, [1, 2], opts); }
export function vjpOf(opts?: TransformOptions): Float64Array { return vjp(rosen, [1, 2], [1], opts); }
export function jvpOf(opts?: TransformOptions): Float64Array { return jvp(rosen, [1, 2], [1, 0], opts); }
export function valueAndGradOf(opts?: TransformOptions): (x: never) => [number, number | Float64Array] { return valueAndGrad(rosen, opts); }
export function generic<O extends TransformOptions>(o: O): (x: never) => number | Float64Array { return grad(rosen, o as TransformOptions); }
type Exported = RuntimeVector<{ vector: boolean }>;
