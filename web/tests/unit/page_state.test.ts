// Page state beside the config: memory fit with a reserve, the link's extra state, and the
// difference labels of compared runs.
import { describe, expect, it } from 'vitest';
import { differenceLabels } from '../../src/compare';
import { memoryFit } from '../../src/results';
import { decodeState, encodeFragment } from '../../src/share';

describe('memory fit with a reserve', () => {
  it('does not call 79.1 of 80 GiB a fit when 2 GiB must stay free', () => {
    expect(memoryFit({ peak_memory_GiB: 79.1, memory_capacity_GiB: 80, oom: false }, 2)).toBe('reserve');
    expect(memoryFit({ peak_memory_GiB: 79.1, memory_capacity_GiB: 80, oom: false }, 0)).toBe('fits');
    expect(memoryFit({ peak_memory_GiB: 78, memory_capacity_GiB: 80, oom: false }, 2)).toBe('fits'); // exactly the reserve left
    expect(memoryFit({ peak_memory_GiB: 81, memory_capacity_GiB: 80, oom: true }, 2)).toBe('oom');
  });
});

describe('the link holds the lesson step, tab, pins, presenter mode and reserve', () => {
  it('round-trips', () => {
    const pins = [{ label: 'before', config: { model: 'llama3-8b', training: { global_batch: 64 } } }];
    const frag = encodeFragment({ model: 'llama3-8b' }, { lesson: 'pipeline', step: 2, tab: 'compare', pins, present: true, reserve: 3.5 });
    expect(frag).toMatch(/^lesson=pipeline&step=3&c=/);
    expect(decodeState('#' + frag)).toEqual({ lesson: 'pipeline', step: 2, tab: 'compare', pins, present: true, reserve: 3.5 });
  });
  it('drops malformed parts instead of trusting them', () => {
    expect(decodeState('#lesson=<script>&step=x&tab=a%20b&p=garbage&r=-1')).toEqual({});
    const many = Array.from({ length: 20 }, (_, i) => ({ label: `p${i}`, config: {} }));
    expect(decodeState('#' + encodeFragment(null, { pins: many })).pins).toHaveLength(8);
  });
});

describe('difference labels of compared runs', () => {
  it('names only what differs, presets given either way', () => {
    const a = { model: 'llama3-8b', cluster: 'dgx-h100', training: { global_batch: 128, seq_len: 8192 }, strategy: { schedule: '1f1b' } };
    const b = { model: 'llama3-8b', cluster: { preset: 'dgx-h100' }, training: { global_batch: 64, seq_len: 8192 }, strategy: { schedule: 'interleaved-1f1b', virtual_stages: 2 } };
    expect(differenceLabels([a, b])).toEqual(['schedule 1f1b · virtual stages default · global batch 128', 'schedule interleaved-1f1b · virtual stages 2 · global batch 64']);
  });
});
