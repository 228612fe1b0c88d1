// Writes a site's offline service worker: the precache manifest of every file the site serves
// (URL, content hash, size) followed by the worker's logic (sw.js). Mounts are given as for
// serve.mjs, URL prefix = directory:
//   node www/precache.mjs --out SITE/docloupe-sw.js /=SITE /www/=www /data/=DATA /models/=MODELS
// A directory with a package.json that lists `files` (this package, www/) contributes only
// those; `--exclude PREFIX` leaves out URLs that start with PREFIX (e.g. /www/pkg/portable/);
// `--lazy PREFIX` marks URLs under PREFIX to be cached only once a reader starts searching
// (the engine, the bundle, the models), not when the worker installs.
// Dotfiles are skipped. The output is written atomically (never through a planted symlink)
// and is a pure function of the files' bytes, so an unchanged site gives an unchanged worker
// (and browsers keep their caches).
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const RUNTIME = path.join(path.dirname(fileURLToPath(import.meta.url)), 'sw.js');

async function walk(dir, rel = '') {
  const out = [];
  const entries = await fs.readdir(path.join(dir, rel), { withFileTypes: true });
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.name.startsWith('.') || e.name === 'node_modules') continue;
    const child = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await walk(dir, child)));
    else if (e.isFile()) out.push(child);
  }
  return out;
}

/**
 * The files of a mount: all of them, or those of the `files` its package.json publishes that
 * a page can load (not type declarations, Node tools or this worker's own source).
 */
async function mountFiles(dir) {
  const all = await walk(dir);
  const pkg = await fs.readFile(path.join(dir, 'package.json'), 'utf8').then(JSON.parse, () => null);
  if (!Array.isArray(pkg?.files)) return all;
  return all.filter(
    (f) =>
      pkg.files.some((p) => (p.endsWith('/') ? f.startsWith(p) : f === p)) &&
      !/\.d\.ts$|\.mjs$/.test(f) &&
      f !== 'sw.js',
  );
}

/**
 * [[url, sha256 (16 hex), size, lazy]...] sorted by URL; `index.html` also listed as its
 * directory.
 */
export async function manifest(mounts, excludes = [], lazy = []) {
  const rows = [];
  for (const [prefix, dir] of mounts) {
    for (const file of await mountFiles(dir)) {
      const url = prefix + file.split('/').map(encodeURIComponent).join('/');
      if (excludes.some((x) => url.startsWith(x))) continue;
      const bytes = await fs.readFile(path.join(dir, file));
      const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
      const later = lazy.some((x) => url.startsWith(x));
      rows.push([url, hash, bytes.length, later]);
      if (file === 'index.html' || file.endsWith('/index.html')) rows.push([url.slice(0, -'index.html'.length), hash, bytes.length, later]);
    }
  }
  const seen = new Set();
  return rows
    .filter(([url]) => !seen.has(url) && seen.add(url))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/**
 * Writes `out` through a temporary file beside it: created exclusively ('wx') under a random
 * name, so a symlink planted at a predictable name is never followed; synced, renamed over
 * `out`, and the directory synced so the new name survives a crash.
 */
async function writeAtomically(out, data) {
  const dir = path.dirname(out);
  const tmp = path.join(dir, `.${path.basename(out)}.${randomBytes(8).toString('hex')}.tmp`);
  const file = await fs.open(tmp, 'wx', 0o644);
  try {
    await file.writeFile(data);
    await file.sync();
  } catch (e) {
    await file.close();
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await file.close();
  try {
    await fs.rename(tmp, out);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  const d = await fs.open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}

export async function writeServiceWorker(out, mounts, { exclude = [], lazy = [] } = {}) {
  const files = (await manifest(mounts, exclude, lazy)).filter(([url]) => url !== `/${path.basename(out)}`);
  const version = createHash('sha256').update(JSON.stringify(files)).digest('hex').slice(0, 16);
  const source = `self.DOCLOUPE_PRECACHE = ${JSON.stringify({ version, files })};\n${await fs.readFile(RUNTIME, 'utf8')}`;
  await writeAtomically(out, source);
  const bytes = (rows) => rows.reduce((n, f) => n + f[2], 0);
  return { version, files: files.length, bytes: bytes(files), installBytes: bytes(files.filter((f) => !f[3])) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  let out;
  const mounts = [];
  const exclude = [];
  const lazy = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = args[++i];
    else if (args[i] === '--exclude') exclude.push(args[++i]);
    else if (args[i] === '--lazy') lazy.push(args[++i]);
    else if (args[i] === '--no-compress') continue; // serve.mjs's flag: same mount lists work here
    else {
      const eq = args[i].indexOf('=');
      if (eq < 1 || !args[i].startsWith('/')) throw new Error(`expected /PREFIX=DIR, got ${args[i]}`);
      mounts.push([args[i].slice(0, eq), args[i].slice(eq + 1)]);
    }
  }
  if (!out || !mounts.length) {
    console.error('usage: node www/precache.mjs --out SITE/docloupe-sw.js [--exclude /PREFIX] [--lazy /PREFIX] /=SITE /www/=www ...');
    process.exit(2);
  }
  console.log(JSON.stringify(await writeServiceWorker(out, mounts, { exclude, lazy })));
}
