import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openRuntime } from '../../topology/runtime/open.js';
import { expectPreviousRecordsRead, PREVIOUS, previousRecords, probeTopology } from './previous-release.js';

// Issue 32: an upgrade reads what the previous release wrote. The Kafka side is test/services/upgrade.test.ts.
describe(`upgrade from ${PREVIOUS.release} (embedded log)`, () => {
  it('reads every record the previous release wrote, QA rows with a string ground_truth and the whole-batch lease included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bioalchemy-upgrade-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const topology = probeTopology();
    const runtime = await openRuntime(`file:${dir}`);
    try {
      await runtime.ensureTopics(topology.topics);
      await runtime.append(previousRecords());
      await expectPreviousRecordsRead(runtime, topology);
    } finally {
      await runtime.close();
    }
    expect(Object.keys(PREVIOUS.topics)).toContain('rollout.batches');
  });
});
