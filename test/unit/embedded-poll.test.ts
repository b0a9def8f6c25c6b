import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';

const topic = {
  name: 't',
  partitions: 2,
  compacted: false,
  retentionMs: null,
  schema: null,
  description: '',
};
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('an embedded poll that passes over partitions with nothing new', () => {
  it('sees what this process and another process on the same file appended, and nothing twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'embedded-poll-'));
    dirs.push(dir);
    const mine = EmbeddedRuntime.open(dir);
    await mine.ensureTopics([topic]);
    const other = EmbeddedRuntime.open(dir);
    const task = await mine.openTask({ group: 'g', topics: ['t'], stores: [], scope: 'partition' });
    const polled = async () => (await task.poll(100, 0)).map((r) => r.value).sort();

    expect(await polled()).toEqual([]);
    await mine.append([{ topic: 't', key: null, value: 'a', partition: 0 }]);
    expect(await polled()).toEqual(['a']);
    expect(await polled()).toEqual([]);
    // Another connection's commit changes the file under this one's knowledge of the ends.
    await other.append([
      { topic: 't', key: null, value: 'b', partition: 1 },
      { topic: 't', key: null, value: 'c', partition: 0 },
    ]);
    expect(await polled()).toEqual(['b', 'c']);
    expect(await polled()).toEqual([]);
    await other.append([{ topic: 't', key: null, value: 'd', partition: 1 }]);
    await mine.append([{ topic: 't', key: null, value: 'e', partition: 1 }]);
    expect(await polled()).toEqual(['d', 'e']);
    // A poll that waits wakes for another process's append too.
    const waiting = task.poll(100, 5000);
    await other.append([{ topic: 't', key: null, value: 'f', partition: 0 }]);
    expect((await waiting).map((r) => r.value)).toEqual(['f']);
    await other.close();
    await mine.close();
  });
});
