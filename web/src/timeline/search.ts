// Search over span names: which names match (the painter dims the other spans) and the
// matching spans in time order, walked one by one by next().
import type { Spans } from '../result';

export class SpanSearch {
  /** Per name (index into spans.names): 1 when it matches; null while there is no query. */
  match: Uint8Array | null = null;
  private list: number[] = [];
  private at = -1;

  constructor(private readonly spans: Spans) {}

  /** Spans whose name contains `query` (case-insensitive); returns how many. */
  find(query: string): number {
    const q = query.trim().toLowerCase();
    this.list = [];
    this.at = -1;
    if (!q) {
      this.match = null;
      return 0;
    }
    const sp = this.spans;
    const m = new Uint8Array(sp.names.length);
    sp.names.forEach((n, i) => (m[i] = n.toLowerCase().includes(q) ? 1 : 0));
    this.match = m;
    // Matches in time order, for "next".
    for (let i = 0; i < sp.n; ++i) if (m[sp.name[i]]) this.list.push(i);
    this.list.sort((a, b) => sp.start[a] - sp.start[b] || a - b);
    return this.list.length;
  }

  /** The next match (dir -1: the previous), wrapping around; -1 when there is none. Right
   *  after a search, "next" is the first match and "previous" the last. */
  next(dir = 1): number {
    const n = this.list.length;
    if (!n) return -1;
    this.at = this.at < 0 ? (dir < 0 ? n - 1 : 0) : (this.at + dir + n) % n;
    return this.list[this.at];
  }
}
