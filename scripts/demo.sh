#!/usr/bin/env bash
# The main job on the built-in digits: set up .venv, then preprocess -> train -> evaluate -> export.
# Extra arguments go to `python -m trainer.task` (e.g. --train-steps 500).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh cpu,plots
if [ ! -f runs/digits/data/metadata.json ]; then
  .venv/bin/python -m preprocessing --source digits --output runs/digits/data
fi
exec .venv/bin/python -m trainer.task --data-dir runs/digits/data --job-dir runs/digits "$@"
