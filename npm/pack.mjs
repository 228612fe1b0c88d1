// `make package`: the npm tarballs, in target/npm/.
//   docloupe                       the JS API, <docloupe-search>, the wasm engines, the CLI entry
//                                  (`npx docloupe --site public`)
//   @docloupe/linux-x64            the native index-builder and docloupe binaries (the layout is
//                                  one package per platform, picked by optionalDependencies with
//                                  `os`/`cpu`, as esbuild and Pagefind ship theirs)
//   @docloupe/model-minilm         all-MiniLM-L6-v2, int8 ONNX + tokenizer (English)
//   @docloupe/model-e5-multilingual multilingual-e5-small, int8 ONNX + tokenizer
//   @docloupe/reranker             the cross-encoder of the rerank stage
// Each model file is checked against the sha256 its manifest pins before it is packed, and
// the package pins it again (`docloupe.sha256` in its package.json) for `--site` to check.
// Usage: node npm/pack.mjs [--out DIR] [--skip-e5]
// Needs: target/release/{index-builder,docloupe}, www/pkg/{lexical,full,inflate}, the models
// in $DOCLOUPE_CACHE/models (make models), npm.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const OUT = resolve(args.includes('--out') ? args[args.indexOf('--out') + 1] : join(ROOT, 'target/npm'));
const CACHE = process.env.DOCLOUPE_CACHE ?? join(process.env.HOME, '.cache/docloupe');
const VERSION = /\[workspace\.package\][^[]*?version\s*=\s*"([^"]+)"/s.exec(fs.readFileSync(join(ROOT, 'Cargo.toml'), 'utf8'))[1];
const WWW = JSON.parse(fs.readFileSync(join(ROOT, 'www/package.json'), 'utf8'));
const REPOSITORY = 'https://github.com/docloupe/docloupe';
const sha256 = (p) => createHash('sha256').update(fs.readFileSync(p)).digest('hex');

function need(p) {
  if (!fs.existsSync(p)) throw new Error(`${p} is missing (make build wasm models)`);
  return p;
}

function stageDir(name) {
  const dir = join(OUT, 'stage', name.replace('/', '+'));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function put(from, dir, to = from.split('/').pop()) {
  const dest = join(dir, to);
  fs.mkdirSync(dirname(dest), { recursive: true });
  fs.copyFileSync(need(from), dest);
  return dest;
}

function writeJson(p, v) {
  fs.writeFileSync(p, `${JSON.stringify(v, null, 2)}\n`);
}

function pack(dir) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', OUT], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const [info] = JSON.parse(out);
  console.log(`${info.filename}  ${(info.size / 1048576).toFixed(1)} MiB packed, ${info.entryCount} files`);
  return info.filename;
}

const licenses = (dir) => {
  put(join(ROOT, 'LICENSE-MIT'), dir);
  put(join(ROOT, 'LICENSE-APACHE'), dir);
};

function enginePackage() {
  const dir = stageDir('docloupe');
  for (const f of ['docloupe.js', 'docloupe.d.ts', 'host.js', 'inflate.js', 'worker.js', 'docloupe-search.js', 'docloupe-search.css', 'sw.js', 'precache.mjs']) {
    put(join(ROOT, 'www', f), dir);
  }
  for (const [kind, files] of Object.entries({ lexical: ['docloupe.js', 'docloupe_bg.wasm'], full: ['docloupe.js', 'docloupe_bg.wasm'], inflate: ['inflate.wasm'] })) {
    for (const f of files) put(join(ROOT, 'www/pkg', kind, f), dir, `pkg/${kind}/${f}`);
  }
  for (const f of ['bin/docloupe.mjs', 'lib/native.mjs', 'lib/site.mjs', 'README.md']) put(join(ROOT, 'npm/docloupe', f), dir, f);
  fs.chmodSync(join(dir, 'bin/docloupe.mjs'), 0o755);
  licenses(dir);
  const { devDependencies, private: _, files, exports, ...keep } = WWW;
  writeJson(join(dir, 'package.json'), {
    ...keep,
    version: VERSION,
    repository: REPOSITORY,
    keywords: ['search', 'documentation', 'static-site', 'wasm', 'semantic-search', 'bm25'],
    bin: { docloupe: 'bin/docloupe.mjs' },
    exports: { ...exports, './package.json': './package.json' },
    files: ['bin/', 'lib/', ...files.filter((f) => f !== 'pkg/portable/'), 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE'],
    engines: { node: '>=18.17' },
    optionalDependencies: {
      '@docloupe/linux-x64': VERSION,
      '@docloupe/model-minilm': VERSION,
      '@docloupe/reranker': VERSION,
    },
  });
  return pack(dir);
}

function platformPackage() {
  const name = '@docloupe/linux-x64';
  const dir = stageDir(name);
  for (const bin of ['index-builder', 'docloupe']) {
    const dest = put(join(ROOT, 'target/release', bin), dir, `bin/${bin}`);
    // Symbols are a third of the file and no user reads them.
    execFileSync('strip', ['--strip-debug', '--strip-unneeded', dest]);
    fs.chmodSync(dest, 0o755);
  }
  licenses(dir);
  fs.writeFileSync(
    join(dir, 'README.md'),
    `# ${name}\n\nThe native \`index-builder\` and \`docloupe\` binaries of [docloupe](https://www.npmjs.com/package/docloupe) for Linux on x86-64 (glibc). Installed by \`docloupe\` as an optional dependency; not used on its own.\n`,
  );
  writeJson(join(dir, 'package.json'), {
    name,
    version: VERSION,
    description: 'The native docloupe binaries for Linux x64',
    license: WWW.license,
    repository: REPOSITORY,
    os: ['linux'],
    cpu: ['x64'],
    libc: ['glibc'],
    files: ['bin/', 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE'],
    preferUnplugged: true,
  });
  return pack(dir);
}

/** A model package: the files its manifest pins, checked, and its license and card. */
function modelPackage(name, from, description, license, notes) {
  const dir = stageDir(name);
  const manifest = JSON.parse(fs.readFileSync(need(join(from, 'manifest.json')), 'utf8'));
  const pins = { 'manifest.json': sha256(join(from, 'manifest.json')) };
  for (const f of ['model.int8.onnx', 'tokenizer.json']) {
    const src = need(join(from, f));
    const want = manifest.files?.[f] ?? manifest.sha256?.[f] ?? (f === 'model.int8.onnx' ? manifest.sha256 : undefined);
    const got = sha256(src);
    if (typeof want === 'string' && want !== got) throw new Error(`${src}: sha256 ${got}, its manifest pins ${want}`);
    pins[f] = got;
    put(src, dir);
  }
  put(join(from, 'manifest.json'), dir);
  for (const n of notes) put(n, dir);
  fs.writeFileSync(
    join(dir, 'README.md'),
    `# ${name}\n\n${description}\n\nModel id \`${manifest.id ?? name}\`. Used by \`npx docloupe --site\` (\`--model\`) and by \`index-builder build --model node_modules/${name}\`. License: ${license}.\n`,
  );
  writeJson(join(dir, 'package.json'), {
    name,
    version: VERSION,
    description,
    license: license.split(' ')[0],
    repository: REPOSITORY,
    files: ['manifest.json', 'model.int8.onnx', 'tokenizer.json', 'README.md', ...notes.map((n) => n.split('/').pop())],
    docloupe: { model: manifest.id ?? null, sha256: pins },
  });
  return pack(dir);
}

fs.mkdirSync(OUT, { recursive: true });
for (const f of fs.readdirSync(OUT)) if (f.endsWith('.tgz')) fs.rmSync(join(OUT, f));
const made = [enginePackage(), platformPackage()];
made.push(
  modelPackage(
    '@docloupe/model-minilm',
    join(CACHE, 'models/all-MiniLM-L6-v2'),
    'all-MiniLM-L6-v2 for docloupe: English sentence embeddings, int8 ONNX and tokenizer',
    'Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2)',
    [join(ROOT, 'prebuild/README.md')],
  ),
);
if (!args.includes('--skip-e5')) {
  made.push(
    modelPackage(
      '@docloupe/model-e5-multilingual',
      join(CACHE, 'models/multilingual-e5-small'),
      'multilingual-e5-small for docloupe: embeddings for ~100 languages (Russian included), int8 ONNX and tokenizer',
      'MIT (intfloat/multilingual-e5-small)',
      [join(ROOT, 'prebuild/E5_MODEL_CARD.md')],
    ),
  );
}
made.push(
  modelPackage(
    '@docloupe/reranker',
    join(ROOT, 'prebuild/reranker/model'),
    "docloupe's cross-encoder: reorders the top hybrid results (2 layers, from all-MiniLM-L6-v2)",
    'Apache-2.0 (derived from all-MiniLM-L6-v2)',
    [join(ROOT, 'prebuild/reranker/MODEL_CARD.md')],
  ),
);
fs.writeFileSync(join(OUT, 'tarballs.txt'), `${made.join('\n')}\n`);
console.log(`${made.length} tarballs in ${OUT}`);
