// "How accurate is this?": every case of tests/validation/published.json (read when the page
// is built) simulated by this page's own core in a worker of its own, when the panel is first
// opened: predicted against published with the error, the cases not run with their reason,
// and the per-group mean errors over the rows done so far. Each case is one validate_json
// call (the code behind `proteus validate`), cheapest first, so rows fill in as they finish
// and the 530B/1T runs (seconds each) come last. A row's "Load" button opens its config.
// Below them the rankings validate_json gives: the pairwise rankings of the rows done so far,
// and the search rankings, one strategy search each, run after every case.
import { h, setChildren } from './dom';
import { CallError, type Engine } from './engine';
import { formatDuration, formatGiB, sig3 } from './format';
import {
  groupMeans,
  notRunCases,
  pairRankings,
  parseValidationFile,
  validationJobs,
  type Job,
  type PairRanking,
  type SearchRankingRow,
  type TimeRow,
  type ValidationCase,
} from './accuracy_model';

const signed = (pct: number) => `${pct >= 0 ? '+' : '−'}${sig3(Math.abs(pct))}%`;
/** A ratio of times, slower / faster: "1.064×" (the CLI prints two decimals; three tell 1.025 from 1.03). */
const ratio = (x: number) => `${x.toFixed(3)}×`;

/** Kept or not, and "(reported only)" for a ranking the file's targets do not hold. */
function verdict(kept: boolean, gated: boolean): HTMLElement {
  return h('td', { class: kept ? 'accuracy-kept' : 'accuracy-not-kept' }, kept ? 'kept' : 'NOT kept', gated ? '' : ' (reported only)');
}

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
  private readonly pairBody = h('tbody');
  private readonly searchBody = h('tbody');
  /** The file's cases in its order: the pairwise rankings follow it, as validate_json's do. */
  private cases: ValidationCase[] = [];
  /** How many jobs are cases (time and memory); the search rankings' jobs come after them. */
  private caseJobs = 0;
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
  /** validate_json's "search_rankings" rows done so far (tests read them). */
  readonly searchRows: SearchRankingRow[] = [];

  /** The pairwise rankings of the time rows done so far (tests read them). */
  get pairs(): PairRanking[] {
    return pairRankings(this.cases, this.rows);
  }

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
      this.cases = file.cases;
      this.caseJobs = this.jobs.filter((j) => j.kind !== 'search').length;
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
    for (const j of this.jobs) this.bodyOf(j).append(this.pendingRow(j));
    setChildren(this.notRun, ...notRun.map((c) => h('li', null, h('strong', null, c.id), c.gpu ? ` (${c.gpu})` : '', `: ${c.needs}`)));
    const numeric = new Set(['Published', 'Predicted', 'Error', 'Published ratio', 'Predicted ratio']);
    const head = (cols: string[]) => h('thead', null, h('tr', null, ...cols.map((t) => h('th', { scope: 'col', class: numeric.has(t) ? 'num' : undefined }, t))));
    this.root.append(
      h('h3', null, 'Iteration time'),
      h('div', { class: 'accuracy-scroll' }, h('table', { id: 'accuracy-time', class: 'compare-table' }, head(['Case', 'Group', 'Published', 'Predicted', 'Error', '']), this.timeBody)),
      h('h3', null, 'Memory per GPU'),
      h('div', { class: 'accuracy-scroll' }, h('table', { id: 'accuracy-memory', class: 'compare-table' }, head(['Case', 'Quantity', 'Published', 'Predicted', 'Error', '']), this.memoryBody)),
    );
    // Every case simulates today; the section appears only when a case says what it needs.
    if (notRun.length > 0) this.root.append(h('h3', null, `Not run (${notRun.length})`), this.notRun);
    this.layoutRankings(head);
  }

  /** The "Rankings" section: the pairs of the rows done (redrawn per row) and the search rankings. */
  private layoutRankings(head: (cols: string[]) => HTMLElement): void {
    this.root.append(
      h('h3', null, 'Rankings'),
      h('p', { class: 'panel-intro' }, 'Besides the errors, the published order must hold: of two cases that differ only in strategy or precision, the published faster must be predicted faster.'),
      h(
        'div',
        { class: 'accuracy-scroll' },
        h(
          'table',
          { id: 'accuracy-pairs', class: 'compare-table' },
          h('caption', null, 'Pairwise rankings, slower / faster (cases simulated so far)'),
          head(['Faster case', 'Slower case', 'Published ratio', 'Predicted ratio', 'Order']),
          this.pairBody,
        ),
      ),
    );
    if (this.jobs.length === this.caseJobs) return;
    this.root.append(
      h('p', { class: 'panel-intro' }, 'A search ranking is the case’s configuration against the best the strategy search finds without it, as the source compared it with the best its authors found.'),
      h(
        'div',
        { class: 'accuracy-scroll' },
        h(
          'table',
          { id: 'accuracy-search', class: 'compare-table' },
          h('caption', null, 'Search rankings, best found / the case (run after every case)'),
          head(['Case', 'Published ratio', 'Predicted ratio', 'Best found', 'Order']),
          this.searchBody,
        ),
      ),
    );
  }

  private bodyOf(j: Job): HTMLTableSectionElement {
    return j.kind === 'time' ? this.timeBody : j.kind === 'memory' ? this.memoryBody : this.searchBody;
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
    // A search row names its case, as the filled row does (the entry's id is the case's and "-cp-vs-no-cp").
    if (j.kind === 'search') return h('tr', { 'data-case': j.id }, h('td', null, JSON.parse(j.file).search_rankings[0].case), h('td', { colspan: 4, class: 'accuracy-pending' }, 'waiting…'));
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
      this.status.textContent =
        j.kind === 'search'
          ? `Searching the best strategy for ${j.id} (${this.next - this.caseJobs + 1} of ${this.jobs.length - this.caseJobs})…`
          : `Simulating ${j.id} (${this.next + 1} of ${this.caseJobs})…`;
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
      this.status.textContent = `All ${this.caseJobs} cases simulated.`;
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
    const searched = this.next - this.caseJobs;
    this.status.textContent =
      searched > 0 ? `Stopped after ${this.caseJobs} of ${this.caseJobs} cases and ${searched} of ${this.jobs.length - this.caseJobs} search rankings.` : `Stopped after ${this.next} of ${this.caseJobs} cases.`;
  }

  private rowOf(j: Job): HTMLTableRowElement {
    return this.bodyOf(j).querySelector<HTMLTableRowElement>(`tr[data-case="${CSS.escape(j.id)}"]`)!;
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
      this.drawPairs();
      return;
    }
    if (j.kind === 'search') {
      const k = r.search_rankings[0] as SearchRankingRow;
      this.searchRows.push(k);
      setChildren(
        tr,
        h('td', { title: `${k.case} against the best of its space` }, k.case),
        h('td', { class: 'num' }, ratio(k.published_ratio)),
        h('td', { class: 'num' }, k.predicted_ratio === undefined ? '–' : ratio(k.predicted_ratio)),
        h('td', null, k.best ? k.best.summary : 'nothing else fits'),
        verdict(k.kept, k.gated),
      );
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
    setChildren(this.rowOf(j), h('td', null, j.id), h('td', { colspan: 4, class: 'accuracy-failed' }, message), j.kind === 'search' ? '' : h('td', null, this.loadButton(j)));
  }

  private drawPairs(): void {
    const line = (p: PairRanking) =>
      h('tr', { 'data-pair': `${p.faster}<${p.slower}` }, h('td', null, p.faster), h('td', null, p.slower), h('td', { class: 'num' }, ratio(p.published_ratio)), h('td', { class: 'num' }, ratio(p.predicted_ratio)), verdict(p.kept, p.gated));
    setChildren(this.pairBody, ...this.pairs.map(line));
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
