// Checks the built VitePress site (WORK_DIR/docs/.vitepress/dist, and dist-sub built for
// /harbor/) in Chromium, and its heading ids: node check.mjs WORK_DIR.
import { runCheck, finish, workDir } from '../common/check-lib.mjs';
import { compareAnchors, report } from '../common/anchors.mjs';

const dir = workDir();
const dist = `${dir}/docs/.vitepress/dist`;
const page = (p) => p.replace(/\.md$/, '.html').replace(/(^|\/)index\.html$/, '$1');
const url = (p, a) => `/${page(p)}#${a}`;
const cacheSize = { query: 'cache size', expect: { documentPath: 'guide/caching.md', anchor: 'cache-size' }, url };

const anchors = report('vitepress', compareAnchors(`${dir}/dump.jsonl`, (p) => `${dist}/${p.replace(/\.md$/, '.html')}`));
const main = await runCheck({
  name: 'vitepress',
  siteDir: dist,
  startPath: '/guide/install.html',
  chrome: '.VPNavBar',
  spaLink: '.VPSidebar a[href*="caching"]',
  cases: [
    cacheSize,
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.md', anchor: 'обновление' }, url },
  ],
});
const sub = await runCheck({
  name: 'vitepress',
  shot: 'vitepress-subpath',
  prefix: '/harbor/',
  siteDir: `${dir}/docs/.vitepress/dist-sub`,
  startPath: '/guide/install.html',
  chrome: '.VPNavBar',
  cases: [cacheSize],
});
// With our slugify (config.mts) every heading, edge cases included, must match.
const all = anchors.sample.matched === anchors.sample.total && anchors.edge.matched === anchors.edge.total;
finish({ name: 'vitepress', anchors, anchorsOk: all, runs: [main, sub] });
