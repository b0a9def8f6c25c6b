import { afterAll, beforeAll, describe, it } from 'vitest';
import { pipelineResponder } from '../llm-server/pipeline-responder.js';
import { type LlmServer, start } from '../llm-server/server.js';
import { workspace } from './helpers.js';
import { expectExactlyOnceAfterKills, IN_FLIGHT, SLOW } from './kill-suite.js';

describe('kill -9 of run (embedded)', () => {
  let server: LlmServer;
  beforeAll(async () => {
    server = await start({
      responder: pipelineResponder,
      latency: { kind: 'lognormal', medianMs: 60, p99Ms: 400 },
    });
  });
  afterAll(async () => {
    await server.stop();
  });

  it('pays no second call for a reply that arrived (journaled) and writes no QA twice, across 10 kills', async () => {
    await expectExactlyOnceAfterKills(server, () => workspace(server.url, SLOW), 10, IN_FLIGHT);
  }, 600_000);
});

/** A few inputs in flight per stage, so a run lasts long enough to be killed in the middle. */
