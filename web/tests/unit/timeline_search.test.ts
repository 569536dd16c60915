import { describe, expect, it } from 'vitest';
import { spansFromObjects } from '../../src/result';
import { SpanSearch } from '../../src/timeline/search';

describe('span search', () => {
  const obj = (name: string, start: number) => ({ rank: 0, stream: 'compute', name, kind: 'forward', mb: 0, start_s: start, end_s: start + 1 });
  const spans = spansFromObjects([
    obj('layer1.mlp', 5),
    obj('layer1.attn', 0),
    obj('layer0.MLP', 3),
    obj('layer2.mlp', 3),
    obj('optimizer', 9),
  ]);

  it('matches names case-insensitively and walks the matches in time order, wrapping around', () => {
    const search = new SpanSearch(spans);
    expect(search.find('  Mlp ')).toBe(3);
    expect(spans.names.filter((_, i) => search.match![i])).toEqual(['layer1.mlp', 'layer0.MLP', 'layer2.mlp']);
    // starts 3, 3, 5: ties in time go by span index
    expect([search.next(), search.next(), search.next(), search.next()]).toEqual([2, 3, 0, 2]);
    expect(search.next(-1)).toBe(0);
  });

  it('goes to the last match when the first step after a search is "previous" (Shift+Enter)', () => {
    const search = new SpanSearch(spans);
    search.find('mlp');
    expect(search.next(-1)).toBe(0); // layer1.mlp, the latest start (5)
    expect(search.next(-1)).toBe(3);
    expect(search.next(1)).toBe(0);
  });

  it('clears with an empty query, and finds nothing for an unknown name', () => {
    const search = new SpanSearch(spans);
    search.find('mlp');
    expect(search.find(' ')).toBe(0);
    expect(search.match).toBeNull();
    expect(search.next()).toBe(-1);
    expect(search.find('conv')).toBe(0);
    expect(search.next()).toBe(-1);
  });
});
