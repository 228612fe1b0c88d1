// Checks the built Docusaurus site (WORK_DIR/build, and build-sub built for /harbor/) in
// Chromium: every result of each index lands on its page and anchor (a page's `# Title` has no
// id in Docusaurus: its section opens the page), and the search box lands on the answer.
// node check.mjs WORK_DIR
import { runCheck, checkEveryResult, finish, workDir, landedAnchors } from '../common/check-lib.mjs';

const dir = workDir();
// Docusaurus serves docs/guide/caching.md at docs/guide/caching/ (written as …/index.html).
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'docs/guide/caching/index.html', anchor: 'cache-size' }, url },
  { query: 'обновить сервер', expect: { documentPath: 'docs/ru/установка/index.html', anchor: 'обновление' }, url },
];
const every = [];
const runs = [];
for (const [site, prefix, dump] of [['build', '/', 'dump.jsonl'], ['build-sub', '/harbor/', 'dump-sub.jsonl']]) {
  every.push(await checkEveryResult({ name: 'docusaurus', siteDir: `${dir}/${site}`, prefix, dumpFile: `${dir}/${dump}` }));
  runs.push(await runCheck({
    name: 'docusaurus',
    shot: prefix === '/' ? 'docusaurus' : 'docusaurus-subpath',
    prefix,
    siteDir: `${dir}/${site}`,
    startPath: '/docs/guide/install',
    chrome: '.navbar',
    spaLink: prefix === '/' ? '.theme-doc-sidebar-container a[href*="caching"]' : undefined,
    cases: prefix === '/' ? cases : cases.slice(0, 1),
  }));
}
finish({ name: 'docusaurus', ...landedAnchors(every), runs });
