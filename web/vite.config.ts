import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { defineConfig, type Plugin } from 'vite';

/**
 * The config reference the editor links to (docs/config.md, docs/import.md), bundled as plain
 * text so that the page works offline and any static host serves it readably.
 */
function bundledDocs(): Plugin {
  const docs = { 'docs/config.txt': 'config.md', 'docs/import.txt': 'import.md' };
  const text = (md: string) => readFileSync(resolve(__dirname, '..', 'docs', md), 'utf8');
  return {
    name: 'proteus-bundled-docs',
    generateBundle() {
      for (const [fileName, md] of Object.entries(docs)) this.emitFile({ type: 'asset', fileName, source: text(md) });
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const md = Object.entries(docs).find(([f]) => req.url === '/' + f)?.[1];
        if (!md) return next();
        res.setHeader('content-type', 'text/plain; charset=utf-8');
        res.end(text(md));
      });
    },
  };
}

// base './': the built page works from any static host under any sub-path, and offline.
export default defineConfig({
  base: './',
  plugins: [bundledDocs()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0, // no data: URLs; every asset is a file the CSP allows as 'self'
    modulePreload: { polyfill: false },
  },
  worker: { format: 'es' },
});
