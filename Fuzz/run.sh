#!/usr/bin/env bash
# Fuzzes the HTTP request parser, body decoder and field parsers with
# libFuzzer (Fuzz/build.sh builds the target).
#
#   Fuzz/run.sh                      # one hour
#   SECONDS_TO_RUN=600 Fuzz/run.sh   # ten minutes
#   JOBS=2 Fuzz/run.sh               # two fuzzing processes (one per core)
#   Fuzz/run.sh -only_ascii=1        # extra arguments go to libFuzzer
#
# Reads the seeds in Fuzz/corpus/http (in git) and the corpus earlier runs
# grew in Fuzz/.work/corpus (not in git: .gitignore); new entries go to the
# latter only. A crash, a hang (-timeout), a leak or a broken invariant
# (the harness aborts) leaves its input in Fuzz/.work/crashes/; reproduce it
# with `Fuzz/.build/http-parser-fuzz FILE`, then add it to the seeds (named
# by what it is) with a regression test in Tests/LarderHTTPTests.
# Prints the executions, their rate, the coverage and the crashes found;
# exits non-zero when there was a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SECONDS_TO_RUN:-3600}
jobs=${JOBS:-1}
max_len=${MAX_LEN:-8192}
work=Fuzz/.work
mkdir -p "$work/corpus" "$work/crashes" "$work/logs"

Fuzz/build.sh

stamp=$(date -u +%Y%m%dT%H%M%SZ)
before=$(ls "$work/crashes" | wc -l)
echo "fuzz: $seconds s, $jobs job(s), inputs up to $max_len bytes; logs in $work/logs/$stamp-*.log"
pids=()
for job in $(seq 1 "$jobs"); do
  log="$work/logs/$stamp-$job.log"
  # nice: the machine is shared; the fuzzer takes whatever is idle.
  nice -n 10 Fuzz/.build/http-parser-fuzz \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -dict=Fuzz/http.dict -artifact_prefix="$work/crashes/" -print_final_stats=1 \
    -seed="$((RANDOM * 32768 + RANDOM + job))" \
    "$@" "$work/corpus" Fuzz/corpus/http > "$log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done

runs=0; rate=0
for log in "$work"/logs/"$stamp"-*.log; do
  r=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  runs=$((runs + ${r:-0})); rate=$((rate + ${s:-0}))
  # The last status line: "#N  ... cov: C ft: F corp: K/S ...".
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  echo "fuzz: job log $log"
  echo "fuzz:   last status: ${last:-none}"
  grep -E '^(==[0-9]+==ERROR|invariant:|SUMMARY:|artifact_prefix|Test unit written)' "$log" | head -20 | sed 's/^/fuzz:   /' || true
done
after=$(ls "$work/crashes" | wc -l)
echo "fuzz: executions $runs, about $rate per second"
echo "fuzz: coverage $(grep -hoE 'cov: [0-9]+ ft: [0-9]+' "$work"/logs/"$stamp"-*.log | sort -t' ' -k2 -n | tail -1) (edges, features)"
echo "fuzz: corpus $(ls "$work/corpus" | wc -l) grown entries + $(ls Fuzz/corpus/http | wc -l) seeds"
echo "fuzz: crashes found $((after - before)) (in $work/crashes/)"
if [ "$status" -eq 72 ] && [ "$after" -eq "$before" ]; then
  echo "fuzz: interrupted (no crash)"
  exit 0
fi
if [ "$status" -ne 0 ] || [ "$after" -ne "$before" ]; then
  echo "fuzz: FAILED (libFuzzer status $status)"
  exit 1
fi
