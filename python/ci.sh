#!/usr/bin/env bash
# The Python package's CI step (called by .ci/run): builds the wheel with maturin from PyPI,
# installs it into a fresh virtualenv with pyarrow and pytest, and runs python/tests against
# the built-in simulator. The virtualenvs live under a temporary folder, never in the repo.
# Skips (saying so) when python3 or the network for PyPI is missing, unless
# RINGBENCH_REQUIRE_PYTHON=1.
set -euo pipefail
cd "$(dirname "$0")"

skip() {
    if [ "${RINGBENCH_REQUIRE_PYTHON:-0}" = 1 ]; then
        echo "python package: $1" >&2
        exit 1
    fi
    echo "python package SKIPPED: $1"
    exit 0
}

command -v python3 >/dev/null 2>&1 || skip "no python3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/build" || skip "python3 -m venv failed (python3-venv missing?)"
"$work/build/bin/pip" install --quiet "maturin>=1.7,<2" || skip "pip install maturin failed (no network?)"

echo "== maturin build --release (the wheel: extension and the ringbench command)"
start=$(date +%s)
rm -f ../target/wheels/ringbench-*.whl
"$work/build/bin/maturin" build --release --interpreter "$work/build/bin/python"
echo "wheel built in $(( $(date +%s) - start )) s"

echo "== a fresh virtualenv: the wheel, pyarrow, pytest"
python3 -m venv "$work/test"
"$work/test/bin/pip" install --quiet ../target/wheels/ringbench-*.whl "pyarrow>=14" "pytest>=7"
# From outside the source tree: here, `import ringbench` would find python/ringbench (no
# extension in it) before the installed wheel.
(cd "$work" && "$work/test/bin/python" -c "import ringbench; s = ringbench.run(request_count=100); print('TTFT p50', s.latency_ms['ttft']['p50'], 'ms')")
"$work/test/bin/ringbench" --version

echo "== pytest python/tests"
cd tests
"$work/test/bin/python" -m pytest -q .
