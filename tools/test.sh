#!/usr/bin/env bash
# The test command: style and types are tests too, then the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check assistant lab tests tools
python3 -m ruff format --check assistant lab tests tools
python3 -m mypy
python3 -m pytest "$@"
