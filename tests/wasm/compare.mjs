// How wasm answers are compared with native ones (tests/wasm/parity.mjs, browser.test.mjs).
//
// Everything the engine computes itself (BM25, filters, facets, snippets, highlights,
// suggestions, errors, the order of results) must be identical. The numbers that come out of a
// model (`score` and `rankingSignals.semantic` / `.rerank` of semantic and hybrid results) may
// differ in the last bits: tract runs different SIMD kernels on x86-64 (FMA) and wasm32
// (simd128), which round differently; they must agree to 1e-5 and leave the order unchanged.

/** Drops `timings` (the one non-deterministic part) from a response line, keeping every other byte. */
export const stripTimings = (line) => line.replace(/,"timings":\{[^}]*\}/, '');

const MODEL_NUMBERS = new Set(['score', 'semantic', 'rerank']);

/**
 * Structural equality with model-derived numbers within 1e-5. Returns null, or the path of the
 * first difference; `onDelta` sees every model-number difference.
 */
export function differ(a, b, onDelta = () => {}, at = '$', key = '') {
  if (typeof a === 'number' && typeof b === 'number' && MODEL_NUMBERS.has(key)) {
    const d = Math.abs(a - b);
    onDelta(d);
    return d <= 1e-5 * Math.max(1, Math.abs(b)) ? null : at;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return at;
    for (let i = 0; i < a.length; i++) {
      const d = differ(a[i], b[i], onDelta, `${at}[${i}]`, key);
      if (d) return d;
    }
    return null;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const ka = Object.keys(a), kb = Object.keys(b);
    if (ka.join() !== kb.join()) return `${at} {keys}`;
    for (const k of ka) {
      const d = differ(a[k], b[k], onDelta, `${at}.${k}`, k);
      if (d) return d;
    }
    return null;
  }
  return a === b ? null : at;
}

/**
 * Compares answers pairwise, given as JSON lines or as objects. → {same (identical once
 * `timings` is dropped), close (equal up to model rounding), worst (largest |Δ|),
 * different: [{i, where}]}. With `exact`, rounding differences are differences too.
 */
export function compareResponses(ours, theirs, { exact = false } = {}) {
  const line = (x) => stripTimings(typeof x === 'string' ? x : JSON.stringify(x));
  // An answer given as an object went through JSON.parse, so its numbers are JS numbers
  // (native's `0.0` is `0`): the line it is compared with is spelled the same way.
  const respelled = (x) => (typeof x === 'string' ? JSON.parse(x) : x);
  let same = 0, close = 0, worst = 0;
  const different = [];
  for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
    const a = line(ours[i] ?? null);
    const b = line(typeof ours[i] === 'string' ? theirs[i] ?? null : respelled(theirs[i] ?? null));
    if (a === b) { same++; continue; }
    let where = differ(JSON.parse(a), JSON.parse(b), (d) => (worst = Math.max(worst, d)));
    if (!where && exact) where = 'model number (rounding)';
    if (where) different.push({ i, where, ours: a, theirs: b });
    else close++;
  }
  return { same, close, worst, different };
}
