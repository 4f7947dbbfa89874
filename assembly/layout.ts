// Where every region of the tape lives in linear memory.
//
// The tape is a structure of arrays indexed by node id. Every region holds `capacity` slots, so
// region k starts at heapStart + capacity * (sum of the slot sizes of the regions before it):
//
//  0          heapStart
//  ┌──────────┬─────────────┬─────────────┬─────────────┬─────────────┬──────────┐┌─────────────┬─────────────┐
//  │ static   │ val         │ adj         │ a           │ b           │ op       ││ tan         │ tanAdj      │
//  │ data     │ f64 × cap   │ f64 × cap   │ i32 × cap   │ i32 × cap   │ u8 × cap ││ f64 × cap   │ f64 × cap   │
//  └──────────┴─────────────┴─────────────┴─────────────┴─────────────┴──────────┘└─────────────┴─────────────┘
//   ◀──────────────── base tape: 25 bytes per node ────────────────────────────────▶ ◀─ only once tangents are
//                                                                                     used: +16 bytes per node
//
// After the last region, 16-byte aligned, sits a scratch area for batched replay (input rows,
// gradient rows, guard lists). Its content is lost whenever the tape grows; the façade writes it
// again before use.
//
// f64 regions come first and capacity is a multiple of 8, so every f64 slot is 8-byte aligned.
// Growth doubles the capacity: memory.grow first (on failure nothing has changed), then each
// region's live prefix moves to its new offset, last region first. New offsets are never below
// old ones and region k+1 has already moved when region k moves, so no live byte is overwritten.

// @ts-ignore: decorator
@inline export const MAX_BYTES: u64 = 65536 * 65536;
// @ts-ignore: decorator
@inline const MIN_CAPACITY: i32 = 1024;
// @ts-ignore: decorator
@inline const REGION_COUNT_BASE: i32 = 5;
// @ts-ignore: decorator
@inline const REGION_COUNT_TANGENT: i32 = 7;

export let capacity: i32 = 0;
export let regionCount: i32 = REGION_COUNT_BASE;
const heapStart: usize = (__heap_base + 15) & ~15;

export let valBase: usize = 0;
export let adjBase: usize = 0;
export let aBase: usize = 0;
export let bBase: usize = 0;
export let opBase: usize = 0;
export let tanBase: usize = 0;
export let tanAdjBase: usize = 0;

// @ts-ignore: decorator
@inline function slotSize(region: i32): usize {
  // val, adj: f64; a, b: i32; op: u8; tan, tanAdj: f64
  return region < 2 ? 8 : region < 4 ? 4 : region == 4 ? 1 : 8;
}

// Prefix sums of the slot sizes: bytes per node of regions [0, region).
const BYTES_BEFORE = memory.data<u8>([0, 8, 16, 20, 24, 25, 33, 41]);

// @ts-ignore: decorator
@inline function bytesBefore(region: i32): usize {
  return <usize>load<u8>(BYTES_BEFORE + <usize>region);
}

function regionOffset(cap: i32, region: i32): usize {
  return heapStart + <usize>cap * bytesBefore(region);
}

function setBases(): void {
  valBase = regionOffset(capacity, 0);
  adjBase = regionOffset(capacity, 1);
  aBase = regionOffset(capacity, 2);
  bBase = regionOffset(capacity, 3);
  opBase = regionOffset(capacity, 4);
  tanBase = regionCount > 5 ? regionOffset(capacity, 5) : 0;
  tanAdjBase = regionCount > 6 ? regionOffset(capacity, 6) : 0;
}

function fits(cap: i64, regions: i32, maxCapacity: i32): bool {
  return cap <= <i64>maxCapacity && <u64>heapStart + <u64>cap * <u64>bytesBefore(regions) <= MAX_BYTES;
}

function ensurePages(cap: i32, regions: i32): bool {
  const bytes = <u64>heapStart + <u64>cap * <u64>bytesBefore(regions);
  const pagesNeeded = <i32>((bytes + 0xffff) >> 16);
  const current = memory.size();
  return pagesNeeded <= current || memory.grow(pagesNeeded - current) >= 0;
}

function relayout(newCap: i32, newRegions: i32, live: i32): void {
  const oldCap = capacity;
  const oldRegions = regionCount;
  for (let r = oldRegions - 1; r >= 0; r--) {
    memory.copy(regionOffset(newCap, r), regionOffset(oldCap, r), <usize>live * slotSize(r));
  }
  capacity = newCap;
  regionCount = newRegions;
  setBases();
}

/** Grows the tape to hold at least `minCapacity` nodes, keeping the first `live` of them.
 *  Returns the new capacity, or 0 when memory (or `maxCapacity`) does not allow it; then nothing
 *  has changed. */
export function reserve(minCapacity: i32, live: i32, maxCapacity: i32): i32 {
  if (minCapacity <= capacity) return capacity;
  let cap: i64 = capacity < MIN_CAPACITY ? MIN_CAPACITY : <i64>capacity;
  while (cap < <i64>minCapacity) cap <<= 1;
  if (!fits(cap, regionCount, maxCapacity)) {
    // Doubling overshoots a limit: take all the limit allows (never a few slots at a time,
    // which would make filling up to the limit quadratic).
    const byMemory = <i64>((MAX_BYTES - <u64>heapStart) / <u64>bytesBefore(regionCount));
    cap = min(<i64>maxCapacity, byMemory) & ~7;
    if (cap < <i64>minCapacity || !fits(cap, regionCount, maxCapacity)) return 0;
  }
  if (!ensurePages(<i32>cap, regionCount)) return 0;
  relayout(<i32>cap, regionCount, live);
  return capacity;
}

/** Adds the tangent regions (forward mode, Hessian-vector products). Returns 0 if memory does
 *  not allow it, 1 otherwise. */
export function enableTangents(live: i32): i32 {
  if (regionCount == REGION_COUNT_TANGENT) return 1;
  if (!ensurePages(capacity, REGION_COUNT_TANGENT)) return 0;
  relayout(capacity, REGION_COUNT_TANGENT, live);
  return 1;
}

/** Start of a scratch area of `bytes` after the tape, or 0 if memory does not allow it. */
export function scratch(bytes: i32): usize {
  const base = (regionOffset(capacity, regionCount) + 15) & ~(<usize>15);
  const end = <u64>base + <u64>bytes;
  if (end > MAX_BYTES) return 0;
  const pagesNeeded = <i32>((end + 0xffff) >> 16);
  const current = memory.size();
  if (pagesNeeded > current && memory.grow(pagesNeeded - current) < 0) return 0;
  return base;
}

export function nodeBytes(): i32 {
  return <i32>bytesBefore(regionCount);
}

// @ts-ignore: decorator
@inline export function val(i: i32): f64 { return load<f64>(valBase + (<usize>i << 3)); }
// @ts-ignore: decorator
@inline export function setVal(i: i32, v: f64): void { store<f64>(valBase + (<usize>i << 3), v); }
// @ts-ignore: decorator
@inline export function adj(i: i32): f64 { return load<f64>(adjBase + (<usize>i << 3)); }
// @ts-ignore: decorator
@inline export function addAdj(i: i32, v: f64): void {
  const p = adjBase + (<usize>i << 3);
  store<f64>(p, load<f64>(p) + v);
}
// @ts-ignore: decorator
@inline export function argA(i: i32): i32 { return load<i32>(aBase + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline export function argB(i: i32): i32 { return load<i32>(bBase + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline export function opAt(i: i32): i32 { return <i32>load<u8>(opBase + <usize>i); }
// @ts-ignore: decorator
@inline export function tan(i: i32): f64 { return load<f64>(tanBase + (<usize>i << 3)); }
// @ts-ignore: decorator
@inline export function setTan(i: i32, v: f64): void { store<f64>(tanBase + (<usize>i << 3), v); }
// @ts-ignore: decorator
@inline export function tanAdj(i: i32): f64 { return load<f64>(tanAdjBase + (<usize>i << 3)); }
// @ts-ignore: decorator
@inline export function addTanAdj(i: i32, v: f64): void {
  const p = tanAdjBase + (<usize>i << 3);
  store<f64>(p, load<f64>(p) + v);
}
