import { defineConfig } from 'vitepress';

// A plain VitePress site: its own heading ids (no slugify of ours), its own URLs. docloupe
// indexes the built HTML afterwards (`npx docloupe --site dist`), so results land on what
// VitePress made. The first of the two lines `docloupe --site` prints goes into <head>.
const base = process.env.SITE_BASE ?? '/';

export default defineConfig({
  base,
  title: 'Harbor',
  description: 'docloupe recipe: VitePress',
  head: [['script', { type: 'module', src: `${base}docloupe/docloupe-search.js` }]],
  vue: { template: { compilerOptions: { isCustomElement: (tag) => tag === 'docloupe-search' } } },
  themeConfig: {
    nav: [{ text: 'Guide', link: '/guide/install' }],
    sidebar: [
      { text: 'Guide', items: [
        { text: 'Installing Harbor', link: '/guide/install' },
        { text: 'Configuring the cache', link: '/guide/caching' },
      ] },
      { text: 'Reference', items: [{ text: 'Security notes', link: '/reference/security' }] },
      { text: 'Русский', items: [{ text: 'Установка Harbor', link: '/ru/установка' }] },
      { text: 'Extra', items: [{ text: 'Anchor edge cases', link: '/extra/anchors' }] },
    ],
  },
});
