// Checks the MkDocs Material site (WORK_DIR/site) in Chromium at / and below /harbor/: every
// result of its index lands, and the search box lands on the answer. node check.mjs WORK_DIR
import { checkSite, servedUrl as url, workDir, anchorOf } from '../common/check-lib.mjs';

const dir = workDir();
const dump = `${dir}/dump.jsonl`;
await checkSite({
  name: 'mkdocs',
  builds: ['/', '/harbor/'].map((prefix) => ({ site: `${dir}/site`, prefix, dump })),
  startPath: '/guide/install/',
  chrome: '.md-header',
  cases: [
    { query: 'cache size', expect: { documentPath: 'guide/caching/index.html', anchor: 'cache-size' }, url },
    // Python-Markdown's slugify drops Cyrillic: whatever id MkDocs gave it is the one to land on.
    { query: 'обновить сервер', expect: { documentPath: 'ru/установка/index.html', anchor: anchorOf(dump, 'ru/установка/index.html', 'Обновление') }, url },
  ],
});
