import { h } from 'vue';
import DefaultTheme from 'vitepress/theme';
import './docloupe.css';

// The default theme with <docloupe-search> in the navbar's slot. h() with a tag name makes a
// plain DOM element: Vue renders it on the server and hydrates it without touching the
// children the element draws for itself.
export default {
  extends: DefaultTheme,
  Layout: () => h(DefaultTheme.Layout, null, {
    'nav-bar-content-before': () => h('docloupe-search'),
  }),
};
