// The Worker with the models: worker.js plus the full wasm build (the engine with tract and the
// tokenizers, 2.7 MB brotli), so that MODELS_PATH can load the embedding model and hybrid and
// semantic requests run as natively. The upload is about 5 MB with gzip: within the Paid
// plan's 10 MB, past the Free plan's 3 MB, which is why worker.js (lexical, ~0.2 MB) stays the
// default entry. Deploy it with `wrangler deploy worker-models.js` (or main = "worker-models.js").
import * as glue from '../pkg/full/docloupe.js';
import wasm from '../pkg/full/docloupe_bg.wasm';
import { withFullBuild } from './worker.js';

export default withFullBuild({ glue, wasm });
