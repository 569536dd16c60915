#!/usr/bin/env bash
# The main job: set up, build everything, and serve the web page on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --web
bash scripts/build.sh
echo "Default scenario (native CLI):"
build/bin/proteus simulate default | head -n 16
cd web
npm ci --no-audit --no-fund
npm run build
exec npm run serve
