// node tests/npm/check.mjs VITEPRESS_DIR OUTPUT_DIR: the VitePress site indexed by
// `npx docloupe --site` (run.sh), at / (dist) and at /harbor/ (dist-sub), in Chromium.
import fs from 'node:fs';
import path from 'node:path';
import { runCheck, checkEveryResult } from '../recipes/common/check-lib.mjs';

const [dir, output] = process.argv.slice(2);
// VitePress serves guide/caching.md at guide/caching.html, its own ids on the headings.
const url = (p, a) => `/${p.replace(/(^|\/)index\.html$/, '$1')}#${a}`;
const cases = [
  { query: 'cache size', expect: { documentPath: 'guide/caching.html', anchor: 'cache-size' }, url },
  { query: 'обновить сервер', expect: { documentPath: 'ru/установка.html', anchor: 'обновление' }, url },
];
const runs = [];
for (const [site, prefix, dump] of [['dist', '/', 'dist-dump.jsonl'], ['dist-sub', '/harbor/', 'dist-sub-dump.jsonl']]) {
  runs.push(await checkEveryResult({ name: 'npm-vitepress', siteDir: path.join(dir, site), prefix, dumpFile: path.join(output, dump) }));
  runs.push(await runCheck({
    name: 'npm-vitepress',
    shot: `npm-vitepress${prefix === '/' ? '' : '-subpath'}`,
    siteDir: path.join(dir, site),
    prefix,
    startPath: '/guide/install.html',
    chrome: '.VPNavBar',
    spaLink: prefix === '/' ? '.VPSidebar a[href*="caching"]' : undefined,
    cases: prefix === '/' ? cases : cases.slice(0, 1),
  }));
}
fs.writeFileSync(path.join(output, 'result.json'), JSON.stringify(runs, null, 2));
const pass = runs.every((r) => r.pass);
console.log(`npm-vitepress: ${pass ? 'PASS' : 'FAIL'}`);
process.exit(pass ? 0 : 1);
