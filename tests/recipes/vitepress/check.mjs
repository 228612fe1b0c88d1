// Checks the VitePress site (WORK_DIR/dist, and dist-sub built for /harbor/) in Chromium: every
// result of each index lands on its page and anchor, and the search box lands on the answer.
// node check.mjs WORK_DIR
import { runCheck, checkEveryResult, finish, workDir, landedAnchors } from '../common/check-lib.mjs';

const dir = workDir();
// VitePress serves guide/caching.md at guide/caching.html, its own ids on the headings.
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
  { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
];
const every = [];
const runs = [];
for (const [site, prefix, dump] of [['dist', '/', 'dump.jsonl'], ['dist-sub', '/harbor/', 'dump-sub.jsonl']]) {
  every.push(await checkEveryResult({ name: 'vitepress', siteDir: `${dir}/${site}`, prefix, dumpFile: `${dir}/${dump}` }));
  runs.push(await runCheck({
    name: 'vitepress',
    shot: prefix === '/' ? 'vitepress' : 'vitepress-subpath',
    siteDir: `${dir}/${site}`,
    prefix,
    startPath: '/guide/install.html',
    chrome: '.VPNavBar',
    spaLink: prefix === '/' ? '.VPSidebar a[href*="caching"]' : undefined,
    cases: prefix === '/' ? cases : cases.slice(0, 1),
  }));
}
finish({ name: 'vitepress', ...landedAnchors(every), runs });
