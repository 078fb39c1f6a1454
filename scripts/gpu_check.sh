#!/usr/bin/env bash
# The GPU check, in one go on a machine with a CUDA GPU (about 5 of its 10 minutes on one
# H200): the GPU-marked tests (the simulator-vs-CUDA scenario comparison of
# tests/sim/test_gpu_parity.py and the demo comparison of tests/runner/test_gpu.py), then
# every registered demo on CUDA and simulated, side by side. Writes one summary,
# <dir>/gpu-check.md, plus each demo's report, metrics and plot under <dir>/demos/.
# Without CUDA (or without torch) the GPU parts are skipped and the summary says so.
#
#   scripts/gpu_check.sh [DIR]     DIR defaults to $OUT, then ./gpu-check
#
# Exit status: 0 when everything that ran passed (or was skipped for want of CUDA), 1 if not.
set -uo pipefail
cd "$(dirname "$0")/.."

DIR="${1:-${OUT:-gpu-check}}"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
QUIZBOT=("$PY" -m bot.cli)
mkdir -p "$DIR/demos"
LOG="$DIR/gpu-check.log"
: >"$LOG"
START=$(date +%s)

# What is here: the device line every GPU demo will print.
if "$PY" - >"$DIR/device.txt" 2>>"$LOG" <<'EOF'
import sys
try:
    import torch
except ImportError:
    print("torch not installed")
    sys.exit(3)
if not torch.cuda.is_available():
    print(f"no CUDA · torch {torch.__version__}")
    sys.exit(3)
print(f"{torch.cuda.get_device_name()} · torch {torch.__version__} · CUDA {torch.version.cuda}")
EOF
then CUDA=1; else CUDA=0; fi
echo "device: $(cat "$DIR/device.txt")" | tee -a "$LOG"

# 1. The GPU-marked tests (they skip themselves without CUDA). -p no:cacheprovider: leave no
# .pytest_cache behind on a borrowed machine.
T0=$(date +%s)
timeout 420 "$PY" -m pytest -m gpu -p no:cacheprovider -q -rs \
  --junitxml="$DIR/gpu-tests.xml" tests >>"$LOG" 2>&1
TESTS_RC=$?
echo "gpu tests: exit $TESTS_RC in $(($(date +%s) - T0)) s" | tee -a "$LOG"

# 2. Every demo on CUDA, then simulated (the simulator's figures beside the GPU's).
DEMOS_RC=0
if [ "$CUDA" = 1 ]; then
  for id in $("${QUIZBOT[@]}" demo list | awk 'NF && $1 != "params:" {print $1}'); do
    for mode in cuda simulated; do
      flag=()
      [ "$mode" = simulated ] && flag=(--simulate)
      T0=$(date +%s)
      if ! timeout 150 "${QUIZBOT[@]}" demo run "$id" "${flag[@]}" --timeout 120 \
        --out "$DIR/demos/$id/$mode" >>"$LOG" 2>&1; then
        DEMOS_RC=1
      fi
      echo "demo $id ($mode): $(($(date +%s) - T0)) s" | tee -a "$LOG"
    done
  done
else
  echo "demos on CUDA: skipped (no CUDA here)" | tee -a "$LOG"
fi

"$PY" scripts/gpu_check_report.py "$DIR" "$CUDA" "$TESTS_RC" "$DEMOS_RC" \
  "$(($(date +%s) - START))" >"$DIR/gpu-check.md"
REPORT_RC=$?
cat "$DIR/gpu-check.md"
exit "$REPORT_RC"
