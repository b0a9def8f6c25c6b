import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The Python client's pytest suite (clients/python/tests) against feeders it starts itself. CI
// (.ci/run) makes the virtual environment first; without it this test fails, it does not skip.
const PYTHON = '.deploy/py-venv/bin/python';

describe('python client', () => {
  it('passes its pytest suite: reward table, lease/ack/extend, exports in pyarrow and datasets, the GRPO smoke run killed and restarted', () => {
    expect(existsSync(PYTHON), `${PYTHON} missing: python3 -m venv .deploy/py-venv (see .ci/run)`).toBe(true);
    // test_trl.py and test_verl.py need torch, TRL and verl: test/services/trainers.test.ts runs them in the trainer venv.
    const trainerSuites = ['test_trl.py', 'test_verl.py'].map((f) => `--ignore=clients/python/tests/${f}`);
    const r = spawnSync(
      PYTHON,
      ['-m', 'pytest', 'clients/python/tests', ...trainerSuites, '-q', '-p', 'no:cacheprovider'],
      {
        encoding: 'utf8',
        timeout: 280_000,
      },
    );
    const tail = `${r.stdout}\n${r.stderr}`.slice(-3000);
    expect(r.status, tail).toBe(0);
    expect(r.stdout).toMatch(/\d+ passed/);
    expect(r.stdout).not.toMatch(/skipped|failed|error/);
  }, 300_000);
});
