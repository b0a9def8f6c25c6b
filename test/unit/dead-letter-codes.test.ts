import { describe, expect, it } from 'vitest';
import { DeadLetter, type DeadLetterCode, deadLetterCodeOf } from '../../schemas/dead-letter.js';

const old = (reason: string, processor: string | null = 'extract') => ({
  id: 'x',
  reason,
  processor,
  origin: { kind: 'record', topic: 'articles', partition: 0, offset: '3' },
  payload: '{}',
});

describe('dead-letter codes', () => {
  it('an old dead letter without a code is read with the code its reason implies', () => {
    const cases: [string, DeadLetterCode][] = [
      ['grade: duplicate candidate aeb1c2, graded already (its article came in twice)', 'duplicate'],
      ['extract: passage 0:0-120: passage is not in English', 'not-english'],
      ['extract: article has no text to make passages from', 'no-text'],
      [
        'extract: no passage gave a question (2 judged irrelevant, 0 without a usable question)',
        'no-question',
      ],
      [
        'extract: passage 1:0-9: mcq: not valid JSON (cut off at maxTokens): Unexpected end',
        'llm-reply-invalid',
      ],
      ['grade: judge: does not match the schema: ✖ Invalid input', 'llm-reply-invalid'],
      ['classify: labels not in mesh-biology: "X"', 'label-unknown'],
      ['invalid input: value: expected string', 'invalid-input'],
      ['processor failed 3 times: boom', 'processor-failed'],
      ['timer processor failed 3 times: boom', 'processor-failed'],
      ['empty file', 'empty-file'],
      ['over the size limit of 100 bytes (250 bytes)', 'too-large'],
      ['invalid UTF-8', 'bad-encoding'],
      ['malformed XML: Unclosed tag', 'malformed'],
      ['truncated gzip: unexpected end of file', 'malformed'],
      ['invalid JSON: Unexpected end of JSON input', 'malformed'],
      ['invalid JSONL mapping: ✖ Invalid input', 'unknown-format'],
      ['reader fault: TypeError: x is undefined', 'reader-fault'],
      ["unknown file type '.docx'", 'unknown-format'],
      ['something nobody wrote before', 'unclassified'],
    ];
    for (const [reason, code] of cases) {
      expect(deadLetterCodeOf(reason), reason).toBe(code);
      expect(DeadLetter.parse(old(reason)).code, reason).toBe(code);
    }
  });

  it('a dead letter with a code keeps it, and a code outside the closed list is refused', () => {
    expect(DeadLetter.parse({ ...old('empty file'), code: 'too-large' }).code).toBe('too-large');
    expect(DeadLetter.safeParse({ ...old('empty file'), code: 'no-such-code' }).success).toBe(false);
  });
});
