// The page: state (the config the user edits, the last result), and the wiring between the
// controls, the workers and the views. Results are immutable once received; views only read.
import { AdvancedView } from './advanced';
import { CompareView } from './compare';
import { dropStaleRecomputeModules, fittingDp, getPath, mergeStrategy, presetOf, setPath, strategyLabel, unsetPath, type Config } from './config_model';
import { Controls } from './controls';
import { $, download, h, nextFrame, nextTask, setChildren } from './dom';
import type { Boot, FirstRun } from './boot';
import { CallError, Engine, type Progress } from './engine';
import { formatDuration, formatInt } from './format';
import type { PresetList } from './protocol';
import type { ErrorInfo, FitChange, SimAnswer, SimResult } from './result';
import { renderFitAdvice, withoutAdviceLines } from './fit_advice';
import { DEFAULT_RESERVE_GIB, getReserveGiB, renderCards, renderMemory, renderSplit, renderWarnings, setReserveGiB } from './results';
import { decodeFragment, decodeState, encodeFragment, type PageState } from './share';
import { findLesson, LESSONS, LessonPanel } from './lessons';
import { chromeTraceParts, resultWithTimeline } from './downloads';
import { pickSchedule } from './schedules';
import { SearchView } from './search';
import { AccuracyView } from './accuracy';
import { SweepView } from './sweep';
import { TimelineView } from './timeline_view';
import { ImportPage, showCustomBadge } from './import_page';

import { DEFAULT_SCENARIO, pageConfigText } from './page_config';
/** Paths whose change re-fits dp when "keep all GPUs busy" is on. */
const REFIT_DP = new Set(['strategy.tp', 'strategy.pp', 'strategy.cp', 'cluster.nodes', 'cluster']);

interface Current {
  config: Config;
  text: string; // result JSON text, as the core wrote it
  result: SimResult;
  ms: number;
}

export class App {
  private sim!: Engine; // runs the simulation shown on the page (cancellable)
  private auxEngine: Engine | null = null; // trees, traces, scenario texts
  private checkEngine: Engine | null = null; // validation (cancelled when a newer config arrives)
  private sweepEngine: Engine | null = null;
  private module!: Promise<WebAssembly.Module>; // compiled once, shared by every worker
  searchView!: SearchView;
  accuracy!: AccuracyView;
  private loaderUrl = '';
  private presets!: PresetList;
  private controls!: Controls;
  private timeline!: TimelineView;
  private compare!: CompareView;
  private advanced!: AdvancedView;
  /** Paste, Open config…, Megatron export (for tests and the console). */
  importPage!: ImportPage;

  config: Config = {};
  private resolved: Config | null = null;
  private current: Current | null = null;
  private shownConfig: Config | null = null; // the config whose numbers the cards show
  private scenarioName = '';
  private lessonPanel!: LessonPanel;
  /** The lesson step shown (it stays in the link while the user edits its knobs). */
  private lesson: { id: string; step: number } | null = null;
  private tab = 'timeline';
  private present = false;
  private lastHash = '';
  /** Progress reports (tasks done, tasks) of the page's current or last simulation (for tests). */
  progressSeen: [number, number][] = [];
  /** Milliseconds the last simulation took inside the worker (for tests). */
  lastSimulateMs = 0;
  private modified = false;
  private checkSeq = 0;
  private lastChanged: string | null = null;
  private simSeq = 0;
  private debounce = 0;
  private running = false;
  /** The page's worker is finding the changes that make the shown run fit (findFitAdvice). */
  private advising = false;
  private simStart = 0;
  private readonly scenarioTexts = new Map<string, Promise<string>>();
  private get aux(): Engine {
    return (this.auxEngine ??= new Engine(this.module, this.loaderUrl));
  }

  private get checker(): Engine {
    return (this.checkEngine ??= new Engine(this.module, this.loaderUrl));
  }

  /** Draw times of the timeline widget with n synthetic spans (for tests and the console). */
  async benchmarkTimeline(n = 100_000): Promise<{ full: number; zoomed: number; deep: number; spans: number }> {
    const { benchmarkTimeline } = await import('./timeline/bench');
    return benchmarkTimeline(n);
  }

  /** The timeline tab (for tests and the console). */
  timelineView(): TimelineView {
    return this.timeline;
  }

  /** Milliseconds since navigation at which each startup step finished (for tests). */
  readonly timing: Record<string, number> = {};
  private bootMarks: Record<string, number> = {};
  /** The default scenario's run started by boot.ts, until the first simulate() takes it. */
  private firstRun: FirstRun | null = null;

  /**
   * Start-up, step by step, in ms after navigation (scripts/startup-bench.mjs prints it):
   * the .wasm response, its compilation, the worker's loader import and instantiation, the
   * preset list, the first simulation posted, run in the worker (and its result parsed
   * there), answered, its cards painted
   * and its timeline drawn.
   */
  startupBreakdown(): Record<string, number> {
    const t = this.timing;
    return {
      fetched: this.bootMarks.fetched,
      compiled: this.bootMarks.compiled,
      loader: this.sim?.startup?.loader ?? NaN,
      ready: this.sim?.startup?.ready ?? NaN,
      presets: t.presets,
      posted: t.firstStart,
      simStart: t.firstSimStart,
      simEnd: t.firstSimEnd,
      parsed: t.firstSimEnd + t.firstParse,
      reply: t.firstReply,
      cards: t.firstSummary,
      timeline: t.firstResult,
    };
  }

  /** Starts the page on what main.ts booted (the module compiling, the worker starting). */
  async start(boot: Boot): Promise<void> {
    this.loaderUrl = boot.loaderUrl;
    this.module = boot.module;
    this.bootMarks = boot.marks;
    this.firstRun = boot.first;
    if (boot.first) this.scenarioTexts.set(boot.first.name, boot.first.text);
    // One worker first: the others start after the first result, so that they do not
    // compete with it for the CPU.
    this.sim = boot.sim;
    this.prefetchScenario(location.hash); // queued behind the preset list
    try {
      await this.module;
      this.timing.compiled = performance.now();
      this.presets = await boot.presets;
      this.timing.presets = performance.now();
    } catch (e) {
      this.fatal(`The simulator could not be loaded: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    this.build();
    // Back/forward between lesson steps (pushState entries) and edited links.
    window.addEventListener('popstate', () => void this.loadFromLocation());
    window.addEventListener('hashchange', () => void this.loadFromLocation());
    await this.loadFromLocation();
    $('#version').textContent = `v${this.sim.version}`;
    document.body.classList.add('ready');
  }

  // ---- building the page ------------------------------------------------------------------

  private build(): void {
    this.controls = new Controls($('#controls'), this.presets, (path, value) => this.change(path, value));
    const scen = $('#scenario') as HTMLSelectElement;
    for (const s of this.presets.scenarios) scen.append(h('option', { value: s.name, title: s.description ?? '' }, s.title ?? s.name));
    scen.addEventListener('change', () => {
      if (scen.value) void this.loadScenario(scen.value);
    });
    $('#run').addEventListener('click', () => (this.running ? this.cancel() : this.simulate()));
    const auto = $('#autorun') as HTMLInputElement;
    auto.addEventListener('change', () => {
      if (auto.checked) this.simulate();
    });
    $('#share').addEventListener('click', () => void this.share());
    $('#dl-config').addEventListener('click', () => download(this.fileBase() + '.config.json', JSON.stringify(this.config, null, 2) + '\n'));
    $('#dl-result').addEventListener('click', () => {
      if (this.current) download(this.fileBase() + '.result.json', resultWithTimeline(this.current.text, this.current.result));
    });
    $('#dl-trace').addEventListener('click', () => this.downloadTrace());
    $('#pin').addEventListener('click', () => {
      if (this.current) {
        this.compare.pin(this.runLabel(this.current.config), this.current.config, this.current.result);
        this.selectTab('compare');
      }
    });
    $('#share-close').addEventListener('click', () => ($('#share-box').hidden = true));
    document.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      // Escape closes what is open (dialogs, the drawer) before it cancels a run.
      if (!$('#share-box').hidden) $('#share-box').hidden = true;
      else if (document.body.classList.contains('drawer-open')) this.setDrawer(false);
      else if (this.running) this.cancel();
    });
    this.lessonPanel = new LessonPanel(
      (id, step) => this.goLesson(id, step),
      () => this.endLesson(),
      () => this.setPresenter(!this.present),
    );
    $('main').prepend(this.lessonPanel.root);
    const lessonSel = $('#lesson') as HTMLSelectElement;
    for (const l of LESSONS) lessonSel.append(h('option', { value: l.id }, l.title));
    lessonSel.addEventListener('change', () => {
      if (lessonSel.value) this.goLesson(lessonSel.value, 0);
      else this.endLesson();
    });
    const reserve = $('#reserve') as HTMLInputElement;
    reserve.addEventListener('change', () => {
      setReserveGiB(Number(reserve.value));
      reserve.value = String(getReserveGiB());
      this.writeHash();
      if (this.current) this.showNumbers(this.current.config, this.current.result);
    });
    $('#theme').addEventListener('click', () => this.setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark'));
    $('#drawer-toggle').addEventListener('click', () => this.setDrawer(!document.body.classList.contains('drawer-open')));
    $('#drawer-close').addEventListener('click', () => this.setDrawer(false));

    this.timeline = new TimelineView($('#tab-timeline'));
    this.compare = new CompareView($('#tab-compare'), (pin) => this.setConfig(pin.config, { modified: true }));
    this.compare.onChange = () => this.writeHash();
    new SweepView(
      $('#tab-sweep'),
      () => (this.sweepEngine ??= new Engine(this.module, this.loaderUrl)),
      (path, value) => this.applyChange(this.config, path, value),
      (path, value) => this.change(path, value),
    );
    // Strategy search: a pool of workers of its own, each from the compiled module.
    this.searchView = new SearchView(
      $('#tab-search'),
      () => new Engine(this.module, this.loaderUrl),
      () => this.config,
      (config) => this.setConfig(config, { modified: true }),
    );
    // "How accurate is this?": the validation cases, simulated in a worker of its own when first opened.
    this.accuracy = new AccuracyView(
      $('#tab-accuracy'),
      () => new Engine(this.module, this.loaderUrl),
      (config, id) => {
        this.scenarioName = '';
        this.setConfig(config, { modified: true });
        this.setStatus(`Loading validation case ${id}…`, 'ok');
      },
    );
    this.advanced = new AdvancedView($('#tab-json'), (config) => this.setConfig(config, { modified: true }));
    this.advanced.onRevert = () => this.advanced.setConfig(this.config, true);
    for (const tab of document.querySelectorAll<HTMLButtonElement>('.tabs button')) tab.addEventListener('click', () => this.selectTab(tab.dataset.tab!));
    this.importPage = new ImportPage({
      engine: () => this.aux,
      maxInputBytes: () => this.presets.max_input_bytes ?? 0,
      config: () => this.config,
      resolvedNodes: () => this.resolved?.cluster?.nodes,
      apply: (config, note) => {
        this.scenarioName = '';
        this.setConfig(config, { modified: true });
        this.setStatus(note, 'ok');
      },
      showEditor: () => this.selectTab('json'),
      editor: this.advanced.editor,
      editorError: this.advanced.error,
      editorPanel: $('#tab-json'),
      status: (text, kind) => this.setStatus(text, kind),
    });
    this.advanced.onForeign = (text) => this.importPage.takeEditorText(text);
  }

  private selectTab(name: string): void {
    this.tab = name;
    this.writeHash();
    for (const tab of document.querySelectorAll<HTMLButtonElement>('.tabs button')) tab.setAttribute('aria-selected', String(tab.dataset.tab === name));
    for (const panel of document.querySelectorAll<HTMLElement>('.tab-panel')) panel.hidden = panel.id !== `tab-${name}`;
    if (name === 'json') void this.refreshTree();
    if (name === 'accuracy') void this.accuracy.open();
  }

  // ---- config -------------------------------------------------------------------------------

  private async loadFromLocation(): Promise<void> {
    if (location.hash === this.lastHash && this.lastHash !== '') return;
    const state = decodeState(location.hash);
    const decoded = decodeFragment(location.hash);
    this.applyPageState(state);
    const lesson = state.lesson ? findLesson(state.lesson) : undefined;
    const step = lesson ? Math.min(state.step ?? 0, lesson.steps.length - 1) : 0;
    this.lesson = lesson ? { id: lesson.id, step } : null;
    if (lesson) this.lessonPanel.show(lesson, step);
    else this.lessonPanel.hide();
    ($('#lesson') as HTMLSelectElement).value = lesson?.id ?? '';
    if (decoded && decoded.ok) {
      this.banner(null);
      if (JSON.stringify(decoded.config) === JSON.stringify(this.config)) {
        this.lastHash = location.hash;
        return;
      }
      this.scenarioName = '';
      this.setConfig(decoded.config, { modified: true, fromLink: true });
      return;
    }
    if (decoded && !decoded.ok) this.banner(decoded.message);
    if (lesson) {
      await this.loadLessonStep(lesson.id, step);
      return;
    }
    await this.loadScenario(DEFAULT_SCENARIO);
  }

  private applyPageState(state: PageState): void {
    if (state.tab && document.querySelector(`.tabs button[data-tab="${state.tab}"]`)) this.selectTab(state.tab);
    this.setPresenter(Boolean(state.present), false);
    setReserveGiB(state.reserve ?? DEFAULT_RESERVE_GIB);
    ($('#reserve') as HTMLInputElement).value = String(getReserveGiB());
    if (state.pins && this.compare.pins.length === 0) void this.restorePins(state.pins);
  }

  /** A lesson step: its scenario with its knobs set; a new browser-history entry. */
  goLesson(id: string, step: number): void {
    const lesson = findLesson(id);
    if (!lesson) return;
    const n = Math.max(0, Math.min(step, lesson.steps.length - 1));
    history.pushState(null, '', '#' + encodeFragment(null, { lesson: id, step: n, tab: this.tab, present: this.present, pins: this.pinState() }));
    void this.loadFromLocation();
  }

  private async loadLessonStep(id: string, step: number): Promise<void> {
    const lesson = findLesson(id)!;
    const s = lesson.steps[step];
    try {
      const engine = this.current || this.running ? this.aux : this.sim;
      let config: Config = JSON.parse(await this.scenarioText(s.scenario, engine));
      for (const [path, value] of Object.entries(s.set)) config = this.applyChange(config, path, value, false);
      this.scenarioName = s.scenario;
      if (s.tab) this.selectTab(s.tab);
      this.setConfig(config, { modified: Object.keys(s.set).length > 0 });
      this.lessonPanel.highlight(s.highlight);
    } catch (e) {
      this.banner(`Could not load the lesson step: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private endLesson(): void {
    this.lesson = null;
    this.lessonPanel.hide();
    ($('#lesson') as HTMLSelectElement).value = '';
    this.setPresenter(false);
    this.writeHash();
  }

  /** Presenter mode: large type, the side panel hidden. */
  setPresenter(on: boolean, write = true): void {
    this.present = on;
    document.body.classList.toggle('presenter', on);
    if (write) this.writeHash();
  }

  private setTheme(theme: 'light' | 'dark'): void {
    document.documentElement.dataset.theme = theme;
    try {
      localStorage.setItem('proteus-theme', theme);
    } catch {
      /* private mode: the choice lasts for this page only */
    }
    this.timeline.redraw();
  }

  private setDrawer(open: boolean): void {
    document.body.classList.toggle('drawer-open', open);
    $('#drawer-toggle').setAttribute('aria-expanded', String(open));
    if (open) ($('#controls').querySelector('select, input') as HTMLElement | null)?.focus();
  }

  private pinState(): PageState['pins'] {
    return this.compare.pins.map((p) => ({ label: p.label, config: p.config }));
  }

  /** The link: the config, the lesson step, the open tab, the pins, presenter mode. */
  private writeHash(): void {
    if (!this.presets) return;
    const hash = '#' + encodeFragment(this.config, { lesson: this.lesson?.id, step: this.lesson?.step, tab: this.tab === 'timeline' ? undefined : this.tab, pins: this.pinState(), present: this.present, reserve: getReserveGiB() === DEFAULT_RESERVE_GIB ? undefined : getReserveGiB() });
    this.lastHash = hash;
    if (location.hash !== hash) history.replaceState(null, '', hash);
  }

  /** Pins from a link: simulated (with timelines) in the aux worker, in order. */
  private async restorePins(pins: NonNullable<PageState['pins']>): Promise<void> {
    for (const p of pins) {
      try {
        const r = await this.aux.call({ op: 'simulate', config: this.pageConfigText(p.config), timeline: true });
        this.compare.pin(p.label, p.config, r.result);
      } catch {
        /* an invalid pinned config is dropped */
      }
    }
  }

  /** A scenario preset's text (built into the module, so asked for once and kept). */
  private scenarioText(name: string, engine: Engine): Promise<string> {
    let text = this.scenarioTexts.get(name);
    if (!text) {
      text = engine.call({ op: 'preset', kind: 'scenario', name });
      this.scenarioTexts.set(name, text);
      text.catch(() => this.scenarioTexts.delete(name)); // asked again next time
    }
    return text;
  }

  /** Asks for the scenario a link opens with (none when it holds a config) during start-up. */
  private prefetchScenario(hash: string): void {
    const decoded = decodeFragment(hash);
    if (decoded && decoded.ok) return;
    const state = decodeState(hash);
    const lesson = state.lesson ? findLesson(state.lesson) : undefined;
    const name = lesson ? lesson.steps[Math.min(state.step ?? 0, lesson.steps.length - 1)].scenario : DEFAULT_SCENARIO;
    this.scenarioText(name, this.sim).catch(() => {}); // a failure is reported when it is used
  }

  private async loadScenario(name: string): Promise<void> {
    try {
      // Before the first result the simulation worker is idle and already loaded.
      const engine = this.current || this.running ? this.aux : this.sim;
      const text = await this.scenarioText(name, engine);
      this.scenarioName = name;
      this.setConfig(JSON.parse(text), { modified: false });
    } catch (e) {
      this.banner(`Could not load the scenario “${name}”: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** Applies one control's change, re-fitting dp if asked (used by the controls and sweeps). */
  applyChange(config: Config, path: string, value: unknown, refit = true): Config {
    let c = config;
    if (path === 'model') c = setPath(c, 'model', value);
    // An emptied cluster knob (GPU compute back at 100%) leaves no empty object behind.
    else if (path.startsWith('cluster.') && value === undefined) c = unsetPath(c, path);
    else if (path.startsWith('cluster.') && typeof c.cluster === 'string') c = setPath({ ...c, cluster: { preset: c.cluster } }, path, value);
    else if (path === 'cluster') {
      const nodes = getPath(c, 'cluster.nodes') ?? this.resolved?.cluster?.nodes;
      c = setPath(c, 'cluster', nodes !== undefined ? { preset: value, nodes } : value);
    } else if (path === 'cluster.nodes' && typeof c.cluster === 'string') {
      c = setPath(c, 'cluster', value === undefined ? c.cluster : { preset: c.cluster, nodes: value });
    } else c = setPath(c, path, value);
    const keep = (document.getElementById('keep-gpus') as HTMLInputElement | null)?.checked ?? true;
    // Dependent knobs: a schedule sets what it needs (virtual stages, micro-batch count:
    // schedules.ts); virtual stages only mean something under the interleaved schedule, recompute
    // modules only under selective recompute.
    if (path === 'strategy.schedule') c = pickSchedule(c, this.resolved, String(value));
    else if (path === 'strategy.recompute') c = dropStaleRecomputeModules(c);
    else if (path === 'strategy.virtual_stages' && Number(value) > 1 && (getPath(c, 'strategy.schedule') ?? this.resolved?.strategy?.schedule) !== 'interleaved-1f1b')
      c = setPath(c, 'strategy.schedule', 'interleaved-1f1b');
    if (refit && keep && REFIT_DP.has(path)) {
      const gpus = this.gpusOf(c);
      const strategy = { ...(this.resolved?.strategy ?? {}), ...(c.strategy ?? {}) };
      const dp = fittingDp(gpus, strategy);
      if (dp !== null) c = setPath(c, 'strategy.dp', dp);
    }
    return c;
  }

  private gpusOf(c: Config): number {
    const clusterName = presetOf(c.cluster);
    const preset = this.presets.clusters.find((p) => p.name === clusterName);
    const perNode = Number((typeof c.cluster === 'object' && c.cluster?.gpus_per_node) ?? preset?.gpus_per_node ?? this.resolved?.cluster?.gpus_per_node ?? 8);
    const nodes = Number(getPath(c, 'cluster.nodes') ?? (clusterName === presetOf(this.config.cluster) ? this.resolved?.cluster?.nodes : undefined) ?? 1);
    return nodes * perNode;
  }

  private change(path: string, value: unknown): void {
    const next = this.applyChange(this.config, path, value);
    // A change event with the value already in the config (a typed-in field losing focus
    // after its change ran) must not simulate the same config again.
    if (JSON.stringify(next) === JSON.stringify(this.config)) return;
    this.setConfig(next, { modified: true });
    this.lastChanged = path;
  }

  private setConfig(config: Config, how: { modified: boolean; fromLink?: boolean }): void {
    this.config = config;
    this.lastChanged = null;
    this.modified = how.modified;
    showCustomBadge(how.modified, this.scenarioName);
    clearTimeout(this.debounce);
    const auto = ($('#autorun') as HTMLInputElement).checked;
    // The page's first config simulates at once: the worker runs while the page fills its
    // controls below. Later changes wait a little, so that typing runs once.
    const first = this.current === null && !this.running;
    if (first && auto) this.simulate();
    this.writeHash();
    const scen = $('#scenario') as HTMLSelectElement;
    scen.value = this.presets.scenarios.some((s) => s.name === this.scenarioName) ? this.scenarioName : '';
    this.describe();
    this.controls.update(config, this.resolved);
    this.advanced.setConfig(config, true);
    this.markStale(true);
    if (first && auto) return;
    this.debounce = window.setTimeout(() => {
      // One simulation per change: it validates the config and resolves it too, so a
      // separate check runs only when nothing simulates.
      if (($('#autorun') as HTMLInputElement).checked) this.simulate();
      else void this.check();
    }, first ? 0 : 120);
  }

  private describe(): void {
    const name = typeof this.config.name === 'string' ? this.config.name : '';
    const desc = typeof this.config.description === 'string' ? this.config.description : '';
    if (name && !this.modified) {
      $('#scenario-title').textContent = name;
      $('#scenario-desc').textContent = desc;
      document.title = `${name} — Proteus`;
      return;
    }
    // Edited (or from a link): describe what is simulated now, and where it came from.
    const modelName = presetOf(this.config.model);
    const model = this.presets.models.find((m) => m.name === modelName)?.title ?? this.config.model?.name ?? modelName ?? 'Custom model';
    const clusterName = presetOf(this.config.cluster);
    const cluster = this.presets.clusters.find((c) => c.name === clusterName);
    const nodes = getPath(this.config, 'cluster.nodes') ?? this.resolved?.cluster?.nodes;
    const where = cluster ? `${nodes ?? ''}${nodes ? ' × ' : ''}${cluster.title ?? cluster.name}` : 'a custom cluster';
    $('#scenario-title').textContent = `${model} on ${where}`;
    document.title = `${model} on ${where} — Proteus`;
    $('#scenario-desc').textContent = `${strategyLabel(this.config, this.resolved)}${name ? ` — changed from the scenario “${name}”.` : '.'}`;
  }

  /** Validates the config in the aux worker and shows the error by its control. */
  private async check(): Promise<void> {
    const seq = ++this.checkSeq;
    if (this.checker.busy) this.checker.cancel(); // an older config: its answer no longer matters
    try {
      const r = await this.checker.call({ op: 'check', config: JSON.stringify(this.config) });
      if (seq !== this.checkSeq) return;
      this.resolved = r.resolved;
      this.controls.showError(null);
      this.controls.update(this.config, this.resolved);
      if ($('#tab-json').hidden === false) void this.refreshTree();
    } catch (e) {
      if (seq !== this.checkSeq) return;
      if (e instanceof CallError && e.info.code === 'cancelled') return;
      this.showConfigError(e instanceof CallError ? e.info : { code: 'internal', path: '', message: String(e) });
    }
  }

  /** A one-click fix for an error, where one is clear. */
  private fixFor(err: ErrorInfo): { label: string; path: string; value: unknown } | undefined {
    if (err.path.startsWith('training.seq_len') && getPath(this.config, 'training.seq_len') !== undefined)
      return { label: "Use the model's own sequence length", path: 'training.seq_len', value: undefined };
    // zb_plan with a schedule the zero-bubble runtime does not plan (a link, the JSON editor).
    if (err.path.startsWith('strategy.zb_plan')) return { label: 'Unset zb_plan', path: 'strategy.zb_plan', value: undefined };
    // ZB-V planned from pass times with 1 < micro-batches < pp: the runtime's planner asserts.
    if (err.path === 'strategy.schedule' && err.message.includes('zb_plan "unit"')) return { label: 'Use the unit-time order', path: 'strategy.zb_plan', value: 'unit' };
    if (err.path.startsWith('strategy.virtual_stages')) return { label: 'Set virtual stages to 1', path: 'strategy.virtual_stages', value: 1 };
    if (err.path.startsWith('strategy.micro_batch')) return { label: 'Set the micro-batch to 1', path: 'strategy.micro_batch', value: 1 };
    if (err.path.startsWith('strategy') || /dp\*tp\*pp/.test(err.message)) {
      const strategy = { ...(this.resolved?.strategy ?? {}), ...(this.config.strategy ?? {}) };
      const dp = fittingDp(this.gpusOf(this.config), strategy);
      if (dp !== null && dp !== strategy.dp) return { label: `Set dp = ${dp} (uses every GPU)`, path: 'strategy.dp', value: dp };
    }
    return undefined;
  }

  private showConfigError(err: ErrorInfo): void {
    this.controls.showError(err, this.lastChanged, this.fixFor(err));
    this.setStatus(`Invalid configuration: ${err.message}`, 'error');
    const note = $('#stale-note');
    setChildren(note, this.shownConfig ? 'The numbers below belong to the last valid configuration. ' : 'No result: the configuration is invalid. ', h('b', null, err.message));
    note.hidden = false;
  }

  private async refreshTree(): Promise<void> {
    try {
      this.advanced.tree.textContent = await this.aux.call({ op: 'tree', config: JSON.stringify(this.config) });
    } catch (e) {
      this.advanced.tree.textContent = `The tree cannot be shown: ${e instanceof Error ? e.message : String(e)}`;
    }
  }

  // ---- simulation -----------------------------------------------------------------------------

  /** The config sent for the page's own run: the timeline capped unless the config says. */
  private pageConfigText(config: Config): string {
    return pageConfigText(config);
  }

  simulate(): void {
    if (this.running || this.advising) this.stopWorkers();
    this.setAdvising(false);
    const seq = ++this.simSeq;
    ++this.checkSeq; // an older check's answer no longer matters
    if (this.checkEngine?.busy) this.checkEngine.cancel();
    const config = this.config;
    this.running = true;
    this.simStart = performance.now();
    this.setRunning(true);
    this.setStatus('Simulating…', 'busy');
    // The status: the share of the simulation's tasks done (the core reports it), and the time.
    let share = '';
    const status = () => {
      if (seq === this.simSeq && this.running) this.setStatus(`Simulating… ${share}${formatDuration((performance.now() - this.simStart) / 1000)}`, 'busy');
    };
    const ticker = window.setInterval(status, 250);
    let shownAt = -Infinity;
    const progress = (done: number, total: number) => {
      if (seq !== this.simSeq) return;
      this.progressSeen.push([done, total]);
      share = `${Math.floor((100 * done) / Math.max(1, total))}% · `;
      // Up to ~100 reports a run, each redraw a layout of the page on the main thread (the
      // one that must then take the result): at most one redraw per 100 ms, the ticker's
      // between them.
      const now = performance.now();
      if (now - shownAt < 100) return;
      shownAt = now;
      $('#status').dataset.progress = String(done / Math.max(1, total));
      status();
    };
    delete $('#status').dataset.progress;
    this.progressSeen = [];
    const configText = this.pageConfigText(config); // the run's, and its fit advice's if it does not fit
    this.runOnce(configText, progress)
      .then(async ({ text, resolved, result, ms: workerMs }) => {
        clearInterval(ticker);
        if (seq !== this.simSeq) return;
        this.timing.firstReply ??= performance.now();
        this.lastSimulateMs = workerMs.simulate;
        this.resolved = resolved;
        this.controls.showError(null);
        this.controls.update(this.config, this.resolved);
        const ms = performance.now() - this.simStart;
        this.current = { config, text, result, ms };
        // The numbers first, painted before the timeline (the slower part) is built.
        this.showNumbers(config, result);
        await nextFrame();
        if (this.timing.firstResult === undefined) {
          this.timing.firstSummary = performance.now();
          this.timing.firstSimulate = workerMs.simulate;
          this.timing.firstParse = workerMs.parse;
          this.timing.firstSimStart = workerMs.startAt - performance.timeOrigin;
          this.timing.firstSimEnd = workerMs.endAt - performance.timeOrigin;
          this.timing.firstStart = this.simStart;
        }
        await nextTask(); // after that frame's paint
        if (this.current?.result !== result) return; // a newer result is shown already
        this.render();
        this.timing.firstResult ??= performance.now();
        if (seq !== this.simSeq) return; // a newer run is going: it owns the status
        this.running = false;
        this.setRunning(false);
        const st = result.stats;
        $('#status').title = 'GPUs that run identical programs on symmetric parts of the network are simulated once, with a multiplicity.';
        this.setStatus(
          `Simulated in ${formatDuration(ms / 1000)} · ${formatInt(st.tasks ?? 0)} tasks · ${st.simulated_ranks ?? '?'} of ${st.gpus ?? '?'} GPUs simulated`,
          'ok',
        );
        if ($('#tab-json').hidden === false) void this.refreshTree();
        if (result.summary.oom) this.findFitAdvice(seq, configText, result);
      })
      .catch((e: unknown) => {
        clearInterval(ticker);
        if (seq !== this.simSeq) return;
        this.running = false;
        this.setRunning(false);
        const info = e instanceof CallError ? e.info : { code: 'internal', path: '', message: String(e) };
        if (info.code === 'cancelled') {
          this.setStatus('Cancelled. Press Run to simulate again.', 'warn');
          return;
        }
        this.showConfigError(info);
      });
  }

  /**
   * Simulates `text` on the page's worker. The first time, the run boot.ts started is taken
   * instead when it simulated this very text (a plain visit); otherwise it is dropped and
   * `text` runs after it.
   */
  private runOnce(text: string, progress: Progress): Promise<SimAnswer> {
    const first = this.firstRun;
    this.firstRun = null;
    const run = () => this.sim.call({ op: 'simulate', config: text, timeline: true }, progress);
    if (!first) return run();
    first.progress.to = progress;
    return first.answer.then(
      (a) => (a.config === text ? a : run()),
      (e: unknown) => (e instanceof CallError && e.info.code === 'cancelled' ? Promise.reject(e) : run()),
    );
  }

  /**
   * Whether the page is done: a result is shown and nothing runs, neither a simulation nor the
   * search for changes that fit an out-of-memory run. The one readiness signal of the browser
   * tests and the screenshot script (scripts/page_states.mjs).
   */
  settled(): boolean {
    return document.body.classList.contains('has-result') && !this.running && !this.advising;
  }

  /** Simulations the page asked of its workers so far (sweeps not counted). */
  simulationCount(): number {
    const n = (e: Engine | null) => (e?.calls.simulate ?? 0) + (e?.calls.simulate_scenario ?? 0);
    return n(this.sim) + n(this.auxEngine) + n(this.checkEngine);
  }

  private stopWorkers(): void {
    this.sim.cancel();
  }

  private cancel(): void {
    ++this.simSeq;
    this.stopWorkers();
    this.setAdvising(false);
    this.running = false;
    this.setRunning(false);
    this.setStatus('Cancelled. Press Run to simulate again.', 'warn');
  }

  /** Cards, split, memory and warnings of `r` (a summary-only or a full result). */
  private showNumbers(config: Config, r: SimResult): void {
    this.shownConfig = config;
    renderCards($('#cards'), r);
    renderSplit($('#split'), r);
    renderMemory($('#memory'), r);
    this.showWarnings(r);
    if (this.lesson) this.lessonPanel.highlight();
    this.markStale(true);
    document.body.classList.add('has-numbers');
  }

  /** The warnings of `r`; the changes that fit come with an Apply button, in place of their lines. */
  private showWarnings(r: SimResult): void {
    renderWarnings($('#warnings'), { ...r, warnings: withoutAdviceLines(r.warnings, r.fitAdvice) });
    renderFitAdvice($('#warnings'), r.fitAdvice, (a) => this.applyFit(a));
  }

  /**
   * The changes that make the shown run fit, asked of the page's worker once the run is shown:
   * each is a simulation the search bounds did not rule out, tens of them for a large MoE run
   * (docs/search.md). A pending note says how far it is; the answer joins the run's result
   * (its warnings and fitAdvice, as the CLI's result holds them). A new run cancels it.
   */
  private findFitAdvice(seq: number, text: string, result: SimResult): void {
    const note = h('p', { class: 'fit-advice-pending', role: 'status' }, 'Looking for changes that fit…');
    $('#warnings').append(note);
    this.setAdvising(true);
    const progress = (decided: number, candidates: number) => {
      if (seq === this.simSeq) note.textContent = `Looking for changes that fit… ${formatInt(decided)} of ${formatInt(candidates)} candidates decided`;
    };
    this.sim.call({ op: 'fit_advice', config: text }, progress).then(
      (a) => {
        if (seq !== this.simSeq) return;
        this.setAdvising(false);
        if (this.current?.result !== result) return;
        result.fitAdvice = a.fit_advice;
        result.warnings = [...result.warnings, ...a.warnings];
        this.showWarnings(result);
      },
      (e: unknown) => {
        if (seq !== this.simSeq) return;
        this.setAdvising(false);
        const info = e instanceof CallError ? e.info : { code: 'internal', path: '', message: String(e) };
        note.textContent = info.code === 'cancelled' ? 'The search for changes that fit was stopped.' : `The changes that fit could not be found: ${info.message}`;
      },
    );
  }

  private setAdvising(on: boolean): void {
    this.advising = on;
    document.body.classList.toggle('advising', on);
  }

  /** One of the core's changes that fit: its whole strategy replaces the config's knobs. */
  private applyFit(a: FitChange): void {
    this.setConfig(setPath(this.config, 'strategy', mergeStrategy(this.config.strategy, a.strategy)), { modified: true });
  }

  /** The timeline, compare and downloads of the current result (its numbers already shown). */
  private render(): void {
    const c = this.current!;
    const r = c.result;
    this.timeline.show(r);
    this.compare.setCurrent(this.runLabel(c.config), c.config, r);
    document.body.classList.add('has-result');
    ($('#pin') as HTMLButtonElement).disabled = false;
    ($('#dl-result') as HTMLButtonElement).disabled = false;
    ($('#dl-trace') as HTMLButtonElement).disabled = false;
  }

  private markStale(stale: boolean): void {
    const s = stale && this.shownConfig !== null && JSON.stringify(this.shownConfig) !== JSON.stringify(this.config);
    $('#results').classList.toggle('stale', s);
    $('#stale-note').hidden = !s;
    if (s) setChildren($('#stale-note'), 'The numbers below belong to the previous configuration.');
  }

  private setRunning(on: boolean): void {
    const b = $('#run') as HTMLButtonElement;
    b.textContent = on ? 'Cancel' : 'Run';
    b.classList.toggle('danger', on);
    b.title = on ? 'Stop the running simulation (Esc)' : 'Simulate the current configuration';
    document.body.classList.toggle('running', on);
  }

  private setStatus(text: string, kind: 'ok' | 'busy' | 'warn' | 'error'): void {
    const el = $('#status');
    el.textContent = text;
    el.title = text;
    el.dataset.kind = kind;
  }

  // ---- share, downloads ------------------------------------------------------------------------

  private async share(): Promise<void> {
    const url = location.href;
    const out = $('#share-url') as HTMLInputElement;
    out.value = url;
    $('#share-box').hidden = false;
    out.select();
    try {
      await navigator.clipboard.writeText(url);
      $('#share-msg').textContent = 'Link copied. Opening it shows these exact inputs and gives the same result.';
    } catch {
      $('#share-msg').textContent = 'Copy this link: opening it shows these exact inputs and gives the same result.';
    }
  }

  /** The Chrome trace of the result shown, from its columns (no second simulation). */
  private downloadTrace(): void {
    if (!this.current) return;
    const t0 = performance.now();
    const parts = chromeTraceParts(this.current.result);
    this.timing.lastTraceMs = performance.now() - t0;
    download(this.fileBase() + '.trace.json', parts);
  }

  private fileBase(): string {
    const m = presetOf(this.config.model) ?? 'model';
    return `proteus-${m}`.replace(/[^A-Za-z0-9._-]/g, '_');
  }

  private runLabel(config: Config): string {
    const model = presetOf(config.model) ?? config.model?.name ?? 'model';
    const cluster = presetOf(config.cluster) ?? 'cluster';
    const nodes = getPath(config, 'cluster.nodes');
    return `${model} on ${nodes ? `${nodes}× ` : ''}${cluster}: ${strategyLabel(config, this.resolved)}`;
  }

  private banner(message: string | null): void {
    const b = $('#banner');
    b.hidden = !message;
    setChildren(b, message ?? '');
  }

  private fatal(message: string): void {
    this.banner(message);
    this.setStatus(message, 'error');
  }
}
