// Turns the sample's raw-HTML lines (reference/security.md) into fenced html code blocks,
// for generators that compile markdown as Vue templates (VitePress) or JSX (MDX).
import fs from 'node:fs';
const file = process.argv[2];
const src = fs.readFileSync(file, 'utf8');
fs.writeFileSync(file, src.replace(/^(<(script|img)\b.*)$/gm, '```html\n$1\n```'));
