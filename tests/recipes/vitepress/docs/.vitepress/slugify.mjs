// index-builder's heading anchors (GitHub style): whitespace runs collapsed, lowercase, letters
// and digits (any script), '-' and '_' kept, each space becomes '-', everything else dropped.
// markdown-it-anchor (VitePress) adds the -1, -2 suffixes for repeats the same way.
export const slugify = (text) =>
  text.trim().split(/\s+/).join(' ').toLowerCase().replace(/[^\p{Alphabetic}\p{N}\-_ ]/gu, '').replace(/ /g, '-');
