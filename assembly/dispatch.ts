// The exported sweep of a generated module with several units (src/wasm/codegen/module.ts,
// emitDispatcher): per step, the sweep's parameters and a call of the step's function, a shape's
// with its body's shift and count. Written here, byte for byte as the generator's JavaScript
// writes it: a data-dependent plan has a step per body (the branchy loss: 1,862), and that loop
// ran once per compile in JavaScript V8 had not compiled yet (1.5 ms of a 20 ms generation).

// @ts-ignore: decorator
@inline const LOCAL_GET: u8 = 0x20;
// @ts-ignore: decorator
@inline const I32_CONST: u8 = 0x41;
// @ts-ignore: decorator
@inline const CALL: u8 = 0x10;
// @ts-ignore: decorator
@inline const END: u8 = 0x0b;

// LEB128 of x at `at`; returns the address after it.
function unsigned(at: usize, x: u32): usize {
  while (x >= 0x80) {
    store<u8>(at++, <u8>(x & 0x7f) | 0x80);
    x >>>= 7;
  }
  store<u8>(at++, <u8>x);
  return at;
}

function signed(at: usize, x: i32): usize {
  let more = true;
  while (more) {
    const low = <u8>(x & 0x7f);
    x >>= 7;
    more = !((x == 0 && (low & 0x40) == 0) || (x == -1 && (low & 0x40) != 0));
    store<u8>(at++, more ? low | 0x80 : low);
  }
  return at;
}

/** The dispatcher's function body (locals and code) at `out` for `steps` steps whose units,
 *  shifts and counts are i32 arrays at `order` (one after another); returns its length in bytes.
 *  `out` has room for 16 + steps · (2 · params + 16) bytes. */
export function writeDispatcher(steps: i32, order: usize, backwards: i32, params: i32, base: i32, parts: i32, out: usize): i32 {
  const units = order, shifts = order + (<usize>steps << 2), counts = shifts + (<usize>steps << 2);
  let at = out;
  store<u8>(at++, 0); // no locals
  for (let s = 0; s < steps; s++) {
    const k = <usize>(backwards ? steps - 1 - s : s) << 2;
    for (let q = 0; q < params; q++) {
      store<u8>(at++, LOCAL_GET);
      store<u8>(at++, <u8>q);
    }
    const u = load<i32>(units + k);
    if (u >= parts) {
      store<u8>(at++, I32_CONST);
      at = signed(at, load<i32>(shifts + k));
      store<u8>(at++, I32_CONST);
      at = signed(at, load<i32>(counts + k));
    }
    store<u8>(at++, CALL);
    at = unsigned(at, <u32>(base + u));
  }
  store<u8>(at++, END);
  return <i32>(at - out);
}
