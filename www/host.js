// The engine host: the part of the JS API that owns the wasm instances. It runs inside the Web
// Worker (worker.js) or, where workers are unavailable, on the calling thread; docloupe.js
// talks to it either way. Plain ES module: browsers, Web Workers and Node load it unchanged.
//
// Progressive loading: the lexical build (~100 KB) and the bundle come first and answer
// fulltext at once. Then, in the background, the full build and the models load into a second
// instance; until it replaces the first, semantic and hybrid requests are answered lexically
// with `fallbackApplied: true, degradedReason: "models_loading"` (the engine's own flag).
// In a browser docloupe.js runs the two stages in two workers (`open({stage})`), because
// loading a model (decoding the bundle, optimizing the graph) is seconds of synchronous wasm
// that would hold up every search queued behind it; without workers one host does both.
//
// Split bundles (`index-builder split`; `bundle` is then the directory's URL, ending in "/"):
// only core.bin is fetched at open. A search the lexical engine cannot finish yet answers
// `BundleFilesNeeded` with the file names; the host fetches them (in parallel, each once),
// adds them and asks again, so a query costs its terms' postings and its results' text.
// The full instance opens the same core and loads the vector files (`vec-N.bin`, the vectors
// section in pieces) with the models; its searches then fetch shards the same way.
//
// Whole bundles: their sections are deflated, and the lexical build inflates them through the
// small pkg/inflate module (inflate.js), which split bundles never need.
//
// Kernels: the full build runs the models on simd128 ("fast", default); `kernels: "portable"`
// loads pkg/portable instead, built without simd128, whose answers equal the native engine's
// on `--kernels portable` byte for byte (2–4× slower inference).

// Where the wasm packages live, beside this file. A bundled copy (a Cloudflare Worker) may have
// no import.meta.url; it passes its builds in instead.
const PKG = import.meta.url ? new URL('./pkg/', import.meta.url) : null;
// Node's modules for reading file: URLs, named so that bundlers for other hosts leave them be.
const NODE_FS = 'node:fs/promises';
const NODE_URL = 'node:url';
/** Fetch rounds per request before giving up (the engine's own bound, MAX_FETCH_ROUNDS). */
const MAX_FETCH_ROUNDS = 6;

/** The contract's error object, for failures that happen outside the engine. */
export function contractError(errorCode, message, details) {
  return details === undefined ? { errorCode, message } : { errorCode, message, details };
}

const isContractError = (v) =>
  v !== null && typeof v === 'object' && typeof v.errorCode === 'string' && typeof v.message === 'string';

/** `e` if it is the contract's error object, else an INTERNAL_ERROR carrying its message. */
export function asContractError(e, context = '') {
  return isContractError(e) ? e : contractError('INTERNAL_ERROR', `${context}${e?.message ?? e}`);
}

/**
 * Loads a source (URL, path relative to the page, ArrayBuffer, typed array) as bytes. `field`
 * names it in errors, as the option it came from (`bundle`, `models.embedding.onnx`...).
 */
export async function loadBytes(source, field, fetchImpl = fetch) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source !== 'string' && !(source instanceof URL)) {
    throw contractError('INVALID_REQUEST', `${field} must be a URL or bytes (ArrayBuffer / Uint8Array)`, { field });
  }
  const base = globalThis.location?.href ?? import.meta.url;
  const url = new URL(source, base);
  try {
    if (url.protocol === 'file:') {
      // Node's fetch has no file: scheme; a path on disk is read directly.
      const [{ readFile }, { fileURLToPath }] = await Promise.all([import(NODE_FS), import(NODE_URL)]);
      return new Uint8Array(await readFile(fileURLToPath(url)));
    }
    const response = await fetchImpl(url);
    if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
    return new Uint8Array(await response.arrayBuffer());
  } catch (e) {
    throw contractError('DOCS_COLLECTION_UNAVAILABLE', `could not load ${field} from ${url.href}: ${e.message}`, {
      reason: 'fetch_failed',
      source: url.href,
    });
  }
}

/** A split bundle's directory URL (a string or URL ending in "/"), else null. */
function splitDirectory(bundle) {
  if (typeof bundle !== 'string' && !(bundle instanceof URL)) return null;
  const url = new URL(bundle, globalThis.location?.href ?? import.meta.url);
  return url.pathname.endsWith('/') ? url : null;
}

const filesNeeded = (r) =>
  r?.errorCode === 'DOCS_COLLECTION_UNAVAILABLE' && r.details?.reason === 'BundleFilesNeeded' ? r.details.files : null;

/**
 * One wasm build, instantiable again after a panic has spent an instance. `wasmSource` may be
 * a compiled `WebAssembly.Module` and `glue` the build's glue module itself: hosts that cannot
 * compile wasm or import modules at run time (Cloudflare Workers) pass both, and then get one
 * instance only.
 */
class Build {
  constructor(kind, wasmSource, glue) {
    this.kind = kind;
    this.wasmSource = wasmSource ?? null; // default: pkg/<kind>/ beside this file
    this.glue = glue ?? null;
    this.generation = 0;
    this.module = wasmSource instanceof WebAssembly.Module ? wasmSource : null; // compiled once
  }

  /** A fresh glue module + instance (the glue keeps its instance in module state). */
  async instantiate() {
    if (!this.module) {
      const source = this.wasmSource ?? new URL(`${this.kind}/docloupe_bg.wasm`, PKG);
      this.module = await WebAssembly.compile(await loadBytes(source, `wasm.${this.kind}`));
    }
    if (this.glue) {
      if (this.generation++ > 0) throw contractError('INTERNAL_ERROR', `the ${this.kind} engine cannot be restarted in this host`);
      this.glue.initSync({ module: this.module });
      return this.glue;
    }
    const glueUrl = new URL(`${this.kind}/docloupe.js`, PKG);
    glueUrl.searchParams.set('instance', String(this.generation++));
    const glue = await import(glueUrl.href);
    glue.initSync({ module: this.module });
    return glue;
  }
}

/**
 * An engine instance of one build (which says what to rebuild after a panic). The searches
 * using it are counted: one that is replaced while searches are between their fetch rounds
 * is retired, and freed when the last of them is done (freeing it at once made them fetch
 * their files again on the new one, where the next search over budget dropped them again).
 */
class Instance {
  constructor(build, glue, engine) {
    this.build = build;
    this.glue = glue;
    this.engine = engine;
    this.files = new Set(); // split bundle files added to this instance
    this.fileBytes = 0; // ... and their size
    this.users = 0; // searches using it now
    this.retired = false; // replaced: freed once unused
    this.spent = false; // trapped: every search on it moves to its replacement
    this.freed = false;
  }

  /** A fresh engine in the same wasm instance (`open(glue)`), without the added files. */
  fork(open) {
    return new Instance(this.build, this.glue, open(this.glue));
  }

  /** Frees it now if no search uses it, else when the last one lets go. */
  retire() {
    this.retired = true;
    if (this.users === 0) this.free();
  }

  acquire() {
    this.users++;
    return this;
  }

  release() {
    this.users--;
    if (this.retired && this.users === 0) this.free();
  }

  /** `open(glue)` makes the engine (and throws the contract error object). */
  static async create(build, open, setup) {
    const glue = await build.instantiate();
    const engine = open(glue);
    await setup?.(engine);
    return new Instance(build, glue, engine);
  }

  free() {
    if (this.freed) return;
    this.freed = true;
    try {
      this.engine.free();
    } catch {
      // A spent (panicked) instance cannot free; it is dropped with its module.
    }
  }
}

export class Host {
  #bundle; // the whole bundle's bytes (null until loaded, for a split bundle)
  #split = null; // a split bundle's directory URL
  #core = null; // its core.bin
  #vectorFiles = null; // its vec-N.bin files, [name, bytes], once the full instance has them
  #fetching = new Map(); // file name → promise of its bytes, while in flight
  #lexical;
  #full;
  #current = null;
  #models = null; // the loaded model bytes, kept to rebuild the full instance after a panic
  #status;
  #onStatus;
  #closed = false;
  #fetch;
  #maxFileBytes;
  #shareFetches;
  #lexicalFallback = null;
  #rerankBudgetMs = null;
  // `keepModelBytes: false` (a Worker, whose isolate has 128 MB): once the models are in the
  // engine, their bytes and the vector files' are let go, and fetched again only to rebuild
  // the engine after a panic (`#modelSpec`, `#vectorNames`).
  #keepModelBytes = true;
  #modelSpec = null;
  #vectorNames = null;

  /**
   * `options.fetch` replaces `fetch` for every URL the host loads (a Worker maps bundle URLs
   * onto its asset, R2 or KV bindings); `options.maxFileBytes` bounds the shards a split
   * bundle's engine keeps: past it, the next search starts from a fresh lexical engine over
   * the core, or the engine with the models drops its shards (a long-lived edge isolate must
   * not grow with every query's shards).
   * `options.shareFetches: false` makes every search fetch the files it needs itself instead
   * of waiting on a fetch another search started: a Worker must, since workerd cancels a
   * request that waits on another request's I/O as hung (a plain-text 500 under load).
   */
  constructor(onStatus, { fetch: fetchImpl, maxFileBytes = Infinity, shareFetches = true, keepModelBytes = true } = {}) {
    this.#onStatus = onStatus ?? (() => {});
    this.#fetch = fetchImpl ?? ((...args) => fetch(...args));
    this.#maxFileBytes = maxFileBytes;
    this.#shareFetches = shareFetches;
    this.#keepModelBytes = keepModelBytes;
  }

  /**
   * Opens the bundle. `stage` says how much of progressive loading this host does:
   * - "all" (default): the lexical build first, resolving once fulltext can be answered, then
   *   the models, if any, in the background, in this same thread;
   * - "lexical": the same first step, but the models load elsewhere (docloupe.js gives them a
   *   worker of their own, so loading them never stalls a search): semantic and hybrid are
   *   answered lexically, flagged, until `modelsFailed()` or the host is dropped;
   * - "models": only the full build with the models, resolving when they are in.
   * `lexicalFallback: "models_unavailable"` is for hosts that never load the models (an edge
   * Worker: they do not fit its memory): semantic and hybrid are then answered lexically,
   * flagged with that reason. `glue` gives build glue modules directly ({lexical}), for hosts
   * that cannot import them at run time. Rejects with a contract error object.
   */
  async open({ bundle, models, wasm, glue: glues, kernels = 'fast', stage = 'all', lexicalFallback = null, rerankBudgetMs = null } = {}) {
    const started = performance.now();
    if (bundle === undefined || bundle === null) {
      throw contractError('INVALID_REQUEST', 'open() needs a bundle (URL or bytes)', { field: 'bundle' });
    }
    if (kernels !== 'fast' && kernels !== 'portable') {
      throw contractError('INVALID_REQUEST', 'kernels must be "fast" or "portable"', { field: 'kernels' });
    }
    if (!['all', 'lexical', 'models'].includes(stage)) {
      throw contractError('INVALID_REQUEST', 'stage must be "all", "lexical" or "models"', { field: 'stage' });
    }
    if (lexicalFallback !== null && lexicalFallback !== 'models_unavailable') {
      throw contractError('INVALID_REQUEST', 'lexicalFallback must be "models_unavailable" or null', { field: 'lexicalFallback' });
    }
    if (rerankBudgetMs !== null && !(Number.isSafeInteger(rerankBudgetMs) && rerankBudgetMs >= 0)) {
      throw contractError('INVALID_REQUEST', 'rerankBudgetMs must be a whole number of milliseconds, 0 or more', { field: 'rerankBudgetMs' });
    }
    this.#lexicalFallback = lexicalFallback;
    this.#rerankBudgetMs = rerankBudgetMs;
    this.#lexical = new Build('lexical', wasm?.lexical, glues?.lexical);
    // The models' build: simd128 kernels, or the portable build whose answers equal native's
    // (`--kernels portable`) byte for byte.
    this.#full = kernels === 'portable' ? new Build('portable', wasm?.portable, glues?.portable) : new Build('full', wasm?.full, glues?.full);
    this.#split = splitDirectory(bundle);
    if (stage === 'models') {
      if (!this.#split) this.#bundle = await loadBytes(bundle, 'bundle', this.#fetch);
      this.#current = await this.#openFull(models);
      this.#setStatus({ phase: 'ready', modelsMs: performance.now() - started });
      return this.status();
    }
    const source = this.#split ? new URL('core.bin', this.#split) : bundle;
    const [bytes, glue] = await Promise.all([
      loadBytes(source, 'bundle', this.#fetch),
      this.#lexical.instantiate(),
      this.#split ? null : import('./inflate.js').then((m) => m.installInflater(wasm?.inflate, this.#fetch)),
    ]);
    if (this.#split) this.#core = bytes;
    else this.#bundle = bytes;
    this.#current = new Instance(this.#lexical, glue, this.#openLexical(glue));
    const wantsModels = models !== undefined && models !== null && models !== false;
    const info = this.#current.engine.info();
    const canUseModels = wantsModels && info.embedding !== null && info.embedding !== undefined;
    if (canUseModels) this.#current.engine.setModelsLoading(true);
    else if (this.#lexicalFallback && info.embedding) this.#current.engine.setLexicalFallback(this.#lexicalFallback);
    this.#setStatus({
      phase: canUseModels ? 'loading-models' : 'ready',
      openMs: performance.now() - started,
      ...(lexicalFallback ? { lexicalFallback } : {}),
    });
    if (canUseModels && stage === 'all') this.#loadModels(models, started); // in the background, by design
    return this.status();
  }

  /**
   * The models could not be loaded where they were loading (stage "lexical"): semantic and
   * hybrid now get the contract's "model not loaded" errors instead of the loading flag.
   */
  modelsFailed(error) {
    this.#current?.engine.setModelsLoading(false);
    this.#setStatus({ phase: 'failed', error: asContractError(error, 'loading the models failed: ') });
    return this.status();
  }

  /** The lexical engine over whatever this host was opened with. */
  #openLexical(glue) {
    return this.#split ? glue.Engine.openSplit(this.#core) : new glue.Engine(this.#bundle);
  }

  /**
   * The full build with the models: over the whole bundle, or over a split bundle's core and
   * its vector files (fetched beside the models; the names come from the core).
   */
  async #openFull(models) {
    this.#modelSpec = models;
    const instance = await this.#openFullOnce(models);
    this.#letGoOfModelBytes();
    return instance;
  }

  #letGoOfModelBytes() {
    if (this.#keepModelBytes) return;
    this.#vectorNames = this.#vectorFiles?.map(([n]) => n) ?? null;
    this.#models = null;
    this.#vectorFiles = null;
  }

  /** What `#letGoOfModelBytes` let go of, fetched again (to rebuild the full engine). */
  async #fetchModelBytesAgain() {
    if (this.#models) return;
    this.#models = await fetchModels(this.#modelSpec, this.#fetch);
    if (this.#split && this.#vectorNames) this.#vectorFiles = await this.#fetchVectorFiles(this.#vectorNames);
  }

  /** A split bundle's vector files `names`, as [name, bytes]. */
  async #fetchVectorFiles(names) {
    const pieces = await Promise.all(names.map((n) => loadBytes(new URL(n, this.#split), `bundle file ${n}`, this.#fetch)));
    return names.map((n, i) => [n, pieces[i]]);
  }

  async #openFullOnce(models) {
    const modelsLoading = fetchModels(models, this.#fetch);
    modelsLoading.catch(() => {}); // awaited below; a failure must not go unhandled meanwhile
    if (!this.#split) {
      this.#models = await modelsLoading; // the bundle's bytes are in since open()
      return Instance.create(this.#full, (g) => this.#fullEngine(g), (e) => installModels(e, this.#models, this.#rerankBudgetMs));
    }
    this.#core ??= await loadBytes(new URL('core.bin', this.#split), 'bundle', this.#fetch);
    return Instance.create(
      this.#full,
      (g) => g.Engine.openSplit(this.#core),
      async (engine) => {
        const names = engine.info().vectorFiles ?? [];
        const [loaded, files] = await Promise.all([modelsLoading, this.#fetchVectorFiles(names)]);
        for (const [n, bytes] of files) engine.addFile(n, bytes); // throws the contract error object
        this.#vectorFiles = files;
        this.#models = loaded;
        installModels(engine, loaded, this.#rerankBudgetMs);
      },
    );
  }

  /** A full engine over what this host holds: the whole bundle, or the core and vector files. */
  #fullEngine(g) {
    if (!this.#split) return new g.Engine(this.#bundle);
    const engine = g.Engine.openSplit(this.#core);
    for (const [name, bytes] of this.#vectorFiles ?? []) engine.addFile(name, bytes);
    return engine;
  }

  async #loadModels(models, started) {
    try {
      const full = await this.#openFull(models);
      if (this.#closed) return full.free();
      const lexical = this.#current;
      this.#current = full;
      lexical.retire();
      this.#setStatus({ phase: 'ready', modelsMs: performance.now() - started });
    } catch (e) {
      // The lexical instance keeps serving, and the status says why.
      this.#models = null;
      this.modelsFailed(e);
    }
  }

  /**
   * The contract: a request in, the response or the error object out. Never throws. Over a
   * split bundle it fetches the files the request needs first. A request given as JSON text is
   * read by the engine itself (malformed JSON is its INVALID_REQUEST); with `raw` the answer is
   * the engine's JSON text, byte for byte what the native CLI prints.
   */
  async search(request, { raw = false } = {}) {
    const answer = (v, text) => (raw ? text ?? JSON.stringify(v) : v);
    let instance = null; // the one this search's rounds use, held until it returns
    try {
      for (let round = 0; ; round++) {
        if (this.#closed || !this.#current) return answer(contractError('INTERNAL_ERROR', 'the engine is closed'));
        // A new search over a lexical engine past its budget starts a fresh one over the core;
        // searches between their rounds keep the old one (its files are what their next
        // round needs) until they are done.
        const current = this.#current;
        if (round === 0 && current.fileBytes > this.#maxFileBytes) {
          if (current.build === this.#lexical) {
            this.#current = current.fork((g) => this.#configureLexical(this.#openLexical(g)));
            current.retire();
          } else if (current.users === 0) {
            // The full engine keeps its models (loading them again would hold two at once):
            // it drops the shards searches added instead, its core and vectors staying, while
            // no search is between its rounds (their files are what their next round reads).
            current.engine.forgetFiles();
            current.files.clear();
            current.fileBytes = 0;
          }
        }
        if (instance === null || instance.spent) {
          instance?.release();
          instance = this.#current.acquire();
        }
        const [response, text] = this.#searchOnce(instance, request);
        const files = this.#split ? filesNeeded(response) : null;
        if (!files) return answer(response, text);
        if (round === MAX_FETCH_ROUNDS) {
          return answer(contractError('INTERNAL_ERROR', `the request still needed files after ${MAX_FETCH_ROUNDS} rounds`, {
            reason: 'fetch_rounds',
            files,
          }));
        }
        try {
          await this.#addFiles(instance, files);
        } catch (e) {
          return answer(asContractError(e));
        }
      }
    } finally {
      instance?.release();
    }
  }

  /**
   * Fetches `names` in parallel (a file already in flight for another request is shared,
   * unless `shareFetches` is off).
   */
  async #addFiles(instance, names) {
    await Promise.all(
      names.map(async (name) => {
        let pending = this.#shareFetches ? this.#fetching.get(name) : undefined;
        if (!pending) {
          pending = loadBytes(new URL(name, this.#split), `bundle file ${name}`, this.#fetch);
          if (this.#shareFetches) {
            this.#fetching.set(name, pending);
            pending.finally(() => this.#fetching.delete(name)).catch(() => {});
          }
        }
        const bytes = await pending;
        // A trapped or closed instance takes no files; the next round asks its replacement.
        if (!instance.spent && !instance.freed && !instance.files.has(name)) {
          instance.engine.addFile(name, bytes); // throws the contract error object
          instance.files.add(name);
          instance.fileBytes += bytes.length;
        }
      }),
    );
  }

  /** [response object, its JSON text when the request was text]. */
  #searchOnce(instance, request) {
    try {
      if (typeof request !== 'string') return [instance.engine.search(request), undefined];
      const text = instance.engine.searchJson(request);
      return [JSON.parse(text), text];
    } catch (e) {
      // wasm32 aborts on a panic: this instance is spent. Answer INTERNAL_ERROR with the
      // panic's message and replace the instance for the next request.
      instance.spent = true;
      let panic = null;
      try {
        panic = instance.glue.takePanic() ?? null;
      } catch {
        // the instance may be too broken to say; the trap message still goes out
      }
      this.#recover(instance);
      return [
        contractError('INTERNAL_ERROR', 'the search engine failed on this request', {
          reason: panic === null ? 'trap' : 'panic',
          message: panic ?? String(e?.message ?? e),
        }),
        undefined,
      ];
    }
  }

  /** How a lexical engine answers without its models, per this host's state and options. */
  #configureLexical(engine) {
    if (this.#status?.phase === 'loading-models') engine.setModelsLoading(true);
    else if (this.#lexicalFallback && safeInfo(engine).embedding) engine.setLexicalFallback(this.#lexicalFallback);
    return engine;
  }

  async #recover(spent) {
    // A full instance exists only once the models are in, so its models are at hand.
    const full = spent.build === this.#full;
    try {
      if (full) await this.#fetchModelBytesAgain();
      const fresh = full
        ? await Instance.create(spent.build, (g) => this.#fullEngine(g), (e) => installModels(e, this.#models, this.#rerankBudgetMs))
        : await Instance.create(spent.build, (g) => this.#configureLexical(this.#openLexical(g)));
      if (full) this.#letGoOfModelBytes();
      if (this.#current === spent && !this.#closed) this.#current = fresh;
      else fresh.free();
    } catch (e) {
      this.#setStatus({ phase: 'failed', error: contractError('INTERNAL_ERROR', `restarting the engine failed: ${e?.message ?? e}`) });
    }
  }

  /** Changes `options.maxFileBytes` (a Worker lowers it once the models are in). */
  setMaxFileBytes(bytes) {
    this.#maxFileBytes = bytes;
  }

  status() {
    // The engine's wasm memory now (it grows, never shrinks): what the loaded build and
    // model and the bundle's files take. initSync hands back the running instance's exports.
    const current = this.#current;
    const memory = current && !current.freed ? current.glue.initSync({ module: current.build.module })?.memory : null;
    return {
      ...this.#status,
      ...(memory ? { wasmMemoryBytes: memory.buffer.byteLength } : {}),
      // The split bundle's shard files the engine now holds, and what it may hold.
      ...(current && this.#split ? { splitFileBytes: current.fileBytes, maxFileBytes: this.#maxFileBytes } : {}),
    };
  }

  /** One operation by name: how worker.js and the main-thread fallback both drive a host. */
  async call(op, arg) {
    if (op === 'open') return this.open(arg);
    if (op === 'search') return this.search(arg);
    if (op === 'status') return this.status();
    if (op === 'modelsFailed') return this.modelsFailed(arg);
    if (op === 'close') return this.close();
    throw contractError('INTERNAL_ERROR', `unknown engine operation ${op}`);
  }

  #setStatus(patch) {
    const info = this.#current ? safeInfo(this.#current.engine) : {};
    this.#status = { ...this.#status, ...patch, ...info };
    this.#onStatus(this.status());
  }

  close() {
    this.#closed = true;
    this.#current?.free();
    this.#current = null;
    this.#bundle = null;
    this.#core = null;
    this.#vectorFiles = null;
    this.#models = null;
  }
}

function safeInfo(engine) {
  try {
    const i = engine.info();
    return {
      build: i.build,
      kernels: i.kernels ?? null,
      split: i.split,
      documents: i.documents,
      chunks: i.chunks,
      projectId: i.projectId ?? null,
      embedding: i.embedding ?? null,
      semanticReady: i.semanticReady,
      rerankerReady: i.rerankerReady,
    };
  } catch {
    return {};
  }
}

/** Fetches every model file in parallel (one round). */
async function fetchModels(models, fetchImpl) {
  const e = models.embedding;
  if (!e) throw contractError('INVALID_REQUEST', 'models.embedding {onnx, tokenizer} is required', { field: 'models.embedding' });
  const r = models.reranker;
  const [onnx, tokenizer, rManifest, rOnnx, rTokenizer] = await Promise.all([
    loadBytes(e.onnx, 'models.embedding.onnx', fetchImpl),
    loadBytes(e.tokenizer, 'models.embedding.tokenizer', fetchImpl),
    r ? loadBytes(r.manifest, 'models.reranker.manifest', fetchImpl) : null,
    r ? loadBytes(r.onnx, 'models.reranker.onnx', fetchImpl) : null,
    r ? loadBytes(r.tokenizer, 'models.reranker.tokenizer', fetchImpl) : null,
  ]);
  return { onnx, tokenizer, reranker: r ? { manifest: rManifest, onnx: rOnnx, tokenizer: rTokenizer } : null };
}

function installModels(engine, m, rerankBudgetMs) {
  engine.loadEmbedder(m.onnx, m.tokenizer);
  if (m.reranker) engine.loadReranker(m.reranker.manifest, m.reranker.onnx, m.reranker.tokenizer);
  if (rerankBudgetMs !== null && rerankBudgetMs !== undefined) engine.setRerankBudgetMs(rerankBudgetMs);
}
