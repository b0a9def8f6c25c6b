import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { BIN, cli, syntheticArticles, workspace } from './helpers.js';

describe('the spend cap', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({ responder: pipelineResponder });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('pauses the LLM stages with one log line, drops nothing, and resumes when the cap is raised (kill -HUP)', async () => {
    const ws = workspace(server.url);
    const config = JSON.parse(readFileSync(ws.config, 'utf8'));
    config.llm.budget = { tokensPerDay: 3000 };
    writeFileSync(ws.config, JSON.stringify(config));
    expect(cli(['produce', 'articles', '--config', ws.config], syntheticArticles(6)).status).toBe(0);

    const child = spawn(process.execPath, [BIN, 'run', '--until-idle', '--config', ws.config], {
      env: { ...process.env, E2E_LLM_KEY: 'k', BIOALCHEMY_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no pause within 60 s:\n${stderr}`)), 60_000);
      child.stderr.on('data', (c: Buffer) => {
        stderr += c;
        if (stderr.includes('LLM calls paused')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const paidAtPause = server.stats().answered;
    config.llm.budget = { tokensPerDay: 10_000_000 };
    writeFileSync(ws.config, JSON.stringify(config));
    child.kill('SIGHUP');
    expect(await exited).toBe(0);
    expect(stderr.match(/LLM calls paused/g)).toHaveLength(1);
    expect(stderr).toContain('LLM calls resumed');
    expect(server.stats().answered).toBeGreaterThan(paidAtPause);
    // Nothing was dropped while paused: all six articles went through extract.
    expect(stdout).toMatch(/^ {2}extract\s+in 6 -> /m);
  }, 180_000);
});
