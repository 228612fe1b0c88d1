// docloupe as Docusaurus's search bar (the documented slot for a custom search: the theme
// puts it in the navbar, and keeps it there at phone width). The element goes in as HTML that
// React leaves alone, so the children it draws for itself survive hydration and re-renders.
import React from 'react';

export default function SearchBar() {
  return <div className="navbar__search" dangerouslySetInnerHTML={{ __html: '<docloupe-search></docloupe-search>' }} />;
}
