// One redraw's drawing state, handed to every painter: the canvas, the visible time window,
// how far the lanes are scrolled, the view's size and the theme's colors.
import type { Palette } from './theme';
import type { TimeScale } from './time_scale';

export interface Frame {
  ctx: CanvasRenderingContext2D;
  scale: TimeScale;
  /** The rows' scroll offset: a row at content y is drawn at y - top. */
  top: number;
  /** The view's size in CSS pixels. */
  width: number;
  height: number;
  pal: Palette;
  /** Width of `text` in the current font, cached by text (the painters measure in FONT). */
  measure: (text: string) => number;
}

/** A cached measureText: the same labels are measured frame after frame. */
export function textWidths(ctx: CanvasRenderingContext2D): (text: string) => number {
  const cache = new Map<string, number>();
  return (text) => {
    let w = cache.get(text);
    if (w === undefined) {
      w = ctx.measureText(text).width;
      if (cache.size < 10_000) cache.set(text, w);
    }
    return w;
  };
}
