// Builds the dashboard into one directory: index.html, app.js and app.css, minified, with no
// source maps and nothing that the page would fetch from elsewhere; and beside each file its
// gzip (app.js.gz), which the master sends to browsers that take gzip.
//   node build.mjs [OUT_DIR]     (default: dist)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants, gzipSync } from 'node:zlib';

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

// Written after its file, so never older than it: the master ignores a .gz older than its file.
const FILES = ['index.html', 'app.js', 'app.css', 'favicon.svg'];
for (const file of FILES) {
  const packed = gzipSync(readFileSync(join(out, file)), { level: constants.Z_BEST_COMPRESSION });
  writeFileSync(join(out, `${file}.gz`), packed);
}

const size = (name) => statSync(join(out, name)).size;
console.log(
  `dashboard: ${out}: app.js ${size('app.js')} B (${size('app.js.gz')} B gzipped), ` +
    `app.css ${size('app.css')} B (${size('app.css.gz')} B gzipped)`,
);
