import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The packages an `apt-get install` names with a point version (`name=version`). Debian's
 * -security and -updates archives keep only the newest version of a package (and a point release
 * replaces main's), so such a pin fails the build the day the next fix is published, with nothing
 * changed here. Continuation lines are joined first, as the shell joins them.
 */
function aptVersionPins(text: string): string[] {
  const joined = text.replace(/\\\n/g, ' ');
  const pins: string[] = [];
  for (const line of joined.split('\n')) {
    const at = line.indexOf('apt-get install');
    if (at < 0 || line.trimStart().startsWith('#')) continue;
    // The command ends at the next shell operator.
    const command = line.slice(at + 'apt-get install'.length).split(/&&|\|\||;|\|/)[0] ?? '';
    for (const word of command.trim().split(/\s+/))
      if (!word.startsWith('-') && /^[a-z0-9][a-z0-9.+-]*(:[a-z0-9]+)?=\S+$/.test(word)) pins.push(word);
  }
  return pins;
}

/** Files that install Debian packages: the Dockerfile, the deploy scripts, CI's entry point. */
function installers(): string[] {
  const found: string[] = [join(root, '.ci/run')];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === 'Dockerfile' || name.endsWith('.sh')) found.push(path);
    }
  };
  walk(join(root, 'deploy'));
  return found;
}

describe('deploy/Dockerfile', () => {
  it('passes hadolint with no warning (the tool fetched by the set-up, test/setup/tools.ts)', () => {
    const tool = spawnSync('bash', [join(root, 'deploy/tools/hadolint.sh')], { encoding: 'utf8' });
    expect(tool.status, tool.stderr).toBe(0);
    const lint = spawnSync(tool.stdout.trim().split('\n').at(-1)!, [join(root, 'deploy/Dockerfile')], {
      encoding: 'utf8',
    });
    expect(lint.stdout + lint.stderr).toBe('');
    expect(lint.status).toBe(0);
  });
});

describe('no point-version apt pins (issue 58)', () => {
  it('finds a pin, with or without continuation lines, and passes a release-pinned list', () => {
    const pinned = [
      'RUN apt-get update \\',
      ' && apt-get install -y --no-install-recommends \\',
      '      python3 make=4.3-4.1 libssl-dev=3.0.22-1~deb12u2 \\',
      ' && rm -rf /var/lib/apt/lists/*',
    ].join('\n');
    expect(aptVersionPins(pinned)).toEqual(['make=4.3-4.1', 'libssl-dev=3.0.22-1~deb12u2']);
    expect(
      aptVersionPins('apt-get install -y -o Dpkg::Options::=--force-confold tini=0.19.0-1+b3 && x=1'),
    ).toEqual(['tini=0.19.0-1+b3']);
    expect(aptVersionPins('apt-get install -y -qq podman runc mmdebstrap >/dev/null')).toEqual([]);
  });

  it.each(installers().map((path) => [relative(root, path), path]))('%s pins no point version', (_, path) => {
    expect(aptVersionPins(readFileSync(path, 'utf8'))).toEqual([]);
  });

  it("says why the Dockerfile's install is not pinned, on the line hadolint reads", () => {
    const lines = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8').split('\n');
    const run = lines.findIndex((l) => l.startsWith('RUN apt-get update'));
    expect(lines[run - 1]).toBe('# hadolint ignore=DL3008');
    // The reason, in the comment block just above the pragma.
    expect(lines.slice(run - 8, run - 1).join(' ')).toMatch(/pinned by release/);
  });
});
