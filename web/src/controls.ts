// The sidebar: every input of the config, each with a one-sentence explanation of what it
// does and what it costs, and a place for the core's error message about it.
import { getPath, presetOf, type Config } from './config_model';
import { h } from './dom';
import type { PresetList } from './protocol';
import { fractionToPercent, percentToFraction } from './percent';
import type { ErrorInfo } from './result';
import { explainSchedule, explainZbPlan, isZeroBubble, scheduleOf, SCHEDULES, ZB_PLANS, type ScheduleInfo } from './schedules';

/** 'percent': a fraction in the config (0.91), shown and typed as a percentage (91); 100 is
 * the core's default and leaves the field unset (percent.ts). */
type Kind = 'int' | 'number' | 'percent' | 'select' | 'bool' | 'model' | 'cluster';

export interface ControlSpec {
  path: string;
  label: string;
  /** Short technical name shown beside the label. */
  tag?: string;
  help: string;
  kind: Kind;
  options?: [string, string][];
  /** Select: a tooltip per option value. */
  optionTitles?: Record<string, string>;
  /** Select: a line on the chosen value, shown under the control and kept up to date. An
   * option whose value is '' leaves the field unset (the core's default). */
  explain?: (value: string, config: Config, resolved: Config | null) => string;
  /** Shown only while this holds, or while the config sets the field (so that the core's
   * error about it has a place, and the value can be unset). */
  shownWhen?: (config: Config, resolved: Config | null) => boolean;
  min?: number;
  max?: number;
  step?: number;
}

export interface Section {
  id: string;
  title: string;
  intro?: string;
  controls: ControlSpec[];
}

/** A select's options and their tooltips from a list of explained choices (schedules, zb_plan). */
function explainedChoices(list: readonly ScheduleInfo[]): Pick<ControlSpec, 'options' | 'optionTitles'> {
  return {
    options: list.map((c) => [c.value, c.label]),
    optionTitles: Object.fromEntries(list.map((c) => [c.value, c.explain])),
  };
}

export const SECTIONS: Section[] = [
  {
    id: 'setup',
    title: 'Model, cluster and batch',
    controls: [
      { path: 'model', label: 'Model', kind: 'model', help: 'The network to train: more parameters need more GPUs, memory and communication.' },
      { path: 'cluster', label: 'Cluster', kind: 'cluster', help: 'The machines: GPU type, links inside a node (NVLink or PCIe) and the network between nodes.' },
      { path: 'cluster.nodes', label: 'Nodes', kind: 'int', min: 1, max: 100000, help: 'Servers in the cluster: more nodes add GPUs, but traffic between nodes crosses the slower network.' },
      {
        path: 'cluster.gpu.compute_throughput_fraction',
        label: 'GPU compute',
        tag: '% of preset',
        kind: 'percent',
        min: 1,
        max: 100,
        step: 1,
        help: "Share of the preset GPU's compute speed it sustains, e.g. under a lower power limit (lower SM clock): an H100 at 500 W runs GEMMs at 91% of a 700 W one (measured). Slows GEMMs and attention; memory-bound kernels, launches and links keep their speed.",
      },
      {
        path: 'training.precision',
        label: 'Precision',
        kind: 'select',
        options: [
          ['fp32', 'fp32'],
          ['tf32', 'tf32'],
          ['fp16', 'fp16 (mixed)'],
          ['bf16', 'bf16 (mixed)'],
          ['fp8', 'fp8 (mixed)'],
        ],
        help: 'Number format of the math: lower precision runs faster on tensor cores and halves activations, but keeps fp32 master weights.',
      },
      { path: 'training.global_batch', label: 'Global batch', tag: 'samples', kind: 'int', min: 1, help: 'Samples per optimizer step: a larger batch gives the pipeline more micro-batches, but changes how training converges.' },
      { path: 'training.seq_len', label: 'Sequence length', tag: 'tokens', kind: 'int', min: 1, help: 'Tokens per sample: activation memory grows with it, attention time with its square.' },
    ],
  },
  {
    id: 'strategy',
    title: 'Parallelism',
    intro: 'The GPUs form a grid dp × tp × pp × cp that must use every GPU of the cluster.',
    controls: [
      { path: 'strategy.dp', label: 'Data parallel', tag: 'dp', kind: 'int', min: 1, help: 'Full replicas that split the batch: each adds a gradient all-reduce and a whole copy of the model state (unless ZeRO).' },
      { path: 'strategy.tp', label: 'Tensor parallel', tag: 'tp', kind: 'int', min: 1, help: "Splits each layer's matrices across GPUs: less memory per GPU, but collectives inside every layer, so keep it within a node." },
      { path: 'strategy.pp', label: 'Pipeline parallel', tag: 'pp', kind: 'int', min: 1, help: 'Splits the layers into stages on different GPUs: little traffic, but GPUs idle (the bubble) while the pipeline fills and drains.' },
      { path: 'strategy.cp', label: 'Context parallel', tag: 'cp', kind: 'int', min: 1, help: 'Splits each sequence across GPUs for long contexts: less activation memory, at the cost of exchanging attention keys and values.' },
      { path: 'strategy.ep', label: 'Expert parallel', tag: 'ep', kind: 'int', min: 1, help: 'For mixture-of-experts models, spreads the experts over data-parallel GPUs: less memory, two all-to-alls per MoE layer.' },
      { path: 'strategy.micro_batch', label: 'Micro-batch', tag: 'samples', kind: 'int', min: 1, help: 'Samples per forward/backward pass: bigger keeps the GPU busier, but holds more activations and leaves fewer micro-batches to hide the bubble.' },
    ],
  },
  {
    id: 'schedule',
    title: 'Pipeline schedule and memory',
    controls: [
      {
        path: 'strategy.schedule',
        label: 'Schedule',
        kind: 'select',
        ...explainedChoices(SCHEDULES),
        explain: explainSchedule,
        help: 'Order of the passes in the pipeline. Picking one sets what it needs: virtual stages for interleaving, enough micro-batches (global batch) for interleaving and DualPipeV.',
      },
      {
        path: 'strategy.zb_plan',
        label: 'Zero-bubble plan',
        tag: 'zb_plan',
        kind: 'select',
        ...explainedChoices(ZB_PLANS),
        explain: explainZbPlan,
        shownWhen: (config, resolved) => isZeroBubble(scheduleOf(config, resolved)),
        help: 'How the zero-bubble runtime orders the F, B and W passes: re-planned from the pass times a first play measured, or the static unit-time order. Other schedules drop it.',
      },
      { path: 'strategy.virtual_stages', label: 'Virtual stages', tag: 'per GPU', kind: 'int', min: 1, help: 'Model chunks per GPU for the interleaved schedule: more chunks shrink the bubble but send more pipeline messages.' },
      { path: 'strategy.sequence_parallel', label: 'Sequence parallel', kind: 'bool', help: 'Splits norms and dropout along the sequence over the TP group: less activation memory for the same traffic.' },
      {
        path: 'strategy.zero',
        label: 'ZeRO stage',
        kind: 'select',
        options: [
          ['0', '0: replicate everything'],
          ['1', '1: shard optimizer states'],
          ['2', '2: + shard gradients'],
          ['3', '3: + shard weights'],
        ],
        help: 'Shards model state across data-parallel GPUs: stage 1–2 save memory for free, stage 3 adds weight all-gathers in every pass.',
      },
      {
        path: 'strategy.recompute',
        label: 'Recompute',
        kind: 'select',
        options: [
          ['none', 'none: keep all activations'],
          ['selective', 'selective: recompute attention'],
          ['full', 'full: keep only layer inputs'],
        ],
        help: 'Drops activations in the forward pass and recomputes them in the backward: saves memory for extra compute (full costs about one more forward). Selective is Megatron\'s attention recompute, or under the FSDP framework TorchTitan\'s op policy: every second linear of a layer and its cheap ops again, attention kept.',
      },
    ],
  },
  {
    id: 'network',
    title: 'Network between nodes',
    controls: [
      { path: 'cluster.inter_node.nic_GBps', label: 'NIC bandwidth', tag: 'GB/s each', kind: 'number', min: 0.1, step: 1, help: 'Bandwidth of one network card (400 Gb/s InfiniBand NDR is 50 GB/s): data-parallel, pipeline and cross-node collectives ride on it.' },
      { path: 'cluster.inter_node.nics_per_node', label: 'NICs per node', kind: 'int', min: 1, max: 64, help: 'Network cards per server: fewer cards than GPUs means GPUs share a card and its bandwidth.' },
    ],
  },
  {
    id: 'overlap',
    title: 'Communication overlap',
    controls: [
      { path: 'strategy.overlap_grad_reduce', label: 'Overlap gradient reduce', kind: 'bool', help: 'Starts reducing gradients while the backward pass still runs, hiding data-parallel traffic behind compute. DeepSpeed can only at ZeRO-1/2 without a pipeline (its overlap_comm, off by default) and at ZeRO-3 (on); otherwise it reduces after the backward.' },
      { path: 'strategy.overlap_param_gather', label: 'Overlap weight gather', kind: 'bool', help: "With ZeRO, gathers the next layer's weights while the current one computes. DeepSpeed's ZeRO-1/2 gather them inside the optimizer step instead." },
      { path: 'strategy.grad_bucket_MB', label: 'Gradient bucket', tag: 'MB', kind: 'number', min: 0, step: 5, help: 'Gradients are reduced in buckets of this size: small buckets start sooner but pay latency on every message. Unset, each framework\'s own: Megatron 40M parameters or more (one bucket without overlap, shown as 1000000), DeepSpeed 5e8 elements, PyTorch DDP 25 MB.' },
    ],
  },
];

export const ALL_CONTROLS: ControlSpec[] = SECTIONS.flatMap((s) => s.controls);

/** The control an error path belongs to: the longest control path that prefixes it. */
export function controlForPath(path: string, controls: readonly ControlSpec[] = ALL_CONTROLS): string | null {
  const clean = path.replace(/\[\d+\]/g, '');
  let best: string | null = null;
  for (const c of controls) {
    if (clean === c.path || clean.startsWith(c.path + '.')) if (!best || c.path.length > best.length) best = c.path;
  }
  return best;
}

interface Bound {
  spec: ControlSpec;
  input: HTMLInputElement | HTMLSelectElement;
  error: HTMLElement;
  box: HTMLElement;
  /** The line on the chosen value (spec.explain), if the control has one. */
  explain: HTMLElement | null;
}

export class Controls {
  private readonly bound = new Map<string, Bound>();
  private readonly sectionErrors = new Map<string, HTMLElement>();
  readonly generalError: HTMLElement;
  readonly keepGpus: HTMLInputElement;

  constructor(
    root: HTMLElement,
    presets: PresetList,
    private readonly onChange: (path: string, value: unknown) => void,
  ) {
    this.generalError = h('div', { class: 'ctl-error general', role: 'alert', hidden: true });
    this.keepGpus = h('input', { type: 'checkbox', id: 'keep-gpus', checked: true });
    root.append(this.generalError);
    for (const section of SECTIONS) {
      const secError = h('div', { class: 'ctl-error', role: 'alert', hidden: true, 'data-error-for': section.id });
      this.sectionErrors.set(section.id, secError);
      const body = h('div', { class: 'section-body' });
      const sec = h('section', { class: 'ctl-section', id: `sec-${section.id}` }, h('h2', null, section.title));
      if (section.intro) sec.append(h('p', { class: 'section-intro' }, section.intro));
      if (section.id === 'strategy')
        sec.append(
          h(
            'label',
            { class: 'keep-gpus', title: 'When tp, pp, cp or the node count change, set dp so that every GPU is used.' },
            this.keepGpus,
            ' Keep all GPUs busy: adjust dp when tp, pp, cp or nodes change',
          ),
        );
      sec.append(secError, body);
      for (const spec of section.controls) body.append(this.build(spec, presets));
      root.append(sec);
    }
  }

  private build(spec: ControlSpec, presets: PresetList): HTMLElement {
    const id = `ctl-${spec.path.replace(/\./g, '-')}`;
    let input: HTMLInputElement | HTMLSelectElement;
    if (spec.kind === 'bool') {
      input = h('input', { type: 'checkbox', id, name: spec.path });
    } else if (spec.kind === 'int' || spec.kind === 'number' || spec.kind === 'percent') {
      input = h('input', { type: 'number', id, name: spec.path, min: spec.min, max: spec.max, step: spec.step ?? 1, inputmode: spec.kind === 'percent' ? 'decimal' : 'numeric' });
    } else {
      const sel = h('select', { id, name: spec.path });
      const options: [string, string][] =
        spec.kind === 'model'
          ? presets.models.map((m) => [m.name, m.title ? `${m.title}` : m.name])
          : spec.kind === 'cluster'
            ? presets.clusters.map((c) => [c.name, c.title ? `${c.title}` : c.name])
            : (spec.options ?? []);
      for (const [v, label] of options) sel.append(h('option', { value: v, title: spec.optionTitles?.[v] }, label));
      input = sel;
    }
    const error = h('p', { class: 'ctl-error', role: 'alert', hidden: true, 'data-error-for': spec.path });
    const explain = spec.explain ? h('p', { class: 'ctl-help ctl-explain', 'aria-live': 'polite' }) : null;
    const labelEl = h('label', { for: id }, spec.label, spec.tag ? h('span', { class: 'ctl-tag' }, spec.tag) : null);
    const box =
      spec.kind === 'bool'
        ? h('div', { class: 'ctl ctl-bool', 'data-path': spec.path }, h('div', { class: 'ctl-row' }, input, labelEl), h('p', { class: 'ctl-help' }, spec.help), error)
        : h('div', { class: `ctl${spec.kind === 'model' || spec.kind === 'cluster' ? ' ctl-wide' : ''}`, 'data-path': spec.path }, h('div', { class: 'ctl-row' }, labelEl, input), explain, h('p', { class: 'ctl-help' }, spec.help), error);
    input.addEventListener('change', () => this.onChange(spec.path, this.read(spec, input)));
    this.bound.set(spec.path, { spec, input, error, box, explain });
    return box;
  }

  private read(spec: ControlSpec, input: HTMLInputElement | HTMLSelectElement): unknown {
    if (spec.kind === 'bool') return (input as HTMLInputElement).checked;
    if (spec.kind === 'int' || spec.kind === 'number' || spec.kind === 'percent') {
      const v = Number((input as HTMLInputElement).value);
      if ((input as HTMLInputElement).value.trim() === '' || !Number.isFinite(v)) return undefined;
      if (spec.kind === 'percent') return percentToFraction(v);
      return spec.kind === 'int' ? Math.round(v) : v;
    }
    if (spec.path === 'strategy.zero') return Number(input.value);
    return input.value === '' ? undefined : input.value;
  }

  /** Shows the values of `config`, falling back to the resolved config for defaults. */
  update(config: Config, resolved: Config | null): void {
    for (const { spec, input, box } of this.bound.values()) {
      if (spec.shownWhen) box.hidden = !spec.shownWhen(config, resolved) && getPath(config, spec.path) === undefined;
      let v: unknown;
      if (spec.kind === 'model' || spec.kind === 'cluster') {
        const entry = config[spec.path];
        const name = presetOf(entry);
        const sel = input as HTMLSelectElement;
        const custom = sel.querySelector('option[data-custom]');
        if (name && [...sel.options].some((o) => o.value === name)) {
          custom?.remove();
          sel.value = name;
        } else {
          const label = `(custom: ${resolved?.[spec.path]?.name ?? (name || 'from JSON')})`;
          let opt = custom as HTMLOptionElement | null;
          if (!opt) {
            opt = h('option', { value: '__custom__', 'data-custom': '1' });
            sel.prepend(opt);
          }
          opt.textContent = label;
          sel.value = '__custom__';
        }
        continue;
      }
      v = getPath(config, spec.path);
      if (v === undefined && resolved) v = getPath(resolved, spec.path);
      const explain = this.bound.get(spec.path)?.explain;
      if (explain && spec.explain) explain.textContent = spec.explain(String(v ?? ''), config, resolved);
      if (document.activeElement === input) continue;
      if (spec.kind === 'bool') (input as HTMLInputElement).checked = Boolean(v);
      // unset: the core's default, the preset's whole throughput (the resolved config omits it)
      else if (spec.kind === 'percent') input.value = v === undefined || v === null ? '100' : typeof v === 'number' ? String(fractionToPercent(v)) : String(v);
      else input.value = v === undefined || v === null ? '' : String(v);
    }
  }

  /** Shows `err` next to the control its path names (or above the sections); null clears.
   * `fix`, when given, becomes a one-click button beside the message. */
  showError(err: ErrorInfo | null, changed: string | null = null, fix?: { label: string; path: string; value: unknown }): string | null {
    const where = this.placeError(err, changed);
    if (err && fix) {
      const box = (where && this.bound.get(where)?.error) || (where && this.sectionErrors.get(where)) || this.generalError;
      box.append(' ', h('button', { type: 'button', class: 'small fix-btn', onclick: () => this.onChange(fix.path, fix.value) }, fix.label));
    }
    return where;
  }

  private placeError(err: ErrorInfo | null, changed: string | null): string | null {
    for (const b of this.bound.values()) {
      b.error.hidden = true;
      b.error.textContent = '';
      b.box.classList.remove('invalid');
    }
    for (const e of [...this.sectionErrors.values(), this.generalError]) {
      e.hidden = true;
      e.textContent = '';
    }
    if (!err) return null;
    const target = controlForPath(err.path);
    // The control the user just changed also says that its change caused the problem.
    const cause = changed ? this.bound.get(changed) : undefined;
    if (cause && changed !== target) {
      const where = target ? this.bound.get(target)!.spec.label : 'the configuration';
      cause.error.textContent = `This value conflicts with ${where}: ${err.message}`;
      cause.error.hidden = false;
      cause.box.classList.add('invalid');
    }
    if (target) {
      const b = this.bound.get(target)!;
      b.error.textContent = err.message;
      b.error.hidden = false;
      b.box.classList.add('invalid');
      return target;
    }
    const section = err.path.startsWith('strategy') ? 'strategy' : err.path.startsWith('training') ? 'setup' : null;
    const box = section ? this.sectionErrors.get(section)! : this.generalError;
    box.textContent = err.path ? `${err.path}: ${err.message}` : err.message;
    box.hidden = false;
    return section;
  }
}
