import type { QaCandidate } from '../../schemas/qa.js';
import { looksEnglish } from './language.js';
import { normaliseQuestion } from './near-duplicates.js';

/** A deterministic check a candidate failed: its name (a metric label) and why, for the record. */
export interface CheckFailure {
  readonly check: string;
  readonly reason: string;
}

/** Bounds on lengths, in characters and words; the paper's answers are short and canonical. */
export const LIMITS = {
  question: { min: 20, max: 1000 },
  option: { max: 300 },
  freeFormAnswer: { maxChars: 120, maxWords: 15 },
} as const;

// Phrases that point outside the question: a reader without the article cannot resolve them.
const CONTEXT_BOUND = [
  /\b(in|from|of|by) (this|the present|the current|our) (study|paper|article|work|experiment|analysis|manuscript|review)\b/i,
  /\bthe (authors|researchers|investigators)\b/i,
  /\b(we|our|us)\b/i,
  /\b(fig(ure)?s?|tables?|panels?|supplementary|eq(uation)?)\.? ?\d+[a-z]?\b/i,
  /\b(above|below)-?(mentioned|described)?\b.*\b(passage|text|paragraph|section)\b/i,
  /\b(the|this) (passage|text|paragraph|excerpt|section)\b/i,
  /\bdescribed (here|above|herein)\b/i,
];

const AMBIGUOUS_OPTION = /^(all|none|both|neither) (of the above|of these|[a-e] and [a-e])\b/i;

/** Every deterministic check the grade stage applies, in a fixed order; empty when all pass. */
export function deterministicChecks(c: QaCandidate): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const fail = (check: string, reason: string) => failures.push({ check, reason });
  const question = c.question.trim();
  if (question.length < LIMITS.question.min || question.length > LIMITS.question.max)
    fail(
      'length',
      `question is ${question.length} characters, outside ${LIMITS.question.min}-${LIMITS.question.max}`,
    );
  for (const pattern of CONTEXT_BOUND) {
    const m = question.match(pattern);
    if (m) {
      fail('self-contained', `question refers outside itself ("${m[0]}")`);
      break;
    }
  }
  if (!looksEnglish(question)) fail('language', 'question is not in English');
  if (c.kind === 'multiple-choice') {
    const n = c.options.length;
    if (n < 4 || n > 5) fail('options', `${n} options; a multiple-choice question has 4 or 5`);
    const normalised = c.options.map(normaliseQuestion);
    if (new Set(normalised).size !== n) fail('options', 'two options say the same');
    const index = c.answer.charCodeAt(0) - 65;
    if (index < 0 || index >= n) fail('answer-key', `answer ${c.answer} is not one of the ${n} options`);
    if (c.options.some((o) => AMBIGUOUS_OPTION.test(o.trim())))
      fail('answer-key', 'an "all/none/both of the above" option makes more than one key possible');
    const long = c.options.find((o) => o.length > LIMITS.option.max);
    if (long) fail('length', `an option is ${long.length} characters, over ${LIMITS.option.max}`);
    const key = normalised[index];
    if (key && key.length >= 6 && normaliseQuestion(question).includes(key))
      fail('answer-leak', 'the correct option is written in the question');
  } else {
    const answer = c.answer.trim();
    const words = answer.split(/\s+/).filter(Boolean).length;
    if (answer.length > LIMITS.freeFormAnswer.maxChars || words > LIMITS.freeFormAnswer.maxWords)
      fail('length', `answer is ${words} words, ${answer.length} characters; a verifiable answer is short`);
    const key = normaliseQuestion(answer);
    if (key.length >= 4 && ` ${normaliseQuestion(question)} `.includes(` ${key} `))
      fail('answer-leak', 'the answer is written in the question');
  }
  return failures;
}
