// The zero-bubble plan of a result as a table in the timeline tab (pipeline_plan.ts holds the
// rows): one row per stage with its measured F, B and W times and its planned order, the
// planner's input last, and a line on what the runtime did with them.
import { h } from './dom';
import { sig3 } from './format';
import { planRows, type PipelinePlan } from './pipeline_plan';

/** The plan as a table (one row per stage, the planner's input last) with its explanation. */
export function renderPipelinePlan(plan: PipelinePlan): HTMLElement {
  const rows = planRows(plan);
  const head = h(
    'tr',
    null,
    h('th', { scope: 'col' }, 'Stage'),
    ...['F (ms)', 'B (ms)', 'W (ms)', 'Warm-up F'].map((t) => h('th', { scope: 'col', class: 'num' }, t)),
    h('th', { scope: 'col' }, 'Planned order'),
  );
  const body = rows.slice(0, -1).map((r) =>
    h(
      'tr',
      null,
      h('th', { scope: 'row' }, r.stage),
      h('td', { class: 'num' }, r.f),
      h('td', { class: 'num' }, r.b),
      h('td', { class: 'num' }, r.w),
      h('td', { class: 'num' }, r.warmup),
      // A long order scrolls in its cell; focusable so that the keyboard can scroll it too.
      h('td', null, h('code', { class: 'plan-order', tabindex: 0, 'aria-label': `Stage ${r.stage} planned order` }, r.order)),
    ),
  );
  const mid = rows[rows.length - 1];
  const foot = h(
    'tr',
    { title: "The runtime's planners give every stage the median of the stages' times (sorted[n // 2])." },
    h('th', { scope: 'row' }, 'Planner input'),
    h('td', { class: 'num' }, mid.f),
    h('td', { class: 'num' }, mid.b),
    h('td', { class: 'num' }, mid.w),
    h('td', { colspan: 2 }, `send ${sig3(plan.sendMs)} ms (mean pipeline transfer)`),
  );
  return h(
    'section',
    { class: 'pipeline-plan', 'aria-labelledby': 'plan-title' },
    h('h3', { id: 'plan-title' }, 'Zero-bubble plan'),
    h(
      'p',
      { class: 'panel-intro' },
      "As the zero-bubble runtime does once its timers end (zb_plan “profiled”): a first play of the unit-time order measured each stage's pass times, and the planner re-ordered the passes from them; this timeline plays that order. F3: forward of micro-batch 3; B: input gradient; W: weight gradient; .1: the stage's second chunk.",
    ),
    h('div', { class: 'plan-scroll' }, h('table', { class: 'compare-table plan-table' }, h('caption', null, 'Measured pass times per stage and the order planned from them'), h('thead', null, head), h('tbody', null, ...body), h('tfoot', null, foot))),
  );
}
