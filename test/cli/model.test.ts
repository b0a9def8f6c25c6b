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
});
