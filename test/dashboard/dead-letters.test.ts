import { describe, expect, it } from 'vitest';
import { DeadLetterTail, ReplayedTail } from '../../server/dashboard-data.js';
import { onePartitionLog } from './data.js';

const origin = { kind: 'record', topic: 'qa.candidates', partition: 0, offset: '1' };
const letter = (fields: Record<string, unknown>) =>
  JSON.stringify({ id: 'x', processor: 'grade', origin, payload: '', ...fields });

describe('dashboard dead-letter panel', () => {
  it('has one row per code and processor, each with its reasons by count; old letters get their derived code', async () => {
    const tail = new DeadLetterTail();
    await tail.update(
      onePartitionLog('dlq', [
        letter({ code: 'llm-reply-invalid', reason: 'grade: judge: not valid JSON: Unexpected token' }),
        letter({ code: 'llm-reply-invalid', reason: 'grade: judge: not valid JSON: Unexpected token' }),
        letter({ code: 'llm-reply-invalid', reason: 'grade: judge: does not match the schema: x' }),
        // Written before codes: one row for all of them, whatever their ids.
        ...['aeb1c2f0d9', '3e5f77a1b2', '0bb17c22aa'].map((id) =>
          letter({ reason: `grade: duplicate candidate ${id}, graded already (its article came in twice)` }),
        ),
        'not json',
      ]),
    );
    const rows = tail.byCode();
    expect(rows.map((r) => [r.code, r.processor, r.n])).toEqual([
      ['duplicate', 'grade', 3],
      ['llm-reply-invalid', 'grade', 3],
      ['not-a-dead-letter', '', 1],
    ]);
    expect(rows[0]!.reasons).toEqual([
      { reason: 'duplicate candidate <id>, graded already (its article came in twice)', n: 3 },
    ]);
    expect(rows[1]!.reasons).toEqual([
      { reason: 'judge: not valid JSON: Unexpected token', n: 2 },
      { reason: 'judge: does not match the schema: x', n: 1 },
    ]);
    expect(tail.total).toBe(7);
  });

  it('counts the dead letters replayed once per id, whatever else is on dlq.replayed', async () => {
    const tail = new ReplayedTail();
    const replayed = (id: string) => JSON.stringify({ deadLetterId: id, code: 'llm-request-refused' });
    await tail.update(
      onePartitionLog('dlq.replayed', [replayed('a'), replayed('b'), replayed('a'), 'not json', 'null']),
    );
    expect(tail.total).toBe(2);
  });
});
