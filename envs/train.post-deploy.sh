#!/usr/bin/env bash
# Runs inside the new conda environment (Snakemake's post-deploy hook): installs polyrag from
# this checkout, found from this script's own path, with its pinned dependencies.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python -m pip install --no-input -e "${repo}[hf]"
