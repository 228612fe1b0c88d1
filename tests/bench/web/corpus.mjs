// The benchmark corpus: MicrosoftDocs/cpp-docs (CC BY 4.0) from ../shared, unpacked into the
// cache (never into the repository) and rendered to HTML pages for the HTML-based engines.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { marked } from 'marked';

const ARCHIVE = path.resolve(
  import.meta.dirname, '../../../../shared/corpora/en-large-cpp-docs.tar.gz');
const CORPUS = 'en-large-cpp-docs';

// Marker files are written last, so an interrupted step is redone on the next run.
const exists = (p) => fs.access(p).then(() => true, () => false);

/** Unpacks the corpus into `cacheDir` once; returns {mdDir}. */
export async function prepareCorpus(cacheDir) {
  const mdDir = path.join(cacheDir, CORPUS);
  const marker = path.join(cacheDir, `.${CORPUS}.extracted`);
  if (!(await exists(marker))) {
    await fs.rm(mdDir, { recursive: true, force: true });
    await fs.mkdir(cacheDir, { recursive: true });
    execFileSync('tar', ['xzf', ARCHIVE, '-C', cacheDir], { stdio: 'inherit' });
    await fs.writeFile(marker, `${ARCHIVE}\n`);
  }
  return { mdDir };
}

async function* markdownFiles(dir) {
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* markdownFiles(full);
    else if (entry.isFile() && entry.name.endsWith('.md')) yield full;
  }
}

const escapeHtml = (s) =>
  s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

/** Title: the first `# ` heading, else the front matter's `title:`, else the file name. */
function pageTitle(frontMatter, body, file) {
  const heading = body.match(/^#[ \t]+(.+?)[ \t#]*$/m);
  if (heading) return heading[1].replace(/[`*]/g, '');
  const title = frontMatter.match(/^title:[ \t]*["']?(.*?)["']?[ \t]*$/m);
  return title ? title[1] : path.basename(file, '.md');
}

/**
 * Renders every .md file under `mdDir` to `htmlDir/<same path>.html`, once.
 * Only <main data-pagefind-body> is indexed by Pagefind, as on a real docs site.
 */
export async function renderHtml(mdDir, htmlDir) {
  const marker = path.join(htmlDir, '.rendered');
  if (await exists(marker)) return;
  await fs.rm(htmlDir, { recursive: true, force: true });
  for await (const file of markdownFiles(mdDir)) {
    const text = (await fs.readFile(file, 'utf8')).replace(/\r\n?/g, '\n');
    const fm = text.match(/^---\n([\s\S]*?)\n---[ \t]*(?:\n|$)/);
    const body = fm ? text.slice(fm[0].length) : text;
    const title = pageTitle(fm ? fm[1] : '', body, file);
    const html = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${
      escapeHtml(title)}</title></head><body><main data-pagefind-body>\n${
      marked.parse(body)}</main></body></html>\n`;
    const out = path.join(htmlDir, path.relative(mdDir, file).replace(/\.md$/, '.html'));
    await fs.mkdir(path.dirname(out), { recursive: true });
    await fs.writeFile(out, html);
  }
  await fs.writeFile(marker, `${mdDir}\n`);
}
