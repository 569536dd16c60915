// Every figure a lesson step quotes ("about 23 GiB", "about 15% slower", ...) against the
// simulator: each step's config (its scenario preset with the step's knobs set, as the page
// builds it) is simulated in the WebAssembly module, whose results equal the native CLI's
// (parity.test.ts). A cost change that moves a figure fails here, and the text is updated.
import { beforeAll, describe, expect, it } from 'vitest';
import { setPath } from '../../src/config_model';
import { LESSONS } from '../../src/lessons';
import { loadModule, type ProteusModule } from '../support/module';

type Summary = Record<string, number | boolean>;

/** |got − quoted| ≤ tolerance: "about" in a text is the rounded figure. */
function about(got: unknown, quoted: number, tolerance: number, what: string): void {
  expect(Math.abs(Number(got) - quoted), `${what}: ${got}, the text says about ${quoted}`).toBeLessThanOrEqual(tolerance);
}

describe('lesson figures', () => {
  const s: Record<string, Summary> = {};
  beforeAll(async () => {
    const mod: ProteusModule = await loadModule();
    for (const lesson of LESSONS)
      lesson.steps.forEach((step, i) => {
        let config = JSON.parse(mod.preset_text('scenario', step.scenario));
        for (const [path, value] of Object.entries(step.set)) config = setPath(config, path, value);
        const r = JSON.parse(mod.simulate_json(JSON.stringify(config), false, false, false));
        if (!r.ok) throw new Error(`${lesson.id} step ${i + 1} does not run: ${r.error.path}: ${r.error.message}`);
        s[`${lesson.id}-${i}`] = r.summary;
      });
  }, 300_000);
  const t = (k: string) => Number(s[k].iteration_time_s);
  const mem = (k: string) => Number(s[k].peak_memory_GiB);

  it('pipeline: bubble and memory of GPipe, 1F1B, more micro-batches, interleaving, ZB-H1', () => {
    // GPipe, p = 4, m = 8: (p−1)/(m+p−1) = 3/11 = 27% of pure compute idles; with the
    // transfers, the optimizer step and the last stage's fp32 loss (52 bytes per logit of the
    // 128K vocabulary) "about a third" of the iteration.
    about(s['pipeline-0'].bubble_fraction, 0.34, 0.03, 'GPipe bubble');
    expect(Number(s['pipeline-0'].bubble_fraction)).toBeGreaterThanOrEqual(3 / 11 - 0.01);
    about(t('pipeline-1') / t('pipeline-0'), 1, 0.01, '1F1B time / GPipe time'); // "do not change"
    expect(mem('pipeline-1')).toBeLessThanOrEqual(0.6 * mem('pipeline-0')); // "halves": p of m micro-batches held
    about(s['pipeline-2'].bubble_fraction, 0.2, 0.02, 'bubble with 32 micro-batches');
    about(s['pipeline-3'].bubble_fraction, 0.26, 0.02, 'interleaved bubble');
    about(s['pipeline-4'].bubble_fraction, 0.27, 0.02, 'ZB-H1 bubble');
    // "stays 1F1B's": the runtime's planner holds at most p forwards, a waiting W counted.
    about(mem('pipeline-4'), 15, 1, 'ZB-H1 peak GiB');
    expect(mem('pipeline-4')).toBeLessThanOrEqual(mem('pipeline-1') * 1.001);
    about(mem('pipeline-1'), 15, 1, '1F1B peak GiB');
  });

  it('zero: memory falls stage by stage; stage 3 costs time', () => {
    about(mem('zero-0'), 43, 1, 'ZeRO-0 peak GiB');
    about(mem('zero-1'), 24, 1, 'ZeRO-1 peak GiB');
    expect(mem('zero-1')).toBeLessThan(0.6 * mem('zero-0')); // "almost halves"
    about(t('zero-1') / t('zero-0'), 1, 0.02, 'ZeRO-1 time / ZeRO-0 time'); // "does not change"
    about(mem('zero-2'), 17, 1, 'ZeRO-2 peak GiB');
    about(t('zero-2') / t('zero-1'), 1.06, 0.02, 'ZeRO-2 time / ZeRO-1 time');
    about(mem('zero-3'), 15, 1, 'ZeRO-3 peak GiB');
    about(t('zero-3') / t('zero-1'), 1.12, 0.03, 'ZeRO-3 time / ZeRO-1 time');
  });

  it('tp-nodes: TP 8 exposes a third, TP 16 across nodes is 2.5× slower', () => {
    expect(mem('tp-nodes-1')).toBeLessThan(mem('tp-nodes-0'));
    about(s['tp-nodes-1'].exposed_comm_fraction, 1 / 3, 0.04, 'TP 8 exposed communication');
    about(t('tp-nodes-2') / t('tp-nodes-1'), 2.5, 0.15, 'TP 16 time / TP 8 time');
    about(s['tp-nodes-2'].exposed_comm_fraction, 2 / 3, 0.04, 'TP 16 exposed communication');
  });

  it('network: a quarter of the bandwidth costs little, a slow network a lot', () => {
    about(s['network-0'].exposed_comm_fraction, 0.16, 0.01, 'default exposed communication');
    about(t('network-1') / t('network-0'), 1, 0.05, '12.5 GB/s time / 50 GB/s time'); // "only a little"
    about(s['network-2'].exposed_comm_fraction, 0.30, 0.01, '3 GB/s exposed communication');
    expect(Number(s['network-2'].exposed_comm_fraction)).toBeGreaterThan(1.7 * Number(s['network-0'].exposed_comm_fraction)); // "almost doubles"
    about(t('network-2') / t('network-0'), 1.2, 0.03, '3 GB/s time / 50 GB/s time');
  });

  it('recompute: selective keeps memory, full cuts it by about 40% for about 25% time', () => {
    expect(s['recompute-0'].hfu).toBe(s['recompute-0'].mfu); // nothing recomputed
    about(mem('recompute-1') / mem('recompute-0'), 1, 0.02, 'selective / no recompute memory');
    expect(Number(s['recompute-1'].hfu)).toBeGreaterThan(Number(s['recompute-1'].mfu));
    about(mem('recompute-2') / mem('recompute-1'), 0.6, 0.03, 'full / selective memory'); // "falls by about 40%"
    about(t('recompute-2') / t('recompute-1'), 1.25, 0.03, 'full / selective time');
  });

  it('context: CP halves activation memory at the same time; CP 4 exposes more', () => {
    about(mem('context-0'), 43, 1, '32K tokens peak GiB');
    expect(mem('context-1')).toBeLessThan((2 / 3) * mem('context-0'));
    about(t('context-1') / t('context-0'), 1, 0.02, 'CP 2 time / CP 1 time'); // "barely changes"
    expect(mem('context-2')).toBeLessThan(mem('context-1'));
    expect(Number(s['context-2'].exposed_comm_fraction)).toBeGreaterThan(Number(s['context-1'].exposed_comm_fraction));
  });

  it('moe: EP 1 does not fit, EP 8 fits, a slow network exposes the all-to-alls', () => {
    expect(s['moe-0'].oom).toBe(true);
    about(mem('moe-0'), 180, 5, 'EP 1 peak GiB');
    expect(s['moe-1'].oom).toBe(false);
    about(mem('moe-1'), 69, 1, 'EP 8 peak GiB');
    about(s['moe-2'].exposed_comm_fraction, 0.39, 0.015, 'slow-network exposed communication');
    about(s['moe-1'].mfu, 0.50, 0.01, 'EP 8 MFU');
    about(s['moe-2'].mfu, 0.37, 0.01, 'slow-network MFU');
  });
});
