import { h } from 'vue';
import { withBase } from 'vitepress';
import DefaultTheme from 'vitepress/theme';
import './docloupe.css';

// The second line `docloupe --site` prints, in the navbar's slot: the element and its three
// attributes (the index, the models, the site root), under the site's base.
export default {
  extends: DefaultTheme,
  Layout: () => h(DefaultTheme.Layout, null, {
    'nav-bar-content-before': () => h('docloupe-search', {
      bundle: withBase('/docloupe/index/'),
      models: withBase('/docloupe/models.json'),
      root: withBase('/'),
    }),
  }),
};
