// The offline service worker's logic. Not served as it is: `precache.mjs` writes the site's
// `docloupe-sw.js` as a precache manifest (every file's URL and content hash) followed by this
// file, so any change to any listed file changes the worker's bytes, the browser installs the
// new version, and it caches the new files under a new name before dropping the old cache.
//
// - install: fetches the site's pages and the files they need into `docloupe-<version>`; a
//   failed fetch fails the install and the previous version stays in charge. Files listed as
//   *lazy* (the engine, the bundle, the models: precache.mjs --lazy) are fetched only when a
//   page asks (`{type: 'docloupe-prefetch'}`, sent by <docloupe-search> when a reader starts
//   searching), so a visit without a search costs no more than the pages; the worker answers
//   on the message's port when all of them are cached. The browser's HTTP cache usually
//   answers for what the page itself already loaded, so nothing is fetched twice.
// - fetch: a listed file (query string ignored: the JS host imports its glue as
//   `docloupe.js?instance=N`) comes from that cache, falling back to the network; anything
//   else same-origin goes to the network first and is kept in `docloupe-runtime` for when the
//   network is gone.
// - activate: deletes every other `docloupe-` cache and takes control of open pages.
/* global DOCLOUPE_PRECACHE */
const { version, files } = self.DOCLOUPE_PRECACHE;
const CACHE = `docloupe-${version}`;
const RUNTIME = 'docloupe-runtime';
const scope = self.registration.scope;
const listed = new Set(files.map(([url]) => new URL(url, scope).href));

/** Caches every file of `rows` not cached yet, small ones first. */
async function precache(rows) {
  const cache = await caches.open(CACHE);
  for (const [url] of [...rows].sort((a, b) => a[2] - b[2])) {
    const href = new URL(url, scope).href;
    if (await cache.match(href)) continue;
    const response = await fetch(href, { cache: 'default' });
    if (!response.ok) throw new Error(`precache ${href}: HTTP ${response.status}`);
    await cache.put(href, response);
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
        if (response.ok) await cache.put(key, response.clone());
        return response;
      })(),
    );
    return;
  }
  event.respondWith(
    (async () => {
      try {
        const response = await fetch(request);
        if (response.ok) {
          const runtime = await caches.open(RUNTIME);
          await runtime.put(request, response.clone());
        }
        return response;
      } catch (error) {
        const hit = await caches.match(request, { ignoreSearch: request.mode === 'navigate' });
        if (hit) return hit;
        throw error;
      }
    })(),
  );
});
