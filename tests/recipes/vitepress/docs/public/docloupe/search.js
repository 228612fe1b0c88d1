// docloupe's search box for this VitePress site (config.mts `head` loads it). URLs are relative
// to this file, so under a `base` only the script tag in config.mts changes.
import { DocloupeSearch, pagePath } from './docloupe-search.js';

const here = new URL('./', import.meta.url); // <site>/docloupe/
const root = new URL('../', here); // the site's base
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
  // VitePress pages: guide/caching.md → guide/caching.html (cleanUrls: false, the default;
  // with cleanUrls: true drop the '.html'), index.md → the directory.
  href: (r) => {
    const page = r.documentPath.replace(/\.md$/, '.html').replace(/(^|\/)index\.html$/, '$1');
    return new URL(pagePath(page) + (r.anchor ? `#${encodeURIComponent(r.anchor)}` : ''), root).href;
  },
});
