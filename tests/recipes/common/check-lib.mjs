// Drives Chromium (playwright-core from www/node_modules, the Chromium www/chromium.mjs names;
// never downloads a browser) through a built site: Ctrl+K, a query, the first result, Enter;
// then checks where it landed.
//   runCheck({name, siteDir, startPath, chrome, cases: [{query, expect: {documentPath, anchor}, url}]})
// `url(documentPath, anchor)` is the page URL (path + '#' + anchor) the generator gives that
// section; `chrome` a selector the <docloupe-search> element must sit inside (navbar/header).
// Screenshots go to target/test-output/recipes/shots/, results to target/test-output/recipes/.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../../www/serve.mjs';
import { CHROMIUM_PATH, CHROMIUM_ARGS } from '../../../www/chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const { chromium } = createRequire(path.join(ROOT, 'www/package.json'))('playwright-core');
export const OUT = path.join(ROOT, 'target/test-output/recipes');
const SHOTS = path.join(OUT, 'shots');
fs.mkdirSync(SHOTS, { recursive: true });

/** The generator's work copy (built there by its build.sh): check.mjs's first argument. */
export function workDir() {
  const dir = process.argv[2];
  if (!dir || !fs.existsSync(dir)) throw new Error(`usage: node check.mjs WORK_DIR (the built project copy); got ${dir}`);
  return path.resolve(dir);
}

export async function runCheck({ name, siteDir, startPath = '/', chrome, cases, mounts = {}, spaLink, prefix = '/', shot = name }) {
  // `prefix`: serve the site under a sub-path (a base URL), e.g. '/book/'.
  const server = await startServer({ [prefix]: { dir: siteDir, compress: false }, ...mounts });
  const base = prefix.replace(/\/$/, '');
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  const out = { name, pass: true, cases: [], console: [] };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${m.type()}: ${m.text()}`.slice(0, 300)); });
    page.on('pageerror', (e) => out.console.push(`pageerror: ${e.message}`.slice(0, 300)));
    page.on('response', (res) => { if (res.status() >= 400) out.console.push(`HTTP ${res.status()}: ${new URL(res.url()).pathname}`); });
    page.on('dialog', (d) => { out.console.push(`dialog: ${d.message()}`); d.dismiss(); });
    let navigated = null;
    await page.exposeFunction('__docloupeNavigated', (detail) => { navigated = JSON.parse(detail); });
    await page.addInitScript(() => document.addEventListener('docloupe-navigate',
      (e) => window.__docloupeNavigated(JSON.stringify({ href: e.detail.href, documentPath: e.detail.result.documentPath, anchor: e.detail.result.anchor }))));

    for (const [i, c] of cases.entries()) {
      const r = { query: c.query, expect: c.expect };
      out.cases.push(r);
      try {
        navigated = null;
        await page.goto(server.url + base + startPath, { waitUntil: 'load' });
        // After hydration (frameworks re-render the page), the element must still be ours.
        await page.waitForTimeout(1500);
        r.element = await page.evaluate((chrome) => {
          const e = document.querySelector('docloupe-search');
          if (!e) return { present: false };
          return {
            present: true,
            upgraded: customElements.get('docloupe-search') !== undefined && e instanceof customElements.get('docloupe-search'),
            drawn: !!e.querySelector('button.dls-button'),
            inChrome: chrome ? !!e.closest(chrome) : null,
            count: document.querySelectorAll('docloupe-search').length,
          };
        }, chrome);
        if (i === 0 && spaLink) {
          // A client-side (router) navigation first: the element must survive it.
          const before = page.url();
          await page.click(spaLink);
          await page.waitForURL((u) => u.href !== before, { timeout: 10000 });
          await page.waitForTimeout(1000);
          r.afterSpaNav = await page.evaluate(() => {
            const e = document.querySelector('docloupe-search');
            return { url: location.pathname, present: !!e, drawn: !!e?.querySelector('button.dls-button'), count: document.querySelectorAll('docloupe-search').length };
          });
          r.clientSide = await page.evaluate(() => performance.getEntriesByType('navigation')[0]?.name !== location.href);
        }
        await page.keyboard.press('Control+k');
        await page.waitForSelector('dialog.dls-dialog[open] input.dls-input', { timeout: 10000 });
        // "Why these results" on: each option shows its ranking signals (a reranker score means
        // the hybrid, reranked answer is on screen).
        await page.click('.dls-why input');
        await page.focus('input.dls-input');
        await page.keyboard.type(c.query, { delay: 20 });
        const typed = Date.now();
        await page.waitForSelector('[role="option"]', { timeout: 30000 });
        r.firstResultMs = Date.now() - typed;
        // Let the hybrid (reranked) answer replace the keyword one when the models are in.
        r.reranked = await page.waitForFunction(() => /reranker/.test(document.querySelector('[role="option"] .dls-signals')?.textContent ?? ''), null, { timeout: 120000 })
          .then(() => true, () => false);
        r.rerankedMs = Date.now() - typed;
        await page.waitForTimeout(500);
        r.status = await page.$eval('.dls-status', (e) => e.textContent);
        r.top = await page.$$eval('[role="option"]', (opts) => opts.slice(0, 3).map((o) => o.querySelector('.dls-crumb').textContent));
        r.signals = await page.$eval('[role="option"] .dls-signals', (e) => e.textContent).catch(() => null);
        if (i === 0) await page.screenshot({ path: path.join(SHOTS, `${shot}.png`) });
        await Promise.all([page.waitForURL((u) => u.hash.length > 1, { timeout: 30000 }), page.keyboard.press('Enter')]);
        await page.waitForLoadState('load');
        await page.waitForTimeout(500);
        r.navigated = navigated;
        r.landed = decodeURI(page.url().slice(server.url.length));
        r.anchorElement = await page.evaluate(() => {
          const id = decodeURIComponent(location.hash.slice(1));
          const e = document.getElementById(id);
          return e ? `${e.tagName.toLowerCase()}#${id}` : null;
        });
        if (i === 0) await page.screenshot({ path: path.join(SHOTS, `${shot}-landed.png`) });
        const want = base + decodeURI(c.url(c.expect.documentPath, c.expect.anchor));
        r.wantUrl = want;
        r.pass = (!r.afterSpaNav || (r.afterSpaNav.drawn && r.afterSpaNav.count === 1)) && r.element.present && r.element.upgraded && r.element.drawn && r.element.inChrome !== false
          && r.reranked && r.landed === want && !!r.anchorElement
          && navigated?.documentPath === c.expect.documentPath && navigated?.anchor === c.expect.anchor;
      } catch (e) {
        r.error = String(e.message ?? e).split('\n')[0];
        r.pass = false;
        await page.screenshot({ path: path.join(SHOTS, `${shot}-error-${i}.png`) }).catch(() => {});
      }
      out.pass &&= r.pass;
    }
    // At phone width: is the search button still on screen (in the header or its menu)?
    await page.setViewportSize({ width: 375, height: 740 });
    await page.goto(server.url + base + startPath, { waitUntil: 'load' });
    await page.waitForTimeout(1000);
    out.mobile = await page.evaluate(() => [...document.querySelectorAll('docloupe-search button.dls-button')].map((b) => {
      const r = b.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.right <= innerWidth + 1 ? 'visible' : 'hidden';
    }));
    await page.screenshot({ path: path.join(SHOTS, `${shot}-375px.png`) });
    out.pass &&= out.mobile.includes('visible');
  } finally {
    out.notFound = [...new Set(server.stats().list.filter((x) => x.status >= 400).map((x) => `${x.status} ${decodeURI(x.url)}`))];
    await browser.close();
    await server.close();
  }
  // A missing favicon is the sample site's; a missing docloupe file is the recipe's fault.
  if (out.notFound.some((u) => u.includes('/docloupe/'))) out.pass = false;
  for (const r of out.cases) {
    console.log(`${name}: ${r.pass ? 'PASS' : 'FAIL'} "${r.query}" → ${r.landed ?? '-'} (want ${r.wantUrl ?? '-'}; anchor element: ${r.anchorElement ?? 'none'})`);
    if (r.afterSpaNav) console.log(`  after a router navigation to ${decodeURI(r.afterSpaNav.url)}: element ${r.afterSpaNav.drawn ? 'still drawn' : 'LOST'} (${r.afterSpaNav.count} on page; client-side: ${r.clientSide})`);
    console.log(`  top: ${JSON.stringify(r.top?.[0])}; signals: ${r.signals}; first result ${r.firstResultMs} ms after typing, reranked result ${r.reranked ? `${r.rerankedMs} ms` : 'never (keyword results only)'}`);
    if (!r.pass) console.log(`  ${JSON.stringify({ element: r.element, navigated: r.navigated, top: r.top, status: r.status, error: r.error })}`);
  }
  console.log(`${name}: at 375 px: search button ${out.mobile?.join(', ') || 'absent'}`);
  if (out.notFound.length) console.log(`${name}: HTTP errors: ${out.notFound.join(', ')}`);
  if (out.console.length) console.log(`${name}: console: ${[...new Set(out.console)].slice(0, 8).join(' | ')}`);
  console.log(`${name}: served at ${prefix}: ${out.pass ? 'PASS' : 'FAIL'}`);
  fs.writeFileSync(path.join(OUT, `${shot}-result.json`), JSON.stringify(out, null, 2));
  return out;
}

/**
 * The generator's verdict: every Chromium run passed and the anchors are as good as the
 * recipe promises (`anchorsOk`); both anchor sets must be non-empty, so an empty dump fails.
 * Writes target/test-output/recipes/<name>.json (read by summary.mjs) and sets the exit code.
 */
export function finish({ name, anchors, anchorsOk, runs }) {
  const counts = (p) => `${p.matched}/${p.total}`;
  const anchorsPass = anchors.sample.total > 0 && anchors.edge.total > 0 && anchorsOk;
  const pass = anchorsPass && runs.length > 0 && runs.every((r) => r.pass);
  const summary = {
    name, pass,
    anchors: { pass: anchorsPass, sample: counts(anchors.sample), edge: counts(anchors.edge) },
    landed: runs.flatMap((r) => r.cases.map((c) => ({ query: c.query, landed: c.landed ?? null, want: c.wantUrl ?? null, anchorElement: c.anchorElement ?? null, pass: !!c.pass }))),
    mobile: runs.map((r) => r.mobile),
  };
  fs.writeFileSync(path.join(OUT, `${name}.json`), JSON.stringify(summary, null, 2));
  if (!anchorsPass) console.log(`${name}: anchors: FAIL`);
  console.log(`${name}: ${pass ? 'PASS' : 'FAIL'}`);
  process.exitCode = pass ? 0 : 1;
}

/**
 * Every result a site's index can give lands: for each chunk of `dumpFile` (`index-builder
 * dump` JSON lines), the URL <docloupe-search> opens for it (`resultHref`, loaded from the
 * site's own copy of the component at `component`) must answer 200 with an element whose id
 * is the anchor. Returns {name, prefix, total, landed, failures}.
 */
export async function checkEveryResult({ name, siteDir, prefix = '/', dumpFile, component = 'docloupe/docloupe-search.js', startPath = '/' }) {
  const seen = new Set();
  const targets = [];
  for (const line of fs.readFileSync(dumpFile, 'utf8').split('\n').filter(Boolean)) {
    const c = JSON.parse(line);
    const key = `${c.documentPath}#${c.anchor ?? ''}`;
    if (!seen.has(key)) {
      seen.add(key);
      targets.push({ documentPath: c.documentPath, anchor: c.anchor ?? '' });
    }
  }
  const server = await startServer({ [prefix]: { dir: siteDir, compress: false } });
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS });
  const out = { name, prefix, total: targets.length, landed: 0, failures: [], targets: [] };
  try {
    const page = await browser.newPage();
    await page.goto(server.url + prefix.replace(/\/$/, '') + startPath, { waitUntil: 'load' });
    const hrefs = await page.evaluate(async ({ component, prefix, targets }) => {
      const { resultHref } = await import(new URL(prefix + component, location.href).href);
      const root = new URL(prefix, location.href);
      return targets.map((t) => resultHref(t, root));
    }, { component, prefix, targets });
    for (const [i, t] of targets.entries()) {
      const href = hrefs[i];
      // From a blank page: a hash-only change of the same page would be no navigation at all.
      await page.goto('about:blank');
      const res = await page.goto(href, { waitUntil: 'load' });
      const found = await page.evaluate(() => {
        const id = decodeURIComponent(location.hash.slice(1));
        return id === '' || !!document.getElementById(id);
      });
      const pass = res?.status() === 200 && found;
      out.targets.push({ ...t, pass });
      if (pass) out.landed++;
      else out.failures.push({ ...t, href: decodeURI(href), status: res?.status(), anchorFound: found });
    }
  } finally {
    await browser.close();
    await server.close();
  }
  console.log(`${name} at ${prefix}: ${out.landed}/${out.total} results land on their page and anchor`);
  for (const f of out.failures.slice(0, 10)) console.log(`  FAIL ${JSON.stringify(f)}`);
  out.pass = out.total > 0 && out.landed === out.total;
  return out;
}

/**
 * finish()'s `anchors` from checkEveryResult runs: the sample pages' results and the heading
 * edge cases' (the pages of an extra/ folder), landed of total; all must land.
 */
export function landedAnchors(every) {
  const tally = (keep) => {
    const ts = every.flatMap((r) => r.targets).filter((t) => keep(t.documentPath));
    return { matched: ts.filter((t) => t.pass).length, total: ts.length };
  };
  const edgeCase = (p) => /(^|\/)extra\//.test(p);
  const sample = tally((p) => !edgeCase(p));
  const edge = tally(edgeCase);
  return { anchors: { sample, edge }, anchorsOk: sample.matched === sample.total && edge.matched === edge.total };
}

/** The anchor the index gives the section titled `heading` of `documentPath` (from a dump). */
export function anchorOf(dumpFile, documentPath, heading) {
  for (const line of fs.readFileSync(dumpFile, 'utf8').split('\n').filter(Boolean)) {
    const c = JSON.parse(line);
    if (c.documentPath === documentPath && c.sectionPath?.at(-1) === heading) return c.anchor;
  }
  throw new Error(`no section "${heading}" of ${documentPath} in ${dumpFile}`);
}

/**
 * A recipe's whole check: for each build ({site, prefix, dump}: the built folder, the path it
 * is served at, its index's dump), every result lands (checkEveryResult) and the search box
 * lands on the answer (runCheck: all `cases` and the router navigation on the first build, the
 * first case on the others); then finish().
 */
export async function checkSite({ name, builds, startPath, chrome, spaLink, cases }) {
  const every = [];
  const runs = [];
  for (const [i, { site, prefix, dump }] of builds.entries()) {
    every.push(await checkEveryResult({ name, siteDir: site, prefix, dumpFile: dump }));
    runs.push(await runCheck({
      name,
      shot: i === 0 ? name : `${name}-subpath`,
      siteDir: site,
      prefix,
      startPath,
      chrome,
      spaLink: i === 0 ? spaLink : undefined,
      cases: i === 0 ? cases : cases.slice(0, 1),
    }));
  }
  finish({ name, ...landedAnchors(every), runs });
}

/** `url(documentPath, anchor)` for runCheck: an indexed page where the site serves it. */
export const servedUrl = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
