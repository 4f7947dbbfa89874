// The pure-JS twin of assembly/vector.ts: the rules of the vector ops, loop for loop in the same
// order (so sums agree bit for bit with the core), over the JS engine's typed arrays. An operand
// address there is a pointer; here it is an array and an index.
import type { TapeViews } from '../backend.ts';
import { Op } from '../ops.ts';
import { forwardRule, partials, partialZ, partialsTangent, partialZTangent, pickFirst, sgn, truthy, zeroGradient } from './rules.ts';

const {
  const: CONST, vmeta: VMETA, vparam: VPARAM, vget: VGET, vsum: VSUM, vmax: VMAX, vmin: VMIN, vlogSumExp: VLSE,
  vdot: VDOT, vinput: VINPUT, vconst: VCONST, vmatmul: VMATMUL, vtranspose: VTRANSPOSE, vslice: VSLICE,
  vconcat: VCONCAT, vgather: VGATHER, select: SELECT, add: ADD, sub: SUB, mul: MUL, square: SQUARE, neg: NEG,
} = Op;
/** Elementwise vector form of scalar op s is op code ELEMENTWISE + s (as in the core). */
export const ELEMENTWISE = 128;

export function isVectorOp(op: number): boolean {
  return op >= VINPUT;
}

type F64 = Float64Array;

/** Σ A[pa + l·sa] · B[pb + l·sb] over `len` terms, in the core's dot4 order. */
export function dot4(A: F64, pa: number, sa: number, B: F64, pb: number, sb: number, len: number): number {
  if (len <= 1) return len === 1 ? A[pa]! * B[pb]! : 0;
  // -0, addition's identity: from +0, a sum of -0 terms was +0 (IEEE's and the scalar code's -0).
  let s0 = -0, s1 = -0, s2 = -0, s3 = -0;
  let l = 0;
  for (; l + 4 <= len; l += 4) {
    s0 += A[pa]! * B[pb]!;
    s1 += A[pa + sa]! * B[pb + sb]!;
    s2 += A[pa + 2 * sa]! * B[pb + 2 * sb]!;
    s3 += A[pa + 3 * sa]! * B[pb + 3 * sb]!;
    pa += 4 * sa;
    pb += 4 * sb;
  }
  if (l < len) { s0 += A[pa]! * B[pb]!; l++; pa += sa; pb += sb; }
  if (l < len) { s1 += A[pa]! * B[pb]!; l++; pa += sa; pb += sb; }
  if (l < len) s2 += A[pa]! * B[pb]!;
  return (s0 + s2) + (s1 + s3);
}

/** Σ X[p + l] over `len` values, in dot4's order. */
export function sum4(X: F64, p: number, len: number): number {
  if (len <= 1) return len === 1 ? X[p]! : 0;
  let s0 = -0, s1 = -0, s2 = -0, s3 = -0;
  let l = 0;
  for (; l + 4 <= len; l += 4, p += 4) {
    s0 += X[p]!; s1 += X[p + 1]!; s2 += X[p + 2]!; s3 += X[p + 3]!;
  }
  if (l < len) { s0 += X[p]!; l++; p++; }
  if (l < len) { s1 += X[p]!; l++; p++; }
  if (l < len) s2 += X[p]!;
  return (s0 + s2) + (s1 + s3);
}

/** D[i, j] (= or +=) Σ_l A[i, l] B[l, j], in the core's order: contiguous rows of D and B with
 *  p > 1, or one column D with A read transposed, take the terms one l at a time, ascending,
 *  straight into D; otherwise a dot4 each. */
function contract(
  D: F64, d: number, dsi: number, dsj: number, A: F64, a: number, asi: number, asl: number,
  B: F64, b: number, bsl: number, bsj: number, m: number, k: number, p: number, accumulate: boolean,
): void {
  // No entry of D: nothing to do, however long its other side (the core's contract).
  if (m === 0 || p === 0) return;
  if (p > 1 && dsj === 1 && bsj === 1) {
    for (let i = 0; i < m; i++) {
      const row = d + i * dsi, ai = a + i * asi;
      if (k === 0 && !accumulate) D.fill(0, row, row + p);
      let l = 0;
      for (; l + 4 <= k; l += 4) {
        const al = ai + l * asl;
        axpy4(D, row, A[al]!, A[al + asl]!, A[al + 2 * asl]!, A[al + 3 * asl]!, B, b + l * bsl, bsl, p, accumulate || l > 0);
      }
      for (; l < k; l++) axpy(D, row, A[ai + l * asl]!, B, b + l * bsl, p, accumulate || l > 0);
    }
    return;
  }
  if (p === 1 && m > 1 && dsi === 1 && asi === 1) {
    if (k === 0 && !accumulate) D.fill(0, d, d + m);
    let l = 0;
    for (; l + 4 <= k; l += 4) {
      const bl = b + l * bsl;
      axpy4(D, d, B[bl]!, B[bl + bsl]!, B[bl + 2 * bsl]!, B[bl + 3 * bsl]!, A, a + l * asl, asl, m, accumulate || l > 0);
    }
    for (; l < k; l++) axpy(D, d, B[b + l * bsl]!, A, a + l * asl, m, accumulate || l > 0);
    return;
  }
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < p; j++) {
      const v = dot4(A, a + i * asi, asl, B, b + j * bsj, bsl, k);
      const q = d + i * dsi + j * dsj;
      D[q] = accumulate ? D[q]! + v : v;
    }
  }
}

/** D[row + j] (+)= s · X[x + j] for j < p. */
function axpy(D: F64, row: number, s: number, X: F64, x: number, p: number, add: boolean): void {
  if (add) for (let j = 0; j < p; j++) D[row + j] += s * X[x + j]!;
  else for (let j = 0; j < p; j++) D[row + j] = s * X[x + j]!;
}

/** Four axpy calls in one pass, as the core's axpy4: the terms of s0 .. s3 (rows x + q·stride)
 *  added in that order, D read and written once for the four. */
function axpy4(D: F64, row: number, s0: number, s1: number, s2: number, s3: number, X: F64, x: number, stride: number, p: number, add: boolean): void {
  const x1 = x + stride, x2 = x1 + stride, x3 = x2 + stride;
  for (let j = 0; j < p; j++) {
    const t0 = s0 * X[x + j]!;
    const r = add ? D[row + j]! + t0 : t0;
    D[row + j] = ((r + s1 * X[x1 + j]!) + s2 * X[x2 + j]!) + s3 * X[x3 + j]!;
  }
}

/** Σ T[t + k]·V[v + k] over the k whose tangent and value are not 0, in order. */
function dotOfTangents(T: F64, t: number, V: F64, v: number, n: number): number {
  let s = 0;
  for (let k = 0; k < n; k++) {
    const x = T[t + k]!, z = V[v + k]!;
    if (x !== 0 && z !== 0) s += x * z;
  }
  return s;
}

/** Whether X[from, from + n) are all finite. */
function allFinite(X: F64, from: number, n: number): boolean {
  for (let k = from; k < from + n; k++) if (X[k]! - X[k]! !== 0) return false;
  return true;
}

/** contract's D += A·B (accumulating), a term left out where its A factor (`testA`) or B factor
 *  (`testB`) is 0, each D[i, j] taking its terms one l at a time in ascending order (see
 *  contractSkippingZeros in assembly/vector.ts). */
function contractSkippingZeros(
  D: F64, d: number, dsi: number, dsj: number, A: F64, a: number, asi: number, asl: number,
  B: F64, b: number, bsl: number, bsj: number, m: number, k: number, p: number, testA: boolean, testB: boolean,
): void {
  if (m === 0 || p === 0) return;
  for (let i = 0; i < m; i++) {
    for (let j = 0; j < p; j++) {
      const q = d + i * dsi + j * dsj;
      let s = D[q]!;
      for (let l = 0; l < k; l++) {
        const x = A[a + i * asi + l * asl]!, z = B[b + l * bsl + j * bsj]!;
        if (!(testA && x === 0) && !(testB && z === 0)) s += x * z;
      }
      D[q] = s;
    }
  }
}

/** The vector rules over one engine's views; `views` is replaced when the engine reallocates. */
export class VectorRules {
  constructor(public views: TapeViews) {}

  private isVec(j: number): boolean { return this.views.op[j]! >= VINPUT; }
  private off(j: number): number { return this.views.a[j - 1]!; }
  private len(j: number): number { return this.views.b[j - 1]!; }
  private wants(j: number): boolean { const op = this.views.op[j]; return op !== CONST && op !== VCONST; }
  /** Before a rule sends adjoint to vector node j, as the core's claim: the first rule to reach
   *  it in a sweep zeroes its element adjoints (and their tangents in the second-order sweep)
   *  and sets its flag; constants are never claimed. */
  private claim(j: number, tangents: boolean): void {
    const v = this.views;
    const op = v.op[j]!;
    if (op < VINPUT || op === VCONST || v.adj[j] !== 0) return;
    const off = this.off(j), end = off + this.len(j);
    v.xadj.fill(0, off, end);
    if (tangents) v.xtanAdj!.fill(0, off, end);
    v.adj[j] = 1;
  }

  // Set by claimOperands for logSumExp's first-order rule: its operand's adjoints are stored.
  private fresh = false;

  /** As claim, for a rule that writes all of j's elements: true when it is the first to reach j
   *  (it then stores what adding to +0 would give, and nothing is zeroed), as the core's. */
  private claimWhole(j: number): boolean {
    const v = this.views;
    const op = v.op[j]!;
    if (op < VINPUT || op === VCONST || v.adj[j] !== 0) return false;
    v.adj[j] = 1;
    return true;
  }

  private claimOperands(i: number, op: number, tangents: boolean): void {
    const { a, b } = this.views;
    const ia = a[i]!, ib = b[i]!;
    if (op >= ELEMENTWISE) {
      if (op - ELEMENTWISE === SELECT) { this.claim(ib, tangents); this.claim(a[i - 2]!, tangents); return; }
      this.claim(ia, tangents); this.claim(ib, tangents);
      return;
    }
    switch (op) {
      case VDOT: case VMATMUL: this.claim(ia, tangents); this.claim(ib, tangents); return;
      case VLSE: if (!tangents) this.fresh = this.claimWhole(ia); else this.claim(ia, tangents); return;
      case VGET: case VSUM: case VMAX: case VMIN: case VTRANSPOSE: case VSLICE: case VGATHER: this.claim(ia, tangents); return;
      case VCONCAT: for (let c = 0; c < ia; c++) this.claim(this.operandOf(i, ia, c), tangents); return;
    }
  }

  // Broadcasting, as in the core: blocks of blockLen elements; per operand an array, a start
  // index, a step (1 or 0) and a per-block advance (blockLen or 0).
  private blockLen = 0;
  private blocks = 0;
  private setBlocks(n: number, ia: number, ib: number, ic: number): void {
    let len = n;
    if (this.isVec(ia) && this.len(ia) < len) len = this.len(ia);
    if (this.isVec(ib) && this.len(ib) < len) len = this.len(ib);
    if (this.isVec(ic) && this.len(ic) < len) len = this.len(ic);
    this.blockLen = len;
    this.blocks = len === 0 ? 0 : n / len;
  }
  private arr(j: number, node: F64, elem: F64): F64 { return this.isVec(j) ? elem : node; }
  private start(j: number): number { return this.isVec(j) ? this.off(j) : j; }
  private step(j: number): number { return this.isVec(j) ? 1 : 0; }
  private blockStep(j: number, n: number): number { return this.isVec(j) && this.len(j) === n ? this.blockLen : 0; }

  forward(i: number, op: number): void {
    const v = this.views;
    const { a, b, val } = v;
    const xval = v.xval;
    if (op >= ELEMENTWISE) { this.elementwiseForward(i, op - ELEMENTWISE, this.len(i)); val[i] = 0; return; }
    const ia = a[i]!, ib = b[i]!;
    switch (op) {
      case VMETA: case VPARAM: case VINPUT: case VCONST: val[i] = 0; return;
      case VGET: val[i] = xval[this.off(ia) + ib]!; return;
      case VSUM: val[i] = sum4(xval, this.off(ia), this.len(ia)); return;
      case VMAX: val[i] = this.extreme(this.off(ia), this.len(ia), true); return;
      case VMIN: val[i] = this.extreme(this.off(ia), this.len(ia), false); return;
      case VLSE: val[i] = this.logSumExp(this.off(ia), this.len(ia)); return;
      case VDOT: val[i] = dot4(xval, this.off(ia), 1, xval, this.off(ib), 1, this.len(ia)); return;
    }
    val[i] = 0;
    const out = this.off(i), n = this.len(i);
    switch (op) {
      case VMATMUL: {
        const m = a[i - 2]!, k = b[i - 2]!, p = m === 0 ? 0 : n / m;
        contract(xval, out, p, 1, xval, this.off(ia), k, 1, xval, this.off(ib), p, 1, m, k, p, false);
        return;
      }
    }
    this.permute(i, op, val, xval);
  }

  /** transpose, slice, gather and concat only move elements: the forward rule (values) and the
   *  tangent rule (tangents) are the same copy, between the given node and element arrays. */
  private permute(i: number, op: number, node: F64, X: F64): void {
    const { a, b } = this.views;
    const xval = this.views.xval;
    const ia = a[i]!, ib = b[i]!, out = this.off(i), n = this.len(i);
    switch (op) {
      case VTRANSPOSE: {
        const m = a[i - 2]!, k = b[i - 2]!, src = this.off(ia);
        if (m > 0 && k > 0) for (let r = 0; r < m; r++) for (let c = 0; c < k; c++) X[out + c * m + r] = X[src + r * k + c]!;
        return;
      }
      case VSLICE: X.copyWithin(out, this.off(ia) + ib, this.off(ia) + ib + n); return;
      case VGATHER: {
        const src = this.off(ia), idx = this.off(ib);
        for (let k = 0; k < n; k++) X[out + k] = X[src + xval[idx + k]!]!;
        return;
      }
      case VCONCAT: this.concat(i, ia, out, node, X); return;
    }
  }

  reverse(i: number, op: number, g: number): void {
    this.claimOperands(i, op, false);
    const v = this.views;
    const { a, b, val } = v;
    const xval = v.xval, xadj = v.xadj;
    if (op >= ELEMENTWISE) { this.elementwiseReverse(i, op - ELEMENTWISE, this.len(i)); return; }
    const ia = a[i]!, ib = b[i]!;
    switch (op) {
      case VMETA: case VPARAM: case VINPUT: case VCONST: return;
      case VGET: xadj[this.off(ia) + ib] += g; return;
      case VSUM: {
        const off = this.off(ia), n = this.len(ia);
        for (let k = 0; k < n; k++) xadj[off + k] += g;
        return;
      }
      case VMAX: case VMIN: {
        const off = this.off(ia), n = this.len(ia), y = val[i]!;
        const share = y !== y ? NaN : 1 / this.ties(off, n, y);
        for (let k = 0; k < n; k++) if (y !== y || xval[off + k] === y) xadj[off + k] += g * share;
        return;
      }
      case VLSE: {
        const off = this.off(ia), n = this.len(ia), y = val[i]!;
        g /= this.softmaxScale(off, n, y);
        if (this.fresh) {
          for (let k = 0; k < n; k++) {
            const p = Math.exp(xval[off + k]! - y);
            xadj[off + k] = p !== 0 ? 0 + g * p : 0;
          }
          return;
        }
        for (let k = 0; k < n; k++) {
          const p = Math.exp(xval[off + k]! - y);
          if (p !== 0) xadj[off + k] += g * p;
        }
        return;
      }
      case VDOT: {
        const oa = this.off(ia), ob = this.off(ib), n = this.len(ia);
        const wantA = this.wants(ia), wantB = this.wants(ib);
        for (let k = 0; k < n; k++) {
          const x = xval[oa + k]!, z = xval[ob + k]!;
          if (wantA && z !== 0) xadj[oa + k] += g * z;
          if (wantB && x !== 0) xadj[ob + k] += g * x;
        }
        return;
      }
    }
    const out = this.off(i), n = this.len(i);
    switch (op) {
      case VMATMUL: this.matmulReverse(i, ia, ib, out, n, xadj, xadj, xval); break;
      case VTRANSPOSE: this.transposeBack(i, ia, out, xadj); break;
      case VSLICE: this.sliceBack(ia, ib, out, n, xadj); break;
      case VGATHER: this.gatherBack(ia, ib, out, n, xadj); break;
      case VCONCAT: this.concatBack(i, ia, out, v.adj, xadj); break;
    }
  }

  tangent(i: number, op: number): void {
    const v = this.views;
    const { a, b, val } = v;
    const tan = v.tan!, xval = v.xval, xtan = v.xtan!;
    if (op >= ELEMENTWISE) { this.elementwiseTangent(i, op - ELEMENTWISE, this.len(i)); return; }
    const ia = a[i]!, ib = b[i]!;
    switch (op) {
      case VMETA: case VPARAM: case VINPUT: case VCONST: return;
      case VGET: tan[i] = xtan[this.off(ia) + ib]!; return;
      case VSUM: tan[i] = sum4(xtan, this.off(ia), this.len(ia)); return;
      case VMAX: case VMIN: {
        const off = this.off(ia), n = this.len(ia), y = val[i]!;
        const share = y !== y ? NaN : 1 / this.ties(off, n, y);
        let t = 0;
        for (let k = 0; k < n; k++) {
          const tx = xtan[off + k]!;
          if ((y !== y || xval[off + k] === y) && tx !== 0) t += tx * share;
        }
        tan[i] = t;
        return;
      }
      case VLSE: tan[i] = this.softmaxDot(this.off(ia), this.len(ia), val[i]!); return;
      case VDOT: {
        const n = this.len(ia), pa = this.off(ia), pb = this.off(ib);
        // A term with a zero factor left out where the dot or its tangent is not finite (see the
        // core's rule).
        const t = Number.isFinite(val[i]) ? dot4(xtan, pa, 1, xval, pb, 1, n) + dot4(xval, pa, 1, xtan, pb, 1, n) : NaN;
        tan[i] = Number.isFinite(t) ? t : dotOfTangents(xtan, pa, xval, pb, n) + dotOfTangents(xtan, pb, xval, pa, n);
        return;
      }
    }
    const out = this.off(i), n = this.len(i);
    switch (op) {
      case VMATMUL: {
        const m = a[i - 2]!, k = b[i - 2]!, p = m === 0 ? 0 : n / m;
        // A term with a zero factor left out where C or Ċ is not finite (see the core's rule).
        const finite = allFinite(xval, out, n);
        if (finite) {
          contract(xtan, out, p, 1, xtan, this.off(ia), k, 1, xval, this.off(ib), p, 1, m, k, p, false);
          contract(xtan, out, p, 1, xval, this.off(ia), k, 1, xtan, this.off(ib), p, 1, m, k, p, true);
        }
        if (!finite || !allFinite(xtan, out, n)) {
          xtan.fill(0, out, out + n);
          contractSkippingZeros(xtan, out, p, 1, xtan, this.off(ia), k, 1, xval, this.off(ib), p, 1, m, k, p, true, true);
          contractSkippingZeros(xtan, out, p, 1, xval, this.off(ia), k, 1, xtan, this.off(ib), p, 1, m, k, p, true, true);
        }
        return;
      }
    }
    this.permute(i, op, tan, xtan);
  }

  reverseTangent(i: number, op: number, g: number, gt: number): void {
    this.claimOperands(i, op, true);
    const v = this.views;
    const { a, b, val } = v;
    const tan = v.tan!, xval = v.xval, xadj = v.xadj, xtan = v.xtan!, xtanAdj = v.xtanAdj!;
    if (op >= ELEMENTWISE) { this.elementwiseReverseTangent(i, op - ELEMENTWISE, this.len(i)); return; }
    const ia = a[i]!, ib = b[i]!;
    switch (op) {
      case VMETA: case VPARAM: case VINPUT: case VCONST: return;
      case VGET: {
        const k = this.off(ia) + ib;
        xadj[k] += g; xtanAdj[k] += gt;
        return;
      }
      case VSUM: {
        const off = this.off(ia), n = this.len(ia);
        for (let k = 0; k < n; k++) { xadj[off + k] += g; xtanAdj[off + k] += gt; }
        return;
      }
      case VMAX: case VMIN: {
        const off = this.off(ia), n = this.len(ia), y = val[i]!;
        const share = y !== y ? NaN : 1 / this.ties(off, n, y);
        for (let k = 0; k < n; k++) {
          if (y === y && xval[off + k] !== y) continue;
          if (g !== 0) xadj[off + k] += g * share;
          if (gt !== 0) xtanAdj[off + k] += gt * share;
        }
        return;
      }
      case VLSE: {
        const off = this.off(ia), n = this.len(ia), y = val[i]!, ty = tan[i]!, s = this.softmaxScale(off, n, y);
        const m = largest(xval, off, n);
        for (let k = 0; k < n; k++) {
          const p = Math.exp(xval[off + k]! - y) / s;
          if (g !== 0 && p !== 0) xadj[off + k] += g * p;
          let d = xtan[off + k]! - ty;
          if (k === m && n > 1 && p > 0.5) {
            const dm = dominantChange(xval, xtan, off, n, y, s, m);
            if (Number.isFinite(dm) && Number.isFinite(ty)) d = dm;
          }
          const dp = g !== 0 && p !== 0 && d !== 0 ? p * d : 0;
          const r = (gt !== 0 && p !== 0 ? gt * p : 0) + (dp !== 0 ? g * dp : 0);
          if (r !== 0) xtanAdj[off + k] += r;
        }
        return;
      }
      case VDOT: {
        const oa = this.off(ia), ob = this.off(ib), n = this.len(ia);
        const wantA = this.wants(ia), wantB = this.wants(ib);
        for (let k = 0; k < n; k++) {
          const x = xval[oa + k]!, z = xval[ob + k]!, tx = xtan[oa + k]!, tz = xtan[ob + k]!;
          if (g !== 0 && z !== 0 && wantA) xadj[oa + k] += g * z;
          if (g !== 0 && x !== 0 && wantB) xadj[ob + k] += g * x;
          const ra = (gt !== 0 && z !== 0 ? gt * z : 0) + (g !== 0 && tz !== 0 ? g * tz : 0);
          const rb = (gt !== 0 && x !== 0 ? gt * x : 0) + (g !== 0 && tx !== 0 ? g * tx : 0);
          if (ra !== 0 && wantA) xtanAdj[oa + k] += ra;
          if (rb !== 0 && wantB) xtanAdj[ob + k] += rb;
        }
        return;
      }
    }
    const out = this.off(i), n = this.len(i);
    switch (op) {
      case VMATMUL:
        this.matmulReverse(i, ia, ib, out, n, xadj, xadj, xval);
        this.matmulReverse(i, ia, ib, out, n, xtanAdj, xtanAdj, xval);
        this.matmulReverse(i, ia, ib, out, n, xadj, xtanAdj, xtan);
        break;
      case VTRANSPOSE: this.transposeBack(i, ia, out, xadj); this.transposeBack(i, ia, out, xtanAdj); break;
      case VSLICE: this.sliceBack(ia, ib, out, n, xadj); this.sliceBack(ia, ib, out, n, xtanAdj); break;
      case VGATHER: this.gatherBack(ia, ib, out, n, xadj); this.gatherBack(ia, ib, out, n, xtanAdj); break;
      case VCONCAT: this.concatBack(i, ia, out, v.adj, xadj); this.concatBack(i, ia, out, v.tanAdj!, xtanAdj); break;
    }
  }

  nonFinite(i: number, values: boolean): boolean {
    if (!values && this.views.adj[i] === 0) return false; // no sweep reached it: nothing written
    const data = values ? this.views.xval : this.views.xadj;
    const off = this.off(i), n = this.len(i);
    for (let k = 0; k < n; k++) {
      const x = data[off + k]!;
      if (x - x !== 0) return true;
    }
    return false;
  }

  // ─── pieces ───

  private extreme(off: number, n: number, isMax: boolean): number {
    const xval = this.views.xval;
    let m = isMax ? -Infinity : Infinity;
    for (let k = 0; k < n; k++) {
      const x = xval[off + k]!;
      if (x !== x) return NaN;
      m = isMax ? Math.max(m, x) : Math.min(m, x); // see the core's extreme
    }
    return m;
  }

  private ties(off: number, n: number, y: number): number {
    const xval = this.views.xval;
    let t = 0;
    for (let k = 0; k < n; k++) if (xval[off + k] === y) t++;
    return t;
  }

  private logSumExp(off: number, n: number): number {
    if (n === 0) return -Infinity;
    const xval = this.views.xval;
    const m = this.extreme(off, n, true);
    if (m - m !== 0) return m;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let l = 0;
    for (; l + 4 <= n; l += 4) {
      s0 += Math.exp(xval[off + l]! - m); s1 += Math.exp(xval[off + l + 1]! - m);
      s2 += Math.exp(xval[off + l + 2]! - m); s3 += Math.exp(xval[off + l + 3]! - m);
    }
    if (l < n) { s0 += Math.exp(xval[off + l]! - m); l++; }
    if (l < n) { s1 += Math.exp(xval[off + l]! - m); l++; }
    if (l < n) s2 += Math.exp(xval[off + l]! - m);
    return m + Math.log(n === 1 ? Math.exp(xval[off]! - m) : (s0 + s2) + (s1 + s3));
  }

  // Where the sum is not finite, again leaving out a term whose tangent or weight is 0 (see
  // softmaxDot in assembly/log-sum-exp.ts).
  private softmaxDot(off: number, n: number, y: number): number {
    const sum = this.sumOfExp(off, n, y, this.views.xtan!);
    return (Number.isFinite(sum) ? sum : this.maskedSumOfExp(off, n, y)) / this.softmaxScale(off, n, y);
  }

  private maskedSumOfExp(off: number, n: number, y: number): number {
    const { xval, xtan } = this.views;
    const s = [0, 0, 0, 0];
    for (let l = 0; l < n; l++) {
      const t = xtan![off + l]!;
      if (t === 0) continue;
      const p = Math.exp(xval[off + l]! - y);
      if (p === 0) continue;
      s[l & 3] += p * t;
    }
    return n === 1 ? s[0]! : (s[0]! + s[2]!) + (s[1]! + s[3]!);
  }

  // As softmaxScale in assembly/log-sum-exp.ts: the weights' sum where y's rounding would reach
  // them (|y| from 2^10), else 1.
  private softmaxScale(off: number, n: number, y: number): number {
    return Math.abs(y) < 1024 || y - y !== 0 ? 1 : this.sumOfExp(off, n, y, null);
  }

  // Σ e^(x_k - y)·w_k (w_k = 1 without weights) in dot4's order, as sumOfExp in the core.
  private sumOfExp(off: number, n: number, y: number, w: Float64Array | null): number {
    const xval = this.views.xval;
    const term = (k: number): number => (w ? Math.exp(xval[k]! - y) * w[k]! : Math.exp(xval[k]! - y));
    if (n === 1) return term(off);
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let l = 0;
    for (; l + 4 <= n; l += 4) {
      s0 += term(off + l); s1 += term(off + l + 1);
      s2 += term(off + l + 2); s3 += term(off + l + 3);
    }
    if (l < n) { s0 += term(off + l); l++; }
    if (l < n) { s1 += term(off + l); l++; }
    if (l < n) s2 += term(off + l);
    return (s0 + s2) + (s1 + s3);
  }

  // A term with a zero factor adds nothing (see matmulReverse in assembly/vector.ts).
  private matmulReverse(i: number, ia: number, ib: number, out: number, n: number, G: F64, D: F64, V: F64): void {
    const { a, b } = this.views;
    const m = a[i - 2]!, k = b[i - 2]!, p = m === 0 ? 0 : n / m;
    const finite = allFinite(G, out, n) && (V === this.views.xval ? allFinite(V, out, n) : allFinite(V, this.off(ia), m * k) && allFinite(V, this.off(ib), k * p));
    if (this.wants(ia)) {
      if (finite) contract(D, this.off(ia), k, 1, G, out, p, 1, V, this.off(ib), 1, p, m, p, k, true);
      else contractSkippingZeros(D, this.off(ia), k, 1, G, out, p, 1, V, this.off(ib), 1, p, m, p, k, true, true);
    }
    if (this.wants(ib)) {
      if (finite) contract(D, this.off(ib), p, 1, V, this.off(ia), 1, k, G, out, p, 1, k, m, p, true);
      else contractSkippingZeros(D, this.off(ib), p, 1, V, this.off(ia), 1, k, G, out, p, 1, k, m, p, true, true);
    }
  }

  private transposeBack(i: number, ia: number, out: number, X: F64): void {
    const { a, b } = this.views;
    const m = a[i - 2]!, k = b[i - 2]!, dst = this.off(ia);
    if (m > 0 && k > 0) for (let r = 0; r < m; r++) for (let c = 0; c < k; c++) X[dst + r * k + c] += X[out + c * m + r]!;
  }

  private sliceBack(ia: number, start: number, out: number, n: number, X: F64): void {
    const dst = this.off(ia) + start;
    for (let k = 0; k < n; k++) X[dst + k] += X[out + k]!;
  }

  private gatherBack(ia: number, ib: number, out: number, n: number, X: F64): void {
    const dst = this.off(ia), idx = this.off(ib), xval = this.views.xval;
    for (let k = 0; k < n; k++) X[dst + xval[idx + k]!] += X[out + k]!;
  }

  private operandOf(i: number, count: number, c: number): number {
    const first = i - 1 - ((count + 1) >> 1);
    return c & 1 ? this.views.b[first + (c >> 1)]! : this.views.a[first + (c >> 1)]!;
  }

  private concat(i: number, count: number, out: number, node: F64, X: F64): void {
    let pos = out;
    for (let c = 0; c < count; c++) {
      const j = this.operandOf(i, count, c);
      if (this.isVec(j)) {
        const len = this.len(j);
        X.copyWithin(pos, this.off(j), this.off(j) + len);
        pos += len;
      } else {
        X[pos++] = node[j]!;
      }
    }
  }

  private concatBack(i: number, count: number, out: number, node: F64, X: F64): void {
    let pos = out;
    for (let c = 0; c < count; c++) {
      const j = this.operandOf(i, count, c);
      if (this.isVec(j)) {
        const dst = this.off(j), len = this.len(j);
        for (let k = 0; k < len; k++) X[dst + k] += X[pos + k]!;
        pos += len;
      } else {
        node[j] += X[pos++]!;
      }
    }
  }

  /** select per element into Y from `out`: the branch's entry (values or tangents, from the
   *  `node` and `elements` arrays) where the condition holds, else the other's. */
  private selectInto(i: number, n: number, Y: F64, out: number, node: F64, elements: F64): void {
    const { a, b, val } = this.views;
    const xval = this.views.xval;
    const ia = a[i]!, ib = b[i]!, ic = a[i - 2]!;
    this.setBlocks(n, ia, ib, ic);
    const C = this.arr(ia, val, xval), T = this.arr(ib, node, elements), F = this.arr(ic, node, elements);
    let pc = this.start(ia), pt = this.start(ib), pf = this.start(ic);
    const sc = this.step(ia), st = this.step(ib), sf = this.step(ic);
    const dc = this.blockStep(ia, n), dt = this.blockStep(ib, n), df = this.blockStep(ic, n);
    for (let blk = 0; blk < this.blocks; blk++) {
      for (let k = 0; k < this.blockLen; k++) {
        Y[out + k] = truthy(C[pc + k * sc]!) ? T[pt + k * st]! : F[pf + k * sf]!;
      }
      out += this.blockLen; pc += dc; pt += dt; pf += df;
    }
  }

  private elementwiseForward(i: number, s: number, n: number): void {
    const v = this.views;
    const { a, b, val } = v;
    const xval = v.xval;
    const ia = a[i]!, ib = b[i]!;
    let out = this.off(i);
    if (s === SELECT) {
      this.selectInto(i, n, xval, out, val, xval);
      return;
    }
    this.setBlocks(n, ia, ib, ia);
    const A = this.arr(ia, val, xval), B = this.arr(ib, val, xval);
    let pa = this.start(ia), pb = this.start(ib);
    const sa = this.step(ia), sb = this.step(ib), da = this.blockStep(ia, n), db = this.blockStep(ib, n);
    const len = this.blockLen;
    for (let blk = 0; blk < this.blocks; blk++) {
      mapBlock(s, xval, out, A, pa, sa, B, pb, sb, len);
      out += len; pa += da; pb += db;
    }
  }

  private elementwiseReverse(i: number, s: number, n: number): void {
    const v = this.views;
    const { a, b, val, adj } = v;
    const xval = v.xval, xadj = v.xadj;
    const ia = a[i]!, ib = b[i]!;
    let pg = this.off(i);
    if (s === SELECT) {
      const ic = a[i - 2]!;
      this.setBlocks(n, ia, ib, ic);
      const C = this.arr(ia, val, xval), GT = this.arr(ib, adj, xadj), GF = this.arr(ic, adj, xadj);
      let pc = this.start(ia), pt = this.start(ib), pf = this.start(ic);
      const sc = this.step(ia), st = this.step(ib), sf = this.step(ic);
      const dc = this.blockStep(ia, n), dt = this.blockStep(ib, n), df = this.blockStep(ic, n);
      const wantT = this.wants(ib), wantF = this.wants(ic);
      let termT = 0, termF = 0;
      for (let blk = 0; blk < this.blocks; blk++) {
        for (let k = 0; k < this.blockLen; k++) {
          const g = xadj[pg + k]!;
          if (g === 0) continue;
          if (truthy(C[pc + k * sc]!)) { if (wantT) { if (st === 0) termT += g; else GT[pt + k * st] += g; } }
          else if (wantF) { if (sf === 0) termF += g; else GF[pf + k * sf] += g; }
        }
        pg += this.blockLen; pc += dc; pt += dt; pf += df;
      }
      if (st === 0) GT[pt] += termT;
      if (sf === 0) GF[pf] += termF;
      return;
    }
    this.setBlocks(n, ia, ib, ia);
    const XA = this.arr(ia, val, xval), GA = this.arr(ia, adj, xadj), XB = this.arr(ib, val, xval), GB = this.arr(ib, adj, xadj);
    let pa = this.start(ia), pb = this.start(ib);
    const sa = this.step(ia), sb = this.step(ib), da = this.blockStep(ia, n), db = this.blockStep(ib, n);
    // A unary op has b = a and a zero second partial, so b gets nothing; a binary op over one
    // vector (v.mul(v)) has b = a too, and both partials go to it, as in the scalar sweep.
    const wantA = this.wants(ia), wantB = this.wants(ib);
    const len = this.blockLen;
    terms[0] = 0;
    terms[1] = 0;
    for (let blk = 0; blk < this.blocks; blk++) {
      reverseBlock(s, xadj, pg, xval, pg, XA, GA, pa, sa, XB, GB, pb, sb, len, wantA, wantB);
      pg += len; pa += da; pb += db;
    }
    // A broadcast scalar's terms, summed in ascending element order, are added once (as the core).
    if (sa === 0) GA[pa] += terms[0]!;
    if (sb === 0) GB[pb] += terms[1]!;
  }

  private elementwiseTangent(i: number, s: number, n: number): void {
    const v = this.views;
    const { a, b, val } = v;
    const tan = v.tan!, xval = v.xval, xtan = v.xtan!;
    const ia = a[i]!, ib = b[i]!;
    let out = this.off(i);
    if (s === SELECT) {
      this.selectInto(i, n, xtan, out, tan, xtan);
      return;
    }
    // No tangent through the zero-gradient ops (as the scalar tangent sweep).
    if (zeroGradient(s)) {
      xtan.fill(0, out, out + n);
      return;
    }
    this.setBlocks(n, ia, ib, ia);
    const XA = this.arr(ia, val, xval), TA = this.arr(ia, tan, xtan), XB = this.arr(ib, val, xval), TB = this.arr(ib, tan, xtan);
    let pa = this.start(ia), pb = this.start(ib);
    const sa = this.step(ia), sb = this.step(ib), da = this.blockStep(ia, n), db = this.blockStep(ib, n);
    const len = this.blockLen;
    const cheap = isCheap(s);
    for (let blk = 0; blk < this.blocks; blk++) {
      let qa = pa, qb = pb;
      for (let k = 0; k < len; k++, qa += sa, qb += sb) {
        const dta = TA[qa]!, dtb = TB[qb]!;
        if (dta === 0 && dtb === 0) { xtan[out + k] = 0; continue; }
        const p = cheap ? cheapPartial(s, XA[qa]!, XB[qb]!) : partials(s, XA[qa]!, XB[qb]!, xval[out + k]!);
        const q = cheap ? cheapPartialZ(s, XA[qa]!) : partialZ[0]!;
        xtan[out + k] = (dta !== 0 && p !== 0 ? dta * p : 0) + (dtb !== 0 && q !== 0 ? dtb * q : 0);
      }
      out += len; pa += da; pb += db;
    }
  }

  private elementwiseReverseTangent(i: number, s: number, n: number): void {
    const v = this.views;
    const { a, b, val, adj } = v;
    const tan = v.tan!, tanAdj = v.tanAdj!, xval = v.xval, xadj = v.xadj, xtan = v.xtan!, xtanAdj = v.xtanAdj!;
    const ia = a[i]!, ib = b[i]!;
    let pg = this.off(i);
    if (s === SELECT) {
      const ic = a[i - 2]!;
      this.setBlocks(n, ia, ib, ic);
      const C = this.arr(ia, val, xval);
      const GT = this.arr(ib, adj, xadj), GTT = this.arr(ib, tanAdj, xtanAdj);
      const GF = this.arr(ic, adj, xadj), GTF = this.arr(ic, tanAdj, xtanAdj);
      let pc = this.start(ia), pt = this.start(ib), pf = this.start(ic);
      const sc = this.step(ia), st = this.step(ib), sf = this.step(ic);
      const dc = this.blockStep(ia, n), dt = this.blockStep(ib, n), df = this.blockStep(ic, n);
      let sT = 0, stT = 0, sF = 0, stF = 0;
      for (let blk = 0; blk < this.blocks; blk++) {
        for (let k = 0; k < this.blockLen; k++) {
          const g = xadj[pg + k]!, gt = xtanAdj[pg + k]!;
          if (g === 0 && gt === 0) continue;
          if (truthy(C[pc + k * sc]!)) {
            if (st === 0) { sT += g; stT += gt; } else { GT[pt + k * st] += g; GTT[pt + k * st] += gt; }
          } else if (sf === 0) { sF += g; stF += gt; } else { GF[pf + k * sf] += g; GTF[pf + k * sf] += gt; }
        }
        pg += this.blockLen; pc += dc; pt += dt; pf += df;
      }
      if (st === 0) { GT[pt] += sT; GTT[pt] += stT; }
      if (sf === 0) { GF[pf] += sF; GTF[pf] += stF; }
      return;
    }
    this.setBlocks(n, ia, ib, ia);
    const XA = this.arr(ia, val, xval), TA = this.arr(ia, tan, xtan), GA = this.arr(ia, adj, xadj), GTA = this.arr(ia, tanAdj, xtanAdj);
    const XB = this.arr(ib, val, xval), TB = this.arr(ib, tan, xtan), GB = this.arr(ib, adj, xadj), GTB = this.arr(ib, tanAdj, xtanAdj);
    let pa = this.start(ia), pb = this.start(ib);
    const sa = this.step(ia), sb = this.step(ib), da = this.blockStep(ia, n), db = this.blockStep(ib, n);
    const len = this.blockLen;
    const oneA = sa === 0, oneB = sb === 0;
    // Constants take no terms, as in reverse and in the core (checkNaN reads a scalar constant's
    // adjoint tangent: a term of 1e300 there made the JS engine's hvp throw where the core's did
    // not, a review).
    const wantA = this.wants(ia), wantB = this.wants(ib);
    const cheap = isCheap(s);
    let sA = 0, stA = 0, sB = 0, stB = 0; // a broadcast scalar operand's terms, added once
    for (let blk = 0; blk < this.blocks; blk++) {
      let qa = pa, qb = pb;
      for (let k = 0; k < len; k++, qa += sa, qb += sb) {
        const g = xadj[pg + k]!, gt = xtanAdj[pg + k]!;
        if (g === 0 && gt === 0) continue;
        const x = XA[qa]!, z = XB[qb]!, y = xval[pg + k]!;
        const p = cheap ? cheapPartial(s, x, z) : partials(s, x, z, y);
        const q = cheap ? cheapPartialZ(s, x) : partialZ[0]!;
        if (wantA && g !== 0 && p !== 0) { const t = g * p; if (oneA) sA += t; else GA[qa] += t; }
        if (wantB && g !== 0 && q !== 0) { const t = g * q; if (oneB) sB += t; else GB[qb] += t; }
        const dp = g === 0 ? 0 : cheap ? cheapPartialTangent(s, TA[qa]!, TB[qb]!) : partialsTangent(s, x, z, y, TA[qa]!, TB[qb]!, xtan[pg + k]!);
        const dq = g === 0 ? 0 : cheap ? cheapPartialZTangent(s, TA[qa]!) : partialZTangent[0]!;
        const ra = (gt !== 0 && p !== 0 ? gt * p : 0) + (dp !== 0 ? g * dp : 0);
        const rb = (gt !== 0 && q !== 0 ? gt * q : 0) + (dq !== 0 ? g * dq : 0);
        if (wantA && ra !== 0) { if (oneA) stA += ra; else GTA[qa] += ra; }
        if (wantB && rb !== 0) { if (oneB) stB += rb; else GTB[qb] += rb; }
      }
      pg += len; pa += da; pb += db;
    }
    if (oneA && wantA) { GA[pa] += sA; GTA[pa] += stA; }
    if (oneB && wantB) { GB[pb] += sB; GTB[pb] += stB; }
  }
}

// The tangent sweeps' commonest ops, their partials and the partials' tangents written out as the
// rules give them (the core's cheapPartial...): through the shared rules, whose switch took the
// call and its registers per element, a jvp of the vector Rosenbrock took 7.8 ms and an hvp 25.
function isCheap(s: number): boolean {
  return s === Op.add || s === Op.sub || s === Op.mul || s === Op.neg || s === Op.square;
}
function cheapPartial(s: number, x: number, z: number): number {
  return s === Op.mul ? z : s === Op.square ? 2 * x : s === Op.neg ? -1 : 1;
}
function cheapPartialZ(s: number, x: number): number {
  return s === Op.mul ? x : s === Op.add ? 1 : s === Op.sub ? -1 : 0;
}
function cheapPartialTangent(s: number, tx: number, tz: number): number {
  return s === Op.mul ? tz : s === Op.square ? 2 * tx : 0;
}
function cheapPartialZTangent(s: number, tx: number): number {
  return s === Op.mul ? tx : 0;
}

// The terms a broadcast scalar operand receives, summed across the blocks of one node.
const terms = new Float64Array(2);

/** One block of an elementwise reverse rule, as the core's reverseBlock: the cheap ops written
 *  out (the same products as their partials), the rest through the shared rule. */
function reverseBlock(
  s: number, G: F64, pg: number, Y: F64, py: number, XA: F64, GA: F64, pa: number, sa: number,
  XB: F64, GB: F64, pb: number, sb: number, len: number, wantA: boolean, wantB: boolean,
): void {
  let ta = terms[0]!, tb = terms[1]!;
  const oneA = sa === 0, oneB = sb === 0;
  if (s === ADD || s === SUB) {
    const negate = s === SUB;
    for (let k = 0; k < len; k++, pa += sa, pb += sb) {
      const g = G[pg + k]!;
      if (g === 0) continue;
      if (wantA) { if (oneA) ta += g; else GA[pa] += g; }
      if (wantB) { const h = negate ? -g : g; if (oneB) tb += h; else GB[pb] += h; }
    }
  } else if (s === MUL) {
    for (let k = 0; k < len; k++, pa += sa, pb += sb) {
      const g = G[pg + k]!;
      if (g === 0) continue;
      const x = XA[pa]!, z = XB[pb]!;
      if (wantA && z !== 0) { const t = g * z; if (oneA) ta += t; else GA[pa] += t; }
      if (wantB && x !== 0) { const t = g * x; if (oneB) tb += t; else GB[pb] += t; }
    }
  } else if (s === SQUARE || s === NEG) {
    const square = s === SQUARE;
    for (let k = 0; k < len; k++, pa += sa) {
      const g = G[pg + k]!;
      if (g === 0 || !wantA) continue;
      const p = square ? 2 * XA[pa]! : -1;
      if (p !== 0) { const t = g * p; if (oneA) ta += t; else GA[pa] += t; }
    }
  } else if (zeroGradient(s)) {
    // No terms (comparisons, floor, stopGradient...): nothing to add.
  } else if (s === Op.max || s === Op.min) {
    // The winner's partial 1, a tie's 1/2 each, NaN where either is NaN, as the rules give them.
    const isMax = s === Op.max;
    for (let k = 0; k < len; k++, pa += sa, pb += sb) {
      const g = G[pg + k]!;
      if (g === 0) continue;
      const x = XA[pa]!, z = XB[pb]!;
      const p = pickFirst(x, z, isMax ? x > z : x < z), q = pickFirst(z, x, isMax ? z > x : z < x);
      if (wantA && p !== 0) { const t = g * p; if (oneA) ta += t; else GA[pa] += t; }
      if (wantB && q !== 0) { const t = g * q; if (oneB) tb += t; else GB[pb] += t; }
    }
  } else if (s === Op.relu || s === Op.abs) {
    // Their partials written out, as the core's reverseBlock (and the JS rules) give them.
    const relu = s === Op.relu;
    for (let k = 0; k < len; k++, pa += sa) {
      const g = G[pg + k]!;
      if (g === 0 || !wantA) continue;
      const x = XA[pa]!;
      const p = relu ? (x > 0 ? 1 : x === x ? 0 : NaN) : sgn(x);
      if (p !== 0) { const t = g * p; if (oneA) ta += t; else GA[pa] += t; }
    }
  } else {
    for (let k = 0; k < len; k++, pa += sa, pb += sb) {
      const g = G[pg + k]!;
      if (g === 0) continue;
      const p = partials(s, XA[pa]!, XB[pb]!, Y[py + k]!);
      const q = partialZ[0]!;
      if (wantA && p !== 0) { const t = g * p; if (oneA) ta += t; else GA[pa] += t; }
      if (wantB && q !== 0) { const t = g * q; if (oneB) tb += t; else GB[pb] += t; }
    }
  }
  terms[0] = ta;
  terms[1] = tb;
}

// The hot elementwise ops get loops of their own (V8 then inlines the arithmetic); the rest go
// through the shared forward rule.
function mapBlock(s: number, Y: F64, out: number, A: F64, pa: number, sa: number, B: F64, pb: number, sb: number, len: number): void {
  switch (s) {
    case Op.add: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = A[pa]! + B[pb]!; return;
    case Op.sub: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = A[pa]! - B[pb]!; return;
    case Op.mul: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = A[pa]! * B[pb]!; return;
    case Op.div: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = A[pa]! / B[pb]!; return;
    case SQUARE: for (let k = 0; k < len; k++, pa += sa) { const x = A[pa]!; Y[out + k] = x * x; } return;
    case NEG: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = -A[pa]!; return;
    // As forwardRule computes them; through it they took 10-12 ns an element against mul's 2.
    case Op.relu: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = Math.max(A[pa]!, 0); return;
    case Op.abs: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = Math.abs(A[pa]!); return;
    case Op.max: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = Math.max(A[pa]!, B[pb]!); return;
    case Op.min: for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = Math.min(A[pa]!, B[pb]!); return;
    case Op.floor: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = Math.floor(A[pa]!); return;
    case Op.ceil: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = Math.ceil(A[pa]!); return;
    case Op.stopGradient: for (let k = 0; k < len; k++, pa += sa) Y[out + k] = A[pa]!; return;
  }
  for (let k = 0; k < len; k++, pa += sa, pb += sb) Y[out + k] = forwardRule(s, A[pa]!, B[pb]!, 0);
}

// The change of weight t_k − Σ p_j t_j cancels for a weight p_k near 1 (a probe: H[1][1] of
// logSumExp([0, 37]) was 0, its softplus'' 8.5e-17): the element of weight past 1/2 (the first
// largest) takes it as Σ_{j≠k} p_j (t_k − t_j), as assembly/log-sum-exp.ts does.
function largest(xval: Float64Array, off: number, n: number): number {
  let m = 0;
  for (let k = 1; k < n; k++) if (xval[off + k]! > xval[off + m]!) m = k;
  return m;
}

function dominantChange(xval: Float64Array, xtan: Float64Array, off: number, n: number, y: number, s: number, m: number): number {
  const tm = xtan[off + m]!;
  let sum = 0;
  for (let j = 0; j < n; j++) {
    const p = Math.exp(xval[off + j]! - y) / s, d = tm - xtan[off + j]!;
    if (j !== m && p !== 0 && d !== 0) sum += p * d;
  }
  return sum;
}
