// docloupe as Docusaurus's search bar (the documented slot for a custom search: the theme
// puts it in the navbar, and keeps it there at phone width): the second line `docloupe --site`
// prints, its URLs under the site's baseUrl. The element goes in as HTML that React leaves
// alone, so the children it draws for itself survive hydration and re-renders.
import React from 'react';
import useBaseUrl from '@docusaurus/useBaseUrl';

export default function SearchBar() {
  const bundle = useBaseUrl('/docloupe/index/');
  const models = useBaseUrl('/docloupe/models.json');
  const root = useBaseUrl('/');
  const html = `<docloupe-search bundle="${bundle}" models="${models}" root="${root}"></docloupe-search>`;
  return <div className="navbar__search" dangerouslySetInnerHTML={{ __html: html }} />;
}
