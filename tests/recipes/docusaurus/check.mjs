// Checks the built Docusaurus site (WORK_DIR/build, and build-sub built for /harbor/) in
// Chromium: every result of each index lands on its page and anchor (a page's `# Title` has no
// id in Docusaurus: its section opens the page), and the search box lands on the answer.
// node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir } from '../common/check-lib.mjs';

const dir = workDir();
// Docusaurus serves docs/guide/caching.md at docs/guide/caching/ (written as …/index.html).
await checkSite({
  name: 'docusaurus',
  builds: [
    { site: `${dir}/build`, prefix: '/', dump: `${dir}/dump.jsonl` },
    { site: `${dir}/build-sub`, prefix: '/harbor/', dump: `${dir}/dump-sub.jsonl` },
  ],
  startPath: '/docs/guide/install',
  chrome: '.navbar',
  spaLink: '.theme-doc-sidebar-container a[href*="caching"]',
  cases: [
    { query: 'cache size', expect: { documentPath: 'docs/guide/caching/index.html', anchor: 'cache-size' }, url },
    { query: 'обновить сервер', expect: { documentPath: 'docs/ru/установка/index.html', anchor: 'обновление' }, url },
  ],
});
