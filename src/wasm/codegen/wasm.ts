// The wasm byte writer: a growable byte buffer with LEB128 integers, f64 immediates, names,
// local accesses, memory instructions and sections, and the value types and opcodes the emitters
// use.

// ───────────────────────────── wasm encoding ─────────────────────────────

// An f64 immediate's bytes, through one scratch for every writer (two buffers a writer before).
const F64_SCRATCH = new Float64Array(1), F64_BYTES = new Uint8Array(F64_SCRATCH.buffer);

export class Bytes {
  buf: Uint8Array<ArrayBuffer>;
  len = 0;
  constructor(capacity = 1024) {
    this.buf = new Uint8Array(capacity);
  }
  /** Bytes written elsewhere, as written. */
  static of(bytes: Uint8Array): Bytes {
    const b = new Bytes(0);
    b.buf = bytes as Uint8Array<ArrayBuffer>;
    b.len = bytes.length;
    return b;
  }
  // Each writer checks room once and writes its bytes itself, with no call per byte: the emitters
  // run on a first compile, before V8 has optimised them, and the branchy loss at 10,000 samples
  // made 45 k calls of these for its 45 KB of code, a local's access three (emitting took 5.4-6.3
  // ms of that first compile at best, 4.8-4.9 with one call an access).
  byte(x: number): void {
    if (this.len === this.buf.length) this.room(1);
    this.buf[this.len++] = x;
  }
  bytes(xs: ArrayLike<number>): void {
    if (!(xs instanceof Uint8Array)) {
      for (let k = 0; k < xs.length; k++) this.byte(xs[k]!);
      return;
    }
    this.room(xs.length);
    this.buf.set(xs, this.len);
    this.len += xs.length;
  }
  u32(x: number): void {
    if (this.len + 5 > this.buf.length) this.room(5);
    this.len = writeUnsigned(this.buf, this.len, x);
  }
  i32(x: number): void {
    if (this.len + 5 > this.buf.length) this.room(5);
    this.len = writeSigned(this.buf, this.len, x | 0);
  }
  // An opcode and an unsigned LEB128 immediate (a local's index, mostly one byte).
  private opUnsigned(opcode: number, x: number): void {
    if (this.len + 6 > this.buf.length) this.room(6);
    const buf = this.buf;
    let at = this.len;
    buf[at++] = opcode;
    if (x >>> 0 < 0x80) buf[at++] = x;
    else at = writeUnsigned(buf, at, x);
    this.len = at;
  }
  // Room for `n` more bytes.
  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(2 * this.buf.length, this.len + n));
    grown.set(this.buf.subarray(0, this.len));
    this.buf = grown;
  }
  f64Const(v: number): void {
    if (this.len + 9 > this.buf.length) this.room(9);
    this.buf[this.len] = 0x44;
    F64_SCRATCH[0] = v;
    this.buf.set(F64_BYTES, this.len + 1);
    this.len += 9;
  }
  /** A memory instruction: `opcode`, an alignment of 2^`align` bytes (8 by default: f64s) and
   *  `offset` (unsigned). */
  memory(opcode: number, offset: number, align = 3): void {
    // The offset is unsigned: a negative one would read or write gigabytes away at run time (a
    // planner's mistake, which fails here instead).
    if (offset < 0) throw new Error(`codegen: negative memory offset ${offset}`);
    if (this.len + 7 > this.buf.length) this.room(7);
    const buf = this.buf;
    let at = this.len;
    buf[at++] = opcode;
    buf[at++] = align;
    if (offset < 0x80) buf[at++] = offset;
    else at = writeUnsigned(buf, at, offset);
    this.len = at;
  }
  name(s: string): void {
    this.u32(s.length);
    for (let k = 0; k < s.length; k++) this.byte(s.charCodeAt(k));
  }
  get(local: number): void { this.opUnsigned(W_LocalGet, local); }
  set(local: number): void { this.opUnsigned(W_LocalSet, local); }
  tee(local: number): void { this.opUnsigned(W_LocalTee, local); }
  i32Const(x: number): void {
    if (this.len + 6 > this.buf.length) this.room(6);
    const buf = this.buf;
    let at = this.len;
    buf[at++] = W_I32Const;
    // One byte from -64 to 63.
    if (x >= -64 && x < 64) buf[at++] = x & 0x7f;
    else at = writeSigned(buf, at, x | 0);
    this.len = at;
  }
  section(id: number, body: Bytes): void {
    this.byte(id);
    this.u32(body.len);
    this.bytes(body.buf.subarray(0, body.len));
  }
}

/** LEB128 of an unsigned 32-bit integer into `buf` at `at`; returns the index after it. */
export function writeUnsigned(buf: Uint8Array, at: number, x: number): number {
  for (;;) {
    const low = x & 0x7f;
    x >>>= 7;
    if (x === 0) {
      buf[at++] = low;
      return at;
    }
    buf[at++] = low | 0x80;
  }
}

/** LEB128 of a signed 32-bit integer into `buf` at `at`; returns the index after it. */
export function writeSigned(buf: Uint8Array, at: number, x: number): number {
  for (;;) {
    const low = x & 0x7f;
    x >>= 7;
    if ((x === 0 && !(low & 0x40)) || (x === -1 && low & 0x40)) {
      buf[at++] = low;
      return at;
    }
    buf[at++] = low | 0x80;
  }
}

export const I32 = 0x7f, F64 = 0x7c;
// wasm opcodes
export const W_Block = 0x02;
export const W_I32Load = 0x28;
export const W_I32Eqz = 0x45;
export const W_I32Eq = 0x46;
export const W_I32GtU = 0x4b;
export const W_I32Mul = 0x6c;
export const W_If = 0x04;
export const W_Else = 0x05;
export const W_End = 0x0b;
export const W_Loop = 0x03;
export const W_Br = 0x0c;
export const W_BrIf = 0x0d;
export const W_BrTable = 0x0e;
export const W_GlobalGet = 0x23;
export const W_I32Ne = 0x47;
export const W_Call = 0x10;
export const W_Select = 0x1b;
export const W_Void = 0x40;
export const W_LocalGet = 0x20;
const W_LocalSet = 0x21;
const W_LocalTee = 0x22;
export const W_F64Load = 0x2b;
export const W_F64Store = 0x39;
export const W_I32Const = 0x41;
export const W_I32Add = 0x6a;
export const W_I32Sub = 0x6b;
export const W_I32And = 0x71;
export const W_I32Or = 0x72;
const W_I32ShrU = 0x76;
export const W_F64Eq = 0x61;
export const W_F64Ne = 0x62;
export const W_F64Lt = 0x63;
export const W_F64Gt = 0x64;
export const W_F64Le = 0x65;
export const W_F64Ge = 0x66;
export const W_F64Abs = 0x99;
export const W_F64Neg = 0x9a;
export const W_F64Sqrt = 0x9f;
export const W_F64Add = 0xa0;
export const W_F64Sub = 0xa1;
export const W_F64Mul = 0xa2;
export const W_F64Div = 0xa3;
export const W_F64FromU32 = 0xb8;

