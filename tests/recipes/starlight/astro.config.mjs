import { defineConfig } from 'astro/config';
import starlight from '@astrojs/starlight';

// Where the site is served from: '/', or e.g. '/harbor/' on GitHub Pages.
const base = process.env.SITE_BASE ?? '/';

export default defineConfig({
  base,
  integrations: [
    starlight({
      title: 'Harbor',
      // docloupe replaces Starlight's built-in search (Pagefind).
      pagefind: false,
      components: { Search: './src/components/Search.astro' },
      // The first of the two lines `docloupe --site dist` prints. Starlight writes head
      // entries as they are: the base goes into the URL here.
      head: [{ tag: 'script', attrs: { type: 'module', src: `${base}docloupe/docloupe-search.js` } }],
      sidebar: [
        { label: 'Guide', items: ['guide/install', 'guide/caching'] },
        { label: 'Reference', items: ['reference/security'] },
        { label: 'Русский', items: ['ru/установка'] },
        { label: 'Extra', items: ['extra/anchors'] },
      ],
    }),
  ],
});
