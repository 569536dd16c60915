// Bring your own run (issue 15): paste anywhere on the page, "Open config…", export of the
// current run as Megatron arguments, the notes of an import under the editor, and the
// "custom" badge. The importers themselves are the core's (wasm import_json); this file only
// recognises the text, refuses what is too big before it is copied into the module, and shows
// the answer. Errors go next to the JSON editor, naming the argument or field.
import type { Config } from './config_model';
import { presetOf } from './config_model';
import { $, download, h, setChildren } from './dom';
import { CallError, type Engine } from './engine';
import type { ImportAnswer } from './protocol';
import type { ErrorInfo } from './result';
import { clusterForImport, oversizeMessage, recogniseText, withImportedModel } from './import_text';

/** What the import needs of the page (app.ts). */
export interface ImportHost {
  engine(): Engine;
  maxInputBytes(): number;
  config(): Config;
  resolvedNodes(): number | undefined;
  /** Shows `config` as a new, edited run (not a preset). */
  apply(config: Config, note: string): void;
  /** Opens the JSON editor tab. */
  showEditor(): void;
  editor: HTMLTextAreaElement;
  editorError: HTMLElement;
  editorPanel: HTMLElement;
  status(text: string, kind: 'ok' | 'busy' | 'warn' | 'error'): void;
}

const SOURCE_NAMES: Record<string, string> = {
  megatron: 'Megatron-LM arguments',
  hf: 'Hugging Face config.json',
  config: 'Proteus config',
};

export class ImportPage {
  /** Under the editor: what the last import read, ignored and assumed. */
  readonly notes = h('div', { class: 'import-notes', id: 'import-notes', hidden: true });
  private readonly exportText = h('textarea', { id: 'export-text', readonly: true, rows: 12, spellcheck: 'false', 'aria-label': 'Megatron-LM arguments of the current run' });
  private readonly exportMsg = h('span', { id: 'export-msg' });
  private readonly exportCopy = h('button', { id: 'export-copy', class: 'small' }, 'Copy');
  private readonly exportDownload = h('button', { id: 'export-download', class: 'small' }, 'Download');
  private readonly exportClose = h('button', { id: 'export-close', class: 'small ghost', 'aria-label': 'Close' }, '×');
  private readonly exportBox = h('div', { id: 'export-box', class: 'export-box', hidden: true }, h('div', { class: 'export-head' }, h('b', null, 'Megatron-LM arguments'), this.exportMsg, this.exportCopy, this.exportDownload, this.exportClose), this.exportText);
  /** Imports sent to the module (tests check that oversize input never is). */
  importCalls = 0;

  constructor(private readonly host: ImportHost) {
    const exportButton = h('button', { id: 'export-megatron', title: 'The current run as Megatron-LM arguments (torchrun … pretrain_gpt.py …), to copy or download' }, 'Export as Megatron arguments');
    const openButton = h('button', { id: 'open-config-editor', title: 'Open a Proteus config, a Hugging Face config.json or a Megatron-LM launch script' }, 'Open config…');
    host.editorPanel.append(this.notes, h('div', { class: 'import-actions' }, openButton, exportButton), this.exportBox);
    document.addEventListener('paste', (e) => this.onPaste(e));
    const file = $('#open-file') as HTMLInputElement;
    $('#open-config').addEventListener('click', () => file.click());
    openButton.addEventListener('click', () => file.click());
    file.addEventListener('change', () => {
      const f = file.files?.[0];
      file.value = ''; // the same file can be opened again
      if (f) void this.openFile(f);
    });
    exportButton.addEventListener('click', () => void this.showExport());
    this.exportClose.addEventListener('click', () => (this.exportBox.hidden = true));
    this.exportCopy.addEventListener('click', () => void this.copyExport());
    this.exportDownload.addEventListener('click', () => download(this.exportName(), this.exportText.value + '\n', 'text/x-shellscript'));
  }

  /** Paste outside a text field: the clipboard's text is imported as a run. */
  private onPaste(e: ClipboardEvent): void {
    if (isTextField(e.target)) return; // ordinary editing
    const text = e.clipboardData?.getData('text/plain') ?? '';
    if (text.trim() === '') return;
    e.preventDefault();
    void this.importText(text, 'The pasted text');
  }

  /** The editor's Apply: Megatron arguments or an HF config.json are imported (true); a config is the editor's. */
  takeEditorText(text: string): boolean {
    const tooBig = oversizeMessage(text.length, this.host.maxInputBytes(), 'The editor\'s text') !== null;
    const kind = tooBig ? 'oversize' : recogniseText(text).kind;
    if (kind !== 'megatron' && kind !== 'hf' && kind !== 'oversize') return false;
    void this.importText(text, 'The editor\'s text');
    return true;
  }

  /** A file from "Open config…": its size is checked before a byte of it is read. */
  async openFile(f: File): Promise<void> {
    const tooBig = oversizeMessage(f.size, this.host.maxInputBytes(), `The file “${f.name}”`);
    if (tooBig) return this.fail(tooBig, null);
    await this.importText(await f.text(), `The file “${f.name}”`);
  }

  /** Imports a text (from a paste, a file or the editor): a config, an HF config.json or Megatron arguments. */
  async importText(text: string, what: string): Promise<void> {
    const tooBig = oversizeMessage(text.length, this.host.maxInputBytes(), what);
    if (tooBig) return this.fail(tooBig, null);
    const r = recogniseText(text);
    if (r.kind === 'invalid') return this.fail(`${what} is not a config: ${r.message}`, text);
    if (r.kind === 'config') {
      this.showNotes('config', [], []);
      this.host.apply(r.config, `Opened a Proteus config.`);
      return;
    }
    const options: Record<string, unknown> = {};
    if (r.kind === 'megatron') {
      const cluster = clusterForImport(this.host.config(), this.host.resolvedNodes());
      if (cluster !== null) options.cluster = cluster;
    }
    this.host.status(`Importing the ${SOURCE_NAMES[r.kind]}…`, 'busy');
    let answer: ImportAnswer;
    try {
      ++this.importCalls;
      answer = await this.host.engine().call({ op: 'import', kind: r.kind, text, options: JSON.stringify(options) });
    } catch (e) {
      const info: ErrorInfo = e instanceof CallError ? e.info : { code: 'internal', path: '', message: String(e) };
      return this.fail(`Could not import the ${SOURCE_NAMES[r.kind]}: `, text, info);
    }
    const assumed = [...answer.assumed];
    if (r.kind === 'megatron' && options.cluster !== undefined) assumed.unshift(`cluster: the page's ${presetOf(options.cluster) ?? 'custom cluster'} (Megatron arguments do not name the hardware; choose another cluster after importing)`);
    const config = r.kind === 'hf' ? withImportedModel(this.host.config(), answer.config) : answer.config;
    this.showNotes(r.kind, answer.ignored, assumed);
    this.host.apply(config, `Imported the ${SOURCE_NAMES[r.kind]}: ${answer.ignored.length} ignored, ${assumed.length} assumed (listed under the JSON editor).`);
  }

  /** An import that failed: the text goes into the editor, the error next to it. */
  private fail(message: string, text: string | null, info?: ErrorInfo): void {
    this.host.showEditor();
    if (text !== null) {
      this.host.editor.value = text;
      this.host.editor.dispatchEvent(new Event('input')); // unapplied edits: kept until Apply or Revert
    }
    const el = this.host.editorError;
    if (info) setChildren(el, message, info.path ? h('code', { class: 'error-path' }, info.path) : '', info.path ? ': ' : '', info.message);
    else setChildren(el, message);
    el.hidden = false;
    this.notes.hidden = true;
    this.host.status(info ? `${message}${info.path ? info.path + ': ' : ''}${info.message}` : message, 'error');
  }

  private showNotes(kind: string, ignored: string[], assumed: string[]): void {
    this.host.editorError.hidden = true;
    const list = (title: string, items: string[], cls: string) =>
      items.length === 0 ? null : h('details', { class: cls, open: true }, h('summary', null, `${title} (${items.length})`), h('ul', null, ...items.map((x) => h('li', null, x))));
    setChildren(
      this.notes,
      h('p', null, `Imported from ${SOURCE_NAMES[kind] ?? kind}.`, kind === 'config' ? '' : ' See docs/import.md for what each argument or field becomes.'),
      list('Read but not applied', ignored, 'import-ignored'),
      list('Assumed (not in the text)', assumed, 'import-assumed'),
    );
    this.notes.hidden = false;
  }

  /** The current run as Megatron-LM arguments, in a box with Copy and Download. */
  private async showExport(): Promise<void> {
    const msg = this.exportMsg;
    this.exportBox.hidden = false;
    this.exportText.value = '';
    msg.textContent = 'Writing the arguments…';
    try {
      this.exportText.value = await this.host.engine().call({ op: 'export_megatron', config: JSON.stringify(this.host.config()) });
      msg.textContent = 'The current run as Megatron-LM arguments (pretrain_gpt.py); pasting them back imports the same run.';
      this.exportCopy.disabled = false;
      this.exportDownload.disabled = false;
    } catch (e) {
      const info: ErrorInfo = e instanceof CallError ? e.info : { code: 'internal', path: '', message: String(e) };
      setChildren(msg, 'Cannot export: ', info.path ? h('code', { class: 'error-path' }, info.path) : '', info.path ? ': ' : '', info.message);
      this.exportCopy.disabled = true;
      this.exportDownload.disabled = true;
    }
  }

  private async copyExport(): Promise<void> {
    this.exportText.select();
    try {
      await navigator.clipboard.writeText(this.exportText.value);
      this.exportMsg.textContent = 'Copied.';
    } catch {
      this.exportMsg.textContent = 'The browser did not allow copying: the text is selected, press Ctrl+C.';
    }
  }

  private exportName(): string {
    const m = presetOf(this.host.config().model) ?? 'model';
    return `proteus-${m}.megatron.sh`.replace(/[^A-Za-z0-9._-]/g, '_');
  }
}

const NON_TEXT_INPUTS = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color', 'file', 'image']);

/** True for a field where pasting edits text (the editor, a number box), not a button or a checkbox. */
function isTextField(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target instanceof HTMLTextAreaElement) return true;
  return target instanceof HTMLInputElement && !NON_TEXT_INPUTS.has(target.type);
}

/** The "custom" badge: shown once the run differs from the preset it started as. */
export function showCustomBadge(modified: boolean, scenario: string): void {
  const b = $('#custom-badge');
  b.hidden = !modified;
  b.title = scenario ? `Edited: not the preset scenario “${scenario}” any more` : 'Not a preset: imported, opened from a link or edited';
}
