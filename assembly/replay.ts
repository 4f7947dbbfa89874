// Record once, replay many: new input values, the forward sweep, guard checks and the reverse
// sweep in one call into the core, for one row or a batch of rows.
import { valBase, adjBase, val } from './layout';
import { forward, reverse } from './sweeps';

// A guard list at `guards` holds nGuards expected values (f64) followed by the node ids (i32)
// of the comparisons the recording depended on.
function checkGuards(guards: usize, nGuards: i32): i32 {
  const nodes = guards + (<usize>nGuards << 3);
  for (let k = 0; k < nGuards; k++) {
    const node = load<i32>(nodes + (<usize>k << 2));
    if (val(node) != load<f64>(guards + (<usize>k << 3))) return node;
  }
  return -1;
}

/** Inputs are nodes [0, nInputs): copies them from `x`, recomputes nodes [nInputs, count) and
 *  returns -1, or the node id of the first guard whose comparison came out the other way. */
export function replayForward(x: usize, nInputs: i32, count: i32, guards: usize, nGuards: i32): i32 {
  memory.copy(valBase, x, <usize>nInputs << 3);
  forward(nInputs, count);
  return checkGuards(guards, nGuards);
}

/** Gradient of node `out` for `rows` input rows (row-major at `x`), written row by row at `g`.
 *  Returns `rows`, or the index of the first row whose guards failed (rows before it are done). */
export function gradientBatch(
  x: usize, rows: i32, nInputs: i32, count: i32, out: i32, g: usize, guards: usize, nGuards: i32,
): i32 {
  const rowBytes = <usize>nInputs << 3;
  for (let r = 0; r < rows; r++) {
    if (replayForward(x + <usize>r * rowBytes, nInputs, count, guards, nGuards) >= 0) return r;
    reverse(out, 1, count);
    memory.copy(g + <usize>r * rowBytes, adjBase, rowBytes);
  }
  return rows;
}
