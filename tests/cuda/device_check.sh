#!/bin/bash
# The GPU checks in one run (the machine with a GPU; see tests/cuda/): device facts, the
# GPU tests, the op table on cuda, then bench/cuda_device.py. Output also goes under $OUT.
# Each stage has its own time limit so a slow stage cannot starve the next.
#   OUT=/tmp/out bash tests/cuda/device_check.sh [tests-seconds] [optable-seconds] [bench-seconds]
set -u
OUT=${OUT:-/tmp/ember-device-out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
T1=${1:-80}; T2=${2:-100}; T3=${3:-110}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | tee "$OUT/device.txt"
python3 -c "import sys, cupy, numpy, torch; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)" 2>&1 | tee -a "$OUT/device.txt"
lscpu | grep 'Model name' | tee -a "$OUT/device.txt"
echo "== GPU tests"
EMBER_FAILURE_LOG="$OUT/failures.txt" timeout "$T1" python3 -m pytest -q -p no:cacheprovider \
    tests/cuda/test_cuda_device.py tests/cuda/test_allocator_streams.py -rfs --tb=short \
    --timeout=45 2>&1 | tee "$OUT/tests.txt" | tail -60
echo "== op table on cuda"
EMBER_FAILURE_LOG="$OUT/optable_failures.txt" timeout "$T2" python3 -m pytest -q \
    -p no:cacheprovider tests/cuda/test_op_table_cuda.py -n 12 --tb=no -q 2>&1 \
    > "$OUT/optable.txt"
tail -3 "$OUT/optable.txt"
echo "op-table failures: $(wc -l < "$OUT/optable_failures.txt" 2>/dev/null || echo 0)"
awk -F'\] \[call\]: ' '{print substr($2,1,90)}' "$OUT/optable_failures.txt" 2>/dev/null | sed 's/[0-9]\+/N/g' | sort | \
    uniq -c | sort -rn | head -25
echo "== bench"
timeout "$T3" python3 bench/cuda_device.py --json "$OUT/bench.json" --profile 2>&1 | \
    tee "$OUT/bench.txt" | grep -v "^ *[0-9]" | head -80
echo "== done"
