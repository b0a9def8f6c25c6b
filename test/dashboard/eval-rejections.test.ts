import { describe, expect, it } from 'vitest';
import { EvalRejectionTail } from '../../server/dashboard-data.js';
import { onePartitionLog } from './data.js';

const rejected = (id: string, matches: { code: string; evalSet: string }[]) =>
  JSON.stringify({
    candidate: { id },
    grade: {
      codes: [...new Set(matches.map((m) => m.code))],
      evalMatches: matches.map((m) => ({ ...m, itemId: 'i', how: '13-gram', evidence: '' })),
    },
  });

describe('dashboard eval-set rejections', () => {
  it('counts each candidate once per set and code, incrementally; other rejections and non-JSON count nowhere', async () => {
    const values = [
      rejected('a', [{ code: 'contaminated', evalSet: 'pubmedqa' }]),
      rejected('b', [
        { code: 'eval-source', evalSet: 'pubmedqa' },
        { code: 'contaminated', evalSet: 'gpqa' },
      ]),
      JSON.stringify({ candidate: { id: 'c' }, grade: { codes: ['low-quality'] } }),
      'not json',
    ];
    const runtime = onePartitionLog('qa.rejected', values);
    const tail = new EvalRejectionTail();
    await tail.update(runtime);
    expect(tail.counts).toEqual({
      pubmedqa: { contaminated: 1, 'eval-source': 1 },
      gpqa: { contaminated: 1, 'eval-source': 0 },
    });
    // A repeat of candidate a (as grade writes a duplicate, it would carry no match; here it does)
    // and a new one: only the new one counts, and what was read is not read again.
    values.push(rejected('a', [{ code: 'contaminated', evalSet: 'pubmedqa' }]));
    values.push(rejected('d', [{ code: 'contaminated', evalSet: 'pubmedqa' }]));
    await tail.update(runtime);
    expect(tail.counts.pubmedqa).toEqual({ contaminated: 2, 'eval-source': 1 });
  });
});
