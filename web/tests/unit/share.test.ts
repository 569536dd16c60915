import LZString from 'lz-string';
import { describe, expect, it } from 'vitest';
import { decodeFragment, decodeState, encodeConfig, encodeFragment, MAX_CONFIG_CHARS, MAX_FRAGMENT_CHARS, shareUrl } from '../../src/share';

const config = {
  model: { preset: 'llama3-8b', layers: 16 },
  cluster: { preset: 'dgx-h100', nodes: 4 },
  training: { global_batch: 128, seq_len: 8192, precision: 'bf16' },
  strategy: { dp: 4, tp: 4, pp: 2, schedule: '1f1b', sequence_parallel: true, overrides: [{ path: 'layers.*.mlp', recompute: 'full' }] },
  name: 'quotes " and <b>tags</b> & ünïcødé ✓',
};

describe('share links', () => {
  it('round-trips a config through the fragment exactly', () => {
    const frag = encodeConfig(config);
    expect(frag.startsWith('c=')).toBe(true);
    expect(frag).toMatch(/^[A-Za-z0-9=+\-$_]*$/); // URL-safe: no escaping needed
    const d = decodeFragment('#' + frag);
    expect(d).toEqual({ ok: true, config });
  });

  it('builds a full link that keeps the page path and replaces the old fragment', () => {
    const url = shareUrl('https://example.org/sub/path/index.html?x=1#c=old', config);
    expect(url.startsWith('https://example.org/sub/path/index.html?x=1#c=')).toBe(true);
    expect(decodeFragment(new URL(url).hash)).toEqual({ ok: true, config });
  });

  it('round-trips zb_plan, and its absence (the framework default), with the page state', () => {
    for (const zb of [{ zb_plan: 'unit' }, { zb_plan: 'profiled' }, {}]) {
      const c = { ...config, strategy: { ...config.strategy, schedule: 'zb-v', ...zb } };
      const frag = encodeFragment(c, { tab: 'timeline' });
      expect(decodeFragment('#' + frag)).toEqual({ ok: true, config: c });
      expect(decodeState('#' + frag).tab).toBe('timeline');
    }
  });

  it('ignores fragments without a config', () => {
    expect(decodeFragment('')).toBeNull();
    expect(decodeFragment('#')).toBeNull();
    expect(decodeFragment('#tab=sweep')).toBeNull();
  });

  it('reports a damaged link', () => {
    const frag = encodeConfig(config);
    const cut = frag.slice(0, Math.floor(frag.length / 2)) + '%%%';
    const d = decodeFragment(cut);
    expect(d?.ok).toBe(false);
    if (d && !d.ok) expect(d.message).toMatch(/damaged/);
    const garbage = decodeFragment('#c=!!!!not-lz!!!!');
    expect(garbage?.ok).toBe(false);
  });

  it('reports a link that is not a JSON object', () => {
    for (const v of ['[1,2]', '42', 'null', '"text"']) {
      const d = decodeFragment('c=' + LZString.compressToEncodedURIComponent(v));
      expect(d?.ok).toBe(false);
    }
    const notJson = decodeFragment('c=' + LZString.compressToEncodedURIComponent('{"model": '));
    expect(notJson?.ok).toBe(false);
    if (notJson && !notJson.ok) expect(notJson.message).toMatch(/not valid JSON/);
  });

  it('refuses oversized links before decompressing them', () => {
    const d = decodeFragment('c=' + 'A'.repeat(MAX_FRAGMENT_CHARS + 1));
    expect(d?.ok).toBe(false);
    if (d && !d.ok) expect(d.message).toMatch(/too long/);
  });

  it('refuses a link that decompresses to a huge config (a compression bomb)', () => {
    const big = JSON.stringify({ name: 'x'.repeat(MAX_CONFIG_CHARS + 10) });
    const frag = 'c=' + LZString.compressToEncodedURIComponent(big);
    expect(frag.length).toBeLessThan(MAX_FRAGMENT_CHARS);
    const d = decodeFragment(frag);
    expect(d?.ok).toBe(false);
    if (d && !d.ok) expect(d.message).toMatch(/too large/);
  });
});
