// Where every region of the tape lives in linear memory.
//
// The tape is a structure of arrays indexed by node id. Every node region holds `capacity` slots,
// so node region k starts at heapStart + capacity * (sum of the slot sizes of the regions before
// it). After them, 16-byte aligned, come the element regions of array-valued nodes: `elemCapacity`
// f64 slots each, indexed by element offset (a vector node owns a contiguous range of them).
//
//  0          heapStart
//  ┌──────────┬──────────┬──────────┬──────────┬──────────┬─────────┐┌──────────┬──────────┐
//  │ static   │ val      │ adj      │ a        │ b        │ op      ││ tan      │ tanAdj   │
//  │ data     │ f64×cap  │ f64×cap  │ i32×cap  │ i32×cap  │ u8×cap  ││ f64×cap  │ f64×cap  │
//  └──────────┴──────────┴──────────┴──────────┴──────────┴─────────┘└──────────┴──────────┘
//   ◀──────────── node regions: 25 bytes per node ──────────────────▶ ◀ once tangents are used:
//                                                                       +16 bytes per node
//  ┌──────────┬──────────┐┌──────────┬──────────┐┌──────────┐┌─────────┐
//  │ xval     │ xadj     ││ xtan     │ xtanAdj  ││ schedule ││ scratch │
//  │ f64×ecap │ f64×ecap ││ f64×ecap │ f64×ecap ││ (bytes)  ││         │
//  └──────────┴──────────┘└──────────┴──────────┘└──────────┘└─────────┘
//   ◀ elements: 16 bytes ▶ ◀ with tangents: +16 ▶  ◀ a compiled tape's replay schedule, if any
//
// The schedule (schedule.ts) belongs to the tape in memory and moves with it. The scratch area
// for batched replay (input rows, gradient rows, guard lists) sits last. Its content is lost
// whenever the tape grows; the façade writes it again before use.
//
// f64 regions come first and both capacities are multiples of 8, so every f64 slot is 8-byte
// aligned. Growth doubles a capacity: memory.grow first (on failure nothing has changed), then
// each region's live prefix moves to its new offset, last region first. New offsets are never
// below old ones and region k+1 has already moved when region k moves, so no live byte is
// overwritten.

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
export let elemCapacity: i32 = 0;
const heapStart: usize = (__heap_base + 15) & ~15;

export let valBase: usize = 0;
export let adjBase: usize = 0;
export let aBase: usize = 0;
export let bBase: usize = 0;
export let opBase: usize = 0;
export let tanBase: usize = 0;
export let tanAdjBase: usize = 0;
export let xvalBase: usize = 0;
export let xadjBase: usize = 0;
export let xtanBase: usize = 0;
export let xtanAdjBase: usize = 0;
/** Bytes of the schedule region (0: none) and where it starts. */
export let scheduleBytes: usize = 0;
export let scheduleBase: usize = 0;
/** A cell at a fixed address holding scheduleBase: generated code with a table of steps (in the
 *  schedule region, see schedule.ts) reads the table's address here at each call, as the region
 *  moves whenever the tape grows or tangents are enabled. */
export const scheduleCell: usize = memory.data(8);

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

// @ts-ignore: decorator
@inline function elementRegionCount(regions: i32): i32 { return regions == REGION_COUNT_TANGENT ? 4 : 2; }

function elementOffset(cap: i32, regions: i32, ecap: i32, region: i32): usize {
  return ((regionOffset(cap, regions) + 15) & ~(<usize>15)) + <usize>ecap * 8 * <usize>region;
}

function scheduleOffset(cap: i32, regions: i32, ecap: i32): usize {
  return elementOffset(cap, regions, ecap, elementRegionCount(regions));
}

/** First byte after every region (scratch starts here, aligned). In 64 bits: the offsets above
 *  are 32-bit addresses, and for a layout past 4 GiB (tangents of 2^27 nodes: 41 bytes each) they
 *  wrapped, so the size check passed and the regions were laid out over each other. */
function tapeEnd(cap: i32, regions: i32, ecap: i32): u64 {
  const nodesEnd = <u64>heapStart + <u64>cap * <u64>bytesBefore(regions);
  return ((nodesEnd + 15) & ~(<u64>15)) + <u64>ecap * 8 * <u64>elementRegionCount(regions) + <u64>scheduleBytes;
}

function setBases(): void {
  valBase = regionOffset(capacity, 0);
  adjBase = regionOffset(capacity, 1);
  aBase = regionOffset(capacity, 2);
  bBase = regionOffset(capacity, 3);
  opBase = regionOffset(capacity, 4);
  tanBase = regionCount > 5 ? regionOffset(capacity, 5) : 0;
  tanAdjBase = regionCount > 6 ? regionOffset(capacity, 6) : 0;
  xvalBase = elementOffset(capacity, regionCount, elemCapacity, 0);
  xadjBase = elementOffset(capacity, regionCount, elemCapacity, 1);
  xtanBase = regionCount > 5 ? elementOffset(capacity, regionCount, elemCapacity, 2) : 0;
  xtanAdjBase = regionCount > 5 ? elementOffset(capacity, regionCount, elemCapacity, 3) : 0;
  scheduleBase = scheduleOffset(capacity, regionCount, elemCapacity);
  store<u32>(scheduleCell, <u32>scheduleBase);
}

function totalBytes(cap: i64, regions: i32, ecap: i64): u64 {
  return (<u64>heapStart + <u64>cap * <u64>bytesBefore(regions) + 15) + <u64>ecap * 8 * <u64>elementRegionCount(regions) + <u64>scheduleBytes;
}

function fits(cap: i64, regions: i32, maxCapacity: i32): bool {
  return cap <= <i64>maxCapacity && totalBytes(cap, regions, elemCapacity) <= MAX_BYTES;
}

function ensurePages(cap: i32, regions: i32, ecap: i32): bool {
  const bytes = tapeEnd(cap, regions, ecap);
  if (bytes > MAX_BYTES) return false;
  const pagesNeeded = <i32>((bytes + 0xffff) >> 16);
  const current = memory.size();
  return pagesNeeded <= current || memory.grow(pagesNeeded - current) >= 0;
}

// Live elements: the façade's fill pointer into the element regions, so that a relayout knows how
// much to move. Only relayouts read it, and the façade sets it just before each call that may
// relayout (reserve, reserveElements, enableTangents), not on every vector op: between those
// calls it may be behind the façade's.
export let liveElements: i32 = 0;

function relayout(newCap: i32, newRegions: i32, newElemCap: i32, live: i32): void {
  const oldCap = capacity, oldRegions = regionCount, oldElemCap = elemCapacity;
  const oldElementRegions = elementRegionCount(oldRegions);
  memory.copy(scheduleOffset(newCap, newRegions, newElemCap), scheduleOffset(oldCap, oldRegions, oldElemCap), scheduleBytes);
  for (let r = oldElementRegions - 1; r >= 0; r--) {
    memory.copy(
      elementOffset(newCap, newRegions, newElemCap, r), elementOffset(oldCap, oldRegions, oldElemCap, r),
      <usize>liveElements << 3,
    );
  }
  for (let r = oldRegions - 1; r >= 0; r--) {
    memory.copy(regionOffset(newCap, r), regionOffset(oldCap, r), <usize>live * slotSize(r));
  }
  capacity = newCap;
  regionCount = newRegions;
  elemCapacity = newElemCap;
  setBases();
}

/** Grows the tape to hold at least `minCapacity` nodes, keeping the first `live` of them.
 *  Returns the new capacity, or 0 when memory (or `maxCapacity`) does not allow it; then nothing
 *  has changed. */
export function reserve(minCapacity: i32, live: i32, maxCapacity: i32): i32 {
  if (minCapacity <= capacity) return capacity;
  // Doubling from the power of two at or below the capacity: one filled to its pages (below)
  // goes on as the doubling would have, not from its odd size (a third more to move at every
  // later growth: a 3.4 M-node tape's first recording took 18 ms longer).
  let cap: i64 = capacity < MIN_CAPACITY ? MIN_CAPACITY : <i64>1 << (31 - clz(capacity));
  while (cap < <i64>minCapacity) cap <<= 1;
  if (!fits(cap, regionCount, maxCapacity)) {
    // Doubling overshoots a limit: take all the limit allows (never a few slots at a time,
    // which would make filling up to the limit quadratic).
    const byMemory = <i64>((MAX_BYTES - totalBytes(0, regionCount, elemCapacity)) / <u64>bytesBefore(regionCount));
    cap = min(<i64>maxCapacity, byMemory) & ~7;
    if (cap < <i64>minCapacity || !fits(cap, regionCount, maxCapacity)) return 0;
  }
  // Fill the pages memory already has before growing it: a grow detaches the ArrayBuffer the
  // façade's views stand on, and the first detach in a process slows every typed-array access
  // in it (see loader.ts). A tape of up to about 1.3 million nodes then never grows memory.
  // Only for a quarter more at least: past a grow the pages hold a few nodes more than the
  // capacity asked for, not worth moving the tape for.
  const inPages = capacityInPages(regionCount, elemCapacity);
  if (inPages >= <i64>minCapacity && inPages < cap && inPages - <i64>capacity >= <i64>(capacity >> 2)) cap = inPages;
  cap = granted(cap, minCapacity, true);
  if (cap == 0) return 0;
  relayout(<i32>cap, regionCount, elemCapacity, live);
  return capacity;
}

// Where a runtime caps memory (a browser, Node's --wasm-max-mem-pages), a grow to the doubled
// capacity may fail where a smaller one would not: its overshoot of the need halves until a grow
// succeeds (a fresh tape under 64 MiB refused a vector of 2.1 M elements, doubling only). Node
// capacities (or element capacities) of multiples of 8; returns the one granted, or 0.
function granted(cap: i64, need: i32, nodes: bool): i64 {
  const least = (<i64>need + 7) & ~7;
  while (!(nodes ? ensurePages(<i32>cap, regionCount, elemCapacity) : ensurePages(capacity, regionCount, <i32>cap))) {
    if (cap <= least) return 0;
    cap = max(least, ((cap + least) >> 1) & ~7);
  }
  return cap;
}

/** The most nodes (a multiple of 8) the pages memory has now hold beside `ecap` elements. */
function capacityInPages(regions: i32, ecap: i32): i64 {
  const fixed = totalBytes(0, regions, ecap);
  const have = <u64>memory.size() << 16;
  return have > fixed ? <i64>((have - fixed) / <u64>bytesBefore(regions)) & ~7 : 0;
}

/** Grows the element regions to hold at least `minElements`, keeping `liveElements` of them.
 *  Returns the new element capacity, or 0 when memory (or `maxElements`) does not allow it; then
 *  nothing has changed. */
export function reserveElements(minElements: i32, live: i32, maxElements: i32): i32 {
  if (minElements <= elemCapacity) return elemCapacity;
  let ecap: i64 = elemCapacity < MIN_CAPACITY ? MIN_CAPACITY : <i64>elemCapacity;
  while (ecap < <i64>minElements) ecap <<= 1;
  const regions = elementRegionCount(regionCount);
  if (ecap > <i64>maxElements || totalBytes(capacity, regionCount, ecap) > MAX_BYTES) {
    const byMemory = <i64>((MAX_BYTES - totalBytes(capacity, regionCount, 0)) / (8 * <u64>regions));
    ecap = min(<i64>maxElements, byMemory) & ~7;
    if (ecap < <i64>minElements) return 0;
  }
  ecap = granted(ecap, minElements, false);
  if (ecap == 0) return 0;
  relayout(capacity, regionCount, <i32>ecap, live);
  return elemCapacity;
}

/** Sets how many elements are live (the façade's fill pointer). */
export function setLiveElements(n: i32): void {
  liveElements = n;
}

/** Adds the tangent regions (forward mode, Hessian-vector products). Returns 0 if memory does
 *  not allow it, 1 otherwise. */
export function enableTangents(live: i32, maxCapacity: i32, maxElements: i32): i32 {
  if (regionCount == REGION_COUNT_TANGENT) return 1;
  // Within the tape's memory limit, which the tangents of the largest recording's capacities may
  // pass where the live nodes' and elements' do not (a probe: 1.64 times maxMemoryBytes after a
  // reset and a jvp of 2 nodes; a review: twice it after a large vector). The façade gives the
  // limits in nodes and elements, at least the live ones.
  fitCapacities(maxCapacity, maxElements, live);
  if (!ensurePages(capacity, REGION_COUNT_TANGENT, elemCapacity)) {
    // The capacity is the largest recording's (reset keeps it), and with tangents it may not fit
    // where the live nodes would: it shrinks to the most that fits in wasm32 (a probe: 68 M nodes
    // of a 2^27 capacity refused, and after a reset a jvp of 2 nodes too), and where the runtime
    // gives less than that, to the live nodes' own (a review: refused for the tape's life).
    const byMemory = <i64>((MAX_BYTES - totalBytes(0, REGION_COUNT_TANGENT, elemCapacity)) / <u64>bytesBefore(REGION_COUNT_TANGENT)) & ~7;
    if (byMemory >= <i64>live && byMemory < <i64>capacity) shrink(<i32>byMemory, elemCapacity, live);
    if (!ensurePages(capacity, REGION_COUNT_TANGENT, elemCapacity)) {
      const least = max((live + 7) & ~7, MIN_CAPACITY);
      if (least >= capacity) return 0;
      shrink(least, elemCapacity, live);
      if (!ensurePages(capacity, REGION_COUNT_TANGENT, elemCapacity)) return 0;
    }
  }
  relayout(capacity, REGION_COUNT_TANGENT, elemCapacity, live);
  return 1;
}

/** Shrinks the node and element capacities to at most `maxCapacity` and `maxElements` (never below
 *  the live ones), before the other grows within a memory limit: a tape keeps its capacities
 *  across reset, and a scalar peak then a vector one held both (a probe: twice maxMemoryBytes). */
export function fitCapacities(maxCapacity: i32, maxElements: i32, live: i32): void {
  const cap = min(capacity, max(max((live + 7) & ~7, maxCapacity & ~7), MIN_CAPACITY));
  const ecap = min(elemCapacity, max(max((liveElements + 7) & ~7, maxElements & ~7), MIN_CAPACITY));
  if (cap < capacity || ecap < elemCapacity) shrink(cap, ecap, live);
}

// The same regions at smaller (or the same) capacities, keeping the first `live` nodes: every
// region moves down or stays, so they are copied first to last (relayout, which grows, copies
// last to first).
function shrink(newCap: i32, newElemCap: i32, live: i32): void {
  const oldCap = capacity, oldElemCap = elemCapacity;
  for (let r = 0; r < regionCount; r++) memory.copy(regionOffset(newCap, r), regionOffset(oldCap, r), <usize>live * slotSize(r));
  for (let r = 0; r < elementRegionCount(regionCount); r++) {
    memory.copy(
      elementOffset(newCap, regionCount, newElemCap, r), elementOffset(oldCap, regionCount, oldElemCap, r),
      <usize>liveElements << 3,
    );
  }
  memory.copy(scheduleOffset(newCap, regionCount, newElemCap), scheduleOffset(oldCap, regionCount, oldElemCap), scheduleBytes);
  capacity = newCap;
  elemCapacity = newElemCap;
  setBases();
}

/** Makes the schedule region at least `bytes` long (its content undefined), or drops it with 0.
 *  Returns its base, or 0 when memory does not allow it; then nothing has changed. */
export function setScheduleBytes(bytes: usize): usize {
  const old = scheduleBytes;
  // A multiple of 16, so that scratch after it stays aligned as the façade's f64 views need.
  scheduleBytes = (bytes + 15) & ~(<usize>15);
  if (bytes > 0 && (totalBytes(capacity, regionCount, elemCapacity) > MAX_BYTES || !ensurePages(capacity, regionCount, elemCapacity))) {
    scheduleBytes = old;
    return 0;
  }
  return scheduleBase;
}

/** Start of a scratch area of `bytes` after the tape, or 0 if memory does not allow it. */
export function scratch(bytes: i32): usize {
  const base = <usize>tapeEnd(capacity, regionCount, elemCapacity);
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

export function elementBytes(): i32 {
  return 8 * elementRegionCount(regionCount);
}

/** v where keep holds, else +0: an integer mask, no branch (a zero tangent's test mispredicts as
 *  often as an op jump does). */
// @ts-ignore: decorator
@inline export function masked(v: f64, keep: bool): f64 {
  return reinterpret<f64>(reinterpret<i64>(v) & -<i64>keep);
}

// Accesses to a node's slot in a region whose base is passed in. The bases are mutable globals,
// which V8 reloads from the instance at every use, so a hot loop reads each once into a local
// and uses these (measured on a mixed scalar tape's interpreted forward and reverse sweeps: 3.4 ->
// 3.0 ns/node); the accessors after them read the global, for code that is not a hot loop.
// @ts-ignore: decorator
@inline export function f64At(base: usize, i: i32): f64 { return load<f64>(base + (<usize>i << 3)); }
// @ts-ignore: decorator
@inline export function setF64At(base: usize, i: i32, v: f64): void { store<f64>(base + (<usize>i << 3), v); }
// @ts-ignore: decorator
@inline export function addF64At(base: usize, i: i32, v: f64): void {
  const p = base + (<usize>i << 3);
  store<f64>(p, load<f64>(p) + v);
}
// @ts-ignore: decorator
@inline export function i32At(base: usize, i: i32): i32 { return load<i32>(base + (<usize>i << 2)); }
// @ts-ignore: decorator
@inline export function u8At(base: usize, i: i32): i32 { return <i32>load<u8>(base + <usize>i); }

// @ts-ignore: decorator
@inline export function val(i: i32): f64 { return f64At(valBase, i); }
// @ts-ignore: decorator
@inline export function setVal(i: i32, v: f64): void { setF64At(valBase, i, v); }
// @ts-ignore: decorator
@inline export function adj(i: i32): f64 { return f64At(adjBase, i); }
// @ts-ignore: decorator
@inline export function addAdj(i: i32, v: f64): void { addF64At(adjBase, i, v); }
// @ts-ignore: decorator
@inline export function argA(i: i32): i32 { return i32At(aBase, i); }
// @ts-ignore: decorator
@inline export function argB(i: i32): i32 { return i32At(bBase, i); }
// @ts-ignore: decorator
@inline export function opAt(i: i32): i32 { return u8At(opBase, i); }
// @ts-ignore: decorator
@inline export function tan(i: i32): f64 { return f64At(tanBase, i); }
// @ts-ignore: decorator
@inline export function setTan(i: i32, v: f64): void { setF64At(tanBase, i, v); }
// @ts-ignore: decorator
@inline export function tanAdj(i: i32): f64 { return f64At(tanAdjBase, i); }
// @ts-ignore: decorator
@inline export function addTanAdj(i: i32, v: f64): void { addF64At(tanAdjBase, i, v); }

// Element accessors for array-valued nodes (offsets into the element regions).
// @ts-ignore: decorator
@inline export function xval(k: i32): f64 { return load<f64>(xvalBase + (<usize>k << 3)); }
// @ts-ignore: decorator
@inline export function xadj(k: i32): f64 { return load<f64>(xadjBase + (<usize>k << 3)); }
// @ts-ignore: decorator
@inline export function xtan(k: i32): f64 { return load<f64>(xtanBase + (<usize>k << 3)); }
// @ts-ignore: decorator
@inline export function xtanAdj(k: i32): f64 { return load<f64>(xtanAdjBase + (<usize>k << 3)); }
