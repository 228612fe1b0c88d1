// `docloupe serve` over real sockets: every endpoint, tokens and each user's projects, rate
// limits, the bounded pool's 503, the query log, the metrics, graceful shutdown, and MCP over
// streamable HTTP through the official TypeScript SDK's client, with and without a token.
// Run by tests/mcp/run.sh (env DOCLOUPE_MCP_WORK: fixtures.bundle (docloupe/fixtures),
// other.bundle (docloupe/other), team.bundle (docloupe/team: the fixtures with ru/ for group
// ru-team and en/caching.md for ops or sre), corrupt.bundle; DOCLOUPE_MODEL_DIR).
import { test, after } from 'node:test';
import { spawn, execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through tests/mcp/run.sh)`);
  return v;
};
const WORK = need('DOCLOUPE_MCP_WORK');
const MODELS = need('DOCLOUPE_MODEL_DIR');
const BIN = path.join(ROOT, 'target/release/docloupe');
const BUNDLE = path.join(WORK, 'fixtures.bundle');
const OTHER = path.join(WORK, 'other.bundle');
const CORRUPT = path.join(WORK, 'corrupt.bundle');
const TEAM = path.join(WORK, 'team.bundle');
const SEARCH = '/v1/search/docs/query';
const DOCUMENTS = '/v1/search/documents';
const FEEDBACK = '/v1/feedback';
const strip = (s) => s.replace(/,"timings":\{[^}]*\}/, '');

const sha = (t) => crypto.createHash('sha256').update(t).digest('hex');
const TOKENS = {
  anna: 'anna-7f3c9d-token',
  bob: 'bob-2a81e0-token',
  ops: 'ops-c55b1e-token',
  carol: 'carol-91d0aa-token',
  dave: 'dave-0b7e42-token',
};
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'docloupe-serve-'));
const tokensFile = path.join(dir, 'tokens.toml');
fs.writeFileSync(
  tokensFile,
  `# anna: the fixtures project only; bob: the other project, 3 calls a minute; ops: everything and the metrics
[[user]]
name = "anna"
token_sha256 = "${sha(TOKENS.anna)}"
projects = ["docloupe/fixtures"]
rate_limit = 0

[[user]]
name = "bob"
token_sha256 = "${sha(TOKENS.bob)}"
projects = ["docloupe/other"]
rate_limit = 3

[[user]]
name = "ops"
token_sha256 = "${sha(TOKENS.ops)}"
rate_limit = 0
metrics = true

# carol (group sre) and dave (no group): the team's bundle, inside which carol sees
# en/caching.md and dave does not; neither sees ru/.
[[user]]
name = "carol"
token_sha256 = "${sha(TOKENS.carol)}"
projects = ["docloupe/team"]
groups = ["sre"]
rate_limit = 0

[[user]]
name = "dave"
token_sha256 = "${sha(TOKENS.dave)}"
projects = ["docloupe/team"]
rate_limit = 0
`,
);

const servers = [];
after(() => {
  for (const s of servers) s.child.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

/** `docloupe serve` on a free port: {url, child, events, exited}. */
async function start(args, { bundles = [BUNDLE, OTHER] } = {}) {
  const child = spawn(BIN, ['serve', '--listen', '127.0.0.1:0', '--models', MODELS, ...bundles.flatMap((b) => ['--bundle', b]), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const events = [];
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stderr });
    lines.on('line', (line) => {
      let event;
      try {
        event = JSON.parse(line);
      } catch {
        event = { text: line };
      }
      events.push(event);
      if (event.event === 'listening') resolve(`http://${event.address}`);
    });
    exited.then(({ code }) => reject(new Error(`serve exited with ${code}: ${JSON.stringify(events)}`)));
  });
  const server = { url, child, events, exited };
  servers.push(server);
  return server;
}

const auth = (user) => (user ? { Authorization: `Bearer ${TOKENS[user] ?? user}` } : {});
const post = (s, p, body, user, headers = {}) =>
  fetch(s.url + p, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...auth(user), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const get = (s, p, user) => fetch(s.url + p, { headers: auth(user) });

const tokensServer = start(['--tokens', tokensFile, '--log', path.join(dir, 'queries.jsonl')]);

test('healthz and readyz answer without a token; a corrupt bundle makes readyz 503', async () => {
  const s = await tokensServer;
  assert.deepEqual(await (await get(s, '/healthz')).json(), { status: 'ok' });
  const r = await get(s, '/readyz');
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { bundles: 2, ready: true, reloadFailed: 0, unavailable: 0 });
  const broken = await start([], { bundles: [BUNDLE, CORRUPT] });
  const b = await get(broken, '/readyz');
  assert.equal(b.status, 503);
  assert.deepEqual(await b.json(), { bundles: 2, ready: false, reloadFailed: 0, unavailable: 1 });
  assert.ok(broken.events.some((e) => e.event === 'bundle' && e.state.startsWith('unavailable')), JSON.stringify(broken.events));
  broken.child.kill('SIGTERM');
  await broken.exited;
});

test('401 UNAUTHORIZED without a token, with a wrong one, or with the hash in its place, on every protected endpoint', async () => {
  const s = await tokensServer;
  for (const who of [undefined, 'not-a-token', sha(TOKENS.anna)]) {
    const search = await post(s, SEARCH, { query: 'cache' }, who);
    assert.equal(search.status, 401);
    assert.match(search.headers.get('www-authenticate'), /^Bearer/);
    assert.equal((await search.json()).errorCode, 'UNAUTHORIZED');
    assert.equal((await get(s, `${SEARCH}?q=cache`, who)).status, 401);
    for (const p of [DOCUMENTS, FEEDBACK]) {
      const r = await post(s, p, { query: 'cache', document: 'a.md', relevant: true }, who);
      assert.equal(r.status, 401, p);
      const body = await r.json();
      assert.deepEqual([body.success, body.error.code], [false, 'UNAUTHORIZED']);
    }
    assert.equal((await get(s, '/metrics', who)).status, 401);
    assert.equal((await post(s, '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, who, { Accept: 'application/json, text/event-stream' })).status, 401);
  }
});

test('POST and GET answer the contract exactly as docloupe search --jsonl does', async () => {
  const s = await tokensServer;
  const requests = fs.readFileSync(path.join(ROOT, 'tests/parity/requests.jsonl'), 'utf8').split('\n').filter(Boolean).slice(0, 40);
  const native = execFileSync(BIN, ['search', '--bundle', BUNDLE, '--models', MODELS, '--jsonl'], {
    input: requests.join('\n') + '\n',
    env: { ...process.env, DOCLOUPE_DAEMON: 'off' },
  })
    .toString()
    .split('\n')
    .filter(Boolean);
  assert.equal(native.length, requests.length);
  let answered = 0;
  for (const [i, line] of requests.entries()) {
    const r = await post(s, SEARCH, line, 'anna');
    const text = await r.text();
    assert.equal(strip(text), strip(native[i]), line);
    const expected = JSON.parse(native[i]);
    if (expected.errorCode === undefined) {
      assert.equal(r.status, 200, line);
      assert.equal(r.headers.get('x-docloupe-results'), String(expected.results.length));
      answered++;
    } else {
      assert.ok([400, 404, 503].includes(r.status), `${line}: ${r.status}`);
    }
  }
  assert.ok(answered >= 20, `${answered} answered`);
  // Hybrid with the models and the second stage, not a lexical fallback.
  const hybrid = await (await post(s, SEARCH, { query: 'how big can the cache be', mode: 'hybrid' }, 'anna')).json();
  assert.equal(hybrid.fallbackApplied, false);
  assert.equal(hybrid.appliedStrategy, 'bm25_plus_vector_rerank_docs_only');
  assert.equal(hybrid.results[0].documentPath, 'en/caching.md');
  // The GET form is the same request.
  const viaGet = await get(s, `${SEARCH}?q=${encodeURIComponent('cache size')}&limit=3&mode=fulltext&type=md`, 'anna');
  const viaPost = await post(s, SEARCH, { query: 'cache size', limit: 3, mode: 'fulltext', filters: { documentTypes: ['md'] } }, 'anna');
  assert.equal(strip(await viaGet.text()), strip(await viaPost.text()));
  const badLimit = await get(s, `${SEARCH}?q=cache&limit=lots`, 'anna');
  assert.equal(badLimit.status, 400);
  assert.equal((await badLimit.json()).errorCode, 'INVALID_REQUEST');
});

test('a body that is not JSON, too large or not UTF-8 is INVALID_REQUEST with its reason', async () => {
  const s = await tokensServer;
  const reason = async (r) => {
    assert.equal(r.status, 400);
    const b = await r.json();
    assert.equal(b.errorCode, 'INVALID_REQUEST');
    return b.details?.reason;
  };
  assert.equal(await reason(await post(s, SEARCH, 'query=cache', 'anna', { 'Content-Type': 'application/x-www-form-urlencoded' })), 'content_type');
  assert.equal(await reason(await post(s, SEARCH, JSON.stringify({ query: 'x'.repeat(70_000) }), 'anna')), 'body_too_large');
  const latin1 = await fetch(s.url + SEARCH, { method: 'POST', headers: { 'Content-Type': 'application/json', ...auth('anna') }, body: Buffer.from([0x7b, 0xff, 0x7d]) });
  assert.equal(await reason(latin1), 'encoding');
  assert.equal((await post(s, SEARCH, '{"query": ', 'anna')).status, 400);
  const docs = await post(s, DOCUMENTS, '[1, 2]', 'anna');
  assert.equal(docs.status, 400);
  assert.equal((await docs.json()).error.code, 'INVALID_QUERY');
});

test("a project outside the user's rights answers exactly as one that does not exist", async () => {
  const s = await tokensServer;
  const absent = async (user, project, p = SEARCH) => {
    const body = p === SEARCH ? { query: 'cache', projectId: project } : { query: 'cache', project };
    const r = await post(s, p, body, user);
    return [r.status, (await r.text()).replaceAll(project, 'PROJECT')];
  };
  // anna may not see docloupe/other; nobody serves docloupe/nothere.
  assert.deepEqual(await absent('anna', 'docloupe/other'), await absent('anna', 'docloupe/nothere'));
  assert.equal((await absent('anna', 'docloupe/other'))[0], 404);
  assert.deepEqual(await absent('anna', 'docloupe/other', DOCUMENTS), await absent('anna', 'docloupe/nothere', DOCUMENTS));
  // ops sees both; bob's requests without a project go to the first bundle he may see.
  assert.equal((await post(s, SEARCH, { query: 'cache', projectId: 'docloupe/other' }, 'ops')).status, 200);
  const bobs = await (await post(s, SEARCH, { query: 'cache', mode: 'fulltext' }, 'bob')).json();
  assert.ok(bobs.results.length > 0 && bobs.results.every((r) => r.documentPath.startsWith('guide/') || !r.documentPath.startsWith('en/')), JSON.stringify(bobs.results.map((r) => r.documentPath)));
  const annas = await (await post(s, SEARCH, { query: 'cache', mode: 'fulltext' }, 'anna')).json();
  assert.ok(annas.results.some((r) => r.documentPath.startsWith('en/')));
  // Feedback on a hidden project is refused as one not served.
  const fb = await post(s, FEEDBACK, { query: 'cache', document: 'guide/caching.md', relevant: true, project: 'docloupe/fixtures' }, 'bob');
  assert.equal(fb.status, 400);
  assert.match((await fb.json()).error.message, /no served bundle is project docloupe\/fixtures/);
});

test("each user's rate limit: RATE_LIMIT 429 with Retry-After past it, the others unaffected", async () => {
  const s = await tokensServer;
  // bob may make 3 calls a minute; the previous test made two.
  let limited;
  for (let i = 0; i < 4 && !limited; i++) {
    const r = await post(s, DOCUMENTS, { query: 'cache', search_mode: 'fulltext' }, 'bob');
    if (r.status === 429) limited = r;
  }
  assert.ok(limited, 'bob was limited');
  assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  const body = await limited.json();
  assert.equal(body.error.code, 'RATE_LIMIT');
  const search = await post(s, SEARCH, { query: 'cache' }, 'bob');
  assert.equal(search.status, 429);
  assert.equal((await search.json()).errorCode, 'RATE_LIMIT');
  assert.equal((await post(s, SEARCH, { query: 'cache' }, 'anna')).status, 200);
});

test('search_documents and feedback over HTTP', async () => {
  const s = await tokensServer;
  const r = await post(s, DOCUMENTS, { query: 'how big can the cache be', limit: 2 }, 'anna');
  assert.equal(r.status, 200);
  const d = await r.json();
  assert.equal(d.success, true);
  assert.equal(d.results[0].file_path, 'en/caching.md');
  const fb = await post(s, FEEDBACK, { query: 'how big can the cache be', document: 'en/caching.md', relevant: true, rank: 1 }, 'anna');
  assert.equal(fb.status, 200);
  assert.deepEqual(await fb.json(), { success: true, recorded: true });
  const bad = await post(s, FEEDBACK, { query: 'q', document: 'en/caching.md', relevant: 'yes' }, 'anna');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.details.field, 'relevant');
});

test('MCP over streamable HTTP with the SDK: three tools, the same answers, scoped by the token', async () => {
  const s = await tokensServer;
  const connect = async (user) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: auth(user) } });
    const client = new Client({ name: 'docloupe-serve-tests', version: '1.0.0' });
    await client.connect(transport);
    return client;
  };
  await assert.rejects(connect(undefined), /bearer token is required/);
  await assert.rejects(connect('wrong-token'), /bearer token is required/);
  const anna = await connect('anna');
  const { tools } = await anna.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['result_feedback', 'search_docs', 'search_documents']);
  assert.match(anna.getInstructions(), /docloupe\/fixtures/);
  assert.doesNotMatch(anna.getInstructions(), /docloupe\/other/);
  const request = { query: 'how big can the cache be', limit: 3 };
  const viaMcp = await anna.callTool({ name: 'search_docs', arguments: request });
  assert.notEqual(viaMcp.isError, true, JSON.stringify(viaMcp));
  const viaHttp = await (await post(s, SEARCH, request, 'anna')).json();
  assert.deepEqual({ ...viaMcp.structuredContent, timings: 0 }, { ...viaHttp, timings: 0 });
  const docs = await anna.callTool({ name: 'search_documents', arguments: { query: 'cache', limit: 1 } });
  assert.equal(docs.structuredContent.results[0].file_path.startsWith('en/'), true);
  const fb = await anna.callTool({ name: 'result_feedback', arguments: { query: 'cache', document: 'en/caching.md', relevant: false } });
  assert.deepEqual(fb.structuredContent, { success: true, recorded: true });
  const hidden = await anna.callTool({ name: 'search_docs', arguments: { query: 'cache', projectId: 'docloupe/other' } });
  assert.equal(hidden.isError, true);
  assert.equal(hidden.structuredContent.details.reason, 'ProjectNotFound');
  await anna.close();
});

test('the query log: one line per call with user and endpoint, never a token', async () => {
  const s = await tokensServer;
  await post(s, SEARCH, { query: 'log me please' }, 'ops');
  const log = path.join(dir, 'queries.jsonl');
  let lines = [];
  for (let i = 0; i < 50 && !lines.some((l) => l.params?.query === 'log me please'); i++) {
    lines = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    await new Promise((r) => setTimeout(r, 50));
  }
  const mine = lines.find((l) => l.params?.query === 'log me please');
  assert.deepEqual([mine.user, mine.endpoint, mine.tool, mine.errorCode], ['ops', SEARCH, 'search_docs', null]);
  assert.ok(mine.durationMs > 0 && typeof mine.results === 'number', JSON.stringify(mine));
  assert.ok(lines.some((l) => l.endpoint === '/mcp' && l.user === 'anna'), 'MCP calls are logged');
  assert.ok(lines.some((l) => l.user === 'bob' && l.errorCode === 'RATE_LIMIT'));
  const text = fs.readFileSync(log, 'utf8');
  for (const t of Object.values(TOKENS)) assert.ok(!text.includes(t), 'no token in the log');
  assert.equal(fs.statSync(log).mode & 0o077, 0, 'the log is its owner\'s only');
  // docloupe stats reads it.
  const stats = execFileSync(BIN, ['stats', log]).toString();
  assert.match(stats, /search_docs/);
});

test('/metrics: the Prometheus text for a user with the right, 404 for one without', async () => {
  const s = await tokensServer;
  assert.equal((await get(s, '/metrics', 'anna')).status, 404);
  const r = await get(s, '/metrics', 'ops');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /openmetrics-text/);
  const text = await r.text();
  const value = (re) => Number((text.match(re) ?? [])[1] ?? NaN);
  assert.ok(value(/docloupe_requests_total\{endpoint="\/v1\/search\/docs\/query",tool="search_docs",mode="hybrid",status="200"\} (\d+)/) >= 1, text);
  assert.ok(value(/docloupe_rate_limited_total (\d+)/) >= 1);
  assert.ok(value(/docloupe_unauthorized_total (\d+)/) >= 15);
  assert.ok(value(/docloupe_zero_results_total\{endpoint="\/v1\/search\/docs\/query"\} (\d+)/) >= 1);
  assert.ok(value(/docloupe_feedback_total\{relevant="true"\} (\d+)/) >= 1);
  assert.ok(value(/docloupe_requests_total\{endpoint="\/mcp",tool="search_docs",mode="default",status="200"\} (\d+)/) >= 1);
  assert.match(text, /docloupe_stage_duration_seconds_bucket\{le="[^"]+",stage="embed"\}/);
  assert.match(text, /docloupe_request_duration_seconds_count\{endpoint="\/v1\/search\/documents"\} \d+/);
  assert.match(text, /docloupe_bundle_ready\{path="[^"]*fixtures\.bundle"\} 1/);
  assert.match(text, /docloupe_bundle_generation\{path="[^"]*other\.bundle"\} 1/);
  assert.match(text, /# EOF\n$/);
});

test('past its workers and queue the server answers 503 with Retry-After at once, and every other search answers', async () => {
  const s = await start(['--workers', '1', '--queue', '1']);
  assert.ok(s.events.some((e) => e.event === 'open'), 'an open server says so');
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, i) => post(s, SEARCH, { query: `how do I configure the cache size ${i}`, mode: 'hybrid' }).then(async (r) => [r.status, r.headers.get('retry-after'), await r.json()])),
  );
  const busy = answers.filter(([status]) => status === 503);
  const ok = answers.filter(([status]) => status === 200);
  assert.equal(busy.length + ok.length, answers.length, JSON.stringify(answers.filter(([st]) => st !== 200 && st !== 503)));
  assert.ok(busy.length > 0, 'some searches found the pool full');
  assert.ok(ok.length >= 2, 'the worker and the queue answered');
  for (const [, retry, body] of busy) {
    assert.equal(retry, '1');
    assert.deepEqual([body.errorCode, body.details.reason], ['DOCS_COLLECTION_UNAVAILABLE', 'overloaded']);
  }
  const metrics = await (await get(s, '/metrics')).text();
  assert.match(metrics, new RegExp(`docloupe_overloaded_total ${busy.length}\\b`));
  // SIGTERM: a search in flight is answered, then the server stops cleanly.
  const inFlight = post(s, SEARCH, { query: 'how do I remove old entries', mode: 'hybrid' });
  await new Promise((r) => setTimeout(r, 5));
  s.child.kill('SIGTERM');
  assert.equal((await inFlight).status, 200);
  assert.deepEqual(await s.exited, { code: 0, signal: null });
  assert.ok(s.events.some((e) => e.event === 'stopped'));
});

test("the cache: a repeated search is a hit for the same rights, never for another user's", async () => {
  const s = await tokensServer;
  const q = { query: 'where is the cache configured', mode: 'hybrid', limit: 2 };
  const first = await post(s, SEARCH, q, 'ops');
  assert.equal(first.headers.get('x-docloupe-cache'), 'miss');
  const again = await post(s, SEARCH, q, 'ops');
  assert.equal(again.headers.get('x-docloupe-cache'), 'hit');
  assert.equal(await again.text(), await first.text(), 'the same answer, timings included');
  // anna has other rights: her first ask is a miss, and answers from her collection only.
  const hers = await post(s, SEARCH, { ...q, projectId: 'docloupe/other' }, 'anna');
  assert.equal(hers.status, 404);
  const annas = await post(s, SEARCH, q, 'anna');
  assert.equal(annas.headers.get('x-docloupe-cache'), 'miss');
  const metrics = await (await get(s, '/metrics', 'ops')).text();
  assert.ok(Number(metrics.match(/docloupe_cache_hits_total (\d+)/)[1]) >= 1);
});

test('reload: a rebuilt bundle is picked up without a restart; a bad one leaves the old one serving, in the log and /readyz', async () => {
  const live = path.join(dir, 'live.bundle');
  fs.copyFileSync(OTHER, live);
  const s = await start(['--watch-seconds', '0'], { bundles: [live] });
  const ask = async () => (await post(s, SEARCH, { query: 'cache', mode: 'fulltext' })).json();
  const before = await ask();
  assert.ok(before.results.every((r) => r.documentPath.startsWith('guide/') || !r.documentPath.startsWith('en/')));
  const reloaded = async (state) => {
    for (let i = 0; i < 200; i++) {
      const e = s.events.filter((x) => x.event === 'reload');
      if (e.length && e[e.length - 1].state === state) return e[e.length - 1];
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.fail(`no reload ${state}: ${JSON.stringify(s.events)}`);
  };
  // A corrupt file renamed into place: the old bundle keeps answering.
  fs.copyFileSync(CORRUPT, live + '.tmp');
  fs.renameSync(live + '.tmp', live);
  s.child.kill('SIGHUP');
  const failed = await reloaded('failed');
  assert.match(failed.error, /checksum|corrupt|invalid/i);
  assert.deepEqual(await ask(), { ...before, timings: (await ask()).timings });
  const ready = await (await get(s, '/readyz')).json();
  assert.deepEqual([ready.ready, ready.reloadFailed], [true, 1]);
  // A good rebuilt bundle (another collection) swaps in; searches answer from it.
  s.events.length = 0;
  fs.copyFileSync(BUNDLE, live + '.tmp');
  fs.renameSync(live + '.tmp', live);
  s.child.kill('SIGHUP');
  await reloaded('ready');
  const after = await ask();
  assert.ok(after.results.some((r) => r.documentPath.startsWith('en/')), JSON.stringify(after.results.map((r) => r.documentPath)));
  assert.equal((await (await get(s, '/readyz')).json()).reloadFailed, 0);
  const metrics = await (await get(s, '/metrics')).text();
  assert.match(metrics, /docloupe_bundle_generation\{[^}]*live\.bundle"\} 2/);
  assert.match(metrics, /docloupe_bundle_reload_failures_total 1/);
  s.child.kill('SIGTERM');
  await s.exited;
});

test("access labels: each user finds the documents their groups open, and nothing reveals the others", async () => {
  const s = await start(['--tokens', tokensFile], { bundles: [BUNDLE, TEAM] });
  const paths = (body) => [...new Set(body.results.map((r) => r.documentPath))];
  const ask = async (user, body, p = SEARCH) => {
    const r = await post(s, p, { projectId: 'docloupe/team', ...body }, user);
    assert.equal(r.status, 200, `${user}: ${JSON.stringify(body)}`);
    return r.json();
  };
  // Hybrid with the models: carol (sre) finds the caching page, dave never.
  const q = { query: 'how big can the cache be', mode: 'hybrid', limit: 10 };
  assert.equal((await ask('carol', q)).results[0].documentPath, 'en/caching.md');
  const daves = await ask('dave', q);
  assert.ok(!paths(daves).includes('en/caching.md') && paths(daves).every((p) => !p.startsWith('ru/')), JSON.stringify(paths(daves)));
  // A word only restricted pages hold: no result, no total, no facet count.
  for (const [user, query] of [['dave', 'database'], ['dave', 'размер кэша'], ['carol', 'размер кэша']]) {
    const r = await ask(user, { query, mode: 'fulltext' });
    assert.deepEqual([r.total, r.results.length, r.facets.documentTypes], [0, 0, {}], `${user}: ${query}`);
  }
  const carols = await ask('carol', { query: 'database', mode: 'fulltext' });
  assert.deepEqual(paths(carols), ['en/caching.md']);
  // A misspelling of it is neither corrected nor suggested to dave; carol gets both.
  const typo = { query: 'invalidaton', mode: 'fulltext' };
  const d = await ask('dave', typo);
  assert.deepEqual([d.total, d.suggestions], [0, []]);
  const c = await ask('carol', typo);
  assert.deepEqual([paths(c)[0], c.suggestions[0]], ['en/caching.md', 'invalidation']);
  // The same through search_documents, the GET form and MCP over HTTP.
  const docs = await post(s, DOCUMENTS, { query: 'database', project: 'docloupe/team', search_mode: 'fulltext' }, 'dave');
  assert.equal(docs.status, 200);
  assert.deepEqual((await docs.json()).results, []);
  const viaGet = await (await get(s, `${SEARCH}?q=database&mode=fulltext&project=docloupe/team`, 'dave')).json();
  assert.equal(viaGet.total, 0);
  const transport = new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: auth('dave') } });
  const client = new Client({ name: 'docloupe-serve-tests', version: '1.0.0' });
  await client.connect(transport);
  const mcp = await client.callTool({ name: 'search_docs', arguments: { query: 'database', mode: 'fulltext', projectId: 'docloupe/team' } });
  assert.equal(mcp.structuredContent.total, 0);
  await client.close();
  // The cache: carol's answer is kept for carol, never handed to dave.
  const cached = { query: 'where is the cache size set', mode: 'hybrid', limit: 5 };
  const first = await post(s, SEARCH, { projectId: 'docloupe/team', ...cached }, 'carol');
  const again = await post(s, SEARCH, { projectId: 'docloupe/team', ...cached }, 'carol');
  assert.deepEqual([first.headers.get('x-docloupe-cache'), again.headers.get('x-docloupe-cache')], ['miss', 'hit']);
  assert.ok(paths(await again.json()).includes('en/caching.md'));
  const his = await post(s, SEARCH, { projectId: 'docloupe/team', ...cached }, 'dave');
  assert.equal(his.headers.get('x-docloupe-cache'), 'miss');
  assert.ok(!paths(await his.json()).includes('en/caching.md'));
  s.child.kill('SIGTERM');
  await s.exited;
});

test('an open server shows no document that access labels restrict', async () => {
  const s = await start([], { bundles: [TEAM] });
  const r = await (await post(s, SEARCH, { query: 'install the server database cache', mode: 'fulltext', limit: 20 })).json();
  const p = r.results.map((x) => x.documentPath);
  assert.ok(p.includes('en/install.md') && !p.includes('en/caching.md') && p.every((x) => !x.startsWith('ru/')), JSON.stringify(p));
  s.child.kill('SIGTERM');
  await s.exited;
});
