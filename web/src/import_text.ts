// What a pasted or opened text is, before the core's importers see it (docs/import.md):
// a Proteus config (a JSON object), a Hugging Face config.json (a JSON object with
// "architectures") or Megatron-LM arguments (anything else: a launch script, a torchrun line).
// Pure functions, so that the rules are unit-tested without a browser.
import type { Config } from './config_model';
import { parseJsonWithPosition } from './advanced';

export type TextKind = { kind: 'config'; config: Config } | { kind: 'hf' } | { kind: 'megatron' } | { kind: 'invalid'; message: string };

/** Recognises `text`; a text that starts like JSON but is not valid JSON is `invalid`. */
export function recogniseText(text: string): TextKind {
  const first = text.search(/\S/);
  if (first < 0) return { kind: 'invalid', message: 'the text is empty' };
  if (text[first] !== '{') return { kind: 'megatron' };
  const parsed = parseJsonWithPosition(text);
  if (!parsed.ok) return { kind: 'invalid', message: `Invalid JSON: ${parsed.message}` };
  const v = parsed.value;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { kind: 'invalid', message: 'the JSON must be an object' };
  if ('architectures' in v) return { kind: 'hf' };
  return { kind: 'config', config: v as Config };
}

/**
 * Why a text of `chars` UTF-16 units (or a file of `bytes`) is refused before it is parsed, or
 * null. A string's UTF-8 encoding has at least as many bytes as it has UTF-16 units, so a text
 * longer than the limit in units is over it in bytes too (the core checks the bytes again).
 */
export function oversizeMessage(size: number, limitBytes: number, what: string): string | null {
  if (!(limitBytes > 0) || size <= limitBytes) return null;
  const mib = (n: number) => (n / 1048576).toFixed(1);
  return `${what} is ${mib(size)} MiB; the simulator reads at most ${mib(limitBytes)} MiB (${limitBytes} bytes), so it was not read`;
}

/**
 * The cluster Megatron arguments run on: they do not name the hardware, so the page's current
 * cluster, with its node count (torchrun --nnodes or #SBATCH --nodes in the text win).
 */
export function clusterForImport(config: Config, resolvedNodes: number | undefined): Config | string | null {
  const c = config.cluster;
  if (typeof c === 'string') return resolvedNodes ? { preset: c, nodes: resolvedNodes } : c;
  if (c && typeof c === 'object' && !Array.isArray(c)) return c.nodes !== undefined || !resolvedNodes ? c : { ...c, nodes: resolvedNodes };
  return null; // no cluster: the importer asks for one, naming "cluster"
}

/** A Hugging Face config.json gives the model only: the rest of the current run stays. */
export function withImportedModel(current: Config, imported: Config): Config {
  const out: Config = { ...current, model: imported.model };
  delete out.name;
  delete out.description;
  return out;
}
