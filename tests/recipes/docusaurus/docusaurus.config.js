// A minimal Docusaurus site for the docloupe recipe.
// Where the site is served from: '/', or e.g. '/harbor/' on GitHub Pages.
const baseUrl = process.env.SITE_BASE ?? '/';

export default {
  title: 'Harbor',
  url: 'http://127.0.0.1',
  baseUrl,
  onBrokenLinks: 'warn',
  // .md files as CommonMark (the sample has raw HTML that MDX would reject); .mdx stays MDX.
  markdown: { format: 'detect' },
  presets: [
    ['classic', {
      docs: {
        routeBasePath: '/docs',
        sidebarPath: './sidebars.js',
      },
      blog: false,
    }],
  ],
  // docloupe: the first of the two lines `docloupe --site build` prints (Docusaurus writes
  // `scripts` as they are: the baseUrl goes into the URL here).
  scripts: [{ src: `${baseUrl}docloupe/docloupe-search.js`, type: 'module' }],
  themeConfig: {
    navbar: {
      title: 'Harbor',
      items: [
        { type: 'docSidebar', sidebarId: 'docs', label: 'Docs', position: 'left' },
        // docloupe: src/theme/SearchBar.js is the search bar.
        { type: 'search', position: 'right' },
      ],
    },
  },
};
