// <docloupe-search>: the search box for a documentation site, as one custom element.
//
//   <script type="module" src="/www/docloupe-search.js"></script>
//   <docloupe-search bundle="/search/docs/" models="/search/models.json"></docloupe-search>
//
// or, from a script (CSP-friendly, no inline code needed in the page):
//   import { DocloupeSearch } from '/www/docloupe-search.js';
//   DocloupeSearch.configure({ bundle, models, href: (r) => `/docs/${r.documentPath}` });
//
// What it does: a button that opens a search dialog (Ctrl/Cmd-K or "/"); results as you type,
// the fulltext answer first and the hybrid (reranked) answer replacing it when it comes, the
// selection kept; results grouped by document with the breadcrumb and the snippet, terms
// highlighted from offsets (text is only ever inserted as text); arrows, Enter, Esc; chips to
// filter by document type and a date range, with facet counts; "why" shows the ranking
// signals; recent searches (localStorage); the contract's suggestions ("did you mean");
// a status line that says what the engine can do yet (e.g. models still loading); "More
// results" at the end of the list fetches the next page (the contract's `offset`) and adds it.
// ARIA: combobox (the input) + listbox (the results), options grouped per document.

const DEBOUNCE_MS = 120;
const RECENT_KEY = 'docloupe-search:recent';
const RECENT_MAX = 8;
/** Results per page (the `page-size` attribute or `pageSize` option changes it, 1..50). */
const LIMIT = 20;

/** Engines per configuration, shared by every element on the page. */
const engines = new Map();
let defaults = {};

function engineFor(options) {
  const key = JSON.stringify([String(options.bundle), options.models ?? null, options.kernels ?? 'fast']);
  if (!engines.has(key)) {
    engines.set(key, (async () => {
      let models = options.models;
      if (typeof models === 'string') models = await modelsFrom(models);
      // The API module comes with the engine, not with the page.
      const { Docloupe } = await import('./docloupe.js');
      return Docloupe.open({ bundle: options.bundle, models, kernels: options.kernels, onStatus: options.onStatus });
    })());
  }
  return engines.get(key);
}

/** A models.json: `{embedding: {onnx, tokenizer}, reranker?: {...}}`, URLs relative to it. */
async function modelsFrom(url) {
  const base = new URL(url, document.baseURI);
  const res = await fetch(base);
  if (!res.ok) throw { errorCode: 'DOCS_COLLECTION_UNAVAILABLE', message: `cannot fetch ${url}: HTTP ${res.status}`, details: {} };
  const spec = await res.json();
  const resolve = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, new URL(v, base).href]));
  return { embedding: resolve(spec.embedding), ...(spec.reranker ? { reranker: resolve(spec.reranker) } : {}) };
}

/**
 * The URL a result opens unless the `href` option says otherwise, below `root` (a URL). Where
 * `index-builder site` puts a result: `guide/install.md` + anchor →
 * `guide/install.html#anchor`, `notes/changes.txt` → `notes/changes.txt.html`, from the root.
 * An indexed HTML page is where the site serves it: `a/index.html` + anchor → `a/#anchor`.
 * PDFs, Word files and spreadsheets are served as they are: `paper.pdf#page=3` opens a PDF at
 * the result's page.
 */
export function resultHref(result, root) {
  const path = result.documentPath;
  if (/\.(md|markdown)$/i.test(path)) return new URL(pagePath(path.replace(/\.(md|markdown)$/i, '.html')) + fragment(result.anchor), root).href;
  if (/\.txt$/i.test(path)) return new URL(pagePath(`${path}.html`) + fragment(result.anchor), root).href;
  // An indexed HTML page is the URL it is served at: `a/index.html` is `a/`, `a.html` itself.
  if (/\.html?$/i.test(path)) return new URL(pagePath(path.replace(/(^|\/)index\.html?$/i, '$1')) + fragment(result.anchor), root).href;
  return new URL(pagePath(path) + (result.pageStart ? `#page=${result.pageStart}` : ''), root).href;
}

/**
 * A document path (or a page path made from one) as a URL relative to the site root: `./`
 * and each segment percent-encoded, so it can only name a page below the root. Resolved with
 * `new URL(pagePath(p), root)`, `javascript:x.md` is the page of that name, never script, and
 * `//elsewhere/x` stays on the site. Build `href` functions from it.
 */
export function pagePath(path) {
  return `./${String(path).split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * Where a result may take the reader: an http(s) URL on this site's origin, or on one of
 * `allowedOrigins` (the `allowedOrigins` option, for docs served from another host). Anything
 * else (`javascript:`, `data:`, another site) gives null, whoever built the href.
 */
export function navigableHref(href, allowedOrigins = []) {
  let url;
  try {
    url = new URL(href, document.baseURI);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.origin !== location.origin && !allowedOrigins.includes(url.origin)) return null;
  return url.href;
}

function fragment(anchor) {
  return anchor ? `#${encodeURIComponent(anchor)}` : '';
}

/** Offsets are Unicode scalar values: slice by code points, insert as text. */
function highlighted(text, highlights) {
  const chars = Array.from(text);
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const { start, end } of highlights ?? []) {
    if (start < at || end > chars.length || end <= start) continue;
    frag.append(chars.slice(at, start).join(''));
    const mark = document.createElement('mark');
    mark.textContent = chars.slice(start, end).join('');
    frag.append(mark);
    at = end;
  }
  frag.append(chars.slice(at).join(''));
  return frag;
}

const el = (tag, props = {}, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('aria-') || k === 'role' || k.startsWith('data-')) e.setAttribute(k, v);
    else e[k] = v;
  }
  e.append(...children);
  return e;
};

function loadRecent() {
  try {
    const v = JSON.parse(localStorage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(v) ? v.filter((q) => typeof q === 'string').slice(0, RECENT_MAX) : [];
  } catch {
    return [];
  }
}

function saveRecent(query) {
  try {
    const list = [query, ...loadRecent().filter((q) => q !== query)].slice(0, RECENT_MAX);
    localStorage.setItem(RECENT_KEY, JSON.stringify(list));
  } catch {
    // Storage may be disabled; recent searches are a convenience.
  }
}

let ids = 0;

export class DocloupeSearch extends HTMLElement {
  /**
   * Options for every element without its own attributes: {bundle, models, kernels, href, root,
   * allowedOrigins, serviceWorker} (`serviceWorker`: the URL of the worker precache.mjs wrote,
   * for offline use; `allowedOrigins`: other origins results may open, e.g.
   * `['https://docs.example.com']`; by default only the page's own).
   */
  static configure(options) {
    defaults = { ...defaults, ...options };
    if (options.serviceWorker) registerOffline(options.serviceWorker);
    for (const e of document.querySelectorAll('docloupe-search')) e.#wanted && e.#start();
  }

  #id = `dls${++ids}`;
  #engine = null;
  #wanted = false;
  #status = null;
  #seq = 0;
  #timer = 0;
  #results = []; // flat, in display order: what the arrows move through
  #active = -1;
  #filters = { types: new Set(), from: '', to: '' };
  #last = null; // the response on screen (all its pages so far)
  #lastRequest = null; // the request that answered it (first page)
  #facets = null; // the filter counts on screen
  #why = false;
  connected = false;

  connectedCallback() {
    if (this.connected) return;
    this.connected = true;
    this.#render();
  }

  /**
   * Loads the engine: on the first sign that the reader wants to search (the pointer on the
   * button, focus on it, the shortcut), not with the page, so a visit without a search costs
   * no wasm, bundle or models.
   */
  #want() {
    if (this.#wanted) return;
    this.#wanted = true;
    this.#start();
    prefetchOffline().catch((e) => console.warn(`docloupe: search is not cached for offline use: ${e.message}`));
  }

  /**
   * Resolves with true once the offline worker has cached everything search needs (false
   * without one); starts that caching if no search has yet.
   */
  static offlineReady() {
    return prefetchOffline();
  }

  get #options() {
    const attr = (n) => this.getAttribute(n) ?? undefined;
    return {
      ...defaults,
      ...(attr('bundle') ? { bundle: attr('bundle') } : {}),
      ...(attr('models') ? { models: attr('models') } : {}),
      ...(attr('kernels') ? { kernels: attr('kernels') } : {}),
      ...(attr('root') ? { root: attr('root') } : {}),
      ...(attr('page-size') ? { pageSize: attr('page-size') } : {}),
    };
  }

  get #pageSize() {
    const n = Number(this.#options.pageSize ?? LIMIT);
    return Number.isInteger(n) && n >= 1 && n <= 50 ? n : LIMIT;
  }

  #start() {
    const o = this.#options;
    if (!o.bundle || this.#engine) return;
    this.#showStatus('Loading the search…', 'info');
    this.#engine = engineFor({ ...o, onStatus: (s) => this.#onStatus(s) }).then(
      (engine) => {
        this.#onStatus(engine.status());
        engine.ready.then((s) => this.#onStatus(s));
        return engine;
      },
      (error) => {
        this.#showStatus(`Search is unavailable: ${error?.message ?? error}`, 'error');
        return null;
      },
    );
  }

  #onStatus(s) {
    this.#status = s;
    this.#showState();
    // The better answer for what is on screen, now that it can be had.
    if (s.phase === 'ready' && this.$input?.value.trim() && this.$dialog.open) this.#search(false);
  }

  /** The status line for what the engine can do now: empty once everything is in. */
  #showState() {
    const s = this.#status;
    if (s?.phase === 'loading-models') this.#showStatus('Keyword results; smarter ranking is still loading…', 'info');
    else if (s?.phase === 'failed') this.#showStatus(`Keyword results only: the models could not load (${s.error?.message ?? 'unknown error'})`, 'warn');
    else this.#showStatus('', 'info');
  }

  #showStatus(text, kind) {
    if (!this.$status) return;
    this.$status.textContent = text;
    this.$status.dataset.kind = kind;
  }

  get isOpen() {
    return Boolean(this.$dialog?.open);
  }

  open() {
    // One dialog at a time, whichever box asked.
    for (const other of document.querySelectorAll('docloupe-search')) if (other !== this && other.isOpen) other.close();
    this.#want();
    if (!this.$dialog.open) this.$dialog.showModal();
    this.$input.focus();
    this.$input.select();
    if (!this.$input.value.trim()) this.#showRecent();
  }

  close() {
    if (this.$dialog.open) this.$dialog.close();
  }

  #render() {
    const id = this.#id;
    this.replaceChildren();
    this.$button = el('button', { type: 'button', className: 'dls-button', 'aria-haspopup': 'dialog' },
      el('span', { text: 'Search docs' }), el('kbd', { text: /Mac|iPhone|iPad/.test(navigator.platform) ? '⌘K' : 'Ctrl K', 'aria-hidden': 'true' }));
    this.$button.addEventListener('click', () => this.open());
    for (const hint of ['pointerenter', 'focus', 'touchstart']) this.$button.addEventListener(hint, () => this.#want(), { passive: true });
    this.$input = el('input', {
      type: 'search', id: `${id}-input`, className: 'dls-input', autocomplete: 'off', spellcheck: false,
      placeholder: this.getAttribute('placeholder') ?? 'Search the documentation',
      role: 'combobox', 'aria-expanded': 'false', 'aria-controls': `${id}-list`, 'aria-autocomplete': 'list',
      'aria-label': 'Search the documentation',
    });
    this.$input.addEventListener('input', () => this.#onInput());
    this.$input.addEventListener('keydown', (e) => this.#onKey(e));
    this.$status = el('p', { className: 'dls-status', role: 'status', 'aria-live': 'polite' });
    this.$chips = el('div', { className: 'dls-filters', role: 'group', 'aria-label': 'Filters' });
    this.$why = el('label', { className: 'dls-why' }, el('input', { type: 'checkbox' }), ' Why these results');
    this.$why.firstChild.addEventListener('change', (e) => {
      this.#why = e.target.checked;
      if (this.#last) this.#paint(this.#last, true);
    });
    this.$list = el('div', { id: `${id}-list`, className: 'dls-list', role: 'listbox', 'aria-label': 'Results' });
    this.$list.addEventListener('mousedown', (e) => e.preventDefault()); // keep focus in the input
    this.$list.addEventListener('click', (e) => {
      const opt = e.target.closest('[role="option"]');
      if (opt) this.#go(Number(opt.dataset.index));
      const pick = e.target.closest('[data-query]');
      if (pick) this.#setQuery(pick.dataset.query);
      if (e.target.closest('[data-more]')) this.#more();
    });
    const close = el('button', { type: 'button', className: 'dls-close', text: 'Esc', 'aria-label': 'Esc: close the search' });
    close.addEventListener('click', () => this.close());
    this.$dialog = el('dialog', { className: 'dls-dialog', 'aria-label': 'Search the documentation' },
      el('div', { className: 'dls-bar' }, this.$input, close), this.$chips, this.$status, this.$list,
      el('div', { className: 'dls-foot' }, this.$why, el('span', { text: '↑↓ to move · Enter to open · Esc to close', className: 'dls-keys' })));
    this.$dialog.addEventListener('click', (e) => e.target === this.$dialog && this.close());
    this.append(this.$button, this.$dialog);
  }

  #onInput() {
    clearTimeout(this.#timer);
    if (!this.$input.value.trim()) {
      this.#seq++;
      this.#last = null;
      this.#showRecent();
      return;
    }
    this.#timer = setTimeout(() => this.#search(true), DEBOUNCE_MS);
  }

  #setQuery(q) {
    this.$input.value = q;
    this.$input.focus();
    this.#search(true);
  }

  #request(mode) {
    const filters = {};
    if (this.#filters.types.size) filters.documentTypes = [...this.#filters.types];
    if (this.#filters.from) filters.dateFrom = this.#filters.from;
    if (this.#filters.to) filters.dateTo = this.#filters.to;
    const req = { query: this.$input.value.trim(), limit: this.#pageSize, mode, includeContext: false };
    if (Object.keys(filters).length) req.filters = filters;
    return req;
  }

  /** Fulltext first (fast), then hybrid with reranking replacing it; stale answers dropped. */
  async #search(fulltextFirst) {
    const seq = ++this.#seq;
    const engine = await this.#engine;
    if (!engine || seq !== this.#seq) return;
    const semantic = this.#status?.semanticReady && this.#status?.phase === 'ready';
    if (fulltextFirst || !semantic) {
      const req = this.#request('fulltext');
      const [r, facets] = await this.#answer(engine, req);
      if (seq !== this.#seq) return;
      this.#lastRequest = req;
      this.#paint(r, false, facets);
    }
    if (semantic) {
      // The second stage reads 20 candidates (whatever the page size, so that pages never
      // change the ranking) while the fulltext answer is already on screen.
      const req = { ...this.#request('hybrid'), rerank: true, candidateLimit: LIMIT };
      const [r, facets] = await this.#answer(engine, req);
      if (seq !== this.#seq) return;
      // A failed hybrid keeps the fulltext answer on screen; its error goes to the status line.
      if (r.errorCode && this.#last && !this.#last.errorCode) this.#showStatus(`Showing keyword results: ${r.message}`, 'warn');
      else {
        this.#lastRequest = req;
        this.#paint(r, true, facets);
      }
    }
  }

  /**
   * "More results": the next page of the request on screen (`offset` = what is shown), added
   * below it, the selection kept. Pages of one request never repeat or skip a result; a new
   * query or a better answer arriving meanwhile drops this one.
   */
  async #more() {
    const seq = this.#seq;
    const shown = this.#last;
    const engine = await this.#engine;
    if (!engine || !shown || shown.errorCode || !this.#lastRequest) return;
    const r = await engine.search({ ...this.#lastRequest, offset: shown.results.length });
    if (seq !== this.#seq || shown !== this.#last) return;
    if (r.errorCode) {
      this.#showStatus(`No more results: ${r.message}`, 'warn');
      return;
    }
    const seen = new Set(shown.results.map((x) => x.chunkId));
    const results = [...shown.results, ...r.results.filter((x) => !seen.has(x.chunkId))];
    this.#paint({ ...shown, results }, true, this.#facets);
    // The first new result, for the keyboard (and the reader's eye).
    const first = this.#results.findIndex((x) => x.chunkId === r.results[0]?.chunkId);
    if (first >= 0) this.#select(first);
  }

  /**
   * The response and the facet counts for its filters. The engine counts after every filter,
   * so with filters chosen the counts come from the same request without them (and without
   * reranking): every type and month stays offered, with the query's own counts.
   */
  async #answer(engine, req) {
    const r = await engine.search(req);
    if (r.errorCode || !req.filters) return [r, r.facets];
    const all = await engine.search({ ...req, limit: 1, rerank: false, filters: undefined });
    return [r, all.errorCode ? r.facets : all.facets];
  }

  #showRecent() {
    const recent = loadRecent();
    this.#results = [];
    this.#active = -1;
    this.$input.setAttribute('aria-expanded', 'false');
    this.$input.removeAttribute('aria-activedescendant');
    this.$chips.replaceChildren();
    this.$list.replaceChildren(...(recent.length
      ? [el('p', { className: 'dls-hint', text: 'Recent searches' }),
        ...recent.map((q) => el('button', { type: 'button', className: 'dls-recent', 'data-query': q, text: q }))]
      : [el('p', { className: 'dls-hint', text: 'Type to search. Try a question or a few words.' })]));
  }

  /**
   * Draws a response; `keepSelection` keeps the selected result (by chunkId) if still there;
   * `facets` are the counts for the filters (the query's, before its filters).
   */
  #paint(r, keepSelection, facets) {
    const selected = keepSelection ? this.#results[this.#active]?.chunkId : undefined;
    this.#last = r;
    // Which query the list answers (as typing goes, each keystroke's answer replaces the last
    // one's; a script or a test can tell the final answer by this).
    this.$list.dataset.answered = r.query ?? '';
    this.$list.dataset.strategy = r.appliedStrategy ?? '';
    if (r.errorCode) {
      this.#results = [];
      this.#active = -1;
      const message = r.errorCode === 'SEARCH_QUERY_EMPTY' ? 'Type something to search.' : `${r.message} (${r.errorCode})`;
      this.$list.replaceChildren(el('p', { className: 'dls-error', role: 'alert', text: message }));
      this.$input.setAttribute('aria-expanded', 'false');
      return;
    }
    this.#facets = facets ?? r.facets;
    this.#paintFilters(this.#facets);
    const groups = new Map();
    for (const res of r.results) {
      if (!groups.has(res.documentPath)) groups.set(res.documentPath, []);
      groups.get(res.documentPath).push(res);
    }
    this.#results = [...groups.values()].flat();
    const nodes = [];
    let index = 0;
    for (const [path, results] of groups) {
      const gid = `${this.#id}-g${nodes.length}`;
      const group = el('div', { role: 'group', className: 'dls-group', 'aria-labelledby': gid },
        el('div', { id: gid, className: 'dls-doc', role: 'presentation' }, el('span', { text: results[0].title }), el('span', { className: 'dls-path', text: path })));
      for (const res of results) group.append(this.#option(res, index++));
      nodes.push(group);
    }
    // The contract's suggestions ("did you mean"): after "no results", or above the results
    // a misspelt word still found through its close spellings.
    const hint = r.suggestions?.length
      ? [el('p', { className: 'dls-hint', text: 'Did you mean:' }),
        ...r.suggestions.map((s) => el('button', { type: 'button', className: 'dls-suggestion', 'data-query': s, text: s }))]
      : [];
    if (!r.results.length) nodes.push(el('p', { className: 'dls-empty', text: `No results for “${r.query}”.` }), ...hint);
    else nodes.unshift(...hint);
    if (r.results.length < r.total) {
      nodes.push(el('button', { type: 'button', className: 'dls-more', 'data-more': '', text: `More results (${r.results.length} of ${r.total} shown)` }));
    }
    // A new answer replaces a failed one's message; what the engine can do still stands.
    if (this.$status.dataset.kind === 'warn' && this.#status?.phase !== 'failed') this.#showState();
    this.$list.replaceChildren(...nodes);
    this.$input.setAttribute('aria-expanded', String(this.#results.length > 0));
    const keep = selected ? this.#results.findIndex((x) => x.chunkId === selected) : -1;
    this.#select(keep >= 0 ? keep : this.#results.length ? 0 : -1, false);
  }

  #option(res, index) {
    const pages = res.pageStart ? (res.pageEnd > res.pageStart ? ` · pp. ${res.pageStart}–${res.pageEnd}` : ` · p. ${res.pageStart}`) : '';
    const crumb = (res.sectionPath.length ? res.sectionPath.join(' › ') : res.title) + pages;
    const opt = el('div', { role: 'option', id: `${this.#id}-o${index}`, className: 'dls-option', 'data-index': String(index), 'aria-selected': 'false' },
      el('div', { className: 'dls-crumb', text: crumb }),
      el('div', { className: 'dls-snippet' }, highlighted(res.snippet, res.highlights)));
    if (this.#why) {
      // Only the signals the answer's strategy computed: fulltext has no meaning score, and
      // a fallback answer (models still loading) says so.
      const s = res.rankingSignals;
      const strategy = this.#last?.appliedStrategy ?? '';
      const lexicalOnly = strategy === 'bm25_docs_only' || this.#last?.degradedReason === 'models_loading';
      const parts = [`score ${res.score.toFixed(3)}`, `keywords ${s.lexical.toFixed(2)}`];
      if (!lexicalOnly) parts.push(`meaning ${s.semantic.toFixed(2)}`);
      if (s.rerank !== undefined) parts.push(`reranker ${s.rerank.toFixed(2)}`);
      if (lexicalOnly) parts.push('keywords only');
      opt.append(el('div', { className: 'dls-signals', text: parts.join(' · ') }));
    }
    return opt;
  }

  #paintFilters({ documentTypes, dates }) {
    const chips = [];
    const types = Object.entries(documentTypes ?? {});
    for (const t of this.#filters.types) if (!types.some(([k]) => k === t)) types.push([t, 0]);
    for (const [type, count] of types.sort()) {
      const on = this.#filters.types.has(type);
      const chip = el('button', { type: 'button', className: 'dls-chip', 'aria-pressed': String(on), text: `${type} ${count}` });
      chip.addEventListener('click', () => {
        if (on) this.#filters.types.delete(type);
        else this.#filters.types.add(type);
        this.#search(true);
      });
      chips.push(chip);
    }
    // The date range: two lists of the months the query's documents are dated in, with counts.
    const months = new Set(Object.keys(dates ?? {}));
    for (const key of ['from', 'to']) if (this.#filters[key]) months.add(this.#filters[key].slice(0, 7));
    if (months.size) {
      const sorted = [...months].sort();
      const range = (label, key) => {
        const select = el('select', { className: 'dls-month' },
          el('option', { value: '', text: key === 'from' ? 'any time' : 'now' }),
          ...sorted.map((m) => el('option', { value: m, text: `${monthName(m)} (${dates?.[m] ?? 0})` })));
        select.value = this.#filters[key].slice(0, 7);
        select.addEventListener('change', () => {
          this.#filters[key] = select.value ? (key === 'from' ? `${select.value}-01` : endOfMonth(select.value)) : '';
          this.#search(true);
        });
        return el('label', { className: 'dls-range' }, label, select);
      };
      chips.push(el('span', { className: 'dls-dates', role: 'group', 'aria-label': 'Updated' },
        range('Updated from ', 'from'), range(' to ', 'to')));
    }
    this.$chips.replaceChildren(...chips);
  }

  #select(i, scroll = true) {
    const prev = this.$list.querySelector('[aria-selected="true"]');
    prev?.setAttribute('aria-selected', 'false');
    this.#active = i;
    if (i < 0) {
      this.$input.removeAttribute('aria-activedescendant');
      return;
    }
    const opt = this.$list.querySelector(`[data-index="${i}"]`);
    opt.setAttribute('aria-selected', 'true');
    this.$input.setAttribute('aria-activedescendant', opt.id);
    if (scroll) opt.scrollIntoView({ block: 'nearest' });
  }

  #onKey(e) {
    const n = this.#results.length;
    if (e.key === 'ArrowDown' && n) {
      e.preventDefault();
      this.#select((this.#active + 1) % n);
    } else if (e.key === 'ArrowUp' && n) {
      e.preventDefault();
      this.#select((this.#active - 1 + n) % n);
    } else if (e.key === 'Enter' && this.#active >= 0) {
      e.preventDefault();
      this.#go(this.#active);
    } else if (e.key === 'Escape' && this.$input.value) {
      // The first Esc clears; the dialog closes on the next (the browser's own Esc handling).
      e.preventDefault();
      this.$input.value = '';
      this.#onInput();
    }
  }

  #go(i) {
    const res = this.#results[i];
    if (!res) return;
    saveRecent(this.$input.value.trim());
    const o = this.#options;
    const root = new URL(o.root ?? '/', document.baseURI);
    const wanted = o.href ? o.href(res) : resultHref(res, root);
    const href = navigableHref(wanted, o.allowedOrigins);
    if (!href) {
      console.warn(`docloupe: not opening ${JSON.stringify(String(wanted))}: only http(s) pages of this site`);
      this.#showStatus('This result cannot be opened: its link leaves the site.', 'error');
      return;
    }
    this.close();
    this.dispatchEvent(new CustomEvent('docloupe-navigate', { detail: { result: res, href }, bubbles: true }));
    window.location.assign(href);
  }
}

let offlineWorker = null; // the registration, once asked for
let offlinePrefetch = null;

/**
 * Registers the site's offline worker (`precache.mjs` writes it). It caches the pages when it
 * installs, and the engine, the bundle and the models once a reader starts searching
 * (`prefetchOffline`): from then on search works with the network gone.
 */
function registerOffline(url) {
  if (!('serviceWorker' in navigator) || offlineWorker) return;
  offlineWorker = navigator.serviceWorker.register(url);
  offlineWorker.catch((e) => console.warn(`docloupe: no offline cache: ${e.message}`));
}

/** Asks the offline worker to cache what search needs; resolves when it has (false: no worker). */
function prefetchOffline() {
  if (!offlineWorker) return Promise.resolve(false);
  offlinePrefetch ??= (async () => {
    await offlineWorker;
    const { active } = await navigator.serviceWorker.ready;
    const channel = new MessageChannel();
    const reply = new Promise((resolve) => (channel.port1.onmessage = (e) => resolve(e.data)));
    active.postMessage({ type: 'docloupe-prefetch' }, [channel.port2]);
    const r = await reply;
    if (!r.ok) throw new Error(r.message);
    return true;
  })().catch((e) => {
    offlinePrefetch = null; // the next search asks again
    throw e;
  });
  return offlinePrefetch;
}

/**
 * Ctrl/Cmd-K and "/" open the search, once per page however many boxes it has (a docs theme may
 * render one in its header and another in a hidden mobile menu): the open one, else the first
 * one that is visible, else the first.
 */
function onShortcut(e) {
  const boxes = [...document.querySelectorAll('docloupe-search')].filter((b) => b.connected);
  if (!boxes.length) return;
  const typing = e.target instanceof HTMLElement && (e.target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(e.target.tagName));
  const open = boxes.find((b) => b.isOpen);
  const command = (e.key === 'k' || e.key === 'K') && (e.ctrlKey || e.metaKey);
  if (!command && !(e.key === '/' && !typing && !open)) return;
  e.preventDefault();
  const visible = (b) => (b.checkVisibility ? b.checkVisibility() : b.getClientRects().length > 0);
  (open ?? boxes.find(visible) ?? boxes[0]).open();
}

/** `2024-05` → "May 2024" in the reader's language. */
function monthName(month) {
  const [y, m] = month.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, 1)).toLocaleDateString(undefined, { month: 'short', year: 'numeric', timeZone: 'UTC' });
}

function endOfMonth(month) {
  const [y, m] = month.split('-').map(Number);
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return `${month}-${String(last).padStart(2, '0')}`;
}

// Its stylesheet, once, before the first element draws (a file, so CSP needs no 'unsafe-inline').
const STYLE_URL = new URL('./docloupe-search.css', import.meta.url).href;
if (!document.querySelector(`link[href="${STYLE_URL}"]`)) {
  document.head.append(Object.assign(document.createElement('link'), { rel: 'stylesheet', href: STYLE_URL }));
}

if (!customElements.get('docloupe-search')) {
  customElements.define('docloupe-search', DocloupeSearch);
  document.addEventListener('keydown', onShortcut);
}
