import { defineConfig } from 'vite';

// base './': the built page works from any static host under any sub-path, and offline.
export default defineConfig({
  base: './',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0, // no data: URLs; every asset is a file the CSP allows as 'self'
    modulePreload: { polyfill: false },
  },
  worker: { format: 'es' },
});
