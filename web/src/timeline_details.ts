// The timeline's details panel (Perfetto's "current selection"): one span's facts — bytes,
// group, link, achieved bandwidth or FLOP rate, dependencies — or a time range's time per
// category. Reads the result's columns; never simulates.
import { h, setChildren } from './dom';
import { formatDuration, formatPercent, formatSI, sig3 } from './format';
import type { SimResult, Spans } from './result';
import { kindColor, kindLabel, streamLabel } from './timeline/colors';

type Row = [string, string | Node];

function table(rows: Row[]): HTMLElement {
  return h('dl', { class: 'tl-facts' }, ...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

export function formatBytes(b: number): string {
  if (!(b > 0)) return '0 B';
  if (b >= 1e9) return `${sig3(b / 1e9)} GB`;
  if (b >= 1e6) return `${sig3(b / 1e6)} MB`;
  if (b >= 1e3) return `${sig3(b / 1e3)} kB`;
  return `${sig3(b)} B`;
}

/** What the link of a collective is, from the number of nodes its group spans. */
export function linkOf(nodes: number, group: number): string {
  if (group <= 1) return 'none (a group of one)';
  return nodes > 1 ? `network between ${nodes} nodes (NICs, switches)` : 'inside one node (NVLink / NVSwitch)';
}

/** Facts of span i. `jump` selects another span (dependencies, the other end). */
export function spanDetails(r: SimResult, i: number, jump: (j: number) => void): HTMLElement {
  const s = r.spans;
  const kind = s.kinds[s.kind[i]];
  const dur = s.end[i] - s.start[i];
  const stage = r.devices.find((d) => d.rank === s.rank[i])?.stage;
  const rows: Row[] = [
    ['kind', kindLabel(kind)],
    ['GPU', `${s.rank[i]}${stage !== undefined ? `, stage ${stage}` : ''} · ${streamLabel(s.streams[s.stream[i]])}`],
  ];
  if (s.mb[i] >= 0) rows.push(['micro-batch', String(s.mb[i])]);
  rows.push(['start', formatDuration(s.start[i])], ['duration', formatDuration(dur)]);
  if (s.group[i] > 0) {
    rows.push(['bytes', formatBytes(s.bytes[i])], ['group', `${s.group[i]} GPUs`], ['link', linkOf(s.nodes[i], s.group[i])]);
    if (dur > 0) rows.push(['achieved', `${sig3(s.bytes[i] / dur / 1e9)} GB/s (size ÷ time, the algorithm bandwidth)`]);
  } else {
    if (s.flops[i] > 0) rows.push(['work', `${formatSI(s.flops[i])}FLOP`]);
    if (s.bytes[i] > 0) rows.push(['memory traffic', formatBytes(s.bytes[i])]);
    if (dur > 0 && s.flops[i] > 0) rows.push(['achieved', `${sig3(s.flops[i] / dur / 1e12)} TFLOP/s`]);
  }
  const link = (j: number) =>
    h('button', { class: 'linkish', type: 'button', onclick: () => jump(j), title: 'Select this span' }, `${s.names[s.name[j]]} (GPU ${s.rank[j]}, ${formatDuration(s.end[j])})`);
  if (s.peer[i] >= 0) rows.push(['other end', link(s.peer[i])]);
  const deps: HTMLElement[] = [];
  for (let d = s.depOffsets[i]; d < s.depOffsets[i + 1] && deps.length < 12; ++d) deps.push(h('li', null, link(s.deps[d])));
  const more = s.depOffsets[i + 1] - s.depOffsets[i] - deps.length;
  rows.push(['waits for', deps.length ? h('ul', { class: 'tl-deps' }, ...deps, more > 0 ? h('li', null, `and ${more} more`) : null) : 'nothing shown (starts when its stream is free)']);
  return h('div', { class: 'tl-detail', 'data-detail': 'span' }, h('h3', null, s.names[s.name[i]]), table(rows));
}

/** Busy time per category inside [t0, t1], summed over lanes, and compute lanes' idle share. */
export function rangeSummary(s: Spans, t0: number, t1: number): { kind: string; s: number }[] & { computeLanes?: number; computeIdle?: number } {
  const byKind = new Float64Array(s.kinds.length);
  const compute = s.streams.indexOf('compute');
  const computeRanks = new Set<number>();
  let computeBusy = 0;
  for (let i = 0; i < s.n; ++i) {
    if (s.stream[i] === compute) computeRanks.add(s.rank[i]);
    const a = s.start[i] > t0 ? s.start[i] : t0;
    const b = s.end[i] < t1 ? s.end[i] : t1;
    if (b <= a) continue;
    byKind[s.kind[i]] += b - a;
    if (s.stream[i] === compute) computeBusy += b - a;
  }
  const out = [...byKind].map((v, k) => ({ kind: s.kinds[k], s: v })).filter((x) => x.s > 0).sort((a, b) => b.s - a.s) as ReturnType<typeof rangeSummary>;
  out.computeLanes = computeRanks.size;
  out.computeIdle = computeRanks.size ? Math.max(0, 1 - computeBusy / (computeRanks.size * (t1 - t0))) : 0;
  return out;
}

export function rangeDetails(r: SimResult, t0: number, t1: number): HTMLElement {
  const sum = rangeSummary(r.spans, t0, t1);
  const lanes = sum.computeLanes ?? 0;
  const body = h(
    'table',
    { class: 'tl-range-table' },
    h('thead', null, h('tr', null, h('th', null, 'category'), h('th', null, 'time, all lanes'), h('th', null, 'per GPU'))),
    h(
      'tbody',
      null,
      ...sum.map((x) => {
        const sw = h('span', { class: 'swatch' });
        sw.style.background = kindColor(x.kind);
        return h('tr', { 'data-kind': x.kind }, h('td', null, sw, kindLabel(x.kind)), h('td', null, formatDuration(x.s)), h('td', null, lanes ? formatDuration(x.s / lanes) : '–'));
      }),
    ),
  );
  return h(
    'div',
    { class: 'tl-detail', 'data-detail': 'range' },
    h('h3', null, `Range ${formatDuration(t0)} – ${formatDuration(t1)} (${formatDuration(t1 - t0)})`),
    body,
    h('p', { class: 'tl-note' }, `Compute lanes idle ${formatPercent(sum.computeIdle ?? 0)} of this range (${lanes} simulated GPU${lanes === 1 ? '' : 's'}). Esc clears the selection.`),
  );
}

export function clearDetails(el: HTMLElement): void {
  setChildren(el, h('p', { class: 'tl-note' }, 'Click a span for its details (bytes, group, link, achieved bandwidth, what it waits for); drag across the timeline to sum the time per category in a range.'));
}
