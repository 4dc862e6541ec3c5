#!/bin/sh
# run.sh: one bounded libFuzzer run of a harness (called by `make fuzz`).
# Usage: tests/fuzz/run.sh BIN SEEDS SCRATCH SECONDS MAX_LEN [DICT]
# Fuzzes a fresh copy of SEEDS in SCRATCH/corpus for SECONDS (SEEDS itself is never written),
# libFuzzer's log in SCRATCH/log. A clean run prints one line (executions, exec/s, coverage) and
# exits 0; a crash, leak, timeout, out-of-memory or sanitizer report prints the report and the
# reproducer (path, bytes, the command that replays it) and exits 1.
set -u
if [ $# -lt 5 ]; then
    echo "usage: tests/fuzz/run.sh BIN SEEDS SCRATCH SECONDS MAX_LEN [DICT]" >&2
    exit 2
fi
bin=$1 seeds=$2 scratch=$3 seconds=$4 max_len=$5 dict=${6:-}
name=$(basename "$bin")
rm -rf "$scratch" && mkdir -p "$scratch/corpus" "$scratch/artifacts" || exit 1
cp "$seeds"/* "$scratch/corpus/" || exit 1
log=$scratch/log
set -- -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$scratch/artifacts/"
[ -n "$dict" ] && set -- "$@" -dict="$dict"
nseeds=$(ls "$scratch/corpus" | wc -l)
echo "fuzz: $name: ${seconds}s on a copy of $seeds ($nseeds seeds, -max_len=$max_len)"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1 \
UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1 \
    "$bin" "$@" "$scratch/corpus" >"$log" 2>&1
rc=$?
stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
if [ $rc -eq 0 ]; then
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    echo "fuzz: $name: ok: $(stat number_of_executed_units) runs, $(stat average_exec_per_sec) exec/s," \
        "$cov, $(ls "$scratch/corpus" | wc -l) corpus units, peak $(stat peak_rss_mb) MB"
    exit 0
fi
echo "error: fuzz: $name failed (exit $rc); the report (libFuzzer's status lines left out; all in $log):" >&2
grep -v '^#[0-9]' "$log" | tail -n 100 >&2
found=0
for f in "$scratch"/artifacts/crash-* "$scratch"/artifacts/leak-* "$scratch"/artifacts/timeout-* \
         "$scratch"/artifacts/oom-*; do
    [ -f "$f" ] || continue
    found=1
    echo "error: fuzz: $name: reproducer $f ($(wc -c <"$f") bytes), first 512 bytes:" >&2
    od -A d -t x1z -v "$f" | head -n 32 >&2
    echo "hint: replay it with: $bin $f" >&2
done
[ $found = 1 ] || echo "error: fuzz: $name: no reproducer written (a failure outside any input?)" >&2
exit 1
