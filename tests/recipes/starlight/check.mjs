// Checks the built Starlight site (WORK_DIR/dist, and dist-sub built for /harbor/) in
// Chromium, and its heading ids: node check.mjs WORK_DIR.
import { runCheck, finish, workDir } from '../common/check-lib.mjs';
import { compareAnchors, report } from '../common/anchors.mjs';

const dir = workDir();
const page = (p) => p.replace(/\.md$/, '').replace(/(^|\/)index$/, '$1');
const url = (p, a) => `/${page(p)}/#${a}`;
const cacheSize = { query: 'cache size', expect: { documentPath: 'guide/caching.md', anchor: 'cache-size' }, url };

const anchors = report('starlight', compareAnchors(`${dir}/dump.jsonl`, (p) => `${dir}/dist/${page(p)}/index.html`.replace('//index', '/index')));
const main = await runCheck({
  name: 'starlight',
  siteDir: `${dir}/dist`,
  startPath: '/guide/install/',
  chrome: 'header',
  spaLink: 'nav.sidebar a[href*="caching"]',
  cases: [
    cacheSize,
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.md', anchor: 'обновление' }, url },
  ],
});
const sub = await runCheck({
  name: 'starlight',
  shot: 'starlight-subpath',
  prefix: '/harbor/',
  siteDir: `${dir}/dist-sub`,
  startPath: '/guide/install/',
  chrome: 'header',
  cases: [cacheSize],
});
// github-slugger keeps whitespace runs and Starlight has no {#id}: the sample must match, the
// edge cases may not.
finish({ name: 'starlight', anchors, anchorsOk: anchors.sample.matched === anchors.sample.total, runs: [main, sub] });
