#!/usr/bin/env bash
# make report: measure this machine and write out/ (report.md, the CSVs, the plots): this
# machine's training throughput in bf16 mixed precision, full bf16 and fp32, priced as INSTANCE (or at
# USD_PER_HOUR), Table 1's reference rows, a NeoX-20B scaling curve on trn1.32xlarge, and the scaling
# model scored on the published runs of data/reference/published (costbench validate).
# Time on a 2-core Zen 5 (measured 3 min 7 s; the budgets keep it under 10 minutes): peak 7 s;
# matmul sweep in fp32 and bf16 18 s (at most 90 s, --budget-s); pythia-160m step matmuls 13 s
# (at most 60 s); rope 11 s; pythia-70m in bf16-mixed 25 s, bf16 25 s and fp32 37 s (10 steps each,
# the calibration's matmuls at most 25 s); pythia-14m precision trajectories (bench/trajectory.sh:
# fp32, bf16-mixed, bf16-sr, bf16-nearest, 150 steps each) ~80 s (300 steps took 154 s on a 2-core
# Zen 5); scale, validate and report seconds.
# Everything is written to a temporary directory first and renamed to out/ at the end, so an
# interrupted run never leaves a report that looks complete.
#   make report INSTANCE=m7i.xlarge        price this machine as that instance type (data/prices.csv)
#   make report USD_PER_HOUR=0.25          or at this price per hour
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
BIN=${COSTBENCH:-./costbench}
INSTANCE=${INSTANCE:-}
USD_PER_HOUR=${USD_PER_HOUR:-}
if [ -n "$USD_PER_HOUR" ]; then
    price_flags=(--usd-per-hour "$USD_PER_HOUR")
    priced_as="at \$$USD_PER_HOUR per hour (USD_PER_HOUR)"
else
    # default: AWS c7a.large, 2 cores of a Zen 4 with AVX-512 and AVX512_BF16, the closest listed match
    # for a 2-core AVX-512 machine; say which instance you run on with INSTANCE=
    price_flags=(--instance "${INSTANCE:-c7a.large}")
    priced_as="as ${INSTANCE:-c7a.large} ${INSTANCE:+(INSTANCE)}${INSTANCE:-(the default: set INSTANCE= or USD_PER_HOUR= to price your own instance)}"
fi
OUT=${OUT%/}
MARKER=.costbench-make-report   # the list of files this script wrote into $OUT

# $OUT is replaced only when this script wrote it (its marker lists every file in it), or it is
# empty: nothing else is ever deleted.
out_is_ours() {
    [ -d "$OUT" ] && [ ! -L "$OUT" ] || return 1
    [ -z "$(ls -A "$OUT")" ] && return 0
    [ -f "$OUT/$MARKER" ] || return 1
    local f
    for f in "$OUT"/* "$OUT"/.[!.]*; do
        [ -e "$f" ] || continue
        f=${f##*/}
        [ "$f" = "$MARKER" ] && continue
        grep -qxF -- "$f" "$OUT/$MARKER" || return 1
    done
}
# removes a directory this script wrote: the files its marker lists, the marker, the directory
remove_ours() {
    local f
    while IFS= read -r f; do
        case $f in */*|.|..|'') continue ;; esac
        rm -f -- "$1/$f"
    done < "$1/$MARKER"
    rm -f -- "$1/$MARKER"
    rmdir -- "$1"
}
if [ -e "$OUT" ] && ! out_is_ours; then
    echo "error: '$OUT' exists and was not written by make report (no $MARKER listing all its files); nothing changed" >&2
    echo "hint: move it away, or choose another directory with OUT=DIR" >&2
    exit 2
fi

tmp=$(mktemp -d "$OUT.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step() { printf '%s\n' "costbench report: [${SECONDS}s] $*" >&2; }

step "peak (FMA, BF16, memory bandwidth, sgemm per OpenBLAS kernel)"
"$BIN" peak --csv "$tmp/peak.csv" > "$tmp/peak.txt"
step "matmul (short sweep, fp32 and bf16)"
"$BIN" matmul --n 1024,2048,4096,8192 --k 768,2048,4096 --dtype fp32,bf16 --budget-s 90 \
    --csv "$tmp/matmul.csv" --plot "$tmp/matmul.png" > "$tmp/matmul.txt"
step "matmul (pythia-160m training-step shapes, micro-batch 4 x 512)"
"$BIN" matmul --shapes transformer --model pythia-160m --micro-batch 4 --seq 512 --budget-s 60 \
    --csv "$tmp/matmul_pythia-160m.csv" > "$tmp/matmul_pythia-160m.txt"
step "rope (pythia-160m, pythia-6.9b, neox-20b at 8192 tokens)"
"$BIN" rope --csv "$tmp/rope.csv" > "$tmp/rope.txt"
# bf16 mixed precision first: what users train in; full bf16 (stochastic rounding); then fp32, the
# same configuration
for prec in bf16-mixed bf16 fp32; do
    step "train (pythia-70m, micro-batch 4 x seq 512, 10 steps, $prec)"
    "$BIN" train --model pythia-70m --micro-batch 4 --seq 512 --steps 10 --budget-s 25 --precision "$prec" \
        --csv "$tmp/train_${prec}_log.csv" --summary-csv "$tmp/train_$prec.csv" \
        --breakdown-csv "$tmp/train_${prec}_breakdown.csv" > "$tmp/train_$prec.txt"
done

traj_steps=150
step "trajectory (pythia-14m on this repository's own text, $traj_steps steps each in fp32, bf16-mixed, bf16 with stochastic rounding and bf16 with round-to-nearest)"
bench/trajectory.sh --model pythia-14m --steps "$traj_steps" --micro-batch 4 --seq 256 "${price_flags[@]}" --out "$tmp/trajectory" > /dev/null
# flattened into out/ as trajectory_*: the panels get names of their own (the cost report's
# loss.png and grad_norm.png are other files), and every path the files name follows them. The
# runs' files are in $traj, costbench trajectory's in its own directory $traj/trajectory (with
# the marker that says costbench wrote it)
traj=$tmp/trajectory
mv -- "$traj/trajectory/loss.png" "$tmp/trajectory_loss.png"
mv -- "$traj/trajectory/grad_norm.png" "$tmp/trajectory_grad_norm.png"
for f in "$traj"/trajectory/trajectory.md "$traj"/trajectory/trajectory.csv "$traj"/*; do
    [ -f "$f" ] || continue
    name=${f##*/}
    case $name in trajectory.*) dst=$name ;; *) dst=trajectory_$name ;; esac
    sed -e "s#$traj/#trajectory_#g" -e 's#(loss\.png)#(trajectory_loss.png)#' -e 's#(grad_norm\.png)#(trajectory_grad_norm.png)#' \
        "$f" > "$tmp/$dst"
    rm -f -- "$f"
done
rm -f -- "$traj/trajectory/.costbench-trajectory"
rmdir -- "$traj/trajectory" "$traj"

step "scale (NeoX-20B on trn1.32xlarge from Table 1's 4-node point)"
"$BIN" scale --model neox-20b --instance trn1.32xlarge --tp 8 --pp 4 --seq 2048 --global-batch 16384 \
    --base-nodes 4 --base-seq-per-s 13.6 --nodes 4,8,16,32,64,128 --pricing reserved_3y \
    --compare data/reference/trn1_table1.csv \
    --csv "$tmp/scale_neox-20b.csv" --plot "$tmp/scale_neox-20b.png" > "$tmp/scale_neox-20b.txt"
step "validate (the step model scored on the published runs of data/reference/published)"
"$BIN" validate data/reference/published/*.csv --csv "$tmp/validate.csv" --summary-csv "$tmp/validate_summary.csv" \
    --plot "$tmp/validate.png" > "$tmp/validate.txt"
step "report (this machine in three precisions priced $priced_as; Table 1; the scaling curve)"
"$BIN" report --throughput "$tmp/train_bf16-mixed.csv" --throughput "$tmp/train_bf16.csv" --throughput "$tmp/train_fp32.csv" \
    --throughput data/reference/trn1_table1.csv \
    --throughput "$tmp/scale_neox-20b.csv" "${price_flags[@]}" --pricing auto,on_demand \
    --out "$tmp/cost" > "$tmp/cost.txt"
mv "$tmp/cost/report.csv" "$tmp/report.csv"
for f in "$tmp"/cost/*.png; do mv "$f" "$tmp/"; done

# isa_notes NAME TITLE REGEX: the '#' lines of $tmp/NAME.txt matching REGEX (each once), as a list
isa_notes() {
    local lines
    lines=$(grep -E -- "$3" "$tmp/$1.txt" | awk '!seen[$0]++' | sed 's/^# /    - /') || true
    echo "- $2 (\`$1.txt\`):"
    if [ -n "$lines" ]; then printf '%s\n' "$lines"; else echo "    - (no such line in its output)"; fi
}
{
    echo "# costbench report: $(grep -m1 '^# ' "$tmp/peak.txt" | sed 's/^# //')"
    echo
    echo "Three kinds of figures, each labelled: **measured here** (this machine, this run: every benchmark below, the three pythia-70m training rows and the pythia-14m precision trajectories), **imported** (Table 1 from the AWS Neuron documentation, data/reference/trn1_table1.csv) and **predicted** (the NeoX-20B scaling curve of \`costbench scale\`, calibrated on Table 1's 4-node point; the step totals of the transformer matmul table; the predicted_ms column of the training step's breakdown). This machine is priced $priced_as."
    echo
    echo "This machine trains pythia-70m three times in the same configuration: in bf16 mixed precision (fp32 master weights and AdamW moments, bf16 matmul inputs, fp32 accumulation: the precision GPU users train in), in full bf16 with stochastic rounding (weights, gradients and AdamW moments in bf16, as Trainium trains: precision bf16-sr) and in fp32; the rows are priced side by side (column Precision). Each MFU is against the peak of its run's precision (the fp32 FMA peak, or the bf16 matrix peak: AMX tiles where the CPU has them, else AVX512_BF16), measured in the same run. Which instruction set and which peak each figure is against, as the runs printed it:"
    echo
    isa_notes train_bf16-mixed "Training step, bf16-mixed" '^# (precision |mfu/hfu: |fp32 products|OpenBLAS kernel)'
    isa_notes train_bf16 "Training step, full bf16 (bf16-sr)" '^# (precision |mfu/hfu: |fp32 products|OpenBLAS kernel)'
    isa_notes train_fp32 "Training step, fp32" '^# (precision |mfu/hfu: |fp32 products|OpenBLAS kernel)'
    isa_notes matmul "Matmul sweep, fp32 and bf16" '^# (pct_of_peak|oneDNN|bf16|OpenBLAS kernel|OPENBLAS_CORETYPE)'
    isa_notes peak "Machine limits" '^# .*([Pp]eak|probe skipped)'
    echo
    # the cost report's own sections, without its title line
    sed '1,/^## /{/^## /!d}' "$tmp/cost/report.md"
    echo
    echo "## Precision and quality: loss and gradient-norm trajectories"
    echo
    echo "pythia-14m trained four times on this repository's own text, $traj_steps steps of 4 x 256 tokens with one seed (the same initial weights, the same batches): **fp32**; **bf16-mixed** (fp32 master weights and AdamW moments, bf16 matmul inputs accumulated in fp32, as GPUs train); **bf16-sr** (weights, gradients and AdamW moments in bf16, every update rounded stochastically, as Trainium trains); **bf16-nearest** (the same with round-to-nearest). Every figure of this section is measured here, on this machine, by these four runs (loss, gradient norm, tokens/s, peak RSS) or derived from those measurements (tokens/\$ at this machine's price, the differences from fp32), as the notes under the table say (\`bench/trajectory.sh\`, \`costbench trajectory\`)."
    echo
    sed '1,/^$/d' "$tmp/trajectory.md"   # its table, notes and panels, without its title
    echo
    echo "CSV: \`trajectory.csv\`; each run's per-step log and summary: \`trajectory_LABEL_log.csv\`, \`trajectory_LABEL_summary.csv\`"
    echo
    echo "## NeoX-20B on trn1.32xlarge: predicted scaling (costbench scale)"
    echo
    echo '```'
    cat "$tmp/scale_neox-20b.txt"
    echo '```'
    echo
    echo "![NeoX-20B throughput against node count: model and Table 1](scale_neox-20b.png)"
    echo
    echo "CSV: \`scale_neox-20b.csv\`"
    echo
    echo "## How good are the predictions (costbench validate)"
    echo
    echo "The step model above, scored on what others measured: each file of data/reference/published (Megatron-LM 2020 and 2021, Korthikanti et al. 2022, llm-foundry on A100 40GB and 80GB, the Trainium Table 1) calibrated on its first row alone and asked for every other row, every field of each row (shape, layout, sharding, recomputation, batch, precision, device, network) taken from its columns. Beside it the naive baseline: the calibration row's model FLOP/s per device carried unchanged. Every figure of this section is **imported** (published seq/s) or **predicted** from one imported row; nothing here is measured on this machine. Error = predicted / published - 1; the summary's median and max |error| are over the rows predicted, the calibration rows left out, the naive's over the same rows."
    echo
    echo '```'
    sed -n '/^# per file/,$p' "$tmp/validate.txt"
    echo '```'
    echo
    echo "![Predicted against published seq/s, log-log, with the ±10% and ±25% bands](validate.png)"
    echo
    echo "CSV: \`validate.csv\` (one line per row: published, predicted, error, naive, and why a row has no prediction), \`validate_summary.csv\` (the table above)"
    echo
    for part in peak:"Machine limits (costbench peak)" \
                matmul:"Matmul sweep, fp32 and bf16, (N x K) @ (K x K) (costbench matmul --dtype fp32,bf16)" \
                matmul_pythia-160m:"One pythia-160m training step's matmuls (costbench matmul --shapes transformer)" \
                rope:"Rotary embedding variants (costbench rope)" \
                train_bf16-mixed:"Training step, pythia-70m in bf16 mixed precision (costbench train --precision bf16-mixed)" \
                train_bf16:"Training step, pythia-70m in full bf16 with stochastic rounding (costbench train --precision bf16)" \
                train_fp32:"Training step, pythia-70m in fp32 (costbench train --precision fp32)"; do
        name=${part%%:*}
        echo "## ${part#*:}"
        echo
        echo '```'
        cat "$tmp/$name.txt"
        echo '```'
        echo
        if [ -f "$tmp/$name.png" ]; then echo "![${part#*:}]($name.png)"; echo; fi
        echo "CSV: \`$name.csv\`"
        echo
    done
} > "$tmp/report.md.part"
# the notes name the files the report was built from: by their names inside out/
sed -e "s#$tmp/cost/##g" -e "s#$tmp/##g" "$tmp/report.md.part" > "$tmp/report.md"
rm -rf "$tmp/cost" "$tmp/report.md.part"

written=$(cd "$tmp" && ls -A)
printf '%s\n' "$written" > "$tmp/$MARKER"
chmod 755 "$tmp"
old=""
if [ -e "$OUT" ]; then
    old=$(mktemp -d "$OUT.old.XXXXXX") && rmdir "$old" && mv "$OUT" "$old"
fi
mv "$tmp" "$OUT"
trap - EXIT
if [ -n "$old" ]; then
    if [ -f "$old/$MARKER" ]; then remove_ours "$old"; else rmdir "$old"; fi
fi
step "wrote $OUT/report.md"
