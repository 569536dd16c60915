// Downloads made from the result in hand (never by simulating again): the result JSON with
// its timeline, and the Chrome trace (Perfetto, chrome://tracing) — both from the columns.
import type { SimResult, Spans } from './result';

const US_PER_S = 1e6;

/** JSON text of one value (strings escaped, non-finite numbers as null like the core). */
function j(v: unknown): string {
  return JSON.stringify(v) ?? 'null';
}

/**
 * The Chrome trace event format as the core's chrome_trace writes it: a process per
 * simulated rank (pid = GPU id), a thread per stream, one "X" event per span (times in µs),
 * the memory curve as a counter track. Returned as parts for a Blob (no giant string).
 */
export function chromeTraceParts(r: SimResult): string[] {
  const s = r.spans;
  const parts: string[] = ['{"traceEvents":['];
  const ev: string[] = [];
  const flush = () => {
    if (ev.length) parts.push((parts.length > 1 ? ',' : '') + ev.join(','));
    ev.length = 0;
  };
  r.devices.forEach((d, index) => {
    const m = d.multiplicity ?? 1;
    const name = `GPU ${d.rank} (stage ${d.stage}${m > 1 ? `, stands for ${m} GPUs` : ''})`;
    ev.push(`{"name":"process_name","ph":"M","pid":${d.rank},"tid":0,"args":{"name":${j(name)}}}`);
    ev.push(`{"name":"process_sort_index","ph":"M","pid":${d.rank},"tid":0,"args":{"sort_index":${index}}}`);
    s.streams.forEach((st, tid) => ev.push(`{"name":"thread_name","ph":"M","pid":${d.rank},"tid":${tid},"args":{"name":${j(st)}}}`));
  });
  const names = s.names.map(j);
  const kinds = s.kinds.map(j);
  const phases = s.phases.map(j);
  const collective = new Set(['all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all', 'send_recv', 'ring_exchange']);
  const isCollective = s.kinds.map((k) => collective.has(k));
  for (let i = 0; i < s.n; ++i) {
    const k = s.kind[i];
    const args = isCollective[k]
      ? `"collective":${kinds[k]},"bytes":${s.bytes[i]},"group_size":${s.group[i]}`
      : `"flops":${s.flops[i]},"bytes":${s.bytes[i]}`;
    ev.push(
      `{"name":${names[s.name[i]]},"cat":${kinds[k]},"ph":"X","ts":${s.start[i] * US_PER_S},"dur":${(s.end[i] - s.start[i]) * US_PER_S},"pid":${s.rank[i]},"tid":${s.stream[i]},"args":{"mb":${s.mb[i]},"phase":${phases[s.phase[i]] ?? '""'},${args}}}`,
    );
    if (ev.length >= 4096) flush();
  }
  for (const c of r.curves)
    for (let i = 0; i < c.t.length; ++i) ev.push(`{"name":"memory","ph":"C","pid":${c.rank},"ts":${c.t[i] * US_PER_S},"args":{"GiB":${c.gib[i]}}}`);
  flush();
  parts.push(`],"displayTimeUnit":"ms","otherData":{"iteration_time_s":${j(r.summary.iteration_time_s)}}}`);
  return parts;
}

/** The timeline as the result JSON writes it (objects), from the columns. */
export function timelineObjects(s: Spans): object[] {
  const out = new Array<object>(s.n);
  for (let i = 0; i < s.n; ++i)
    out[i] = { rank: s.rank[i], stream: s.streams[s.stream[i]], name: s.names[s.name[i]], kind: s.kinds[s.kind[i]], mb: s.mb[i], start_s: s.start[i], end_s: s.end[i] };
  return out;
}

/** The memory curves as the result JSON writes them ("memory_curves"), from the columns. */
export function curveObjects(r: SimResult): object[] {
  return r.curves.map((c) => ({ rank: c.rank, t_s: Array.from(c.t), GiB: Array.from(c.gib) }));
}

/**
 * The result JSON with its timeline and memory curves, keys in the core's order (timeline
 * after stats, memory_curves last): what `proteus simulate --timeline --memory-curve` writes.
 * The page receives both as columns; a text that still holds its curves keeps them.
 */
export function resultWithTimeline(text: string, r: SimResult): string {
  const j0 = JSON.parse(text) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(j0)) {
    if (k === 'memory_curves') out.timeline = timelineObjects(r.spans);
    out[k] = v;
    // The fit advice the page asked for after the run (app.ts findFitAdvice): where the CLI's
    // result has it, after the warnings that name it.
    if (k === 'warnings' && !('fit_advice' in j0) && r.warnings.length > (v as unknown[]).length) {
      out.warnings = r.warnings;
      out.fit_advice = r.fitAdvice;
    }
  }
  if (!('timeline' in out)) out.timeline = timelineObjects(r.spans);
  if (!('memory_curves' in out) && r.curves.length > 0) out.memory_curves = curveObjects(r);
  return JSON.stringify(out, null, 2);
}
