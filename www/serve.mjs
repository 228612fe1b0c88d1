// A static file server on 127.0.0.1 that counts what it sends, so the browser benchmarks can
// report requests and bytes on the wire as a CDN would serve them: brotli (quality 11) when
// the browser accepts it, except for files that are compressed already. The demo, the browser
// tests and the benchmarks all use it. As a command (`make demo`):
//   node www/serve.mjs [--port 8080] [--brotli-cache DIR] [--csp] /=SITE /www/=www [--no-compress] /models/=DIR ...
// (--no-compress applies to the mounts after it: model weights barely compress, and brotli 11
// on them takes minutes.)
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

const brotliCompress = promisify(zlib.brotliCompress);

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.onnx': 'application/octet-stream',
  '.bin': 'application/octet-stream',
};
const OCTETS = 'application/octet-stream';

/**
 * A strict Content-Security-Policy under which docloupe and <docloupe-search> work (served by
 * `make demo` and the site tests, documented in www/README.md): scripts, workers, styles and
 * data from the site's own origin only; 'wasm-unsafe-eval' lets the page and its worker
 * compile WebAssembly (and nothing else: no eval, no inline script or style).
 */
export const CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self'",
  "connect-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

// Pagefind gzips its index chunks, fragments, metadata and wasm itself (they start with the
// gzip magic bytes, and pagefind.js gunzips them in the page), so they go out as they are.
const PRECOMPRESSED = new Set(['.pf_meta', '.pf_index', '.pf_fragment', '.pf_filter', '.pagefind']);

/**
 * Starts the server. `roots` maps URL prefixes ('/', '/pagefind/') to directories; the
 * longest matching prefix wins. A root may be `{dir, compress: false, headers}`: its files
 * are sent uncompressed (e.g. fp32 model weights: brotli 11 runs at ~1 MB/s and saves ~8% on
 * them) and with extra headers (e.g. a Cache-Control of their own).
 * With `brotliCacheDir`, compressed bodies are also kept on disk, keyed by content hash,
 * so a later run does not pay for brotli 11 on multi-megabyte wasm files again.
 * `headers` are added to every response (e.g. a Content-Security-Policy).
 * Resolves to {url, reset(), stats(), close()}; stats() → {requests, bytes, list:[{url, bytes}]},
 * bytes being response body bytes as sent (headers are not counted).
 */
export async function startServer(roots, { brotliCacheDir, port = 0, headers: extraHeaders = {} } = {}) {
  const mounts = Object.entries(roots)
    .map(([prefix, root]) => {
      const { dir, compress = true, headers = {} } = typeof root === 'string' ? { dir: root } : root;
      return { prefix, dir: path.resolve(dir), compress, headers };
    })
    .sort((a, b) => b.prefix.length - a.prefix.length);
  const brotliMemo = new Map(); // file path → Promise<Buffer>, per mtime+size
  let list = [];

  // Each mount's real path: a file is served only if its own real path lies inside it, so a
  // symlink in a served folder cannot hand out /etc/passwd.
  for (const m of mounts) m.real = await fs.realpath(m.dir).catch(() => m.dir);
  const inside = (root, file) => {
    const rel = path.relative(root, file);
    return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
  };
  const resolveFile = (pathname) => {
    const mount = mounts.find((m) => pathname.startsWith(m.prefix));
    if (!mount || pathname.includes('\0')) return null;
    const file = path.join(mount.dir, pathname.slice(mount.prefix.length));
    if (!inside(mount.dir, file)) return null;
    return { file, compress: mount.compress, root: mount.real, headers: mount.headers };
  };
  /** The real path of `target.file` when it stays inside its mount, else null. */
  const confined = async (target) => {
    const real = await fs.realpath(target.file).catch(() => null);
    return real && inside(target.root, real) ? real : null;
  };
  // Only requests addressed to this server by a loopback name: a DNS-rebinding page on
  // another name that resolves to 127.0.0.1 gets nothing.
  const hostOk = (host) => {
    const port = server.address().port;
    return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(String(host ?? '').toLowerCase());
  };

  const brotli = (file, stat, raw) => {
    const key = `${file}\0${stat.mtimeMs}\0${stat.size}`;
    if (!brotliMemo.has(key)) brotliMemo.set(key, compressCached(raw, brotliCacheDir));
    return brotliMemo.get(key);
  };

  const server = http.createServer(async (req, res) => {
    try {
      if (!hostOk(req.headers.host)) {
        send(req, res, 403, { 'Content-Type': 'text/plain' }, Buffer.from('forbidden: unknown host'));
        return;
      }
      const { pathname } = new URL(req.url, 'http://localhost');
      let decoded;
      try {
        decoded = decodeURIComponent(pathname);
      } catch {
        send(req, res, 400, { 'Content-Type': 'text/plain' }, Buffer.from('bad request: malformed URL'));
        return;
      }
      const target = resolveFile(decoded);
      let stat = target && (await fs.stat(target.file).catch(() => null));
      if (stat?.isDirectory()) {
        target.file = path.join(target.file, 'index.html');
        stat = await fs.stat(target.file).catch(() => null);
      }
      const real = stat?.isFile() && (await confined(target));
      if (!real) {
        send(req, res, 404, { 'Content-Type': 'text/plain' }, Buffer.from('not found'));
        return;
      }
      const ext = path.extname(target.file);
      const raw = await fs.readFile(real);
      const headers = {
        'Content-Type': TYPES[ext] ?? OCTETS,
        'Cache-Control': 'public, max-age=3600',
        Vary: 'Accept-Encoding',
        ...target.headers,
      };
      const acceptsBr = /\bbr\b/.test(req.headers['accept-encoding'] ?? '');
      if (acceptsBr && target.compress && !PRECOMPRESSED.has(ext)) {
        const body = await brotli(target.file, stat, raw);
        // Tiny files can grow under brotli; a CDN would then send them as they are.
        if (body.length < raw.length) {
          send(req, res, 200, { ...headers, 'Content-Encoding': 'br' }, body);
          return;
        }
      }
      send(req, res, 200, headers, raw);
    } catch (err) {
      // The detail goes to the log, never to the client.
      console.error(`serve.mjs: ${req.url}: ${err?.stack ?? err}`);
      if (!res.headersSent) send(req, res, 500, { 'Content-Type': 'text/plain' }, Buffer.from('internal error'));
      else res.destroy();
    }
  });

  function send(req, res, status, headers, body) {
    list.push({ url: req.url, status, bytes: body.length });
    res.writeHead(status, { ...extraHeaders, ...headers, 'Content-Length': body.length });
    res.end(body);
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    reset() {
      list = [];
    },
    stats() {
      return {
        requests: list.length,
        bytes: list.reduce((sum, r) => sum + r.bytes, 0),
        list: list.map((r) => ({ ...r })),
      };
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

async function compressCached(raw, cacheDir) {
  const cached = cacheDir && path.join(cacheDir, `${createHash('sha256').update(raw).digest('hex')}.br`);
  if (cached) {
    const hit = await fs.readFile(cached).catch(() => null);
    if (hit) return hit;
  }
  const body = await brotliCompress(raw, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: 11,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
    },
  });
  if (cached) {
    // Write-then-rename, so a run killed mid-write leaves no truncated entry behind.
    await fs.mkdir(cacheDir, { recursive: true });
    const tmp = `${cached}.${randomBytes(8).toString('hex')}.tmp`;
    await fs.writeFile(tmp, body, { flag: 'wx' });
    await fs.rename(tmp, cached);
  }
  return body;
}

// The command: serve mounts until interrupted.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  let port = 8080, compress = true, brotliCacheDir;
  const roots = {};
  const headers = {};
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--port') port = Number(args[++i]);
    else if (args[i] === '--csp') headers['Content-Security-Policy'] = CSP;
    else if (args[i] === '--no-compress') compress = false;
    else if (args[i] === '--brotli-cache') brotliCacheDir = args[++i];
    else {
      const eq = args[i].indexOf('=');
      if (eq < 1) throw new Error(`expected PREFIX=DIR, got ${args[i]}`);
      roots[args[i].slice(0, eq)] = { dir: args[i].slice(eq + 1), compress };
    }
  }
  const server = await startServer(roots, { port, brotliCacheDir, headers });
  console.log(`serving on ${server.url}/ (Ctrl-C to stop)`);
  process.on('SIGINT', () => server.close().then(() => process.exit(0)));
}
