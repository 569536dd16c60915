// The page's handle on a simulation worker: promise-based calls, and cancel() that
// terminates the worker (a simulation cannot be interrupted from inside) and starts a
// fresh one from the already-compiled module.
import type { Answers, CallMessage, InitMessage, LoadMessage, Op, WorkerReply } from './protocol';
import type { ErrorInfo } from './result';

export class CallError extends Error {
  constructor(readonly info: ErrorInfo) {
    super(info.message);
  }
}

export const CANCELLED: ErrorInfo = { code: 'cancelled', path: '', message: 'cancelled' };

type Pending = { resolve: (v: any) => void; reject: (e: CallError) => void; progress?: Progress };

/** Told how far a simulation is: tasks ended, of all its tasks. */
export type Progress = (done: number, total: number) => void;

export class Engine {
  private worker!: Worker;
  private ready!: Promise<string>;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  version = '';
  /** When the worker imported its loader and instantiated the module (ms on the page's clock). */
  startup: { loader: number; ready: number } | null = null;
  /** Calls made, by op (tests count simulations per change with it). */
  readonly calls: Record<string, number> = {};

  /**
   * `module` may still be compiling: the worker starts at once and imports the loader
   * meanwhile, so that worker start-up and compilation overlap (first result sooner).
   */
  constructor(
    private readonly module: Promise<WebAssembly.Module>,
    private readonly loaderUrl: string,
  ) {
    this.start();
  }

  private start(): void {
    const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' });
    this.worker = worker;
    let started = false;
    let failStart: (e: CallError) => void = () => {};
    this.ready = new Promise<string>((resolve, reject) => {
      failStart = reject;
      worker.onmessage = (ev: MessageEvent<WorkerReply>) => {
        const m = ev.data;
        if (m.type === 'ready') {
          this.version = m.version;
          this.startup = { loader: m.loaderAt - performance.timeOrigin, ready: m.readyAt - performance.timeOrigin };
          started = true;
          resolve(m.version);
        } else if (m.type === 'fatal') {
          const err = new CallError({ code: 'internal', path: '', message: m.message });
          reject(err);
          this.failAll(err);
        } else if (m.type === 'progress') {
          this.pending.get(m.id)?.progress?.(m.done, m.total);
        } else if (m.type === 'reply') {
          const p = this.pending.get(m.id);
          if (!p) return;
          this.pending.delete(m.id);
          if (m.ok) p.resolve(m.value);
          else p.reject(new CallError(m.error));
          if (!m.ok && m.error.code === 'crashed') this.restart();
        }
      };
      worker.onerror = (ev) => {
        const err = new CallError({ code: 'crashed', path: '', message: `the simulator crashed (${ev.message || 'worker error'}); it was restarted` });
        reject(err);
        this.failAll(err);
        if (started) {
          worker.terminate();
          this.start(); // a worker that never started is not retried in a loop
        }
      };
    });
    this.ready.catch(() => {});
    worker.postMessage({ type: 'load', loaderUrl: this.loaderUrl } satisfies LoadMessage);
    this.module.then(
      (module) => {
        if (this.worker === worker) worker.postMessage({ type: 'init', module } satisfies InitMessage);
      },
      (e: unknown) => {
        worker.terminate();
        const err = new CallError({ code: 'internal', path: '', message: `the simulator could not be compiled: ${String(e)}` });
        failStart(err);
        this.failAll(err);
      },
    );
  }

  whenReady(): Promise<string> {
    return this.ready;
  }

  /** True while a call is in flight. */
  get busy(): boolean {
    return this.pending.size > 0;
  }

  call<K extends Op['op']>(op: Extract<Op, { op: K }>, progress?: Progress): Promise<Answers[K]> {
    this.calls[op.op] = (this.calls[op.op] ?? 0) + 1;
    // Posted at once, even before the worker is ready: it queues calls until its module is
    // instantiated, so the first answers come without a round trip after start-up.
    const id = this.nextId++;
    return new Promise<Answers[K]>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, progress });
      this.worker.postMessage({ type: 'call', id, ...op } as CallMessage);
    });
  }

  /** Stops whatever runs now: pending calls fail with code "cancelled". */
  cancel(): void {
    if (this.pending.size === 0) return;
    this.restart();
  }

  private restart(): void {
    this.worker.terminate();
    this.failAll(new CallError(CANCELLED));
    this.start();
  }

  private failAll(err: CallError): void {
    const p = [...this.pending.values()];
    this.pending.clear();
    for (const x of p) x.reject(err);
  }

  dispose(): void {
    this.worker.terminate();
    this.failAll(new CallError(CANCELLED));
  }
}

/** Compiles the .wasm once (streaming where the server sends application/wasm). `marks`
 *  gets when the response arrived (`fetched`) and the module was compiled (`compiled`). */
export async function compileModule(wasmUrl: string, marks: Record<string, number> = {}): Promise<WebAssembly.Module> {
  const res = await fetch(wasmUrl);
  marks.fetched = performance.now();
  if (!res.ok) throw new Error(`could not load ${wasmUrl}: HTTP ${res.status}`);
  let module: WebAssembly.Module | null = null;
  if ((res.headers.get('content-type') ?? '').includes('application/wasm')) {
    try {
      module = await WebAssembly.compileStreaming(res.clone());
    } catch {
      /* fall back below */
    }
  }
  module ??= await WebAssembly.compile(await res.arrayBuffer());
  marks.compiled = performance.now();
  return module;
}
