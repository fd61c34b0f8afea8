#!/usr/bin/env bash
# Installs LiteLLM's proxy (PyPI `litellm[proxy]`) in its own virtualenv, for the gateway
# benchmark only (`cargo bench -p kite-bench --bench gateway`); the tests never need it.
set -euo pipefail
venv="${KITE_LITELLM_VENV:-$HOME/.cache/kite/litellm-venv}"
version="${KITE_LITELLM_VERSION:-1.106.2}"
if [ -x "$venv/bin/litellm" ] && "$venv/bin/python" -c "import importlib.metadata as m; assert m.version('litellm') == '$version'" 2>/dev/null; then
  echo "litellm $version is in $venv"
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$version"
echo "litellm $version is in $venv"
