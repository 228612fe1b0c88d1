// Where the native binaries and the models are: the per-platform package
// (`@docloupe/<platform>-<arch>`, an optional dependency, as esbuild and Pagefind ship theirs)
// and the model packages. DOCLOUPE_NATIVE_DIR overrides the binaries' folder (a cargo build).
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const PACKAGE_DIR = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The repository root when this runs from a checkout (npm/docloupe/ in the docloupe sources)
 * rather than from an installed package: then the browser files come from www/, the binaries
 * from target/release/ and the models from the cache `make models` fills.
 */
export const CHECKOUT = (() => {
  const root = join(PACKAGE_DIR, '..', '..');
  return !existsSync(join(PACKAGE_DIR, 'docloupe.js')) && existsSync(join(root, 'www', 'docloupe.js')) && existsSync(join(root, 'Cargo.toml')) ? root : null;
})();

/** Where the browser files (docloupe.js, docloupe-search.js, pkg/…) are. */
export const BROWSER_DIR = CHECKOUT ? join(CHECKOUT, 'www') : PACKAGE_DIR;

const CACHE = process.env.DOCLOUPE_CACHE ?? join(process.env.HOME ?? '', '.cache', 'docloupe');
const CHECKOUT_MODELS = {
  '@docloupe/model-minilm': () => join(CACHE, 'models', 'all-MiniLM-L6-v2'),
  '@docloupe/model-e5-multilingual': () => join(CACHE, 'models', 'multilingual-e5-small'),
  '@docloupe/reranker': () => join(CHECKOUT, 'prebuild', 'reranker', 'model'),
};

/** The platform packages this release has, by `${process.platform}-${process.arch}`. */
export const PLATFORMS = { 'linux-x64': '@docloupe/linux-x64' };

/** The model packages, by the name `--model` takes. */
export const MODELS = {
  minilm: '@docloupe/model-minilm',
  'e5-multilingual': '@docloupe/model-e5-multilingual',
};
export const RERANKER = '@docloupe/reranker';

/** The folder of an installed package, or null. */
export function packageDir(name) {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    const dir = CHECKOUT && CHECKOUT_MODELS[name]?.();
    return dir && existsSync(join(dir, 'model.int8.onnx')) ? dir : null;
  }
}

export function nativeBinary(name) {
  const exe = process.platform === 'win32' ? `${name}.exe` : name;
  if (process.env.DOCLOUPE_NATIVE_DIR) {
    const p = join(process.env.DOCLOUPE_NATIVE_DIR, exe);
    if (!existsSync(p)) throw new Error(`${p} does not exist (DOCLOUPE_NATIVE_DIR)`);
    return p;
  }
  if (CHECKOUT && existsSync(join(CHECKOUT, 'target', 'release', exe))) return join(CHECKOUT, 'target', 'release', exe);
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    throw new Error(
      `no prebuilt binaries for ${key} yet (there are for ${Object.keys(PLATFORMS).join(', ')}); ` +
        'build them with `cargo install --path .` and `cargo install --path index-builder`, then set DOCLOUPE_NATIVE_DIR',
    );
  }
  const dir = packageDir(pkg);
  if (!dir) {
    throw new Error(
      `${pkg} is not installed: it is an optional dependency of docloupe, which npm skips with --no-optional ` +
        `or on another platform; install it with \`npm install ${pkg}\``,
    );
  }
  const p = join(dir, 'bin', exe);
  if (!existsSync(p)) throw new Error(`${pkg} lacks bin/${exe}: reinstall it`);
  return p;
}
