// What the page starts before its own code has loaded: the module's compilation, the
// simulation worker (which imports its loader meanwhile) and the first call, the preset list.
// main.ts runs this first and loads the rest of the page (app.ts) in parallel with it.
import { compileModule, Engine } from './engine';
import type { PresetList } from './protocol';

export interface Boot {
  /** The compiled module, shared by every worker. */
  module: Promise<WebAssembly.Module>;
  /** URL of the Emscripten ES module loader (wasm/proteus.js). */
  loaderUrl: string;
  /** The worker that runs the page's simulations. */
  sim: Engine;
  presets: Promise<PresetList>;
}

export function boot(base: string): Boot {
  const module = compileModule(new URL('wasm/proteus.wasm', base).href);
  module.catch(() => {}); // reported by the page when it awaits it
  const loaderUrl = new URL('wasm/proteus.js', base).href;
  const sim = new Engine(module, loaderUrl);
  const presets = sim.call({ op: 'presets' });
  presets.catch(() => {});
  return { module, loaderUrl, sim, presets };
}
