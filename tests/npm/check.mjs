// node tests/npm/check.mjs VITEPRESS_DIR OUTPUT_DIR: the VitePress site indexed by the installed
// `npx docloupe --site` (run.sh), at / (dist) and at /harbor/ (dist-sub), in Chromium, with the
// recipes' checks (every result lands; the search box lands on the answer).
import { checkSite, servedUrl as url } from '../recipes/common/check-lib.mjs';

const [dir, output] = process.argv.slice(2);
await checkSite({
  name: 'npm-vitepress',
  builds: [
    { site: `${dir}/dist`, prefix: '/', dump: `${output}/dist-dump.jsonl` },
    { site: `${dir}/dist-sub`, prefix: '/harbor/', dump: `${output}/dist-sub-dump.jsonl` },
  ],
  startPath: '/guide/install.html',
  chrome: '.VPNavBar',
  spaLink: '.VPSidebar a[href*="caching"]',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
  ],
});
