#!/usr/bin/env bash
# The suite on the versions CI does not install: run it whenever capture, the registry or the
# dependencies change.
#
#   bash scripts/compat.sh torch-2.14 [PYTEST ARGS]   torch 2.14.1 + torchvision 0.29.1 (a 5.5 GB CUDA
#                                                     build that runs on the CPU), the newest of the rest
#   bash scripts/compat.sh lowest [PYTEST ARGS]       every lower bound pyproject.toml declares, pinned
#                                                     (torch, onnx, onnxruntime, transformers, ...)
#
# Each builds a fresh virtual environment under .compat/<profile> (gitignored; COMPAT_REUSE=1 keeps
# one that exists and installs only what the requirements gained), prints the resolved versions, then
# runs `python -m pytest -q` with the CI profile
# (PYTEST ARGS replace the default of the whole suite, e.g. `tests/test_llm.py`).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 CI="${CI:-true}"
profile="${1:?usage: bash scripts/compat.sh torch-2.14|lowest [PYTEST ARGS]}"
shift
venv=".compat/$profile"

lower_bounds() {  # name==version for every `name>=version` of the dependencies and the test extra
    python3 - <<'PY'
import re, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
for spec in project["dependencies"] + project["optional-dependencies"]["test"]:
    found = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*(?:,.*)?", spec)
    if found:
        print(f"{found[1]}=={found[2]}")
PY
}

if [[ "${COMPAT_REUSE:-0}" != 1 || ! -x "$venv/bin/python" ]]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    case "$profile" in
        torch-2.14)
            "$venv/bin/pip" install -q torch==2.14.1 torchvision==0.29.1
            "$venv/bin/pip" install -q -e ".[test]" ;;
        lowest)
            lower_bounds > "$venv/lowest.txt"
            cat "$venv/lowest.txt"
            "$venv/bin/pip" install -q "$(grep '^torch==' "$venv/lowest.txt")"
            "$venv/bin/pip" install -q -e ".[test]" -c "$venv/lowest.txt" ;;
        *)
            echo "unknown profile $profile: torch-2.14 or lowest" >&2
            exit 2 ;;
    esac
else
    # a kept environment still gets what the project's requirements gained since it was built
    case "$profile" in
        torch-2.14) "$venv/bin/pip" install -q -e ".[test]" ;;
        lowest) "$venv/bin/pip" install -q -e ".[test]" -c "$venv/lowest.txt" ;;
    esac
fi
"$venv/bin/python" scripts/versions.py
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
