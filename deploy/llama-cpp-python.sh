#!/usr/bin/env bash
# A real llama-cpp-python OpenAI-compatible server, .deploy/llama-cpp-python, for the test that runs
# the pipeline through `llm.baseUrl` against it (test/llm/llama-cpp-python.test.ts).
#   deploy/llama-cpp-python.sh          prints the venv's python last
# From PyPI's sdist (no CPU wheel is published there): pip builds llama.cpp with cmake, about 4
# minutes on 2 cores. Cached by lib.sh's cached_venv.
set -euo pipefail
LOG_TAG=llama-cpp-python
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

REQUIREMENTS=('llama-cpp-python[server]==0.3.36')

# install PY REQUIREMENT...: a portable CPU build (no -march=native: the venv may be copied to
# another machine), on the cores there are.
install() {
  local py="$1"
  shift
  log "pip install $* (builds llama.cpp: minutes)"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$py" -m pip install -q --disable-pip-version-check --no-binary llama-cpp-python "$@"
}

command -v cmake >/dev/null || die "cmake not found (Debian: apt-get install cmake build-essential)"
cached_venv "$STATE_ROOT/llama-cpp-python" install "${REQUIREMENTS[@]}"
echo "$PY"
