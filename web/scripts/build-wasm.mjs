// Builds the WebAssembly module through CMake (build-wasm/ at the repository root) and
// copies the ES module loader + .wasm into web/public/wasm/, where Vite picks them up.
// PROTEUS_WASM_DIR=<folder holding proteus.js and proteus.wasm> skips the build and copies
// from there instead (for a prebuilt module).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const web = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repo = resolve(web, '..');
const build = join(repo, 'build-wasm');
const out = join(web, 'public', 'wasm');

// TOOLCHAIN.md quirk 1: Debian's em++ needs acorn from /usr/share/nodejs.
const env = { ...process.env };
env.NODE_PATH = ['/usr/share/nodejs', env.NODE_PATH].filter(Boolean).join(':');

function run(cmd, args) {
  console.log(`$ ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { stdio: 'inherit', env, cwd: web });
}

let from = process.env.PROTEUS_WASM_DIR;
if (!from) {
  if (!existsSync(join(build, 'CMakeCache.txt'))) {
    run('emcmake', ['cmake', '-S', repo, '-B', build, '-DCMAKE_BUILD_TYPE=Release', '-DPROTEUS_BUILD_TESTS=OFF']);
  }
  run('cmake', ['--build', build, '-j2', '--target', 'proteus_wasm']);
  from = join(build, 'wasm');
}
mkdirSync(out, { recursive: true });
for (const f of ['proteus.js', 'proteus.wasm']) {
  copyFileSync(join(from, f), join(out, f));
  console.log(`copied ${join(from, f)} -> ${join(out, f)}`);
}
