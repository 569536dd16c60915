// Headline cards, the split of the iteration, memory per device and the warnings.
import { KINDS, kindColor, kindLabel, MEMORY } from './timeline/colors';
import { h, setChildren } from './dom';
import { formatDuration, formatGiB, formatPercent, formatSI } from './format';
import type { Device, SimResult, Summary } from './result';

interface Card {
  key: string;
  title: string;
  value: (s: Summary) => string;
  raw: (s: Summary) => number;
  sub: (s: Summary, r: SimResult) => string;
  help: string;
}

const CARDS: Card[] = [
  {
    key: 'iteration_time_s',
    title: 'Iteration time',
    value: (s) => formatDuration(s.iteration_time_s),
    raw: (s) => s.iteration_time_s,
    sub: (s) => `${formatSI(s.samples_per_s)} samples/s`,
    help: 'Time of one optimizer step: every micro-batch of the global batch forward and backward, plus gradient sync and the update.',
  },
  {
    key: 'tokens_per_s',
    title: 'Throughput',
    value: (s) => `${formatSI(s.tokens_per_s)}`,
    raw: (s) => s.tokens_per_s,
    sub: () => 'tokens per second, whole cluster',
    help: 'Training tokens processed per second by the whole cluster.',
  },
  {
    key: 'model_tflops_per_gpu',
    title: 'TFLOP/s per GPU',
    value: (s) => s.model_tflops_per_gpu.toFixed(s.model_tflops_per_gpu >= 100 ? 0 : 1),
    raw: (s) => s.model_tflops_per_gpu,
    sub: () => 'useful model FLOPs, recompute excluded',
    help: "The model's FLOPs per iteration divided by GPUs and time: the work that advances training.",
  },
  {
    key: 'mfu',
    title: 'MFU',
    value: (s) => formatPercent(s.mfu),
    raw: (s) => s.mfu,
    sub: (s) => `HFU ${formatPercent(s.hfu)} (counts recompute)`,
    help: "Model FLOPs utilization: the share of the GPUs' peak FLOP/s at this precision spent on the model's own math.",
  },
  {
    key: 'peak_memory_GiB',
    title: 'Peak memory per GPU',
    value: (s) => formatGiB(s.peak_memory_GiB),
    raw: (s) => s.peak_memory_GiB,
    sub: (s) => {
      const fit = memoryFit(s, reserveGiB);
      if (fit === 'oom') return `exceeds the ${formatGiB(s.memory_capacity_GiB)} of the GPU`;
      if (fit === 'reserve') return `of ${formatGiB(s.memory_capacity_GiB)}: leaves less than the ${formatGiB(reserveGiB)} reserve`;
      return `of ${formatGiB(s.memory_capacity_GiB)} (${formatPercent(s.peak_memory_GiB / s.memory_capacity_GiB)}), ${formatGiB(reserveGiB)} reserve kept`;
    },
    help: 'The most memory any GPU holds at once: weights, gradients, optimizer states, saved activations and buffers.',
  },
];

/**
 * Memory the page keeps free on every GPU beyond what the simulator counts: the CUDA context,
 * NCCL's communicator buffers and the caching allocator's fragmentation (PyTorch reserves
 * more than it allocates). "Fits" means the peak plus this reserve fits; 0 turns it off.
 */
export const DEFAULT_RESERVE_GIB = 2;
let reserveGiB = DEFAULT_RESERVE_GIB;
export function setReserveGiB(gib: number): void {
  reserveGiB = Number.isFinite(gib) && gib >= 0 ? gib : DEFAULT_RESERVE_GIB;
}
export function getReserveGiB(): number {
  return reserveGiB;
}

/** 'fits', 'reserve' (fits the GPU but not with the reserve left free) or 'oom'. */
export function memoryFit(s: Pick<Summary, 'peak_memory_GiB' | 'memory_capacity_GiB' | 'oom'>, reserve: number): 'fits' | 'reserve' | 'oom' {
  if (s.oom || s.peak_memory_GiB > s.memory_capacity_GiB) return 'oom';
  return s.peak_memory_GiB + reserve > s.memory_capacity_GiB ? 'reserve' : 'fits';
}

export function renderCards(el: HTMLElement, r: SimResult): void {
  const s = r.summary;
  setChildren(
    el,
    ...CARDS.map((c) => {
      const card = h(
        'div',
        { class: `card${c.key === 'peak_memory_GiB' && memoryFit(s, reserveGiB) !== 'fits' ? ' oom' : ''}`, 'data-card': c.key, 'data-value': String(c.raw(s)), 'data-fit': c.key === 'peak_memory_GiB' ? memoryFit(s, reserveGiB) : null, title: c.help },
        h('div', { class: 'card-title' }, c.title),
        h('div', { class: 'card-value' }, c.value(s)),
        h('div', { class: 'card-sub' }, c.sub(s, r)),
      );
      if (c.key === 'peak_memory_GiB') {
        const frac = s.memory_capacity_GiB > 0 ? s.peak_memory_GiB / s.memory_capacity_GiB : 0;
        const bar = h('div', { class: 'card-meter' }, h('div', { class: 'card-meter-fill' }));
        (bar.firstChild as HTMLElement).style.width = `${Math.min(100, frac * 100).toFixed(1)}%`;
        card.append(bar);
      }
      return card;
    }),
  );
}

const SPLIT = [
  { key: 'compute_fraction', label: 'Compute', color: '#4e79a7', help: 'GPUs doing math (forward, backward, recompute, optimizer).' },
  { key: 'exposed_comm_fraction', label: 'Exposed communication', color: '#c8453f', help: 'GPUs waiting on communication that no computation hides.' },
  { key: 'bubble_fraction', label: 'Idle / bubble', color: '#c9ced6', help: 'GPUs idle: the pipeline filling and draining, or waiting for other GPUs.' },
] as const;

export function renderSplit(el: HTMLElement, r: SimResult): void {
  const s = r.summary;
  const bar = h('div', { class: 'split-bar', role: 'img', 'aria-label': SPLIT.map((p) => `${p.label} ${formatPercent(s[p.key])}`).join(', ') });
  for (const p of SPLIT) {
    const seg = h('div', { class: 'split-seg', title: `${p.label}: ${formatPercent(s[p.key])} — ${p.help}`, 'data-split': p.key });
    seg.style.width = `${Math.max(0, s[p.key] * 100)}%`;
    seg.style.background = p.color;
    if (s[p.key] > 0.07) seg.textContent = formatPercent(s[p.key]);
    bar.append(seg);
  }
  const legend = h(
    'ul',
    { class: 'legend split-legend' },
    ...SPLIT.map((p) => {
      const sw = h('span', { class: 'swatch' });
      sw.style.background = p.color;
      return h('li', { title: p.help }, sw, h('b', null, p.label), ` ${formatPercent(s[p.key])} · ${formatDuration(s[p.key] * s.iteration_time_s)}`, h('span', { class: 'legend-help' }, p.help));
    }),
  );
  setChildren(el, bar, legend, phaseBars(r));
}

/** The busiest GPU's time by compute phase and by collective (breakdown in the result). */
function phaseBars(r: SimResult): HTMLElement | null {
  const b = r.breakdown as { rank?: number; compute_by_phase_s?: Record<string, number>; comm_by_collective_s?: Record<string, number>; iteration_s?: number };
  const T = b.iteration_s ?? r.summary.iteration_time_s;
  if (!b.compute_by_phase_s || !(T > 0)) return null;
  const bar = (title: string, help: string, parts: Record<string, number>) => {
    const entries = Object.entries(parts).filter(([, v]) => v > 0);
    if (entries.length === 0) return null;
    const total = entries.reduce((a, [, v]) => a + v, 0);
    const el = h('div', { class: 'phase-bar', role: 'img', 'aria-label': `${title}: ${entries.map(([k, v]) => `${kindLabel(k)} ${formatDuration(v)}`).join(', ')}` });
    for (const [k, v] of entries) {
      const seg = h('div', { class: 'phase-seg', title: `${kindLabel(k)}: ${formatDuration(v)} (${formatPercent(v / T)} of the iteration)${KINDS[k] ? ' — ' + KINDS[k].help : ''}` });
      seg.style.width = `${(v / T) * 100}%`;
      seg.style.background = kindColor(k);
      el.append(seg);
    }
    return h('div', { class: 'phase-row' }, h('div', { class: 'phase-title', title: help }, title, h('span', null, ` ${formatDuration(total)}`)), el);
  };
  const rows = [
    bar('Compute by pass', 'Forward, backward (input and weight gradients), recomputation and the optimizer step.', b.compute_by_phase_s),
    bar('Communication by collective', 'Time the communication streams are busy, overlapped with compute or not.', b.comm_by_collective_s ?? {}),
  ].filter(Boolean) as HTMLElement[];
  const legendKinds = [...Object.entries(b.compute_by_phase_s), ...Object.entries(b.comm_by_collective_s ?? {})].filter(([, v]) => v > 0).map(([k]) => k);
  return h(
    'div',
    { class: 'phases' },
    h('h3', null, `Busiest GPU (GPU ${b.rank ?? '?'}), bars to the scale of the iteration`),
    ...rows,
    h(
      'ul',
      { class: 'legend' },
      ...legendKinds.map((k) => {
        const sw = h('span', { class: 'swatch' });
        sw.style.background = kindColor(k);
        return h('li', { title: KINDS[k]?.help ?? k }, sw, kindLabel(k));
      }),
    ),
  );
}

export function renderMemory(el: HTMLElement, r: SimResult): void {
  const cap = r.summary.memory_capacity_GiB;
  const devices = [...r.devices].sort((a, b) => a.stage - b.stage || a.rank - b.rank);
  const max = Math.max(cap, ...devices.map((d) => d.peak_memory_GiB)) * 1.02 || 1;
  const rows = devices.map((d) => memoryRow(d, max, cap));
  // The legend gives the values of the GPU with the highest peak.
  const worst = devices.reduce<Device | null>((a, d) => (!a || d.peak_memory_GiB > a.peak_memory_GiB ? d : a), null);
  const legend = h(
    'ul',
    { class: 'legend mem-legend' },
    ...MEMORY.map((m) => {
      const sw = h('span', { class: 'swatch' });
      sw.style.background = m.color;
      const v = worst?.memory_breakdown_GiB?.[m.key];
      return h('li', { title: m.help }, sw, m.label, v !== undefined ? h('span', { class: 'legend-value' }, formatGiB(v)) : null);
    }),
    h('li', { title: 'Memory of one GPU.' }, h('span', { class: 'swatch cap' }), `capacity ${formatGiB(cap)}`),
  );
  const note = worst && devices.length > 1 ? h('p', { class: 'mem-note' }, `Values: GPU ${worst.rank}, the fullest, at its peak.`) : null;
  setChildren(el, h('div', { class: 'mem-rows' }, ...rows), legend, note);
}

function memoryRow(d: Device, max: number, cap: number): HTMLElement {
  const bar = h('div', { class: 'mem-bar' });
  const parts: string[] = [];
  for (const m of MEMORY) {
    const v = d.memory_breakdown_GiB?.[m.key] ?? 0;
    parts.push(`${m.label}: ${formatGiB(v)}`);
    if (!(v > 0)) continue;
    const seg = h('div', { class: 'mem-seg', title: `${m.label}: ${formatGiB(v)} — ${m.help}` });
    seg.style.width = `${(v / max) * 100}%`;
    seg.style.background = m.color;
    bar.append(seg);
  }
  const capLine = h('div', { class: 'mem-cap', title: `GPU capacity ${formatGiB(cap)}` });
  capLine.style.left = `${(cap / max) * 100}%`;
  bar.append(capLine);
  const mult = d.multiplicity && d.multiplicity > 1 ? ` · ×${d.multiplicity}` : '';
  return h(
    'div',
    { class: `mem-row${d.peak_memory_GiB > cap ? ' oom' : ''}`, title: `GPU ${d.rank}, pipeline stage ${d.stage}${d.multiplicity && d.multiplicity > 1 ? `, standing for ${d.multiplicity} identical GPUs` : ''}\nat its peak: ${parts.join(', ')}` },
    h('div', { class: 'mem-label' }, h('b', null, `GPU ${d.rank}`), h('span', null, ` stage ${d.stage}${mult}`)),
    bar,
    h('div', { class: 'mem-value' }, formatGiB(d.peak_memory_GiB)),
  );
}

export function renderWarnings(el: HTMLElement, r: SimResult): void {
  const warnings = [...r.warnings];
  if (memoryFit(r.summary, reserveGiB) === 'reserve')
    warnings.unshift(
      `Memory does not fit with the reserve: the peak ${formatGiB(r.summary.peak_memory_GiB)} leaves less than ${formatGiB(reserveGiB)} of the GPU's ${formatGiB(r.summary.memory_capacity_GiB)} for the CUDA context, communication buffers and allocator fragmentation.`,
    );
  r = { ...r, warnings };
  if (!r.warnings.length) {
    setChildren(el, h('p', { class: 'no-warnings' }, '✓ No warnings: memory fits, the bubble and exposed communication are small.'));
    return;
  }
  setChildren(el, h('ul', { class: 'warnings' }, ...r.warnings.map((w) => h('li', { class: w.startsWith('Out of memory') || w.startsWith('Memory does not fit') ? 'severe' : '' }, w))));
}
