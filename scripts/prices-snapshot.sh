#!/usr/bin/env bash
# Regenerates crates/kite-prices/data/prices.json, the price table kite carries, from a
# release of PyPI's genai-prices (default: the one scripts/setup.sh --tests installs,
# which compare kite's prices with that release's calculator):
#
#   scripts/prices-snapshot.sh [VERSION]
#
# The package is downloaded as a wheel and its data.py read by to_json.py, never run.
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-0.2.3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download --no-deps --only-binary=:all: --quiet --disable-pip-version-check \
  -d "$work" "genai-prices==$version"
python3 -m zipfile -e "$work"/genai_prices-*.whl "$work/unpacked"
python3 crates/kite-prices/src/to_json.py "$work/unpacked/genai_prices/data.py" \
  "genai-prices $version" > crates/kite-prices/data/prices.json
echo "prices-snapshot: crates/kite-prices/data/prices.json from genai-prices $version" >&2
