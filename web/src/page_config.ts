// The config text the page simulates, shared by the page and its worker: the worker builds
// the first scenario's text itself during start-up (boot.ts), and the page adopts that run
// only when its own text for the config is the same string.
import { getPath, setPath, type Config } from './config_model';

/** The page shows at most this many spans unless the config sets simulation.max_timeline_spans. */
export const PAGE_MAX_TIMELINE_SPANS = 200_000;
/** The scenario a plain visit (no link) opens with. */
export const DEFAULT_SCENARIO = 'default';

/** `config` as the page sends it to the core: with the page's timeline span limit unless set. */
export function pageConfigText(config: Config): string {
  if (getPath(config, 'simulation.max_timeline_spans') !== undefined) return JSON.stringify(config);
  return JSON.stringify(setPath(config, 'simulation.max_timeline_spans', PAGE_MAX_TIMELINE_SPANS));
}
