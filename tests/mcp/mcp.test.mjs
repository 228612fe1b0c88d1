// `docloupe mcp` driven by a real MCP client (the official TypeScript SDK) over stdio: the
// handshake, the tool list with search_documents' exact schema, both tools, every refusal.
// Run by tests/mcp/run.sh (env DOCLOUPE_MCP_WORK: fixtures.bundle (project docloupe/fixtures),
// fixtures.split (the same, split), corrupt.bundle, DOCLOUPE_MODEL_DIR). Writes a transcript of one session to
// target/test-output/mcp/transcript.jsonl.
import { test, after } from 'node:test';
import { spawn, execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run through tests/mcp/run.sh)`);
  return v;
};
const WORK = need('DOCLOUPE_MCP_WORK');
const MODELS = need('DOCLOUPE_MODEL_DIR');
const BUNDLE = path.join(WORK, 'fixtures.bundle');
const OTHER = path.join(WORK, 'other.bundle');
const SPLIT = path.join(WORK, 'fixtures.split');
const OUT = path.join(ROOT, 'target/test-output/mcp');
fs.mkdirSync(OUT, { recursive: true });

const sessions = [];
after(async () => {
  for (const s of sessions) await s.close().catch(() => {});
});

/** A client session with `docloupe mcp` started with `args`; `log` captures the query log. */
async function connect(args, { log } = {}) {
  const transport = new StdioClientTransport({
    command: path.join(ROOT, 'target/release/docloupe'),
    args: ['mcp', '--models', MODELS, ...args, ...(log ? ['--log', log] : [])],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'docloupe-tests', version: '1.0.0' });
  await client.connect(transport);
  sessions.push(client);
  return client;
}

const call = (client, name, args) => client.callTool({ name, arguments: args });

/** The structured error of a refused call (isError), with its code. */
function refused(result, code) {
  assert.equal(result.isError, true, JSON.stringify(result));
  const e = result.structuredContent;
  assert.equal(e.success, false);
  assert.equal(e.error.code, code, JSON.stringify(e));
  assert.equal(typeof e.error.message, 'string');
  return e.error;
}

test('initialize, list tools: both tools, search_documents with exactly the specified schema', async () => {
  const client = await connect(['--bundle', BUNDLE]);
  assert.equal(client.getServerVersion().name, 'docloupe');
  assert.ok(client.getServerCapabilities().tools);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['result_feedback', 'search_docs', 'search_documents']);
  const schema = tools.find((t) => t.name === 'search_documents').inputSchema;
  assert.deepEqual(Object.keys(schema.properties).sort(), [
    'date_range', 'document_types', 'include_context', 'limit', 'max_chunks', 'page', 'project', 'query', 'search_mode', 'source_filter',
  ]);
  assert.deepEqual([schema.properties.page.type, schema.properties.page.minimum, schema.properties.page.default], ['integer', 1, 1]);
  assert.equal(schema.properties.project.type, 'string');
  assert.deepEqual(schema.required, ['query']);
  assert.equal(schema.additionalProperties, false);
  const p = schema.properties;
  assert.deepEqual([p.query.type, p.query.minLength, p.query.maxLength], ['string', 1, 500]);
  assert.deepEqual([p.limit.type, p.limit.minimum, p.limit.maximum, p.limit.default], ['integer', 1, 50, 10]);
  assert.deepEqual([p.document_types.type, p.document_types.items.type, p.document_types.default], ['array', 'string', []]);
  assert.deepEqual(Object.keys(p.date_range.properties).sort(), ['from', 'to']);
  assert.equal(p.date_range.properties.from.format, 'date');
  assert.equal(p.source_filter.type, 'string');
  assert.deepEqual([p.include_context.type, p.include_context.default], ['boolean', true]);
  assert.deepEqual([p.max_chunks.type, p.max_chunks.minimum, p.max_chunks.maximum, p.max_chunks.default], ['integer', 1, 10, 3]);
  assert.deepEqual([p.search_mode.enum, p.search_mode.default], [['semantic', 'fulltext', 'hybrid'], 'hybrid']);
  const docs = tools.find((t) => t.name === 'search_docs').inputSchema;
  assert.deepEqual(docs.required, ['query']);
  assert.ok(docs.properties.filters.properties.documentTypes);
});

test('search_documents: results grouped per document, in the specified shape', async () => {
  const client = await connect(['--bundle', BUNDLE]);
  const r = await call(client, 'search_documents', { query: 'how big can the cache be', limit: 2, max_chunks: 2 });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const s = r.structuredContent;
  assert.equal(s.success, true);
  assert.equal(s.query, 'how big can the cache be');
  assert.ok(s.total_results >= s.results.length && s.results.length === 2, JSON.stringify(s));
  assert.match(s.search_time, /^\d+\.\d{3}s$/);
  const doc = s.results[0];
  assert.deepEqual(Object.keys(doc).sort(), [
    'context_chunks', 'created_at', 'file_path', 'file_size', 'file_type', 'highlights', 'id', 'relevance_score', 'title', 'updated_at',
  ]);
  assert.equal(doc.file_path, 'en/caching.md');
  assert.equal(doc.file_type, 'md');
  assert.ok(doc.highlights.length >= 1 && doc.highlights.length <= 2);
  assert.ok(doc.highlights.some((h) => /\*\*cache\*\*/i.test(h)), JSON.stringify(doc.highlights));
  for (const c of doc.context_chunks) {
    assert.deepEqual(Object.keys(c).sort(), ['chunk_index', 'page_number', 'relevance_score', 'text']);
    assert.equal(c.page_number, null);
  }
  assert.ok(doc.context_chunks.some((c) => c.relevance_score === null), 'neighbours come as context');
  assert.deepEqual(Object.keys(s.facets).sort(), ['date_distribution', 'document_types', 'undated']);
  assert.equal(typeof s.facets.undated, 'number');
  assert.ok(s.facets.document_types.md >= 2);
  assert.ok(Array.isArray(s.suggestions));
  assert.match(r.content[0].text, /en\/caching\.md/);
  // Filters: type, date range, path prefix; no context.
  const ru = await call(client, 'search_documents', { query: 'кэш', source_filter: 'ru/', include_context: false, search_mode: 'fulltext' });
  assert.ok(ru.structuredContent.results.every((d) => d.file_path.startsWith('ru/')));
  assert.ok(ru.structuredContent.results.every((d) => d.context_chunks.every((c) => c.relevance_score !== null)));
  const dated = await call(client, 'search_documents', { query: 'cache', date_range: { from: '2024-03-01', to: '2024-03-31' }, search_mode: 'fulltext' });
  assert.ok(dated.structuredContent.results.every((d) => d.updated_at?.startsWith('2024-03')), JSON.stringify(dated.structuredContent));
  const none = await call(client, 'search_documents', { query: 'cache', document_types: ['pdf'] });
  assert.equal(none.structuredContent.results.length, 0);
});

test('paging (issue 25): search_documents pages by document, search_docs by offset; neither repeats or skips', async () => {
  const client = await connect(['--bundle', BUNDLE]);
  const ids = async (args) => {
    const r = await call(client, 'search_documents', { query: 'cache', ...args });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    return [r.structuredContent.results.map((d) => d.id), r.content[0].text];
  };
  const [three] = await ids({ limit: 3 });
  assert.equal(three.length, 3);
  const paged = [];
  for (const page of [1, 2, 3]) {
    const [one, text] = await ids({ limit: 1, page });
    paged.push(...one);
    if (page === 2) assert.match(text, /^\*\*document 2 of \d+\*\*/);
  }
  assert.deepEqual(paged, three);
  const bad = await call(client, 'search_documents', { query: 'cache', page: 0 });
  assert.equal(bad.structuredContent.error.details.field, 'page');
  const contract = async (extra) => (await call(client, 'search_docs', { query: 'cache size', mode: 'fulltext', ...extra })).structuredContent;
  const four = await contract({ limit: 4 });
  const halves = [...(await contract({ limit: 2 })).results, ...(await contract({ limit: 2, offset: 2 })).results];
  assert.deepEqual(halves.map((x) => x.chunkId), four.results.map((x) => x.chunkId));
});

test('--fallback-policy and --rerank-budget-ms reach the engine (issue 25)', async () => {
  const strict = await connect(['--bundle', BUNDLE, '--no-reranker', '--fallback-policy', 'error-on-total-failure']);
  const r = await call(strict, 'search_docs', { query: 'cache size' });
  assert.equal(r.isError, true);
  assert.equal(r.structuredContent.errorCode, 'DOCS_RERANKING_UNAVAILABLE');
  // A cross-encoder given no time: the fused order, flagged with the reason.
  const hurried = await connect(['--bundle', BUNDLE, '--reranker', path.join(ROOT, 'prebuild/reranker/model'), '--rerank-budget-ms', '0']);
  const fused = (await call(hurried, 'search_docs', { query: 'cache size' })).structuredContent;
  assert.equal(fused.fallbackApplied, true, JSON.stringify(fused));
  assert.equal(fused.degradedReason, 'rerank_budget_exceeded');
});

test('a split folder is served piece by piece and answers as its bundle file, calls at once included', async () => {
  const whole = await connect(['--bundle', BUNDLE]);
  const split = await connect(['--bundle', SPLIT]);
  const calls = [
    ['search_docs', { query: 'how big can the cache be' }],
    ['search_docs', { query: 'cache eviction', mode: 'fulltext', limit: 3 }],
    ['search_docs', { query: 'кэш', mode: 'fulltext', filters: { documentTypes: ['md'] } }],
    ['search_docs', { query: 'cahce sise', mode: 'fulltext' }],
    ['search_docs', { query: 'install the command line tool', mode: 'hybrid', rerank: false }],
    ['search_docs', { query: 'configuration', mode: 'semantic', limit: 4 }],
    ['search_documents', { query: 'how big can the cache be', limit: 2, max_chunks: 2 }],
    ['search_documents', { query: 'cache', search_mode: 'fulltext', page: 2, limit: 1 }],
  ];
  // What varies between two runs of one request: the time it took.
  const stable = (r) => {
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const s = structuredClone(r.structuredContent);
    delete s.timings;
    delete s.search_time;
    return s;
  };
  const expected = [];
  for (const [name, args] of calls) expected.push(stable(await call(whole, name, args)));
  // The split server starts with only core.bin: every call below needs pieces it has not
  // read, and they are all in flight at once (twice over).
  const got = await Promise.all([...calls, ...calls].map(([name, args]) => call(split, name, args)));
  got.forEach((r, i) => assert.deepEqual(stable(r), expected[i % calls.length], JSON.stringify(calls[i % calls.length])));
  assert.ok(expected[0].results.length > 0 && expected[6].results.length === 2, 'the requests find something');
  // With no room for pieces, the engine drops what it has read before each search that needs
  // more, and reads it again: the same answers, one at a time and all at once.
  const forgetful = await connect(['--bundle', SPLIT, '--split-memory-mib', '0']);
  for (const [i, [name, args]] of calls.entries()) {
    assert.deepEqual(stable(await call(forgetful, name, args)), expected[i], JSON.stringify(calls[i]));
  }
  const again = await Promise.all([...calls, ...calls].map(([name, args]) => call(forgetful, name, args)));
  again.forEach((r, i) => assert.deepEqual(stable(r), expected[i % calls.length], JSON.stringify(calls[i % calls.length])));
});

test('search_docs: the contract in, the contract out', async () => {
  const client = await connect(['--bundle', BUNDLE]);
  const r = await call(client, 'search_docs', { query: 'cache size', limit: 3, mode: 'hybrid' });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const s = r.structuredContent;
  assert.equal(s.appliedStrategy, 'bm25_plus_vector_rerank_docs_only');
  assert.equal(s.fallbackApplied, false);
  assert.equal(s.results.length, 3);
  assert.ok(s.results.every((x) => typeof x.rankingSignals.rerank === 'number'));
  assert.match(r.content[0].text, /Configure the cache size/);
  const bad = await call(client, 'search_docs', { query: 'x', limit: 0 });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.errorCode, 'INVALID_REQUEST');
  assert.equal(bad.structuredContent.details.field, 'limit');
});

test('a collection with PDFs and references: page numbers and citations in both tools', async () => {
  // The frozen format-9 bundle: tests/fixtures plus a four-page PDF matched to `smith2020`.
  const client = await connect(['--bundle', path.join(ROOT, 'tests/fixtures/bundles/v9-mixed.bundle')]);
  const r = await call(client, 'search_documents', { query: 'zebrafish hit ratio', limit: 1 });
  assert.notEqual(r.isError, true, JSON.stringify(r));
  const doc = r.structuredContent.results[0];
  assert.equal(doc.file_path, 'papers/smith2020.pdf');
  assert.equal(doc.file_type, 'pdf');
  assert.equal(doc.citation.citekey, 'smith2020');
  assert.deepEqual(doc.citation.authors, ['Smith, Ada']);
  const fragment = doc.context_chunks.find((c) => c.relevance_score !== null);
  assert.equal(fragment.page_number, 3);
  assert.match(r.content[0].text, /\[@smith2020, pp\. 3–4\]/);
  const contract = await call(client, 'search_docs', { query: 'zebrafish', mode: 'fulltext', limit: 1, maxCharsPerChunk: 60 });
  const top = contract.structuredContent.results[0];
  assert.deepEqual([top.pageStart, top.pageEnd, top.anchor], [3, 4, 'page=3']);
  assert.equal(top.citation.doi, '10.1000/edge.2020');
  assert.ok(top.text.length <= 60 && top.text.endsWith('…'), top.text);
});

test('invalid arguments are INVALID_QUERY naming the field', async () => {
  const client = await connect(['--bundle', BUNDLE]);
  for (const [args, field] of [
    [{ query: '' }, 'query'],
    [{ query: '   ' }, 'query'],
    [{ query: 'x'.repeat(501) }, 'query'],
    [{ query: 'cache', limit: 0 }, 'limit'],
    [{ query: 'cache', limit: 51 }, 'limit'],
    [{ query: 'cache', max_chunks: 0 }, 'max_chunks'],
    [{ query: 'cache', search_mode: 'vector' }, 'search_mode'],
    [{ query: 'cache', date_range: { from: '2024-02-30' } }, 'date_range.from'],
    [{ query: 'cache', date_range: { from: 'yesterday' } }, 'date_range.from'],
    [{ query: 'cache', date_range: { from: '2024-05-01', to: '2024-01-01' } }, 'date_range.from'],
    [{ query: 'cache', colour: 'red' }, 'colour'],
    [{ limit: 3 }, ''],
  ]) {
    const e = refused(await call(client, 'search_documents', args), 'INVALID_QUERY');
    assert.equal(e.details.field, field, `${JSON.stringify(args)}: ${e.message}`);
  }
});

test('a corrupt bundle is INDEX_UNAVAILABLE; the server still answers', async () => {
  const client = await connect(['--bundle', path.join(WORK, 'corrupt.bundle')]);
  const e = refused(await call(client, 'search_documents', { query: 'cache' }), 'INDEX_UNAVAILABLE');
  assert.match(e.message, /checksum|corrupt|truncated/i);
  const docs = await call(client, 'search_docs', { query: 'cache' });
  assert.equal(docs.structuredContent.errorCode, 'DOCS_COLLECTION_UNAVAILABLE');
});

test('access scope: other projects are UNAUTHORIZED; allowed ones answer', async () => {
  const open = await connect(['--bundle', BUNDLE, '--allow-project', 'docloupe/fixtures']);
  assert.notEqual((await call(open, 'search_documents', { query: 'cache' })).isError, true);
  const other = await call(open, 'search_docs', { query: 'cache', projectId: 'acme/secrets' });
  assert.equal(other.structuredContent.errorCode, 'UNAUTHORIZED');
  const closed = await connect(['--bundle', BUNDLE, '--allow-project', 'acme/other']);
  refused(await call(closed, 'search_documents', { query: 'cache' }), 'UNAUTHORIZED');
});

test('rate limit: past the configured calls per minute, RATE_LIMIT with the wait', async () => {
  const client = await connect(['--bundle', BUNDLE, '--rate-limit', '2']);
  for (let i = 0; i < 2; i++) assert.notEqual((await call(client, 'search_documents', { query: `cache ${i}` })).isError, true);
  const e = refused(await call(client, 'search_documents', { query: 'cache' }), 'RATE_LIMIT');
  assert.ok(e.details.retryAfterSeconds >= 1);
});

test('every call is logged as a JSON line with its parameters and time; a transcript is kept', async () => {
  const log = path.join(WORK, 'queries.jsonl');
  const client = await connect(['--bundle', BUNDLE], { log });
  const transcript = [];
  const record = async (name, args) => {
    const result = await call(client, name, args);
    transcript.push({ request: { method: 'tools/call', params: { name, arguments: args } }, response: result });
    return result;
  };
  transcript.push({ request: { method: 'tools/list' }, response: await client.listTools() });
  await record('search_documents', { query: 'how do I upgrade the server', limit: 2, max_chunks: 1 });
  await record('search_docs', { query: 'обновление сервера', limit: 2, mode: 'fulltext' });
  await record('search_documents', { query: 'cache', limit: 0 });
  fs.writeFileSync(path.join(OUT, 'transcript.jsonl'), transcript.map((t) => JSON.stringify(t)).join('\n') + '\n');
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 3);
  assert.deepEqual(lines.map((l) => l.tool), ['search_documents', 'search_docs', 'search_documents']);
  assert.equal(lines[0].params.query, 'how do I upgrade the server');
  assert.ok(lines.every((l) => Date.parse(l.time) && typeof l.durationMs === 'number'));
  assert.equal(lines[0].results, 2);
  assert.equal(lines[2].errorCode, 'INVALID_QUERY');
});

test('several bundles: search_documents picks one by project; the instructions name only allowed projects (regression)', async () => {
  const both = await connect(['--bundle', BUNDLE, '--bundle', OTHER]);
  assert.match(both.getInstructions(), /docloupe\/fixtures.*docloupe\/other/);
  const first = await call(both, 'search_documents', { query: 'cache', search_mode: 'fulltext' });
  const other = await call(both, 'search_documents', { query: 'cache', search_mode: 'fulltext', project: 'docloupe/other' });
  assert.notEqual(other.isError, true, JSON.stringify(other));
  const paths = (r) => r.structuredContent.results.map((d) => d.file_path);
  assert.ok(paths(first).includes('en/caching.md'), paths(first));
  assert.ok(paths(other).includes('guide/caching.md'), paths(other));
  refused(await call(both, 'search_documents', { query: 'cache', project: 'acme/none' }), 'INDEX_UNAVAILABLE');
  const scoped = await connect(['--bundle', BUNDLE, '--bundle', OTHER, '--allow-project', 'docloupe/other']);
  assert.doesNotMatch(scoped.getInstructions(), /docloupe\/fixtures/);
  assert.match(scoped.getInstructions(), /docloupe\/other/);
  refused(await call(scoped, 'search_documents', { query: 'cache', project: 'docloupe/fixtures' }), 'UNAUTHORIZED');
});

test('the query log is created readable by its owner only, and caps what a client sends (regression)', async () => {
  const log = path.join(WORK, 'private.jsonl');
  const client = await connect(['--bundle', BUNDLE], { log });
  await call(client, 'search_documents', { query: 'cache', huge: 'x'.repeat(200_000), list: Array(5000).fill('y') });
  await call(client, 'search_documents', { query: 'q'.repeat(100_000) });
  assert.equal(fs.statSync(log).mode & 0o777, 0o600);
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n');
  assert.equal(lines.length, 2);
  for (const l of lines) assert.ok(l.length < 8_000, `a log line of ${l.length} bytes`);
  assert.equal(JSON.parse(lines[0]).errorCode, 'INVALID_QUERY');
});

test('usage statistics (issue 25): result_feedback is logged, docloupe stats counts calls, empty queries, filters and precision@5', async () => {
  const log = path.join(WORK, 'stats.jsonl');
  fs.rmSync(log, { force: true });
  const client = await connect(['--bundle', BUNDLE], { log });
  const found = await call(client, 'search_documents', { query: 'cache', document_types: ['md'] });
  assert.ok(found.structuredContent.results.length > 0);
  await call(client, 'search_docs', { query: 'qxzvw jjkvq', mode: 'fulltext' });
  await call(client, 'search_documents', { query: 'cache', search_mode: 'fulltext' });
  const first = found.structuredContent.results[0].id;
  for (const [rank, relevant] of [[1, true], [2, false], [9, true]]) {
    const r = await call(client, 'result_feedback', { query: 'cache', document: first, rank, relevant });
    assert.deepEqual(r.structuredContent, { success: true, recorded: true });
  }
  const bad = await call(client, 'result_feedback', { query: 'cache', document: first, relevant: true, rank: 0 });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.error.details.field, 'rank');
  const stats = JSON.parse(execFileSync(path.join(ROOT, 'target/release/docloupe'), ['stats', '--json', log], { encoding: 'utf8' }));
  assert.equal(stats.searches, 3);
  assert.deepEqual(stats.byTool, { search_docs: 1, search_documents: 2 });
  assert.deepEqual(stats.byMode, { fulltext: 2, hybrid: 1 });
  assert.deepEqual(stats.topQueries[0], { query: 'cache', count: 2 });
  assert.deepEqual(stats.zeroResultQueries, [{ query: 'qxzvw jjkvq', count: 1 }]);
  assert.deepEqual(stats.filters.byFilter, { document_types: 1 });
  assert.equal(stats.feedback.marks, 3);
  assert.equal(stats.feedback.precisionAt5, 0.5);
  assert.ok(stats.latencyMs.p50 > 0 && stats.latencyMs.p95 >= stats.latencyMs.p50);
  const text = execFileSync(path.join(ROOT, 'target/release/docloupe'), ['stats', log], { encoding: 'utf8' });
  assert.match(text, /^searches: 3\n/);
  assert.match(text, /precision@5 0\.500/);
});

test('a line that is not JSON gets a -32700 parse error, and the session goes on (regression)', async () => {
  const server = spawn(path.join(ROOT, 'target/release/docloupe'), ['mcp', '--models', MODELS, '--bundle', BUNDLE], { stdio: ['pipe', 'pipe', 'ignore'] });
  const replies = [];
  let buffered = '';
  server.stdout.on('data', (d) => {
    buffered += d;
    let i;
    while ((i = buffered.indexOf('\n')) >= 0) {
      replies.push(JSON.parse(buffered.slice(0, i)));
      buffered = buffered.slice(i + 1);
    }
  });
  const next = async (n) => {
    for (let t = 0; t < 200 && replies.length < n; t++) await new Promise((r) => setTimeout(r, 50));
    return replies[n - 1];
  };
  try {
    server.stdin.write('this is not json\n');
    const parse = await next(1);
    assert.deepEqual([parse.jsonrpc, parse.id, parse.error?.code], ['2.0', null, -32700]);
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })}\n`);
    const init = await next(2);
    assert.equal(init.id, 1);
    assert.equal(init.result.serverInfo.name, 'docloupe');
    // A tool call without params is invalid params (-32602), not an unknown method (issue 59).
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call' })}\n`);
    const bare = await next(3);
    assert.deepEqual([bare.id, bare.error?.code], [2, -32602]);
    server.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' })}\n`);
    const list = await next(4);
    assert.equal(list.id, 3);
    assert.ok(list.result.tools.length >= 3);
  } finally {
    server.kill();
  }
});
