import { describe, expect, it } from 'vitest';
import { memoryHeader, memoryScale, memoryTip } from '../../src/timeline/memory_track';
import { TimeScale } from '../../src/timeline/time_scale';

describe('memory tracks', () => {
  const curves = (peak: number) => [{ rank: 0, t: new Float64Array([0, 1]), gib: new Float64Array([peak / 2, peak]) }];

  it('scales to the peak, and reaches the capacity only when it is near', () => {
    const far = memoryScale({ curves: curves(40), capacityGiB: 80 });
    expect(far.capOnScale).toBe(false);
    expect(far.max).toBeCloseTo(40 * 1.12);
    expect(memoryHeader(far)).toBe('Memory in use per GPU, 0 – 44.8 GiB (capacity 80.0 GiB is above the scale)');
    const near = memoryScale({ curves: curves(40), capacityGiB: 60 });
    expect(near.capOnScale).toBe(true);
    expect(near.max).toBeGreaterThan(60);
    expect(memoryHeader(near)).toBe('Memory in use per GPU, 0 – 62.4 GiB (dashed: capacity 60.0 GiB)');
    expect(memoryScale(undefined).max).toBe(1);
  });

  it('reads the curve as steps: a sample holds until the next, nothing before the first', () => {
    const c = { rank: 3, t: new Float64Array([1, 2, 3]), gib: new Float64Array([5, 10.5, 2.25]) };
    const s = new TimeScale(0, 4, 0, 400);
    const at = (t: number) => memoryTip(c, t, s)?.find(([k]) => k === 'memory')?.[1];
    expect(memoryTip(c, 0.5, s)).toBeNull();
    expect(at(1)).toBe('5.00 GiB');
    expect(at(2)).toBe('10.5 GiB');
    expect(at(2.9)).toBe('10.5 GiB');
    expect(at(9)).toBe('2.25 GiB');
    expect(memoryTip(c, 2, s)![0]).toEqual(['GPU', '3']);
  });
});
