#!/usr/bin/env bash
# make report: measure this machine and write out/ (report.md, the CSVs, the plot).
# Everything is written to a temporary directory first and renamed to out/ at the end, so an
# interrupted run never leaves a report that looks complete.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
BIN=${COSTBENCH:-./costbench}
tmp=$(mktemp -d "${OUT%/}.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step() { printf '%s\n' "costbench report: $*" >&2; }

step "peak (FMA, BF16, memory bandwidth, sgemm per OpenBLAS kernel)"
"$BIN" peak --csv "$tmp/peak.csv" > "$tmp/peak.txt"
step "matmul (short sweep)"
"$BIN" matmul --n 1024,2048,4096,8192 --k 768,2048,4096 --budget-s 90 \
    --csv "$tmp/matmul.csv" --plot "$tmp/matmul.png" > "$tmp/matmul.txt"
step "matmul (pythia-160m training-step shapes, micro-batch 4 x 512)"
"$BIN" matmul --shapes transformer --model pythia-160m --micro-batch 4 --seq 512 --budget-s 60 \
    --csv "$tmp/matmul_pythia-160m.csv" > "$tmp/matmul_pythia-160m.txt"
step "rope (pythia-160m, pythia-6.9b, neox-20b at 8192 tokens)"
"$BIN" rope --csv "$tmp/rope.csv" > "$tmp/rope.txt"
step "train (pythia-70m, micro-batch 4 x seq 512, 10 steps)"
"$BIN" train --model pythia-70m --micro-batch 4 --seq 512 --steps 10 --budget-s 30 \
    --csv "$tmp/train_log.csv" --summary-csv "$tmp/train.csv" --breakdown-csv "$tmp/train_breakdown.csv" > "$tmp/train.txt"

{
    echo "# costbench report: $(grep -m1 '^# ' "$tmp/peak.txt" | sed 's/^# //')"
    echo
    echo "Every figure below was **measured on this machine** in this run; nothing is imported. The only derived figures are labelled as predictions: the step totals of the transformer matmul table (count x measured median) and the predicted_ms column of the training step's breakdown."
    echo
    for part in peak:"Machine limits (costbench peak)" \
                matmul:"sgemm sweep, (N x K) @ (K x K) (costbench matmul)" \
                matmul_pythia-160m:"One pythia-160m training step's matmuls (costbench matmul --shapes transformer)" \
                rope:"Rotary embedding variants (costbench rope)" \
                train:"Training step, pythia-70m (costbench train)"; do
        name=${part%%:*}
        echo "## ${part#*:}"
        echo
        echo '```'
        cat "$tmp/$name.txt"
        echo '```'
        echo
        echo "CSV: \`$name.csv\`"
        echo
    done
    echo "![sgemm GFLOP/s against N, one line per K](matmul.png)"
} > "$tmp/report.md"

rm -rf "$OUT.old"
[ -e "$OUT" ] && mv "$OUT" "$OUT.old"
chmod 755 "$tmp"
mv "$tmp" "$OUT"
rm -rf "$OUT.old"
trap - EXIT
step "wrote $OUT/report.md"
