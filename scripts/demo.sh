#!/usr/bin/env bash
# The main job on the built-in digits: set up .venv, then preprocess -> train -> evaluate -> export.
# Extra arguments go to `python -m trainer.task` (e.g. --train-steps 500).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh cpu
exec .venv/bin/python -m trainer.task "$@"
