// "How accurate is this?": every case of tests/validation/published.json (read when the page
// is built) simulated by this page's own core in a worker of its own, when the panel is first
// opened: predicted against published with the error, the cases not run with their reason,
// and the per-group mean errors over the rows done so far. Each case is one validate_json
// call (the code behind `proteus validate`), cheapest first, so rows fill in as they finish
// and the 530B/1T runs (seconds each) come last. A row's "Load" button opens its config.
import { h, setChildren } from './dom';
import { CallError, type Engine } from './engine';
import { formatDuration, formatGiB, sig3 } from './format';
import { groupMeans, notRunCases, parseValidationFile, validationJobs, type Job, type TimeRow } from './accuracy_model';

const signed = (pct: number) => `${pct >= 0 ? '+' : '−'}${sig3(Math.abs(pct))}%`;

/**
 * A published run ran, so a prediction that it does not fit is a miss of the model (or of the
 * case's settings) that the row should show, as `proteus validate` does.
 */
function overMemory(peakGiB: number): HTMLElement {
  return h('span', { class: 'accuracy-oom', title: `Proteus predicts ${formatGiB(peakGiB)} per GPU, more than the GPU holds; the published run fitted` }, ' over memory');
}

export class AccuracyView {
  private readonly status = h('p', { id: 'accuracy-status', class: 'sweep-status', 'aria-live': 'polite' });
  private readonly stopBtn = h('button', { id: 'accuracy-stop', class: 'small' }, 'Stop');
  private readonly groups = h('div', { id: 'accuracy-groups' });
  private readonly timeBody = h('tbody');
  private readonly memoryBody = h('tbody');
  private readonly notRun = h('ul', { id: 'accuracy-not-run' });
  private engine: Engine | null = null;
  private started = false;
  private running = false;
  private jobs: Job[] = [];
  private next = 0;
  /** The time rows done so far (validate_json's rows; tests read them). */
  readonly rows: TimeRow[] = [];
  /** Milliseconds each case took, by id (tests read it). */
  readonly ms: Record<string, number> = {};

  constructor(
    private readonly root: HTMLElement,
    private readonly newEngine: () => Engine,
    private readonly load: (config: Record<string, any>, id: string) => void,
  ) {
    this.stopBtn.addEventListener('click', () => (this.running ? this.stop() : void this.resume()));
  }

  /** Called when the tab opens: the first time, reads the file and starts simulating. */
  async open(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.status.textContent = 'Reading the validation file…';
    setChildren(this.root, this.intro(), h('div', { class: 'sweep-form' }, this.status, this.stopBtn), this.groups);
    try {
      // Bundled from the repository at build time (a chunk of its own, fetched on first open).
      const { default: text } = await import('../../tests/validation/published.json?raw');
      const file = parseValidationFile(text);
      this.jobs = validationJobs(file);
      this.layout(notRunCases(file));
      await this.resume();
    } catch (e) {
      this.status.textContent = `The validation file could not be read: ${String(e)}`;
    }
  }

  private intro(): HTMLElement {
    return h(
      'p',
      { class: 'panel-intro' },
      'Every case of the repository’s validation file (tests/validation/published.json: published training runs with their sources), simulated now by this page’s simulator, exactly as ',
      h('code', null, 'proteus validate'),
      ' does: error = (predicted − published) / published. Rows fill in as their simulations finish, the largest runs last. “Load” opens a case as the configuration. Where each cost constant comes from (never fitted to these cases): ',
      h('code', null, 'docs/fidelity.md'),
      ' in the repository.',
    );
  }

  private layout(notRun: { id: string; gpu: string; needs: string }[]): void {
    for (const j of this.jobs) (j.kind === 'time' ? this.timeBody : this.memoryBody).append(this.pendingRow(j));
    setChildren(this.notRun, ...notRun.map((c) => h('li', null, h('strong', null, c.id), c.gpu ? ` (${c.gpu})` : '', `: ${c.needs}`)));
    const numeric = new Set(['Published', 'Predicted', 'Error']);
    const head = (cols: string[]) => h('thead', null, h('tr', null, ...cols.map((t) => h('th', { scope: 'col', class: numeric.has(t) ? 'num' : undefined }, t))));
    this.root.append(
      h('h3', null, 'Iteration time'),
      h('div', { class: 'accuracy-scroll' }, h('table', { id: 'accuracy-time', class: 'compare-table' }, head(['Case', 'Group', 'Published', 'Predicted', 'Error', '']), this.timeBody)),
      h('h3', null, 'Memory per GPU'),
      h('div', { class: 'accuracy-scroll' }, h('table', { id: 'accuracy-memory', class: 'compare-table' }, head(['Case', 'Quantity', 'Published', 'Predicted', 'Error', '']), this.memoryBody)),
    );
    // Every case simulates today; the section appears only when a case says what it needs.
    if (notRun.length > 0) this.root.append(h('h3', null, `Not run (${notRun.length})`), this.notRun);
  }

  private loadButton(j: Job): HTMLButtonElement {
    return h('button', { class: 'small accuracy-load', 'data-case': j.id, 'aria-label': `Load ${j.id}`, onclick: () => this.loadCase(j) }, 'Load');
  }

  /** Opens the case's config on the page and marks its row as the one shown. */
  private loadCase(j: Job): void {
    for (const tr of this.root.querySelectorAll('tr[aria-current]')) tr.removeAttribute('aria-current');
    this.rowOf(j)?.setAttribute('aria-current', 'true');
    this.load(j.config, j.id);
  }

  private pendingRow(j: Job): HTMLTableRowElement {
    return h('tr', { 'data-case': j.id }, h('td', null, j.id), h('td', { colspan: 4, class: 'accuracy-pending' }, 'waiting…'), h('td', null, this.loadButton(j)));
  }

  private async resume(): Promise<void> {
    if (this.running || this.next >= this.jobs.length) return;
    this.running = true;
    this.stopBtn.textContent = 'Stop';
    this.engine ??= this.newEngine();
    const engine = this.engine;
    while (this.running && this.next < this.jobs.length) {
      const j = this.jobs[this.next];
      this.status.textContent = `Simulating ${j.id} (${this.next + 1} of ${this.jobs.length})…`;
      const t0 = performance.now();
      try {
        const r = await engine.call({ op: 'validate', file: j.file });
        this.ms[j.id] = performance.now() - t0;
        this.fill(j, r);
      } catch (e) {
        if (e instanceof CallError && e.info.code === 'cancelled') return;
        this.fail(j, e instanceof CallError ? (e.info.path ? `${e.info.path}: ${e.message}` : e.message) : String(e));
      }
      this.next += 1;
    }
    if (this.next >= this.jobs.length) {
      this.running = false;
      this.stopBtn.hidden = true;
      this.status.textContent = `All ${this.jobs.length} cases simulated.`;
      this.engine?.dispose();
      this.engine = null;
    }
  }

  /** Stops the run (the worker is terminated); "Continue" resumes from the next case. */
  stop(): void {
    this.running = false;
    this.engine?.dispose();
    this.engine = null;
    this.stopBtn.textContent = 'Continue';
    this.status.textContent = `Stopped after ${this.next} of ${this.jobs.length} cases.`;
  }

  private rowOf(j: Job): HTMLTableRowElement {
    return (j.kind === 'time' ? this.timeBody : this.memoryBody).querySelector<HTMLTableRowElement>(`tr[data-case="${CSS.escape(j.id)}"]`)!;
  }

  private fill(j: Job, r: Record<string, any>): void {
    const tr = this.rowOf(j);
    if (j.kind === 'time') {
      const c = r.cases[0] as TimeRow;
      this.rows.push(c);
      setChildren(
        tr,
        h('td', { title: c.source }, c.id, c.gated ? '' : ' (reported only)'),
        h('td', null, c.group),
        h('td', { class: 'num' }, formatDuration(c.published_s)),
        h('td', { class: 'num' }, formatDuration(c.predicted_s), c.oom ? overMemory(c.peak_memory_GiB) : ''),
        h('td', { class: 'num accuracy-error' }, signed(c.error_pct)),
        h('td', null, this.loadButton(j)),
      );
      this.drawGroups();
      return;
    }
    const m = r.memory_cases as { quantity: string; stage: number; published_GiB: number; predicted_GiB: number; error_pct: number; known_issue?: string }[];
    const rows = m.map((q, i) =>
      h(
        'tr',
        { 'data-case': i === 0 ? j.id : `${j.id}/${q.quantity}` },
        h('td', null, i === 0 ? j.id : ''),
        h('td', { title: q.known_issue ?? '' }, `${q.quantity} (stage ${q.stage})`),
        h('td', { class: 'num' }, formatGiB(q.published_GiB)),
        h('td', { class: 'num' }, formatGiB(q.predicted_GiB)),
        h('td', { class: 'num accuracy-error' }, signed(q.error_pct)),
        h('td', null, i === 0 ? this.loadButton(j) : ''),
      ),
    );
    tr.replaceWith(...rows);
  }

  private fail(j: Job, message: string): void {
    setChildren(this.rowOf(j), h('td', null, j.id), h('td', { colspan: 4, class: 'accuracy-failed' }, message), h('td', null, this.loadButton(j)));
  }

  private drawGroups(): void {
    const { groups, all } = groupMeans(this.rows);
    const line = (g: { group: string; cases: number; mape_pct: number; max_abs_error_pct: number }) =>
      h('tr', null, h('th', { scope: 'row' }, g.group), h('td', { class: 'num' }, String(g.cases)), h('td', { class: 'num' }, `${sig3(g.mape_pct)}%`), h('td', { class: 'num' }, `${sig3(g.max_abs_error_pct)}%`));
    setChildren(
      this.groups,
      h(
        'table',
        { id: 'accuracy-group-table', class: 'compare-table' },
        h('caption', null, 'Mean absolute error of the iteration time, by GPU and precision (cases simulated so far)'),
        h('thead', null, h('tr', null, ...['Group', 'Cases', 'Mean |error|', 'Worst'].map((t, i) => h('th', { scope: 'col', class: i > 0 ? 'num' : undefined }, t)))),
        h('tbody', null, ...groups.map(line), line(all)),
      ),
    );
  }
}
