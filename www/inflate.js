// The lexical wasm build's inflater, for whole bundles: host.js imports this module only when
// it opens one, so first paint over a split bundle carries neither it nor pkg/inflate.
import { loadBytes } from './host.js';

const PKG = import.meta.url ? new URL('./pkg/', import.meta.url) : null;

/**
 * The lexical build inflates a whole bundle's deflated sections through
 * `globalThis.docloupeInflate(deflated, out)` (a split bundle's files are never deflated): the
 * engine's own inflater as a module of its own (pkg/inflate/inflate.wasm, 8 KB brotli), so
 * that first paint over a split bundle does not carry it. `source` as for the builds (a
 * compiled `WebAssembly.Module` in a Worker); installed once per realm. Exported for code
 * that drives pkg/lexical's `Engine` itself over a whole bundle.
 */
export async function installInflater(source, fetchImpl = fetch) {
  if (globalThis.docloupeInflate) return;
  const module = source instanceof WebAssembly.Module
    ? source
    : await WebAssembly.compile(await loadBytes(source ?? new URL('inflate/inflate.wasm', PKG), 'wasm.inflate', fetchImpl));
  const x = (await WebAssembly.instantiate(module)).exports;
  globalThis.docloupeInflate ??= (deflated, out) => {
    // Both buffers in the inflater's memory (which may grow: views are made after alloc).
    const [src, dst] = [x.alloc(deflated.length), x.alloc(out.length)];
    try {
      if ((deflated.length && !src) || (out.length && !dst)) return false;
      new Uint8Array(x.memory.buffer, src, deflated.length).set(deflated);
      if (x.inflate(src, deflated.length, dst, out.length) !== 1) return false;
      out.set(new Uint8Array(x.memory.buffer, dst, out.length));
      return true;
    } catch {
      return false; // a trap (out of memory): the engine reports the block it could not read
    } finally {
      x.free(src, deflated.length);
      x.free(dst, out.length);
    }
  };
}
