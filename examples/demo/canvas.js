// Drawing shared by both panels: a crisp canvas on high-DPI screens, a titled frame, and the
// loss curve (log scale) with its first and last values.

/** The canvas's 2-D context scaled for the device's pixel ratio; W and H in CSS pixels. */
export function hiDpiContext(canvas) {
  const ctx = canvas.getContext('2d');
  const dpr = window.devicePixelRatio || 1;
  const W = canvas.width, H = canvas.height;
  canvas.style.width = `${W}px`;
  canvas.style.height = `${H}px`;
  canvas.width = W * dpr;
  canvas.height = H * dpr;
  ctx.scale(dpr, dpr);
  return { ctx, W, H };
}

/** A box outlined, with its title in the top-left corner. */
export function frame(ctx, box, title) {
  ctx.strokeStyle = '#c9ced8';
  ctx.lineWidth = 1;
  ctx.strokeRect(box.x, box.y, box.w, box.h);
  ctx.fillStyle = '#6a7283';
  ctx.font = '12px system-ui, sans-serif';
  ctx.fillText(title, box.x + 8, box.y + 16);
}

/** The losses so far in `box`, log scale, at least 100 steps wide. */
export function lossCurve(ctx, box, losses) {
  frame(ctx, box, 'loss (log scale) per step');
  if (losses.length < 2) return;
  // At most two points a pixel, the last one always: a long run's history spread into
  // Math.min's arguments overflowed the stack at about 125,000 steps and stopped the panel for
  // good, and every frame redrew every step (an examples probe).
  const stride = Math.max(1, Math.floor(losses.length / (2 * box.w)));
  const at = [];
  for (let i = 0; i < losses.length; i += stride) at.push(i);
  if (at[at.length - 1] !== losses.length - 1) at.push(losses.length - 1);
  const logs = at.map((i) => Math.log10(losses[i]));
  let lo = Infinity, hi = -Infinity;
  for (const v of logs) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const span = Math.max(hi - lo, 1e-9);
  const n = Math.max(losses.length - 1, 100);
  ctx.strokeStyle = '#2f6f3e';
  ctx.lineWidth = 2;
  ctx.setLineDash([]);
  ctx.beginPath();
  logs.forEach((v, k) => {
    const x = box.x + (at[k] / n) * box.w;
    const y = box.y + 24 + (1 - (v - lo) / span) * (box.h - 32);
    if (k === 0) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
  });
  ctx.stroke();
  ctx.fillStyle = '#6a7283';
  ctx.fillText(`${losses[0].toPrecision(3)} → ${losses[losses.length - 1].toPrecision(4)}`, box.x + box.w - 150, box.y + 16);
}
