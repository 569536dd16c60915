// Every scenario preset gives byte-identical results in WebAssembly and in the native CLI
// (DESIGN.md §1: "The same config gives byte-identical results natively and in WebAssembly").
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModule, type ProteusModule } from '../support/module';

const CLI = process.env.PROTEUS_CLI ?? resolve(__dirname, '..', '..', '..', 'build', 'bin', 'proteus');

function cli(args: string[]): { stdout: string; status: number } {
  try {
    return { stdout: execFileSync(CLI, args, { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe'] }), status: 0 };
  } catch (e: any) {
    return { stdout: String(e.stdout ?? ''), status: e.status ?? -1 };
  }
}

describe('WebAssembly module against the native CLI', () => {
  let mod: ProteusModule;
  let dir: string;
  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`native CLI ${CLI} not found: build it first (cmake -S .. -B ../build && cmake --build ../build -j2) or set PROTEUS_CLI`);
    mod = await loadModule();
    dir = mkdtempSync(join(tmpdir(), 'proteus-parity-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has the same version and presets', () => {
    expect(mod.version() + '\n').toBe(cli(['version']).stdout);
    expect(mod.presets_json() + '\n').toBe(cli(['presets']).stdout);
  });

  const names: string[] = [];
  it('lists scenario presets', () => {
    const list = JSON.parse(mod.presets_json()).scenarios.map((s: { name: string }) => s.name);
    expect(list).toContain('default');
    names.push(...list);
  });

  it('gives byte-identical results for every scenario preset', { timeout: 600_000 }, () => {
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      const text = mod.preset_text('scenario', name);
      const file = join(dir, `${name}.json`);
      writeFileSync(file, text);
      const native = cli(['simulate', file]);
      const wasm = mod.simulate_json(text, false, false, false);
      expect(wasm + '\n', `scenario ${name}`).toBe(native.stdout);
      // The CLI exits 0 exactly when the result is ok (2 for invalid input).
      expect(native.status === 0, `scenario ${name} exit status ${native.status}`).toBe(JSON.parse(wasm).ok === true);
    }
  });

  it('gives the same timeline and memory curves for the default scenario', { timeout: 300_000 }, () => {
    const text = mod.preset_text('scenario', 'default');
    const file = join(dir, 'default-timeline.json');
    writeFileSync(file, text);
    const native = cli(['simulate', file, '--timeline', '--memory-curve']);
    const wasm = mod.simulate_json(text, true, true, false);
    expect(wasm.length + 1).toBe(native.stdout.length);
    expect(wasm + '\n' === native.stdout).toBe(true);
  });

  it('hands the page the memory curves as columns holding the CLI\'s memory_curves exactly', () => {
    const text = mod.preset_text('scenario', 'default');
    const file = join(dir, 'default-curves.json');
    writeFileSync(file, text);
    const native = JSON.parse(cli(['simulate', file, '--memory-curve']).stdout);
    const out = mod.simulate_columns(text, false, true, null);
    const { memory_curves: nativeCurves, ...rest } = native;
    // the result text leaves the curves out; everything else is the CLI's result
    expect(JSON.parse(out.result!)).toEqual(rest);
    expect(nativeCurves.length).toBeGreaterThan(0);
    expect(out.curves!.length).toBe(nativeCurves.length);
    out.curves!.forEach((c, i) => {
      expect(c.rank).toBe(nativeCurves[i].rank);
      expect(c.t_s).toBeInstanceOf(Float64Array);
      // the CLI prints round-trip digits: the parsed numbers are the same doubles
      expect(Array.from(c.t_s)).toEqual(nativeCurves[i].t_s);
      expect(Array.from(c.GiB)).toEqual(nativeCurves[i].GiB);
    });
  });

  it('hands the page a run that does not fit first, then its fit advice: together the CLI\'s result', { timeout: 300_000 }, () => {
    // Mixtral 8x7B with every expert on every GPU (ep 1) does not fit (lessons.test.ts).
    const base = JSON.parse(mod.preset_text('scenario', 'mixtral-8x7b-ep'));
    const text = JSON.stringify({ ...base, strategy: { ...base.strategy, ep: 1 } });
    const file = join(dir, 'mixtral-ep1.json');
    writeFileSync(file, text);
    const native = JSON.parse(cli(['simulate', file]).stdout);
    expect(native.summary.oom).toBe(true);
    expect(native.fit_advice.length).toBeGreaterThan(0);
    const isAdvice = (w: string) => w.startsWith('To fit: ') || w.startsWith('No change of one or two knobs');
    const run = JSON.parse(mod.simulate_columns(text, false, false, null).result!);
    const { fit_advice: nativeAdvice, ...rest } = native;
    expect(run).toEqual({ ...rest, warnings: native.warnings.filter((w: string) => !isAdvice(w)) });
    const told: [number, number][] = [];
    const advice = JSON.parse(mod.fit_changes_json(text, (d: number, c: number) => told.push([d, c])));
    expect(advice).toEqual({ ok: true, fit_advice: nativeAdvice, warnings: native.warnings.filter(isAdvice) });
    expect(told.length).toBeGreaterThan(0);
    for (const [d, c] of told) expect(d).toBeLessThanOrEqual(c);
  });

  it('returns errors as JSON instead of aborting', () => {
    const bad = JSON.parse(mod.show_json('{"model": '));
    expect(bad.ok).toBe(false);
    expect(bad.error.code).toBe('invalid_json');
    const invalid = JSON.parse(mod.simulate_json(JSON.stringify({ ...JSON.parse(mod.preset_text('scenario', 'default')), strategy: { tp: 3 } }), false, false, false));
    expect(invalid.ok).toBe(false);
    expect(invalid.error.path).toMatch(/^strategy/);
    const unknown = JSON.parse(mod.preset_text('scenario', 'no-such-scenario'));
    expect(unknown).toMatchObject({ ok: false, error: { code: 'unknown_preset' } });
    // the module still works after errors
    expect(JSON.parse(mod.presets_json()).scenarios.length).toBeGreaterThan(0);
  });
});
