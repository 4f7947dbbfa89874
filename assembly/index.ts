// The exports the façade calls. Memory is exported as `memory`; the façade derives its
// typed-array views from the *Ptr getters after every call that may grow memory.
export { reserve, enableTangents, fitCapacities, nodeBytes, reserveElements, setLiveElements, elementBytes } from './layout';
export {
  forward, reverse, tangent, reverseTangent, clearAdjoints, sweepReverse, sweepReverseTangent,
  firstNonFinite,
} from './sweeps';
export { opName, opArity } from './ops';
import {
  capacity, regionCount, valBase, adjBase, aBase, bBase, opBase, tanBase, tanAdjBase, elemCapacity, xvalBase, xadjBase,
  xtanBase, xtanAdjBase,
} from './layout';
import { Op } from './ops';

export function opCount(): i32 { return Op.Count; }
export function getCapacity(): i32 { return capacity; }
export function tangentsEnabled(): i32 { return regionCount > 5 ? 1 : 0; }
export function valPtr(): usize { return valBase; }
export function adjPtr(): usize { return adjBase; }
export function aPtr(): usize { return aBase; }
export function bPtr(): usize { return bBase; }
export function opPtr(): usize { return opBase; }
export function tanPtr(): usize { return tanBase; }
export function tanAdjPtr(): usize { return tanAdjBase; }
export function getElementCapacity(): i32 { return elemCapacity; }
export function xvalPtr(): usize { return xvalBase; }
export function xadjPtr(): usize { return xadjBase; }
export function xtanPtr(): usize { return xtanBase; }
export function xtanAdjPtr(): usize { return xtanAdjBase; }
export {
  replayForward, gradientBatch, setBatchSeeds, setGeneratedSweeps, setVectorInput, sweepReverseReplay, tangentReplay, reverseTangentReplay,
  replayForwardTangent, reverseTangentFused, ruleForward, rulePartials, rulePartialZ, rulePartialsTangent, rulePartialZTangent,
} from './replay';
export { scratch } from './layout';
export { setRunFusion, setKeepAdjoints, setHvpOutput, setGradientOutput, materialize, materializeAllTangents, materializeTangent, clearLeafTangents, forgetRunKernels } from './vector';
export { countUses, nextLinks, planSegments, repeatsOf } from './planning';
export { writeDispatcher } from './dispatch';
export { buildSchedule, dropSchedule, reserveStepTable, scheduleCellAddress } from './schedule';
