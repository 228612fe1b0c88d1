// Optional: heading ids exactly as index-builder makes them (Docusaurus's github-slugger keeps
// runs of spaces as runs of '-'; index-builder collapses them). Runs before Docusaurus's own
// heading plugin, which keeps an id that is already set. `{#custom}` ids are honoured.
const text = (node) => node.type === 'html' ? '' : (node.value ?? '') + (node.children ?? []).map(text).join('');

export default function remarkDocloupeIds() {
  return (tree) => {
    const seen = new Map();
    const reserve = (base) => {
      let candidate = base;
      while (seen.has(candidate)) {
        const n = seen.get(candidate) + 1;
        seen.set(candidate, n);
        candidate = `${base}-${n}`;
        if (!seen.has(candidate)) break;
      }
      if (!seen.has(candidate)) seen.set(candidate, 0);
      return candidate;
    };
    const visit = (node) => {
      if (node.type === 'heading') {
        let id;
        const last = node.children.at(-1);
        const custom = last?.type === 'text' && /\s*\{#([^}\s]+)\}\s*$/.exec(last.value);
        if (custom) {
          last.value = last.value.slice(0, custom.index);
          id = reserve(custom[1]);
        } else {
          const t = text(node).trim().split(/\s+/).join(' ').toLowerCase();
          id = reserve(t.replace(/[^\p{Alphabetic}\p{N}\-_ ]/gu, '').replace(/ /g, '-'));
        }
        node.data ??= {};
        node.data.hProperties = { ...node.data.hProperties, id };
        return;
      }
      node.children?.forEach(visit);
    };
    visit(tree);
  };
}
