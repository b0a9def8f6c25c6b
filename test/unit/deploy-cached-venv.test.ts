import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// deploy/lib.sh's cached_venv, which deploy/llama-cpp-python.sh and deploy/trainer-venv.sh share, in
// scratch state with a stand-in install (a line in a log instead of pip) and a stand-in python3.
const LIB = fileURLToPath(new URL('../../deploy/lib.sh', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'deploy-venv-'));
const CACHE = join(scratch, 'cache');
const INSTALLS = join(scratch, 'installs');
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// A stand-in python3 first on PATH: `-m venv [--without-pip] DIR` makes DIR/bin/python at once (the
// real one takes seconds to bootstrap pip, minutes on a loaded machine), whose `-c` prints DIR/site
// as its site-packages; the venv logic is lib.sh's, not Python's.
const BIN = join(scratch, 'bin');
mkdirSync(BIN);
writeFileSync(
  join(BIN, 'python3'),
  `#!/usr/bin/env bash
case "$1" in
  --version) echo "Python 3.0.0-stand-in" ;;
  -m) dir="\${@: -1}"; mkdir -p "$dir/bin" "$dir/site" && printf '#!/bin/sh\\necho %s/site\\n' "$dir" >"$dir/bin/python" && chmod +x "$dir/bin/python" ;;
  *) exit 1 ;;
esac
`,
  { mode: 0o755 },
);

/** cached_venv for the clone whose state is STATE, with VENV_PATHS as given. */
function venv(state: string, requirements: string[], paths: string[] = []) {
  const script = `
set -euo pipefail
source "${LIB}"
record() { echo "$*" >>"${INSTALLS}"; }
VENV_PATHS=(${paths.map((p) => `'${p}'`).join(' ')})
cached_venv "$STATE_ROOT/v" record ${requirements.map((r) => `'${r}'`).join(' ')}
echo "$PY"`;
  const r = spawnSync('bash', ['-c', script], {
    encoding: 'utf8',
    env: {
      ...process.env,
      BIOALCHEMY_DEPLOY_STATE: join(scratch, state),
      BIOALCHEMY_CACHE: CACHE,
      PATH: `${BIN}:${process.env.PATH}`,
    },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.trim().split('\n').at(-1);
}
const installs = () => readFileSync(INSTALLS, 'utf8').trim().split('\n');
const pth = (state: string) =>
  readFileSync(join(scratch, state, 'v', 'site', 'bioalchemy-shared.pth'), 'utf8');

describe('cached_venv', () => {
  it('installs once per requirements and machine, rebuilds for others or after a half-finished install', () => {
    const py = join(scratch, 'clone-a', 'v', 'bin', 'python');
    expect(venv('clone-a', ['a==1', 'b[x]==2'])).toBe(py);
    expect(installs()).toHaveLength(1);
    const [shared] = installs()[0]!.split(' ');
    // The packages go to the machine's cache, not to the clone.
    expect(shared!.startsWith(join(CACHE, 'venvs', 'v-'))).toBe(true);
    expect(installs()[0]).toBe(`${shared} a==1 b[x]==2`);
    expect(venv('clone-a', ['a==1', 'b[x]==2'])).toBe(py);
    expect(installs()).toHaveLength(1);
    venv('clone-a', ['a==2']);
    expect(installs()).toHaveLength(2);
    expect(installs()[1]).toMatch(/ a==2$/);
    // An install stopped before its marker was written.
    const second = installs()[1]!.split(' ')[0]!;
    unlinkSync(join(second.replace(/\/bin\/python$/, ''), '.complete'));
    venv('clone-a', ['a==2']);
    expect(installs()).toHaveLength(3);
  }, 300_000);

  it('gives a second clone the same packages without installing, and each clone its own paths', () => {
    const before = existsSync(INSTALLS) ? installs().length : 0;
    venv('clone-b', ['c==1'], ['/clone-b/clients/python']);
    venv('clone-c', ['c==1'], ['/clone-c/clients/python']);
    expect(installs()).toHaveLength(before + 1);
    const site = `${installs()
      .at(-1)!
      .split(' ')[0]!
      .replace(/\/bin\/python$/, '')}/site`;
    expect(pth('clone-b')).toBe(`import site; site.addsitedir('${site}')\n/clone-b/clients/python\n`);
    expect(pth('clone-c')).toBe(`import site; site.addsitedir('${site}')\n/clone-c/clients/python\n`);
    // Other paths make the clone's venv anew; the shared one stays.
    venv('clone-c', ['c==1'], ['/elsewhere']);
    expect(pth('clone-c')).toContain('\n/elsewhere\n');
    expect(installs()).toHaveLength(before + 1);
  }, 300_000);
});
