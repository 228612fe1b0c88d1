// Checks the built Starlight site (WORK_DIR/dist, and dist-sub built for /harbor/) in
// Chromium: every result of each index lands on its page and anchor, and the search box lands
// on the answer. node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir } from '../common/check-lib.mjs';

const dir = workDir();
// Starlight serves guide/caching.md at guide/caching/ (written as …/index.html).
await checkSite({
  name: 'starlight',
  builds: [
    { site: `${dir}/dist`, prefix: '/', dump: `${dir}/dump.jsonl` },
    { site: `${dir}/dist-sub`, prefix: '/harbor/', dump: `${dir}/dump-sub.jsonl` },
  ],
  startPath: '/guide/install/',
  chrome: 'header',
  spaLink: 'nav.sidebar a[href*="caching"]',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching/index.html', anchor: 'cache-size' }, url },
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка/index.html', anchor: 'обновление' }, url },
  ],
});
