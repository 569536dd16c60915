import { describe, expect, it } from 'vitest';
import { formatDuration, formatGiB, formatInt, formatPercent, formatSI, sig3 } from '../../src/format';

describe('formatting', () => {
  it('keeps three significant digits', () => {
    expect(sig3(1.23456)).toBe('1.23');
    expect(sig3(12.3456)).toBe('12.3');
    expect(sig3(123.456)).toBe('123');
    expect(sig3(0.012345)).toBe('0.0123');
    expect(sig3(0)).toBe('0');
    expect(sig3(NaN)).toBe('–');
  });

  it('formats durations with the unit that keeps 1–999', () => {
    expect(formatDuration(4.118)).toBe('4.12 s');
    expect(formatDuration(0.521)).toBe('521 ms');
    expect(formatDuration(0.0123)).toBe('12.3 ms');
    expect(formatDuration(12e-6)).toBe('12.0 µs');
    expect(formatDuration(8e-7)).toBe('800 ns');
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(7200)).toBe('2.00 h');
  });

  it('formats counts with SI prefixes', () => {
    expect(formatSI(254614.95)).toBe('255k');
    expect(formatSI(31.08)).toBe('31.1');
    expect(formatSI(1.5e6)).toBe('1.50M');
    expect(formatSI(999.9)).toBe('1.00k');
    expect(formatSI(2.2e9)).toBe('2.20G');
  });

  it('formats fractions, memory and integers', () => {
    expect(formatPercent(0.4658)).toBe('46.6%');
    expect(formatPercent(0.064)).toBe('6.4%');
    expect(formatPercent(0)).toBe('0%');
    expect(formatGiB(19.977)).toBe('20.0 GiB');
    expect(formatGiB(0.0625)).toBe('0.0625 GiB');
    expect(formatGiB(0.005)).toBe('5.12 MiB');
    expect(formatGiB(2048)).toBe('2.00 TiB');
    expect(formatInt(43849)).toBe('43\u2009849');
    expect(formatInt(1234567)).toBe('1\u2009234\u2009567');
  });
});
