import { defineConfig } from 'vitepress';
import { slugify } from './slugify.mjs';

// Where the site is served from: '/', or e.g. '/harbor/' on GitHub Pages.
const base = process.env.SITE_BASE ?? '/';

export default defineConfig({
  base,
  title: 'Harbor',
  description: 'docloupe recipe: VitePress',
  // The search box's configuration, loaded as a file (no inline script: CSP-friendly).
  // VitePress writes head tags as they are: the base goes into the URL here.
  head: [['script', { type: 'module', src: `${base}docloupe/search.js` }]],
  // Heading ids as index-builder makes them, so every result's anchor exists on its page.
  markdown: { anchor: { slugify } },
  // <docloupe-search> is a custom element, not a Vue component.
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
