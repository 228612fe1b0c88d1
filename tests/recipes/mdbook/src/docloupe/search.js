// docloupe's search box for this mdBook book: configuration, and the element in the menu bar.
import { DocloupeSearch } from './docloupe-search.js';

const here = new URL('./', import.meta.url); // <book>/docloupe/
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
  // mdBook's pages are the component's default: guide/caching.md → guide/caching.html, from
  // the book's root (index.md → index.html; a README.md would be index.html too).
  root: new URL('../', here).href,
});

// mdBook's menu bar is no template partial: put the element there from here.
const bar = document.querySelector('#mdbook-menu-bar .right-buttons');
if (bar && !bar.querySelector('docloupe-search')) bar.prepend(document.createElement('docloupe-search'));
