// sin and cos with a detour for large arguments. AssemblyScript 0.28's Math.sin/cos reduce
// arguments in [2^20·π/2, 2^22) with a table read that starts 8 bytes before its table, and get
// the sign wrong for about half of them (found by test/op-parity.test.ts). Below 1e6 the std
// implementation is right; from there on the host's Math (fdlibm in V8) does the reduction.

// @ts-ignore: decorator
@external('env', 'hostSin') declare function hostSin(x: f64): f64;
// @ts-ignore: decorator
@external('env', 'hostCos') declare function hostCos(x: f64): f64;

// @ts-ignore: decorator
@inline const LARGE: f64 = 1e6;

// @ts-ignore: decorator
@inline export function sin(x: f64): f64 {
  return Math.abs(x) < LARGE ? Math.sin(x) : hostSin(x);
}

// @ts-ignore: decorator
@inline export function cos(x: f64): f64 {
  return Math.abs(x) < LARGE ? Math.cos(x) : hostCos(x);
}
