// Fused run kernels: one wasm loop per elementwise run (see "fused runs" in assembly/vector.ts),
// generated from the run's signature and cached by it, so a tape recorded again reuses them.
//
// The block sweep runs node by node, each node a loop that loads its operands and stores its
// result (forward) or loads its adjoint and adds into its operands' (reverse). A kernel runs the
// element loop once: forward, every node's value per element with run-internal operands in
// registers; reverse, every active node's terms from last to first, the adjoints of run nodes in
// registers until their own turn. It stores what the block sweep stores and performs, per
// element and per adjoint slot, the same operations in the same order (the per-op rules of
// `reverseBlock`, zero-adjoint and zero-partial skips included), so results are bit-identical.
//
// Signature (i32 words): kind (1 reverse, 2 sum: the run takes in a sum of its last node, see
// below; 4 neighbours: it absorbs two slices of one parent, m = 0 starting one element after
// m = 1; 8 fresh parent: that parent is [0, len] and no rule reached it before, see emitRun;
// 16 value: a reverse kernel with a sum also adds the sum up, whose forward was left to it),
// count, then per node in ascending order: scalar op s, operand a's kind, operand b's kind,
// flags (reverse: 1 active, 2 store a, 4 store b; both sweeps: 8 deferred, its values not in
// memory: the forward kernel does not store them, the reverse kernel recomputes them per element,
// with the forward kernel's operations; reverse: 16 drop, its final adjoint is not stored; 32, 64:
// operand a, b is a scalar constant that is finite and nonzero). A kind
// is a run node's index, or KIND_* below. Parameters (i32 words per node): value and adjoint
// addresses of the node, of operand a, of operand b (elements or scalar slot), and its broadcast
// terms' slot; then the address of the sum's slot. A forward kernel with a sum adds up the last
// node's values in the order of the core's sum4 (four interleaved partial sums over groups of four
// elements, the rest into the first three, (s0 + s2) + (s1 + s3)) and stores the sum there; a
// reverse kernel with a sum reads the last node's adjoint there, the same for every element.
import { Op, SCALAR_OP_TABLE, ZERO_GRADIENT } from '../../ops.ts';
import {
  Bytes, F64, I32, W_Block, W_Br, W_BrIf, W_Call, W_Else, W_End, W_F64Add, W_F64Load, W_F64Mul, W_F64Ne, W_F64Neg,
  W_F64Eq, W_F64Store, W_I32Add, W_I32And, W_I32Eqz, W_I32GtU, W_I32Load, W_I32Mul, W_I32Or, W_I32Sub, W_If, W_Loop, W_Select, W_Void,
} from './wasm.ts';
import { assembleModule, IMPORTED } from './module.ts';
import {
  emitCoreSecondOrder, emitSecondOrder, FN_FORWARD, FN_PARTIAL_Z, FN_PARTIALS, LINEAR, NATIVE_BINARY, NATIVE_PARTIAL, SECOND_ORDER,
} from './rules.ts';

// SIMD (f64x2) opcodes, after the 0xfd prefix.
const V128 = 0x7b;
const S_Load = 0x00, S_Store = 0x0b, S_Shuffle = 0x0d, S_Splat = 0x14, S_Extract = 0x21, S_Replace = 0x22, S_Ne = 0x48, S_And = 0x4e;
const S_AnyTrue = 0x53;
const S_Neg = 0xed, S_Add = 0xf0, S_Sub = 0xf1, S_Mul = 0xf2, S_Div = 0xf3;
const SIMD_NATIVE: Partial<Record<number, number>> = { [Op.add]: S_Add, [Op.sub]: S_Sub, [Op.mul]: S_Mul, [Op.div]: S_Div };

// The core's Math.max(x, 0), Math.abs, Math.max, Math.min, Math.floor and Math.ceil, which are
// f64.max, abs, min, floor, ceil there; stopGradient's x (0: no instruction).
const NATIVE_FORWARD: Partial<Record<number, number>> = {
  [Op.relu]: 0xa5, [Op.abs]: 0x99, [Op.max]: 0xa5, [Op.min]: 0xa4, [Op.floor]: 0x9c, [Op.ceil]: 0x9b, [Op.stopGradient]: 0,
};

const KIND_VECTOR = -1, KIND_VECTOR_CONSTANT = -2, KIND_SCALAR = -3, KIND_SCALAR_CONSTANT = -4;
// A slice the reverse kernel absorbs (assembly/vector.ts, "Slices"): KIND_SLICE - m for the m-th,
// highest node first. Its terms sum in a register per element; the totals go to the parent's
// adjoints (the operand's adjoint address) after every node, lane by lane: a parent element takes
// them element by element, so in falling order of the slices' starts, which the core only allows
// where that is the sweep's order. As f64: slices of one parent overlap, and a pair stored over
// half of another pair just stored would stall.
const KIND_SLICE = -16, ABSORB_MAX = 8;
const sliceOf = (kind: number): number => (kind <= KIND_SLICE ? KIND_SLICE - kind : -1);
const ACTIVE = 1, STORE_A = 2, STORE_B = 4, DEFER = 8, DROP = 16, FINITE_A = 32, FINITE_B = 64, TANGENT_DEFER = 128;
const PARAM_WORDS = 7;

interface Node { s: number; a: number; b: number; flags: number; unary: boolean }

/** Whether the kernels spell every op of a run (select, with its third operand, is left to the
 *  block sweep). */
function parse(signature: Int32Array): { reverse: boolean; sum: boolean; neighbours: boolean; fresh: boolean; value: boolean; tangent: boolean; nodes: Node[] } | null {
  const reverse = (signature[0]! & 1) !== 0, sum = (signature[0]! & 2) !== 0, neighbours = (signature[0]! & 4) !== 0;
  const fresh = (signature[0]! & 8) !== 0, value = (signature[0]! & 16) !== 0, tangent = (signature[0]! & 32) !== 0;
  const count = signature[1]!;
  const nodes: Node[] = [];
  for (let k = 0; k < count; k++) {
    const w = 2 + 4 * k;
    const s = signature[w]!;
    const entry = SCALAR_OP_TABLE[s];
    if (!entry || s === Op.select || s === Op.custom || s <= Op.arg) return null;
    nodes.push({ s, a: signature[w + 1]!, b: signature[w + 2]!, flags: signature[w + 3]!, unary: entry[1] === 1 });
  }
  return { reverse, sum, neighbours, fresh, value, tangent, nodes };
}

/** The wasm module of a run kernel `run(params, from, len)`, or null when it has an op the
 *  kernels leave to the block sweep. With `simd`, pairs of elements go through f64x2 lanes (each
 *  lane the scalar rule: masks where it skips a term, lane-by-lane calls to out-of-line rules,
 *  broadcast terms added lane 0 then lane 1) and an odd last element through the scalar loop. */
export function emitRunKernel(signature: Int32Array, simd: boolean): Uint8Array<ArrayBuffer> | null {
  const parsed = parse(signature);
  if (!parsed) return null;
  const body = parsed.tangent ? (parsed.reverse ? emitReverseTangentRun(parsed.nodes, simd, parsed.sum) : emitTangentRun(parsed.nodes, simd, parsed.sum))
    : emitRun(parsed.nodes, parsed.reverse, parsed.sum, parsed.neighbours, parsed.fresh, parsed.value, simd);
  return assembleModule([[0x60, 3, I32, I32, I32, 0]], [0], [['run', IMPORTED]], [body]);
}

// Locals: 0 params, 1 from, 2 len; then i32: the element byte offset, its end, the seven
// parameter words of every node and the sum's slot; then f64: the value of each scalar operand
// (a, b per node), each node's terms (a, b), and a lane's scratch (x, z, p, q); then one group of
// a register per node (its adjoint in reverse, its value in forward), the temporaries g, x, z, p,
// q, t, a value register per node (reverse), and per absorbed slice its total and its elements,
// in f64 (the scalar loop) and in v128 (the SIMD loop, where scalar operands are also splatted);
// then the sum's partial sums, and the SIMD loop's pairs of them, carry, constants and NaN lanes.
function locals(count: number, mode: 'plain' | 'tangent' | 'reverseTangent' = 'plain') {
  const second = mode === 'reverseTangent', tangents = mode !== 'plain';
  const e = 3, end = 4, word = (k: number, w: number) => 5 + PARAM_WORDS * k + w;
  const sumAt = 5 + PARAM_WORDS * count;
  // A reverse tangent kernel's second block of parameter words (tangent and adjoint tangent
  // addresses), after the first.
  const word2 = (k: number, w: number) => sumAt + 1 + PARAM_WORDS * k + w;
  const f64 = sumAt + 1 + (second ? PARAM_WORDS * count : 0);
  const plainGroup = 2 * count + 6 + 2 * ABSORB_MAX;
  const group = (base: number) => ({
    reg: (k: number) => base + k, g: base + count, x: base + count + 1, z: base + count + 2,
    p: base + count + 3, q: base + count + 4, t: base + count + 5, val: (k: number) => base + count + 6 + k,
    slice: (m: number) => base + 2 * count + 6 + m,
    sliceValue: (m: number) => base + 2 * count + 6 + ABSORB_MAX + m,
    // A reverse tangent kernel's: run nodes' adjoint tangents and tangents, and temporaries.
    regT: (k: number) => base + plainGroup + k, tan: (k: number) => base + plainGroup + count + k,
    gt: base + plainGroup + 2 * count, dp: base + plainGroup + 2 * count + 1, dq: base + plainGroup + 2 * count + 2,
    /** Node k's terms for targets outside the run: a's adjoint, b's, a's adjoint tangent, b's. */
    site: (k: number, i: number) => base + plainGroup + 2 * count + 3 + 4 * k + i,
    /** An absorbed slice's totals: its adjoint's, its adjoint tangent's. */
    sliceTotal: (m: number, tangent: boolean) => base + plainGroup + 6 * count + 3 + (tangent ? ABSORB_MAX : 0) + m,
  });
  const groupSize = plainGroup + (second ? 6 * count + 3 + 2 * ABSORB_MAX : 0);
  const partials = f64 + 4 * count + 4 + groupSize;
  const plainF64 = 4 * count + 4 + groupSize + 4;
  const f64Count = plainF64 + (second ? 4 * count : 0);
  const v128 = f64 + f64Count;
  const plainV128 = groupSize + 2 * count + 4 + SPLATTED.length;
  return {
    e, end, word, word2, sumAt,
    /** The sum's four partial sums (f64), and their pairs in the SIMD loop (v128). */
    partial: (k: number) => partials + k,
    pair: (k: number) => v128 + groupSize + 2 * count + k,
    /** Neighbouring slices: the upper one's totals of the pair before (see emitRun). */
    carry: v128 + groupSize + 2 * count + 2,
    /** The SIMD loop's constants, splatted in the prologue (SPLATTED). */
    splatted: (c: number) => v128 + groupSize + 2 * count + 3 + SPLATTED.indexOf(c),
    /** A whole-call speculation's slice totals added up over the pairs so far: NaN in a lane
     *  where one was (see emitSpeculative and emitRetry). */
    nans: v128 + groupSize + 2 * count + 3 + SPLATTED.length,
    /** The tangent kernels' scalar operands' tangents, splatted (their f64 in `terms` in a
     *  tangent kernel, `scalarTangent` in a reverse tangent kernel). */
    tangentSplat: (k: number, b: boolean) => v128 + plainV128 + 2 * k + (b ? 1 : 0),
    scalar: (k: number, b: boolean) => f64 + 2 * k + (b ? 1 : 0),
    terms: (k: number, b: boolean) => f64 + 2 * count + 2 * k + (b ? 1 : 0),
    /** A reverse tangent kernel's scalar operands' adjoint tangent terms, and their tangents. */
    tangentTerms: (k: number, b: boolean) => f64 + plainF64 + 2 * k + (b ? 1 : 0),
    scalarTangent: (k: number, b: boolean) => f64 + plainF64 + 2 * count + 2 * k + (b ? 1 : 0),
    lane: { x: f64 + 4 * count, z: f64 + 4 * count + 1, p: f64 + 4 * count + 2, q: f64 + 4 * count + 3 },
    f64: group(f64 + 4 * count + 4),
    v128: { ...group(v128), splat: (k: number, b: boolean) => v128 + groupSize + 2 * k + (b ? 1 : 0) },
    declare(fn: Bytes) {
      fn.u32(3);
      fn.u32(3 + PARAM_WORDS * count * (second ? 2 : 1)); fn.byte(I32);
      fn.u32(f64Count); fn.byte(F64);
      fn.u32(plainV128 + (tangents ? 2 * count : 0)); fn.byte(V128);
    },
  };
}
type Locals = ReturnType<typeof locals>;

// Constants the SIMD loops use (zero, square's 2, neg's -1, and the last two negated for a
// register holding a negated adjoint), splatted once per call.
const SPLATTED = [0, 2, -1, 1, -2];

const isScalar = (kind: number): boolean => kind === KIND_SCALAR || kind === KIND_SCALAR_CONSTANT;
/** Whether an operand of this kind takes adjoint terms (constants do not). */
const wants = (kind: number): boolean => kind !== KIND_VECTOR_CONSTANT && kind !== KIND_SCALAR_CONSTANT;

function simdOp(fn: Bytes, op: number): void {
  fn.byte(0xfd); fn.u32(op);
}

// How one loop body reads, computes and writes: the scalar loop one element (f64), the SIMD loop
// two (v128). Every emitter below is written once against this.
interface Lanes {
  width: number;
  R: Locals['f64'];
  /** While set, `masked` multiplies without masking (the speculative body, see emitRun). */
  unmasked: boolean;
  load(): void;
  store(): void;
  scalarOperand(k: number, b: boolean): void;
  zero(): void;
  constant(c: number): void;
  /** add, sub, mul or div. */
  binary(op: number): void;
  neg(): void;
  mul(): void;
  add(): void;
  /** t = g != 0 && p != 0 ? g * p : 0 into local t, p a local; with `finite`, p is known finite
   *  and nonzero, and t = g·p: where g = 0 that is ±0, which adds nothing to an adjoint (never
   *  -0) and starts a fresh one at +0 + t = +0, as the rule's 0 would. */
  masked(p: number, finite?: boolean): void;
  /** For each lane: the lane's value of the expressions on the stack is set into lane locals;
   *  then `perLane(lane)` leaves an f64, gathered into a vector of the lanes. */
  eachLane(inputs: (() => void)[], scratch: number[], perLane: () => void): void;
  /** Adds the lanes of local t, in order, to local `acc` (f64). */
  addLanesTo(acc: number): void;
}

function scalarLanes(fn: Bytes, L: Locals): Lanes {
  const R = L.f64;
  return {
    width: 1, R, unmasked: false,
    load: () => fn.memory(W_F64Load, 0),
    store: () => fn.memory(W_F64Store, 0),
    scalarOperand: (k, b) => fn.get(L.scalar(k, b)),
    zero: () => fn.f64Const(0),
    constant: (c) => fn.f64Const(c),
    binary(op) { fn.byte(NATIVE_BINARY[op]!); },
    neg: () => fn.byte(W_F64Neg),
    mul: () => fn.byte(W_F64Mul),
    add: () => fn.byte(W_F64Add),
    masked(p, finite) {
      fn.get(R.g); fn.get(p); fn.byte(W_F64Mul);
      if (finite) { fn.set(R.t); return; }
      fn.f64Const(0);
      fn.get(R.g); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.get(p); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_I32And);
      fn.byte(W_Select);
      fn.set(R.t);
    },
    eachLane(inputs, scratch, perLane) {
      inputs.forEach((input, i) => { input(); fn.set(scratch[i]!); });
      perLane();
    },
    addLanesTo(acc) { fn.get(acc); fn.get(R.t); fn.byte(W_F64Add); fn.set(acc); },
  };
}

function simdLanes(fn: Bytes, L: Locals): Lanes {
  const R = L.v128;
  const lanes: Lanes = {
    width: 2, R: R as unknown as Locals['f64'], unmasked: false,
    load: () => { simdOp(fn, S_Load); fn.byte(4); fn.u32(0); },
    store: () => { simdOp(fn, S_Store); fn.byte(4); fn.u32(0); },
    scalarOperand: (k, b) => fn.get(R.splat(k, b)),
    // Splatted constants come from locals set once (V8 does not hoist a splat out of the loop).
    zero: () => fn.get(L.splatted(0)),
    constant: (c) => { if (SPLATTED.includes(c)) fn.get(L.splatted(c)); else { fn.f64Const(c); simdOp(fn, S_Splat); } },
    binary(op) { simdOp(fn, SIMD_NATIVE[op]!); },
    neg: () => simdOp(fn, S_Neg),
    mul: () => simdOp(fn, S_Mul),
    add: () => simdOp(fn, S_Add),
    masked(p, finite) {
      fn.get(R.g); fn.get(p); simdOp(fn, S_Mul);
      if (finite || lanes.unmasked) { fn.set(R.t); return; }
      fn.get(R.g); fn.get(L.splatted(0)); simdOp(fn, S_Ne);
      fn.get(p); fn.get(L.splatted(0)); simdOp(fn, S_Ne);
      simdOp(fn, S_And);
      simdOp(fn, S_And);
      fn.set(R.t);
    },
    eachLane(inputs, scratch, perLane) {
      // Inputs as vectors into the v128 temporaries x, z, p (then lanes into the f64 scratch).
      const vectors = [R.x, R.z, R.p];
      inputs.forEach((input, i) => { input(); fn.set(vectors[i]!); });
      for (let lane = 0; lane < 2; lane++) {
        inputs.forEach((_, i) => { fn.get(vectors[i]!); simdOp(fn, S_Extract); fn.byte(lane); fn.set(scratch[i]!); });
        if (lane === 0) { perLane(); simdOp(fn, S_Splat); fn.set(R.q); }
        else { fn.get(R.q); perLane(); simdOp(fn, S_Replace); fn.byte(1); fn.set(R.q); }
      }
      fn.get(R.q);
    },
    addLanesTo(acc) {
      for (let lane = 0; lane < 2; lane++) { fn.get(acc); fn.get(R.t); simdOp(fn, S_Extract); fn.byte(lane); fn.byte(W_F64Add); fn.set(acc); }
    },
  };
  return lanes;
}

/** Prologue: e = 8·from, end = 8·(from + len), the parameter words, the scalar operands' values
 *  (and splats), the terms so far. */
function emitPrologue(fn: Bytes, nodes: Node[], L: Locals, simd: boolean, mode: 'plain' | 'tangent' | 'reverseTangent' = 'plain'): void {
  const tangent = mode === 'tangent';
  if (simd) for (const c of SPLATTED) { fn.f64Const(c); simdOp(fn, S_Splat); fn.set(L.splatted(c)); }
  fn.get(1); fn.i32Const(8); fn.byte(W_I32Mul); fn.tee(L.e);
  fn.get(2); fn.i32Const(8); fn.byte(W_I32Mul); fn.byte(W_I32Add); fn.set(L.end);
  nodes.forEach((_, k) => {
    for (let w = 0; w < PARAM_WORDS; w++) {
      fn.get(0); fn.memory(W_I32Load, 4 * (PARAM_WORDS * k + w), 2); fn.set(L.word(k, w));
    }
  });
  if (mode === 'reverseTangent') {
    // The second block, after the first and the sum's slot.
    nodes.forEach((_, k) => {
      for (let w = 0; w < PARAM_WORDS - 1; w++) {
        fn.get(0); fn.memory(W_I32Load, 4 * (PARAM_WORDS * (nodes.length + k) + 1 + w), 2); fn.set(L.word2(k, w));
      }
    });
    nodes.forEach((node, k) => {
      for (const b of [false, true]) {
        const kind = b ? node.b : node.a;
        if (!isScalar(kind)) continue;
        fn.get(L.word2(k, b ? 4 : 2)); fn.memory(W_F64Load, 0); fn.set(L.scalarTangent(k, b));
        if (simd) { fn.get(L.scalarTangent(k, b)); simdOp(fn, S_Splat); fn.set(L.tangentSplat(k, b)); }
        // The adjoint tangent terms so far, after the adjoint terms in the node's terms slot.
        if (kind === KIND_SCALAR) { fn.get(L.word(k, 6)); fn.memory(W_F64Load, b ? 24 : 16); fn.set(L.tangentTerms(k, b)); }
      }
    });
  }
  nodes.forEach((node, k) => {
    for (const b of [false, true]) {
      if (!isScalar(b ? node.b : node.a)) continue;
      fn.get(L.word(k, b ? 4 : 2)); fn.memory(W_F64Load, 0); fn.set(L.scalar(k, b));
      if (simd) { fn.get(L.scalar(k, b)); simdOp(fn, S_Splat); fn.set(L.v128.splat(k, b)); }
      if (tangent) {
        // A tangent kernel's scalar operand's tangent (a constant's too, read as the block sweep
        // reads it), in the terms' local.
        fn.get(L.word(k, b ? 5 : 3)); fn.memory(W_F64Load, 0); fn.set(L.terms(k, b));
        if (simd) { fn.get(L.terms(k, b)); simdOp(fn, S_Splat); fn.set(L.tangentSplat(k, b)); }
        continue;
      }
      // The terms so far (the run sums a broadcast operand's terms across its calls).
      if ((b ? node.b : node.a) === KIND_SCALAR) { fn.get(L.word(k, 6)); fn.memory(W_F64Load, b ? 8 : 0); fn.set(L.terms(k, b)); }
    }
  });
}

/** `while (e + 8·width <= end) { body; e += 8·width }` (less what the body advanced itself). */
function emitLoop(fn: Bytes, L: Locals, width: number, body: () => void, advanced = 0): void {
  const guard = (): void => { fn.get(L.e); fn.i32Const(8 * width); fn.byte(W_I32Add); fn.get(L.end); fn.byte(W_I32GtU); };
  fn.byte(W_Block); fn.byte(W_Void);
  guard(); fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_Loop); fn.byte(W_Void);
  body();
  fn.get(L.e); fn.i32Const(8 * width - advanced); fn.byte(W_I32Add); fn.set(L.e);
  guard(); fn.byte(W_I32Eqz); fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_End); fn.byte(W_End);
}

/** Pushes the address of element e at the address in local `base`. */
function element(fn: Bytes, L: Locals, base: number): void {
  fn.get(base); fn.get(L.e); fn.byte(W_I32Add);
}

function emitRun(nodes: Node[], reverse: boolean, sum: boolean, neighbours: boolean, fresh: boolean, value: boolean, simd: boolean): Bytes {
  const L = locals(nodes.length);
  const fn = new Bytes();
  L.declare(fn);
  emitPrologue(fn, nodes, L, simd);
  const last = nodes.length - 1;
  if (sum) {
    fn.get(0); fn.memory(W_I32Load, 4 * PARAM_WORDS * nodes.length, 2); fn.set(L.sumAt);
    if (reverse) {
      // The last node's adjoint, in its register for the whole loop (no run node sends to it).
      fn.get(L.sumAt); fn.memory(W_F64Load, 0); fn.set(L.f64.reg(last));
      if (simd) { fn.get(L.f64.reg(last)); simdOp(fn, S_Splat); fn.set(L.v128.reg(last)); }
    }
  }
  if (sum && !reverse) {
    const scalar = scalarLanes(fn, L);
    const lanes = simd ? simdLanes(fn, L) : scalar;
    emitSumLoops(fn, L, simd, () => emitForwardBody(fn, nodes, L, lanes), () => emitForwardBody(fn, nodes, L, scalar), { pair: L.v128.reg(last), single: L.f64.reg(last) });
  } else {
    // Neighbouring slices both taking terms: a pair of parent elements [e + d, e + d + 1] takes the
    // upper slice's totals for elements e - 1 and e (the one before carried over), then the lower
    // one's for e and e + 1, in one load and store; the carry left after the pairs goes in before
    // the last odd element. Parent element j so takes upper(j - d - 1), then lower(j - d): the
    // element order the lane by lane adds keep. (A first carry of 0 adds nothing: never -0.)
    // A fresh parent ([0, len], reached by nothing before) is written, not added to: the pairs
    // store +0 + their sums, the carry left goes to the element after the last pair's as +0 +
    // carry, and an odd last element's upper total to element len as +0 + total. Where the kernel
    // adds element by element instead (no SIMD, or a slice that takes no terms), it zeroes the
    // parent first.
    const paired = simd && reverse && neighbours && sendsTo(nodes, 0) && sendsTo(nodes, 1);
    const lowerBase = neighbours ? L.word(sliceUser(nodes, 1)[0], sliceUser(nodes, 1)[1] ? 5 : 3) : -1;
    if (fresh && !paired) {
      fn.get(lowerBase); fn.i32Const(0); fn.get(2); fn.i32Const(1); fn.byte(W_I32Add); fn.i32Const(8); fn.byte(W_I32Mul);
      fn.byte(0xfc); fn.u32(11); fn.byte(0); // memory.fill
    }
    const storing = fresh && paired;
    const emit = (V: Lanes, pairs: boolean): void => (reverse ? emitReverseBody(fn, nodes, L, V, sum, pairs, storing) : emitForwardBody(fn, nodes, L, V));
    const scalar = scalarLanes(fn, L);
    const lanes = simd ? simdLanes(fn, L) : scalar;
    const pairBody = (): void => (reverse && speculates(nodes) ? emitSpeculative(fn, nodes, L, lanes, sum, paired, storing) : emit(lanes, paired));
    const flushCarry = (): void => {
      if (!paired) return;
      element(fn, L, lowerBase);
      if (storing) fn.f64Const(0); else { element(fn, L, lowerBase); fn.memory(W_F64Load, 0); }
      fn.get(L.carry); simdOp(fn, S_Extract); fn.byte(1);
      fn.byte(W_F64Add);
      fn.memory(W_F64Store, 0);
    };
    if (paired) { fn.f64Const(0); simdOp(fn, S_Splat); fn.set(L.carry); }
    // Writing a fresh parent, a kernel can simply run its pairs again: it tries them all without
    // masks (see speculates), gathering the totals' NaN lanes, and only if it found one runs them
    // all again with the masks, over what it wrote.
    const retry = storing && speculates(nodes) ? (): void => emit(lanes, paired) : undefined;
    const firstPair = retry ? (): void => emitSpeculative(fn, nodes, L, lanes, sum, paired, storing, true) : pairBody;
    if (retry) { fn.f64Const(0); simdOp(fn, S_Splat); fn.set(L.nans); }
    if (value) {
      // The reverse kernel takes the sum's value in as well (the last node's values, deferred,
      // are in its value register after every body).
      emitSumLoops(fn, L, simd, firstPair, () => emit(scalar, false), { pair: L.v128.val(last), single: L.f64.val(last) }, flushCarry, retry, true);
    } else {
      if (simd) {
        emitLoop(fn, L, 2, firstPair);
        if (retry) emitRetry(fn, L, () => emitLoop(fn, L, 2, retry));
        flushCarry();
      }
      emitLoop(fn, L, 1, () => emit(scalar, false));
    }
  }
  if (reverse) {
    nodes.forEach((node, k) => {
      for (const b of [false, true]) {
        if ((b ? node.b : node.a) !== KIND_SCALAR || (b && node.unary)) continue;
        fn.get(L.word(k, 6)); fn.get(L.terms(k, b)); fn.memory(W_F64Store, b ? 8 : 0);
      }
    });
  }
  fn.byte(W_End);
  return fn;
}

// A tangent kernel: per element and node in ascending order, the node's value (computed with the
// forward kernel's operations where the forward sweep deferred it, and left deferred; else
// loaded) and its tangent (emitTangent), stored unless deferred (TANGENT_DEFER: the reverse
// tangent kernel recomputes it): the block sweep's bits, each node's elements read and written
// at most once instead of once per rule and again to materialize them.
function emitTangentRun(nodes: Node[], simd: boolean, sum: boolean): Bytes {
  const L = locals(nodes.length, 'tangent');
  const fn = new Bytes();
  L.declare(fn);
  emitPrologue(fn, nodes, L, simd, 'tangent');
  const pair = (): void => emitTangentBody(fn, nodes, L, simdLanes(fn, L), true), single = (): void => emitTangentBody(fn, nodes, L, scalarLanes(fn, L), false);
  if (sum) {
    // A sum taken in: the last node's tangents (deferred, in its register) added up as the
    // forward kernel adds values, to the sum's slot.
    fn.get(0); fn.memory(W_I32Load, 4 * PARAM_WORDS * nodes.length, 2); fn.set(L.sumAt);
    const last = nodes.length - 1;
    emitSumLoops(fn, L, simd, pair, single, { pair: L.v128.reg(last), single: L.f64.reg(last) });
  } else {
    if (simd) emitLoop(fn, L, 2, pair);
    emitLoop(fn, L, 1, single);
  }
  fn.byte(W_End);
  return fn;
}

// The SIMD loop computes the deferred tangents (which only the run reads) without the masks first:
// one that differs from the masked one only by a zero's sign gives the same stored tangents (a
// zero tangent's terms are masked there), and a NaN the masks would have kept out, or a term left
// out that was not finite (see emitTangent), makes its sum not finite, in which case the pair is
// computed again with the masks, its stores written over.
function emitTangentBody(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, simd: boolean): void {
  const { R } = V;
  const deferred = nodes.flatMap((node, k) => (node.flags & TANGENT_DEFER ? [k] : []));
  const pass = (speculating: boolean): void => nodes.forEach((node, k) => {
    // Its value: computed where the forward sweep deferred it (and left so), else loaded.
    if (node.flags & DEFER) emitValue(fn, nodes, k, L, V, (kind) => fn.get(R.val(kind)));
    else { element(fn, L, L.word(k, 0)); V.load(); }
    fn.set(R.val(k));
    const operands = {
      value: (b: boolean): void => {
        const kind = b ? node.b : node.a;
        if (isScalar(kind)) V.scalarOperand(k, b);
        else if (kind >= 0) fn.get(R.val(kind));
        else { element(fn, L, L.word(k, b ? 4 : 2)); V.load(); }
      },
      tangent: (b: boolean): void => {
        const kind = b ? node.b : node.a;
        if (isScalar(kind)) fn.get(simd ? L.tangentSplat(k, b) : L.terms(k, b));
        else if (kind >= 0) fn.get(R.reg(kind));
        else { element(fn, L, L.word(k, b ? 5 : 3)); V.load(); }
      },
    };
    // Its tangent, stored unless deferred.
    if (node.flags & TANGENT_DEFER) {
      V.unmasked = speculating;
      emitTangent(fn, node, L, V, simd, operands, R.val(k));
      V.unmasked = false;
      fn.set(R.reg(k));
      return;
    }
    element(fn, L, L.word(k, 1));
    emitTangent(fn, node, L, V, simd, operands, R.val(k));
    fn.tee(R.reg(k));
    V.store();
  });
  if (!simd || deferred.length === 0) { pass(false); return; }
  pass(true);
  deferred.forEach((k, n) => { fn.get(R.reg(k)); if (n > 0) V.add(); });
  fn.tee(R.x); fn.get(R.x); simdOp(fn, S_Sub); fn.tee(R.x); fn.get(R.x); simdOp(fn, S_Ne); simdOp(fn, S_AnyTrue);
  fn.byte(W_If); fn.byte(W_Void);
  pass(false);
  fn.byte(W_End);
}

/** Pushes a node's tangent, `(ta != 0 ? ta·pa : +0) + (tb != 0 ? tb·pb : +0)` with the partials of
 *  elementwiseTangent in assembly/vector.ts (the cheap ops' written out, the others' only where a
 *  tangent is nonzero), +0 through the zero-gradient ops; `y`: the local holding its value. Uses
 *  the temporaries g, t, p, q, x and z. */
function emitTangent(
  fn: Bytes, node: Node, L: Locals, V: Lanes, simd: boolean, operands: { value: (b: boolean) => void; tangent: (b: boolean) => void }, y: number,
): void {
  const { R } = V;
  const { s } = node;
  if (ZERO_GRADIENT[s]) { V.zero(); return; }
  // t·p where t and p are nonzero, else +0 (a zero partial's term left out too, as the scalar
  // sweeps do: an infinite tangent times a unary op's second partial of 0 gave NaN).
  const masked = (tangent: number, partial: number): void => {
    fn.get(tangent); fn.get(partial); V.mul();
    // (Unmasked in a first try: see emitTangentBody and emitReverseTangentBody.)
    if (V.unmasked) return;
    if (simd) {
      fn.get(tangent); V.zero(); simdOp(fn, S_Ne); simdOp(fn, S_And);
      fn.get(partial); V.zero(); simdOp(fn, S_Ne); simdOp(fn, S_And);
      return;
    }
    fn.f64Const(0);
    fn.get(tangent); fn.f64Const(0); fn.byte(W_F64Ne);
    fn.get(partial); fn.f64Const(0); fn.byte(W_F64Ne); fn.byte(W_I32And);
    fn.byte(W_Select);
  };
  // (ta in g, tb in t.)
  operands.tangent(false); fn.set(R.g);
  operands.tangent(true); fn.set(R.t);
  // Without masks (see emitTangentBody), a term whose tangent or partial is a constant 0 (a
  // constant's tangent, a unary op's second partial) is left out: it is ±0, or NaN where the other
  // factor is not finite, which then makes the node's own term or a result not finite too.
  const dropA = V.unmasked && !wants(node.a), dropB = V.unmasked && (node.unary || !wants(node.b));
  if (V.unmasked && (s === Op.add || s === Op.sub)) {
    // add's and sub's partials of 1 and -1 as the sum and the difference.
    if (dropA && dropB) V.zero();
    else if (dropB) fn.get(R.g);
    else if (dropA) { fn.get(R.t); if (s === Op.sub) V.neg(); }
    else { fn.get(R.g); fn.get(R.t); V.binary(s); }
    return;
  }
  if (s === Op.add || s === Op.sub || s === Op.neg) {
    V.constant(s === Op.neg ? -1 : 1); fn.set(R.p);
    if (s === Op.neg) V.zero(); else V.constant(s === Op.sub ? -1 : 1);
    fn.set(R.q);
  } else if (s === Op.mul) {
    operands.value(true); fn.set(R.p);
    operands.value(false); fn.set(R.q);
  } else if (s === Op.square) {
    V.constant(2); operands.value(false); V.mul(); fn.set(R.p);
    V.zero(); fn.set(R.q);
  } else {
    // p, q = ta != 0 || tb != 0 ? the rule's partials : 0, 0, per lane.
    operands.value(false); fn.set(R.x);
    operands.value(true); fn.set(R.z);
    emitPerLane(fn, L, V, [R.p, R.q], (get) => emitAnyNonzero(fn, get, [R.g, R.t]), (get) => emitLanePartials(fn, L, s, get, R.x, R.z, y));
  }
  if (dropA && dropB) { V.zero(); return; }
  if (!dropA) masked(R.g, R.p);
  if (!dropB) masked(R.t, R.q);
  if (!dropA && !dropB) V.add();
}

// A reverse tangent kernel (the reverse sweep with tangents): per element, the values and
// tangents the sweeps before deferred (recomputed with their operations) and the others loaded;
// then per active node from last to first, its adjoint g and adjoint tangent gt (run nodes' in
// registers until their turn, then stored unless dropped), and the terms of
// elementwiseReverseTangent in assembly/vector.ts: g·p, g·q to the operands' adjoints and
// `(gt·p or +0) + (g·dp or +0)`, `(gt·q or +0) + (g·dq or +0)` to their adjoint tangents, with the
// rule's partials and their directional derivatives and the same zero skips (as masks: a skipped
// term adds +0, and no adjoint is ever -0), operand a before b. A broadcast scalar operand's terms
// are summed per node in element order, and the core adds the sums once per node as the block
// sweep does. An absorbed slice's terms (KIND_SLICE) sum per element in two registers, its
// adjoint's and its adjoint tangent's, added to the parent's after the pair's other writes.
function emitReverseTangentRun(nodes: Node[], simd: boolean, sum: boolean): Bytes {
  const L = locals(nodes.length, 'reverseTangent');
  const fn = new Bytes();
  L.declare(fn);
  emitPrologue(fn, nodes, L, simd, 'reverseTangent');
  const last = nodes.length - 1;
  if (sum) {
    // A sum after the run took in: its adjoint g and adjoint tangent gt at the sum's slot, every
    // element of the last node's +0 + g and +0 + gt, in its registers for the whole loop.
    fn.get(0); fn.memory(W_I32Load, 4 * PARAM_WORDS * nodes.length, 2); fn.set(L.sumAt);
    for (const [offset, f64, v128] of [[0, L.f64.reg(last), L.v128.reg(last)], [8, L.f64.regT(last), L.v128.regT(last)]] as const) {
      fn.f64Const(0); fn.get(L.sumAt); fn.memory(W_F64Load, offset); fn.byte(W_F64Add); fn.set(f64);
      if (simd) { fn.get(f64); simdOp(fn, S_Splat); fn.set(v128); }
    }
  }
  if (simd) emitLoop(fn, L, 2, () => emitReverseTangentBody(fn, nodes, L, simdLanes(fn, L), true, sum));
  emitLoop(fn, L, 1, () => emitReverseTangentBody(fn, nodes, L, scalarLanes(fn, L), false, sum));
  nodes.forEach((node, k) => {
    for (const b of [false, true]) {
      if ((b ? node.b : node.a) !== KIND_SCALAR || (b && node.unary)) continue;
      fn.get(L.word(k, 6)); fn.get(L.terms(k, b)); fn.memory(W_F64Store, b ? 8 : 0);
      fn.get(L.word(k, 6)); fn.get(L.tangentTerms(k, b)); fn.memory(W_F64Store, b ? 24 : 16);
    }
  });
  fn.byte(W_End);
  return fn;
}

// The SIMD loop first computes a pair's terms without the masks (the rule's zero skips): a term
// that differs from the masked one by a zero's sign adds the same to an adjoint (never -0), so
// only a NaN the masks would have kept out (0·∞) can tell them apart, and it reaches every result
// it flows into. So the terms go to registers, and only if a result holds a NaN are they computed
// again with the masks; then the pair's writes (nothing is written before: a second pass must
// not add twice).
function emitReverseTangentBody(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, simd: boolean, sum: boolean): void {
  const { R } = V;
  const terms = (): Registers => emitReverseTangentTerms(fn, nodes, L, V, simd, sum);
  let held: Registers;
  if (simd) {
    V.unmasked = true;
    held = terms();
    V.unmasked = false;
    // The results' sum is not finite where one is not (or where infinities cancel: then the
    // masked way too); x - x is NaN just where x is not finite.
    if (held.results.length > 0) {
      held.results.forEach((r, k) => { fn.get(r); if (k > 0) V.add(); });
      fn.tee(R.x); fn.get(R.x); simdOp(fn, S_Sub); fn.tee(R.x); fn.get(R.x); simdOp(fn, S_Ne); simdOp(fn, S_AnyTrue);
      fn.byte(W_If); fn.byte(W_Void);
      terms();
      fn.byte(W_End);
    }
  } else {
    held = terms();
  }
  emitReverseTangentWrites(fn, nodes, L, V, held);
}

// What emitReverseTangentTerms leaves in registers (the same for every element and both ways,
// decided by the signature): the results (sites, and final adjoints that are stored), and the run
// nodes whose adjoints and adjoint tangents are held there.
interface Registers {
  results: number[]; inRegister: Set<number>; tangentInRegister: Set<number>;
  /** Absorbed slices that took adjoint terms, each with the local holding its parent's adjoint
   *  address; that took adjoint tangent terms, with its parent's adjoint tangent address. */
  sliceBases: Map<number, number>;
  sliceTangentBases: Map<number, number>;
}

/** A pair's (or an element's) terms into registers: run nodes' adjoints and adjoint tangents
 *  accumulated, every other target's term in its site register (node k's: a's adjoint, b's, a's
 *  adjoint tangent, b's, the order the block sweep adds them in). */
function emitReverseTangentTerms(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, simd: boolean, sum: boolean): Registers {
  const { R } = V;
  const results: number[] = [];
  // Run nodes' values and tangents, loaded where first read; adjoints and adjoint tangents of run
  // nodes in registers from their first term (loaded then: a consumer after the run may have sent
  // some already), a sum's last node from the start.
  const valueReady = new Set<number>(), tangentReady = new Set<number>();
  const inRegister = new Set<number>(sum ? [nodes.length - 1] : []), tangentInRegister = new Set<number>(sum ? [nodes.length - 1] : []);
  const loadValue = (k: number): void => {
    if (!valueReady.has(k)) { element(fn, L, L.word(k, 0)); V.load(); fn.set(R.val(k)); valueReady.add(k); }
  };
  const runValue = (k: number): void => { loadValue(k); fn.get(R.val(k)); };
  const runTangent = (k: number): void => {
    if (!tangentReady.has(k)) { element(fn, L, L.word2(k, 0)); V.load(); fn.set(R.tan(k)); tangentReady.add(k); }
    fn.get(R.tan(k));
  };
  const value = (k: number, b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (isScalar(kind)) V.scalarOperand(k, b);
    else if (kind >= 0) runValue(kind);
    else { element(fn, L, L.word(k, b ? 4 : 2)); V.load(); }
  };
  const tangentOf = (k: number, b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (isScalar(kind)) fn.get(simd ? L.tangentSplat(k, b) : L.scalarTangent(k, b));
    else if (kind >= 0) runTangent(kind);
    else { element(fn, L, L.word2(k, b ? 4 : 2)); V.load(); }
  };
  // Deferred values and tangents first, in ascending order, with the forward and tangent
  // kernels' operations (each from registers or memory, never a half-computed temporary).
  nodes.forEach(({ flags }, k) => {
    if (flags & DEFER) {
      emitValue(fn, nodes, k, L, V, runValue);
      fn.set(R.val(k));
      valueReady.add(k);
    }
    if (flags & TANGENT_DEFER) {
      loadValue(k);
      emitTangent(fn, nodes[k]!, L, V, simd, { value: (b) => value(k, b), tangent: (b) => tangentOf(k, b) }, R.val(k));
      fn.set(R.tan(k));
      tangentReady.add(k);
    }
  });
  const isZero = (local: number): void => {
    fn.get(local); V.zero();
    if (simd) simdOp(fn, S_Ne); else fn.byte(W_F64Ne);
  };
  // a·b where a != 0 and b != 0, else +0 (onto the stack); without the masks, a·b.
  const masked = (a: number, b: number): void => {
    fn.get(a); fn.get(b); V.mul();
    if (V.unmasked) return;
    if (simd) { isZero(a); isZero(b); simdOp(fn, S_And); simdOp(fn, S_And); return; }
    fn.f64Const(0); isZero(a); isZero(b); fn.byte(W_I32And); fn.byte(W_Select);
  };
  // Run nodes whose registers hold the negations of their adjoint and adjoint tangent: a sub's
  // terms to its second operand kept as g and gt, as emitReverseTerms does (see `negated` there):
  // where that operand's adjoints live only in its registers and these are their first terms.
  const negated = new Set<number>();
  // Adds (subtracts, with `minus`) local t to what is on the stack.
  const addT = (minus: boolean): void => { fn.get(R.t); if (minus) V.binary(Op.sub); else V.add(); };
  // The term on the stack to operand b (or a) of node k: its adjoint (`tangent` false) or adjoint
  // tangent; `flip`: the stack holds its negation. A run node's register takes it (the first term
  // of one node k writes whole, STORE_A or STORE_B, as +0 + t); any other target's goes to node
  // k's site register.
  const sliceBases = new Map<number, number>(), sliceTangentBases = new Map<number, number>();
  const send = (k: number, b: boolean, tangent: boolean, flip = false): void => {
    const node = nodes[k]!;
    const kind = b ? node.b : node.a;
    const m = sliceOf(kind);
    if (m >= 0) {
      // An absorbed slice's total: +0 + its first term (its adjoints start at +0, claimed), then
      // the others added in the block sweep's order.
      const total = R.sliceTotal(m, tangent), bases = tangent ? sliceTangentBases : sliceBases;
      fn.set(R.t);
      if (!bases.has(m)) {
        bases.set(m, tangent ? L.word2(k, b ? 5 : 3) : L.word(k, b ? 5 : 3));
        V.zero();
        results.push(total);
      } else fn.get(total);
      addT(flip); fn.set(total);
      return;
    }
    if (kind < 0) {
      if (flip) V.neg();
      const site = R.site(k, (b ? 1 : 0) + (tangent ? 2 : 0));
      fn.set(site);
      results.push(site);
      return;
    }
    fn.set(R.t);
    const fresh = (node.flags & (b ? STORE_B : STORE_A)) !== 0;
    const ready = tangent ? tangentInRegister : inRegister, r = tangent ? R.regT(kind) : R.reg(kind);
    if (!ready.has(kind)) {
      ready.add(kind);
      const dropped = (nodes[kind]!.flags & DROP) !== 0;
      // (Its first term, t as it is: the register holds the negation from here on.)
      if (fresh && flip && dropped) negated.add(kind);
      // Without masks, a dropped adjoint's register takes its first term as it is, without the
      // +0 before it, as emitReverseTerms' first does: it is only ever a factor of terms, and a
      // -0 there makes ±0 terms, which every total that is stored starts from +0 or adds to a
      // value that is not -0. (A fresh register's first term is never to be subtracted: it is
      // negated, or its term is not.)
      if (fresh && dropped && V.unmasked) { fn.get(R.t); fn.set(r); return; }
      if (fresh) V.zero(); else { element(fn, L, tangent ? L.word2(kind, 1) : L.word(kind, 1)); V.load(); }
    } else fn.get(r);
    addT(flip !== negated.has(kind)); fn.set(r);
  };
  for (let k = nodes.length - 1; k >= 0; k--) {
    const node = nodes[k]!;
    if (!(node.flags & ACTIVE)) continue;
    // Its adjoint and adjoint tangent, final now (stored, unless dropped, with the writes).
    for (const tangent of [false, true]) {
      const ready = (tangent ? tangentInRegister : inRegister).has(k), r = tangent ? R.regT(k) : R.reg(k), into = tangent ? R.gt : R.g;
      if (ready) {
        fn.get(r); fn.set(into);
        if (!(node.flags & DROP)) results.push(r);
      } else { element(fn, L, tangent ? L.word2(k, 1) : L.word(k, 1)); V.load(); fn.set(into); }
    }
    const { s } = node;
    const wantA = wants(node.a), wantB = wants(node.b) && !node.unary;
    if (!wantA && !wantB) continue;
    // g and gt hold the negated adjoint and adjoint tangent (see negated): a node's terms are
    // negated too, unless its partials take the sign (square's).
    let flip = negated.has(k);
    // p, q: the partials; dp, dq: their directional derivatives.
    if (s === Op.add || s === Op.sub || s === Op.neg) {
      // Partials of ±1 and no second-order terms: g·p and gt·p differ from the masked terms only
      // by a zero's sign, which adds nothing (adjoints are never -0), with or without masks; a
      // partial of 1 leaves g as it is, one of -1 negates it (where send does not carry it).
      if (wantA) { fn.get(R.g); send(k, false, false, flip !== (s === Op.neg)); }
      if (wantB) { fn.get(R.g); send(k, true, false, flip !== (s === Op.sub)); }
      if (wantA) { fn.get(R.gt); send(k, false, true, flip !== (s === Op.neg)); }
      if (wantB) { fn.get(R.gt); send(k, true, true, flip !== (s === Op.sub)); }
      continue;
    } else if (s === Op.mul) {
      value(k, true); fn.set(R.p); value(k, false); fn.set(R.q);
      tangentOf(k, true); fn.set(R.dp); tangentOf(k, false); fn.set(R.dq);
    } else if (s === Op.square) {
      V.constant(flip ? -2 : 2); value(k, false); V.mul(); fn.set(R.p);
      V.constant(flip ? -2 : 2); tangentOf(k, false); V.mul(); fn.set(R.dp);
      V.zero(); fn.set(R.q); V.zero(); fn.set(R.dq);
      flip = false;
    } else {
      const second = SECOND_ORDER[s];
      value(k, false); fn.set(R.x);
      value(k, true); fn.set(R.z);
      runValue(k); fn.set(R.t);
      const linear = LINEAR.has(s);
      // p, q where g != 0 or gt != 0 (the block sweep skips other elements), per lane.
      emitPerLane(fn, L, V, [R.p, R.q], (get) => emitAnyNonzero(fn, get, [R.g, R.gt]), (get) => emitLanePartials(fn, L, s, get, R.x, R.z, R.t));
      if (!linear) {
        // dp, dq where g != 0 (partialsTangent's, spelled out where the generated sweeps spell
        // it), from the tangents of a, b and the node itself in spare registers.
        tangentOf(k, false); fn.set(R.slice(0));
        tangentOf(k, true); fn.set(R.slice(1));
        runTangent(k); fn.set(R.slice(2));
        emitPerLane(fn, L, V, [R.dp, R.dq], (get) => emitAnyNonzero(fn, get, [R.g]), (get) => {
          const tx = (): void => get(R.slice(0)), tz = (): void => get(R.slice(1)), ty = (): void => get(R.slice(2));
          const operands = { x: () => get(R.x), z: () => get(R.z), y: () => get(R.t), tx, tz, ty };
          const setP = (): void => fn.set(L.lane.p), setQ = (): void => fn.set(L.lane.q);
          if (!second) {
            emitCoreSecondOrder(fn, s, operands, setP, setQ);
            return;
          }
          emitSecondOrder(fn, s, operands, s === Op.div, setP, setQ, true);
        });
      }
      if (linear) { V.zero(); fn.set(R.dp); V.zero(); fn.set(R.dq); }
    }
    if (wantA) { masked(R.g, R.p); send(k, false, false, flip); }
    if (wantB) { masked(R.g, R.q); send(k, true, false, flip); }
    // Without masks, the terms of a partial's change that is a constant 0 left out (see emitTangent).
    // (A constant, which takes no terms, has the tangent 0.)
    const zeroDp = V.unmasked && (LINEAR.has(s) || (s === Op.mul && !wants(node.b)) || (s === Op.square && !wants(node.a)));
    const zeroDq = V.unmasked && (LINEAR.has(s) || (s === Op.mul && !wants(node.a)));
    if (wantA) { masked(R.gt, R.p); if (!zeroDp) { masked(R.g, R.dp); V.add(); } send(k, false, true, flip); }
    if (wantB) { masked(R.gt, R.q); if (!zeroDq) { masked(R.g, R.dq); V.add(); } send(k, true, true, flip); }
  }
  return { results, inRegister, tangentInRegister, sliceBases, sliceTangentBases };
}

/** A pair's (or an element's) writes, from the registers emitReverseTangentTerms left: run
 *  nodes' final adjoints and adjoint tangents (unless dropped), and the sites' terms in the block
 *  sweep's order, stored (+0 + t) into an operand written whole, added to any other. */
function emitReverseTangentWrites(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, { inRegister, tangentInRegister, sliceBases, sliceTangentBases }: Registers): void {
  const { R } = V;
  for (let k = nodes.length - 1; k >= 0; k--) {
    const node = nodes[k]!;
    if (!(node.flags & ACTIVE)) continue;
    if (!(node.flags & DROP)) {
      if (inRegister.has(k)) { element(fn, L, L.word(k, 1)); fn.get(R.reg(k)); V.store(); }
      if (tangentInRegister.has(k)) { element(fn, L, L.word2(k, 1)); fn.get(R.regT(k)); V.store(); }
    }
    const wantA = wants(node.a), wantB = wants(node.b) && !node.unary;
    for (const [tangent, b, want] of [[false, false, wantA], [false, true, wantB], [true, false, wantA], [true, true, wantB]] as const) {
      const kind = b ? node.b : node.a;
      if (!want || kind >= 0 || sliceOf(kind) >= 0) continue;
      const site = R.site(k, (b ? 1 : 0) + (tangent ? 2 : 0));
      if (kind === KIND_SCALAR) { fn.get(site); fn.set(R.t); V.addLanesTo(tangent ? L.tangentTerms(k, b) : L.terms(k, b)); continue; }
      const base = tangent ? L.word2(k, b ? 5 : 3) : L.word(k, b ? 5 : 3);
      element(fn, L, base);
      if (node.flags & (b ? STORE_B : STORE_A)) V.zero(); else { element(fn, L, base); V.load(); }
      fn.get(site); V.add(); V.store();
    }
  }
  // The absorbed slices' totals into their parent's adjoints, then its adjoint tangents, as the
  // first-order kernel adds them (lane by lane, highest slice first).
  emitSliceTotals(fn, L, V, sliceBases, false, false, (m) => R.sliceTotal(m, false));
  emitSliceTotals(fn, L, V, sliceTangentBases, false, false, (m) => R.sliceTotal(m, true));
}

/** Per lane (the SIMD loop's two, or the scalar loop's one): where `live` (pushed for the lane
 *  through `get`, an i32) holds, `rule` sets the lane's locals L.lane.p and L.lane.q, else both are
 *  0; then each goes into its register (`into`: p's and q's), the lanes gathered. */
function emitPerLane(
  fn: Bytes, L: Locals, V: Lanes, into: readonly [number, number], live: (get: (local: number) => void) => void,
  rule: (get: (local: number) => void) => void,
): void {
  const simd = V.width === 2;
  for (let lane = 0; lane < V.width; lane++) {
    const get = (local: number): void => { fn.get(local); if (simd) { simdOp(fn, S_Extract); fn.byte(lane); } };
    live(get);
    fn.byte(W_If); fn.byte(W_Void);
    rule(get);
    fn.byte(W_Else);
    fn.f64Const(0); fn.set(L.lane.p); fn.f64Const(0); fn.set(L.lane.q);
    fn.byte(W_End);
    for (const [reg, from] of [[into[0], L.lane.p], [into[1], L.lane.q]] as const) {
      if (!simd) { fn.get(from); fn.set(reg); }
      else if (lane === 0) { fn.get(from); simdOp(fn, S_Splat); fn.set(reg); }
      else { fn.get(reg); fn.get(from); simdOp(fn, S_Replace); fn.byte(1); fn.set(reg); }
    }
  }
}

/** The rule's partials of op s at x, z and y (locals, read through `get`) into L.lane.p and
 *  L.lane.q: spelled out where the generated sweeps spell them (NATIVE_PARTIAL), else by a call
 *  (the rule leaves q in partialZ). */
function emitLanePartials(fn: Bytes, L: Locals, s: number, get: (local: number) => void, x: number, z: number, y: number): void {
  const partial = NATIVE_PARTIAL[s];
  if (partial) {
    fn.f64Const(0); fn.set(L.lane.q);
    partial(fn, () => get(x), () => get(z), () => get(y), { pa: L.lane.p, pb: L.lane.q, c: L.lane.x });
    return;
  }
  fn.i32Const(s); get(x); get(z); get(y);
  fn.byte(W_Call); fn.u32(FN_PARTIALS); fn.set(L.lane.p);
  fn.byte(W_Call); fn.u32(FN_PARTIAL_Z); fn.set(L.lane.q);
}

/** Pushes an i32: whether the lane of any of `locals` is nonzero (NaN is). */
function emitAnyNonzero(fn: Bytes, get: (local: number) => void, locals: readonly number[]): void {
  locals.forEach((local, k) => {
    get(local); fn.f64Const(0); fn.byte(W_F64Ne);
    if (k > 0) fn.byte(W_I32Or);
  });
}

/** Pushes node k's value from its operands (a run node's from `runValue`). */
function emitValue(
  fn: Bytes, nodes: Node[], k: number, L: Locals, V: Lanes, runValue: (kind: number) => void,
  outside = (b: boolean): void => { element(fn, L, L.word(k, b ? 4 : 2)); V.load(); },
): void {
  const { R } = V;
  const { s } = nodes[k]!;
  const operand = (b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (kind >= 0) runValue(kind);
    else if (isScalar(kind)) V.scalarOperand(k, b);
    else outside(b);
  };
  if (SIMD_NATIVE[s] !== undefined) { operand(false); operand(true); V.binary(s); }
  else if (s === Op.neg) { operand(false); V.neg(); }
  else if (s === Op.square) { operand(false); fn.tee(R.x); fn.get(R.x); V.mul(); }
  else {
    V.eachLane([() => operand(false), () => operand(true)], [L.lane.x, L.lane.z], () => {
      // relu, abs, max and min as the core computes them (Math.max is f64.max there): a call per
      // element into the core's rule made them 10-15 times a mul (a new-user probe). (What is
      // computed inline here, `inlined` in assembly/vector.ts defers; the rest store values.)
      const native = NATIVE_FORWARD[s];
      if (native !== undefined) {
        fn.get(L.lane.x);
        if (s === Op.relu) fn.f64Const(0); else if (s === Op.max || s === Op.min) fn.get(L.lane.z);
        if (native !== 0) fn.byte(native);
        return;
      }
      fn.i32Const(s); fn.get(L.lane.x); fn.get(L.lane.z); fn.byte(W_Call); fn.u32(FN_FORWARD);
    });
  }
}

/** The loops of a kernel that adds up its last node's values (a forward kernel with a sum, or a
 *  reverse kernel that takes the value in as well): groups of four elements (two pair bodies, or
 *  with `alternate` one a turn, or four single ones), each value into its partial sum as sum4
 *  adds them, then up to three more elements into the first three partial sums; the sum,
 *  (s0 + s2) + (s1 + s3), to the sum's slot. `afterPairs` runs between the groups and the rest. */
function emitSumLoops(
  fn: Bytes, L: Locals, simd: boolean, pair: () => void, single: () => void, value: { pair: number; single: number },
  afterPairs: () => void = () => {}, retry?: () => void, alternate = false,
): void {
  const into = (acc: number, reg: number, add: () => void): void => { fn.get(acc); fn.get(reg); add(); fn.set(acc); };
  const step = (bytes: number): void => { fn.get(L.e); fn.i32Const(bytes); fn.byte(W_I32Add); fn.set(L.e); };
  const addF64 = (): void => { fn.byte(W_F64Add); };
  const addPair = (): void => simdOp(fn, S_Add);
  if (simd) {
    // `alternate` (a reverse kernel's large body): one pair a turn into the first accumulator,
    // then the two swapped, over whole groups of four (end cut down to them for the loop), so
    // elements 4g, 4g + 1 still go to partial sums 0 and 1 and 4g + 2, 4g + 3 to 2 and 3. Two
    // bodies a turn made the gradient of a compiled vector Rosenbrock of 10^5 elements 0.155 ms
    // against 0.125; for the small bodies of forward and tangent kernels they were 1.5% faster.
    const groups = (body: () => void): void => {
      // From -0, as sum4's partial sums (addition's identity: terms all -0 sum to -0).
      for (const k of [0, 1]) { fn.f64Const(-0); simdOp(fn, S_Splat); fn.set(L.pair(k)); }
      if (alternate) {
        emitLoop(fn, L, 2, () => {
          body();
          fn.get(L.pair(1)); fn.get(L.pair(0)); fn.get(value.pair); addPair(); fn.set(L.pair(1)); fn.set(L.pair(0));
        });
        return;
      }
      emitLoop(fn, L, 4, () => {
        body(); into(L.pair(0), value.pair, addPair); step(16);
        body(); into(L.pair(1), value.pair, addPair);
      }, 16);
    };
    const start = (): void => { fn.get(1); fn.i32Const(8); fn.byte(W_I32Mul); };
    // end -= (end - 8·from) & 31
    if (alternate) { fn.get(L.end); fn.get(L.end); start(); fn.byte(W_I32Sub); fn.i32Const(31); fn.byte(W_I32And); fn.byte(W_I32Sub); fn.set(L.end); }
    groups(pair);
    if (retry) emitRetry(fn, L, () => groups(retry));
    if (alternate) { fn.get(1); fn.get(2); fn.byte(W_I32Add); fn.i32Const(8); fn.byte(W_I32Mul); fn.set(L.end); }
    for (let k = 0; k < 4; k++) { fn.get(L.pair(k >> 1)); simdOp(fn, S_Extract); fn.byte(k & 1); fn.set(L.partial(k)); }
  } else {
    for (let k = 0; k < 4; k++) { fn.f64Const(-0); fn.set(L.partial(k)); }
    emitLoop(fn, L, 4, () => {
      for (let k = 0; k < 4; k++) {
        single(); into(L.partial(k), value.single, addF64);
        if (k < 3) step(8);
      }
    }, 24);
  }
  afterPairs();
  // The rest: `if (e + 8 > end) break` before each of up to three elements.
  fn.byte(W_Block); fn.byte(W_Void);
  for (let k = 0; k < 3; k++) {
    fn.get(L.e); fn.i32Const(8); fn.byte(W_I32Add); fn.get(L.end); fn.byte(W_I32GtU); fn.byte(W_BrIf); fn.u32(0);
    single(); into(L.partial(k), value.single, addF64);
    step(8);
  }
  fn.byte(W_End);
  fn.get(L.sumAt);
  fn.get(L.partial(0)); fn.get(L.partial(2)); fn.byte(W_F64Add);
  fn.get(L.partial(1)); fn.get(L.partial(3)); fn.byte(W_F64Add);
  fn.byte(W_F64Add);
  fn.memory(W_F64Store, 0);
}

function emitForwardBody(fn: Bytes, nodes: Node[], L: Locals, V: Lanes): void {
  const { R } = V;
  nodes.forEach(({ flags }, k) => {
    if (flags & DEFER) { emitValue(fn, nodes, k, L, V, (kind) => fn.get(R.reg(kind))); fn.set(R.reg(k)); return; }
    element(fn, L, L.word(k, 0));
    emitValue(fn, nodes, k, L, V, (kind) => fn.get(R.reg(kind)));
    fn.tee(R.reg(k));
    V.store();
  });
}

// The masks on products (the scalar rule's zero-partial and zero-adjoint skips) only matter where
// a product of 0 and ±Infinity or NaN makes a NaN the rule would not; any other product of a zero
// is ±0, which adds nothing to an adjoint (never -0) and starts a fresh one at +0 as the rule's 0
// does. A NaN term reaches every result it flows into (no mask stops it on this way), so a pair
// whose results hold no NaN got the masked way's results without masks. Where a pair's only
// memory writes are its absorbed slices' totals, made after every node, the SIMD loop tries the
// pair without masks, checks the totals for NaN, and takes the masked way again only if it finds
// one (a NaN in the input, an overflow, an infinite partial).
function speculates(nodes: Node[]): boolean {
  if (!nodes.some((node) => sliceOf(node.a) >= 0 || sliceOf(node.b) >= 0)) return false;
  const registered = (kind: number): boolean => !wants(kind) || kind >= 0 || sliceOf(kind) >= 0;
  return nodes.every((node) => (node.flags & DROP) !== 0 && (!(node.flags & ACTIVE) || (registered(node.a) && (node.unary || registered(node.b)))));
}

/** If a lane of L.nans is NaN: every pair again from the first (e, the carry), by `again`. */
function emitRetry(fn: Bytes, L: Locals, again: () => void): void {
  fn.get(L.nans); fn.get(L.nans); simdOp(fn, S_Ne); simdOp(fn, S_AnyTrue);
  fn.byte(W_If); fn.byte(W_Void);
  fn.get(1); fn.i32Const(8); fn.byte(W_I32Mul); fn.set(L.e);
  fn.f64Const(0); simdOp(fn, S_Splat); fn.set(L.carry);
  again();
  fn.byte(W_End);
}

function emitSpeculative(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, sum: boolean, pairs: boolean, storing: boolean, whole = false): void {
  if (whole) {
    // Without masks; the totals' NaN lanes gathered for emitRetry.
    V.unmasked = true;
    const bases = emitReverseTerms(fn, nodes, L, V, sum);
    V.unmasked = false;
    // Added up over every pair, NaN if any total was (or where infinities of opposite signs met,
    // a retry with no need): one add a total, one test after the loop (emitRetry). The pair's
    // totals first, so that one add a pair waits on the last.
    [...bases.keys()].forEach((m, k) => { fn.get(V.R.slice(m)); if (k > 0) simdOp(fn, S_Add); });
    fn.get(L.nans); simdOp(fn, S_Add); fn.set(L.nans);
    emitSliceTotals(fn, L, V, bases, pairs, storing);
    return;
  }
  fn.byte(W_Block); fn.byte(W_Void);
  fn.byte(W_Block); fn.byte(W_Void);
  V.unmasked = true;
  const bases = emitReverseTerms(fn, nodes, L, V, sum);
  V.unmasked = false;
  // The totals' sum, NaN if any total is (see the whole run's above).
  [...bases.keys()].forEach((m, k) => { fn.get(V.R.slice(m)); if (k > 0) simdOp(fn, S_Add); });
  fn.tee(V.R.x); fn.get(V.R.x); simdOp(fn, S_Ne);
  simdOp(fn, S_AnyTrue);
  fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_Br); fn.u32(1);
  fn.byte(W_End);
  emitReverseTerms(fn, nodes, L, V, sum);
  fn.byte(W_End);
  emitSliceTotals(fn, L, V, bases, pairs, storing);
}

/** Whether an active node sends terms to absorbed slice m. */
function sendsTo(nodes: Node[], m: number): boolean {
  return nodes.some((node) => (node.flags & ACTIVE) !== 0 && (sliceOf(node.a) === m || (!node.unary && sliceOf(node.b) === m)));
}

/** The first node (and side: true for b) naming absorbed slice m. */
function sliceUser(nodes: Node[], m: number): [number, boolean] {
  for (let k = 0; k < nodes.length; k++) {
    if (sliceOf(nodes[k]!.a) === m) return [k, false];
    if (sliceOf(nodes[k]!.b) === m) return [k, true];
  }
  throw new Error(`no node names slice ${m}`);
}

function emitReverseBody(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, sum: boolean, pairs: boolean, storing: boolean): void {
  emitSliceTotals(fn, L, V, emitReverseTerms(fn, nodes, L, V, sum), pairs, storing);
}

/** Every active node's terms, last to first, into registers and memory; returns the absorbed
 *  slices that took terms, each with the local holding its parent adjoints' address. */
function emitReverseTerms(fn: Bytes, nodes: Node[], L: Locals, V: Lanes, sum: boolean): Map<number, number> {
  const { R } = V;
  // Per element, which run nodes' adjoints are in their registers so far (with a sum, the last
  // node's from the start).
  const inRegister = new Set<number>(sum ? [nodes.length - 1] : []);
  // Absorbed slices that took a term so far, and the local holding each one's adjoint address.
  const sliceBases = new Map<number, number>();
  // Run nodes' values: deferred ones computed first, in ascending order (each from registers or
  // memory, never from a half-computed temporary); stored ones loaded where first read.
  const valueReady = new Set<number>();
  const runValue = (k: number): void => {
    if (!valueReady.has(k)) { element(fn, L, L.word(k, 0)); V.load(); fn.set(R.val(k)); valueReady.add(k); }
    fn.get(R.val(k));
  };
  // An absorbed slice's elements, loaded once per element (every use reads the same address).
  const sliceLoaded = new Set<number>();
  const outsideValue = (k: number, b: boolean): void => {
    const m = sliceOf(b ? nodes[k]!.b : nodes[k]!.a);
    if (m < 0) { element(fn, L, L.word(k, b ? 4 : 2)); V.load(); return; }
    if (!sliceLoaded.has(m)) { element(fn, L, L.word(k, b ? 4 : 2)); V.load(); fn.set(R.sliceValue(m)); sliceLoaded.add(m); }
    fn.get(R.sliceValue(m));
  };
  nodes.forEach(({ flags }, k) => {
    if (!(flags & DEFER)) return;
    emitValue(fn, nodes, k, L, V, runValue, (b) => outsideValue(k, b));
    fn.set(R.val(k));
    valueReady.add(k);
  });
  const value = (k: number, b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (isScalar(kind)) V.scalarOperand(k, b);
    else if (kind >= 0) runValue(kind);
    else outsideValue(k, b);
  };
  // A register's first term: +0 + t, so that it is never -0 (the rule's adjoints never are). The
  // speculative body (see speculates) may leave a -0: every total it flows into is added to a
  // value that is not -0, where ±0 add alike.
  const first = (r: number): void => {
    if (!V.unmasked) { V.zero(); fn.get(R.t); V.add(); } else fn.get(R.t);
    fn.set(r);
  };
  // Adds local t to a register or an adjoint in memory (subtracts it, with `subtract`): where the
  // scalar rule skips t = 0, the sum is the same (adjoints are never -0), so the SIMD loop adds
  // unconditionally.
  const addTo = (target: () => void, load: () => void, finish: () => void, subtract = false): void => {
    if (V.width === 1) { fn.get(R.t); fn.f64Const(0); fn.byte(W_F64Ne); fn.byte(W_If); fn.byte(W_Void); }
    target(); load(); fn.get(R.t); if (subtract) V.binary(Op.sub); else V.add(); finish();
    if (V.width === 1) fn.byte(W_End);
  };
  // Run nodes whose register holds the negation of their adjoint: a sub's term to its second
  // operand (-g) is kept as g where that operand's adjoint lives only in its register and this
  // is its first term. That node's terms take the sign back for nothing where they can (a sub's
  // second term, square's partial -2x, neg's 1; a term added to an adjoint is subtracted) and by
  // a neg otherwise. (-g)·p and g·(-p), r + t and r - (-t), are the same bits; only a zero
  // adjoint's sign may differ, which the masks, and the +0 every total starts from, make alike.
  const negated = new Set<number>();
  const negate = (): void => { fn.get(R.t); V.neg(); fn.set(R.t); };
  // The term in local t to operand b (or a) of node k, as `send` in assembly/vector.ts; `flip`:
  // t holds the term's negation.
  const send = (k: number, b: boolean, flip = false): void => {
    const node = nodes[k]!;
    const kind = b ? node.b : node.a;
    const fresh = (node.flags & (b ? STORE_B : STORE_A)) !== 0;
    if (kind === KIND_VECTOR_CONSTANT || kind === KIND_SCALAR_CONSTANT) return;
    if (kind === KIND_SCALAR) { if (flip) negate(); V.addLanesTo(L.terms(k, b)); return; }
    const m = sliceOf(kind);
    if (m >= 0) {
      const r = R.slice(m);
      if (!sliceBases.has(m)) {
        if (flip) negate();
        first(r);
        sliceBases.set(m, L.word(k, b ? 5 : 3));
        return;
      }
      addTo(() => {}, () => fn.get(r), () => fn.set(r), flip);
      return;
    }
    if (kind >= 0) {
      const r = R.reg(kind);
      if (fresh) {
        if (flip && (nodes[kind]!.flags & DROP) !== 0) negated.add(kind);
        else if (flip) negate();
        first(r);
        inRegister.add(kind);
        return;
      }
      if (!inRegister.has(kind)) { element(fn, L, L.word(kind, 1)); V.load(); fn.set(r); inRegister.add(kind); }
      addTo(() => {}, () => fn.get(r), () => fn.set(r), flip !== negated.has(kind));
      return;
    }
    const base = L.word(k, b ? 5 : 3);
    if (fresh) { element(fn, L, base); V.zero(); fn.get(R.t); if (flip) V.binary(Op.sub); else V.add(); V.store(); return; }
    addTo(() => element(fn, L, base), () => { element(fn, L, base); V.load(); }, () => V.store(), flip);
  };
  for (let k = nodes.length - 1; k >= 0; k--) {
    const node = nodes[k]!;
    if (!(node.flags & ACTIVE)) continue;
    // g: the adjoint, final now that every later node has sent its terms.
    if (inRegister.has(k) && node.flags & DROP) { fn.get(R.reg(k)); fn.set(R.g); }
    else if (inRegister.has(k)) { element(fn, L, L.word(k, 1)); fn.get(R.reg(k)); fn.tee(R.g); V.store(); }
    else { element(fn, L, L.word(k, 1)); V.load(); fn.set(R.g); }
    const { s } = node;
    // g holds the adjoint's negation (see negated).
    const flip = negated.has(k);
    // Terms only for operands that take them (a constant's are dropped).
    const wantA = wants(node.a), wantB = wants(node.b) && !node.unary;
    if (s === Op.add || s === Op.sub) {
      if (wantA) { fn.get(R.g); fn.set(R.t); send(k, false, flip); }
      if (wantB) { fn.get(R.g); fn.set(R.t); send(k, true, flip !== (s === Op.sub)); }
    } else if (s === Op.mul) {
      if (wantA) { value(k, true); fn.set(R.z); V.masked(R.z, (node.flags & FINITE_B) !== 0); send(k, false, flip); }
      if (wantB) { value(k, false); fn.set(R.x); V.masked(R.x, (node.flags & FINITE_A) !== 0); send(k, true, flip); }
    } else if (s === Op.square || s === Op.neg) {
      if (!wantA) continue;
      if (s === Op.square) { V.constant(flip ? -2 : 2); value(k, false); V.mul(); } else V.constant(flip ? 1 : -1);
      fn.set(R.p);
      V.masked(R.p, s === Op.neg); send(k, false);
    } else {
      if (!wantA && !wantB) continue;
      if (ZERO_GRADIENT[s]) {
        // No term (comparisons, floor, stopGradient...), but a fresh adjoint still starts at +0.
        V.zero(); fn.set(R.t);
        if (wantA) send(k, false);
        if (wantB) send(k, true);
        continue;
      }
      // p, q = g != 0 ? the rule's partials : 0, 0, per lane.
      value(k, false); fn.set(R.x);
      value(k, true); fn.set(R.z);
      runValue(k); fn.set(R.t);
      emitPerLane(fn, L, V, [R.p, R.q], (get) => emitAnyNonzero(fn, get, [R.g]), (get) => emitLanePartials(fn, L, s, get, R.x, R.z, R.t));
      if (wantA) { V.masked(R.p); send(k, false, flip); }
      if (wantB) { V.masked(R.q); send(k, true, flip); }
    }
  }
  return sliceBases;
}

/** The absorbed slices' totals (`total`: a slice's register, the first-order kernel's by default)
 *  into their parent's adjoints (see KIND_SLICE and emitRun). */
function emitSliceTotals(
  fn: Bytes, L: Locals, V: Lanes, sliceBases: Map<number, number>, pairs: boolean, storing: boolean, total = (m: number): number => V.R.slice(m),
): void {
  if (pairs) {
    // See emitRun: parent pair at the lower slice's address, + (carry lane 1, upper lane 0), + lower.
    const lower = sliceBases.get(1)!;
    element(fn, L, lower);
    if (storing) V.zero(); else { element(fn, L, lower); V.load(); }
    fn.get(L.carry); fn.get(total(0)); simdOp(fn, S_Shuffle);
    for (let byte = 8; byte < 24; byte++) fn.byte(byte);
    V.add();
    fn.get(total(1)); V.add();
    V.store();
    fn.get(total(0)); fn.set(L.carry);
    return;
  }
  const slices = [...sliceBases.keys()].sort((x, y) => x - y);
  for (let lane = 0; lane < V.width; lane++) {
    for (const m of slices) {
      element(fn, L, sliceBases.get(m)!);
      // (Storing into a fresh parent, the scalar loop's upper total is its last element's first.)
      if (storing && m === 0) fn.f64Const(0);
      else { element(fn, L, sliceBases.get(m)!); fn.memory(W_F64Load, 8 * lane); }
      fn.get(total(m));
      if (V.width === 2) { simdOp(fn, S_Extract); fn.byte(lane); }
      fn.byte(W_F64Add);
      fn.memory(W_F64Store, 8 * lane);
    }
  }
}
