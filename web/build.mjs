// Builds the dashboard into one directory: index.html, app.js and app.css, minified, with no
// source maps and nothing that the page would fetch from elsewhere.
//   node build.mjs [OUT_DIR]     (default: dist)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? join(here, 'dist'));
mkdirSync(out, { recursive: true });

await build({
  entryPoints: { app: join(here, 'src/main.jsx') },
  outdir: out,
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'esm',
  target: ['es2020'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(join(here, 'src', file), join(out, file));

const size = (name) => statSync(join(out, name)).size;
console.log(`dashboard: ${out}: app.js ${size('app.js')} B, app.css ${size('app.css')} B`);
