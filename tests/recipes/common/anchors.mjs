// Compares index-builder's anchors (an `index-builder dump` file) with the heading ids in a
// generator's built HTML.
//   compareAnchors(dumpFile, pageFile: (documentPath) => built HTML file)
//   → {matched, total, rows: [{documentPath, anchor, heading, ok, theirs}]}
// `theirs` is the id the generator gave the heading with the same text (when ours is missing).
import fs from 'node:fs';

const decode = (s) => s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|#39|apos);/gi, (m, e) => {
  if (e[0] === '#') return String.fromCodePoint(e[1].toLowerCase() === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[e.toLowerCase()];
});
const text = (html) => decode(html.replace(/<[^>]*>/g, '')).replace(/[\u200b\s]+/g, ' ').trim();

/** Every element id on the page, and the headings' (id, text). */
export function idsOf(html) {
  const ids = new Set([...html.matchAll(/\sid="([^"]*)"/g)].map((m) => decode(m[1])));
  const headings = [...html.matchAll(/<h([1-6])\b([^>]*)>([\s\S]*?)<\/h\1>/g)].map((m) => {
    const id = /\sid="([^"]*)"/.exec(m[2]);
    return { id: id ? decode(id[1]) : null, text: text(m[3]) };
  });
  return { ids, headings };
}

export function compareAnchors(dumpFile, pageFile) {
  const seen = new Set();
  const rows = [];
  for (const line of fs.readFileSync(dumpFile, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    if (!c.anchor || !/\.(md|markdown)$/.test(c.documentPath)) continue;
    const key = `${c.documentPath}#${c.anchor}`;
    if (seen.has(key)) continue;
    seen.add(key);
    rows.push({ documentPath: c.documentPath, anchor: c.anchor, heading: c.sectionPath.at(-1) });
  }
  const pages = new Map();
  for (const r of rows) {
    const file = pageFile(r.documentPath);
    if (!pages.has(file)) pages.set(file, fs.existsSync(file) ? idsOf(fs.readFileSync(file, 'utf8')) : null);
    const page = pages.get(file);
    r.page = file;
    r.ok = !!page?.ids.has(r.anchor);
    if (!r.ok && page) {
      const clean = (h) => h.text.replace(/[#¶]\s*$/, '').replace(/^#\s*/, '').trim();
      let same = page.headings.filter((h) => clean(h) === r.heading);
      if (!same.length) same = page.headings.filter((h) => clean(h).startsWith(r.heading));
      r.theirs = same.map((h) => h.id);
    }
    if (!page) r.theirs = ['(page missing)'];
  }
  return { matched: rows.filter((r) => r.ok).length, total: rows.length, rows };
}

/** Splits the rows: `sample` = the fixture site's pages, `edge` = extra/ (the edge-case page). */
export function split(result) {
  const part = (rows) => ({ matched: rows.filter((r) => r.ok).length, total: rows.length, rows });
  return {
    sample: part(result.rows.filter((r) => !r.documentPath.startsWith('extra/'))),
    edge: part(result.rows.filter((r) => r.documentPath.startsWith('extra/'))),
  };
}

/** Prints the comparison and returns split(result). */
export function report(name, result) {
  const parts = split(result);
  const n = (p) => `${p.matched}/${p.total}`;
  console.log(`${name}: anchors matched: sample ${n(parts.sample)}, edge cases ${n(parts.edge)}`);
  for (const r of result.rows.filter((r) => !r.ok)) {
    console.log(`  differs: ${r.documentPath} "${r.heading}": ours #${r.anchor}, theirs ${JSON.stringify(r.theirs)}`);
  }
  return parts;
}
