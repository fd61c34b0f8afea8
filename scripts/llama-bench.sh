#!/usr/bin/env bash
# Builds llama.cpp's own `llama-bench` (from the llama.cpp that the PyPI sdist of
# llama-cpp-python vendors; the Rust crate's copy has its tools stripped) and runs it on the
# same model file and thread count as `cargo bench -p kite-local --bench throughput`.
# Usage: scripts/llama-bench.sh [THREADS]   (default 1)
set -euo pipefail
threads="${1:-1}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kite/llama-bench"
bin="$cache/build/bin/llama-bench"
if [ ! -x "$bin" ]; then
  mkdir -p "$cache"
  python3 -m pip download --no-deps --no-binary :all: --quiet -d "$cache" llama-cpp-python
  sdist=$(ls "$cache"/llama_cpp_python-*.tar.gz | head -1)
  tar -xzf "$sdist" -C "$cache"
  src=$(ls -d "$cache"/llama_cpp_python-*/vendor/llama.cpp | head -1)
  cmake -S "$src" -B "$cache/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF >/dev/null
  cmake --build "$cache/build" --target llama-bench -j2 >/dev/null
fi
model=$(cd "$(dirname "$0")/.." && cargo run -q -p kite-llm-cli -- model path)
# The same shape as kite's run: a 96-token prompt, then 128 tokens generated after it.
"$bin" -m "$model" -p 96 -n 0 -t "$threads" -r 5
"$bin" -m "$model" -p 0 -n 128 -d 96 -t "$threads" -r 5
