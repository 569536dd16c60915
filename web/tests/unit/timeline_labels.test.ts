import { describe, expect, it } from 'vitest';
import { spansFromObjects } from '../../src/result';
import { fitText, labelFamilies, LabelRuns, type Label } from '../../src/timeline/labels';
import { mix, textColorOn } from '../../src/timeline/theme';
import { TimeScale } from '../../src/timeline/time_scale';

describe('fitting text', () => {
  const w = (t: string) => t.length * 7;

  it('keeps text that fits and cuts the rest with an ellipsis to the room', () => {
    expect(fitText('GPU 12', 42, w)).toBe('GPU 12');
    expect(fitText('GPU 1024', 42, w)).toBe('GPU 1…');
    expect(w(fitText('GPU 1024 ×1024 GPUs', 60, w))).toBeLessThanOrEqual(60);
  });

  it('gives nothing when not even one letter and the ellipsis fit', () => {
    expect(fitText('GPU 1024', 13, w)).toBe('');
    expect(fitText('GPU 1024', 14, w)).toBe('G…');
  });
});

describe('label runs', () => {
  // On a scale of 10 px per second from x 0 to 200.
  const scale = new TimeScale(0, 20, 0, 200);
  const obj = (kind: string, mb: number) => ({ rank: 0, stream: 'compute', name: `${kind}${mb}`, kind, mb, start_s: 0, end_s: 1 });
  const spans = spansFromObjects([
    obj('forward', 0),
    obj('forward', 0),
    obj('backward_weight', 1),
    obj('backward_input', 1),
    obj('forward', 2),
    obj('optimizer', -1),
    obj('all_reduce', -1),
  ]);
  const run = (steps: [number, number, number][]) => {
    const out: Label[] = [];
    const runs = new LabelRuns(spans, labelFamilies(spans.kinds), scale, 30, 16, out);
    for (const [i, x0, x1] of steps) runs.extend(i, x0, x1);
    runs.flush();
    return out.map((l) => [l.i, l.x, l.w]);
  };

  it('labels a run of touching spans of one micro-batch once, across its whole width', () => {
    expect(run([
      [0, 0, 10],
      [1, 11, 30],
    ])).toEqual([[0, 0, 30]]);
  });

  it('starts a new run at a gap of 2 px or more, or at another micro-batch', () => {
    expect(run([
      [0, 0, 20],
      [1, 22, 40],
    ])).toEqual([
      [0, 0, 20],
      [1, 22, 18],
    ]);
    expect(run([
      [0, 0, 20],
      [4, 20, 40],
    ])).toEqual([
      [0, 0, 20],
      [4, 20, 20],
    ]);
  });

  it('names a run of interleaved B and W ops after a B', () => {
    expect(run([
      [2, 0, 20],
      [3, 20, 40],
      [2, 40, 60],
    ])).toEqual([[3, 0, 60]]);
  });

  it('keeps kinds outside the label families apart', () => {
    const f = labelFamilies(spans.kinds);
    expect(f[spans.kinds.indexOf('backward_weight')]).toBe(f[spans.kinds.indexOf('backward_input')]);
    expect(f[spans.kinds.indexOf('optimizer')]).not.toBe(f[spans.kinds.indexOf('all_reduce')]);
    expect(run([
      [5, 0, 20],
      [6, 20, 40],
    ])).toHaveLength(2);
  });

  it('drops runs too narrow for a label and clips runs to the visible pixels', () => {
    expect(run([[0, 0, 10]])).toEqual([]);
    expect(run([[0, 0, 11]])).toEqual([[0, 0, 11]]);
    expect(run([[0, 180, 260]])).toEqual([[0, 180, 20]]);
    expect(run([[0, 190, 260]])).toEqual([]); // 10 px left on screen
    expect(run([[0, -50, 5]])).toEqual([]);
  });
});

describe('kind colors', () => {
  it('writes dark text on light colors and white text on dark ones', () => {
    expect(textColorOn('#ffffff')).toBe('#1b1f24');
    expect(textColorOn('#edc948')).toBe('#1b1f24'); // all-gather's yellow
    expect(textColorOn('#4e79a7')).toBe('#ffffff'); // forward's blue
    expect(textColorOn('not a color')).toBe('#ffffff');
  });

  it('mixes two colors channel by channel', () => {
    expect(mix('#000000', '#ffffff', 0.5)).toBe('#808080');
    expect(mix('#ff0000', '#0000ff', 0)).toBe('#ff0000');
    expect(mix('#ff0000', '#0000ff', 1)).toBe('#0000ff');
  });
});
