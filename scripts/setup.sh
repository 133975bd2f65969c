#!/usr/bin/env bash
# Creates .venv (once) and installs this package into it with the given extras (default: cpu).
# TensorFlow 2.15 needs Python 3.9 to 3.11. Without PYTHON set, the first of these that is 3.9-3.11 is used:
# python3, python3.11, python3.10, python3.9 on PATH, then pyenv's 3.11.*, 3.10.*, 3.9.* (newest first);
# if there is none but uv is installed, `uv venv` makes .venv with a uv-managed Python 3.11.
# PYTHON=/path/to/python3.X is used as it is (and refused if it is not 3.9-3.11).
# An existing .venv is reused, so to change its Python remove .venv first.
#   scripts/setup.sh --find-python   prints the interpreter it would use (or uv:3.11) and exits; installs nothing
# It stays bash 3.2 compatible (macOS's /bin/bash).
set -euo pipefail
cd "$(dirname "$0")/.."

# "3.11" for an interpreter that runs; nothing for a missing or broken one, or a pyenv shim of an inactive version.
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }
in_range() { case "$1" in 3.9 | 3.10 | 3.11) return 0 ;; *) return 1 ;; esac; }
supported() { in_range "$(py_version "$1")"; }
# A .venv counts even when its python is a dangling link (the Python it was made with was removed).
have_venv() { [ -e .venv/bin/python ] || [ -L .venv/bin/python ]; }

# pyenv's interpreters, 3.11 first and newest patch first within each (sort -V: 3.11.10 after 3.11.9).
pyenv_pythons() {
  local root minor
  command -v pyenv >/dev/null || return 0
  root="$(pyenv root 2>/dev/null)" || return 0
  for minor in 3.11 3.10 3.9; do
    printf '%s\n' "$root/versions/$minor".*/bin/python | sort -rV
  done
}

# Sets $python to the interpreter to use: a path, or "uv:3.11"; exits 2 with one line if there is none.
find_python() {
  local name candidate found
  if [ -n "${PYTHON:-}" ]; then # the user's choice is not second-guessed, only checked
    python="$(command -v "$PYTHON" || echo "$PYTHON")"
    found="$(py_version "$python")"
    if [ -z "$found" ]; then
      echo "error: PYTHON=$PYTHON does not run; set it to a Python 3.9 to 3.11 (TensorFlow 2.15's range)" >&2
      exit 2
    elif ! in_range "$found"; then
      echo "error: PYTHON=$PYTHON is Python $found; TensorFlow 2.15 needs Python 3.9 to 3.11" >&2
      exit 2
    fi
    return
  fi
  for name in python3 python3.11 python3.10 python3.9; do
    python="$(command -v "$name" || true)"
    if [ -n "$python" ] && supported "$python"; then return; fi
  done
  while IFS= read -r candidate; do # unmatched globs come through as literal paths: -x drops them
    python="$candidate"
    if [ -x "$python" ] && supported "$python"; then return; fi
  done < <(pyenv_pythons)
  if command -v uv >/dev/null; then # uv fetches a Python 3.11 of its own if the machine has none
    python="uv:3.11"
    return
  fi
  found="$(py_version python3)"
  if [ -n "$found" ]; then found="python3 is $found"; else found="no working python3"; fi
  echo "error: no Python 3.9-3.11 found ($found); install python3.11 (apt install python3.11-venv," \
    "brew install python@3.11, or uv: https://docs.astral.sh/uv/) or set PYTHON=/path/to/python3.11" >&2
  exit 2
}

if [ "${1:-}" = --find-python ]; then
  find_python
  echo "$python"
  exit 0
fi

extras="${1:-cpu}"
# A set PYTHON is checked even when .venv exists (as before); the search itself only runs when .venv is to be made.
if [ -n "${PYTHON:-}" ] || ! have_venv; then find_python; fi
if have_venv; then
  found="$(py_version .venv/bin/python)"
  if [ -z "$found" ]; then
    echo "error: .venv/bin/python does not run (was its Python removed?); remove .venv (rm -rf .venv) and run again" >&2
    exit 2
  elif ! in_range "$found"; then
    echo "error: .venv has Python $found; TensorFlow 2.15 needs 3.9 to 3.11: remove .venv (rm -rf .venv) and run again" >&2
    exit 2
  fi
  echo "Using existing .venv ($(.venv/bin/python --version 2>&1)); remove .venv to recreate it" >&2
else
  if [ "$python" = uv:3.11 ]; then
    echo "Creating .venv with uv's Python 3.11 (no Python 3.9-3.11 found on PATH or in pyenv)" >&2
    create=(uv venv --seed --python 3.11 .venv) # --seed: uv leaves pip out unless asked, and pip installs below
  else
    echo "Creating .venv with $python ($("$python" --version 2>&1))" >&2
    create=("$python" -m venv .venv)
  fi
  # A half-made .venv (no pip: python3.X-venv not installed, no network for uv) would be reused next time and
  # fail there with a less clear error, so it goes.
  if ! "${create[@]}" || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    rm -rf .venv
    echo "error: could not create .venv with pip in it (see above); fix that and run scripts/setup.sh again" >&2
    exit 1
  fi
  .venv/bin/python -m pip install --quiet --upgrade pip
fi

# uv's flags for where pip is configured to find packages, since uv does not read pip's configuration: its
# index, extra indexes, find-links and constraints, and its certificates (as $cert). The last setting of each
# wins, as pip's environment variables, listed last, override its files. pip weighs every index alike; so must uv.
uv_sources() {
  local line key value index="" extra="" links="" constraints=""
  cert=""
  while IFS= read -r line; do
    key="${line%%=*}"
    key="${key##*.}"
    value="${line#*=}"
    value="${value#\'}"
    value="${value%\'}"
    case "$key" in
      index-url) index="$value" ;;
      extra-index-url) extra="$value" ;;
      find-links) links="$value" ;;
      constraint) constraints="$value" ;;
      cert) cert="$value" ;;
    esac
  done < <(.venv/bin/python -m pip config list 2>/dev/null)
  uv_flags=(--index-strategy unsafe-best-match)
  if [ -n "$index" ]; then uv_flags+=(--index-url "$index"); fi
  for value in $extra; do uv_flags+=(--extra-index-url "$value"); done
  for value in $links; do uv_flags+=(--find-links "$value"); done
  for value in $constraints; do uv_flags+=(--constraint "$value"); done
}

# uv installs the same packages as pip, bytecode included, in 54 s where pip took 130 s (the test extras into a new
# .venv, nothing cached): it downloads and unpacks in parallel. The uv on PATH if there is one, else one that pip
# installs into .venv; pip installs the packages itself where uv cannot be had or fails.
install_with_uv() {
  local uv
  uv="$(command -v uv || true)"
  if [ -z "$uv" ]; then
    uv=.venv/bin/uv
    .venv/bin/python -m pip install --quiet --disable-pip-version-check uv && [ -x "$uv" ] || return 1
  fi
  uv_sources
  (
    if [ -n "$cert" ]; then export SSL_CERT_FILE="$cert"; fi
    exec "$uv" pip install --quiet --python .venv/bin/python --compile-bytecode "${uv_flags[@]}" -e ".[$extras]"
  )
}

echo "Installing queue-trainer[$extras] into .venv" >&2
if ! install_with_uv; then
  echo "uv is not to be had or failed (see above); installing with pip instead" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
fi
