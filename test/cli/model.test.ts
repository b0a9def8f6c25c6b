import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const BIN = new URL('../../bin/bioalchemy.js', import.meta.url).pathname;

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// Help only: `model pull` itself downloads 253 MB (CI runs deploy/model.sh, and the local model test uses it).
describe('bioalchemy model', () => {
  it('lists its pull subcommand', () => {
    const r = cli(['model', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: bioalchemy model /m);
    expect(r.stdout).toMatch(/^\s+pull\b/m);
  });

  it('explains pull with examples and the --data folder', () => {
    const r = cli(['model', 'pull', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Gemma 3 270M');
    expect(r.stdout).toContain('--data <dir>');
    expect(r.stdout).toContain('$ bioalchemy model pull');
  });

  it('is one of the commands of bioalchemy --help', () => {
    expect(cli(['--help']).stdout).toMatch(/^\s+model\b/m);
  });

  it('refuses an unknown subcommand as a usage mistake', () => {
    const r = cli(['model', 'push']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('keeps its venv under the .deploy/ of the repository, not dist/, when the CLI runs the built script', () => {
    // The built CLI runs deploy/model.sh through dist/deploy, a link: state under dist/ would
    // go with the next clean build.
    const root = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
    const built = new URL('../../dist/deploy/lib.sh', import.meta.url).pathname;
    const r = spawnSync('bash', ['-c', `source '${built}' && echo "$REPO_ROOT" && echo "$STATE_ROOT"`], {
      encoding: 'utf8',
      env: { ...process.env, BIOALCHEMY_DEPLOY_STATE: '' },
    });
    expect(r.stdout.trim().split('\n')).toEqual([root, `${root}/.deploy`]);
  });
});
