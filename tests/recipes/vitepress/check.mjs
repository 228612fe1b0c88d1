// Checks the VitePress site (WORK_DIR/dist, and dist-sub built for /harbor/) in Chromium: every
// result of each index lands on its page and anchor, and the search box lands on the answer.
// node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir } from '../common/check-lib.mjs';

const dir = workDir();
// VitePress serves guide/caching.md at guide/caching.html, its own ids on the headings.
await checkSite({
  name: 'vitepress',
  builds: [
    { site: `${dir}/dist`, prefix: '/', dump: `${dir}/dump.jsonl` },
    { site: `${dir}/dist-sub`, prefix: '/harbor/', dump: `${dir}/dump-sub.jsonl` },
  ],
  startPath: '/guide/install.html',
  chrome: '.VPNavBar',
  spaLink: '.VPSidebar a[href*="caching"]',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
  ],
});
