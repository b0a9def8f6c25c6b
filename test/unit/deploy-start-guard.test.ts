import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The start scripts' guard (deploy/lib.sh: guard_started, started_alive, start_succeeded) on a
// stand-in server (sleep), in scratch state: no real service is started or stopped here.
const LIB = fileURLToPath(new URL('../../deploy/lib.sh', import.meta.url));
const state = mkdtempSync(join(tmpdir(), 'deploy-guard-'));
const PIDFILE = join(state, 'fake.pid');
const started: number[] = [];
afterAll(() => {
  for (const pid of started) if (running(pid)) process.kill(pid, 'SIGKILL');
  rmSync(state, { recursive: true, force: true });
});

/** Whether pid is a live process (a zombie waiting to be reaped is not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** A start script: lib.sh sourced, `launch` in the background, guarded, then `body`. */
const script = (launch: string, body: string) => `
set -euo pipefail
LOG_TAG=fake
source "${LIB}"
# Its output elsewhere, as a real server's goes to its log: the script's pipes close when it ends.
${launch} >/dev/null 2>&1 </dev/null &
guard_started $! "${PIDFILE}" fake
echo "pid $GUARDED_PID"
${body}
`;

function runScript(launch: string, body: string, env: Record<string, string> = {}) {
  rmSync(PIDFILE, { force: true });
  // From a file, as the real ones run: the subshell's command line before its exec is `bash <file>`.
  const file = join(state, 'start.sh');
  writeFileSync(file, script(launch, body));
  const r = spawnSync('bash', [file], { encoding: 'utf8', env: { ...process.env, ...env } });
  const pid = Number(r.stdout.match(/^pid (\d+)$/m)?.[1]);
  started.push(pid);
  return { status: r.status, out: r.stdout + r.stderr, pid };
}

/** Polls a condition in the script, with a deadline, as the start scripts poll a server. */
const until = (condition: string) =>
  `deadline=$(( $(date +%s) + 20 )); until ${condition}; do (( $(date +%s) < deadline )) || exit 99; sleep 0.05; done`;

describe('a start script that fails never loses track of the process it started', () => {
  it('counts the launched process as alive before it has exec the server (pid_alive with a pattern does not), and stops it when the start fails', () => {
    const r = runScript(
      '( sleep 0.5; exec sleep 300 )',
      `started_alive || die "started_alive: gone before the exec"
       pid_alive "${PIDFILE}" "sleep 300" && die "the pattern matched before the exec"
       ${until(`pid_alive "${PIDFILE}" "sleep 300"`)}
       die "simulated: server not ready"`,
    );
    expect(r.status, r.out).toBe(1);
    expect(r.out).toContain('simulated: server not ready');
    expect(r.out).toContain('start failed: stopping the fake it started');
    expect(running(r.pid)).toBe(false);
    expect(existsSync(PIDFILE)).toBe(false);
  });

  it('a server that exits during start-up is seen as gone, and its pid file removed', () => {
    const r = runScript('( exit 3 )', `${until('! started_alive')}\ndie "fake exited during start-up"`);
    expect(r.status, r.out).toBe(1);
    expect(r.out).toContain('fake exited during start-up');
    expect(existsSync(PIDFILE)).toBe(false);
  });

  it('a server that ignores SIGTERM is killed', () => {
    const r = runScript(
      "( trap '' TERM; exec sleep 300 )",
      `${until(`pid_alive "${PIDFILE}" "sleep 300"`)}\nexit 7`,
      {
        GUARD_STOP_TIMEOUT_S: '1',
      },
    );
    expect(r.status, r.out).toBe(7);
    expect(r.out).toContain('did not exit, sending SIGKILL');
    expect(running(r.pid)).toBe(false);
    expect(existsSync(PIDFILE)).toBe(false);
  });

  it('a start script stopped by SIGTERM stops its server too', async () => {
    rmSync(PIDFILE, { force: true });
    const child = spawn('bash', ['-c', script('( exec sleep 300 )', 'echo guarded; sleep 300 & wait $!')]);
    let out = '';
    const pid = await new Promise<number>((resolve) =>
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        const m = out.match(/^pid (\d+)$/m);
        if (m && out.includes('guarded')) resolve(Number(m[1]));
      }),
    );
    started.push(pid);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    expect(running(pid)).toBe(false);
    expect(existsSync(PIDFILE)).toBe(false);
  });

  it('after start_succeeded the server keeps running and its pid file stays, for stop.sh', () => {
    const r = runScript('( exec sleep 300 )', 'start_succeeded\nexit 0');
    expect(r.status, r.out).toBe(0);
    expect(running(r.pid)).toBe(true);
    expect(readFileSync(PIDFILE, 'utf8').trim()).toBe(String(r.pid));
  });
});
