// docloupe's JS API:
//
//   import { Docloupe } from 'docloupe';
//   const engine = await Docloupe.open({ bundle: '/docs.bundle', models: { embedding: {...} } });
//   const response = await engine.search({ query: 'cache size' });   // or an error object
//   engine.close();
//
// The engine runs in a Web Worker (the page's thread never runs a search) and falls back to
// the calling thread where module workers are unavailable (Node, old browsers, a CSP that
// forbids them). Responses and errors are the contract's objects, as the native CLI prints
// them; `search` never rejects.
import { Host, asContractError as errorOf, contractError } from './host.js';

/** Sources cross into the worker as absolute URLs (a worker resolves relative ones against itself). */
function absolute(source) {
  if (typeof source !== 'string' && !(source instanceof URL)) return source;
  return new URL(source, globalThis.location?.href ?? import.meta.url).href;
}

function absoluteOptions({ bundle, models, wasm, kernels, rerankBudgetMs }) {
  const map = (o) => (o && typeof o === 'object' ? Object.fromEntries(Object.entries(o).map(([k, v]) => [k, absolute(v)])) : o);
  return {
    bundle: absolute(bundle),
    models: models && typeof models === 'object'
      ? { embedding: map(models.embedding), reranker: map(models.reranker) }
      : models,
    wasm: map(wasm),
    kernels,
    rerankBudgetMs,
  };
}

class WorkerEngine {
  #worker;
  #pending = new Map();
  #next = 0;
  #status;
  #listeners;

  constructor(worker, listeners) {
    this.#worker = worker;
    this.#listeners = listeners;
    worker.onmessage = ({ data }) => {
      if (data.op === 'status') return this.#listeners.status(data.value);
      const p = this.#pending.get(data.id);
      if (!p) return;
      this.#pending.delete(data.id);
      (data.ok ? p.resolve : p.reject)(data.value);
    };
    worker.onerror = (event) => {
      event.preventDefault?.();
      const error = contractError('INTERNAL_ERROR', `the search worker failed: ${event.message ?? 'unknown error'}`, {
        reason: 'worker_failed',
      });
      for (const p of this.#pending.values()) p.reject(error);
      this.#pending.clear();
    };
  }

  call(op, arg) {
    let settle;
    const settled = new Promise((r) => (settle = r));
    return new Promise((resolve, reject) => {
      const id = this.#next++;
      const done = (f) => (v) => {
        settle();
        f(v);
      };
      this.#pending.set(id, { resolve: done(resolve), reject: done(reject), settled });
      try {
        this.#worker.postMessage({ id, op, arg });
      } catch (e) {
        // Not structured-cloneable (a function, a DOM node...): it is not a request.
        this.#pending.delete(id);
        reject(contractError('INVALID_REQUEST', `the request cannot be sent to the engine: ${e.message}`, { field: '' }));
      }
    });
  }

  close() {
    this.#worker.terminate();
    for (const p of this.#pending.values()) p.reject(contractError('INTERNAL_ERROR', 'the engine is closed'));
    this.#pending.clear();
  }

  /** Terminates the worker once the calls already sent have been answered. */
  async retire() {
    while (this.#pending.size) {
      await Promise.allSettled([...this.#pending.values()].map((p) => p.settled));
    }
    this.close();
  }
}

class LocalEngine {
  constructor(host) {
    this.host = host;
  }

  call(op, arg) {
    return this.host.call(op, arg);
  }

  close() {
    this.host.close();
  }
}

function startWorker() {
  if (typeof Worker !== 'function') return null;
  try {
    return new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: 'docloupe' });
  } catch {
    return null; // e.g. a CSP without worker-src, or no module workers
  }
}

/** What a closed engine answers. */
class ClosedEngine {
  call() {
    return Promise.reject(contractError('INTERNAL_ERROR', 'the engine is closed'));
  }

  close() {}
}

export class Docloupe {
  #backend;
  #models = null; // the worker loading the models, while it does
  #status = null;
  #listeners = new Set();
  #readyResolve;
  /** Resolves with the status once loading has ended: phase "ready" or "failed". */
  ready;
  /** "worker" or "main-thread". */
  thread;

  constructor(thread) {
    this.thread = thread;
    this.ready = new Promise((resolve) => (this.#readyResolve = resolve));
  }

  /**
   * Loads the bundle and the lexical engine; resolves as soon as fulltext search works.
   * Models (if given) keep loading in the background: see `ready` and `onStatus`.
   * Rejects with the contract's error object: a bundle that cannot be fetched, or is corrupt,
   * truncated or foreign, is DOCS_COLLECTION_UNAVAILABLE with `details.reason`.
   */
  static async open(options = {}) {
    const { worker = true, onStatus } = options;
    const opts = absoluteOptions(options);
    if (worker) {
      const w = startWorker();
      if (w) {
        const engine = new Docloupe('worker');
        if (onStatus) engine.onStatus(onStatus);
        const lexical = new WorkerEngine(w, { status: (s) => engine.#backend === lexical && engine.#update(s) });
        engine.#backend = lexical;
        try {
          const status = await lexical.call('open', { ...opts, stage: 'lexical' });
          engine.#update(status);
          if (status.phase === 'loading-models') engine.#loadModels(opts, lexical);
          return engine;
        } catch (e) {
          lexical.close();
          // A worker that could not even start its module falls back; an engine error is final.
          if (e?.details?.reason !== 'worker_failed') throw errorOf(e);
        }
      }
    }
    const engine = new Docloupe('main-thread');
    if (onStatus) engine.onStatus(onStatus);
    engine.#backend = new LocalEngine(new Host((s) => engine.#update(s)));
    try {
      engine.#update(await engine.#backend.call('open', opts));
    } catch (e) {
      engine.#backend.close();
      throw errorOf(e);
    }
    return engine;
  }

  /**
   * The second stage of progressive loading, in a worker of its own: the full build and the
   * models. The lexical worker answers meanwhile; once the models are in, searches go to the
   * new worker and the lexical one is retired after its last answer. If they fail, the
   * lexical worker stays and says why (phase "failed").
   */
  async #loadModels(opts, lexical) {
    const w = startWorker();
    const models = w && new WorkerEngine(w, { status: (s) => this.#backend === models && this.#update(s) });
    this.#models = models;
    try {
      if (!models) throw contractError('INTERNAL_ERROR', 'no worker for the models');
      const status = await models.call('open', { ...opts, stage: 'models' });
      if (this.#backend !== lexical) return models.close(); // closed meanwhile
      this.#backend = models;
      this.#update(status);
      lexical.retire();
    } catch (e) {
      models?.close();
      if (this.#backend !== lexical) return;
      this.#update(await lexical.call('modelsFailed', errorOf(e)).catch(() => null));
    } finally {
      this.#models = null;
    }
  }

  /** The contract: resolves with the response object or the error object; never rejects. */
  async search(request) {
    try {
      return await this.#backend.call('search', request);
    } catch (e) {
      return errorOf(e);
    }
  }

  /** What is loaded now: {phase, build, documents, chunks, semanticReady, rerankerReady, ...}. */
  status() {
    return { ...this.#status };
  }

  /** Calls `listener(status)` on every change; returns a function that unsubscribes. */
  onStatus(listener) {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close() {
    this.#backend?.close();
    this.#models?.close();
    this.#backend = new ClosedEngine();
    this.#status = { ...this.#status, phase: 'closed' };
    this.#readyResolve(this.status());
  }

  #update(status) {
    // open()'s reply repeats the status its host already pushed.
    if (!status || JSON.stringify(status) === JSON.stringify(this.#status)) return;
    this.#status = status;
    for (const l of this.#listeners) l(this.status());
    if (status.phase === 'ready' || status.phase === 'failed') this.#readyResolve(this.status());
  }
}

export default Docloupe;
