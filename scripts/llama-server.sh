#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` on the very llama.cpp kite runs, for
# `cargo bench -p kite-local --bench batching`: the inference library (src, ggml,
# include) is the copy the Rust crate llama-cpp-sys-2 vendors, built with the flags its
# build script uses; the server, which that copy leaves out, comes from the PyPI sdist of
# llama-cpp-python (another llama.cpp revision) with the helpers it is written against
# (common, mtmd, the UI's build files). Prints the binary's path.
# Usage: scripts/llama-server.sh
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kite/llama-server"
bin="$cache/build/bin/llama-server"
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
version="${KITE_LLAMA_CPP_PYTHON:-0.3.36}"
crate=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-*/llama.cpp | sort -V | tail -1)
if [ ! -d "$crate" ]; then
  echo "llama-server.sh: no llama-cpp-sys-2 sources; build kite-local first (cargo build -p kite-local)" >&2
  exit 1
fi
command -v cmake >/dev/null || { apt-get update -qq && apt-get install -y -qq cmake >/dev/null; }
mkdir -p "$cache"
if [ ! -f "$cache/llama_cpp_python-$version.tar.gz" ]; then
  python3 -m pip download --no-deps --no-binary :all: --quiet -d "$cache" "llama-cpp-python==$version"
fi
rm -rf "$cache/sdist" "$cache/src" "$cache/build"
mkdir -p "$cache/sdist"
tar -xzf "$cache/llama_cpp_python-$version.tar.gz" -C "$cache/sdist"
server=$(ls -d "$cache"/sdist/llama_cpp_python-*/vendor/llama.cpp)
cp -r "$crate" "$cache/src"
rm -rf "$cache/src/tools/server" "$cache/src/tools/ui" "$cache/src/tools/mtmd" "$cache/src/common"
cp -r "$server/tools/server" "$server/tools/ui" "$server/tools/mtmd" "$cache/src/tools/"
cp -r "$server/common" "$cache/src/common"
mkdir -p "$cache/src/scripts"
cp "$server/scripts/ui-assets.cmake" "$cache/src/scripts/"
printf 'add_subdirectory(mtmd)\nadd_subdirectory(ui)\nadd_subdirectory(server)\n' >"$cache/src/tools/CMakeLists.txt"
flags="-ffunction-sections -fdata-sections -fPIC -m64 -march=x86-64"
cmake -S "$cache/src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF -DGGML_OPENMP=ON -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" >/dev/null
cmake --build "$cache/build" --target llama-server -j2 >/dev/null
echo "$bin"
