// docloupe for mdBook (book.toml `additional-js`): a classic script, so it loads the module
// that configures the search box with import(), relative to itself (works under any site path).
import(new URL('docloupe/search.js', document.currentScript.src).href);
