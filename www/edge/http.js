// The Worker's HTTP pieces that do not need the engine: status codes, the cache key's
// canonical request, the per-client rate limiter, CORS. Plain functions, tested in Node.

/** The HTTP status for a contract answer. */
export function statusFor(answer) {
  switch (answer?.errorCode) {
    case undefined:
      return 200;
    case 'INVALID_REQUEST':
    case 'SEARCH_QUERY_EMPTY':
      return 400;
    case 'RATE_LIMIT':
      return 429;
    case 'DOCS_COLLECTION_UNAVAILABLE':
      // Another project's collection is not here; a missing or broken bundle is this service's fault.
      return answer.details?.reason === 'ProjectNotFound' ? 404 : 503;
    case 'DOCS_RERANKING_UNAVAILABLE':
      return 503;
    default:
      return 500;
  }
}

/** Deepest nesting of arrays and objects a request may have (the contract's is 3). */
export const MAX_JSON_DEPTH = 32;

/**
 * How deeply `text`'s JSON arrays and objects nest, counted on the text (outside strings)
 * without parsing it, so a body nested thousands deep is refused before any parser recurses.
 */
export function jsonDepth(text) {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) max = Math.max(max, ++depth);
    else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/**
 * Unicode's White_Space characters, what Rust's `str::trim` (the engine's) removes.
 * JavaScript's `trim()` differs: it also removes U+FEFF and keeps U+0085, so a cache key
 * trimmed by it let one request's cached answer serve another.
 */
const RUST_SPACE = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const RUST_TRIM = new RegExp(`^${RUST_SPACE}+|${RUST_SPACE}+$`, 'g');

/** `s` trimmed exactly as the engine trims a query. */
export function trimLikeRust(s) {
  return s.replace(RUST_TRIM, '');
}

/**
 * The request in canonical form for the cache key: keys sorted at every level, the query
 * trimmed as the engine trims it (it echoes the trimmed one). Null for what is not a JSON
 * object, or nests too deeply: the engine refuses it, and refusals are not cached.
 */
export function canonicalRequest(text) {
  if (jsonDepth(text) > MAX_JSON_DEPTH) return null;
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  if (typeof value.query === 'string') value.query = trimLikeRust(value.query);
  const sort = (v) =>
    Array.isArray(v)
      ? v.map(sort)
      : v !== null && typeof v === 'object'
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort(v[k])]))
        : v;
  return JSON.stringify(sort(value));
}

/** Who is asking: Cloudflare's client address, or one shared key when there is none. */
export function clientKey(request) {
  return request.headers.get('CF-Connecting-IP') ?? 'unknown';
}

/**
 * A token bucket per client, in one isolate's memory (the fallback where Cloudflare's
 * rate-limiting binding is not configured): `limit` requests per `windowMs`, refilled
 * continuously. Past `maxClients` buckets, those refilled to full are dropped (a full bucket
 * is what a new client gets, so forgetting it changes nothing), least recently seen first. A
 * client that is being limited is never forgotten, however many other keys come by (rotating
 * through 10,000 addresses used to reset it); with `hardMax` buckets all in use, a new client
 * is refused until some refill.
 */
export class RateLimiter {
  constructor(limit, windowMs, maxClients = 10_000, hardMax = 4 * maxClients) {
    this.limit = limit;
    this.perMs = limit / windowMs;
    this.maxClients = maxClients;
    this.hardMax = hardMax;
    this.buckets = new Map(); // key → {tokens, at}; Map order = least recently seen first
  }

  /** Takes one token for `key` at time `now`: null if allowed, else seconds to wait. */
  take(key, now) {
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= this.maxClients) this.#forgetFull(now);
      if (this.buckets.size >= this.hardMax) return Math.max(1, Math.ceil(1 / this.perMs / 1000));
      b = { tokens: this.limit, at: now };
    }
    this.buckets.delete(key);
    b.tokens = Math.min(this.limit, b.tokens + (now - b.at) * this.perMs);
    b.at = now;
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000));
  }

  /** Drops buckets that have refilled to full, least recently seen first, down to 90 % of maxClients. */
  #forgetFull(now) {
    const target = Math.floor(this.maxClients * 0.9);
    for (const [key, b] of this.buckets) {
      if (this.buckets.size <= target) break;
      if (b.tokens + (now - b.at) * this.perMs >= this.limit) this.buckets.delete(key);
    }
  }
}

/** CORS headers for a request from an allowed origin (`*` allows any), else null. */
export function corsHeaders(request, allowed) {
  const origin = request.headers.get('Origin');
  if (!origin || !allowed.length) return null;
  const any = allowed.includes('*');
  if (!any && !allowed.includes(origin)) return null;
  return {
    'Access-Control-Allow-Origin': any ? '*' : origin,
    'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
    'Access-Control-Allow-Headers': 'Content-Type',
    'Access-Control-Expose-Headers': 'Retry-After, X-Docloupe-Cache, X-Docloupe-Bundle, X-Request-Id',
    'Access-Control-Max-Age': '86400',
    ...(any ? {} : { Vary: 'Origin' }),
  };
}
