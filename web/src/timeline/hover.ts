// The hover layer: a cursor line, the hovered span's outline and a tooltip. They are DOM
// elements over the canvas, so moving the mouse never repaints it.
import type { Spans } from '../result';
import { rowUnder, spanUnder } from './hit_test';
import type { LaneIndex } from './lanes';
import { memoryTip } from './memory_track';
import type { TimelineOptions } from './options';
import type { Row } from './rows';
import { AXIS_H } from './theme';
import type { TimeScale } from './time_scale';

/** What the hover reads of the view at the moment of the hover. */
export interface HoverView {
  scale: TimeScale;
  rows: readonly Row[];
  /** The rows' scroll offset. */
  top: number;
  /** The view's size in CSS pixels. */
  width: number;
  height: number;
  spans: Spans;
  idx: LaneIndex;
  tooltip: TimelineOptions['tooltip'];
}

export class HoverLayer {
  readonly cursor = div('tl-cursor');
  readonly highlight = div('tl-highlight');
  readonly tip = div('tl-tip');

  /** The mouse at view pixel (x, y): the cursor at x, and the span or memory sample under it. */
  at(v: HoverView, x: number, y: number): void {
    const s = v.scale;
    if (x < s.x0 || x > s.x1 || y < AXIS_H) return this.hide();
    this.cursor.style.display = 'block';
    this.cursor.style.transform = `translateX(${Math.round(x)}px)`;
    this.cursor.style.height = `${v.height - AXIS_H}px`;
    const row = rowUnder(v.rows, y + v.top);
    if (!row) return this.hideTip();
    const rowBottom = row.y - v.top + row.h;
    if (row.type === 'lane') {
      const k = spanUnder(v.idx, row.lane, s, x, 3);
      if (k < 0) return this.hideTip();
      const i = v.idx.order[k];
      const x0 = Math.max(s.x0, s.toPx(v.idx.start[k]));
      const x1 = Math.min(s.x1, s.toPx(v.idx.end[k]));
      Object.assign(this.highlight.style, {
        display: 'block',
        left: `${x0 - 1}px`,
        top: `${row.y - v.top}px`,
        width: `${Math.max(1, x1 - x0) + 2}px`,
        height: `${row.h}px`,
      });
      const lines = v.tooltip?.(v.spans, i) ?? [['span', v.spans.names[v.spans.name[i]]]];
      this.showTip(v, lines, x, rowBottom);
    } else if (row.type === 'memory') {
      this.highlight.style.display = 'none';
      const lines = memoryTip(row.curve, s.toTime(x), s);
      if (!lines) return this.hideTip();
      this.showTip(v, lines, x, rowBottom);
    } else this.hideTip();
  }

  /** Hides the cursor, the outline and the tooltip. */
  hide(): void {
    this.cursor.style.display = 'none';
    this.hideTip();
  }

  private hideTip(): void {
    this.tip.style.display = 'none';
    this.highlight.style.display = 'none';
  }

  /** The tooltip right of and below (x, y), flipped left or up where it would leave the view. */
  private showTip(v: HoverView, lines: [string, string][], x: number, y: number): void {
    const tip = this.tip;
    tip.replaceChildren(
      ...lines.map(([k, val]) => {
        const line = div('tl-tip-row');
        const a = document.createElement('span');
        a.className = 'tl-tip-key';
        a.textContent = k;
        const b = document.createElement('span');
        b.textContent = val;
        line.append(a, b);
        return line;
      }),
    );
    tip.style.display = 'block';
    const w = tip.offsetWidth;
    const h = tip.offsetHeight;
    const left = x + 14 + w > v.width ? x - 14 - w : x + 14;
    const top = y + 6 + h > v.height ? Math.max(AXIS_H, y - h - 24) : y + 6;
    tip.style.transform = `translate(${Math.round(left)}px, ${Math.round(top)}px)`;
  }
}

export function div(cls: string): HTMLDivElement {
  const d = document.createElement('div');
  d.className = cls;
  return d;
}
