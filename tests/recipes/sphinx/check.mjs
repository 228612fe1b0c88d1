// Checks the Sphinx site (WORK_DIR/_build/html) in Chromium at / and below /harbor/: every
// result of its index lands, and the search box lands on the answer. node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir, anchorOf } from '../common/check-lib.mjs';

const dir = workDir();
const dump = `${dir}/dump.jsonl`;
await checkSite({
  name: 'sphinx',
  builds: ['/', '/harbor/'].map((prefix) => ({ site: `${dir}/_build/html`, prefix, dump })),
  startPath: '/guide/install.html',
  chrome: '.sphinxsidebar',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
    // docutils makes ASCII ids: the Cyrillic heading's is whatever Sphinx gave it.
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: anchorOf(dump, 'ru/установка.html', 'Обновление') }, url },
  ],
});
