// The whole config in the URL fragment: "#c=" + lz-string(JSON). The fragment never reaches
// a server, so the page works from any static host. Links come from strangers: decoding
// checks sizes before and after decompression and never trusts the content beyond
// "a JSON object" (the core validates the rest; the page shows text only as textContent).
import LZString from 'lz-string';

export const SHARE_KEY = 'c';
/** Longest fragment accepted (characters); browsers and chat apps mangle longer links. */
export const MAX_FRAGMENT_CHARS = 32_000;
/** Largest decompressed config accepted (characters). */
export const MAX_CONFIG_CHARS = 512_000;

export type Decoded = { ok: true; config: Record<string, unknown> } | { ok: false; message: string };

/** The fragment (without '#') that holds `config`. */
export function encodeConfig(config: unknown): string {
  return `${SHARE_KEY}=${LZString.compressToEncodedURIComponent(JSON.stringify(config))}`;
}

/** A full link to `config` on the page at `pageUrl` (any previous fragment is replaced). */
export function shareUrl(pageUrl: string, config: unknown): string {
  const u = new URL(pageUrl);
  u.hash = encodeConfig(config);
  return u.toString();
}

/**
 * Reads a config from a location fragment ("#c=..." or "c=..."). Returns null when the
 * fragment holds no config, and {ok:false, message} when it holds a broken one.
 */
export function decodeFragment(fragment: string): Decoded | null {
  const text = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  if (text === '') return null;
  let value: string | null = null;
  for (const part of text.split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq) === SHARE_KEY) value = part.slice(eq + 1);
  }
  if (value === null) return null;
  if (text.length > MAX_FRAGMENT_CHARS)
    return { ok: false, message: `This share link is too long (${text.length} characters; at most ${MAX_FRAGMENT_CHARS}). The default scenario is shown instead.` };
  let json: string | null;
  try {
    json = LZString.decompressFromEncodedURIComponent(value);
  } catch {
    json = null;
  }
  if (!json) return { ok: false, message: 'This share link is damaged (it does not decompress); it may have been cut off when it was copied. The default scenario is shown instead.' };
  if (json.length > MAX_CONFIG_CHARS)
    return { ok: false, message: `This share link holds a config that is too large (${json.length} characters; at most ${MAX_CONFIG_CHARS}). The default scenario is shown instead.` };
  let config: unknown;
  try {
    config = JSON.parse(json);
  } catch {
    return { ok: false, message: 'This share link is damaged (its config is not valid JSON). The default scenario is shown instead.' };
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    return { ok: false, message: 'This share link does not hold a config object. The default scenario is shown instead.' };
  return { ok: true, config: config as Record<string, unknown> };
}

/** What the link holds besides the config: the lesson step, the open tab, the pinned runs,
 * presenter mode and the selected span. */
export interface PageState {
  lesson?: string;
  step?: number;
  tab?: string;
  pins?: { label: string; config: Record<string, unknown> }[];
  present?: boolean;
  /** GiB kept free per GPU for "fits" (results.ts). */
  reserve?: number;
}

const NAME = /^[a-z0-9-]{1,40}$/;

/** The fragment (without '#') for `config` (null: none, e.g. a lesson step) and `state`. */
export function encodeFragment(config: unknown | null, state: PageState): string {
  const parts: string[] = [];
  if (state.lesson && NAME.test(state.lesson)) parts.push(`lesson=${state.lesson}`, `step=${(state.step ?? 0) + 1}`);
  if (config !== null) parts.push(encodeConfig(config));
  if (state.tab && NAME.test(state.tab)) parts.push(`tab=${state.tab}`);
  if (state.pins?.length) parts.push(`p=${LZString.compressToEncodedURIComponent(JSON.stringify(state.pins))}`);
  if (state.present) parts.push('present=1');
  if (state.reserve !== undefined) parts.push(`r=${state.reserve}`);
  return parts.join('&');
}

/** Reads the page state of a fragment; anything malformed is left out (never trusted). */
export function decodeState(fragment: string): PageState {
  const text = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  const out: PageState = {};
  if (text.length > MAX_FRAGMENT_CHARS) return out;
  for (const part of text.split('&')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const k = part.slice(0, eq);
    const v = part.slice(eq + 1);
    if (k === 'lesson' && NAME.test(v)) out.lesson = v;
    else if (k === 'step' && /^\d{1,3}$/.test(v)) out.step = Math.max(0, Number(v) - 1);
    else if (k === 'tab' && NAME.test(v)) out.tab = v;
    else if (k === 'present') out.present = v === '1';
    else if (k === 'r' && /^\d{1,2}(\.\d{1,2})?$/.test(v)) out.reserve = Number(v);
    else if (k === 'p') {
      try {
        const json = LZString.decompressFromEncodedURIComponent(v);
        if (!json || json.length > MAX_CONFIG_CHARS) continue;
        const list = JSON.parse(json);
        if (!Array.isArray(list)) continue;
        out.pins = list
          .filter((p) => p && typeof p === 'object' && typeof p.label === 'string' && p.config && typeof p.config === 'object' && !Array.isArray(p.config))
          .slice(0, 8)
          .map((p) => ({ label: String(p.label).slice(0, 120), config: p.config }));
      } catch {
        /* a damaged pin list is dropped, the config still loads */
      }
    }
  }
  return out;
}
