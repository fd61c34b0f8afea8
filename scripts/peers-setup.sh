#!/usr/bin/env bash
# Installs the non-Rust clients of the `peers` benchmark (`cargo bench -p kite-bench --bench
# peers`): the official OpenAI Python SDK (PyPI `openai`, with matplotlib for the plot) in
# its own virtualenv, and the Vercel AI SDK (npm `ai` and `@ai-sdk/openai`) in its own
# folder. Idempotent: what is there at the pinned versions is left alone. The tests never
# need any of it.
set -euo pipefail
venv="${KITE_PEERS_VENV:-$HOME/.cache/kite/peers-venv}"
node_dir="${KITE_PEERS_NODE:-$HOME/.cache/kite/peers-node}"
openai_version="${KITE_PEERS_OPENAI_VERSION:-3.54.0}"
matplotlib_version="${KITE_PEERS_MATPLOTLIB_VERSION:-3.11.2}"
ai_version="${KITE_PEERS_AI_VERSION:-7.0.173}"
ai_openai_version="${KITE_PEERS_AI_OPENAI_VERSION:-4.0.118}"

has() {
  "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('$1') == '$2'" 2>/dev/null
}
if has openai "$openai_version" && has matplotlib "$matplotlib_version"; then
  echo "openai $openai_version and matplotlib $matplotlib_version are in $venv"
else
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check \
    "openai==$openai_version" "matplotlib==$matplotlib_version"
  echo "openai $openai_version and matplotlib $matplotlib_version are in $venv"
fi

if ! command -v npm >/dev/null; then
  echo "npm is missing: the Vercel AI SDK's rows will be left out" >&2
  exit 0
fi
mkdir -p "$node_dir"
cat > "$node_dir/package.json.new" <<JSON
{
  "name": "kite-bench-peers",
  "private": true,
  "type": "module",
  "dependencies": {
    "ai": "$ai_version",
    "@ai-sdk/openai": "$ai_openai_version"
  }
}
JSON
if cmp -s "$node_dir/package.json.new" "$node_dir/package.json" \
  && [ -f "$node_dir/node_modules/ai/package.json" ] \
  && [ -f "$node_dir/node_modules/@ai-sdk/openai/package.json" ]; then
  rm "$node_dir/package.json.new"
else
  mv "$node_dir/package.json.new" "$node_dir/package.json"
  (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error --save-exact)
fi
echo "ai $ai_version and @ai-sdk/openai $ai_openai_version are in $node_dir"
