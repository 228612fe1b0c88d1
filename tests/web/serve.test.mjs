// www/serve.mjs (the demo's and the tests' static server) against hostile requests: regression
// tests for issue 24's findings. Run by tests/web/run.sh.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startServer } from '../../www/serve.mjs';

let server, dir;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'serve-test-'));
  fs.writeFileSync(path.join(dir, 'page.html'), '<p>hello</p>');
  fs.mkdirSync(path.join(dir, 'sub'));
  fs.writeFileSync(path.join(dir, 'sub', 'inside.txt'), 'inside');
  fs.symlinkSync('/etc/passwd', path.join(dir, 'passwd.txt'));
  fs.symlinkSync('/etc', path.join(dir, 'etc'));
  fs.symlinkSync(path.join(dir, 'sub', 'inside.txt'), path.join(dir, 'alias.txt'));
  server = await startServer({ '/': dir });
});

after(async () => {
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A raw GET (no URL normalization by a client), with an optional Host header. */
function get(rawPath, host) {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: rawPath, headers: host ? { Host: host } : {} }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('files inside the root are served, a symlink inside it to inside it too', async () => {
  assert.equal((await get('/page.html')).status, 200);
  assert.equal((await get('/alias.txt')).body, 'inside');
});

test('a symlink that leads out of the root serves nothing', async () => {
  for (const p of ['/passwd.txt', '/etc/passwd', '/etc/hostname']) {
    const r = await get(p);
    assert.equal(r.status, 404, p);
    assert.doesNotMatch(r.body, /root:/);
  }
});

test('a malformed percent-encoding is a 400 without the error text', async () => {
  const r = await get('/%E0%A4%A');
  assert.equal(r.status, 400);
  assert.doesNotMatch(r.body, /URIError|at /);
});

test('a request for another host name (DNS rebinding) is refused', async () => {
  const { port } = new URL(server.url);
  assert.equal((await get('/page.html', `evil.example:${port}`)).status, 403);
  assert.equal((await get('/page.html', `localhost:${port}`)).status, 200);
});
