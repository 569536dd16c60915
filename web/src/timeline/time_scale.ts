// Time <-> pixel mapping for the timeline (Perfetto's TimeScale idea): an immutable value,
// so the renderer reads one scale per frame and interactions produce new scales.

export interface TimeBounds {
  /** The earliest and latest time the view may show, in seconds. */
  min: number;
  max: number;
  /** The narrowest visible window, in seconds. */
  minSpan: number;
}

export class TimeScale {
  /** Visible time window [t0, t1] (seconds) drawn onto pixels [x0, x1]. */
  constructor(
    readonly t0: number,
    readonly t1: number,
    readonly x0: number,
    readonly x1: number,
  ) {}

  get span(): number {
    return this.t1 - this.t0;
  }

  get width(): number {
    return this.x1 - this.x0;
  }

  /** Pixels per second. */
  get pxPerSecond(): number {
    return this.span > 0 ? this.width / this.span : 0;
  }

  toPx(t: number): number {
    return this.x0 + (t - this.t0) * this.pxPerSecond;
  }

  toTime(px: number): number {
    const w = this.width;
    return w > 0 ? this.t0 + ((px - this.x0) / w) * this.span : this.t0;
  }

  /** The same window on a new pixel range (the canvas was resized). */
  withRange(x0: number, x1: number): TimeScale {
    return new TimeScale(this.t0, this.t1, x0, x1);
  }

  /** Zoom by `factor` (>1 zooms in) keeping the time under pixel `px` fixed. */
  zoomAt(px: number, factor: number, bounds: TimeBounds): TimeScale {
    const anchor = this.toTime(px);
    const span = this.span / factor;
    const frac = this.width > 0 ? (px - this.x0) / this.width : 0.5;
    const t0 = anchor - frac * span;
    return this.window(t0, t0 + span, bounds);
  }

  /** Move the window by `dpx` pixels (positive moves the content right, i.e. earlier times). */
  panBy(dpx: number, bounds: TimeBounds): TimeScale {
    const dt = this.pxPerSecond > 0 ? dpx / this.pxPerSecond : 0;
    return this.window(this.t0 - dt, this.t1 - dt, bounds);
  }

  /** A window [t0, t1] on the same pixels, clamped into the bounds. */
  window(t0: number, t1: number, bounds: TimeBounds): TimeScale {
    const full = Math.max(bounds.max - bounds.min, bounds.minSpan);
    let span = Math.min(Math.max(t1 - t0, bounds.minSpan), full);
    if (!(span > 0)) span = full;
    let a = t0;
    if (a < bounds.min) a = bounds.min;
    if (a + span > bounds.min + full) a = bounds.min + full - span;
    return new TimeScale(a, a + span, this.x0, this.x1);
  }

  /** Tick positions for an axis with at least `minSpacingPx` between labels. */
  ticks(minSpacingPx = 80): { step: number; values: number[] } {
    const maxTicks = Math.max(1, Math.floor(this.width / minSpacingPx));
    const step = niceStep(this.span, maxTicks);
    const values: number[] = [];
    if (!(step > 0)) return { step, values };
    const first = Math.ceil(this.t0 / step - 1e-9) * step;
    for (let i = 0; ; ++i) {
      const v = first + i * step;
      if (v > this.t1 + step * 1e-9 || i > 1000) break;
      values.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return { step, values };
  }
}

/** The smallest step of the form {1, 2, 5}·10^k that splits `span` into at most `maxTicks`. */
export function niceStep(span: number, maxTicks: number): number {
  if (!(span > 0) || !(maxTicks > 0)) return 0;
  const raw = span / maxTicks;
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw * (1 - 1e-12)) return m * pow;
  return 10 * pow;
}

/** A tick label for time `t` on an axis with spacing `step`: unit chosen by the step. */
export function formatTick(t: number, step: number): string {
  const units: [number, string][] = [
    [1, 's'],
    [1e-3, 'ms'],
    [1e-6, 'µs'],
    [1e-9, 'ns'],
  ];
  let [scale, unit] = units[units.length - 1];
  for (const [s, u] of units)
    if (step >= s * 0.0999) {
      scale = s;
      unit = u;
      break;
    }
  const v = t / scale;
  const stepV = step / scale;
  const decimals = stepV >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(stepV) - 1e-9));
  return `${v.toFixed(decimals)} ${unit}`;
}
