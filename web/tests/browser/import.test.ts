// Bring your own run in headless Chromium (issue 15 item 4): a Hugging Face config.json,
// Megatron-LM arguments and a Proteus config pasted anywhere; "Open config…" with a launch
// script; errors next to the editor naming the argument or field; input over the size limit
// refused before it is parsed; the current run exported as Megatron arguments (copied,
// downloaded, and imported back to the same run); the config reference linked from the
// editor; the "custom" badge. Fixtures are the real files of tests/import/ (SOURCES.md).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, openPage, waitForNew, waitForResult, type Session } from '../support/browser';

const REPO = resolve(__dirname, '..', '..', '..');
const CLI = process.env.PROTEUS_CLI ?? join(REPO, 'build', 'bin', 'proteus');
const fixture = (name: string) => join(REPO, 'tests', 'import', name);
const MiB = 1048576;

/** A paste on the page body, as Ctrl+V outside any field delivers it. */
async function paste(page: Page, text: string): Promise<void> {
  await page.evaluate((t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    document.body.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);
}

async function simulations(page: Page): Promise<number> {
  return page.evaluate(() => (window as any).proteus.simulationCount());
}

/** Picks a scenario and waits until the page holds it, unedited. */
async function loadScenario(page: Page, name: string): Promise<void> {
  await page.selectOption('#scenario', name);
  await page.waitForFunction((n) => (window as any).proteus.scenarioName === n && (window as any).proteus.modified === false, name);
}

async function pageConfig(page: Page): Promise<any> {
  return page.evaluate(() => (window as any).proteus.config);
}

async function editorError(page: Page): Promise<string> {
  await page.waitForSelector('#json-error:not([hidden])', { timeout: 30_000 });
  return page.$eval('#json-error', (e) => e.textContent ?? '');
}

/** The native CLI's import of a file (the same core importer the page runs in WebAssembly). */
function cliImport(args: string[]): any {
  return JSON.parse(execFileSync(CLI, ['import', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
}

describe('importing and exporting runs in the page', () => {
  let s: Session;
  let page: Page;

  beforeAll(async () => {
    ({ session: s, page } = await openPage({ viewport: { width: 1440, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'], waitForResult: true }));
  });
  afterAll(async () => {
    await s?.close();
  });

  it('shows the "custom" badge only once the preset has been edited', async () => {
    // The default scenario as loaded is the preset itself.
    expect(await page.$eval('#custom-badge', (e) => (e as HTMLElement).hidden)).toBe(true);
    const n = await simulations(page);
    await page.fill('#ctl-training-global_batch', '64');
    await page.$eval('#ctl-training-global_batch', (e) => (e as HTMLInputElement).blur()); // leaving the field commits it
    await waitForNew(page, n);
    expect(await page.$eval('#custom-badge', (e) => (e as HTMLElement).hidden)).toBe(false);
    expect(await page.$eval('#custom-badge', (e) => e.getAttribute('title'))).toContain('default');
    // Choosing the scenario again restores the preset: no badge.
    await loadScenario(page, 'gpt-12l-dp32');
    expect(await page.$eval('#custom-badge', (e) => (e as HTMLElement).hidden)).toBe(true);
  });

  it('imports a Hugging Face config.json pasted anywhere: the model changes, the rest of the run stays', async () => {
    const text = readFileSync(fixture('hf-qwen3-8b.json'), 'utf8');
    const hf = JSON.parse(text);
    const before = await pageConfig(page);
    const n = await simulations(page);
    await paste(page, text);
    await waitForNew(page, n);
    const c = await pageConfig(page);
    // Qwen3-8B's config.json: 36 layers, hidden 4096, 32 heads of 128, 8 KV heads, FFN 12288,
    // vocabulary 151936, QK-norm (Qwen3), untied embeddings.
    expect(c.model.layers).toBe(hf.num_hidden_layers);
    expect(c.model.hidden).toBe(hf.hidden_size);
    expect(c.model.heads).toBe(hf.num_attention_heads);
    expect(c.model.kv_heads).toBe(hf.num_key_value_heads);
    expect(c.model.ffn_hidden).toBe(hf.intermediate_size);
    expect(c.model.vocab).toBe(hf.vocab_size);
    expect(c.model.qk_norm).toBe(true);
    expect(c.model).toEqual(cliImport(['hf', fixture('hf-qwen3-8b.json')]).model);
    expect(c.cluster).toEqual(before.cluster);
    expect(c.strategy).toEqual(before.strategy);
    expect(await page.$eval('#custom-badge', (e) => (e as HTMLElement).hidden)).toBe(false);
    const notes = await page.$eval('#import-notes', (e) => e.textContent ?? '');
    expect(notes).toContain('Hugging Face config.json');
    expect(notes).toContain('flash_attention'); // assumed: a config.json does not say
  });

  it('imports Megatron-LM arguments pasted anywhere, on the page\'s cluster', async () => {
    // Bare arguments: no --nnodes, so the page's node count; tp 2 · pp 2 on 8 GPUs per node.
    await loadScenario(page, 'gpt-12l-dp32');
    await waitForResult(page);
    const resolvedNodes = await page.evaluate(() => (window as any).proteus.resolved?.cluster?.nodes);
    const clusterBefore = (await pageConfig(page)).cluster;
    const args = '--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --max-position-embeddings 1024 \\\n  --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --micro-batch-size 4 --global-batch-size 256 --bf16 --lr 6e-4';
    const n = await simulations(page);
    await paste(page, args);
    await waitForNew(page, n);
    const c = await pageConfig(page);
    expect(c.model.layers).toBe(12);
    expect(c.model.hidden).toBe(768);
    expect(c.strategy.tp).toBe(2);
    expect(c.strategy.pp).toBe(2);
    // dp = GPUs / (tp·pp) = nodes·8 / 4.
    expect(c.strategy.dp).toBe((resolvedNodes * 8) / 4);
    expect(c.training.global_batch).toBe(256);
    expect(c.training.precision).toBe('bf16');
    expect(typeof clusterBefore === 'string' ? clusterBefore : clusterBefore.preset).toBe(c.cluster.preset);
    const notes = await page.$eval('#import-notes', (e) => e.textContent ?? '');
    expect(notes).toContain('--lr'); // read, not applied: the learning rate does not change the time
    expect(notes).toContain('Megatron arguments do not name the hardware');
  });

  it('opens a real Megatron-LM launch script with "Open config…" and imports it as the CLI does', async () => {
    // Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh: NUM_NODES=1 (torchrun --nnodes),
    // TP 1, CP 1, micro-batch 1, global batch 128, seq 8192, --fp8-format hybrid.
    const loaded = await simulations(page);
    await loadScenario(page, 'default'); // DGX H100, the script's machine
    await waitForNew(page, loaded); // the status line stops changing, the header stops moving
    const n = await simulations(page);
    // The button opens the file input's chooser (recorded here instead of a native dialog).
    await page.$eval('#open-file', (e) =>
      e.addEventListener('click', (ev) => {
        ev.preventDefault();
        (window as any).chooserOpened = true;
      }),
    );
    await page.click('#open-config');
    expect(await page.evaluate(() => (window as any).chooserOpened)).toBe(true);
    await page.evaluate(() => ((window as any).chooserOpened = false));
    await page.click('.tabs button[data-tab="json"]');
    await page.click('#open-config-editor'); // the same, from the JSON editor
    expect(await page.evaluate(() => (window as any).chooserOpened)).toBe(true);
    await page.setInputFiles('#open-file', fixture('megatron-llama3-8b-h100-fp8.sh'));
    await waitForNew(page, n);
    const c = await pageConfig(page);
    const cli = cliImport(['megatron', fixture('megatron-llama3-8b-h100-fp8.sh'), '--cluster', 'dgx-h100']);
    expect(c).toEqual(cli);
    expect(c.cluster.nodes).toBe(1);
    expect(c.training.precision).toBe('fp8');
    expect(c.training.global_batch).toBe(128);
  });

  it('names the offending argument or field next to the editor', async () => {
    const cases: [string, string][] = [
      ['--num-layers 4 --hidden-size 512 --num-attention-heads 8 --num-layer 3', '--num-layer'], // unknown (a typo)
      ['--num-layers two --hidden-size 512 --num-attention-heads 8', '--num-layers'], // malformed value
      ['{"architectures": ["FalconForCausalLM"], "hidden_size": 4544}', 'architectures[0]'], // unsupported architecture
      ['{"model": "llama3-8b", "cluster": ', 'Invalid JSON'], // a config cut short
    ];
    for (const [text, name] of cases) {
      await paste(page, text);
      const err = await editorError(page);
      expect(err, text).toContain(name);
      expect(await page.$eval('#tab-json', (e) => (e as HTMLElement).hidden)).toBe(false); // the editor is shown
      expect(await page.$eval('#json-editor', (e) => (e as HTMLTextAreaElement).value)).toBe(text); // to be fixed there
      await page.$eval('#json-error', (e) => ((e as HTMLElement).hidden = true));
    }
    // Fixed in the editor and applied: imported.
    const n = await simulations(page);
    await page.fill('#json-editor', '--num-layers 4 --hidden-size 512 --num-attention-heads 8 --seq-length 512 --max-position-embeddings 512 --micro-batch-size 1 --bf16');
    await page.click('#json-apply');
    await waitForNew(page, n);
    expect((await pageConfig(page)).model.layers).toBe(4);
    expect(await page.$eval('#json-error', (e) => (e as HTMLElement).hidden)).toBe(true);
  });

  it('refuses input over the size limit before parsing it, from a paste and from a file', async () => {
    const limit = await page.evaluate(() => (window as any).proteus.presets.max_input_bytes);
    expect(limit).toBe(16 * MiB); // config_limits::kMaxInputBytes
    const calls = await page.evaluate(() => (window as any).proteus.importPage.importCalls);
    // A 100 MiB config (the case): refused by its length, never sent to the module.
    const t0 = Date.now();
    // The clock runs from the paste event (the clipboard already holding the text) to the
    // refusal: what the page does, not what Chromium takes to build a 100 MiB clipboard.
    const pasteMs = await page.evaluate(() => {
      const big = '{"model": "' + 'x'.repeat(100 * 1048576) + '"}';
      const data = new DataTransfer();
      data.setData('text/plain', big);
      const start = performance.now();
      document.body.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
      return performance.now() - start;
    });
    const err = await editorError(page);
    console.log(`100 MiB paste refused in ${pasteMs.toFixed(1)} ms (page), ${Date.now() - t0} ms with building the text`);
    expect(pasteMs).toBeLessThan(500);
    expect(err).toContain('100.0 MiB');
    expect(err).toContain('16.0 MiB');
    await page.$eval('#json-error', (e) => ((e as HTMLElement).hidden = true));
    // A 17 MiB file: refused by File.size before it is read. The time is the page's, from the
    // input's change event to the error shown (handing the file to Chromium takes longer).
    await page.$eval('#open-file', (e) => e.addEventListener('change', () => ((window as any).fileChosenAt = performance.now()), { capture: true }));
    await page.setInputFiles('#open-file', { name: 'huge.json', mimeType: 'application/json', buffer: Buffer.alloc(17 * MiB, 32) });
    const fileErr = await editorError(page);
    const fileMs = await page.evaluate(() => performance.now() - (window as any).fileChosenAt);
    console.log(`17 MiB file refused within ${fileMs.toFixed(1)} ms of choosing it`);
    expect(fileMs).toBeLessThan(500);
    expect(fileErr).toContain('huge.json');
    expect(fileErr).toContain('17.0 MiB');
    expect(await page.evaluate(() => (window as any).proteus.importPage.importCalls)).toBe(calls);
    await page.$eval('#json-error', (e) => ((e as HTMLElement).hidden = true));
  });

  it('exports the current run as Megatron arguments: copy, download, and pasting them back gives the same run', async () => {
    await loadScenario(page, 'mixtral-8x7b-ep');
    await waitForResult(page);
    const scenario = await pageConfig(page);
    await page.click('.tabs button[data-tab="json"]');
    await page.click('#export-megatron');
    await page.waitForFunction(() => (document.getElementById('export-text') as HTMLTextAreaElement).value.length > 0);
    const text = await page.$eval('#export-text', (e) => (e as HTMLTextAreaElement).value);
    // Same text as the CLI's export of the scenario file.
    const cli = execFileSync(CLI, ['export', 'megatron', join(REPO, 'core', 'presets', 'scenarios', 'mixtral-8x7b-ep.json')], { encoding: 'utf8' });
    expect(text.trim()).toBe(cli.trim());
    expect(text).toContain('--num-experts 8');
    await page.screenshot({ path: join(ARTIFACTS, 'i01-export.png') });
    await page.click('#export-copy');
    // The message follows the clipboard's promise, not the click.
    await page.waitForFunction(() => /Copied|did not allow/.test(document.getElementById('export-msg')?.textContent ?? ''));
    expect(await page.$eval('#export-msg', (e) => e.textContent)).toBe('Copied.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(text);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-download')]);
    expect(download.suggestedFilename()).toBe('proteus-mixtral-8x7b.megatron.sh');
    expect(readFileSync(await download.path(), 'utf8')).toBe(text + '\n');
    await page.click('#export-close');
    // Pasted back: the importer gives the scenario's run (export -> import is the identity,
    // test_import.cpp); compared resolved, as the core resolves both.
    const resolvedBefore = await page.evaluate(() => (window as any).proteus.resolved);
    const n = await simulations(page);
    await paste(page, text);
    await waitForNew(page, n);
    const resolvedAfter = await page.evaluate(() => (window as any).proteus.resolved);
    // The model's display name is a comment in the arguments, not an argument.
    delete resolvedBefore.model.name;
    delete resolvedAfter.model.name;
    for (const part of ['model', 'cluster', 'training', 'strategy']) expect(resolvedAfter[part], part).toEqual(resolvedBefore[part]);
    expect(scenario.name).toBeDefined();
  });

  it('says why a run cannot be exported, naming the field', async () => {
    await loadScenario(page, 'alexnet-hybrid');
    await page.click('.tabs button[data-tab="json"]');
    await page.click('#export-megatron');
    await page.waitForFunction(() => /Cannot export/.test(document.getElementById('export-msg')!.textContent ?? ''));
    expect(await page.$eval('#export-msg', (e) => e.textContent)).toContain('model.kind');
    expect(await page.$eval('#export-copy', (e) => (e as HTMLButtonElement).disabled)).toBe(true);
    await page.click('#export-close');
  });

  it('links the config reference from the editor, bundled with the page', async () => {
    await page.click('.tabs button[data-tab="json"]');
    const href = await page.$eval('#config-reference', (e) => (e as HTMLAnchorElement).href);
    const res = await page.evaluate(async (u) => {
      const r = await fetch(u);
      return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
    }, href);
    expect(res.status).toBe(200);
    expect(res.type).toContain('text/plain');
    expect(res.text).toBe(readFileSync(join(REPO, 'docs', 'config.md'), 'utf8'));
    const importHref = await page.$eval('#import-reference', (e) => (e as HTMLAnchorElement).href);
    expect(await page.evaluate(async (u) => (await fetch(u)).status, importHref)).toBe(200);
    expect(s.errors).toEqual([]);
  });
});
