import type { Var } from '../../src/index.ts';

export declare const INPUTS: number;
export declare function objective(x: Var[]): Var;
