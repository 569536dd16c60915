// What the page starts before its own code has loaded: the module's compilation, the
// simulation worker (which imports its loader meanwhile) and the first calls: the preset
// list and, on a plain visit (no link), the default scenario's text and its simulation.
// main.ts runs this first and loads the rest of the page (app.ts) in parallel with it.
import { compileModule, Engine, type Progress } from './engine';
import { DEFAULT_SCENARIO } from './page_config';
import type { Answers, PresetList } from './protocol';

/**
 * The default scenario simulated as the page will send it, started during start-up: the
 * worker goes from the preset list straight to this run, with no round trip to the page.
 * The page adopts it only if its own config text for the first run is this `config`.
 */
export interface FirstRun {
  name: string;
  text: Promise<string>;
  answer: Promise<Answers['simulate_scenario']>;
  /** Receives the run's progress once the page has adopted it. */
  progress: { to?: Progress };
}

export interface Boot {
  /** The compiled module, shared by every worker. */
  module: Promise<WebAssembly.Module>;
  /** URL of the Emscripten ES module loader (wasm/proteus.js). */
  loaderUrl: string;
  /** The worker that runs the page's simulations. */
  sim: Engine;
  presets: Promise<PresetList>;
  /** Null when the visit opens a link (a config, a lesson or page state in the fragment). */
  first: FirstRun | null;
  /** Start-up steps done before the page's code ran (ms after navigation): `fetched`, `compiled`. */
  marks: Record<string, number>;
}

export function boot(base: string, hash: string): Boot {
  const marks: Record<string, number> = {};
  const module = compileModule(new URL('wasm/proteus.wasm', base).href, marks);
  module.catch(() => {}); // reported by the page when it awaits it
  const loaderUrl = new URL('wasm/proteus.js', base).href;
  const sim = new Engine(module, loaderUrl);
  const presets = sim.call({ op: 'presets' });
  presets.catch(() => {});
  return { module, loaderUrl, sim, presets, first: hash === '' ? startFirstRun(sim) : null, marks };
}

function startFirstRun(sim: Engine): FirstRun {
  const progress: FirstRun['progress'] = {};
  const text = sim.call({ op: 'preset', kind: 'scenario', name: DEFAULT_SCENARIO });
  const answer = sim.call({ op: 'simulate_scenario', name: DEFAULT_SCENARIO, timeline: true }, (done, total) => progress.to?.(done, total));
  text.catch(() => {});
  answer.catch(() => {});
  return { name: DEFAULT_SCENARIO, text, answer, progress };
}
