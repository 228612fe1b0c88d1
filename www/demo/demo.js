// The demo page (`make demo`): the JS API on the demo bundle, fulltext at once, hybrid with
// reranking once the models are in. The full search UI is www/ proper (issue 6). Served by
// `make demo` with www/demo at / and www/ at /www/.
import { Docloupe } from '/www/docloupe.js';

const $ = (id) => document.getElementById(id);
const status = $('status');

function showStatus(s) {
  status.classList.toggle('failed', s.phase === 'failed');
  const base = `${s.documents} documents, ${s.chunks} chunks · ${s.build} build`;
  status.textContent =
    s.phase === 'loading-models' ? `${base} · fulltext ready in ${Math.round(s.openMs)} ms, loading models…`
    : s.phase === 'ready' ? `${base} · ready${s.modelsMs ? ` (models in ${Math.round(s.modelsMs)} ms)` : ''}`
    : s.phase === 'failed' ? `${base} · models failed: ${s.error?.message}` : s.phase;
}

function highlighted(snippet, highlights) {
  // Offsets are in Unicode scalar values, not UTF-16 units.
  const chars = Array.from(snippet);
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const { start, end } of highlights) {
    frag.append(chars.slice(at, start).join(''));
    const mark = document.createElement('mark');
    mark.textContent = chars.slice(start, end).join('');
    frag.append(mark);
    at = end;
  }
  frag.append(chars.slice(at).join(''));
  return frag;
}

function render(r) {
  const list = $('results');
  list.replaceChildren();
  if (r.errorCode) {
    $('meta').replaceChildren(Object.assign(document.createElement('span'), { className: 'error', textContent: `${r.errorCode}: ${r.message}` }));
    return;
  }
  $('meta').textContent = `${r.total} results · ${r.appliedStrategy}${r.fallbackApplied ? ` · fallback: ${r.degradedReason}` : ''} · ${r.timings.totalMs.toFixed(1)} ms`;
  for (const x of r.results) {
    const li = document.createElement('li');
    const title = document.createElement('strong');
    title.textContent = x.title;
    const crumbs = Object.assign(document.createElement('div'), { className: 'crumbs', textContent: `${x.documentPath}#${x.anchor} · ${x.sectionPath.join(' › ')}` });
    const snippet = Object.assign(document.createElement('div'), { className: 'snippet' });
    snippet.append(highlighted(x.snippet, x.highlights));
    const s = x.rankingSignals;
    const signals = Object.assign(document.createElement('div'), {
      className: 'signals',
      textContent: `score ${x.score.toFixed(3)} · lexical ${s.lexical.toFixed(3)} · semantic ${s.semantic.toFixed(3)}${s.rerank === undefined ? '' : ` · rerank ${s.rerank.toFixed(3)}`}`,
    });
    li.append(title, crumbs, snippet, signals);
    list.append(li);
  }
}

const engine = await Docloupe.open({
  bundle: '/data/docs.bundle',
  models: {
    embedding: { onnx: '/models/model.int8.onnx', tokenizer: '/models/tokenizer.json' },
    reranker: { manifest: '/reranker/manifest.json', onnx: '/reranker/model.int8.onnx', tokenizer: '/reranker/tokenizer.json' },
  },
  onStatus: showStatus,
}).catch((e) => {
  status.classList.add('failed');
  status.textContent = `${e.errorCode}: ${e.message}`;
  throw e;
});
showStatus(engine.status());

let seq = 0;
async function run() {
  const query = $('q').value;
  if (!query.trim()) return $('results').replaceChildren();
  const mine = ++seq;
  const r = await engine.search({ query, mode: $('mode').value, limit: 10 });
  if (mine === seq) render(r); // a slower earlier answer never overwrites a later one
}
$('search').addEventListener('submit', (e) => { e.preventDefault(); run(); });
$('q').addEventListener('input', run);
$('mode').addEventListener('change', run);
engine.onStatus(() => $('q').value && run());
const initial = new URLSearchParams(location.search).get('q');
if (initial) { $('q').value = initial; run(); }
