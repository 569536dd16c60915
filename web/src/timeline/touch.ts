// Touch: one finger pans (and scrolls the lanes), two fingers pinch-zoom, a tap selects.
import type { InputTarget, Listen } from './input';
import type { TimeScale } from './time_scale';

/** The fingers down at the start of a gesture, in canvas pixels, and the view then. */
type Gesture = { ids: number[]; x: number[]; y: number[]; scale: TimeScale; scrollTop: number; moved: boolean };

export function listenTouch(t: InputTarget, on: Listen): void {
  const canvas = t.canvas;
  let touch: Gesture | null = null;
  // A finger added or lifted: the gesture starts over from the fingers down now (still 'moved' if it was).
  const snap = (e: TouchEvent) => {
    const left = canvas.getBoundingClientRect().left;
    const top = canvas.getBoundingClientRect().top;
    const list = [...e.touches];
    touch = {
      ids: list.map((p) => p.identifier),
      x: list.map((p) => p.clientX - left),
      y: list.map((p) => p.clientY - top),
      scale: t.timeline.scale,
      scrollTop: t.scroller.scrollTop,
      moved: touch?.moved ?? false,
    };
  };
  on(
    canvas,
    'touchstart',
    (e) => {
      if (e.touches.length === 1) touch = null;
      snap(e);
      e.preventDefault();
    },
    { passive: false },
  );
  on(
    canvas,
    'touchmove',
    (e) => {
      if (!touch) return;
      e.preventDefault();
      moveTo(t, touch, e);
    },
    { passive: false },
  );
  on(canvas, 'touchend', (e) => {
    const g = touch;
    if (e.touches.length > 0) {
      snap(e);
      return;
    }
    touch = null;
    if (g && !g.moved && g.x.length === 1) t.click(g.x[0], g.y[0]);
  });
}

/** Two fingers: zoom by how far apart they moved, at their midpoint; one: pan and scroll past 6 px. */
function moveTo(t: InputTarget, g: Gesture, e: TouchEvent): void {
  const left = t.canvas.getBoundingClientRect().left;
  const top = t.canvas.getBoundingClientRect().top;
  const pts = [...e.touches].filter((p) => g.ids.includes(p.identifier));
  if (g.ids.length >= 2 && pts.length >= 2) {
    const a = g.ids.indexOf(pts[0].identifier);
    const b = g.ids.indexOf(pts[1].identifier);
    const d0 = Math.abs(g.x[a] - g.x[b]) || 1;
    const d1 = Math.abs(pts[0].clientX - pts[1].clientX) || 1;
    const mid0 = (g.x[a] + g.x[b]) / 2;
    const mid1 = (pts[0].clientX + pts[1].clientX) / 2 - left;
    g.moved = true;
    t.setScale(g.scale.zoomAt(mid0, d1 / d0, t.bounds).panBy(mid1 - mid0, t.bounds));
  } else if (pts.length === 1) {
    const a = g.ids.indexOf(pts[0].identifier);
    const dx = pts[0].clientX - left - g.x[a];
    const dy = pts[0].clientY - top - g.y[a];
    if (Math.abs(dx) + Math.abs(dy) > 6) g.moved = true;
    if (!g.moved) return;
    t.setScale(g.scale.panBy(dx, t.bounds));
    t.scroller.scrollTop = g.scrollTop - dy;
  }
}
