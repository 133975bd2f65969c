#!/usr/bin/env bash
# The whole test suite: set up .venv with the test tools, lint, then run every test.
# Extra arguments go to pytest (e.g. -k input).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh cpu,test,beam,plots,vertex,docs
.venv/bin/ruff check .
.venv/bin/ruff format --check .
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"  # a broken link fails
# Two workers, each taking whole test files, so that a file's fixtures are built once (session ones, once
# a worker): on 2 cores the suite took 723 s this way against about 1,000 s in one process, since most
# tests wait on the processes, clusters and servers they start. Files go out in tests/conftest.py's order, slowest
# first (xdist would otherwise send the files of most tests first, and a long file of few tests would run alone last).
exec .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
