#!/usr/bin/env bash
# GPU check in one command (about 5 to 8 minutes on one GPU):
#
#   bench/gpu_check.sh [flags of bench/gpu_check.py, e.g. --steps=3]
#
# Splits GPU 0 into 4 logical GPUs, measures single-GPU, expert and random
# placements of the tiny and paper-size NMT in real sessions and in the
# simulator (costs profiled on that GPU), and prints both side by side; the
# results go to gpu_check.json / gpu_check.md in $OUT if set, else here.
# Without a GPU it prints "no GPU: skipped" and exits 0. It sets up .venv
# (make .venv/.installed) when missing and runs with .venv/bin/python.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"
LIMIT_S="${GPU_CHECK_LIMIT_S:-470}"  # hard stop, seconds; the Python side stops starting models at 420 s

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no GPU: skipped (nvidia-smi finds no NVIDIA GPU on this machine)"
  exit 0
fi
nvidia-smi -L | head -n 1

if [ ! -x .venv/bin/python ] || [ ! -f .venv/.installed ]; then
  echo "setting up .venv (make .venv/.installed) ..."
  if ! make .venv/.installed; then
    echo "gpu_check: could not set up .venv (make .venv/.installed failed; it needs PyPI)" >&2
    exit 1
  fi
fi
PY=.venv/bin/python
tf_sees_gpu() {
  "$PY" -c 'import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices("GPU") else 1)' \
    >/dev/null 2>&1
}
if ! tf_sees_gpu; then
  # pip's tensorflow finds CUDA only through the NVIDIA wheels of its [and-cuda] extra.
  ver="$("$PY" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
  echo "TensorFlow ${ver:-?} sees no GPU; installing tensorflow[and-cuda]==${ver} ..."
  if [ -z "$ver" ] || ! .venv/bin/pip install -q "tensorflow[and-cuda]==${ver}" || ! tf_sees_gpu; then
    echo "gpu_check: a GPU is present but TensorFlow cannot use it (CUDA libraries missing or not matching;" \
      "try: .venv/bin/pip install 'tensorflow[and-cuda]')" >&2
    exit 1
  fi
fi
exec timeout --signal=INT --kill-after=20 "$LIMIT_S" "$PY" -m bench.gpu_check "$@"
