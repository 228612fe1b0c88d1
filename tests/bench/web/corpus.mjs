// The benchmark corpus: MicrosoftDocs/cpp-docs (CC BY 4.0) from ../shared, unpacked into the
// cache (never into the repository), built into a bundle with embeddings (make bench-web and
// make bench-edge share it) and rendered to HTML pages for the HTML-based engines.
//   node tests/bench/web/corpus.mjs split CACHE_DIR MODEL_DIR OUT_DIR: the bundle's split layout.
import { execFileSync } from 'node:child_process';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const INDEX_BUILDER = path.resolve(import.meta.dirname, '../../../target/release/index-builder');

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

/** The corpus's bundle built with the model at `modelDir`, once (atomically, by index-builder). */
export function bundleWithEmbeddings(cacheDir, mdDir, modelDir) {
  const bundle = path.join(cacheDir, 'cpp-docs.bundle');
  if (!fsSync.existsSync(bundle)) {
    console.error('[cpp-docs] building the bundle with embeddings (once; ~40 min on 2 cores)');
    execFileSync(INDEX_BUILDER, ['build', mdDir, '--out', bundle, '--model', modelDir, '--project', 'microsoft/cpp-docs', '--quiet'],
      { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return bundle;
}

/** The bundle's split layout, cut anew each run (a few seconds) so it follows the builder's shard sizes. */
export function splitBundle(bundle, dir) {
  execFileSync(INDEX_BUILDER, ['split', bundle, '--out', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
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
  const { marked } = await import('marked');
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

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [cmd, cacheDir, modelDir, out] = process.argv.slice(2);
  if (cmd !== 'split' || !out) {
    console.error('usage: corpus.mjs split CACHE_DIR MODEL_DIR OUT_DIR');
    process.exit(2);
  }
  const { mdDir } = await prepareCorpus(cacheDir);
  splitBundle(bundleWithEmbeddings(cacheDir, mdDir, path.resolve(modelDir)), out);
}
