// Text inside spans ("F3") and beside lanes: which runs of spans get a label, where it goes,
// and how a name is cut to the room it has.
import type { Spans } from '../result';
import type { Frame } from './frame';
import { FONT } from './theme';
import type { TimeScale } from './time_scale';

/** A place for one label: a run of spans on screen, named after span i. */
export type Label = { x: number; y: number; w: number; h: number; i: number };

const MIN_LABEL_PX = 5;

/** Label families: a run of touching spans of one family and micro-batch gets one label
 * (1F1B's backward is B and W ops interleaved: one "B3", not slivers). */
const FAMILY: Record<string, number> = { forward: 1, backward_input: 2, backward_weight: 2, recompute: 2, backward: 2 };

/** The label family of each kind (index into spans.kinds); kinds outside FAMILY are their own family. */
export function labelFamilies(kinds: readonly string[]): number[] {
  return kinds.map((k, i) => FAMILY[k] ?? 10 + i);
}

/**
 * Collects the label places of one lane, span by span in time order. Labels go on runs of
 * touching spans of one family and micro-batch ("F3" over all the ops of micro-batch 3's
 * forward pass), only where the run is wide enough; a run of B and W ops is named after a B.
 */
export class LabelRuns {
  private key = -1;
  private x0 = 0;
  private x1 = 0;
  private i = 0;
  private readonly kind: Uint8Array;
  private readonly mb: Int32Array;
  private readonly bwdInput: number;

  constructor(
    spans: Spans,
    private readonly family: readonly number[],
    private readonly scale: TimeScale,
    private readonly y: number,
    private readonly h: number,
    private readonly out: Label[],
  ) {
    this.kind = spans.kind;
    this.mb = spans.mb;
    this.bwdInput = spans.kinds.indexOf('backward_input');
  }

  /** Span i covers pixels [x0, x1]. */
  extend(i: number, x0: number, x1: number): void {
    const kind = this.kind;
    const key = this.family[kind[i]] * 1_000_003 + (this.mb[i] + 1);
    if (key === this.key && x0 - this.x1 < 2) {
      if (x1 > this.x1) this.x1 = x1;
      if (kind[i] === this.bwdInput && kind[this.i] !== this.bwdInput) this.i = i; // B+W ops: "B"
      return;
    }
    this.flush();
    this.key = key;
    this.x0 = x0;
    this.x1 = x1;
    this.i = i;
  }

  /** Ends the current run (call once after the lane's last span). */
  flush(): void {
    if (this.key < 0) return;
    const s = this.scale;
    const a = Math.max(this.x0, s.x0);
    const b = Math.min(this.x1, s.x1);
    if (b - a >= MIN_LABEL_PX + 6) this.out.push({ x: a, y: this.y, h: this.h, w: b - a, i: this.i });
  }
}

/** Draws each label centered in its place, when the text fits; `textColor` per kind. */
export function drawLabels(
  f: Frame,
  labels: Label[],
  spans: Spans,
  label: (spans: Spans, i: number) => string | null,
  textColor: readonly string[],
): void {
  const ctx = f.ctx;
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  let lastFill = '';
  for (const l of labels) {
    const text = label(spans, l.i);
    if (!text) continue;
    const tw = f.measure(text);
    if (tw + 4 > l.w) continue;
    const fill = textColor[spans.kind[l.i]];
    if (fill !== lastFill) ctx.fillStyle = lastFill = fill;
    ctx.fillText(text, l.x + (l.w - tw) / 2, l.y + l.h / 2 + 0.5);
  }
}

/** `text`, cut with an ellipsis to fit `room` pixels ('' when not even one letter fits). */
export function fitText(text: string, room: number, width: (t: string) => number): string {
  if (width(text) <= room) return text;
  for (let n = text.length - 1; n > 0; --n) {
    const t = text.slice(0, n) + '…';
    if (width(t) <= room) return t;
  }
  return '';
}
