// `npx docloupe --site public`: after any static-site generator, index the site's HTML pages
// (their real URLs and heading ids) with the native index-builder, and write everything the
// browser needs under public/docloupe/: the split index, the engine and the search box, and
// the models when search is hybrid. Then print the two lines to add to a page.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { BROWSER_DIR, MODELS, RERANKER, nativeBinary, packageDir } from './native.mjs';

/** Written into every output folder: a folder without it is not replaced. */
const MARKER = '.docloupe-output';
const BROWSER_FILES = ['docloupe.js', 'host.js', 'inflate.js', 'worker.js', 'docloupe-search.js', 'docloupe-search.css'];
const ENGINES = { lexical: ['docloupe.js', 'docloupe_bg.wasm'], full: ['docloupe.js', 'docloupe_bg.wasm'], inflate: ['inflate.wasm'] };
const MODEL_FILES = ['manifest.json', 'model.int8.onnx', 'tokenizer.json'];

export const SITE_USAGE = `Usage: npx docloupe --site DIR [options]

Indexes the HTML pages of a built site (any generator's output) and writes the search index,
the engine and the <docloupe-search> element into DIR/docloupe/.

Options:
  --site DIR              the built site (public/, dist/, _site/, site/, build/html/ …)
  --model NAME            minilm (English), e5-multilingual (Russian and ~100 other languages)
                          or none (keyword search only); default: minilm if its package is
                          installed, else e5-multilingual if that one is, else none
  --no-reranker           leave out the cross-encoder that reorders hybrid results
  --output-subdir NAME    the output folder inside DIR (default: docloupe)
  --output-path PATH      the output folder anywhere (instead of --output-subdir)
  --base-url URL          where DIR is served (default: /); e.g. /docs/ for a project page
  --project NS/NAME       the collection's project id (requests may name it)
  --formats LIST          formats to index (default: html; e.g. html,pdf)
  --quiet                 no progress, only errors and the two lines
`;

class UsageError extends Error {
  constructor(message) {
    super(`${message}\n\n${SITE_USAGE}`);
    this.exitCode = 2;
  }
}

export function parseArgs(argv) {
  const o = { model: null, reranker: true, outputSubdir: 'docloupe', outputPath: null, baseUrl: '/', project: null, formats: 'html', quiet: false, site: null };
  const value = (i, name) => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let inline = null;
    if (a.startsWith('--') && a.includes('=')) [a, inline] = [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)];
    const take = () => (inline !== null ? inline : value(i++, a));
    switch (a) {
      case '--site': o.site = take(); break;
      case '--model': o.model = take(); break;
      case '--no-reranker': o.reranker = false; break;
      case '--output-subdir': o.outputSubdir = take(); break;
      case '--output-path': o.outputPath = take(); break;
      case '--base-url': o.baseUrl = take(); break;
      case '--project': o.project = take(); break;
      case '--formats': o.formats = take(); break;
      case '--quiet': o.quiet = true; break;
      default: throw new UsageError(`unknown option ${argv[i]}`);
    }
  }
  if (!o.site) throw new UsageError('--site is required');
  if (o.model !== null && !['minilm', 'e5-multilingual', 'none'].includes(o.model)) {
    throw new UsageError(`--model must be minilm, e5-multilingual or none, not ${JSON.stringify(o.model)}`);
  }
  if (!/^[A-Za-z0-9._-]+$/.test(o.outputSubdir) || o.outputSubdir.startsWith('.')) {
    throw new UsageError('--output-subdir must be one plain folder name');
  }
  o.baseUrl = baseUrl(o.baseUrl);
  return o;
}

/** `/`, `/docs/`, `https://host/docs/`: ends in `/`; anything else is refused. */
function baseUrl(raw) {
  let u = raw.endsWith('/') ? raw : `${raw}/`;
  if (u.startsWith('/') && !u.startsWith('//')) {
    if (new URL(u, 'http://x').pathname !== u) throw new UsageError(`--base-url ${raw}: not a plain path`);
    return u;
  }
  let url;
  try {
    url = new URL(u);
  } catch {
    throw new UsageError(`--base-url ${raw}: a path such as /docs/ or an http(s) URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--base-url ${raw}: http(s) only`);
  return url.href;
}

const escapeAttr = (s) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

function chooseModel(o) {
  if (o.model === 'none') return null;
  const names = o.model ? [o.model] : Object.keys(MODELS);
  for (const name of names) {
    const dir = packageDir(MODELS[name]);
    if (dir) return { name, dir };
  }
  if (o.model) {
    const e = new Error(`--model ${o.model} needs the ${MODELS[o.model]} package: npm install ${MODELS[o.model]}`);
    e.exitCode = 2;
    throw e;
  }
  return null;
}

function run(bin, args, { quiet, captureStdout }) {
  return new Promise((resolveRun, reject) => {
    // The builder's progress bar goes to the terminal; its warnings come back in the report
    // and are summed up once at the end, not logged line by line as well.
    const env = { ...process.env, DOCLOUPE_LOG: process.env.DOCLOUPE_LOG ?? 'error' };
    const child = spawn(bin, args, { env, stdio: ['ignore', captureStdout ? 'pipe' : 'ignore', quiet ? 'pipe' : 'inherit'] });
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (err = (err + d).slice(-8192)));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolveRun(out);
      else {
        const e = new Error(`${basename(bin)} ${args[0]} failed (${signal ?? `exit ${code}`})${err ? `:\n${err.trim()}` : ''}`);
        e.exitCode = 1;
        reject(e);
      }
    });
  });
}

function copy(from, to) {
  fs.mkdirSync(dirname(to), { recursive: true });
  fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL);
}

function sha256(path) {
  return createHash('sha256').update(fs.readFileSync(path)).digest('hex');
}

/** A model package's files, checked against the sha256 its package.json pins. */
function copyModel(dir, to) {
  const pkg = join(dir, 'package.json');
  const pins = fs.existsSync(pkg) ? (JSON.parse(fs.readFileSync(pkg, 'utf8')).docloupe?.sha256 ?? {}) : {};
  for (const f of MODEL_FILES) {
    const src = join(dir, f);
    if (!fs.existsSync(src)) throw new Error(`${dir} lacks ${f}: reinstall the model package`);
    if (pins[f] && sha256(src) !== pins[f]) throw new Error(`${src} is not the file its package pins (sha256): reinstall it`);
    copy(src, join(to, f));
  }
}

function bytesUnder(dir) {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(join(e.parentPath ?? e.path, e.name)).size;
  }
  return n;
}

const mb = (n) => (n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`);

/** The output folder may be replaced only if it is absent or docloupe wrote it. */
function checkOutput(out) {
  let st;
  try {
    st = fs.lstatSync(out);
  } catch {
    return false;
  }
  if (st.isSymbolicLink() || !st.isDirectory() || !fs.existsSync(join(out, MARKER))) {
    const e = new Error(`${out} exists and docloupe did not write it: remove it or choose another --output-subdir`);
    e.exitCode = 2;
    throw e;
  }
  return true;
}

export async function runSite(argv) {
  const o = parseArgs(argv);
  const started = Date.now();
  const site = resolve(o.site);
  if (!fs.existsSync(site) || !fs.statSync(site).isDirectory()) {
    const e = new Error(`--site ${o.site}: no such folder`);
    e.exitCode = 2;
    throw e;
  }
  const out = o.outputPath ? resolve(o.outputPath) : join(site, o.outputSubdir);
  const replace = checkOutput(out);
  const model = chooseModel(o);
  const rerankerDir = model && o.reranker ? packageDir(RERANKER) : null;
  const ib = nativeBinary('index-builder');
  const say = (s) => o.quiet || console.error(s);

  // Everything is written into a fresh hidden folder beside the output (the builder skips
  // hidden folders), then swapped in: a failed run leaves the previous output serving.
  fs.mkdirSync(dirname(out), { recursive: true });
  const stage = fs.mkdtempSync(join(dirname(out), `.${basename(out)}-`));
  // mkdtemp makes it 0700: the web server must read what is swapped in.
  fs.chmodSync(stage, 0o777 & ~process.umask());
  try {
    say(`docloupe: indexing the ${o.formats} pages of ${site} (${model ? `hybrid, ${model.name}` : 'keyword search, no model'})`);
    const bundle = join(stage, 'site.bundle');
    const build = ['build', site, '--out', bundle, '--formats', o.formats];
    if (o.quiet) build.push('--quiet');
    if (o.project) build.push('--project', o.project);
    if (model) build.push('--model', model.dir);
    else build.push('--no-embeddings');
    const report = JSON.parse(await run(ib, build, { quiet: o.quiet, captureStdout: true }));
    if (!report.documentsProcessed) {
      const e = new Error(`no ${o.formats} pages were indexed under ${site}${report.warnings.length ? `:\n  ${report.warnings.slice(0, 10).join('\n  ')}` : ''}`);
      e.exitCode = 1;
      throw e;
    }
    await run(ib, ['split', bundle, '--out', join(stage, 'index')], { quiet: true, captureStdout: true });
    fs.rmSync(bundle);

    for (const f of BROWSER_FILES) copy(join(BROWSER_DIR, f), join(stage, f));
    for (const kind of model ? ['lexical', 'full', 'inflate'] : ['lexical', 'inflate']) {
      for (const f of ENGINES[kind]) copy(join(BROWSER_DIR, 'pkg', kind, f), join(stage, 'pkg', kind, f));
    }
    if (model) {
      copyModel(model.dir, join(stage, 'models'));
      const spec = { embedding: { onnx: 'models/model.int8.onnx', tokenizer: 'models/tokenizer.json' } };
      if (rerankerDir) {
        copyModel(rerankerDir, join(stage, 'reranker'));
        spec.reranker = { manifest: 'reranker/manifest.json', onnx: 'reranker/model.int8.onnx', tokenizer: 'reranker/tokenizer.json' };
      }
      fs.writeFileSync(join(stage, 'models.json'), `${JSON.stringify(spec, null, 2)}\n`);
    }
    fs.writeFileSync(join(stage, MARKER), 'Written by `npx docloupe --site`; the next run replaces this folder.\n');
    const written = bytesUnder(stage);

    const old = `${stage}.old`;
    if (replace) fs.renameSync(out, old);
    try {
      fs.renameSync(stage, out);
    } catch (e) {
      if (replace) fs.renameSync(old, out); // the previous output keeps serving
      throw e;
    }
    if (replace) fs.rmSync(old, { recursive: true, force: true });

    const skipped = report.warnings ?? [];
    say(
      `docloupe: ${report.documentsProcessed} pages, ${report.chunksWritten} sections indexed; ` +
        `${skipped.length} skipped or warned; ${mb(written)} written to ${out} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    for (const w of skipped.slice(0, 20)) say(`  ${w}`);
    if (skipped.length > 20) say(`  … and ${skipped.length - 20} more`);
    // Where the browser finds the output: below the base URL at its path in the site (an
    // output outside the site is expected to be served beside it, under its own name).
    const inside = out.startsWith(site + sep);
    const served = inside ? relative(site, out).split(sep).map(encodeURIComponent).join('/') : encodeURIComponent(basename(out));
    const at = o.baseUrl.startsWith('/') ? `${o.baseUrl}${served}/` : new URL(`${served}/`, o.baseUrl).href;
    const attrs = [`bundle="${escapeAttr(`${at}index/`)}"`];
    if (model) attrs.push(`models="${escapeAttr(`${at}models.json`)}"`);
    attrs.push(`root="${escapeAttr(o.baseUrl)}"`);
    say(inside ? '\nAdd these two lines to your pages (the search box goes where the second one is):' : `\nServe ${out} at ${at}, then add these two lines to your pages:`);
    console.log(`<script type="module" src="${escapeAttr(`${at}docloupe-search.js`)}"></script>`);
    console.log(`<docloupe-search ${attrs.join(' ')}></docloupe-search>`);
    return 0;
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}
