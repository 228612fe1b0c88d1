// Checks the built mdBook book (WORK_DIR/book) in Chromium, at / and under /book/: every result
// of its index lands on its page and anchor, and the search box lands on the answer.
// node check.mjs WORK_DIR
import { runCheck, checkEveryResult, finish, workDir, landedAnchors } from '../common/check-lib.mjs';

const dir = workDir();
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
  { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
];
const every = [];
const runs = [];
// The same book under a sub-path (as on GitHub Pages): every URL is relative to the book.
for (const prefix of ['/', '/book/']) {
  every.push(await checkEveryResult({ name: 'mdbook', siteDir: `${dir}/book`, prefix, dumpFile: `${dir}/dump.jsonl` }));
  runs.push(await runCheck({
    name: 'mdbook',
    shot: prefix === '/' ? 'mdbook' : 'mdbook-subpath',
    prefix,
    siteDir: `${dir}/book`,
    startPath: '/guide/install.html',
    chrome: '#mdbook-menu-bar',
    spaLink: prefix === '/' ? '#mdbook-sidebar a[href*="caching"]' : undefined,
    cases: prefix === '/' ? cases : cases.slice(0, 1),
  }));
}
finish({ name: 'mdbook', ...landedAnchors(every), runs });
