// The table try.sh ends with: node summary.mjs OUT_DIR GEN:RESULT:SETUP_S:BUILD_S:CHECK_S...
// Anchors and landed URLs come from OUT_DIR/<gen>.json (check-lib.mjs's finish()).
import fs from 'node:fs';
import path from 'node:path';

const [out, ...rows] = process.argv.slice(2);
const table = [['generator', 'result', 'setup', 'build', 'check', 'results landed', 'edge cases landed', 'landed (query → URL, anchor element)']];
for (const row of rows) {
  const [name, result, setup, build, check] = row.split(':');
  const file = path.join(out, `${name}.json`);
  const s = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
  const landed = s?.landed.map((c) => `${c.pass ? '' : 'FAIL '}"${c.query}" → ${c.landed ?? '-'} (${c.anchorElement ?? 'no element'})`) ?? ['-'];
  const sec = (x) => (x === '-' ? '-' : `${x} s`);
  table.push([name, result, sec(setup), sec(build), sec(check), s?.anchors.sample ?? '-', s?.anchors.edge ?? '-', landed[0]]);
  for (const l of landed.slice(1)) table.push(['', '', '', '', '', '', '', l]);
}
const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
for (const r of table) console.log(r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
