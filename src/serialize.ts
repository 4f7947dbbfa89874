// The binary format of a compiled tape, version 1 (all integers little-endian):
//
//   offset  size            field
//   0       4               magic "TGRD"
//   4       2               format version (1)
//   6       2               flags (0; reserved)
//   8       4               nodes N
//   12      4               inputs (nodes [0, inputs) are the inputs, in order)
//   16      4               outputs M
//   20      4               guards G
//   24      4               leaves L (const and input nodes)
//   28      4               FNV-1a 32 checksum of every byte from offset 32 to the end
//   32      N, padded to 4  op codes (u8)
//           4N              first operand ids (i32)
//           4N              second operand ids (i32)
//           4M              output node ids (i32)
//           4G, padded to 8 guard node ids (i32)
//           8L              leaf values (f64), in node order
//           8G              guard values at recording (f64)
//
// Loading checks the length, magic, version and checksum, then the structure (op codes known,
// operands before their node, select preceded by its arg node), so no byte string can make the
// core read outside the tape.
import type { BackendKind } from './backend.ts';
import { CompiledFunction, type Recording } from './compile.ts';
import { createTapeSync } from './create.ts';
import { FormatError, TapegradError, describe } from './errors.ts';
import { COMPARISON_OPS, Op, OP_NAMES } from './ops.ts';

const MAGIC = 0x44524754; // "TGRD" read as u32 LE
export const FORMAT_VERSION = 1;
const HEADER_BYTES = 32;
const MAX_NODES = 2 ** 28;

const pad = (n: number, to: number): number => Math.ceil(n / to) * to;

function layout(n: number, m: number, g: number, l: number) {
  const ops = HEADER_BYTES;
  const a = ops + pad(n, 4);
  const b = a + 4 * n;
  const outputs = b + 4 * n;
  const guards = outputs + 4 * m;
  const leaves = pad(guards + 4 * g, 8);
  const expected = leaves + 8 * l;
  return { ops, a, b, outputs, guards, leaves, expected, end: expected + 8 * g };
}

function fnv1a(bytes: Uint8Array, from: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

/** The compiled tape as bytes (format above). Custom functions cannot be stored. */
export function toBytes(compiled: CompiledFunction): Uint8Array {
  const rec = compiled.recorded;
  if (!rec) throw new TapegradError('INVALID_ARGUMENT', 'nothing recorded yet: call the compiled function once (or compile with { at }) before toBytes()');
  const { op, a, b, val } = rec.tape.engine.views;
  const n = rec.tape.size;
  const leafIds: number[] = [];
  for (let i = 0; i < n; i++) {
    if (op[i] === Op.custom) throw new TapegradError('INVALID_ARGUMENT', 'a tape with custom functions cannot be serialized: their rules are JS code');
    if (op[i]! <= Op.input) leafIds.push(i);
  }
  const m = rec.outputs.length, g = rec.guards.length, l = leafIds.length;
  const at = layout(n, m, g, l);
  const bytes = new Uint8Array(at.end);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint16(4, FORMAT_VERSION, true);
  view.setUint16(6, 0, true);
  [n, rec.inputs, m, g, l].forEach((v, k) => view.setUint32(8 + 4 * k, v, true));
  bytes.set(op.subarray(0, n), at.ops);
  for (let i = 0; i < n; i++) {
    view.setInt32(at.a + 4 * i, a[i]!, true);
    view.setInt32(at.b + 4 * i, b[i]!, true);
  }
  rec.outputs.forEach((v, j) => view.setInt32(at.outputs + 4 * j, v, true));
  rec.guards.forEach((v, k) => view.setInt32(at.guards + 4 * k, v, true));
  leafIds.forEach((i, k) => view.setFloat64(at.leaves + 8 * k, val[i]!, true));
  rec.expected.forEach((v, k) => view.setFloat64(at.expected + 8 * k, v, true));
  view.setUint32(28, fnv1a(bytes, HEADER_BYTES), true);
  return bytes;
}

export interface FromBytesOptions {
  /** Engine to replay on (default 'wasm'; `await init()` first). */
  backend?: BackendKind;
}

/** Loads bytes made by `toBytes` (on either backend, in any process) as a CompiledFunction.
 *  Throws FormatError for anything truncated, corrupted, of another version or malformed. A
 *  loaded function has no JS source, so a failed guard throws BranchChangedError. */
export function fromBytes(bytes: Uint8Array, options: FromBytesOptions = {}): CompiledFunction {
  if (!(bytes instanceof Uint8Array)) throw new FormatError(`fromBytes needs a Uint8Array, got ${describe(bytes)}`);
  if (bytes.length < HEADER_BYTES) throw new FormatError(`truncated: ${bytes.length} bytes, a tape has at least ${HEADER_BYTES}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC) throw new FormatError('not a tapegrad tape (bad magic number)');
  const version = view.getUint16(4, true);
  if (version !== FORMAT_VERSION) throw new FormatError(`unsupported format version ${version}; this build reads version ${FORMAT_VERSION}`);
  const [n, inputs, m, g, l] = [8, 12, 16, 20, 24].map((o) => view.getUint32(o, true)) as [number, number, number, number, number];
  if (n > MAX_NODES || inputs < 1 || inputs > n || m < 1 || m > n || g > n || l > n) {
    throw new FormatError(`malformed header: ${n} nodes, ${inputs} inputs, ${m} outputs, ${g} guards, ${l} leaves`);
  }
  const at = layout(n, m, g, l);
  if (bytes.length !== at.end) throw new FormatError(`${bytes.length < at.end ? 'truncated' : 'trailing bytes'}: expected ${at.end} bytes for this header, got ${bytes.length}`);
  if (view.getUint32(28, true) !== fnv1a(bytes, HEADER_BYTES)) throw new FormatError('corrupted: checksum mismatch');

  const op = bytes.slice(at.ops, at.ops + n);
  const a = new Int32Array(n), b = new Int32Array(n);
  let leaves = 0;
  for (let i = 0; i < n; i++) {
    a[i] = view.getInt32(at.a + 4 * i, true);
    b[i] = view.getInt32(at.b + 4 * i, true);
    const code = op[i]!;
    const where = `node ${i} (${OP_NAMES[code] ?? `op ${code}`})`;
    if (code >= OP_NAMES.length || code === Op.custom) throw new FormatError(`malformed: ${where} has an unknown op code`);
    if ((code === Op.input) !== (i < inputs)) throw new FormatError(`malformed: inputs must be exactly nodes 0..${inputs - 1}, not ${where}`);
    if (code <= Op.input) {
      a[i] = b[i] = i;
      leaves++;
      continue;
    }
    if (!(a[i]! >= 0 && a[i]! < i && b[i]! >= 0 && b[i]! < i)) throw new FormatError(`malformed: ${where} uses an operand that is not an earlier node`);
    if (op[a[i]!] === Op.arg || op[b[i]!] === Op.arg) throw new FormatError(`malformed: ${where} uses an arg node (an operand carrier) as an operand`);
    if (code === Op.arg && op[i + 1] !== Op.select) throw new FormatError(`malformed: ${where} carries an operand but is not followed by a select`);
    if (code === Op.select && op[i - 1] !== Op.arg) throw new FormatError(`malformed: ${where} is not preceded by its arg node`);
  }
  if (leaves !== l) throw new FormatError(`malformed: header says ${l} leaves, the tape has ${leaves}`);
  const outputs = Int32Array.from({ length: m }, (_, j) => view.getInt32(at.outputs + 4 * j, true));
  const guards = Int32Array.from({ length: g }, (_, k) => view.getInt32(at.guards + 4 * k, true));
  const expected = Float64Array.from({ length: g }, (_, k) => view.getFloat64(at.expected + 8 * k, true));
  if (outputs.some((i) => i < 0 || i >= n)) throw new FormatError('malformed: an output is not a node of the tape');
  if (guards.some((i) => i < 0 || i >= n || !COMPARISON_OPS.has(op[i]!))) throw new FormatError('malformed: a guard is not a comparison node');

  const tape = createTapeSync({ backend: options.backend ?? 'wasm' });
  const leafValues = Float64Array.from({ length: l }, (_, k) => view.getFloat64(at.leaves + 8 * k, true));
  const build = (): Recording => {
    tape.load(op, a, b, leafValues);
    const val = tape.engine.views.val;
    guards.forEach((node, k) => {
      if (val[node] !== expected[k]) throw new FormatError(`malformed: guard at node ${node} does not hold at the recorded inputs`);
    });
    return { tape, inputs, outputs, guards, expected };
  };
  return new CompiledFunction(null, inputs, tape.backend, true, build(), true, build);
}
