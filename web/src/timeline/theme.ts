// The timeline's look: its fonts, the height of the time axis, the canvas colors of the
// page's theme, and the colors derived from each span kind's color.

export const AXIS_H = 26;
export const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
export const FONT_BOLD = '600 11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const IDLE_FILL = '#f7e3e1'; // compute lane with nothing running: idle (the bubble)

export type Palette = ReturnType<typeof palette>;

/** Canvas colors of the page's theme (the ◐ switch sets data-theme="dark" on <html>). */
export function palette() {
  const dark = document.documentElement.dataset.theme === 'dark';
  return dark
    ? { bg: '#1a212b', group: '#222b37', ink: '#e6ebf2', ink2: '#c2cbd6', ink3: '#a3adb9', lane1: '#1f2731', lane2: '#242d38', rule: '#3c4858', idle: '#4a3032' }
    : { bg: '#ffffff', group: '#f6f7f9', ink: '#1f2630', ink2: '#3d4651', ink3: '#5f6873', lane1: '#fafbfc', lane2: '#f4f6f8', rule: '#d5d9df', idle: IDLE_FILL };
}

/** Per span kind (index into spans.kinds): its fill, its fill when a search dims it, and its label color. */
export interface KindPaint {
  fill: string[];
  dim: string[];
  text: string[];
}

export function kindPaint(kinds: readonly string[], color: (kind: string) => string): KindPaint {
  const fill = kinds.map((k) => color(k));
  return { fill, dim: fill.map((c) => mix(c, '#ffffff', 0.78)), text: fill.map(textColorOn) };
}

/** c1 mixed toward c2 by f (0..1), both "#rrggbb". */
export function mix(c1: string, c2: string, f: number): string {
  const p = (c: string) => {
    const m = /^#([0-9a-f]{6})$/i.exec(c);
    const v = m ? parseInt(m[1], 16) : 0x888888;
    return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
  };
  const a = p(c1);
  const b = p(c2);
  return '#' + a.map((x, i) => Math.round(x + (b[i] - x) * f).toString(16).padStart(2, '0')).join('');
}

/** Black or white text, whichever reads better on `color` ("#rrggbb"). */
export function textColorOn(color: string): string {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return '#ffffff';
  const v = parseInt(m[1], 16);
  const r = (v >> 16) & 255;
  const g = (v >> 8) & 255;
  const b = v & 255;
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#1b1f24' : '#ffffff';
}
