// Checks the built mdBook book (WORK_DIR/book) in Chromium, at / and under /book/, and its
// heading ids: node check.mjs WORK_DIR.
import { runCheck, finish, workDir } from '../common/check-lib.mjs';
import { compareAnchors, report } from '../common/anchors.mjs';

const dir = workDir();
const url = (p, a) => `/${p.replace(/\.md$/, '.html')}#${a}`;
const cacheSize = { query: 'cache size', expect: { documentPath: 'guide/caching.md', anchor: 'cache-size' }, url };

const anchors = report('mdbook', compareAnchors(`${dir}/dump.jsonl`, (p) => `${dir}/book/${p.replace(/\.md$/, '.html')}`));
const main = await runCheck({
  name: 'mdbook',
  siteDir: `${dir}/book`,
  startPath: '/guide/install.html',
  chrome: '#mdbook-menu-bar',
  spaLink: '#mdbook-sidebar a[href*="caching"]',
  cases: [
    cacheSize,
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.md', anchor: 'обновление' }, url },
  ],
});
// The same book under a sub-path (as on GitHub Pages): search.js resolves everything relative
// to itself, so nothing changes in the book.
const sub = await runCheck({
  name: 'mdbook',
  shot: 'mdbook-subpath',
  prefix: '/book/',
  siteDir: `${dir}/book`,
  startPath: '/guide/install.html',
  chrome: '#mdbook-menu-bar',
  cases: [cacheSize],
});
// mdBook does not collapse whitespace runs ("Two  spaces" → two--spaces): the sample must
// match, the edge cases may not.
finish({ name: 'mdbook', anchors, anchorsOk: anchors.sample.matched === anchors.sample.total, runs: [main, sub] });
