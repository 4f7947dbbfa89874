import type { Tape, Var, Vec } from '../../../src/index.ts';

export declare const VECTOR_PROGRAMS: readonly { name: string; exact: boolean; point: number[]; f: (tape: Tape, x: Vec) => Var }[];
