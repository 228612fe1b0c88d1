// <docloupe-search> on a docs site made by `index-builder site`, in real headless Chromium
// (playwright-core driving Debian's chromium): what a reader does, end to end. The site is
// served under the strict Content-Security-Policy www/README.md documents, and every test
// fails on a CSP violation, a page error or a JS dialog. Each test saves a screenshot under
// target/test-output/web/. Run by tests/web/run.sh (env: DOCLOUPE_SITE, the rendered site;
// DOCLOUPE_SITE_BUNDLE, its split bundle; DOCLOUPE_MODEL_DIR, DOCLOUPE_RERANKER_DIR).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { CSP, startServer } from '../../www/serve.mjs';
import { writeServiceWorker } from '../../www/precache.mjs';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../www/chromium.mjs';
import { env } from '../wasm/env.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const require = createRequire(path.join(ROOT, 'www/package.json'));
const { chromium } = require('playwright-core');
const AXE = require.resolve('axe-core/axe.min.js');
const SHOTS = path.join(ROOT, 'target/test-output/web');
fs.mkdirSync(SHOTS, { recursive: true });

// What the site serves, as make demo serves the demo (www/demo/search.js configures the
// component with these URLs and registers /docloupe-sw.js).
const SITE = env('DOCLOUPE_SITE');
const MOUNTS = {
  '/': SITE,
  '/data/docs/': env('DOCLOUPE_SITE_BUNDLE'),
  '/demo/': path.join(ROOT, 'www/demo'),
  '/www/': { dir: path.join(ROOT, 'www'), compress: false },
  '/models/': { dir: env('DOCLOUPE_MODEL_DIR'), compress: false },
  '/reranker/': { dir: env('DOCLOUPE_RERANKER_DIR'), compress: false },
};
const serve = () => startServer(MOUNTS, { headers: { 'Content-Security-Policy': CSP } });
// The same site with hostile pages and no CSP header: what runs there is the page's own doing.
const HOSTILE_MOUNTS = {
  ...MOUNTS,
  '/hostile/': env('DOCLOUPE_HOSTILE_SITE'),
  '/hostile-nocsp/': env('DOCLOUPE_HOSTILE_SITE_NOCSP'),
};

let server, browser, bare;

before(async () => {
  const mounts = Object.entries(MOUNTS).map(([prefix, m]) => [prefix, typeof m === 'string' ? m : m.dir]);
  await writeServiceWorker(path.join(SITE, 'docloupe-sw.js'), mounts, {
    exclude: ['/www/pkg/portable/', '/models/model.fp32.onnx'],
    lazy: ['/www/docloupe.js', '/www/host.js', '/www/inflate.js', '/www/worker.js', '/www/pkg/', '/data/', '/models/', '/reranker/'],
  });
  server = await serve();
  bare = await startServer(HOSTILE_MOUNTS);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, timeout: 60_000 });
});

after(async () => {
  await browser?.close();
  await server?.close();
  await bare?.close();
});

/**
 * A fresh visitor. Alerts/confirms, page errors and CSP violations are recorded; `check()`
 * asserts there were none.
 */
async function visit(url = '/', { origin = server.url, ...contextOptions } = {}) {
  const context = await browser.newContext(contextOptions);
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  const dialogs = [];
  const errors = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && /Content Security Policy/.test(m.text()) && errors.push(m.text()));
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.goto(origin + url);
  await page.waitForFunction(() => customElements.get('docloupe-search'));
  const check = async () => {
    assert.deepEqual(dialogs, [], 'no JS dialog');
    assert.deepEqual(errors, [], 'no page error');
    assert.deepEqual(await page.evaluate(() => window.__csp), [], 'no CSP violation');
  };
  return { context, page, check };
}

const shot = (page, name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
const box = (page) => page.getByRole('combobox', { name: 'Search the documentation' });
const options = (page) => page.locator('[role="option"]');
const selected = (page) => page.locator('[role="option"][aria-selected="true"]');
/** Resolves when the models are in: the status line has nothing left to say. */
const modelsReady = (page) =>
  page.waitForFunction(() => document.querySelector('.dls-status')?.textContent === '', null, { timeout: 120_000 });

/** Waits until the results list answers `query` itself (not a keystroke before it). */
const answered = (page, query) =>
  page.waitForFunction((q) => document.querySelector('[role="listbox"]')?.dataset.answered === q, query.trim());

async function search(page, query, open = 'Control+k') {
  await page.keyboard.press(open);
  const input = box(page);
  await input.fill('');
  await input.pressSequentially(query, { delay: 15 });
  // The answer to the whole query, not to a keystroke before it (typo and prefix matching
  // give the shorter ones results of their own).
  await answered(page, query);
  await options(page).first().waitFor();
  return input;
}

/** What the server sent under these URL prefixes since `since` requests. */
const fetched = (since, prefixes) =>
  server.stats().list.slice(since).filter((r) => prefixes.some((p) => r.url.startsWith(p))).map((r) => r.url);
const ENGINE = ['/www/docloupe.js', '/www/host.js', '/www/inflate.js', '/www/worker.js', '/www/pkg/', '/data/', '/models/', '/reranker/'];

test('a page view loads no engine, bundle or models until the reader reaches for the search', async () => {
  const since = server.stats().requests;
  const { context, page, check } = await visit('/guide/install.html');
  // The offline worker installs with the pages only.
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
  await page.waitForTimeout(500);
  assert.deepEqual(fetched(since, ENGINE), []);
  await page.getByRole('button', { name: /Search docs/ }).hover();
  await page.waitForFunction(() => document.querySelector('.dls-status')?.textContent !== 'Loading the search…');
  const loaded = fetched(since, ENGINE);
  for (const f of ['/www/docloupe.js', '/www/pkg/lexical/docloupe_bg.wasm', '/data/docs/core.bin']) assert.ok(loaded.includes(f), `${f} in ${loaded}`);
  await check();
  await context.close();
});

test('Ctrl-K opens the search; typing shows highlighted results; arrows and Enter land on the section', async () => {
  const { context, page, check } = await visit('/guide/install.html');
  await page.keyboard.press('Control+k');
  const input = box(page);
  await input.waitFor({ state: 'visible' });
  assert.equal(await input.evaluate((e) => e === document.activeElement), true, 'the input has focus');
  await input.pressSequentially('cache size', { delay: 20 });
  await answered(page, 'cache size');
  await options(page).first().waitFor();
  assert.ok(await page.locator('[role="option"] mark').count() > 0, 'terms are highlighted');
  assert.match(await options(page).first().textContent(), /Cache size/);
  assert.equal(await input.getAttribute('aria-expanded'), 'true');
  assert.equal(await input.getAttribute('aria-activedescendant'), await selected(page).getAttribute('id'));
  // Results are grouped per document, each group labelled by its title and path.
  assert.match(await page.locator('.dls-group').first().locator('.dls-doc').textContent(), /Configuring the cache.*guide\/caching\.md/);
  await shot(page, 'results');

  await page.keyboard.press('ArrowDown');
  assert.equal(await selected(page).getAttribute('data-index'), '1');
  await page.keyboard.press('ArrowUp');
  assert.match(await selected(page).textContent(), /Cache size/);
  await Promise.all([page.waitForURL(/\/guide\/caching\.html#cache-size$/), page.keyboard.press('Enter')]);
  assert.equal(await page.evaluate(() => document.querySelector(':target')?.id), 'cache-size', 'landed on the section');
  await shot(page, 'landed-on-section');
  await check();
  await context.close();
});

test('"/" and Cmd-K open it too; Esc clears, then closes and gives focus back; recent searches come back', async () => {
  const { context, page, check } = await visit('/');
  const input = await search(page, 'purge', '/');
  await Promise.all([page.waitForURL(/caching\.html#purging$/), page.keyboard.press('Enter')]);
  await page.keyboard.press('Meta+k');
  await page.getByRole('button', { name: 'purge' }).waitFor();
  await shot(page, 'recent-searches');
  await page.getByRole('button', { name: 'purge' }).click();
  await options(page).first().waitFor();
  assert.equal(await input.inputValue(), 'purge');
  await page.keyboard.press('Escape');
  assert.equal(await input.inputValue(), '');
  await page.keyboard.press('Escape');
  assert.equal(await page.locator('dialog[open]').count(), 0);

  // Opened from its button, closed with Esc: focus returns to the button.
  const button = page.getByRole('button', { name: /Search docs/ });
  await button.click();
  await input.waitFor({ state: 'visible' });
  await page.keyboard.press('Escape');
  assert.equal(await button.evaluate((b) => b === document.activeElement), true, 'focus is back on the button');
  await check();
  await context.close();
});

test('a Russian query finds the Russian page, with highlights', async () => {
  const { context, page, check } = await visit('/');
  await search(page, 'обновить сервер');
  assert.match(await options(page).first().textContent(), /Обновление/);
  assert.ok(await options(page).first().locator('mark').count() > 0);
  await shot(page, 'russian');
  await check();
  await context.close();
});

test('markup quoted in the docs is shown as text, in results and on the page; nothing runs', async () => {
  const { context, page, check } = await visit('/');
  await search(page, 'onerror script alert');
  const text = await options(page).first().textContent();
  assert.match(text, /<img src=x onerror=alert\(1\)>|<script>alert\(document\.cookie\)<\/script>/);
  assert.equal(await page.locator('[role="listbox"] img, [role="listbox"] script').count(), 0);
  await shot(page, 'markup-as-text-results');
  await Promise.all([page.waitForURL(/security\.html/), page.keyboard.press('Enter')]);
  assert.equal(await page.locator('article img, article script').count(), 0);
  assert.match(await page.locator('article').textContent(), /<script>alert\('raw html in the docs'\)<\/script>/);
  await page.waitForTimeout(300);
  await shot(page, 'markup-as-text-page');
  await check();
  await context.close();
});

test('hostile markdown: heading attributes and javascript: links run nothing, even without a CSP header', async () => {
  for (const site of ['/hostile-nocsp/', '/hostile/']) {
    const { context, page, check } = await visit(`${site}page.html`, { origin: bare.url });
    await page.waitForTimeout(300);
    // autofocus + onfocus would have run on load; focus the heading and click the link text too.
    await page.locator('h2').focus().catch(() => {});
    await page.keyboard.press('Tab');
    await page.getByText('click me').click();
    await page.getByText(/pwned-autolink/).click();
    await page.waitForTimeout(300);
    assert.equal(await page.title(), 'Hostile · Documentation', `${site}: nothing rewrote the title`);
    assert.equal(new URL(page.url()).pathname, `${site}page.html`, `${site}: no navigation`);
    const attrs = await page.evaluate(() => [...document.querySelectorAll('*')].flatMap((e) => e.getAttributeNames().filter((a) => a.startsWith('on'))));
    assert.deepEqual(attrs, [], 'no event-handler attribute on the page');
    const links = await page.evaluate(() => [...document.querySelectorAll('a[href]')].map((a) => a.href));
    assert.ok(links.every((h) => h.startsWith(bare.url)), `only same-site links: ${links}`);
    // The trap file is not a page, nor a link in the page list.
    assert.ok(!links.some((h) => /pwned/.test(decodeURIComponent(h))), `${links}`);
    const meta = await page.locator('meta[http-equiv="Content-Security-Policy"]').count();
    assert.equal(meta, site === '/hostile/' ? 1 : 0, `${site}: the default render carries the CSP`);
    await shot(page, `hostile-${site.replace(/\//g, '')}`);
    await check();
    await context.close();
  }
});

test('a result never opens a javascript: URL or another site, whatever href says', async () => {
  const { context, page, check } = await visit('/', { origin: bare.url });
  const paths = await page.evaluate(async () => {
    const { pagePath } = await import('/www/docloupe-search.js');
    return ['javascript:alert(1).md', '//elsewhere.example/x.md', 'guide/a b#c.md'].map((p) => new URL(pagePath(p), location.href).href);
  });
  assert.equal(paths[0], `${bare.url}/javascript%3Aalert(1).md`);
  assert.ok(paths.every((u) => new URL(u).origin === bare.url), `every page path stays on the site: ${paths}`);
  assert.equal(paths[2], `${bare.url}/guide/a%20b%23c.md`);
  // The models first: once in, they reset the status line, which would race the refusals'
  // message below (a flake seen on a fresh-clone run).
  await page.keyboard.press('Control+k');
  await page.waitForFunction(() => document.querySelector('.dls-status')?.textContent !== 'Loading the search…');
  await modelsReady(page);
  await page.keyboard.press('Escape');
  for (const target of ['javascript:document.title="pwned"', 'https://elsewhere.example/x', '//elsewhere.example/x', 'data:text/html,x']) {
    await page.evaluate(async (t) => {
      const { DocloupeSearch } = await import('/www/docloupe-search.js');
      DocloupeSearch.configure({ href: () => t });
    }, target);
    await search(page, 'cache size');
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    assert.equal(new URL(page.url()).pathname, '/', `${target}: no navigation`);
    assert.doesNotMatch(await page.title(), /pwned/);
    assert.match(await page.locator('.dls-status').textContent(), /cannot be opened/, target);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
  }
  await check();
  await context.close();
});

test('the hybrid answer replaces the fulltext one when the models are in, keeping the selection', async () => {
  const { context, page, check } = await visit('/');
  await page.keyboard.press('Control+k');
  // Before the models are in, the status line says the ranking is keyword-only.
  await page.waitForFunction(() => document.querySelector('.dls-status')?.textContent !== 'Loading the search…');
  const status = await page.locator('.dls-status').textContent();
  await search(page, 'where do cached responses go when it is full');
  await modelsReady(page);
  await page.keyboard.press('ArrowDown');
  const crumb = await selected(page).locator('.dls-crumb').textContent();
  await page.getByLabel('Why these results').check();
  await page.waitForFunction(() => /reranker/.test(document.querySelector('.dls-signals')?.textContent ?? ''));
  assert.match(await page.locator('.dls-signals').first().textContent(), /^score [\d.]+ · keywords [\d.]+ · meaning [\d.]+ · reranker [\d.]+$/);
  assert.equal(await selected(page).locator('.dls-crumb').textContent(), crumb, 'the selection is kept');
  assert.ok(status === '' || /still loading/.test(status), status);
  await shot(page, 'why-this-result');
  await check();
  await context.close();
});

test('"More results" adds the next page below: nothing repeated or skipped, the same as one longer page', async () => {
  const listed = (page) => options(page).evaluateAll((o) => o.map((x) => `${x.querySelector('.dls-crumb').textContent} | ${x.querySelector('.dls-snippet').textContent}`));
  // A box whose pages hold `size` results, with the hybrid (reranked) answer to `query` on screen.
  const open = async (size, query) => {
    const v = await visit('/');
    await v.page.evaluate((n) => document.querySelector('docloupe-search').setAttribute('page-size', n), String(size));
    await v.page.keyboard.press('Control+k');
    await v.page.waitForFunction(() => document.querySelector('.dls-status')?.textContent !== 'Loading the search…');
    await search(v.page, query);
    await modelsReady(v.page);
    await v.page.waitForFunction(() => document.querySelector('[role="listbox"]')?.dataset.strategy === 'bm25_plus_vector_rerank_docs_only');
    return v;
  };
  const { context, page, check } = await open(2, 'cache');
  assert.equal(await options(page).count(), 2);
  const more = page.locator('.dls-more');
  assert.match(await more.textContent(), /^More results \(2 of \d+ shown\)$/);
  for (const n of [4, 6]) {
    await more.click();
    await page.waitForFunction((k) => document.querySelectorAll('[role="option"]').length === k, n);
    assert.equal(await selected(page).count(), 1, 'a result stays selected');
  }
  const paged = await listed(page);
  await shot(page, 'more-results');
  await check();
  await context.close();
  const one = await open(6, 'cache');
  assert.deepEqual(paged, await listed(one.page), 'three pages of 2 are the page of 6');
  assert.equal(new Set(paged).size, paged.length, 'no result twice');
  await one.check();
  await one.context.close();
});

test('filter chips narrow by document type and date, with counts', async () => {
  const { context, page, check } = await visit('/');
  await search(page, 'harbor windows');
  const chip = (type) => page.locator('.dls-chip', { hasText: new RegExp(`^${type} \\d+$`) });
  await chip('txt').waitFor();
  assert.match(await chip('md').textContent(), /^md [1-9]\d*$/);
  assert.equal(await chip('txt').textContent(), 'txt 1');
  await chip('txt').click();
  await page.waitForFunction(() => [...document.querySelectorAll('.dls-path')].every((p) => p.textContent === 'notes/changelog.txt'));
  assert.equal(await chip('txt').getAttribute('aria-pressed'), 'true');
  // The other type keeps its chip and count, to be added back.
  assert.match(await chip('md').textContent(), /^md [1-9]\d*$/);
  await shot(page, 'filter-type');
  await chip('txt').click();
  await chip('md').click();
  await page.waitForFunction(() => [...document.querySelectorAll('.dls-path')].every((p) => p.textContent.endsWith('.md')));
  const before = await options(page).count();
  const from = page.getByLabel('Updated from');
  // Months with the query's counts: the fixtures are dated 2024-02, 2024-03, 2024-05, 2025-01.
  assert.deepEqual(await from.locator('option').evaluateAll((o) => o.map((x) => x.value)), ['', '2024-02', '2024-03', '2024-05', '2025-01']);
  assert.match(await from.locator('option[value="2025-01"]').textContent(), /2025 \(1\)$/);
  await from.selectOption('2025-01');
  await page.waitForFunction((n) => document.querySelectorAll('[role="option"]').length < n, before);
  for (const p of await page.locator('.dls-path').allTextContents()) assert.equal(p, 'reference/security.md');
  // The other months stay offered.
  assert.equal(await page.getByLabel('Updated from').locator('option').count(), 5);
  await shot(page, 'filter-date');
  await check();
  await context.close();
});

test('a misspelt query still finds its page, offers the correction, and a nonsense one says no results', async () => {
  const { context, page, check } = await visit('/');
  await page.keyboard.press('Control+k');
  await box(page).pressSequentially('harbr purgng', { delay: 15 });
  await answered(page, 'harbr purgng');
  // Typo tolerance: both words are one or two edits off ("harbor purging"); the page that has
  // them is found, and the corrected query is offered above the results.
  const suggestion = page.locator('.dls-suggestion', { hasText: 'harbor' }).first();
  await suggestion.waitFor();
  await options(page).first().waitFor();
  assert.equal(await page.locator('.dls-empty').count(), 0);
  assert.match(await options(page).first().textContent(), /purg/i);
  await shot(page, 'suggestions');
  await suggestion.click();
  await options(page).first().waitFor();
  assert.match(await box(page).inputValue(), /^harbor /);
  // A query with nothing close in the collection: no results, said so.
  await box(page).fill('');
  await box(page).pressSequentially('qxzvw jjkvq', { delay: 15 });
  await page.locator('.dls-empty', { hasText: 'No results for “qxzvw jjkvq”' }).waitFor();
  await check();
  await context.close();
});

test('works on a 375 px wide screen and at 200 % zoom', async () => {
  for (const [name, viewport, scale] of [['narrow-375', { width: 375, height: 720 }, 1], ['zoom-200', { width: 640, height: 400 }, 2]]) {
    const { context, page, check } = await visit('/guide/caching.html', { viewport, deviceScaleFactor: scale });
    await page.getByRole('button', { name: /Search docs/ }).click();
    await box(page).pressSequentially('install windows', { delay: 15 });
    await answered(page, 'install windows');
    await options(page).first().waitFor();
    const layout = await page.evaluate(() => {
      const box = (s) => document.querySelector(s).getBoundingClientRect();
      return { overflow: document.documentElement.scrollWidth - window.innerWidth, input: box('.dls-input'), option: box('[role="option"]'), width: window.innerWidth };
    });
    assert.ok(layout.overflow <= 0, `${name}: ${layout.overflow}px of horizontal overflow`);
    for (const b of [layout.input, layout.option]) assert.ok(b.left >= 0 && b.right <= layout.width && b.width > 150, `${name}: ${JSON.stringify(b)}`);
    await shot(page, name);
    await check();
    await context.close();
  }
});

test('no serious or critical accessibility violations (axe-core), light and dark', async () => {
  for (const colorScheme of ['light', 'dark']) {
    // bypassCSP only so that axe itself can be injected.
    const { context, page } = await visit('/guide/install.html', { colorScheme, bypassCSP: true });
    await page.addScriptTag({ path: AXE });
    const audit = () =>
      page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations
          .filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
      });
    assert.deepEqual(await audit(), [], `${colorScheme}: the page`);
    await search(page, 'cache size');
    await page.getByLabel('Why these results').check();
    assert.deepEqual(await audit(), [], `${colorScheme}: the open search with results`);
    const bg = await page.locator('.dls-dialog').evaluate((d) => getComputedStyle(d).backgroundColor);
    const [r, g, b] = bg.match(/\d+/g).map(Number);
    assert.equal(r + g + b < 150, colorScheme === 'dark', `${colorScheme} theme background ${bg}`);
    await shot(page, `theme-${colorScheme}`);
    await context.close();
  }
});

/** Registers the site's offline worker and resolves with the state it ends in. */
const installState = (page) =>
  page.evaluate(async () => {
    const reg = await navigator.serviceWorker.register('/docloupe-sw.js');
    const w = reg.installing ?? reg.waiting ?? reg.active;
    if (w.state === 'activated' || w.state === 'redundant') return w.state;
    return new Promise((resolve) => {
      w.addEventListener('statechange', () => ['activated', 'redundant'].includes(w.state) && resolve(w.state));
    });
  });

test('service worker (regressions): keeps no no-store or private answer, never caches a file that is not the manifest\'s, and fails an install over a changed file', async () => {
  const tmp = fs.mkdtempSync(path.join(SITE, '..', 'sw-'));
  try {
    const copy = (from, to) => fs.cpSync(from, to, { recursive: true });
    const [site, data] = [path.join(tmp, 'site'), path.join(tmp, 'data')];
    copy(SITE, site);
    copy(env('DOCLOUPE_SITE_BUNDLE'), data);
    fs.mkdirSync(path.join(tmp, 'private'));
    fs.writeFileSync(path.join(tmp, 'private', 'account.html'), '<p>private</p>');
    fs.mkdirSync(path.join(tmp, 'open'));
    fs.writeFileSync(path.join(tmp, 'open', 'note.html'), '<p>open</p>');
    const mounts = { ...MOUNTS, '/': site, '/data/docs/': data };
    const dirs = Object.entries(mounts).map(([prefix, m]) => [prefix, typeof m === 'string' ? m : m.dir]);
    await writeServiceWorker(path.join(site, 'docloupe-sw.js'), dirs, {
      exclude: ['/www/pkg/portable/', '/models/model.fp32.onnx'],
      lazy: ['/www/docloupe.js', '/www/host.js', '/www/inflate.js', '/www/worker.js', '/www/pkg/', '/data/', '/models/', '/reranker/'],
    });
    const own = await startServer({
      ...mounts,
      '/private/': { dir: path.join(tmp, 'private'), headers: { 'Cache-Control': 'private, no-store' } },
      '/open/': path.join(tmp, 'open'),
    }, { headers: { 'Content-Security-Policy': CSP } });
    try {
      const { context, page, check } = await visit('/', { origin: own.url });
      assert.equal(await installState(page), 'activated');
      await page.reload();
      await page.waitForFunction(() => Boolean(navigator.serviceWorker.controller));
      // A listed (lazy) file whose bytes are not the manifest's: served, not cached.
      fs.appendFileSync(path.join(data, 'docs.bin'), 'changed');
      const kept = await page.evaluate(async () => {
        const got = await Promise.all(['/private/account.html', '/open/note.html', '/data/docs/docs.bin'].map((u) => fetch(u).then((r) => r.status)));
        await new Promise((r) => setTimeout(r, 500));
        const runtime = await (await caches.open('docloupe-runtime')).keys();
        const name = (await caches.keys()).find((n) => n.startsWith('docloupe-') && n !== 'docloupe-runtime');
        const changed = await (await caches.open(name)).match('/data/docs/docs.bin');
        return { got, runtime: runtime.map((r) => new URL(r.url).pathname), changed: Boolean(changed) };
      });
      assert.deepEqual(kept.got, [200, 200, 200]);
      assert.ok(kept.runtime.includes('/open/note.html'), JSON.stringify(kept));
      assert.ok(!kept.runtime.includes('/private/account.html'), 'a no-store answer is not kept');
      assert.equal(kept.changed, false, 'a file whose bytes are not the manifest\'s is not cached');
      await check();
      await context.close();
      // A page changed after the manifest was written: the install fails, nothing is cached.
      fs.appendFileSync(path.join(site, 'index.html'), '<!-- changed -->');
      const fresh = await visit('/', { origin: own.url });
      assert.equal(await installState(fresh.page), 'redundant');
      await fresh.context.close();
    } finally {
      await own.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

test('offline: after one visit the site, the engine, the bundle and the models come from the service worker', async () => {
  // A server of its own, stopped halfway: nothing can come from the network after that.
  const own = await serve();
  const { context, page, check } = await visit('/', { origin: own.url });
  await search(page, 'purge');
  assert.equal(await page.evaluate(() => customElements.get('docloupe-search').offlineReady()), true);
  await modelsReady(page);
  await own.close();

  await page.reload();
  await page.waitForFunction(() => customElements.get('docloupe-search'));
  assert.equal(await page.evaluate(() => Boolean(navigator.serviceWorker.controller)), true);
  await search(page, 'cache size');
  assert.match(await options(page).first().textContent(), /Cache size/);
  await modelsReady(page);
  await page.getByLabel('Why these results').check();
  await page.waitForFunction(() => /reranker/.test(document.querySelector('.dls-signals')?.textContent ?? ''));
  await shot(page, 'offline');
  // A page never visited is offline too (the whole site was precached).
  await Promise.all([page.waitForURL(/security\.html/), page.goto(`${own.url}/reference/security.html`)]);
  assert.match(await page.locator('article h1').textContent(), /Security notes/);
  await check();
  await context.close();
});
