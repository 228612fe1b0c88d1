// docloupe for mdBook (book.toml `additional-js`). mdBook's menu bar is no template partial, so
// this classic script does what the two lines `docloupe --site book` prints do: it loads the
// component and puts the element, its URLs relative to this file (the book's root, so the same
// book works under any site path), at the right of the menu bar.
(() => {
  const root = new URL('./', document.currentScript.src);
  import(new URL('docloupe/docloupe-search.js', root).href);
  const bar = document.querySelector('#mdbook-menu-bar .right-buttons');
  if (!bar || bar.querySelector('docloupe-search')) return;
  const element = document.createElement('docloupe-search');
  element.setAttribute('bundle', new URL('docloupe/index/', root).href);
  element.setAttribute('models', new URL('docloupe/models.json', root).href);
  element.setAttribute('root', root.href);
  bar.prepend(element);
})();
