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

/**
 * The request in canonical form for the cache key: keys sorted at every level, the query
 * trimmed (the engine trims it too, and echoes the trimmed one). Null for what is not a JSON
 * object: the engine refuses it, and refusals are not cached.
 */
export function canonicalRequest(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  if (typeof value.query === 'string') value.query = value.query.trim();
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
 * continuously. At most `maxClients` buckets are kept; the least recently seen go first.
 */
export class RateLimiter {
  constructor(limit, windowMs, maxClients = 10_000) {
    this.limit = limit;
    this.perMs = limit / windowMs;
    this.maxClients = maxClients;
    this.buckets = new Map(); // key → {tokens, at}; Map order = least recently seen first
  }

  /** Takes one token for `key` at time `now`: null if allowed, else seconds to wait. */
  take(key, now) {
    const b = this.buckets.get(key) ?? { tokens: this.limit, at: now };
    this.buckets.delete(key);
    b.tokens = Math.min(this.limit, b.tokens + (now - b.at) * this.perMs);
    b.at = now;
    this.buckets.set(key, b);
    if (this.buckets.size > this.maxClients) this.buckets.delete(this.buckets.keys().next().value);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perMs / 1000));
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
