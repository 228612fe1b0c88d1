// The offline service worker's logic. Not served as it is: `precache.mjs` writes the site's
// `docloupe-sw.js` as a precache manifest (every file's URL and content hash) followed by this
// file, so any change to any listed file changes the worker's bytes, the browser installs the
// new version, and it caches the new files under a new name before dropping the old cache.
//
// - install: fetches the site's pages and the files they need into `docloupe-<version>`, each
//   checked against the sha256 in the manifest; a failed fetch or a wrong file fails the
//   install and the previous version stays in charge. Files listed as
//   *lazy* (the engine, the bundle, the models: precache.mjs --lazy) are fetched only when a
//   page asks (`{type: 'docloupe-prefetch'}`, sent by <docloupe-search> when a reader starts
//   searching), so a visit without a search costs no more than the pages; the worker answers
//   on the message's port when all of them are cached. The browser's HTTP cache usually
//   answers for what the page itself already loaded, so nothing is fetched twice.
// - fetch: a listed file (query string ignored: the JS host imports its glue as
//   `docloupe.js?instance=N`) comes from that cache, falling back to the network (and is
//   cached then only if its bytes match the manifest's hash); anything else same-origin goes
//   to the network first, and a whole 200 answer that does not say `no-store` or `private` is
//   kept in `docloupe-runtime` (the latest 100) for when the network is gone. A failure to
//   cache never fails the fetch.
// - activate: deletes every other `docloupe-` cache and takes control of open pages.
/* global DOCLOUPE_PRECACHE */
const { version, files } = self.DOCLOUPE_PRECACHE;
const CACHE = `docloupe-${version}`;
const RUNTIME = 'docloupe-runtime';
const scope = self.registration.scope;
const listed = new Set(files.map(([url]) => new URL(url, scope).href));

const hashes = new Map(files.map(([url, hash]) => [new URL(url, scope).href, hash]));
/** Entries of the runtime cache at most (oldest dropped first). */
const RUNTIME_MAX = 100;

/** The first 16 hex digits of the sha256 of a response's body, as precache.mjs lists them. */
async function hashOf(response) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await response.arrayBuffer()));
  return [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** Whether `response` is the listed file `href` byte for byte (not a newer or a forged one). */
async function matchesManifest(href, response) {
  return response.status === 200 && (await hashOf(response.clone())) === hashes.get(href);
}

/** Caches every file of `rows` not cached yet, small ones first, each checked against its hash. */
async function precache(rows) {
  const cache = await caches.open(CACHE);
  for (const [url] of [...rows].sort((a, b) => a[2] - b[2])) {
    const href = new URL(url, scope).href;
    if (await cache.match(href)) continue;
    const response = await fetch(href, { cache: 'default' });
    if (!response.ok) throw new Error(`precache ${href}: HTTP ${response.status}`);
    if (!(await matchesManifest(href, response))) throw new Error(`precache ${href}: not the file the manifest lists`);
    await cache.put(href, response);
  }
}

/**
 * Whether an unlisted response may be kept for offline use: a whole (200), same-origin answer
 * that does not ask to stay out of caches (`no-store`, `private`) and varies on nothing.
 */
function keepable(response) {
  const control = (response.headers.get('Cache-Control') ?? '').toLowerCase();
  return (
    response.status === 200 &&
    response.type === 'basic' &&
    !/\b(no-store|private)\b/.test(control) &&
    response.headers.get('Vary') !== '*'
  );
}

/** Keeps `response` for `request` in the runtime cache, bounded; never throws. */
async function keep(request, response) {
  try {
    const runtime = await caches.open(RUNTIME);
    await runtime.put(request, response);
    const keys = await runtime.keys();
    for (const old of keys.slice(0, Math.max(0, keys.length - RUNTIME_MAX))) await runtime.delete(old);
  } catch {
    // Quota, a body already used: caching is a convenience, the answer stands.
  }
}

self.addEventListener('install', (event) => {
  event.waitUntil(precache(files.filter((f) => !f[3])).then(() => self.skipWaiting()));
});

let prefetching = null;
self.addEventListener('message', (event) => {
  if (event.data?.type !== 'docloupe-prefetch') return;
  prefetching ??= precache(files.filter((f) => f[3])).catch((e) => {
    prefetching = null; // the next search tries again
    throw e;
  });
  const reply = event.ports[0];
  event.waitUntil(
    prefetching.then(
      () => reply?.postMessage({ ok: true, version }),
      (e) => reply?.postMessage({ ok: false, message: String(e?.message ?? e) }),
    ),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) {
        if (name.startsWith('docloupe-') && name !== CACHE && name !== RUNTIME) await caches.delete(name);
      }
      await self.clients.claim();
    })(),
  );
});

const withoutSearch = (href) => {
  const url = new URL(href);
  url.search = '';
  url.hash = '';
  return url.href;
};

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return;
  const key = withoutSearch(request.url);
  if (listed.has(key)) {
    event.respondWith(
      (async () => {
        const cache = await caches.open(CACHE);
        const hit = await cache.match(key);
        if (hit) return hit;
        const response = await fetch(request);
        // Cached only when it is the listed file (a newer deploy's file is served, not kept).
        const store = response.clone();
        event.waitUntil(
          (async () => {
            try {
              if (await matchesManifest(key, store.clone())) await cache.put(key, store);
            } catch {
              // Caching failed (quota, a partial response): the reader still gets the file.
            }
          })(),
        );
        return response;
      })(),
    );
    return;
  }
  event.respondWith(
    (async () => {
      try {
        const response = await fetch(request);
        if (keepable(response)) event.waitUntil(keep(request, response.clone()));
        return response;
      } catch (error) {
        const hit = await caches.match(request, { ignoreSearch: request.mode === 'navigate' });
        if (hit) return hit;
        throw error;
      }
    })(),
  );
});
