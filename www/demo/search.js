// The demo site's search configuration (`make demo`): the split demo bundle, the models,
// and the component. A file, not an inline script, so the page works under a strict CSP.
import { DocloupeSearch } from '/www/docloupe-search.js';

DocloupeSearch.configure({
  bundle: '/data/docs/',
  models: {
    embedding: { onnx: '/models/model.int8.onnx', tokenizer: '/models/tokenizer.json' },
    reranker: {
      manifest: '/reranker/manifest.json',
      onnx: '/reranker/model.int8.onnx',
      tokenizer: '/reranker/tokenizer.json',
    },
  },
  root: '/',
  serviceWorker: '/docloupe-sw.js',
});
