// Lessons: short sequences of steps for a class. Each step sets knobs (a scenario plus
// changes), says what to notice, highlights where to look, and links the paper or chapter
// that explains it. Steps are browser-history entries ("#lesson=<id>&step=<n>"), so
// back/forward walk through them; presenter mode enlarges type and hides the side panel.
import { h, setChildren } from './dom';

export interface LessonStep {
  title: string;
  /** What this step changes, in one or two sentences. */
  text: string;
  /** What to look at on the page. */
  notice: string;
  /** The scenario preset the step starts from, and the knobs it sets (JSON paths). */
  scenario: string;
  set: Record<string, unknown>;
  /** CSS selector of the part of the page to look at (outlined while the step is shown). */
  highlight: string;
  /** Tab to open (timeline, compare, ...). */
  tab?: string;
}

export interface Lesson {
  id: string;
  title: string;
  ref: { title: string; url: string };
  steps: LessonStep[];
}

// Figures quoted in "notice" texts are what the simulator gives for these configs, rounded;
// tests/node/lessons.test.ts simulates every step and checks each quoted figure.
const PIPE = { 'strategy.pp': 4, 'strategy.dp': 2, 'strategy.tp': 4, 'training.global_batch': 16 };
// No pipeline: Megatron-Core shards gradients and weights (ZeRO 2/3) only without one
// (docs/frameworks.md); the default scenario's 32 GPUs as TP 4 × DP 8.
const ZERO = { 'strategy.pp': 1, 'strategy.dp': 8, 'strategy.tp': 4 };

export const LESSONS: Lesson[] = [
  {
    id: 'pipeline',
    title: 'The pipeline bubble and schedules',
    ref: { title: 'Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC21), §2.2', url: 'https://arxiv.org/abs/2104.04473' },
    steps: [
      { title: 'GPipe: all forwards, then all backwards', scenario: 'default', set: { ...PIPE, 'strategy.schedule': 'gpipe', 'strategy.virtual_stages': 1 }, text: 'Four pipeline stages, 8 micro-batches per pipeline. GPipe runs every forward pass, then every backward pass.', notice: 'The shaded (idle) time on the compute lanes: stage 3 waits at the start, stage 0 at the end. The bubble is about a third of the iteration — (p−1)/(m+p−1) = 3/11.', highlight: '#tab-timeline', tab: 'timeline' },
      { title: '1F1B: the same bubble, less memory', scenario: 'default', set: { ...PIPE, 'strategy.schedule': '1f1b', 'strategy.virtual_stages': 1 }, text: 'One forward, one backward: each stage starts backward passes as soon as it can.', notice: 'The iteration time and the bubble do not change, but peak memory per GPU halves: a stage holds at most p micro-batches of activations instead of all m.', highlight: '[data-card="peak_memory_GiB"]', tab: 'timeline' },
      { title: 'More micro-batches shrink the bubble', scenario: 'default', set: { ...PIPE, 'training.global_batch': 64, 'strategy.schedule': '1f1b', 'strategy.virtual_stages': 1 }, text: 'A 4× larger global batch gives 32 micro-batches per pipeline.', notice: 'The idle share in "Where the iteration goes" falls from about 34% to about 20%: the fill and drain cost the same, but the steady part is 4× longer.', highlight: '#split', tab: 'timeline' },
      { title: 'Interleaving: virtual stages', scenario: 'default', set: { ...PIPE, 'strategy.schedule': 'interleaved-1f1b', 'strategy.virtual_stages': 2 }, text: 'Back to 8 micro-batches, now with two model chunks per GPU (interleaved 1F1B).', notice: 'The bubble drops from about 34% to about 26% of the iteration (it shrinks by the number of virtual stages), for twice the pipeline messages: look at the PP lane arrows.', highlight: '#split', tab: 'timeline' },
      { title: 'Zero bubble: weight gradients fill the gaps', scenario: 'default', set: { ...PIPE, 'strategy.schedule': 'zb-h1', 'strategy.virtual_stages': 1 }, text: 'ZB-H1 splits the backward pass into B (input gradients) and W (weight gradients) and moves W into the bubble.', notice: 'W spans (light green) sit where 1F1B left the GPU idle: the bubble falls from about 34% to about 27%. Peak memory stays that of 1F1B (about 15 GiB): the zero-bubble runtime plans its order within the memory of 1F1B, counting the inputs a waiting W keeps. (Qi et al., Zero Bubble Pipeline Parallelism, ICLR 2024.)', highlight: '#tab-timeline', tab: 'timeline' },
    ],
  },
  {
    id: 'zero',
    title: 'ZeRO and memory',
    ref: { title: 'Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models (SC20)', url: 'https://arxiv.org/abs/1910.02054' },
    steps: [
      { title: 'Stage 0: every replica holds everything', scenario: 'default', set: { ...ZERO, 'strategy.zero': 0 }, text: 'Eight data-parallel replicas (TP 4, no pipeline), each with the full weights, gradients and Adam states of its TP shard.', notice: 'In "Memory per GPU", optimizer states (brown) are the largest part: Adam keeps two moments and an fp32 master copy — 12 bytes per parameter. Peak: about 43 GiB.', highlight: '#memory' },
      { title: 'Stage 1: shard the optimizer states', scenario: 'default', set: { ...ZERO, 'strategy.zero': 1 }, text: 'The distributed optimizer: each data-parallel GPU keeps an eighth of the optimizer states.', notice: 'Peak memory almost halves (about 24 GiB), and the iteration time does not change: the traffic is the same reduce-scatter + all-gather that replaces the all-reduce.', highlight: '#memory' },
      { title: 'Stage 2: shard the gradients too', scenario: 'default', set: { ...ZERO, 'strategy.zero': 2 }, text: 'Gradients are reduce-scattered after every micro-batch\'s backward pass; each GPU keeps only its shard.', notice: 'The gradients bar shrinks (peak about 17 GiB); the iteration is about 6% slower: one reduce-scatter per micro-batch instead of one per iteration.', highlight: '#memory' },
      { title: 'Stage 3: shard the weights', scenario: 'default', set: { ...ZERO, 'strategy.zero': 3 }, text: 'Weights are gathered before each layer runs, in the forward and again in the backward pass.', notice: 'Memory is lowest (about 15 GiB), but the iteration is about 12% slower than stage 1: the DP lane of the timeline fills with all-gathers, each layer\'s weights gathered before its forward and again before its backward, and the GPU computes more slowly while they run.', highlight: '#split', tab: 'timeline' },
    ],
  },
  {
    id: 'tp-nodes',
    title: 'Tensor parallelism across nodes',
    ref: { title: 'Shoeybi et al., Megatron-LM (2019) §3; Narayanan et al. (SC21) §3.2: keep tensor parallelism inside a node', url: 'https://arxiv.org/abs/1909.08053' },
    steps: [
      { title: 'TP 4 inside a node', scenario: 'default', set: { model: 'llama2-7b', 'training.seq_len': 4096, 'strategy.tp': 4, 'strategy.dp': 4, 'strategy.pp': 2 }, text: 'Llama 2 7B, each layer split over 4 GPUs of one node (NVSwitch).', notice: 'Click an all-reduce or all-gather on a TP lane: "link: inside one node", and its achieved bandwidth is hundreds of GB/s.', highlight: '#tab-timeline', tab: 'timeline' },
      { title: 'TP 8: the whole node', scenario: 'default', set: { model: 'llama2-7b', 'training.seq_len': 4096, 'strategy.tp': 8, 'strategy.dp': 2, 'strategy.pp': 2 }, text: 'Twice the tensor parallelism: smaller matrices per GPU, twice as many GPUs in every collective.', notice: 'Memory per GPU drops, but exposed communication rises to about a third of the iteration: the GEMMs got smaller, the collectives did not.', highlight: '#split', tab: 'timeline' },
      { title: 'TP 16: across two nodes', scenario: 'default', set: { model: 'llama2-7b', 'training.seq_len': 4096, 'strategy.tp': 16, 'strategy.dp': 1, 'strategy.pp': 2 }, text: 'Now every layer\'s collectives cross the network between nodes.', notice: 'The iteration is about 2.5× slower and exposed communication is about two thirds of it: click a TP collective — "link: network between 2 nodes" and a far lower achieved bandwidth.', highlight: '#split', tab: 'timeline' },
    ],
  },
  {
    id: 'network',
    title: 'A slow or shared network',
    ref: { title: 'Hugging Face, The Ultra-Scale Playbook: Training LLMs on GPU Clusters (2025), "Data parallelism" and "Overlapping communication"', url: 'https://huggingface.co/spaces/nanotron/ultrascale-playbook' },
    steps: [
      { title: '8 × 400 Gb/s per node', scenario: 'default', set: {}, text: 'The default cluster: every GPU has its own 50 GB/s InfiniBand NIC.', notice: 'Data-parallel gradient traffic (DP lane) mostly hides behind the backward pass; exposed communication is about 16%.', highlight: '#split', tab: 'timeline' },
      { title: 'A quarter of the bandwidth', scenario: 'default', set: { 'cluster.inter_node.nic_GBps': 12.5 }, text: 'Each NIC at 100 Gb/s — as if other jobs took most of the network.', notice: 'The DP all-reduces get 4× longer on the timeline; the iteration slows only a little while overlap still hides them.', highlight: '#tab-timeline', tab: 'timeline' },
      { title: 'A slow network', scenario: 'default', set: { 'cluster.inter_node.nic_GBps': 3 }, text: '25 Gb/s per NIC, an Ethernet-class network.', notice: 'Now communication no longer fits behind compute: exposed communication almost doubles, to about 30%, and the iteration is about 20% slower.', highlight: '#split' },
      { title: 'One NIC per node', scenario: 'default', set: { 'cluster.inter_node.nics_per_node': 1 }, text: 'Full-speed NICs, but eight GPUs share one.', notice: 'Sharing a NIC costs like a slower NIC: compare the exposed communication with the previous steps (pin them to see the runs side by side).', highlight: '#split' },
    ],
  },
  {
    id: 'recompute',
    title: 'Activation recomputation',
    ref: { title: 'Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (MLSys 2023)', url: 'https://arxiv.org/abs/2205.05198' },
    steps: [
      { title: 'Keep every activation', scenario: 'default', set: { 'strategy.recompute': 'none' }, text: 'Every tensor the backward pass needs is saved in the forward pass.', notice: 'Activations (orange) in "Memory per GPU"; MFU and HFU are equal: no work is repeated.', highlight: '#memory' },
      { title: 'Selective: recompute attention only', scenario: 'default', set: { 'strategy.recompute': 'selective' }, text: 'Only the attention core (cheap to recompute, large to store) is recomputed.', notice: 'Memory is close to the no-recompute case here (flash attention already stores little); HFU rises slightly above MFU.', highlight: '[data-card="mfu"]' },
      { title: 'Full: keep only layer inputs', scenario: 'default', set: { 'strategy.recompute': 'full' }, text: 'Each layer reruns its forward pass during the backward pass.', notice: 'Peak memory falls by about 40%, the iteration is about 25% slower (Korthikanti et al. timed a 22B layer at 27.2 ms against 20.3 ms with selective recompute; the embedding, output layer and loss are not rerun): the rerun forward repeats its tensor-parallel communication too; purple R spans appear before each backward on the timeline; HFU counts the extra work, MFU does not.', highlight: '[data-card="peak_memory_GiB"]', tab: 'timeline' },
    ],
  },
  {
    id: 'context',
    title: 'Context parallelism for long sequences',
    ref: { title: 'Liu et al., Ring Attention with Blockwise Transformers (ICLR 2024); NVIDIA Megatron-Core context parallelism', url: 'https://arxiv.org/abs/2310.01889' },
    steps: [
      { title: '32K tokens, no context parallelism', scenario: 'default', set: { 'training.seq_len': 32768, 'strategy.cp': 1, 'strategy.dp': 4 }, text: 'Sequences 4× longer than the default: activations grow with the sequence, attention time with its square.', notice: 'Peak memory per GPU is about 43 GiB, mostly activations.', highlight: '#memory' },
      { title: 'CP 2: split each sequence over two GPUs', scenario: 'default', set: { 'training.seq_len': 32768, 'strategy.cp': 2, 'strategy.dp': 2 }, text: 'Each GPU holds half of every sequence; keys and values travel around a ring.', notice: 'Activation memory about halves while the iteration time barely changes: the ring exchange overlaps the attention math.', highlight: '#memory' },
      { title: 'CP 4', scenario: 'default', set: { 'training.seq_len': 32768, 'strategy.cp': 4, 'strategy.dp': 1 }, text: 'A quarter of each sequence per GPU.', notice: 'Memory falls again; exposed communication starts to grow as the chunks get smaller.', highlight: '#split' },
    ],
  },
  {
    id: 'moe',
    title: 'Mixture of experts and all-to-all',
    ref: { title: 'Lepikhin et al., GShard (2020); Fedus et al., Switch Transformers (JMLR 2022)', url: 'https://arxiv.org/abs/2006.16668' },
    steps: [
      { title: 'Every GPU holds every expert', scenario: 'mixtral-8x7b-ep', set: { 'strategy.ep': 1 }, text: 'Mixtral 8×7B with expert parallelism 1: each data-parallel GPU keeps all 8 experts of every layer.', notice: 'Out of memory: about 180 GiB per GPU, most of it expert weights and their optimizer states.', highlight: '[data-card="peak_memory_GiB"]' },
      { title: 'Expert parallelism 8', scenario: 'mixtral-8x7b-ep', set: { 'strategy.ep': 8 }, text: 'Each of 8 GPUs keeps one expert per layer; tokens travel to their expert and back.', notice: 'Memory fits (about 69 GiB). Search the timeline for "dispatch": the all-to-all spans (pink) that send tokens to their experts and bring them back, in every MoE layer.', highlight: '#tab-timeline', tab: 'timeline' },
      { title: 'All-to-all over a slow network', scenario: 'mixtral-8x7b-ep', set: { 'strategy.ep': 8, 'cluster.inter_node.nic_GBps': 12.5 }, text: 'The same, with a quarter of the network bandwidth.', notice: 'The all-to-alls cross nodes and sit on the critical path: exposed communication jumps to about 39% and MFU drops from about 50% to about 37%.', highlight: '#split', tab: 'timeline' },
    ],
  },
];

export function findLesson(id: string): Lesson | undefined {
  return LESSONS.find((l) => l.id === id);
}

/** The lesson panel: title, step text, what to notice, reference, previous/next. */
export class LessonPanel {
  readonly root = h('section', { class: 'lesson', id: 'lesson-panel', 'aria-label': 'Lesson', hidden: true });
  private highlighted: Element | null = null;
  private selector: string | null = null;

  constructor(
    private readonly go: (lesson: string, step: number) => void,
    private readonly close: () => void,
    private readonly togglePresenter: () => void,
  ) {}

  show(lesson: Lesson, step: number): void {
    const s = lesson.steps[step];
    const n = lesson.steps.length;
    this.root.hidden = false;
    this.root.dataset.lesson = lesson.id;
    this.root.dataset.step = String(step);
    setChildren(
      this.root,
      h(
        'div',
        { class: 'lesson-head' },
        h('span', { class: 'lesson-name' }, `Lesson: ${lesson.title}`),
        h('span', { class: 'lesson-count' }, `step ${step + 1} of ${n}`),
        h('button', { class: 'small', type: 'button', id: 'presenter', onclick: () => this.togglePresenter(), title: 'Large type, side panel hidden (P)' }, 'Presenter mode'),
        h('button', { class: 'small ghost', type: 'button', 'aria-label': 'Close the lesson', onclick: () => this.close() }, '×'),
      ),
      h('h2', { class: 'lesson-title' }, s.title),
      h('p', { class: 'lesson-text' }, s.text),
      h('p', { class: 'lesson-notice' }, h('b', null, 'Notice: '), s.notice),
      h(
        'div',
        { class: 'lesson-nav' },
        h('button', { type: 'button', id: 'lesson-prev', disabled: step === 0, onclick: () => this.go(lesson.id, step - 1) }, '← Previous'),
        h('button', { type: 'button', id: 'lesson-next', class: 'primary', disabled: step === n - 1, onclick: () => this.go(lesson.id, step + 1) }, 'Next →'),
        h('a', { href: lesson.ref.url, target: '_blank', rel: 'noopener', class: 'lesson-ref' }, `Read: ${lesson.ref.title}`),
      ),
    );
    this.highlight(s.highlight);
  }

  /** Outlines what `selector` names (again after a render replaced the element). */
  highlight(selector: string | null = this.selector): void {
    this.selector = selector;
    this.highlighted?.classList.remove('lesson-highlight');
    this.highlighted = selector ? document.querySelector(selector) : null;
    this.highlighted?.classList.add('lesson-highlight');
  }

  hide(): void {
    this.root.hidden = true;
    this.highlight(null);
  }
}
