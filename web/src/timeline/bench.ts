// A synthetic load for the timeline (used by the browser tests and from the console:
// `proteus.benchmarkTimeline(100000)`): n spans over 8 GPUs × 4 streams, drawn at several
// zoom levels. Returns the milliseconds each full redraw took.
import { allocateSpans, type Spans } from '../result';
import { kindColor } from './colors';
import { Timeline } from './timeline';

export function syntheticSpans(n: number): Spans {
  const streams = ['compute', 'tp_comm', 'dp_comm', 'pp_comm'];
  const kinds = ['forward', 'backward_input', 'backward_weight', 'all_reduce', 'reduce_scatter', 'all_gather', 'send_recv'];
  const lanes = 8 * streams.length;
  const perLane = Math.ceil(n / lanes);
  const s = allocateSpans(n, streams, kinds, ['op']);
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  for (let i = 0; i < n; ++i) {
    const lane = Math.floor(i / perLane);
    const j = i % perLane;
    const t = j * 1e-4;
    s.rank[i] = lane >> 2;
    s.stream[i] = lane & 3;
    s.start[i] = t + rnd() * 2e-5;
    s.end[i] = t + 3e-5 + rnd() * 6e-5;
    s.kind[i] = (lane & 3) === 0 ? Math.floor(j / 50) % 3 : 3 + (j % 4);
    s.mb[i] = Math.floor(j / 50);
  }
  return s;
}

export function benchmarkTimeline(n: number): { full: number; zoomed: number; deep: number; spans: number } {
  const host = document.createElement('div');
  host.style.width = '1200px';
  host.style.position = 'absolute';
  host.style.left = '-5000px';
  document.body.append(host);
  const spans = syntheticSpans(n);
  const tl = new Timeline({ color: kindColor, label: (sp, i) => `F${sp.mb[i]}` }, spans, host);
  const time = () => {
    const t0 = performance.now();
    tl.drawNow();
    return performance.now() - t0;
  };
  time(); // warm up
  const full = time();
  tl.setWindow(0, tl.scale.t1 / 20);
  const zoomed = time();
  tl.setWindow(0.01, 0.0102);
  const deep = time();
  tl.destroy();
  host.remove();
  return { full, zoomed, deep, spans: n };
}
