#!/usr/bin/env bash
# Measured data-parallel scaling on one machine: `costbench train` under mpirun at 1..N ranks,
# one core per rank, for a fixed global batch (strong scaling) and a fixed batch per rank (weak
# scaling), next to what the step model predicts from the 1-rank run and the interconnect that
# `costbench allreduce --profile` measures. Writes into --out:
#   profile.csv            the ranks' interconnect as a data/hardware.csv row
#   sweep.csv              every measured run (summary rows with their `ranks` column)
#   scale_strong.csv/.png  costbench scale: calibrated on 1 rank, compared with the others
#   scale_weak.csv/.png
#   report/                costbench report over sweep.csv and the strong-scaling prediction
#
#   bench/sweep.sh                                  # pythia-70m, ranks 1,2, micro-batch 4 x 512
#   bench/sweep.sh --ranks 1,2,4 --model pythia-160m --steps 10 --out sweep
#   bench/sweep.sh --dry-run                        # print the commands, run nothing
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${COSTBENCH:-./costbench}
ranks=1,2 model=pythia-70m mb=4 seq=512 steps=8 out=sweep dry=0
# price of one rank-hour: AWS c7a.large on demand (2 cores) / 2, as data/prices.csv lists it
usd_rank=0.05132
while [ $# -gt 0 ]; do
    case "$1" in
        --ranks) ranks=$2; shift 2 ;;
        --model) model=$2; shift 2 ;;
        --micro-batch) mb=$2; shift 2 ;;
        --seq) seq=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --usd-per-rank-hour) usd_rank=$2; shift 2 ;;
        --dry-run) dry=1; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "error: bench/sweep.sh: unknown flag '$1'" >&2; exit 2 ;;
    esac
done
case "$ranks" in (*[!0-9,]*|'') echo "error: flag '--ranks': expected a list like 1,2,4, got '$ranks'" >&2; exit 2 ;; esac
IFS=, read -r -a rl <<< "$ranks"
max=1
for r in "${rl[@]}"; do [ "$r" -ge 1 ] || { echo "error: flag '--ranks': $r" >&2; exit 2; }; [ "$r" -gt "$max" ] && max=$r; done
root_flags=()
[ "$(id -u)" = 0 ] && root_flags=(--allow-run-as-root)
cores=$(nproc)
over=()
[ "$max" -gt "$cores" ] && over=(--oversubscribe)

run() { if [ "$dry" = 1 ]; then printf '%q ' "$@"; echo; else "$@"; fi; }
[ "$dry" = 1 ] || mkdir -p "$out"
if [ "$max" -ge 2 ]; then
    echo "bench/sweep.sh: the interconnect between $max ranks (costbench allreduce --profile)" >&2
    run mpirun "${root_flags[@]}" "${over[@]}" --bind-to core -np "$max" "$BIN" allreduce --ops allreduce -b 8 -e 32Mi -f 4 \
        --csv "$out/allreduce.csv" --profile "$out/profile.csv"
fi
files=()
for mode in strong weak; do
    for r in "${rl[@]}"; do
        if [ "$mode" = strong ]; then gb=$((mb * max)); else gb=$((mb * r)); fi
        f="$out/train_${mode}_${r}ranks.csv"
        # at the largest rank count both modes are the same run
        if [ "$mode" = weak ] && [ "$r" = "$max" ]; then
            run cp "$out/train_strong_${r}ranks.csv" "$f"
            continue
        fi
        echo "bench/sweep.sh: $mode scaling, $r ranks, global batch $gb" >&2
        run mpirun "${root_flags[@]}" "${over[@]}" --bind-to core -np "$r" "$BIN" train --model "$model" --micro-batch "$mb" \
            --seq "$seq" --global-batch "$gb" --steps "$steps" --no-predict --quiet --summary-csv "$f"
        files+=("$f")
    done
done
merge() { # header once, then the rows
    local dst=$1; shift
    if [ "$dry" = 1 ]; then echo "# merge $* > $dst"; return; fi
    { head -n 1 "$1"; for f in "$@"; do tail -n +2 "$f"; done; } > "$dst.tmp" && mv "$dst.tmp" "$dst"
}
merge "$out/sweep.csv" "${files[@]}"
strong=() weak=()
for r in "${rl[@]}"; do strong+=("$out/train_strong_${r}ranks.csv"); weak+=("$out/train_weak_${r}ranks.csv"); done
merge "$out/sweep_strong.csv" "${strong[@]}"
merge "$out/sweep_weak.csv" "${weak[@]}"
if [ "$max" -ge 2 ]; then
    for mode in strong weak; do
        if [ "$mode" = strong ]; then batch=(--global-batch $((mb * max))); else batch=(--batch-per-device "$mb"); fi
        run "$BIN" scale --hardware "$out/profile.csv" --instance "this machine (per rank)" --model "$model" --seq "$seq" \
            --micro-batch "$mb" "${batch[@]}" --precision fp32 --nodes "$ranks" --usd-per-hour "$usd_rank" \
            --measured "$out/train_${mode}_${rl[0]}ranks.csv" --fit compute --compare "$out/sweep_$mode.csv" \
            --csv "$out/scale_$mode.csv" --plot "$out/scale_$mode.png"
    done
    run "$BIN" report --throughput "$out/sweep.csv" --throughput "$out/scale_strong.csv" --usd-per-hour "$usd_rank" \
        --out "$out/report"
fi
[ "$dry" = 1 ] || echo "bench/sweep.sh: wrote $out/ (ranks $ranks on $cores cores; strong: global batch $((mb * max)); weak: $mb x $seq per rank)" >&2
