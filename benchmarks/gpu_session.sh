#!/usr/bin/env bash
# The one prepared script for a session lent a GPU machine (docs/performance.md, "On a
# GPU: the prepared session"). Run from the repository root, on that machine:
#
#     benchmarks/gpu_session.sh [SECONDS]        (default 420: the whole script's budget)
#
# 1. the tests of the device paths (every test that skips without CUDA runs there);
# 2. `banditkit bench --only device_rounds`: seconds per round of a neural policy of each
#    family on the CPU (one thread) and on the GPU, against each device's FLOP bound;
# 3. as much as the time left allows of one figure at the paper's horizon on the GPU:
#    the ensemble paper's Fig. 4(b) (T = 10,000; Neural-ES against Neural-UCB / TS on the
#    quadratic task, d = 50, K = 500), `reproduce --device cuda`, seeds one by one.
#
# Everything it reports goes to $OUT (default /tmp/gpu-session): log.txt, the bench's
# result.md / result.json, fig4b-runs.csv (one line per finished run: seconds, final
# regret) and report.md if the figure finished.
#
# That machine has PyTorch but not pydantic. Before the call, here (pip reaches the
# registries here, not there), put its wheels in .whl and carry it:
#
#     echo /.whl/ >> .git/info/exclude
#     python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#         --implementation cp --platform manylinux_2_17_x86_64 -d .whl \
#         pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 \
#         typing-inspection==0.4.5
#
# and call the device tool's `run` with carry [".whl"] and the command
# `benchmarks/gpu_session.sh 420`, timeout_s 540.
set -u
budget=${1:-420}
started=$(date +%s)
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
left() { echo $((budget - ($(date +%s) - started))); }

if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv 2>/dev/null

echo "== 1. device tests ($(left) s left)"
timeout 120 python3 -m pytest -q -x -p no:cacheprovider tests/policies/parts/test_compute.py \
    tests/policies/parts/test_device_gram.py tests/nn 2>&1 | tail -15

echo "== 2. bench device_rounds ($(left) s left)"
timeout $(( $(left) - 60 )) python3 -m banditkit bench --only device_rounds \
    --out /tmp/bench --rerun
cp /tmp/bench/device_rounds/result.md "$out/device_rounds.md" 2>/dev/null
cp /tmp/bench/device_rounds/result.json "$out/device_rounds.json" 2>/dev/null
cat "$out/device_rounds.md" 2>/dev/null

echo "== 3. ensemble fig4b at T = 10,000 on the GPU ($(left) s left)"
timeout $(( $(left) - 30 )) python3 -m banditkit reproduce ensemble --figure fig4b \
    --device cuda --jobs 8 --progress log --out /tmp/fig4b
python3 - "$out" /tmp/fig4b <<'EOF'
import shutil, sys
from pathlib import Path

import banditkit as bk

out, top = Path(sys.argv[1]), Path(sys.argv[2])
if (top / "fig4b" / "config.yaml").is_file():
    table = bk.load_runs(top / "fig4b")
    table["seconds"] = table["act_seconds"] + table["update_seconds"]
    runs = table.groupby(["policy", "seed"]).agg(
        rounds=("t", "max"),
        seconds=("seconds", "sum"),
        regret=("cumulative_regret", "last"),
    )
    runs.to_csv(out / "fig4b-runs.csv")
    print(runs.groupby("policy").agg(["count", "mean", "std"]).round(2).to_string())
if (top / "report.md").is_file():
    shutil.copy(top / "report.md", out / "report.md")
EOF
echo "== done in $(( $(date +%s) - started )) s"
