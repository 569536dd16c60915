import { describe, expect, it } from 'vitest';
import { formatTick, niceStep, TimeScale } from '../../src/timeline/time_scale';

const bounds = { min: 0, max: 10, minSpan: 1e-6 };

describe('TimeScale', () => {
  // 10 s over 1000 px starting at x=100: 100 px per second.
  const s = new TimeScale(0, 10, 100, 1100);

  it('maps time to pixels linearly and back', () => {
    expect(s.pxPerSecond).toBe(100);
    expect(s.toPx(0)).toBe(100);
    expect(s.toPx(2.5)).toBe(350);
    expect(s.toPx(10)).toBe(1100);
    for (const t of [0, 0.1, 3.3, 9.99]) expect(s.toTime(s.toPx(t))).toBeCloseTo(t, 12);
  });

  it('zooms about the pixel under the cursor', () => {
    const z = s.zoomAt(350, 2, bounds); // 2.5 s stays at x=350, window halves to 5 s
    expect(z.span).toBeCloseTo(5, 12);
    expect(z.toPx(2.5)).toBeCloseTo(350, 9);
    expect(z.t0).toBeCloseTo(1.25, 12);
    const back = z.zoomAt(350, 0.5, bounds);
    expect(back.t0).toBeCloseTo(0, 12);
    expect(back.t1).toBeCloseTo(10, 12);
  });

  it('never zooms out past the data or in past the minimum span', () => {
    const out = s.zoomAt(600, 0.1, bounds);
    expect(out.t0).toBe(0);
    expect(out.t1).toBe(10);
    let z = s;
    for (let i = 0; i < 100; ++i) z = z.zoomAt(600, 10, bounds);
    expect(z.span).toBeCloseTo(1e-6, 15);
    expect(z.t0).toBeGreaterThanOrEqual(0);
  });

  it('pans by pixels and clamps at the ends', () => {
    const z = s.zoomAt(600, 4, bounds); // 2.5 s window, 400 px/s
    const p = z.panBy(-400, bounds); // drag left by 400 px: one second later
    expect(p.t0).toBeCloseTo(z.t0 + 1, 12);
    expect(p.span).toBeCloseTo(z.span, 12);
    const far = z.panBy(1e9, bounds);
    expect(far.t0).toBe(0);
    const farRight = z.panBy(-1e9, bounds);
    expect(farRight.t1).toBeCloseTo(10, 12);
  });

  it('keeps the window when the canvas is resized', () => {
    const r = s.withRange(0, 500);
    expect([r.t0, r.t1]).toEqual([0, 10]);
    expect(r.pxPerSecond).toBe(50);
  });
});

describe('ticks', () => {
  it('picks 1-2-5 steps', () => {
    expect(niceStep(10, 10)).toBe(1);
    expect(niceStep(10, 4)).toBe(5);
    expect(niceStep(4.1, 10)).toBeCloseTo(0.5, 12);
    expect(niceStep(0.0042, 5)).toBeCloseTo(0.001, 12);
    expect(niceStep(0, 5)).toBe(0);
  });

  it('places ticks on multiples of the step inside the window', () => {
    const s = new TimeScale(0.013, 0.047, 0, 400);
    const { step, values } = s.ticks(80); // at most 5 ticks -> 0.01 s
    expect(step).toBeCloseTo(0.01, 12);
    expect(values.map((v) => Math.round(v * 1000))).toEqual([20, 30, 40]);
  });

  it('labels ticks with a unit chosen by the step', () => {
    expect(formatTick(1.5, 0.5)).toBe('1.5 s');
    expect(formatTick(2, 1)).toBe('2 s');
    expect(formatTick(0.25, 0.05)).toBe('250 ms');
    expect(formatTick(0.0123, 0.0001)).toBe('12.3 ms');
    expect(formatTick(42e-6, 1e-6)).toBe('42 µs');
    expect(formatTick(0, 0.001)).toBe('0 ms');
  });
});
