import type * as tapegrad from '../../../src/index.ts';

export interface VectorRun { name: string; value: number; grad: number[]; hv: number[]; numeric: number[] }
export declare function runVectorPrograms(api: typeof tapegrad, backend: 'wasm' | 'js'): VectorRun[];
export declare function makeSuite(api: typeof tapegrad, fc: unknown): unknown;
