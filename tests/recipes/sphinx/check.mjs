// Checks the Sphinx site (WORK_DIR/_build/html) in Chromium at / and below /harbor/: every
// result of its index lands, and the search box lands on the answer. node check.mjs WORK_DIR.
import { runCheck, checkEveryResult, finish, workDir, landedAnchors, anchorOf } from '../common/check-lib.mjs';

const dir = workDir();
const site = `${dir}/_build/html`;
const dump = `${dir}/dump.jsonl`;
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
  // docutils makes ASCII ids: the Cyrillic heading's is whatever Sphinx gave it.
  { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: anchorOf(dump, 'ru/установка.html', 'Обновление') }, url },
];
const every = [];
const runs = [];
for (const prefix of ['/', '/harbor/']) {
  every.push(await checkEveryResult({ name: 'sphinx', siteDir: site, prefix, dumpFile: dump }));
  runs.push(await runCheck({ name: 'sphinx', shot: prefix === '/' ? 'sphinx' : 'sphinx-subpath', siteDir: site, prefix, startPath: '/guide/install.html', chrome: '.sphinxsidebar', cases: prefix === '/' ? cases : cases.slice(0, 1) }));
}
finish({ name: 'sphinx', ...landedAnchors(every), runs });
