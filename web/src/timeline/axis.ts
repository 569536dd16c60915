// The time axis across the top of the view, and the grid lines its ticks draw down the lanes.
import type { Frame } from './frame';
import { AXIS_H, FONT } from './theme';
import { formatTick, type TimeScale } from './time_scale';

export type Ticks = { step: number; values: number[] };

/** Ticks for the visible window; narrow (phone): labels closer. */
export function axisTicks(s: TimeScale): Ticks {
  return s.ticks(Math.min(90, Math.max(48, s.width / 4)));
}

/** Vertical grid lines, over the lane backgrounds and under the spans. */
export function drawGrid(f: Frame, ticks: Ticks): void {
  const { ctx, scale: s, height: h } = f;
  ctx.fillStyle = 'rgba(31, 38, 48, 0.07)';
  for (const t of ticks.values) ctx.fillRect(Math.round(s.toPx(t)), AXIS_H, 1, h - AXIS_H);
}

/** The axis band: a tick and its time at each tick, 'time →' over the gutter. */
export function drawAxis(f: Frame, ticks: Ticks): void {
  const { ctx, scale: s, pal, width } = f;
  ctx.fillStyle = pal.bg;
  ctx.fillRect(0, 0, width, AXIS_H);
  ctx.fillStyle = pal.rule;
  ctx.fillRect(0, AXIS_H - 1, width, 1);
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  ctx.fillStyle = pal.ink2;
  for (const t of ticks.values) {
    const x = Math.round(s.toPx(t));
    ctx.fillRect(x, AXIS_H - 6, 1, 5);
    const text = formatTick(t, ticks.step);
    if (x + 3 + f.measure(text) <= width - 2) ctx.fillText(text, x + 3, AXIS_H / 2 - 2);
  }
  ctx.fillStyle = pal.bg;
  ctx.fillRect(0, 0, s.x0 - 1, AXIS_H - 1);
  ctx.fillStyle = pal.ink3;
  ctx.fillText('time →', 8, AXIS_H / 2 - 2);
}
