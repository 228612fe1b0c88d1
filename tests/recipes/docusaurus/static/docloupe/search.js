// docloupe's search box for this Docusaurus site (docusaurus.config.js `scripts` loads it).
// URLs are relative to this file, so under another baseUrl only that script entry changes.
import { DocloupeSearch, pagePath } from './docloupe-search.js';

const here = new URL('./', import.meta.url); // <baseUrl>docloupe/
const docs = new URL('../docs/', here); // the docs plugin's routeBasePath
// Docusaurus routes: docs/guide/caching.md → docs/guide/caching, docs/index.md → docs/
// (pages with `slug`/`id` front matter or number prefixes need their own mapping).
const page = (path) => path.replace(/\.mdx?$/, '').replace(/(^|\/)(index|README)$/i, '$1');

DocloupeSearch.configure({
  bundle: new URL('docs/', here).href,
  models: {
    embedding: { onnx: new URL('models/model.int8.onnx', here).href, tokenizer: new URL('models/tokenizer.json', here).href },
    reranker: {
      manifest: new URL('reranker/manifest.json', here).href,
      onnx: new URL('reranker/model.int8.onnx', here).href,
      tokenizer: new URL('reranker/tokenizer.json', here).href,
    },
  },
  // A page's first `# Title` becomes its title, which has no id: that section links to the page.
  href: (r) => {
    const hash = r.anchor && r.sectionPath.length > 1 ? `#${encodeURIComponent(r.anchor)}` : '';
    return new URL(pagePath(page(r.documentPath)) + hash, docs).href;
  },
});
