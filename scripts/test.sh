#!/usr/bin/env bash
# The whole test suite: set up .venv with the test tools, lint, then run every test.
# Extra arguments go to pytest (e.g. -k input).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh cpu,test,beam,plots,vertex,docs
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Compiled once here, the project's modules load from bytecode in each of the hundreds of processes the tests start;
# where PYTHONDONTWRITEBYTECODE is set, each would compile them again (0.2 s of a trainer's start).
.venv/bin/python -m compileall -q -j 0 dataformat preprocessing trainer benchmarks scripts
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"  # a broken link fails
# One worker a core (at least 2, at most 8), each taking whole test files, so that a file's fixtures are built
# once (session ones, once a worker): on 2 cores the suite took 723 s this way against about 1,000 s in one
# process, since most tests wait on the processes, clusters and servers they start. The suite is CPU-bound at 2
# workers on 2 cores, so more cores take more workers. Files go out in tests/conftest.py's order, slowest first
# (xdist would otherwise send the files of most tests first, and a long file of few tests would run alone last).
cores="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
workers=$((cores < 2 ? 2 : cores > 8 ? 8 : cores))
exec .venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
