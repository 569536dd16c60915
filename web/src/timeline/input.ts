// Mouse and keyboard, Perfetto's habits: the wheel zooms at the pointer (Shift or a
// sideways swipe pans), a drag selects a time range, Shift+drag or a drag on the time axis
// or the gutter pans (and scrolls the lanes), a click selects a span or toggles a stage
// header, a double click shows everything; W/S zoom, A/D pan, 0 resets, F fits the
// selected span, Escape clears the selection.
import { listenTouch } from './touch';
import { AXIS_H } from './theme';
import type { TimeBounds, TimeScale } from './time_scale';
import type { Timeline } from './timeline';

/** What the handlers drive: the timeline's public API, plus the parts of it only they may touch. */
export interface InputTarget {
  timeline: Timeline;
  scroller: HTMLDivElement;
  canvas: HTMLCanvasElement;
  bounds: TimeBounds;
  setScale(s: TimeScale): void;
  /** A click (or tap) at canvas pixel (x, y). */
  click(x: number, y: number): void;
  hover(x: number, y: number): void;
  hideHover(): void;
  hasRange(): boolean;
}

/** Adds an event listener, and its removal to the cleanup list. */
export type Listen = <K extends keyof HTMLElementEventMap>(
  el: HTMLElement,
  type: K,
  f: (e: HTMLElementEventMap[K]) => void,
  o?: AddEventListenerOptions,
) => void;

type Drag = { x: number; y: number; scale: TimeScale; scrollTop: number; moved: boolean; mode: 'pan' | 'range' };

/** Listens for mouse, wheel, touch and keys; `cleanup` receives what removes the listeners. */
export function listenInput(t: InputTarget, cleanup: (() => void)[]): void {
  const { timeline: tl, scroller, canvas } = t;
  const on: Listen = (el, type, f, o) => {
    el.addEventListener(type, f as EventListener, o);
    cleanup.push(() => el.removeEventListener(type, f as EventListener, o));
  };
  const localX = (e: MouseEvent) => e.clientX - canvas.getBoundingClientRect().left;
  const localY = (e: MouseEvent) => e.clientY - canvas.getBoundingClientRect().top;
  let drag: Drag | null = null;
  let mouseX = -1;
  on(scroller, 'scroll', () => {
    t.hideHover();
    tl.requestDraw();
  });
  on(canvas, 'wheel', (e) => wheel(t, e, localX(e)), { passive: false });
  on(canvas, 'mousedown', (e) => {
    if (e.button !== 0) return;
    const pan = e.shiftKey || localY(e) < AXIS_H || localX(e) < tl.scale.x0;
    drag = { x: e.clientX, y: e.clientY, scale: tl.scale, scrollTop: scroller.scrollTop, moved: false, mode: pan ? 'pan' : 'range' };
    tl.root.focus({ preventScroll: true });
    e.preventDefault();
  });
  const move = (e: MouseEvent) => {
    if (drag) dragTo(t, drag, e);
  };
  const up = (e: MouseEvent) => {
    const d = drag;
    drag = null;
    canvas.style.cursor = '';
    if (d && !d.moved) t.click(e.clientX - canvas.getBoundingClientRect().left, e.clientY - canvas.getBoundingClientRect().top);
  };
  window.addEventListener('mousemove', move);
  window.addEventListener('mouseup', up);
  cleanup.push(() => window.removeEventListener('mousemove', move), () => window.removeEventListener('mouseup', up));
  listenTouch(t, on);
  on(canvas, 'mousemove', (e) => {
    mouseX = localX(e);
    if (!drag) t.hover(mouseX, localY(e));
  });
  on(canvas, 'mouseleave', () => {
    mouseX = -1;
    t.hideHover();
  });
  on(canvas, 'dblclick', () => tl.reset());
  on(tl.root, 'keydown', (e) => {
    if (key(t, e.key.toLowerCase(), mouseX >= tl.scale.x0 ? mouseX : undefined)) e.preventDefault();
  });
}

/** The wheel at canvas x: zoom there, or pan (Shift, or a sideways swipe); over the gutter the page scrolls. */
function wheel(t: InputTarget, e: WheelEvent, x: number): void {
  const s = t.timeline.scale;
  if (x < s.x0) return; // over the labels: let the page scroll
  e.preventDefault();
  if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    const d = e.shiftKey ? e.deltaY || e.deltaX : e.deltaX;
    t.setScale(s.panBy(-d, t.bounds));
  } else {
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? 400 : 1;
    t.setScale(s.zoomAt(x, Math.exp((-e.deltaY * unit) / 300), t.bounds));
  }
}

/** The mouse moved with the button down: past 3 px it pans (and scrolls) or selects the range dragged over. */
function dragTo(t: InputTarget, d: Drag, e: MouseEvent): void {
  const dx = e.clientX - d.x;
  const dy = e.clientY - d.y;
  if (Math.abs(dx) + Math.abs(dy) > 3) d.moved = true;
  if (!d.moved) return;
  if (d.mode === 'pan') {
    t.setScale(d.scale.panBy(dx, t.bounds));
    t.scroller.scrollTop = d.scrollTop - dy;
    t.canvas.style.cursor = 'grabbing';
  } else {
    const s = t.timeline.scale;
    const left = t.canvas.getBoundingClientRect().left;
    const a = s.toTime(Math.max(s.x0, Math.min(s.x1, d.x - left)));
    const b = s.toTime(Math.max(s.x0, Math.min(s.x1, e.clientX - left)));
    t.timeline.setRange({ t0: Math.min(a, b), t1: Math.max(a, b) });
  }
}

/** Key k (lower case), zooming at pixel x when the mouse is over the spans; false: not a timeline key. */
function key(t: InputTarget, k: string, x: number | undefined): boolean {
  const tl = t.timeline;
  if (k === 'w' || k === '+' || k === '=') tl.zoom(1.3, x);
  else if (k === 's' || k === '-' || k === '_') tl.zoom(1 / 1.3, x);
  else if (k === 'a' || k === 'arrowleft') tl.pan(-0.15);
  else if (k === 'd' || k === 'arrowright') tl.pan(0.15);
  else if (k === '0' || k === 'home') tl.reset();
  else if (k === 'escape' && (tl.selected >= 0 || t.hasRange())) {
    tl.select(-1);
    tl.setRange(null);
  } else if (k === 'f' && tl.selected >= 0) {
    const i = tl.selected;
    const sp = tl.spans;
    const pad = (sp.end[i] - sp.start[i]) * 0.5;
    tl.setWindow(sp.start[i] - pad, sp.end[i] + pad);
  } else return false;
  return true;
}
