"""Fixtures: a feeder over fixture data (test/feeder/serve-fixture.ts), started, killed and restarted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "clients" / "python"))


class FeederProcess:
    def __init__(self, db: Path, **opts):
        self.db = db
        self.opts = opts
        self.proc = None
        self.url = None

    def start(self) -> str:
        args = ["npx", "tsx", "test/feeder/serve-fixture.ts", "--db", str(self.db)]
        for k, v in self.opts.items():
            args += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            raise RuntimeError(f"feeder did not start: {line} {self.proc.stderr.read()}")
        self.url = line
        return line

    def kill(self) -> None:
        """kill -9: no clean shutdown."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)


@pytest.fixture
def feeder_factory(tmp_path):
    started = []

    def make(**opts) -> FeederProcess:
        f = FeederProcess(tmp_path / f"feeder-{len(started)}.sqlite", **opts)
        f.start()
        started.append(f)
        return f

    yield make
    for f in started:
        f.kill()


@pytest.fixture
def feeder(feeder_factory):
    return feeder_factory(items=200, lease_ms=60000, batch_size=16)
