// Checks the built mdBook book (WORK_DIR/book) in Chromium, at / and under /book/ (every URL is
// relative to the book): every result of its index lands on its page and anchor, and the search
// box lands on the answer. node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir } from '../common/check-lib.mjs';

const dir = workDir();
await checkSite({
  name: 'mdbook',
  builds: ['/', '/book/'].map((prefix) => ({ site: `${dir}/book`, prefix, dump: `${dir}/dump.jsonl` })),
  startPath: '/guide/install.html',
  chrome: '#mdbook-menu-bar',
  spaLink: '#mdbook-sidebar a[href*="caching"]',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
  ],
});
