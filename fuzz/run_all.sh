#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/fuzz for SECONDS each, JOBS at a
# time (default: one per CPU; each fuzzer is one process on one core).
#   fuzz/run_all.sh BUILD_DIR [SECONDS] [JOBS]
# Seeds: fuzz/<name>.seeds lists folders (relative to the repo root) whose
# files seed the corpus, and fuzz/corpus/<name>/ holds hand-written seeds.
# Dictionary: fuzz/<name>.dict when present. The working corpus lives in a
# temporary folder, so the repo is never written. A crash fails the script.
set -euo pipefail
build_dir=$1
seconds=${2:-60}
jobs=${3:-$(nproc)}
repo=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob

# Fuzzes one target; everything it prints goes to its report file, printed
# whole once it ends, so that parallel runs do not interleave.
fuzz_one() {  # fuzzer report (runs in a background subshell)
  local fuzzer=$1 report=$2 name work
  exec > "$report" 2>&1  # everything, setup errors included
  name=$(basename "$fuzzer")
  work=$(mktemp -d)
  mkdir -p "$work/corpus" "$work/artifacts"
  if [[ -f "$repo/fuzz/$name.seeds" ]]; then
    while read -r dir; do
      [[ -z "$dir" || "$dir" == \#* ]] && continue
      find "$repo/$dir" -type f -exec cp -t "$work/corpus" {} + 2>/dev/null || true
    done < "$repo/fuzz/$name.seeds"
  fi
  if [[ -d "$repo/fuzz/corpus/$name" ]]; then cp -r "$repo/fuzz/corpus/$name/." "$work/corpus/"; fi
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$work/artifacts/")
  if [[ -f "$repo/fuzz/$name.dict" ]]; then args+=(-dict="$repo/fuzz/$name.dict"); fi
  local failed=0
  echo "== fuzzing $name for ${seconds}s (seeds: $(ls "$work/corpus" | wc -l))"
  if ! "$fuzzer" "${args[@]}" "$work/corpus" > "$work/log" 2>&1; then
    failed=1
    echo "FUZZER FAILED: $name"; tail -n 60 "$work/log"
    ls -la "$work/artifacts"
    # The work dir is removed below: print each input so that a CI log
    # alone reproduces the failure (base64 -d > crash; $fuzzer crash).
    for artifact in "$work"/artifacts/*; do
      echo "-- $(basename "$artifact") (base64):"
      head -c 65536 "$artifact" | base64
    done
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$work/log" | tail -n 2 || true
  fi
  rm -rf "$work"
  return $failed
}

reports=$(mktemp -d)
# On any exit, no fuzzer outlives the script (holding the CI log open).
trap 'kill $(jobs -p) 2>/dev/null || true; wait; rm -rf "$reports"' EXIT
pids=() names=()
status=0
collect() {  # waits for the oldest running fuzzer and prints its report
  local pid=${pids[0]} name=${names[0]}
  pids=("${pids[@]:1}") names=("${names[@]:1}")
  wait "$pid" || status=1
  cat "$reports/$name" 2>/dev/null || { echo "FUZZER FAILED: $name (it wrote no report)"; status=1; }
}
for fuzzer in "$build_dir"/fuzz/*_fuzzer; do
  name=$(basename "$fuzzer")
  fuzz_one "$fuzzer" "$reports/$name" &
  pids+=($!) names+=("$name")
  if ((${#pids[@]} >= jobs)); then collect; fi
done
while ((${#pids[@]})); do collect; done
exit $status
