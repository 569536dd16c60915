// Memory tracks: the memory in use on each GPU over time, drawn as a step curve under the lanes.
import type { MemoryCurve } from '../result';
import type { Frame } from './frame';
import { lowerBound } from './lanes';
import { FONT, FONT_BOLD } from './theme';
import { formatTick, type TimeScale } from './time_scale';

/** One vertical scale for every track, in GiB. */
export interface MemoryScale {
  max: number;
  capacityGiB: number;
  /** The capacity is drawn (as a dashed line) only when it is near enough to be on the scale. */
  capOnScale: boolean;
}

/** Scaled to the highest peak so the shape shows, stretched to the capacity when it is close. */
export function memoryScale(memory?: { curves: MemoryCurve[]; capacityGiB: number }): MemoryScale {
  let peakAll = 0;
  for (const c of memory?.curves ?? []) for (let i = 0; i < c.gib.length; ++i) peakAll = Math.max(peakAll, c.gib[i]);
  const cap = memory?.capacityGiB ?? 0;
  const capOnScale = cap > 0 && cap <= peakAll * 1.6;
  return { max: Math.max(peakAll * 1.12, capOnScale ? cap * 1.04 : 0) || 1, capacityGiB: cap, capOnScale };
}

/** The header above the tracks: the scale, and where the capacity is. */
export function memoryHeader(m: MemoryScale): string {
  const cap = fmtNum(m.capacityGiB);
  const where = m.capOnScale ? `dashed: capacity ${cap} GiB` : `capacity ${cap} GiB is above the scale`;
  return `Memory in use per GPU, 0 – ${fmtNum(m.max)} GiB (${where})`;
}

/** Rows of the tooltip at time t over a track; null before the curve's first sample. */
export function memoryTip(c: MemoryCurve, t: number, s: TimeScale): [string, string][] | null {
  let j = lowerBound(c.t, t, 0, c.t.length);
  if (j >= c.t.length || c.t[j] > t) j -= 1;
  if (j < 0) return null;
  return [
    ['GPU', String(c.rank)],
    ['time', formatTick(t, s.span / 1000)],
    ['memory', `${fmtNum(c.gib[j])} GiB`],
  ];
}

/** A track at view y, `h` high: the GPU's name and peak in the gutter, the curve up to time tMax. */
export function drawMemory(
  f: Frame,
  c: MemoryCurve,
  y: number,
  h: number,
  name: string,
  m: MemoryScale,
  tMax: number,
): void {
  const { ctx, scale: s, pal } = f;
  const Y = (g: number) => y + h - (g / m.max) * (h - 2);
  ctx.textBaseline = 'middle';
  ctx.font = FONT_BOLD;
  ctx.fillStyle = pal.ink;
  ctx.fillText(name, 8, y + 9);
  let peak = 0;
  for (let i = 0; i < c.gib.length; ++i) peak = Math.max(peak, c.gib[i]);
  ctx.font = FONT;
  ctx.fillStyle = pal.ink3;
  ctx.fillText(`peak ${fmtNum(peak)} GiB`, 8, y + 25);
  ctx.fillStyle = pal.lane2;
  ctx.fillRect(s.x0, y, s.width, h);
  if (c.t.length === 0) return;
  ctx.save();
  ctx.beginPath();
  ctx.rect(s.x0, y, s.width, h);
  ctx.clip();
  const path = curvePath(c, s, Y, y + h, tMax);
  ctx.fillStyle = 'rgba(78, 121, 167, 0.28)';
  ctx.fill(path);
  ctx.strokeStyle = '#4e79a7';
  ctx.lineWidth = 1.25;
  ctx.stroke(path);
  if (m.capacityGiB > 0 && m.capOnScale) {
    const cy = Math.round(Y(m.capacityGiB)) + 0.5;
    ctx.strokeStyle = peak > m.capacityGiB ? '#d1242f' : '#c0392b';
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(s.x0, cy);
    ctx.lineTo(s.x1, cy);
    ctx.stroke();
    ctx.setLineDash([]);
  }
  ctx.restore();
}

/** Step curve (memory holds its value until the next sample), min/max per pixel column, closed along `base`. */
function curvePath(c: MemoryCurve, s: TimeScale, Y: (gib: number) => number, base: number, tMax: number): Path2D {
  const pps = s.pxPerSecond;
  let i0 = lowerBound(c.t, s.t0, 0, c.t.length);
  if (i0 > 0) --i0;
  const i1 = Math.min(c.t.length, lowerBound(c.t, s.t1, i0, c.t.length) + 1);
  const path = new Path2D();
  let x = s.x0 + (c.t[i0] - s.t0) * pps;
  path.moveTo(Math.max(x, s.x0 - 1), base);
  let prevY = Y(c.gib[i0]);
  path.lineTo(Math.max(x, s.x0 - 1), prevY);
  let col = Math.floor(x);
  let colMin = prevY;
  let colMax = prevY;
  for (let i = i0 + 1; i < i1; ++i) {
    x = s.x0 + (c.t[i] - s.t0) * pps;
    const yy = Y(c.gib[i]);
    const cx = Math.floor(x);
    if (cx === col) {
      colMin = Math.min(colMin, yy);
      colMax = Math.max(colMax, yy);
      prevY = yy;
      continue;
    }
    if (colMin !== colMax) {
      path.lineTo(col + 0.5, colMin);
      path.lineTo(col + 0.5, colMax);
    }
    path.lineTo(x, prevY);
    path.lineTo(x, yy);
    col = cx;
    colMin = colMax = prevY = yy;
  }
  const xEnd = Math.min(s.x1 + 1, s.x0 + (tMax - s.t0) * pps);
  path.lineTo(xEnd, prevY);
  path.lineTo(xEnd, base);
  path.closePath();
  return path;
}

/** GiB with three significant digits or so. */
export function fmtNum(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}
