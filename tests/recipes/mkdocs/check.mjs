// Checks the MkDocs Material site (WORK_DIR/site) in Chromium at / and below /harbor/: every
// result of its index lands, and the search box lands on the answer. node check.mjs WORK_DIR.
import { runCheck, checkEveryResult, finish, workDir, landedAnchors, anchorOf } from '../common/check-lib.mjs';

const dir = workDir();
const site = `${dir}/site`;
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'guide/caching/index.html', anchor: 'cache-size' }, url },
  // Python-Markdown's slugify drops Cyrillic: whatever id MkDocs gave it is the one to land on.
  { query: 'обновить сервер', expect: { documentPath: 'ru/установка/index.html', anchor: anchorOf(`${dir}/dump.jsonl`, 'ru/установка/index.html', 'Обновление') }, url },
];
const every = [];
const runs = [];
for (const prefix of ['/', '/harbor/']) {
  every.push(await checkEveryResult({ name: 'mkdocs', siteDir: site, prefix, dumpFile: `${dir}/dump.jsonl` }));
  runs.push(await runCheck({ name: 'mkdocs', shot: prefix === '/' ? 'mkdocs' : 'mkdocs-subpath', siteDir: site, prefix, startPath: '/guide/install/', chrome: '.md-header', cases: prefix === '/' ? cases : cases.slice(0, 1) }));
}
finish({ name: 'mkdocs', ...landedAnchors(every), runs });

