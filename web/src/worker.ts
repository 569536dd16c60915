// The simulation worker: owns one instance of the WebAssembly module and answers calls.
// The page terminates and recreates it to cancel a running simulation.
import { errorOf, parseResult, transferables, type SimAnswer } from './result';
import { pageConfigText } from './page_config';
import type { CallMessage, InitMessage, LoadMessage, ProteusModule, WorkerReply } from './protocol';

const ctx = self as unknown as DedicatedWorkerGlobalScope;
let mod: ProteusModule | null = null;
let loader: Promise<any> | null = null;
/** Calls that arrived before the module was instantiated; answered, in order, once it is. */
let waiting: CallMessage[] | null = [];
/** When the loader import finished (epoch ms, for the page's start-up breakdown). */
let loaderAt = 0;
/** Epoch milliseconds: comparable with the page's clock (performance.timeOrigin differs). */
const epochNow = () => performance.timeOrigin + performance.now();

function post(m: WorkerReply, transfer: Transferable[] = []): void {
  ctx.postMessage(m, transfer);
}

/** Texts that are JSON error objects ({"ok":false,...}) become errors; others pass through. */
function isErrorText(text: string): any | null {
  if (!text.startsWith('{')) return null;
  const head = text.slice(0, 64).replace(/\s+/g, '');
  if (!head.startsWith('{"ok":false')) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

async function init(m: InitMessage): Promise<void> {
  try {
    if (!loader) throw new Error('the loader URL did not arrive before the module');
    const { default: createProteus } = await loader;
    mod = (await createProteus({
      instantiateWasm(imports: WebAssembly.Imports, done: (i: WebAssembly.Instance, m: WebAssembly.Module) => void) {
        WebAssembly.instantiate(m.module, imports).then((inst) => done(inst, m.module));
        return {};
      },
      print: () => {},
      printErr: () => {},
    })) as ProteusModule;
    post({ type: 'ready', version: mod.version(), loaderAt, readyAt: epochNow() });
    const queued = waiting ?? [];
    waiting = null;
    for (const c of queued) call(c);
  } catch (e) {
    waiting = null; // the page fails every pending call on 'fatal'
    post({ type: 'fatal', message: `The simulator could not start: ${String(e)}` });
  }
}

/**
 * One simulation: the result (summary, devices, breakdown), the resolved config and the
 * timeline as typed arrays, whose buffers move to the page without a copy.
 */
function simulate(config: string, timeline: boolean, id: number, fail: (j: any) => void, ok: (a: SimAnswer, transfer: Transferable[]) => void): void {
  const t0 = performance.now();
  // The core tells how many tasks have ended (at most ~100 times): posted at once, so the
  // page shows a percentage while this call still runs.
  const progress = (done: number, total: number) => post({ type: 'progress', id, done, total });
  const out = mod!.simulate_columns(config, timeline, timeline, progress);
  const t1 = performance.now();
  if (out.error !== undefined) return fail(isErrorText(out.error) ?? { error: { code: 'internal', message: out.error } });
  const parsed = parseResult(out.result!, out.timeline, out.curves);
  if (!parsed.ok) return fail({ error: parsed.error });
  const ms = { simulate: t1 - t0, parse: performance.now() - t1, startAt: performance.timeOrigin + t0, endAt: performance.timeOrigin + t1 };
  ok({ text: out.result!, resolved: JSON.parse(out.resolved!), result: parsed.result, ms }, transferables(parsed.result));
}

/**
 * A search's progress (the strategy search, the fit advice): the core tells after every wave of
 * a few candidates; posted at most every 200 ms, and at once when every candidate is decided.
 */
function waveProgress(id: number): (decided: number, candidates: number) => void {
  let postedAt = -Infinity;
  return (decided, candidates) => {
    const now = performance.now();
    if (now - postedAt < 200 && decided < candidates) return;
    postedAt = now;
    post({ type: 'progress', id, done: decided, total: candidates });
  };
}

function call(m: CallMessage): void {
  const fail = (j: any) => post({ type: 'reply', id: m.id, ok: false, error: errorOf(j) });
  const ok = (value: unknown, transfer: Transferable[] = []) => post({ type: 'reply', id: m.id, ok: true, value }, transfer);
  if (!mod) return fail({ error: { code: 'internal', message: 'the simulator is not loaded' } });
  try {
    switch (m.op) {
      case 'presets': {
        const t = mod.presets_json();
        const e = isErrorText(t);
        return e ? fail(e) : ok({ ...JSON.parse(t), max_input_bytes: mod.max_input_bytes() });
      }
      case 'preset': {
        const t = mod.preset_text(m.kind, m.name);
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
      case 'check': {
        const shown = mod.show_json(m.config);
        const e = isErrorText(shown);
        if (e) return fail(e);
        // Compiling finds what parsing cannot (divisibility against the model, stage counts).
        const compiled = mod.compile_json(m.config);
        const e2 = isErrorText(compiled);
        if (e2) return fail(e2);
        return ok({ resolved: JSON.parse(shown) });
      }
      case 'tree': {
        const t = mod.tree_text(m.config);
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
      case 'simulate':
        return simulate(m.config, m.timeline, m.id, fail, ok);
      case 'simulate_scenario': {
        const t = mod.preset_text('scenario', m.name);
        const e = isErrorText(t);
        if (e) return fail(e);
        const config = pageConfigText(JSON.parse(t));
        return simulate(config, m.timeline, m.id, fail, (answer: SimAnswer, transfer) => ok({ ...answer, config }, transfer));
      }
      case 'validate': {
        const t = mod.validate_json(m.file);
        const e = isErrorText(t);
        return e ? fail(e) : ok(JSON.parse(t));
      }
      case 'import': {
        const t = mod.import_json(m.kind, m.text, m.options);
        const e = isErrorText(t);
        return e ? fail(e) : ok(JSON.parse(t));
      }
      case 'export_megatron': {
        const t = mod.export_megatron_text(m.config);
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
      case 'trace': {
        const t = mod.chrome_trace_json(m.config);
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
      case 'search': {
        const t = mod.search_json(m.config, m.top, m.shard, m.shards, waveProgress(m.id));
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
      case 'fit_advice': {
        const t = mod.fit_changes_json(m.config, waveProgress(m.id));
        const e = isErrorText(t);
        return e ? fail(e) : ok(JSON.parse(t));
      }
      case 'merge_search': {
        const t = mod.merge_search_json(m.shards);
        const e = isErrorText(t);
        return e ? fail(e) : ok(t);
      }
    }
  } catch (e) {
    // Not a proteus::Error (those come back as JSON): the module trapped or aborted, e.g.
    // out of memory. Its state cannot be trusted any more; the page restarts this worker.
    const why = e instanceof Error ? e.message : String(e);
    fail({ error: { code: 'crashed', path: '', message: `the simulator stopped (${why}); it was restarted — a smaller configuration, or a lower simulation.max_timeline_spans, may fit` } });
  }
}

ctx.onmessage = (ev: MessageEvent<LoadMessage | InitMessage | CallMessage>) => {
  const m = ev.data;
  if (m.type === 'load') {
    loader = import(/* @vite-ignore */ m.loaderUrl);
    loader.then(() => (loaderAt = epochNow()), () => {}); // a failure is reported by init()
  } else if (m.type === 'init') void init(m);
  else if (m.type === 'call') {
    if (waiting) waiting.push(m);
    else call(m);
  }
};
