// Checks the built Docusaurus site (WORK_DIR/build, and build-sub built for /harbor/) in
// Chromium, and its heading ids: node check.mjs WORK_DIR.
import { runCheck, finish, workDir } from '../common/check-lib.mjs';
import { compareAnchors, report } from '../common/anchors.mjs';

const dir = workDir();
const page = (p) => p.replace(/\.md$/, '').replace(/(^|\/)index$/, '$1');
const url = (p, a) => `/docs/${page(p)}#${a}`;
const cacheSize = { query: 'cache size', expect: { documentPath: 'guide/caching.md', anchor: 'cache-size' }, url };

const comparison = compareAnchors(`${dir}/dump.jsonl`, (p) => `${dir}/build/docs/${page(p)}/index.html`.replace('//index', '/index'));
const anchors = report('docusaurus', comparison);
const main = await runCheck({
  name: 'docusaurus',
  siteDir: `${dir}/build`,
  startPath: '/docs/guide/install',
  chrome: '.navbar',
  spaLink: '.theme-doc-sidebar-container a[href*="caching"]',
  cases: [
    cacheSize,
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.md', anchor: 'обновление' }, url },
  ],
});
const sub = await runCheck({
  name: 'docusaurus',
  shot: 'docusaurus-subpath',
  prefix: '/harbor/',
  siteDir: `${dir}/build-sub`,
  startPath: '/docs/guide/install',
  chrome: '.navbar',
  cases: [cacheSize],
});
// A page's `# Title` has no id in Docusaurus (search.js links that section to the page); with
// remark-docloupe-ids.mjs every other heading must match.
const idless = (r) => r.theirs?.length === 1 && r.theirs[0] === null;
finish({ name: 'docusaurus', anchors, anchorsOk: comparison.rows.every((r) => r.ok || idless(r)), runs: [main, sub] });
