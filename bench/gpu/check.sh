#!/bin/sh
# check.sh: the GPU microbenchmarks on a rented GPU node in one short run (minutes): build with the
# CUDA toolkit alone, the kernels against their references (make test-gpu), then the sweeps, each
# CSV into OUTDIR, a summary last.
#   bench/gpu/check.sh [OUTDIR]        (default out/gpu)
# Environment: MODEL (the preset of --shapes transformer and rope, default llama2-7b), JOBS (make -j),
# QUICK=1 (a 2 x 2 sweep: a smoke test of a few seconds).
set -eu
out=${1:-out/gpu}
model=${MODEL:-llama2-7b}
mkdir -p "$out"
cd "$(dirname "$0")/../.."

echo "== build (make gpu)"
make gpu -j"${JOBS:-8}" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
./costbench-gpu info | tee "$out/info.txt"

echo "== make test-gpu"
make --no-print-directory test-gpu 2>&1 | tee "$out/test-gpu.log"

if [ "${QUICK:-0}" = 1 ]; then
    ns=4096,16384 ks=4096,8192
else
    ns=1024,2048,4096,8192,16384,32768 ks=1024,2048,4096,8192,12288,16384
fi
echo "== peak"
./costbench-gpu peak --csv "$out/peak.csv" | tee "$out/peak.txt"
echo "== matmul sweep"
./costbench-gpu matmul --n "$ns" --k "$ks" --csv "$out/matmul_sweep.csv" >"$out/matmul_sweep.txt"
echo "== matmul --shapes transformer --model $model"
./costbench-gpu matmul --shapes transformer --model "$model" --dtype bf16,fp8 --csv "$out/matmul_$model.csv" \
    | tee "$out/matmul_$model.txt"
echo "== rope"
./costbench-gpu rope --dtype fp32,bf16 --csv "$out/rope.csv" | tee "$out/rope.txt"

echo "== summary: the sweep's % of each precision's dense peak (data sheet), by k and n"
for dt in bf16 fp16 tf32 fp8; do
    awk -F, -v dt=$dt 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["dtype"] == dt { printf "%s k %6d n %6d  %8.1f TFLOP/s  %5.1f%%\n", dt, $c["k"], $c["n"],
                            $c["gflops_median"] / 1000, $c["pct_of_peak"] }' "$out/matmul_sweep.csv" | sort -k3,3n -k5,5n
done
