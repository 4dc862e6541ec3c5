#!/usr/bin/env bash
# Loss and gradient-norm trajectories across precisions: trains one model on one dataset with one
# seed four times, then compares the runs step by step with `costbench trajectory`:
#   fp32          --precision fp32 (the baseline)
#   bf16-mixed    --precision bf16-mixed: fp32 master weights and AdamW moments, bf16 matmul inputs
#   bf16-sr       --precision bf16 --rounding stochastic: weights, gradients and moments in bf16,
#                 the update rounded stochastically (as Trainium trains)
#   bf16-nearest  --precision bf16 --rounding nearest: the same, rounded to nearest
# Writes into --out DIR (which must not exist, or be empty): LABEL_log.csv, LABEL_summary.csv and
# LABEL.txt of each run, trajectory.txt (costbench trajectory's table) and DIR/trajectory/, the
# directory costbench trajectory writes: loss.png, grad_norm.png, trajectory.md, trajectory.csv.
#
#   bench/trajectory.sh --out traj                              # pythia-14m, 300 steps, 4 x 256
#   bench/trajectory.sh --steps 80 --instance c7a.large --out traj
#   bench/trajectory.sh --model pythia-70m --data PREFIX --lr 3e-4 --seed 7 --out traj
# Flags: --model NAME (pythia-14m) --steps N (300) --micro-batch B (4) --seq T (256) --lr LR (6e-4)
#        --seed S (1234) --data PREFIX (default: a dataset built with `costbench dataset build`
#        from this repository's own text) --instance TYPE [--pricing OPTION] | --usd-per-hour USD
#        (the price of tokens/$; none by default) --out DIR (required)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BIN=${COSTBENCH:-$root/costbench}
model=pythia-14m steps=300 mb=4 seq=256 lr=6e-4 seed=1234 data="" out=""
price=()
die() { echo "error: bench/trajectory.sh: $1" >&2; [ -z "${2:-}" ] || echo "hint: $2" >&2; exit "${3:-1}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --model|--steps|--micro-batch|--seq|--lr|--seed|--data|--out|--instance|--pricing|--usd-per-hour)
            [ $# -ge 2 ] && [ -n "$2" ] || die "flag '$1' needs a value" "" 2 ;;&
        --model) model=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --micro-batch) mb=$2; shift 2 ;;
        --seq) seq=$2; shift 2 ;;
        --lr) lr=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --data) data=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --instance|--pricing|--usd-per-hour) price+=("$1" "$2"); shift 2 ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) die "unknown flag '$1'" "bench/trajectory.sh --help lists the flags" 2 ;;
    esac
done
[ -n "$out" ] || die "flag '--out DIR' is required" "" 2
out=${out%/}
# costbench trajectory --run LABEL=LOG,SUMMARY splits at the first ','
case $out in *,*) die "flag '--out': '$out' contains a ',', which costbench trajectory's --run LABEL=LOG,SUMMARY cannot carry" "" 2 ;; esac
[ -x "$BIN" ] || die "'$BIN' is not an executable" "build it with make, or name it with COSTBENCH=PATH"
if [ -e "$out" ] || [ -L "$out" ]; then
    [ -d "$out" ] && [ ! -L "$out" ] && [ -z "$(ls -A -- "$out")" ] ||
        die "'$out' exists and is not an empty directory; nothing changed" "choose a new directory with --out" 2
fi
# the two full-bf16 runs need `costbench train --precision bf16 --rounding nearest|stochastic`
help=$("$BIN" train --help)
if ! grep -q -- '--rounding' <<< "$help"; then
    die "'$BIN train' has no '--rounding' flag, so the bf16-sr and bf16-nearest runs (--precision bf16 --rounding stochastic|nearest) cannot be made; nothing was run" \
        "build a costbench whose 'costbench train --help' lists --rounding"
fi

labels=(fp32 bf16-mixed bf16-sr bf16-nearest)
# precision_flags LABEL: the train flags of a run, into the array pflags
precision_flags() {
    case "$1" in
        fp32) pflags=(--precision fp32) ;;
        bf16-mixed) pflags=(--precision bf16-mixed) ;;
        bf16-sr) pflags=(--precision bf16 --rounding stochastic) ;;
        bf16-nearest) pflags=(--precision bf16 --rounding nearest) ;;
    esac
}
step() { printf '%s\n' "bench/trajectory.sh: [${SECONDS}s] $*" >&2; }

mkdir -p -- "$out"
corpus_dir=""
trap '[ -z "$corpus_dir" ] || rm -rf -- "$corpus_dir"' EXIT
if [ -z "$data" ]; then
    corpus_dir=$(mktemp -d)
    data=$corpus_dir/corpus
    step "dataset: this repository's own text (costbench dataset build)"
    "$BIN" dataset build --out "$data" "$root"/README.md "$root"/common/*.c "$root"/kernels/*.c "$root"/model/*.c \
        "$root"/bench/*.c "$root"/report/*.c "$root"/src/*.c > /dev/null
fi
runs=()
for label in "${labels[@]}"; do
    precision_flags "$label"
    step "train $label (${pflags[*]}): $model, $steps steps of $mb x $seq tokens, lr $lr, seed $seed"
    "$BIN" train --model "$model" --micro-batch "$mb" --seq "$seq" --steps "$steps" --lr "$lr" --seed "$seed" --data "$data" \
        "${pflags[@]}" --no-predict --quiet --csv "$out/${label}_log.csv" --summary-csv "$out/${label}_summary.csv" \
        > "$out/$label.txt" || die "the $label run failed (its output: $out/$label.txt)"
    runs+=(--run "$label=$out/${label}_log.csv,$out/${label}_summary.csv")
done
step "costbench trajectory"
# a directory of its own: costbench trajectory replaces only a directory of the files it wrote
"$BIN" trajectory "${runs[@]}" --baseline fp32 "${price[@]}" --out "$out/trajectory" > "$out/trajectory.txt"
cat -- "$out/trajectory.txt"
step "wrote $out/ (each run's files, trajectory.txt; trajectory/: trajectory.md, trajectory.csv, loss.png, grad_norm.png)"
