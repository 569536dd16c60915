// The GPU compute control: a fraction in the config shown as a percentage, 100% leaving the
// field unset (no override, the link as short as before), and its share-link round trip.
import { describe, expect, it } from 'vitest';
import { differenceLabels } from '../../src/compare';
import { setPath, unsetPath } from '../../src/config_model';
import { ALL_CONTROLS, controlForPath } from '../../src/controls';
import { fractionToPercent, percentToFraction } from '../../src/percent';
import { decodeFragment, encodeConfig } from '../../src/share';

const PATH = 'cluster.gpu.compute_throughput_fraction';

describe('percent <-> fraction', () => {
  it('shows a fraction as the percentage a person would type', () => {
    expect(fractionToPercent(1)).toBe(100);
    expect(fractionToPercent(0.91)).toBe(91); // 0.91 × 100 is 91.00000000000001 in binary
    expect(fractionToPercent(0.5)).toBe(50);
    expect(fractionToPercent(0.915)).toBe(91.5);
    expect(fractionToPercent(0.07)).toBe(7); // 7.000000000000001 in binary
  });

  it('writes the fraction JSON reads for the typed percentage', () => {
    expect(percentToFraction(91)).toBe(0.91);
    expect(percentToFraction(91.5)).toBe(0.915);
    expect(percentToFraction(7)).toBe(0.07);
    for (let p = 1; p < 100; ++p) expect(fractionToPercent(percentToFraction(p)!)).toBe(p);
  });

  it('leaves the field unset at 100% and for no number', () => {
    expect(percentToFraction(100)).toBeUndefined();
    expect(percentToFraction(undefined)).toBeUndefined();
    expect(percentToFraction(Number.NaN)).toBeUndefined();
  });

  it('writes out-of-range values as typed, for the core to reject with its message', () => {
    expect(percentToFraction(0)).toBe(0);
    expect(percentToFraction(120)).toBe(1.2);
    expect(percentToFraction(-5)).toBe(-0.05);
  });
});

describe('the GPU compute control', () => {
  it('is a percent control whose errors are placed on it', () => {
    const spec = ALL_CONTROLS.find((c) => c.path === PATH);
    expect(spec?.kind).toBe('percent');
    expect(spec?.help).toMatch(/500 W.*91%/);
    expect(controlForPath(PATH)).toBe(PATH);
  });

  it('at 100% gives back the config, and the link, from before it was set', () => {
    for (const before of [
      { model: 'llama3-8b', cluster: 'dgx-h100' },
      { model: 'llama3-8b', cluster: { preset: 'dgx-h100', nodes: 2 } },
      { model: 'llama3-8b', cluster: { preset: 'dgx-h100', gpu: { kernel_launch_us: 5 } } },
    ]) {
      const cluster = typeof before.cluster === 'string' ? { preset: before.cluster } : before.cluster;
      const set = setPath({ ...before, cluster }, PATH, percentToFraction(91));
      expect(set.cluster.gpu.compute_throughput_fraction).toBe(0.91);
      const unset = unsetPath(set, PATH);
      expect(unset).toEqual(before);
      expect(encodeConfig(unset)).toBe(encodeConfig(before));
    }
  });

  it('unsetting a field that is not set keeps a preset name', () => {
    const c = { model: 'llama3-8b', cluster: 'dgx-h100' };
    expect(unsetPath(c, PATH)).toEqual(c);
  });

  it('round-trips through the share link', () => {
    const c = { model: 'llama3-8b', cluster: { preset: 'dgx-h100', gpu: { compute_throughput_fraction: percentToFraction(91) } } };
    const d = decodeFragment('#' + encodeConfig(c));
    expect(d).toEqual({ ok: true, config: c });
    if (d?.ok) expect(fractionToPercent((d.config as any).cluster.gpu.compute_throughput_fraction)).toBe(91);
  });

  it('names the fraction in the labels of compared runs', () => {
    const a = { model: 'llama3-8b', cluster: 'dgx-h100' };
    const b = { model: 'llama3-8b', cluster: { preset: 'dgx-h100', gpu: { compute_throughput_fraction: 0.91 } } };
    expect(differenceLabels([a, b])).toEqual(['GPU compute fraction default', 'GPU compute fraction 0.91']);
  });
});
