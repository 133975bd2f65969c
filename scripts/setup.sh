#!/usr/bin/env bash
# Creates .venv (once) and installs this package into it with the given extras (default: cpu).
# Use PYTHON=/path/to/python3.X to choose the interpreter (3.9 to 3.11: TensorFlow 2.15's range).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-cpu}"
python="${PYTHON:-python3}"
if ! "$python" -c 'import sys; sys.exit(not (3, 9) <= sys.version_info[:2] <= (3, 11))'; then
  echo "error: $python is $("$python" --version 2>&1); TensorFlow 2.15 needs Python 3.9 to 3.11 (set PYTHON=...)" >&2
  exit 2
fi
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv with $("$python" --version 2>&1)" >&2
  "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
echo "Installing queue-trainer[$extras] into .venv" >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
