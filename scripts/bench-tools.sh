#!/usr/bin/env bash
# Installs what `cargo bench -p kite-bench --bench full_speed` needs and the tests never do:
# nginx (Debian's nginx-light), the loopback upstream, and oha (crates.io), the load
# generator, which holds a fixed rate and corrects for coordinated omission. oha compiles
# for a few minutes the first time. LiteLLM, the gateway it is set beside, is
# scripts/litellm-venv.sh's. Safe to run again.
set -euo pipefail
version="${KITE_OHA_VERSION:-1.16.0}"

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "bench-tools: installing nginx-light with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nginx-light >/dev/null
fi
# The package's own service is not wanted: the benchmark starts nginx with its own config.
if command -v systemctl >/dev/null && systemctl is-active --quiet nginx 2>/dev/null; then
  echo "bench-tools: note: Debian's nginx service is running; the benchmark does not need it" >&2
fi

oha="$(command -v oha || echo "${CARGO_HOME:-$HOME/.cargo}/bin/oha")"
if [ -x "$oha" ] && [ "$("$oha" --version 2>/dev/null | awk '{print $2}')" = "$version" ]; then
  echo "bench-tools: oha $version is at $oha"
else
  echo "bench-tools: installing oha $version with cargo install (a few minutes)" >&2
  cargo install --locked --quiet oha --version "$version"
fi
echo "bench-tools: nginx and oha are ready"
