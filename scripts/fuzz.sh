#!/usr/bin/env bash
# Fuzzes kite's parsers with cargo-fuzz (libFuzzer) on the stable compiler.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each target (default: all of them) for SECONDS (default 20) on its corpus in
# target/fuzz-corpus/TARGET, seeded from the recorded traffic in testdata/wire, the skills
# in testdata/skills and what scripts/fuzz-seeds.py makes (python3), and prints
# one line per target with its execution count. Exits non-zero when a target finds a crash;
# libFuzzer saves the input under fuzz/artifacts/TARGET/. The instrumented build is kept
# outside the checkout (KITE_FUZZ_TARGET, default ~/.cache/kite/fuzz-target) so that a
# fresh clone reuses it.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-20}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] ||
  targets=(sse streams bodies cassette config serve_requests frontmatter skill_archive state prompts)

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz from crates.io" >&2
  cargo install --locked -q cargo-fuzz --version 0.13.2
fi

build="${KITE_FUZZ_TARGET:-${XDG_CACHE_HOME:-$HOME/.cache}/kite/fuzz-target}"
corpus=target/fuzz-corpus
seed() { # seed TARGET FILE...: copy the files into the target's corpus, once
  local dir="$corpus/$1"
  shift
  mkdir -p "$dir"
  for f in "$@"; do
    local name
    name=$(printf '%s' "$f" | sha256sum | cut -c1-16)
    [ -e "$dir/seed-$name" ] || cp "$f" "$dir/seed-$name"
  done
}
mapfile -t streams < <(find testdata/wire -name '*.sse' | sort)
mapfile -t bodies < <(find testdata/wire -name '*.json' | sort)
mapfile -t cassettes < <(find crates -path '*tests/cassettes/*' -type f | sort)
seed sse "${streams[@]}"
seed streams "${streams[@]}"
seed bodies "${bodies[@]}"
seed cassette "${cassettes[@]}"
mapfile -t requests < <(find testdata/wire -name request.json | sort)
mapfile -t skill_mds < <(find testdata/skills -name SKILL.md | sort)
seed serve_requests "${requests[@]}"
seed frontmatter "${skill_mds[@]}"
# The gateway's tests' request bodies, zipped test skills, conversation states.
python3 scripts/fuzz-seeds.py "$corpus"
mkdir -p "$corpus/config"
cat > "$corpus/config/seed-servers" <<'TOML'
[http]
connect_timeout_secs = 10
timeout_secs = 600
idle_timeout_secs = 120

[mcp.servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
env = { NODE_OPTIONS = "--max-old-space-size=256", TOKEN = "${GITHUB_TOKEN}" }
reject = ["write_file"]
startup_timeout_secs = 20

[mcp.servers.search]
url = "https://mcp.example.com/mcp"
headers = { "X-Team" = "kite" }
bearer_token_env = "SEARCH_TOKEN"
allow = ["find"]
prefix = "web"
timeout_secs = 120
TOML
mkdir -p "$corpus/prompts"
cat > "$corpus/prompts/seed-prompts" <<'TOML'
system = "You are terse. Today is {date}."
summarize = """
Summarize the conversation as notes:
decisions, open questions, and what the user asked for."""

[roles]
reviewer = "You review Rust code for bugs."
'translator' = 'Translate into French.'
TOML
printf 'file = "other.toml"\nsystem = "Be brief."\n' > "$corpus/prompts/seed-names-another"

failed=0
for t in "${targets[@]}"; do
  log="target/fuzz-$t.log"
  mkdir -p target
  if cargo fuzz run -s none --target-dir "$build" "$t" "$corpus/$t" -- \
      -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
      >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $t: $runs runs in ${secs} s, coverage $cov, no crash"
  else
    failed=1
    echo "fuzz: $t FAILED (see $log and fuzz/artifacts/$t/)" >&2
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -n 20 >&2 || tail -n 40 "$log" >&2
  fi
done
exit "$failed"
