import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// deploy/lib.sh's cached_venv, which deploy/llama-cpp-python.sh and deploy/trainer-venv.sh share, in
// scratch state with a stand-in install (a line in a log instead of pip) and a stand-in python3.
const LIB = fileURLToPath(new URL('../../deploy/lib.sh', import.meta.url));
const state = mkdtempSync(join(tmpdir(), 'deploy-venv-'));
const INSTALLS = join(state, 'installs');
afterAll(() => rmSync(state, { recursive: true, force: true }));

// A stand-in python3 first on PATH: `-m venv DIR` makes DIR/bin/python at once (the real one takes
// seconds to bootstrap pip, minutes on a loaded machine); the venv logic is lib.sh's, not Python's.
const BIN = join(state, 'bin');
mkdirSync(BIN);
writeFileSync(
  join(BIN, 'python3'),
  `#!/usr/bin/env bash
case "$1" in
  --version) echo "Python 3.0.0-stand-in" ;;
  -m) [[ "$2" == venv ]] && mkdir -p "$3/bin" && printf '#!/bin/sh\\n' >"$3/bin/python" && chmod +x "$3/bin/python" ;;
  *) exit 1 ;;
esac
`,
  { mode: 0o755 },
);

function venv(...requirements: string[]) {
  const script = `
set -euo pipefail
source "${LIB}"
record() { echo "$*" >>"${INSTALLS}"; }
cached_venv "$STATE_ROOT/v" record ${requirements.map((r) => `'${r}'`).join(' ')}
echo "$PY"`;
  const r = spawnSync('bash', ['-c', script], {
    encoding: 'utf8',
    env: { ...process.env, BIOALCHEMY_DEPLOY_STATE: state, PATH: `${BIN}:${process.env.PATH}` },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').at(-1);
}
const installs = () => readFileSync(INSTALLS, 'utf8').trim().split('\n');

describe('cached_venv', () => {
  it('installs once per requirements, rebuilds for others or after a half-finished install', () => {
    const py = join(state, 'v', 'bin', 'python');
    expect(venv('a==1', 'b[x]==2')).toBe(py);
    expect(installs()).toEqual([`${py} a==1 b[x]==2`]);
    expect(venv('a==1', 'b[x]==2')).toBe(py);
    expect(installs()).toHaveLength(1);
    venv('a==2');
    expect(installs()).toEqual([`${py} a==1 b[x]==2`, `${py} a==2`]);
    // An install stopped before its marker was written.
    unlinkSync(join(state, 'v', '.requirements.sha256'));
    venv('a==2');
    expect(installs()).toHaveLength(3);
    // A bound, not a target: alone it takes under a second, but beside the fuzz suite on the loaded
    // 2-core machine its four scripts' processes took over a minute.
  }, 300_000);
});
