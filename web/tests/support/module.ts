// Loads the built WebAssembly module in Node (TOOLCHAIN.md quirk 5: wasmBinary from fs).
// The ES module loader that Emscripten 3.1.6 writes still uses `require` and `__dirname` on
// its Node path; ES modules have neither, so they are provided as globals first.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ProteusModule } from '../../src/protocol';

export type { ProteusModule };


export const WASM_DIR = resolve(__dirname, '..', '..', 'public', 'wasm');

export async function loadModule(dir = WASM_DIR): Promise<ProteusModule> {
  const js = join(dir, 'proteus.js');
  if (!existsSync(js)) throw new Error(`${js} not found: run \`npm run build\` (or \`npm run wasm\`) first`);
  const g = globalThis as any;
  g.require ??= createRequire(js);
  g.__dirname ??= dir;
  const { default: createProteus } = await import(/* @vite-ignore */ pathToFileURL(js).href);
  return createProteus({ wasmBinary: readFileSync(join(dir, 'proteus.wasm')), print: () => {}, printErr: () => {} });
}
