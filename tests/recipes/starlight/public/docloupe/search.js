// docloupe's search box for this Starlight site (astro.config.mjs `head` loads it). URLs are
// relative to this file, so under a `base` only that head entry changes.
import { DocloupeSearch, pagePath } from './docloupe-search.js';

const here = new URL('./', import.meta.url); // <base>/docloupe/
const root = new URL('../', here);
// Starlight routes: src/content/docs/guide/caching.md → guide/caching/, index.md → the root.
// Astro slugs each path segment with github-slugger (lowercase, punctuation dropped,
// ' ' → '-'); a page with `slug` in its front matter needs its own mapping.
const segment = (s) => s.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\-_ ]/gu, '').replace(/ /g, '-');
const page = (path) => path.replace(/\.mdx?$/, '').split('/').map(segment).join('/').replace(/(^|\/)index$/, '$1');

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
  // The top section (the page's `# Title`) links to the page itself.
  href: (r) => {
    const p = page(r.documentPath);
    const hash = r.anchor && r.sectionPath.length > 1 ? `#${encodeURIComponent(r.anchor)}` : '';
    return new URL(p ? pagePath(`${p}/`) + hash : `./${hash}`, root).href;
  },
});
