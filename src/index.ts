// The public surface of tapegrad. Everything users may import is listed here, nothing else.
export { createTape, createTapeSync, init, coreModule, type TapeOptions, type InitOptions } from './create.ts';
export { Tape, Var, HandleApi, opArity, type Operand, type TapeLimits } from './tape.ts';
export { Vec, VectorHandleApi, broadcastShapes, type VecOperand, type Shape } from './vector.ts';
export type { BackendKind, BackendChoice } from './backend.ts';
export type { GeneratedSweeps } from './wasm/backend.ts';
export {
  TapegradError, StaleHandleError, ForeignHandleError, InvalidHandleError, NotANumberError,
  CapacityError, BranchChangedError, FormatError, NonFiniteError, MissingRuleError, ShapeError, GradcheckError,
  type TapegradErrorCode,
} from './errors.ts';
export { Op, OP_NAMES, OP_TABLE, SCALAR_OP_TABLE, ELEMENTWISE, opNameOf, type OpName, type VectorOpName, type UnaryOpName, type BinaryOpName } from './ops.ts';
export {
  neg, recip, square, sqrt, cbrt, exp, expm1, log, log1p, log2, log10, sin, cos, tan, asin, acos,
  atan, sinh, cosh, tanh, asinh, acosh, atanh, abs, sigmoid, softplus, relu, floor, ceil, round,
  sign, stopGradient, add, sub, mul, div, pow, atan2, min, max, hypot, lt, le, gt, ge, eq, select,
  where, erf, erfc, normCdf, normLogCdf, ndtri, lgamma, digamma,
} from './functions.ts';
export {
  gradcheck, finiteDifferenceGradient, normwiseError, type GradcheckOptions, type GradcheckResult,
  type FiniteDifferenceOptions, type ScalarFunction,
} from './check.ts';
export {
  grad, valueAndGrad, vjp, jvp, jacobian, hvp, hessian, type Input, type ScalarOutput, type VectorOutput,
  type TransformOptions, type JacobianOptions, type JacobianResult, type Matrix, type RuntimeVector,
} from './transforms.ts';
export { defineFunction, type CustomRule, type CustomFunction } from './custom.ts';
export {
  compile, CompiledFunction, type CompileOptions, type CompilableFunction, type VectorCompilableFunction, type CompiledOutput, type CompiledValue,
} from './compile.ts';
export { fromBytes, FORMAT_VERSION, type FromBytesOptions } from './serialize.ts';
