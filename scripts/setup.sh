#!/usr/bin/env bash
# Installs what Proteus needs on Debian 12, only where it is missing.
#   scripts/setup.sh          native build and tests: cmake, g++, nlohmann-json, doctest, clang-format
#   scripts/setup.sh --web    also the WebAssembly toolchain (emscripten), Node.js and Chromium
set -euo pipefail
want_web=0
[[ "${1:-}" == "--web" ]] && want_web=1

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
[[ -f /usr/include/nlohmann/json.hpp ]] || need+=(nlohmann-json3-dev)
[[ -f /usr/include/doctest/doctest.h ]] || need+=(doctest-dev)
command -v clang-format >/dev/null || need+=(clang-format)
if ((want_web)); then
  command -v em++ >/dev/null || need+=(emscripten)
  command -v node >/dev/null || need+=(nodejs npm)
  command -v chromium >/dev/null || need+=(chromium)
fi
if ((${#need[@]})); then
  echo "setup: installing ${need[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ((want_web)); then
  major=$(node -p 'process.versions.node.split(".")[0]')
  if ((major < 20)); then
    echo "setup: Node.js $(node --version) is too old for the web build (Vite needs Node >= 20)." >&2
    exit 1
  fi
fi
echo "setup: ok"
