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
// Signature (i32 words): reverse (0/1), count, then per node in ascending order: scalar op s,
// operand a's kind, operand b's kind, flags (reverse: 1 active, 2 store a, 4 store b). A kind is a
// run node's index, or KIND_* below. Parameters (i32 words per node): value and adjoint addresses
// of the node, of operand a, of operand b (elements or scalar slot), and its broadcast terms' slot.
import { Op, SCALAR_OP_TABLE } from '../../ops.ts';
import {
  Bytes, memarg, F64, I32, W_BrIf, W_Call, W_End, W_F64Add, W_F64Div, W_F64Load, W_F64Mul, W_F64Ne, W_F64Neg,
  W_F64Store, W_F64Sub, W_I32Add, W_I32And, W_If, W_Loop, W_Select, W_Void,
} from './wasm.ts';

const KIND_VECTOR = -1, KIND_VECTOR_CONSTANT = -2, KIND_SCALAR = -3, KIND_SCALAR_CONSTANT = -4;
const ACTIVE = 1, STORE_A = 2, STORE_B = 4;
const PARAM_WORDS = 7;
const W_Block = 0x02, W_I32Mul = 0x6c, W_I32GeU = 0x4f, W_I32LtU = 0x49, W_I32Load = 0x28;
// Imported functions: the core's rules.
const FN_FORWARD = 0, FN_PARTIALS = 1, FN_PARTIAL_Z = 2;
const NATIVE: Partial<Record<number, number>> = { [Op.add]: W_F64Add, [Op.sub]: W_F64Sub, [Op.mul]: W_F64Mul, [Op.div]: W_F64Div };

interface Node { s: number; a: number; b: number; flags: number; unary: boolean }

/** Whether the kernels spell every op of a run (select, with its third operand, is left to the
 *  block sweep). */
function parse(signature: Int32Array): { reverse: boolean; nodes: Node[] } | null {
  const reverse = signature[0] === 1, count = signature[1]!;
  const nodes: Node[] = [];
  for (let k = 0; k < count; k++) {
    const w = 2 + 4 * k;
    const s = signature[w]!;
    const entry = SCALAR_OP_TABLE[s];
    if (!entry || s === Op.select || s === Op.custom || s <= Op.arg) return null;
    nodes.push({ s, a: signature[w + 1]!, b: signature[w + 2]!, flags: signature[w + 3]!, unary: entry[1] === 1 });
  }
  return { reverse, nodes };
}

/** The wasm module of a run kernel `run(params, from, len)`, or null when it has an op the
 *  kernels leave to the block sweep. */
export function emitRunKernel(signature: Int32Array): Uint8Array<ArrayBuffer> | null {
  const parsed = parse(signature);
  if (!parsed) return null;
  const body = parsed.reverse ? emitReverseRun(parsed.nodes) : emitForwardRun(parsed.nodes);
  const out = new Bytes();
  out.bytes([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);
  const types = new Bytes();
  types.u32(4);
  types.bytes([0x60, 3, I32, I32, I32, 0]);
  types.bytes([0x60, 3, I32, F64, F64, 1, F64]);
  types.bytes([0x60, 4, I32, F64, F64, F64, 1, F64]);
  types.bytes([0x60, 0, 1, F64]);
  out.section(1, types);
  const imports = new Bytes();
  imports.u32(4);
  imports.name('env'); imports.name('memory'); imports.bytes([0x02, 0x00, 0x00]);
  imports.name('env'); imports.name('ruleForward'); imports.bytes([0x00, 1]);
  imports.name('env'); imports.name('rulePartials'); imports.bytes([0x00, 2]);
  imports.name('env'); imports.name('rulePartialZ'); imports.bytes([0x00, 3]);
  out.section(2, imports);
  const functions = new Bytes();
  functions.bytes([1, 0]);
  out.section(3, functions);
  const exports = new Bytes();
  exports.u32(1);
  exports.name('run'); exports.bytes([0x00, 3]);
  out.section(7, exports);
  const code = new Bytes();
  code.u32(1);
  code.u32(body.len);
  code.bytes(body.buf.subarray(0, body.len));
  out.section(10, code);
  return out.buf.slice(0, out.len);
}

// Locals: 0 params, 1 from, 2 len; then i32: the element byte offset, its end, and the seven
// parameter words of every node; then f64: a register per node, the value of each scalar
// operand (a, b per node), each node's terms (a, b), and the temporaries.
function locals(count: number) {
  const e = 3, end = 4, word = (k: number, w: number) => 5 + PARAM_WORDS * k + w;
  const f64 = 5 + PARAM_WORDS * count;
  return {
    e, end, word,
    reg: (k: number) => f64 + k,
    scalar: (k: number, b: boolean) => f64 + count + 2 * k + (b ? 1 : 0),
    terms: (k: number, b: boolean) => f64 + 3 * count + 2 * k + (b ? 1 : 0),
    g: f64 + 5 * count, x: f64 + 5 * count + 1, z: f64 + 5 * count + 2, p: f64 + 5 * count + 3,
    q: f64 + 5 * count + 4, t: f64 + 5 * count + 5,
    declare(fn: Bytes) {
      fn.u32(2);
      fn.u32(2 + PARAM_WORDS * count); fn.byte(I32);
      fn.u32(5 * count + 6); fn.byte(F64);
    },
  };
}
type Locals = ReturnType<typeof locals>;

const isScalar = (kind: number): boolean => kind === KIND_SCALAR || kind === KIND_SCALAR_CONSTANT;

/** Prologue: e = 8·from, end = 8·(from + len), the parameter words, the scalar operands' values;
 *  then opens `block { loop {` (the caller closes them with `emitLoopEnd`). */
function emitPrologue(fn: Bytes, nodes: Node[], L: Locals): void {
  fn.get(1); fn.i32Const(8); fn.byte(W_I32Mul); fn.tee(L.e);
  fn.get(2); fn.i32Const(8); fn.byte(W_I32Mul); fn.byte(W_I32Add); fn.set(L.end);
  nodes.forEach((_, k) => {
    for (let w = 0; w < PARAM_WORDS; w++) {
      fn.get(0); fn.byte(W_I32Load); fn.byte(2); fn.u32(4 * (PARAM_WORDS * k + w)); fn.set(L.word(k, w));
    }
  });
  nodes.forEach((node, k) => {
    for (const b of [false, true]) {
      if (!isScalar(b ? node.b : node.a)) continue;
      fn.get(L.word(k, b ? 4 : 2)); memarg(fn, W_F64Load, 0); fn.set(L.scalar(k, b));
      // The terms so far (the run sums a broadcast operand's terms across its calls).
      if ((b ? node.b : node.a) === KIND_SCALAR) { fn.get(L.word(k, 6)); memarg(fn, W_F64Load, b ? 8 : 0); fn.set(L.terms(k, b)); }
    }
  });
  fn.byte(W_Block); fn.byte(W_Void);
  fn.get(L.e); fn.get(L.end); fn.byte(W_I32GeU); fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_Loop); fn.byte(W_Void);
}

function emitLoopEnd(fn: Bytes, L: Locals): void {
  fn.get(L.e); fn.i32Const(8); fn.byte(W_I32Add); fn.tee(L.e);
  fn.get(L.end); fn.byte(W_I32LtU); fn.byte(W_BrIf); fn.u32(0);
  fn.byte(W_End); fn.byte(W_End);
}

/** Pushes the address of element e at the address in local `base`. */
function element(fn: Bytes, L: Locals, base: number): void {
  fn.get(base); fn.get(L.e); fn.byte(W_I32Add);
}

function emitForwardRun(nodes: Node[]): Bytes {
  const L = locals(nodes.length);
  const fn = new Bytes();
  L.declare(fn);
  emitPrologue(fn, nodes, L);
  const operand = (k: number, b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (kind >= 0) fn.get(L.reg(kind));
    else if (isScalar(kind)) fn.get(L.scalar(k, b));
    else { element(fn, L, L.word(k, b ? 4 : 2)); memarg(fn, W_F64Load, 0); }
  };
  nodes.forEach(({ s }, k) => {
    element(fn, L, L.word(k, 0));
    const native = NATIVE[s];
    if (native !== undefined) { operand(k, false); operand(k, true); fn.byte(native); }
    else if (s === Op.neg) { operand(k, false); fn.byte(W_F64Neg); }
    else if (s === Op.square) { operand(k, false); fn.tee(L.x); fn.get(L.x); fn.byte(W_F64Mul); }
    else { fn.i32Const(s); operand(k, false); operand(k, true); fn.byte(W_Call); fn.u32(FN_FORWARD); }
    fn.tee(L.reg(k));
    memarg(fn, W_F64Store, 0);
  });
  emitLoopEnd(fn, L);
  fn.byte(W_End);
  return fn;
}

function emitReverseRun(nodes: Node[]): Bytes {
  const L = locals(nodes.length);
  const fn = new Bytes();
  L.declare(fn);
  emitPrologue(fn, nodes, L);
  // Per element, which run nodes' adjoints are in their registers so far.
  const inRegister = new Set<number>();
  const value = (k: number, b: boolean): void => {
    const kind = b ? nodes[k]!.b : nodes[k]!.a;
    if (isScalar(kind)) fn.get(L.scalar(k, b));
    else { element(fn, L, L.word(k, b ? 4 : 2)); memarg(fn, W_F64Load, 0); }
  };
  // t = g != 0 && p != 0 ? g * p : 0, p in local `p`, into local t.
  const masked = (p: number): void => {
    fn.get(L.g); fn.get(p); fn.byte(W_F64Mul);
    fn.f64Const(0);
    fn.get(L.g); fn.f64Const(0); fn.byte(W_F64Ne);
    fn.get(p); fn.f64Const(0); fn.byte(W_F64Ne);
    fn.byte(W_I32And);
    fn.byte(W_Select);
    fn.set(L.t);
  };
  // The term in local t to operand b (or a) of node k, as `send` in assembly/vector.ts.
  const send = (k: number, b: boolean): void => {
    const node = nodes[k]!;
    const kind = b ? node.b : node.a;
    const fresh = (node.flags & (b ? STORE_B : STORE_A)) !== 0;
    if (kind === KIND_VECTOR_CONSTANT || kind === KIND_SCALAR_CONSTANT) return;
    if (kind === KIND_SCALAR) {
      fn.get(L.terms(k, b)); fn.get(L.t); fn.byte(W_F64Add); fn.set(L.terms(k, b));
      return;
    }
    if (kind >= 0) {
      const r = L.reg(kind);
      if (fresh) { fn.f64Const(0); fn.get(L.t); fn.byte(W_F64Add); fn.set(r); inRegister.add(kind); return; }
      if (!inRegister.has(kind)) { element(fn, L, L.word(kind, 1)); memarg(fn, W_F64Load, 0); fn.set(r); inRegister.add(kind); }
      fn.get(L.t); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_If); fn.byte(W_Void);
      fn.get(r); fn.get(L.t); fn.byte(W_F64Add); fn.set(r);
      fn.byte(W_End);
      return;
    }
    const base = L.word(k, b ? 5 : 3);
    if (fresh) { element(fn, L, base); fn.f64Const(0); fn.get(L.t); fn.byte(W_F64Add); memarg(fn, W_F64Store, 0); return; }
    fn.get(L.t); fn.f64Const(0); fn.byte(W_F64Ne);
    fn.byte(W_If); fn.byte(W_Void);
    element(fn, L, base); element(fn, L, base); memarg(fn, W_F64Load, 0); fn.get(L.t); fn.byte(W_F64Add);
    memarg(fn, W_F64Store, 0);
    fn.byte(W_End);
  };
  for (let k = nodes.length - 1; k >= 0; k--) {
    const node = nodes[k]!;
    if (!(node.flags & ACTIVE)) continue;
    // g: the adjoint, final now that every later node has sent its terms.
    if (inRegister.has(k)) {
      element(fn, L, L.word(k, 1)); fn.get(L.reg(k)); fn.tee(L.g); memarg(fn, W_F64Store, 0);
    } else {
      element(fn, L, L.word(k, 1)); memarg(fn, W_F64Load, 0); fn.set(L.g);
    }
    const { s } = node;
    if (s === Op.add || s === Op.sub) {
      fn.get(L.g); fn.set(L.t); send(k, false);
      fn.get(L.g); if (s === Op.sub) fn.byte(W_F64Neg); fn.set(L.t); send(k, true);
    } else if (s === Op.mul) {
      value(k, true); fn.set(L.z);
      value(k, false); fn.set(L.x);
      masked(L.z); send(k, false);
      masked(L.x); send(k, true);
    } else if (s === Op.square || s === Op.neg) {
      if (s === Op.square) { fn.f64Const(2); value(k, false); fn.byte(W_F64Mul); } else fn.f64Const(-1);
      fn.set(L.p);
      masked(L.p); send(k, false);
    } else {
      // p, q = g != 0 ? the rule's partials : 0, 0
      fn.f64Const(0); fn.set(L.p); fn.f64Const(0); fn.set(L.q);
      fn.get(L.g); fn.f64Const(0); fn.byte(W_F64Ne);
      fn.byte(W_If); fn.byte(W_Void);
      fn.i32Const(s); value(k, false); value(k, true); element(fn, L, L.word(k, 0)); memarg(fn, W_F64Load, 0);
      fn.byte(W_Call); fn.u32(FN_PARTIALS); fn.set(L.p);
      fn.byte(W_Call); fn.u32(FN_PARTIAL_Z); fn.set(L.q);
      fn.byte(W_End);
      masked(L.p); send(k, false);
      if (!node.unary) { masked(L.q); send(k, true); }
    }
  }
  emitLoopEnd(fn, L);
  nodes.forEach((node, k) => {
    for (const b of [false, true]) {
      if ((b ? node.b : node.a) !== KIND_SCALAR || (b && node.unary)) continue;
      fn.get(L.word(k, 6)); fn.get(L.terms(k, b)); memarg(fn, W_F64Store, b ? 8 : 0);
    }
  });
  fn.byte(W_End);
  return fn;
}

