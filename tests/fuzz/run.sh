#!/bin/sh
# run.sh: one bounded libFuzzer run of a harness (called by `make fuzz` and `make fuzz-explore`).
# Usage: tests/fuzz/run.sh check|explore BIN SEEDS SCRATCH LIMIT MAX_LEN [DICT]
#   check    LIMIT inputs (-runs) from a fixed random seed (FUZZ_SEED, default 1): the same inputs
#            every time on the same corpus and build, so a failure is the change's, reproducible.
#   explore  LIMIT seconds from a fresh random seed (printed); when it ends clean, the inputs that
#            reached new edges are merged into SEEDS (libFuzzer's -merge=1 with -use_counters=0:
#            hit counts left out, so the corpus grows by few files) to be committed.
# Fuzzes a fresh copy of SEEDS in SCRATCH/corpus (check never writes SEEDS), libFuzzer's log in
# SCRATCH/log. A clean run prints one line (executions, exec/s, coverage) and exits 0; a crash,
# leak, timeout, out-of-memory or sanitizer report prints the report and the reproducer (path,
# bytes, the command that replays it) and exits 1. Once the bug is fixed, the reproducer goes
# into SEEDS as a regression input.
set -u
if [ $# -lt 6 ] || { [ "$1" != check ] && [ "$1" != explore ]; }; then
    echo "usage: tests/fuzz/run.sh check|explore BIN SEEDS SCRATCH LIMIT MAX_LEN [DICT]" >&2
    exit 2
fi
mode=$1 bin=$2 seeds=$3 scratch=$4 limit=$5 max_len=$6 dict=${7:-}
name=$(basename "$bin")
rm -rf "$scratch" && mkdir -p "$scratch/corpus" "$scratch/artifacts" || exit 1
cp "$seeds"/* "$scratch/corpus/" || exit 1
log=$scratch/log
set -- -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$scratch/artifacts/"
if [ "$mode" = check ]; then
    set -- "$@" -runs="$limit" -seed="${FUZZ_SEED:-1}" -reload=0
    what="$limit inputs from seed ${FUZZ_SEED:-1}"
else
    set -- "$@" -max_total_time="$limit"
    what="${limit}s from a fresh random seed"
fi
[ -n "$dict" ] && set -- "$@" -dict="$dict"
nseeds=$(ls "$scratch/corpus" | wc -l)
echo "fuzz: $name: $what on a copy of $seeds ($nseeds seeds, -max_len=$max_len)"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1 \
UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}print_stacktrace=1 \
    "$bin" "$@" "$scratch/corpus" >"$log" 2>&1
rc=$?
stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -n 1; }
seed=$(sed -n 's/^INFO: Seed: *//p' "$log" | head -n 1)
if [ $rc -eq 0 ]; then
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    echo "fuzz: $name: ok: $(stat number_of_executed_units) runs, $(stat average_exec_per_sec) exec/s," \
        "$cov, $(ls "$scratch/corpus" | wc -l) corpus units, peak $(stat peak_rss_mb) MB"
    [ "$mode" = check ] && exit 0
    before=$(ls "$seeds" | wc -l)
    "$bin" -merge=1 -use_counters=0 -max_len="$max_len" -close_fd_mask=2 "$seeds" "$scratch/corpus" \
        >"$scratch/merge.log" 2>&1 || {
        echo "error: fuzz: $name: merging into $seeds failed (see $scratch/merge.log)" >&2
        exit 1
    }
    echo "fuzz: $name: seed $seed: $(($(ls "$seeds" | wc -l) - before)) new inputs merged into $seeds"
    exit 0
fi
echo "error: fuzz: $name failed (exit $rc, seed $seed); the report (libFuzzer's status lines left out; all in $log):" >&2
grep -v '^#[0-9]' "$log" | tail -n 100 >&2
found=0
for f in "$scratch"/artifacts/crash-* "$scratch"/artifacts/leak-* "$scratch"/artifacts/timeout-* \
         "$scratch"/artifacts/oom-*; do
    [ -f "$f" ] || continue
    found=1
    echo "error: fuzz: $name: reproducer $f ($(wc -c <"$f") bytes), first 512 bytes:" >&2
    od -A d -t x1z -v "$f" | head -n 32 >&2
    echo "hint: replay it with: $bin $f; once fixed, add it to $seeds" >&2
done
[ $found = 1 ] || echo "error: fuzz: $name: no reproducer written (a failure outside any input?)" >&2
exit 1
