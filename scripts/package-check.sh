#!/usr/bin/env bash
# Checks that kite installs as a user installs it: the workspace's crates packaged as
# crates.io would receive them, `kite` installed from the packaged kite-llm-cli (every kite
# crate it needs from its own package, nothing from the repository) into a temporary root,
# then run from a folder outside the repository: `--version`, a local answer with a tool
# call, and `kite serve` answering /v1/models. Then the book's crate of one's own
# (testdata/newcomer), a crate outside the workspace that depends on kite-llm as crates.io
# gives it, is built against the packages and run with no key.
#
# `cargo package` verifies each crate: it builds it from its package alone, the kite crates
# it needs taken from their packages too. The install is a debug build in the repository's
# target folder (KITE_PACKAGE_TARGET), so that the dependencies built for the tests are
# reused; the kite crates are built again from their packages.
#
# A package carries no workspace profile, so both builds would otherwise take full debug
# information (llama.cpp alone then needs 1.3 GB): they are built as the workspace builds its
# dependencies, without it. The packages are unpacked in a fixed folder outside the workspace
# (~/.cache/kite/package-check), so that a second run rebuilds in place rather than beside
# the first; one run at a time holds it, and what a run put there is removed at its end.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
packages="${CARGO_TARGET_DIR:-$repo/target}/package" # where `cargo package` writes
target="${KITE_PACKAGE_TARGET:-${CARGO_TARGET_DIR:-$repo/target}}"
export CARGO_PROFILE_DEV_DEBUG=false
work="${XDG_CACHE_HOME:-$HOME/.cache}/kite/package-check"
mkdir -p "$work"
exec 9>"$work.lock"
flock -n 9 || { echo "package-check: another run is using $work" >&2; exit 1; }
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  rm -rf "$work/src" "$work/root" "$work/elsewhere" "$work"/version "$work"/answer \
    "$work"/ask.log "$work"/serve.log "$work"/models "$work/newcomer" "$packages"
}
cleanup
trap cleanup EXIT

echo "package-check: packaging the workspace's crates" >&2
cargo package -q --workspace --exclude kite-bench --allow-dirty
mkdir -p "$work/src"
patches=()
for crate in "$packages"/*.crate; do
  name=$(basename "$crate" .crate)
  [ "$name" = "${name#kite-bench-}" ] || continue
  tar xzf "$crate" -C "$work/src"
  # Each crate from its package, in place of crates.io's (kite-core-0.1.0 -> kite-core).
  patches+=(--config "patch.crates-io.${name%-*}.path=\"$work/src/$name\"")
done
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
[ -f "$work/src/kite-llm-cli-$version/.cargo_vcs_info.json" ] ||
  [ -n "${KITE_COMMIT:-}" ] || echo "package-check: not a git checkout; the commit is unknown" >&2

echo "package-check: installing kite from the packaged kite-llm-cli" >&2
cargo install -q --debug --locked "${patches[@]}" --path "$work/src/kite-llm-cli-$version" \
  --root "$work/root" --target-dir "$target"
kite="$work/root/bin/kite"

outside="$work/elsewhere"
mkdir -p "$outside"
cd "$outside"
"$kite" --version | tee "$work/version"
grep -Eq "^kite $version \([0-9a-f]{12}\)$" "$work/version" || {
  echo "package-check: --version names no commit" >&2
  exit 1
}

env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u MISTRAL_API_KEY -u OPENROUTER_API_KEY \
  -u GROQ_API_KEY -u KITE_API_KEY \
  "$kite" ask --local --no-store --tool now --tool-choice required -v \
  "What is the date and time now?" >"$work/answer" 2>"$work/ask.log" || {
  cat "$work/ask.log" >&2
  exit 1
}
grep -q "now" "$work/ask.log" || { cat "$work/ask.log" >&2; exit 1; }
[ -s "$work/answer" ] || { echo "package-check: no answer" >&2; exit 1; }
echo "package-check: answered: $(head -c 200 "$work/answer")" >&2

KITE_LOG=info "$kite" serve --local --no-auth --addr 127.0.0.1:0 2>"$work/serve.log" &
serve_pid=$!
base=""
for _ in $(seq 1 100); do
  base=$(grep -o 'http://127\.0\.0\.1:[0-9]*/v1' "$work/serve.log" | head -1 || true)
  [ -n "$base" ] && break
  sleep 0.2
done
[ -n "$base" ] || { cat "$work/serve.log" >&2; exit 1; }
curl -fsS "$base/models" | tee "$work/models" >/dev/null
grep -q '"object":"list"' "$work/models" || { cat "$work/models" >&2; exit 1; }
echo "package-check: kite serve listed $(grep -o '"id":"[^"]*"' "$work/models" | head -3 | tr '\n' ' ')" >&2
kill "$serve_pid" 2>/dev/null || true
serve_pid=""

echo "package-check: building the book's crate of one's own against the packaged kite-llm" >&2
cp -r "$repo/testdata/newcomer" "$work/newcomer"
cargo build -q "${patches[@]}" --manifest-path "$work/newcomer/Cargo.toml" --target-dir "$target"
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u MISTRAL_API_KEY -u OPENROUTER_API_KEY \
  -u GROQ_API_KEY -u KITE_API_KEY \
  "$target/debug/newcomer" >"$work/newcomer/answer" 2>"$work/newcomer/log" || {
  cat "$work/newcomer/log" >&2
  exit 1
}
grep -q '^called add: {"sum":42' "$work/newcomer/log" || { cat "$work/newcomer/log" >&2; exit 1; }
echo "package-check: the crate of one's own answered: $(head -c 200 "$work/newcomer/answer")" >&2
echo "package-check: ok" >&2
