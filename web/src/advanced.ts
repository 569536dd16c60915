// The advanced editor: the whole config as JSON (per-module overrides included), the
// parse error when it is not valid JSON, and the resolved strategy tree.
import type { Config } from './config_model';
import { h } from './dom';
import { findJsonError } from './json_error';

const OVERRIDE_EXAMPLE = {
  path: 'layers.*.mlp',
  recompute: 'full',
};

/** JSON.parse with a message that names line and column. */
export function parseJsonWithPosition(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (e) {
    const at = findJsonError(text);
    if (at) return { ok: false, message: `line ${at.line}, column ${at.column}: ${at.message}` };
    return { ok: false, message: e instanceof Error ? e.message : String(e) };
  }
}

export class AdvancedView {
  readonly editor = h('textarea', { id: 'json-editor', spellcheck: 'false', 'aria-label': 'Config JSON', rows: 28 });
  readonly error = h('p', { class: 'json-error', role: 'alert', hidden: true, id: 'json-error' });
  readonly tree = h('pre', { class: 'tree', id: 'strategy-tree' }, 'The resolved strategy tree appears here.');
  private dirty = false;

  constructor(
    root: HTMLElement,
    private readonly onApply: (config: Config) => void,
  ) {
    const apply = h('button', { class: 'primary', id: 'json-apply' }, 'Apply JSON');
    const revert = h('button', { id: 'json-revert' }, 'Revert');
    const example = h('button', { id: 'json-example', title: 'Adds an override that recomputes every MLP block fully' }, 'Add an override example');
    apply.addEventListener('click', () => this.apply());
    revert.addEventListener('click', () => {
      this.dirty = false;
      this.error.hidden = true;
      this.onRevert?.();
    });
    example.addEventListener('click', () => {
      const parsed = parseJsonWithPosition(this.editor.value);
      if (!parsed.ok || typeof parsed.value !== 'object' || !parsed.value) return this.showError(parsed.ok ? 'The config must be a JSON object.' : parsed.message);
      const c = parsed.value as Config;
      c.strategy = c.strategy ?? {};
      c.strategy.overrides = [...(c.strategy.overrides ?? []), OVERRIDE_EXAMPLE];
      this.editor.value = JSON.stringify(c, null, 2);
      this.dirty = true;
    });
    this.editor.addEventListener('input', () => {
      this.dirty = true;
    });
    this.editor.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.apply();
      }
    });
    root.append(
      h(
        'p',
        { class: 'panel-intro' },
        'The full config (schema in DESIGN.md §4): everything the controls set, plus what they do not — model and cluster fields, ',
        h('code', null, 'simulation'),
        ' limits, and per-module ',
        h('code', null, 'strategy.overrides'),
        ' ({"path": "layers.*.mlp", "map": {"tp": null}, "recompute": "full", "stage": 1}) that change how one part of the model is split. Ctrl+Enter applies. Megatron-LM arguments or a Hugging Face config.json pasted here are imported. ',
        h('a', { href: 'docs/config.txt', target: '_blank', rel: 'noopener', id: 'config-reference' }, 'Config reference'),
        ' · ',
        h('a', { href: 'docs/import.txt', target: '_blank', rel: 'noopener', id: 'import-reference' }, 'what imports read'),
      ),
      h(
        'div',
        { class: 'advanced-grid' },
        h('div', { class: 'editor-col' }, this.editor, h('div', { class: 'editor-actions' }, apply, revert, example), this.error),
        h('div', { class: 'tree-col' }, h('h3', null, 'Resolved strategy tree'), this.tree),
      ),
    );
  }

  onRevert: (() => void) | null = null;
  /** Takes a text that is not a Proteus config (Megatron arguments, an HF config.json); true when it did. */
  onForeign: ((text: string) => boolean) | null = null;

  /** Shows `config` unless the user has unapplied edits. */
  setConfig(config: Config, force = false): void {
    if (this.dirty && !force) return;
    this.editor.value = JSON.stringify(config, null, 2);
    this.dirty = false;
  }

  showError(message: string | null): void {
    this.error.hidden = !message;
    this.error.textContent = message ?? '';
  }

  private apply(): void {
    if (this.onForeign?.(this.editor.value)) return;
    const parsed = parseJsonWithPosition(this.editor.value);
    if (!parsed.ok) return this.showError(`Invalid JSON: ${parsed.message}`);
    const v = parsed.value;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return this.showError('The config must be a JSON object ({ "model": …, "cluster": …, "training": …, "strategy": … }).');
    this.showError(null);
    this.dirty = false;
    this.onApply(v as Config);
  }
}
