// The SIMD build: everything the scalar core exports, plus the two-row batched replay kernel.
// Compiled with --enable simd; the loader uses it where the runtime validates it.
export * from './index';
export { gradientBatchSimd } from './simd';
