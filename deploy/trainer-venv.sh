#!/usr/bin/env bash
# Creates the trainer venv, .deploy/trainer-venv, for the tests that run real trainers on the feeder
# (test/services/trainers.test.ts: TRL's GRPOTrainer and verl's dataset and reward hooks).
#   deploy/trainer-venv.sh          prints the venv's python last
# Everything comes from PyPI, the one registry reachable here, so torch is the default wheel with its
# CUDA libraries (about 6 GB installed); the CPU-only wheel lives on download.pytorch.org.
# Cached by lib.sh's cached_venv.
set -euo pipefail
LOG_TAG=trainer-venv
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# torch 2.11 and transformers < 5.11 are what verl 0.9.1 supports (its vllm extra pins torch 2.11.0,
# its base pins transformers < 5.11); TRL 1.16 accepts both. The rest as resolved with them (2026-12).
REQUIREMENTS=(
  torch==2.11.0
  transformers==5.10.4
  trl==1.16.0
  verl==0.9.1
  tokenizers==0.22.2
  datasets==5.2.0
  accelerate==1.16.0
  pyarrow==26.0.1
  pandas==3.1.1
  pytest==9.2.0
)

# One pip call (pip_install), so one resolver sees all pins. The client is this clone's, read from
# its folder, never installed into the shared venv (another clone would run this one's code).
VENV_PATHS=("$REPO_ROOT/clients/python")
cached_venv "$STATE_ROOT/trainer-venv" pip_install "${REQUIREMENTS[@]}"
echo "$PY"
