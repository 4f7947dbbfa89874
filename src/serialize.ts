// The binary format of a compiled tape, version 4 (all integers little-endian):
//
//   offset  size            field
//   0       4               magic "TGRD"
//   4       2               format version (4; versions 1 to 3 are read too)
//   6       2               flags: bit 0 = the inputs are one input vector (node 1); bit 1 =
//                           the one output is an array of one scalar (f returned [y]: `value`
//                           gives a Float64Array of one, not a number); set only then, so other
//                           bytes read in builds before it
//   8       4               nodes N
//   12      4               inputs (nodes [0, inputs) are the inputs, in order; or the input
//                           vector's length)
//   16      4               outputs M (output nodes: a vector node stands for its elements)
//   20      4               guards G
//   24      4               leaves L (const and input nodes)
//   28      4               FNV-1a 32 checksum of every other byte, the header's included
//                           (versions 1 to 3: of every byte from the header's end)
//   32      4               E: element values of the vector leaves (versions 2 to 4)
//   36      4               reserved, 0 (versions 2 to 4)
//   40      N, padded to 4  op codes (u8)                       (version 1: at 32)
//           4N              first operand ids (i32)
//           4N              second operand ids (i32)
//           4M              output node ids (i32)
//           4G, padded to 8 guard node ids (i32)
//           8L              leaf values (f64), in node order
//           8G              guard values at recording (f64)
//           8E              element values of the vinput and vconst nodes, in node order (v2, v3)
//
// Versions differ in the op codes and the checksum, not the layout past the header: version 3
// added scalar ops (erf ... digamma, codes 51-57) before custom, so custom and every vector op
// moved up by 7; version 4 has version 3's codes, and its checksum covers the header too (a
// changed output count whose ids fit the padding before the leaves, a flag or the reserved word
// loaded as another function, found by a new-user probe's fuzzer).
// Loading translates version-1 and version-2 codes (custom = 51 then) to this build's before
// checking anything; elementwise codes (128 + s) kept their values, s being at most select.
//
// Element offsets are not trusted: loading lays the element ranges out again in node order.
// Loading checks the length, magic, version and checksum, then the structure (op codes known,
// operands before their node and of the right kind, carriers where their node expects them,
// every vector length consistent with its op: see checkVectorNode), so no byte string can make
// the core read outside the tape.
import type { BackendChoice, BackendKind } from './backend.ts';
import { CompiledFunction, MAX_INPUTS, type Recording } from './compile.ts';
import { limitPassedBy, resolveBackend, tapeFor } from './create.ts';
import type { TapeLimits } from './tape.ts';
import { CapacityError, FormatError, TapegradError, describe, typedArrayKind, unreadableError, unreadableView } from './errors.ts';
import { COMPARISON_OPS, ELEMENTWISE, Op, SCALAR_OP_TABLE, nodeKind, opNameOf, type NodeKind } from './ops.ts';
import { BACKEND_RULE, readOptions } from './options.ts';
import type { ShippedSweeps } from './wasm/backend.ts';

const MAGIC = 0x44524754; // "TGRD" read as u32 LE
/** The version of the binary format `toBytes` writes (4); `fromBytes` reads versions 1 to 4. */
export const FORMAT_VERSION = 4;
const HEADER_BYTES = { 1: 32, 2: 40, 3: 40, 4: 40 } as const;
/** Op code of custom in versions 1 and 2: codes from there up to the elementwise ones move. */
const CUSTOM_BEFORE_V3 = 51;
const MAX_NODES = 2 ** 28;
const MAX_ELEMENTS = 2 ** 28;
/** Bytes an output entry takes beyond the tape: its slot (4) and a call's result (8), rounded up. */
const OUTPUT_ENTRY_BYTES = 16;
const VECTOR_INPUT_FLAG = 1;
const ARRAY_OF_ONE_FLAG = 2;

const pad = (n: number, to: number): number => Math.ceil(n / to) * to;

function layout(version: 1 | 2 | 3 | 4, n: number, m: number, g: number, l: number, e: number) {
  const ops = HEADER_BYTES[version];
  const a = ops + pad(n, 4);
  const b = a + 4 * n;
  const outputs = b + 4 * n;
  const guards = outputs + 4 * m;
  const leaves = pad(guards + 4 * g, 8);
  const expected = leaves + 8 * l;
  const elements = expected + 8 * g;
  return { ops, a, b, outputs, guards, leaves, expected, elements, end: elements + 8 * e };
}

function fnv1a(bytes: Uint8Array, from: number, to: number, h = 0x811c9dc5): number {
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

// Versions 1 to 3: the bytes after the header; version 4: every byte but the checksum's own.
function checksum(bytes: Uint8Array, version: 1 | 2 | 3 | 4): number {
  const header = HEADER_BYTES[version];
  return version < 4 ? fnv1a(bytes, header, bytes.length) : fnv1a(bytes, 32, bytes.length, fnv1a(bytes, 0, 28));
}

/** The compiled tape as bytes (format above). Custom functions cannot be stored. */
export function toBytes(compiled: CompiledFunction): Uint8Array<ArrayBuffer> {
  const rec = compiled.recorded;
  if (!rec) {
    throw new TapegradError(
      'INVALID_ARGUMENT',
      compiled.lastRecordingFailed
        ? 'toBytes: its last recording failed (f threw, or recorded what compile refuses), so nothing is recorded: call the compiled function at inputs where it records first'
        : 'toBytes: nothing recorded yet: call the compiled function once (or compile with { at }) first',
    );
  }
  const { op, a, b, val, xval } = rec.tape.engine.views;
  const n = rec.tape.size;
  const leafIds: number[] = [];
  const elementRanges: [number, number][] = [];
  let e = 0;
  for (let i = 0; i < n; i++) {
    if (op[i] === Op.custom) throw new TapegradError('INVALID_ARGUMENT', 'toBytes: a tape with custom functions cannot be serialized: their rules are JS code');
    if (op[i]! <= Op.input) leafIds.push(i);
    if (op[i] === Op.vinput || op[i] === Op.vconst) {
      elementRanges.push([a[i - 1]!, b[i - 1]!]);
      e += b[i - 1]!;
    }
  }
  const m = rec.outputNodes.length, g = rec.guards.length, l = leafIds.length;
  const at = layout(FORMAT_VERSION, n, m, g, l, e);
  const bytes = new Uint8Array(at.end);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint16(4, FORMAT_VERSION, true);
  view.setUint16(6, (rec.vectorInput ? VECTOR_INPUT_FLAG : 0) | (compiled.outputIsArrayOfOne ? ARRAY_OF_ONE_FLAG : 0), true);
  [n, rec.inputs, m, g, l].forEach((v, k) => view.setUint32(8 + 4 * k, v, true));
  view.setUint32(32, e, true);
  bytes.set(op.subarray(0, n), at.ops);
  for (let i = 0; i < n; i++) {
    view.setInt32(at.a + 4 * i, a[i]!, true);
    view.setInt32(at.b + 4 * i, b[i]!, true);
  }
  rec.outputNodes.forEach((v, j) => view.setInt32(at.outputs + 4 * j, v, true));
  rec.guards.forEach((v, k) => view.setInt32(at.guards + 4 * k, v, true));
  leafIds.forEach((i, k) => view.setFloat64(at.leaves + 8 * k, val[i]!, true));
  rec.expected.forEach((v, k) => view.setFloat64(at.expected + 8 * k, v, true));
  let p = at.elements;
  for (const [off, len] of elementRanges) for (let k = 0; k < len; k++, p += 8) view.setFloat64(p, xval[off + k]!, true);
  view.setUint32(28, checksum(bytes, FORMAT_VERSION), true);
  return bytes;
}

/** Options of `fromBytes`. */
export interface FromBytesOptions {
  /** Engine to replay on (default 'wasm'; `await init()` first), see BackendChoice. */
  backend?: BackendChoice | undefined;
  /** Most nodes the loaded tape may hold, as `createTape`'s `maxNodes`: bytes from elsewhere may
   *  describe a tape far larger than themselves (an outer product of two short vectors), and past
   *  a limit loading throws CapacityError instead of taking the memory. */
  maxNodes?: number | undefined;
  /** Most bytes of tape storage for the loaded tape, as `createTape`'s `maxMemoryBytes` (nodes and
   *  vector elements count together); past it loading throws CapacityError. */
  maxMemoryBytes?: number | undefined;
  /** Check every replay for NaN and ±Infinity, as `compile(f, { checkNaN: true })` (the bytes do
   *  not carry it). */
  checkNaN?: boolean | undefined;
}

/** Loads bytes made by `toBytes` (on either backend, in any process) as a CompiledFunction.
 *  Throws FormatError for anything truncated, corrupted, of a version it does not read (1 to
 *  FORMAT_VERSION) or malformed. A loaded function has no JS source, so a failed guard throws
 *  BranchChangedError. */
export function fromBytes(bytes: Uint8Array, options: FromBytesOptions = {}): CompiledFunction {
  options = readOptions(options, 'fromBytes', { backend: BACKEND_RULE, maxNodes: 'number', maxMemoryBytes: 'number', checkNaN: 'boolean' });
  const { maxNodes, maxMemoryBytes } = options;
  const limits = { ...(maxNodes === undefined ? {} : { maxNodes }), ...(maxMemoryBytes === undefined ? {} : { maxMemoryBytes }) };
  try {
    // 'auto' as given: the tape falls back as createTape's does (see loadBytes).
    return loadBytes(bytes, options.backend === 'auto' ? 'auto' : resolveBackend(options.backend), null, true, limits, options.checkNaN === true);
  } catch (error) {
    // The format's messages say what is wrong with the bytes; the call they came to leads them,
    // as every other message's does (a probe: 'truncated: 10 bytes...' named no call).
    if (error instanceof FormatError) error.message = `fromBytes: ${error.message}`;
    throw error;
  }
}

/** @internal `fromBytes`, installing sweeps another core generated for this tape (see
 *  `CompiledFunction.shipSweeps`) instead of generating them; with `codegen` false it neither
 *  generates nor installs any (the tape is interpreted). */
export function loadBytes(
  bytes: Uint8Array, backend: BackendChoice, sweeps: ShippedSweeps | null, codegen: boolean, limits: TapeLimits = {}, checkNaN = false,
): CompiledFunction {
  if (!isUint8Array(bytes)) throw new TapegradError('INVALID_ARGUMENT', `fromBytes needs a Uint8Array, got ${describe(bytes)}`);
  // A buffer gone (transferred to a worker) is named as such, as every call names it, not as 0
  // bytes truncated (a browser probe).
  if (unreadableView(bytes)) throw unreadableError('fromBytes');
  bytes = intrinsicView(bytes);
  if (bytes.length < HEADER_BYTES[1]) throw new FormatError(`truncated: ${bytes.length} bytes, a tape has at least ${HEADER_BYTES[1]}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new FormatError('not a tapegrad tape (bad magic number)');
  const version = view.getUint16(4, true);
  if (version !== 1 && version !== 2 && version !== 3 && version !== 4) throw new FormatError(`unsupported format version ${version}; this build reads versions 1 to 4`);
  if (bytes.length < HEADER_BYTES[version]) throw new FormatError(`truncated: expected ${HEADER_BYTES[version]} bytes or more for a version ${version} header, got ${bytes.length}`);
  const flags = view.getUint16(6, true);
  const vectorInput = (flags & VECTOR_INPUT_FLAG) !== 0;
  const [n, inputs, m, g, l] = [8, 12, 16, 20, 24].map((o) => view.getUint32(o, true)) as [number, number, number, number, number];
  const e = version >= 2 ? view.getUint32(32, true) : 0;
  if (
    // Outputs may repeat nodes (f returned [y, x, y]) or be none (f returned []): as many as the
    // bytes hold, which the length check below settles.
    // An input vector is nodes 0 and 1 and holds at most what compile takes (a 40-byte file of no
    // nodes claiming 2^31 inputs had its input buffers allocated: a probe).
    n > MAX_NODES || inputs < 1 || (vectorInput ? n < 2 || inputs > MAX_INPUTS : inputs > n) || m > MAX_NODES || g > n || l > n || e > MAX_ELEMENTS ||
    (flags & ~(VECTOR_INPUT_FLAG | ARRAY_OF_ONE_FLAG)) !== 0 || (version === 1 && flags !== 0) || (flags & ARRAY_OF_ONE_FLAG && version < 3)
  ) {
    throw new FormatError(`malformed header: ${n} nodes, ${inputs} inputs, ${m} outputs, ${g} guards, ${l} leaves, ${e} elements, flags ${flags}`);
  }
  if (version >= 2 && view.getUint32(36, true) !== 0) throw new FormatError(`malformed header: the reserved word at offset 36 is ${view.getUint32(36, true)}, not 0`);
  const at = layout(version, n, m, g, l, e);
  if (bytes.length !== at.end) throw new FormatError(`${bytes.length < at.end ? 'truncated' : 'trailing bytes'}: expected ${at.end} bytes for this header, got ${bytes.length}`);
  if (view.getUint32(28, true) !== checksum(bytes, version)) throw new FormatError('corrupted: checksum mismatch');

  // A copy, never a view of the caller's bytes: a Node Buffer's slice is a view, so old op codes
  // were translated in the caller's file, and a rebuild read bytes no check had seen (a probe).
  const op = new Uint8Array(n);
  op.set(bytes.subarray(at.ops, at.ops + n));
  if (version < 3) {
    const shift = Op.custom - CUSTOM_BEFORE_V3;
    for (let i = 0; i < n; i++) if (op[i]! >= CUSTOM_BEFORE_V3 && op[i]! < ELEMENTWISE) op[i] = Math.min(op[i]! + shift, ELEMENTWISE - 1);
  }
  const a = new Int32Array(n), b = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    a[i] = view.getInt32(at.a + 4 * i, true);
    b[i] = view.getInt32(at.b + 4 * i, true);
  }
  const elementValues = Float64Array.from({ length: e }, (_, k) => view.getFloat64(at.elements + 8 * k, true));
  const leaves = checkStructure(op, a, b, inputs, vectorInput, version, elementValues);
  if (leaves !== l) throw new FormatError(`malformed: header says ${l} leaves, the tape has ${leaves}`);
  const outputNodes = Int32Array.from({ length: m }, (_, j) => view.getInt32(at.outputs + 4 * j, true));
  const guards = Int32Array.from({ length: g }, (_, k) => view.getInt32(at.guards + 4 * k, true));
  const expected = Float64Array.from({ length: g }, (_, k) => view.getFloat64(at.expected + 8 * k, true));
  if (outputNodes.some((i) => !(i >= 0 && i < n) || kindOf(op, i) === 'carrier')) throw new FormatError('malformed: an output is not a node of the tape (or is an operand carrier)');
  if (guards.some((i) => i < 0 || i >= n || !COMPARISON_OPS.has(op[i]!))) throw new FormatError('malformed: a guard is not a comparison node');
  // Outputs may repeat a vector node, each time all its elements: a few bytes claimed 2^26
  // outputs of one vector, seconds and hundreds of MB to load whatever the limits (a probe).
  let entries = 0;
  for (let j = 0; j < m; j++) entries += kindOf(op, outputNodes[j]!) === 'vector' ? b[outputNodes[j]! - 1]! : 1;
  if (entries > MAX_ELEMENTS) throw new FormatError(`malformed: the outputs hold ${entries} entries, past the element limit ${MAX_ELEMENTS}`);
  if (flags & ARRAY_OF_ONE_FLAG && entries !== 1) throw new FormatError(`malformed: the array-of-one flag with ${entries} output entries`);

  // Its size is known: room for it (and its planner) from the start, so that loading grows no
  // memory (see expectedNodes), where the limits allow it (past them load's CapacityError names
  // the limit).
  const tape = tapeFor({ backend, ...limits, ...(limitPassedBy(n, limits) === null ? { expectedNodes: n } : {}) }, 'fromBytes');
  // The outputs' slots and each call's results, which the tape's own accounting does not see.
  if (OUTPUT_ENTRY_BYTES * entries > tape.maxMemoryBytes) {
    throw new CapacityError(`fromBytes: the function's ${entries} outputs need ${OUTPUT_ENTRY_BYTES * entries} bytes (their slots and a call's results), past maxMemoryBytes = ${tape.maxMemoryBytes}`, tape.maxMemoryBytes);
  }
  const leafValues = Float64Array.from({ length: l }, (_, k) => view.getFloat64(at.leaves + 8 * k, true));
  const build = (): Recording => {
    tape.load(op, a, b, leafValues, elementValues);
    const val = tape.engine.views.val;
    guards.forEach((node, k) => {
      if (val[node] !== expected[k] && !roundingTie(val[a[node]!]!, val[b[node]!]!)) {
        throw new FormatError(`malformed: guard at node ${node} does not hold at the recorded inputs`);
      }
    });
    const views = tape.engine.views;
    const outputs = new Int32Array(entries);
    for (let j = 0, pos = 0; j < m; j++) {
      const i = outputNodes[j]!;
      if (kindOf(op, i) !== 'vector') outputs[pos++] = i;
      else for (let k = 0, off = views.a[i - 1]!, len = views.b[i - 1]!; k < len; k++) outputs[pos++] = -1 - (off + k);
    }
    return { tape, inputs, outputs, guards, expected, vectorInput, outputNodes };
  };
  const loaded = new CompiledFunction(null, inputs, tape.backend, true, build(), true, build, codegen, vectorInput, checkNaN, sweeps);
  if (flags & ARRAY_OF_ONE_FLAG) loaded.markArrayOfOne();
  return loaded;
}

// Whether a guard's operands are equal but for rounding, as the two engines' math differs in the
// last bits (README, Numerics): bytes another engine wrote at a tie load, and a call at that point
// then crosses the guard on this engine (a probe's valid bytes were called malformed).
function roundingTie(x: number, y: number): boolean {
  return Math.abs(x - y) <= 2 ** -40 * Math.max(Math.abs(x), Math.abs(y));
}

function kindOf(op: Uint8Array, j: number): NodeKind {
  return nodeKind(op[j]!);
}

/** Validates every node (see the format notes above) and returns the number of scalar leaves.
 *  Vector leaves consume `elementValues` in node order; their count must match exactly. */
function checkStructure(
  op: Uint8Array, a: Int32Array, b: Int32Array, inputs: number, vectorInput: boolean, version: number, elementValues: Float64Array,
): number {
  const n = op.length;
  const claimed = new Uint8Array(n); // carriers claimed by the node they serve
  const len = new Float64Array(n); // element count of vector nodes
  const elementStart = new Float64Array(n); // where a vector leaf's values start in elementValues
  let leaves = 0, elements = 0;
  const fail = (i: number, what: string): never => {
    throw new FormatError(`malformed: node ${i} (${opNameOf(op[i]!)}) ${what}`);
  };
  const earlier = (i: number, j: number, kind: NodeKind): void => {
    if (!(j >= 0 && j < i)) fail(i, 'uses an operand that is not an earlier node');
    const k = kindOf(op, j);
    if (k === 'carrier') fail(i, 'uses an operand carrier as an operand');
    if (k !== kind) fail(i, `needs a ${kind} operand, node ${j} is a ${k}`);
  };
  const operand = (i: number, j: number): number => {
    if (!(j >= 0 && j < i) || kindOf(op, j) === 'carrier') fail(i, 'uses an operand that is not an earlier value node');
    return kindOf(op, j) === 'vector' ? len[j]! : -1;
  };
  const claim = (i: number, j: number, code: number): void => {
    if (j < 0 || op[j] !== code || claimed[j]) fail(i, `is not preceded by its ${opNameOf(code)} node (at ${j})`);
    claimed[j] = 1;
  };
  for (let i = 0; i < n; i++) {
    const code = op[i]!;
    if (code > Op.vgather && !(code >= ELEMENTWISE + Op.add && code < ELEMENTWISE + Op.custom)) throw new FormatError(`malformed: node ${i} has an unknown op code ${code}`);
    const isInput = vectorInput ? i <= 1 : i < inputs;
    if (version === 1 && code >= Op.vmeta) fail(i, 'is a vector op, which version 1 does not have');
    if (vectorInput && i === 0 && code !== Op.vmeta) fail(i, 'must be the vmeta of the input vector');
    if (vectorInput ? i === 1 && code !== Op.vinput : (code === Op.input) !== isInput) {
      throw new FormatError(`malformed: inputs must be exactly ${vectorInput ? 'the input vector at node 1' : `nodes 0..${inputs - 1}`}, not node ${i} (${opNameOf(code)})`);
    }
    if (code === Op.input && !isInput) fail(i, 'is an input outside the input nodes');
    if (code === Op.custom) fail(i, 'has an unknown op code: custom functions cannot be stored, their rules are JS code');
    if (code <= Op.input) {
      a[i] = b[i] = i;
      leaves++;
      continue;
    }
    if (code === Op.arg || code === Op.vparam) continue; // claimed below by their node
    if (code === Op.vmeta) {
      if (!(b[i]! >= 0 && b[i]! <= MAX_ELEMENTS) || !(i + 1 < n && kindOf(op, i + 1) === 'vector')) fail(i, 'is not followed by a vector node of a valid length');
      continue;
    }
    if (code < Op.vmeta) {
      // A scalar op: operands are earlier scalar nodes; select carries its third on an arg.
      earlier(i, a[i]!, 'scalar');
      earlier(i, b[i]!, 'scalar');
      // As recorded: a unary op's second operand is its first, powConst's exponent a constant (a
      // probe's sin with a second operand made the engines' tangents differ; an input exponent
      // gave the gradient of a constant power).
      if (SCALAR_OP_TABLE[code]![1] === 1 && b[i] !== a[i]) fail(i, 'is unary but has two operands');
      if (code === Op.powConst && op[b[i]!] !== Op.const) fail(i, 'needs a constant exponent');
      if (code === Op.select) {
        claim(i, i - 1, Op.arg);
        earlier(i, a[i - 1]!, 'scalar');
        earlier(i, b[i - 1]!, 'scalar');
      }
      continue;
    }
    if (code <= Op.vdot) {
      // Scalar results of vector operands.
      earlier(i, a[i]!, 'vector');
      if (code === Op.vget) { if (!(b[i]! >= 0 && b[i]! < len[a[i]!]!)) fail(i, `reads element ${b[i]} of a ${len[a[i]!]}-element vector`); }
      else if (code === Op.vdot) { earlier(i, b[i]!, 'vector'); if (len[a[i]!] !== len[b[i]!]) fail(i, 'multiplies vectors of different lengths'); }
      else if (b[i] !== a[i]) fail(i, 'has a second operand');
      continue;
    }
    // A vector node: its vmeta carrier holds its length.
    claim(i, i - 1, Op.vmeta);
    const size = b[i - 1]!;
    len[i] = size;
    elements += size;
    if (elements > MAX_ELEMENTS) fail(i, 'takes the tape past its element limit');
    const s = code - ELEMENTWISE;
    if (code === Op.vinput || code === Op.vconst) {
      if (code === Op.vinput && !(vectorInput && i === 1 && size === inputs)) fail(i, 'is an input vector where none belongs');
      a[i] = b[i] = i;
      elementStart[i] = -1;
      continue;
    }
    if (code === Op.vmatmul || code === Op.vtranspose) {
      claim(i, i - 2, Op.vparam);
      const m = a[i - 2]!, k = b[i - 2]!;
      if (!(m >= 0 && k >= 0)) fail(i, 'has negative dimensions');
      earlier(i, a[i]!, 'vector');
      if (code === Op.vtranspose) {
        if (len[a[i]!] !== m * k || size !== m * k || b[i] !== a[i]) fail(i, `transposes [${m}, ${k}] from ${len[a[i]!]} elements into ${size}`);
        continue;
      }
      earlier(i, b[i]!, 'vector');
      // With no rows the product has no elements, whatever B's columns (a probe's [0, 0]·[0, p]
      // claimed 5; and a recorded [0, k]·[k, p] with k, p > 0 did not load).
      const p = m === 0 ? (k === 0 ? 0 : len[b[i]!]! / k) : size / m;
      if (!Number.isInteger(p) || len[a[i]!] !== m * k || len[b[i]!] !== k * p || size !== m * p) fail(i, `multiplies ${len[a[i]!]} by ${len[b[i]!]} elements as [${m}, ${k}]·[${k}, ${p}] into ${size}`);
      continue;
    }
    if (code === Op.vslice) {
      earlier(i, a[i]!, 'vector');
      if (!(b[i]! >= 0 && b[i]! + size <= len[a[i]!]!)) fail(i, 'slices outside its operand');
      continue;
    }
    if (code === Op.vgather) {
      earlier(i, a[i]!, 'vector');
      earlier(i, b[i]!, 'vector');
      const idx = b[i]!;
      if (op[idx] !== Op.vconst || len[idx] !== size) fail(i, 'needs a constant index vector of its own length');
      continue; // its index values are checked below, once the leaves' values are placed
    }
    if (code === Op.vconcat) {
      const count = a[i]!, carriers = (count + 1) >> 1;
      if (!(count >= 1 && carriers <= i - 1)) fail(i, 'has no operands');
      let total = 0;
      for (let c = 0; c < carriers; c++) {
        const carrier = i - 1 - carriers + c;
        claim(i, carrier, Op.arg);
        const first = operand(i, a[carrier]!);
        total += first < 0 ? 1 : first;
        if (2 * c + 1 < count) {
          const second = operand(i, b[carrier]!);
          total += second < 0 ? 1 : second;
        }
      }
      if (total !== size) fail(i, `joins ${total} elements into ${size}`);
      continue;
    }
    if (code >= ELEMENTWISE && s > Op.arg && s < Op.custom) {
      const arity = SCALAR_OP_TABLE[s]![1];
      const lengths = [operand(i, a[i]!), operand(i, b[i]!)];
      if (arity === 1 && b[i] !== a[i]) fail(i, 'is unary but has two operands');
      // As the scalar powConst's (a probe: an element of the input as the exponent loaded).
      if (s === Op.powConst && op[b[i]!] !== Op.const) fail(i, 'needs a constant exponent');
      if (s === Op.select) {
        claim(i, i - 2, Op.arg);
        lengths.push(operand(i, a[i - 2]!));
      }
      const vectors = lengths.filter((x) => x >= 0);
      const shortest = Math.min(size, ...vectors);
      if (vectors.some((x) => x !== size && x !== shortest) || (shortest === 0 ? size !== 0 : size % shortest !== 0)) {
        fail(i, `broadcasts operands of ${vectors.join(', ')} elements to ${size}`);
      }
      continue;
    }
    fail(i, 'has an unknown op code');
  }
  // Every carrier serves the node after it (checked through `claim`).
  for (let i = 0; i < n; i++) {
    const code = op[i]!;
    if ((code === Op.arg || code === Op.vparam || code === Op.vmeta) && !claimed[i]) fail(i, 'carries an operand but is not followed by a select or a vector node using it');
  }
  // Element values: one per element of each vector leaf, in node order; gather indices in range.
  let e = 0;
  for (let i = 0; i < n; i++) {
    if (op[i] === Op.vinput || op[i] === Op.vconst) {
      elementStart[i] = e;
      e += len[i]!;
    }
  }
  if (e !== elementValues.length) throw new FormatError(`malformed: the vector leaves hold ${e} elements, the file ${elementValues.length}`);
  for (let i = 0; i < n; i++) {
    if (op[i] !== Op.vgather) continue;
    const from = elementStart[b[i]!]!, limit = len[a[i]!]!;
    for (let k = 0; k < len[i]!; k++) {
      const j = elementValues[from + k]!;
      if (!(Number.isInteger(j) && j >= 0 && j < limit)) fail(i, `gathers index ${j} of a ${limit}-element vector`);
    }
  }
  return leaves;
}

/** @internal Whether `x` is a Uint8Array (a Node Buffer included) of any realm: one from a `vm`
 *  context (as test runners make) failed `instanceof` with a message saying it was one. */
// The typed arrays' own accessors, which an own property of the array cannot shadow.
const TYPED_ARRAY = Object.getPrototypeOf(Uint8Array.prototype) as object;
const accessor = (name: string): (this: unknown) => unknown => Object.getOwnPropertyDescriptor(TYPED_ARRAY, name)!.get!;
const bufferOf = accessor('buffer'), byteOffsetOf = accessor('byteOffset'), byteLengthOf = accessor('byteLength');

/** A plain view of `bytes`' range, read through the intrinsic accessors: an own `buffer`,
 *  `byteOffset` or `subarray` on the array gave a raw RangeError (a probe). */
function intrinsicView(bytes: Uint8Array): Uint8Array {
  const length = byteLengthOf.call(bytes) as number;
  // (A detached buffer, refused before, cannot be viewed again.)
  return length === 0 ? new Uint8Array(0) : new Uint8Array(bufferOf.call(bytes) as ArrayBuffer, byteOffsetOf.call(bytes) as number, length);
}

export function isUint8Array(x: unknown): x is Uint8Array {
  return typedArrayKind(x) === 'Uint8Array';
}
