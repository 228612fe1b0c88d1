#!/usr/bin/env node
// `npx docloupe --site public`: index a built site's HTML into public/docloupe/ (lib/site.mjs).
// Every other command (`search`, `mcp`, `stats`) is the native `docloupe` binary's, and
// `npx docloupe index-builder …` runs the native builder; both come from the platform package.
import { spawnSync } from 'node:child_process';
import { nativeBinary } from '../lib/native.mjs';
import { runSite, SITE_USAGE } from '../lib/site.mjs';

const args = process.argv.slice(2);

function forward(name, rest) {
  let bin;
  try {
    bin = nativeBinary(name);
  } catch (e) {
    console.error(`docloupe: ${e.message}`);
    process.exit(1);
  }
  const r = spawnSync(bin, rest, { stdio: 'inherit' });
  if (r.error) {
    console.error(`docloupe: cannot run ${bin}: ${r.error.message}`);
    process.exit(1);
  }
  process.exit(r.status ?? 1);
}

if (args.length === 0 || args[0] === '--help' || args[0] === '-h' || args[0] === 'help') {
  console.log(`${SITE_USAGE}
Other commands (the native binaries):
  npx docloupe search --bundle B QUERY    search a bundle in the terminal
  npx docloupe mcp --bundle B             serve bundles to AI agents (MCP over stdio)
  npx docloupe stats LOG                  usage statistics from query logs
  npx docloupe index-builder build DIR --out B   build a bundle from markdown, PDF, DOCX, sheets, HTML`);
  process.exit(0);
}
if (args[0] === '--version' || args[0] === '-V') forward('docloupe', ['--version']);
if (args[0] === 'index-builder') forward('index-builder', args.slice(1));
if (args.includes('--site') || args.some((a) => a.startsWith('--site='))) {
  try {
    process.exit(await runSite(args));
  } catch (e) {
    console.error(`docloupe: ${e.message}`);
    process.exit(e.exitCode ?? 1);
  }
}
forward('docloupe', args);
