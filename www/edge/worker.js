// docloupe's search contract as a Cloudflare Worker (module syntax):
//
//   POST /v1/search/docs/query   the contract's JSON request → its response or error object
//   GET  /v1/search/docs/query?q=...&limit=...&mode=...   the same, for links
//   GET  /healthz                bundle and engine state, versions
//
// The engine is driven by the same host as the browser's (../host.js), over a bundle from static
// assets, R2 or KV (wrangler.toml). Deployed as worker-models.js (which hands it the full wasm
// build) with MODELS_PATH (the embedding model's folder on the same binding), it is the full
// build with the model: hybrid and semantic answered as natively
// (MiniLM: 34 MiB of the isolate's 128 MB; the model's bytes are let go once loaded). Without
// it, or when the model cannot load, it is the lexical build, and semantic and hybrid requests
// are answered from the lexical index with `fallbackApplied: true, degradedReason:
// "models_unavailable"`. A split bundle (BUNDLE_PATH ending in "/") is read
// piece by piece, as in the browser, and the engine starts over from its core when the pieces
// it holds pass BUNDLE_MEMORY_BYTES, so an isolate's memory stays bounded however many
// different queries it serves.
//
// HTTP: 200 with the response; 400 INVALID_REQUEST / SEARCH_QUERY_EMPTY (malformed JSON, wrong
// content type, a body over MAX_BODY_BYTES included); 404 DOCS_COLLECTION_UNAVAILABLE for
// another project; 503 DOCS_COLLECTION_UNAVAILABLE when the bundle is missing or corrupt; 429
// RATE_LIMIT with Retry-After; 500 INTERNAL_ERROR, never with a stack. Identical requests are
// answered from the Cache API for CACHE_TTL_SECONDS (X-Docloupe-Cache: hit | miss, or error
// when the Cache API fails, which never fails the request), keyed by the bundle's sha256 and the
// request in canonical form. One JSON log line per query.
import * as lexicalGlue from '../pkg/lexical/docloupe.js';
import lexicalWasm from '../pkg/lexical/docloupe_bg.wasm';
import inflateWasm from '../pkg/inflate/inflate.wasm';
import { Host, contractError } from '../host.js';
import { canonicalRequest, statusFor, clientKey, RateLimiter, corsHeaders, jsonDepth, MAX_JSON_DEPTH } from './http.js';

const VERSION = '0.1.0';
/** The full build ({glue, wasm}) when this upload has it: worker-models.js, the entry that
 * imports it (2.7 MB brotli of wasm, past the Free plan's 3 MB upload with gzip), sets it. */
let fullBuild = null;
const SEARCH_PATH = '/v1/search/docs/query';
/** The host reads the bundle through URLs on this origin; `bundleFetch` maps them to a binding. */
const BUNDLE_ORIGIN = 'https://bundle.docloupe.invalid';
/** How much of an over-limit body is read and dropped before answering (see readSearchRequest). */
const DRAIN_BYTES = 1024 * 1024;
/** After a failed load, the next request tries again once this much time has passed. */
const RETRY_AFTER_FAILURE_MS = 30_000;

/**
 * Settings from wrangler.toml [vars] (strings there), with their defaults. A number that is
 * not a whole number ≥ 0 ("16KB", "lots") is a configuration error in `errors`: the Worker
 * then refuses every search (fails closed) instead of running with that check switched off.
 */
export function settings(env) {
  const errors = [];
  const int = (v, d, name) => {
    if (v === undefined || v === '') return d;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return v;
    if (typeof v === 'string' && /^\d{1,15}$/.test(v.trim())) return Number(v.trim());
    errors.push(`${name} must be a whole number of at least 0, not ${JSON.stringify(v)}`);
    return d;
  };
  return {
    errors,
    bundleSource: env.BUNDLE_SOURCE ?? 'assets',
    bundlePath: env.BUNDLE_PATH ?? '/docs/',
    maxBodyBytes: int(env.MAX_BODY_BYTES, 16 * 1024, 'MAX_BODY_BYTES'),
    cacheTtl: int(env.CACHE_TTL_SECONDS, 300, 'CACHE_TTL_SECONDS'),
    rateLimit: int(env.RATE_LIMIT_PER_MINUTE, 600, 'RATE_LIMIT_PER_MINUTE'),
    corsOrigins: (env.CORS_ALLOW_ORIGINS ?? '*').split(',').map((s) => s.trim()).filter(Boolean),
    logClientIp: env.LOG_CLIENT_IP === 'true',
    // The request itself (query, filters) in the log line, for `docloupe stats`: off by
    // default, as queries can be private.
    logQueries: env.LOG_QUERIES === 'true',
    memoryBytes: int(env.BUNDLE_MEMORY_BYTES, 48 * 1024 * 1024, 'BUNDLE_MEMORY_BYTES'),
    // The embedding model's directory (model.int8.onnx, tokenizer.json) on the bundle's
    // binding; "" answers semantic and hybrid lexically (models_unavailable).
    modelsPath: env.MODELS_PATH ?? '',
  };
}

/** Reads the bundle's files from the configured binding, as `fetch` responses. */
function bundleFetch(env, cfg, onBundleBytes) {
  return async (url) => {
    const path = new URL(url).pathname;
    const key = decodeURIComponent(path).replace(/^\//, '');
    let response;
    if (cfg.bundleSource === 'assets') {
      if (!env.ASSETS) throw new Error('BUNDLE_SOURCE is assets but there is no ASSETS binding');
      response = await env.ASSETS.fetch(new Request(`https://assets.local${path}`));
    } else if (cfg.bundleSource === 'r2') {
      if (!env.BUNDLES) throw new Error('BUNDLE_SOURCE is r2 but there is no BUNDLES binding');
      const object = await env.BUNDLES.get(key);
      response = object ? new Response(object.body) : new Response(null, { status: 404, statusText: 'Not Found' });
    } else if (cfg.bundleSource === 'kv') {
      if (!env.BUNDLES_KV) throw new Error('BUNDLE_SOURCE is kv but there is no BUNDLES_KV binding');
      const value = await env.BUNDLES_KV.get(key, 'arrayBuffer');
      response = value ? new Response(value) : new Response(null, { status: 404, statusText: 'Not Found' });
    } else {
      throw new Error(`BUNDLE_SOURCE must be assets, r2 or kv, not ${cfg.bundleSource}`);
    }
    // The bundle's own bytes (a whole bundle, or a split one's core) name its version.
    if (response.ok && (path === cfg.bundlePath || path === `${cfg.bundlePath}core.bin`)) {
      const bytes = await response.arrayBuffer();
      await onBundleBytes(bytes);
      return new Response(bytes);
    }
    return response;
  };
}

const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, '0')).join('');

/**
 * What a split bundle's shards may hold once the models are in: Cloudflare gives an isolate
 * 128 MB for its JavaScript heap and its wasm memory together, and the wasm memory already
 * holds the model and the vectors (MiniLM and cpp-docs' vectors: 102 MiB). The shards take
 * what is left less HEADROOM_BYTES (the JS heap, a search's own allocations, and the shards'
 * decoded form, larger than their files), at least 2 MiB, and never more than
 * BUNDLE_MEMORY_BYTES.
 */
const ISOLATE_BYTES = 128 * 1024 * 1024;
const HEADROOM_BYTES = 16 * 1024 * 1024;
const shardBudget = (configured, wasmBytes) =>
  Math.min(configured, Math.max(2 * 1024 * 1024, ISOLATE_BYTES - HEADROOM_BYTES - wasmBytes));

/** The isolate's engine: opened on first use, tried again a while after a failure. */
let engine = null;

function currentEngine(env) {
  const now = Date.now();
  if (engine && !(engine.error && now - engine.failedAt > RETRY_AFTER_FAILURE_MS)) return engine;
  const cfg = settings(env);
  const state = { host: null, ready: null, version: null, error: null, failedAt: 0, openedAt: now, cfg };
  const hostOptions = {
    fetch: bundleFetch(env, cfg, async (bytes) => {
      state.version = hex(await crypto.subtle.digest('SHA-256', bytes));
    }),
    maxFileBytes: cfg.memoryBytes,
    // workerd cancels a request waiting on a fetch another request started, as hung.
    shareFetches: false,
    // The isolate has 128 MB: the model's bytes go once they are in the engine.
    keepModelBytes: false,
  };
  state.host = new Host(undefined, hostOptions);
  const bundle = new URL(cfg.bundlePath, BUNDLE_ORIGIN).href;
  const lexical = () =>
    state.host.open({
      bundle,
      wasm: { lexical: lexicalWasm, inflate: inflateWasm },
      glue: { lexical: lexicalGlue },
      lexicalFallback: 'models_unavailable',
    });
  const withModels = async () => {
    const at = (file) => new URL(`${cfg.modelsPath.replace(/\/?$/, '/')}${file}`, BUNDLE_ORIGIN).href;
    const opened = await state.host.open({
      bundle,
      models: { embedding: { onnx: at('model.int8.onnx'), tokenizer: at('tokenizer.json') } },
      wasm: { full: fullBuild.wasm, inflate: inflateWasm },
      glue: { full: fullBuild.glue },
      stage: 'models',
    });
    // The shards may take what the model and the vectors left of the isolate's memory.
    state.host.setMaxFileBytes(shardBudget(cfg.memoryBytes, state.host.status().wasmMemoryBytes ?? 0));
    return opened;
  };
  const models = () =>
    fullBuild ? withModels() : Promise.reject(new Error('this upload has no full build (deploy worker-models.js)'));
  state.ready = (cfg.modelsPath ? models().catch((e) => {
    // The models could not load: the lexical engine answers, semantic and hybrid flagged.
    state.modelsError = String(e?.message ?? e);
    console.log(JSON.stringify({ time: new Date().toISOString(), modelsError: String(e?.stack ?? state.modelsError) }));
    state.host = new Host(undefined, hostOptions);
    return lexical();
  }) : lexical())
    .catch((e) => {
      state.error = e?.errorCode ? e : contractError('DOCS_COLLECTION_UNAVAILABLE', `the bundle could not be loaded: ${e?.message ?? e}`);
      state.failedAt = Date.now();
    });
  // The old engine (if any) was never usable; the wasm instance it had is reused by the glue.
  engine = state;
  return state;
}

function json(body, status, headers = {}) {
  return new Response(typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json; charset=utf-8', ...headers },
  });
}

/** The request as the engine's JSON text, or the HTTP error that refuses it. */
async function readSearchRequest(request, url, cfg) {
  if (request.method === 'GET') {
    const p = url.searchParams;
    const req = { query: p.get('q') ?? '' };
    // Numbers stay what they were typed as when they are not numbers, so the engine names the field.
    const num = (v) => (/^-?\d+$/.test(v) ? Number(v) : v);
    if (p.has('limit')) req.limit = num(p.get('limit'));
    if (p.has('offset')) req.offset = num(p.get('offset'));
    if (p.has('mode')) req.mode = p.get('mode');
    if (p.has('type')) req.filters = { documentTypes: p.getAll('type') };
    return { text: JSON.stringify(req) };
  }
  const type = request.headers.get('Content-Type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type)) {
    return { refusal: contractError('INVALID_REQUEST', `the body must be application/json, not ${type || 'missing'}`, { reason: 'content_type' }) };
  }
  const tooLarge = () =>
    contractError('INVALID_REQUEST', `the body is over ${cfg.maxBodyBytes} bytes`, { reason: 'body_too_large', maxBytes: cfg.maxBodyBytes });
  // Keep at most the limit, whatever Content-Length says (or does not say).
  const reader = request.body?.getReader();
  const chunks = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > cfg.maxBodyBytes) {
      // Read the rest (up to a bound) before answering: a body cut off mid-stream leaves the
      // client's connection in a state where its next request fails (seen under wrangler dev).
      for (let drained = size; drained < DRAIN_BYTES; ) {
        const next = await reader.read();
        if (next.done) break;
        drained += next.value.byteLength;
      }
      await reader.cancel().catch(() => {});
      return { refusal: tooLarge() };
    }
    chunks.push(value);
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.byteLength;
  }
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return { refusal: contractError('INVALID_REQUEST', 'the body is not UTF-8', { reason: 'encoding' }) };
  }
  // Refused before any parser (here or in the engine) recurses into it.
  if (jsonDepth(text) > MAX_JSON_DEPTH) {
    return { refusal: contractError('INVALID_REQUEST', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, { reason: 'too_deep' }) };
  }
  return { text };
}

const limiters = new Map(); // per isolate, per configured rate

async function rateLimited(request, env, cfg) {
  const key = clientKey(request);
  if (env.RATE_LIMITER) {
    // Cloudflare's rate-limiting binding: counted across isolates and locations.
    const { success } = await env.RATE_LIMITER.limit({ key });
    return success ? null : Number(env.RATE_LIMIT_PERIOD_SECONDS ?? 60);
  }
  if (!cfg.rateLimit) return null;
  if (!limiters.has(cfg.rateLimit)) limiters.set(cfg.rateLimit, new RateLimiter(cfg.rateLimit, 60_000));
  return limiters.get(cfg.rateLimit).take(key, Date.now());
}

/** The request as the log keeps it: strings cut at 600 characters, lists at 20 entries,
 * nesting at 4 levels (as the MCP server's log), so a client cannot grow the log at will. */
function loggedParams(text) {
  const cut = (v, depth) => {
    if (typeof v === 'string') return v.length > 600 ? `${v.slice(0, 600)}…` : v;
    if (v === null || typeof v !== 'object') return v;
    if (depth >= 4) return '…';
    if (Array.isArray(v)) return v.slice(0, 20).map((x) => cut(x, depth + 1));
    return Object.fromEntries(Object.entries(v).slice(0, 20).map(([k, x]) => [k.slice(0, 100), cut(x, depth + 1)]));
  };
  try {
    return cut(JSON.parse(text), 0);
  } catch {
    return null;
  }
}

async function search(request, env, ctx, url, cfg, log) {
  const read = await readSearchRequest(request, url, cfg);
  if (read.refusal) return json(read.refusal, 400);
  log.mode = modeOf(read.text);
  if (cfg.logQueries) log.params = loggedParams(read.text);
  const state = currentEngine(env);
  await state.ready;
  if (state.error) return json(state.error, 503);
  const canonical = canonicalRequest(read.text);
  const cacheKey =
    canonical && cfg.cacheTtl > 0 && state.version
      ? new Request(`https://cache.docloupe.invalid/v1/${state.version}/${hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical)))}`)
      : null;
  // The cache only saves work: when the Cache API fails (self-hosted workerd has none unless
  // configured: "No Cache was configured"), the engine answers and the log says so.
  let cache = cacheKey ? globalThis.caches?.default : undefined;
  if (cache) {
    let hit;
    try {
      hit = await cache.match(cacheKey);
    } catch (e) {
      log.cacheError = String(e?.message ?? e);
      cache = undefined;
    }
    if (hit) {
      log.cache = 'hit';
      log.results = Number(hit.headers.get('X-Docloupe-Results') ?? 0);
      const headers = new Headers(hit.headers);
      headers.set('X-Docloupe-Cache', 'hit');
      return new Response(hit.body, { status: 200, headers });
    }
  }
  const text = await state.host.search(read.text, { raw: true });
  const answer = JSON.parse(text);
  const status = statusFor(answer);
  if (answer.errorCode) {
    log.errorCode = answer.errorCode;
    if (status === 500) {
      // Never a stack or a panic message to the client; the log has it.
      log.internal = answer.details ?? null;
      return json(contractError('INTERNAL_ERROR', 'the search failed; it has been logged', { requestId: log.requestId }), 500);
    }
    return json(text, status);
  }
  log.results = answer.results.length;
  log.cache = cache ? 'miss' : log.cacheError ? 'error' : 'off';
  const headers = { 'X-Docloupe-Cache': log.cache, 'X-Docloupe-Results': String(answer.results.length), 'X-Docloupe-Bundle': state.version ?? '' };
  const response = json(text, 200, headers);
  if (cache) {
    const stored = json(text, 200, { ...headers, 'Cache-Control': `public, max-age=${cfg.cacheTtl}` });
    ctx.waitUntil(
      cache.put(cacheKey, stored).catch((e) => {
        console.log(JSON.stringify({ time: new Date().toISOString(), requestId: log.requestId, cacheError: String(e?.message ?? e) }));
      }),
    );
  }
  return response;
}

function modeOf(text) {
  try {
    const m = JSON.parse(text)?.mode;
    return typeof m === 'string' ? m : 'hybrid';
  } catch {
    return null;
  }
}

async function health(env) {
  const state = currentEngine(env);
  await state.ready;
  const s = state.host.status();
  const body = {
    status: state.error ? 'unavailable' : 'ok',
    version: VERSION,
    bundle: {
      loaded: !state.error,
      source: state.cfg.bundleSource,
      path: state.cfg.bundlePath,
      sha256: state.version,
      split: s.split ?? null,
      documents: s.documents ?? null,
      chunks: s.chunks ?? null,
      projectId: s.projectId ?? null,
      embedding: s.embedding ?? null,
      ...(state.error ? { error: state.error } : {}),
    },
    models:
      s.build === 'full'
        ? { loaded: true, embedding: s.embedding ?? null }
        : {
            loaded: false,
            reason: state.cfg.modelsPath
              ? `models_unavailable: the models did not load (${state.modelsError}); semantic and hybrid are answered lexically`
              : 'models_unavailable: no MODELS_PATH is configured; semantic and hybrid are answered lexically',
          },
    // modelsMs: how long the bundle and the model took to load (the first hybrid answer's wait).
    engine: {
      build: s.build ?? 'lexical',
      wasmMemoryBytes: state.error ? null : s.wasmMemoryBytes ?? null,
      ...(s.modelsMs ? { modelsMs: Math.round(s.modelsMs) } : {}),
      // A split bundle's shards held now, and the bound past which the engine lets them go.
      ...(s.split ? { shardBytes: s.splitFileBytes ?? 0, shardBudgetBytes: s.maxFileBytes ?? null } : {}),
    },
  };
  return json(body, state.error ? 503 : 200, { 'Cache-Control': 'no-store' });
}

/** The Worker with the full build (worker-models.js passes it): MODELS_PATH can then load the
 * models. */
export function withFullBuild(full) {
  fullBuild = full;
  return handler;
}

const handler = {
  async fetch(request, env, ctx) {
    const started = Date.now();
    const url = new URL(request.url);
    const cfg = settings(env);
    const cors = corsHeaders(request, cfg.corsOrigins);
    const log = { time: new Date(started).toISOString(), requestId: crypto.randomUUID(), method: request.method, path: url.pathname };
    if (cfg.logClientIp) log.clientIp = request.headers.get('CF-Connecting-IP');
    let response;
    try {
      if (cfg.errors.length) {
        // Fail closed: a limit that does not parse would otherwise be no limit at all.
        log.internal = `misconfigured: ${cfg.errors.join('; ')}`;
        response = json(contractError('INTERNAL_ERROR', 'the search service is misconfigured; it has been logged', { requestId: log.requestId }), 500);
      } else if (request.method === 'OPTIONS' && cors) {
        response = new Response(null, { status: 204 });
      } else if (url.pathname === '/healthz' && request.method === 'GET') {
        response = await health(env);
      } else if (url.pathname === SEARCH_PATH) {
        if (request.method !== 'POST' && request.method !== 'GET') {
          response = json(contractError('INVALID_REQUEST', `${request.method} is not allowed here; use POST (or GET with q=)`, { reason: 'method' }), 405, { Allow: 'GET, POST, OPTIONS' });
        } else {
          // For the tests of the 500 path only; never set in a deployment's wrangler.toml.
          if (env.ALLOW_FAULT_INJECTION === 'true' && request.headers.get('X-Docloupe-Fault') === 'throw') {
            throw new Error('injected fault (X-Docloupe-Fault)');
          }
          const retry = await rateLimited(request, env, cfg);
          response =
            retry !== null
              ? json(contractError('RATE_LIMIT', `too many requests; try again in ${retry} s`, { retryAfterSeconds: retry }), 429, { 'Retry-After': String(retry) })
              : await search(request, env, ctx, url, cfg, log);
        }
      } else {
        response = json(contractError('INVALID_REQUEST', `no such endpoint: ${request.method} ${url.pathname}`, { reason: 'not_found' }), 404);
      }
    } catch (e) {
      log.internal = String(e?.message ?? e);
      response = json(contractError('INTERNAL_ERROR', 'the search failed; it has been logged', { requestId: log.requestId }), 500);
    }
    for (const [k, v] of Object.entries(cors ?? {})) response.headers.set(k, v);
    response.headers.set('X-Request-Id', log.requestId);
    if (url.pathname === SEARCH_PATH || log.internal) {
      log.status = response.status;
      log.latencyMs = Date.now() - started;
      if (response.status !== 200 && !log.errorCode) log.errorCode = (await response.clone().json().catch(() => ({}))).errorCode ?? null;
      console.log(JSON.stringify(log));
    }
    return response;
  },
};

export default handler;
