// "Changes that fit": when a run does not fit in GPU memory, the core simulates the one- and
// two-knob changes of the strategy that would, and returns the three fastest (the result's
// "fit_advice", docs/search.md). Each is shown with its time and memory and a button that
// applies it: the page then simulates the changed config as for any other change.
import { h } from './dom';
import { formatDuration, formatGiB, formatPercent } from './format';
import type { FitChange } from './result';

export function renderFitAdvice(el: HTMLElement, advice: FitChange[], apply: (change: FitChange) => void): void {
  if (!advice.length) return;
  el.append(
    h(
      'div',
      { class: 'fit-advice' },
      h('p', null, h('b', null, 'Changes that fit'), ', fastest first (each simulated):'),
      h(
        'ul',
        null,
        ...advice.map((a) =>
          h(
            'li',
            null,
            h('button', { type: 'button', class: 'fit-apply', title: `Apply: ${a.change}`, onclick: () => apply(a) }, 'Apply'),
            ' ',
            h('span', { class: 'fit-change' }, a.change),
            ` — ${formatDuration(a.iteration_time_s)} per iteration, ${formatGiB(a.peak_memory_GiB)} per GPU, MFU ${formatPercent(a.mfu)}`,
          ),
        ),
      ),
    ),
  );
}

/** The warnings without the core's "To fit: <change> (...)" lines that the advice block shows. */
export function withoutAdviceLines(warnings: string[], advice: FitChange[]): string[] {
  return warnings.filter((w) => !advice.some((a) => w.startsWith(`To fit: ${a.change} (`)));
}
