import { BLOCK_MARKER } from '../../llm/prompts/data-block.js';
import { unverifiable } from '../../reward/index.js';
import { QA_LIMITS, type QaCandidate, type RejectionCode } from '../../schemas/qa.js';
import { normaliseText } from '../../sources/minhash.js';
import { looksEnglish } from './language.js';

/** A rule a candidate failed: its stable code (a metric label) and why, for the record. */
export interface RuleFailure {
  readonly code: RejectionCode;
  readonly reason: string;
}

export interface CheckOptions {
  /** Accept free-form answers yes/no or true/false (grade.allowYesNo). */
  readonly allowYesNo: boolean;
}

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

/**
 * What makes a text a question: a question mark at its end, an interrogative word or auxiliary
 * first, an imperative that asks ("Name the enzyme that..."), or a blank to fill (a cloze stem).
 */
const INTERROGATIVE_START =
  /^(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had|name|identify|state|give|define|calculate|determine|estimate|list|specify|in what|at what|by what|for what|from what|to what|on what|with what|under what|of what|in which|at which|by which|for which|from which|to which|on which|with which|under which|of which)\b/i;
const BLANK = /_{2,}|\.{3}|…/;

/** A free-form answer a coin flip gets right: yes/no or true/false, alone or leading a short sentence. */
const YES_NO = /^(yes|no|true|false)\s*([.!,;:]|$)/i;

/** The passage's sentences, each normalised: a question equal to one was copied, not written. */
function sentencesOf(text: string): Set<string> {
  return new Set(
    text
      .split(/(?<=[.!?])\s+/)
      .map(normaliseText)
      .filter((s) => s.length > 0),
  );
}

/** Every deterministic check the grade stage applies, in a fixed order; empty when all pass. */
export function deterministicChecks(c: QaCandidate, opts: CheckOptions): RuleFailure[] {
  const failures: RuleFailure[] = [];
  const fail = (code: RejectionCode, reason: string) => failures.push({ code, reason });
  const question = c.question.trim();
  const normalisedQuestion = normaliseText(question);
  if (question.length < QA_LIMITS.question.min || question.length > QA_LIMITS.question.max)
    fail(
      'question-length',
      `question is ${question.length} characters, outside ${QA_LIMITS.question.min}-${QA_LIMITS.question.max}`,
    );
  for (const pattern of CONTEXT_BOUND) {
    const m = question.match(pattern);
    if (m) {
      fail('self-contained', `question refers outside itself ("${m[0]}")`);
      break;
    }
  }
  if (!looksEnglish(question)) fail('not-english', 'question is not in English');
  if (normalisedQuestion && normalisedQuestion === normaliseText(c.articleTitle))
    fail('copied-text', "question is the article's title");
  else if (sentencesOf(c.passage.text).has(normalisedQuestion))
    fail('copied-text', 'question is a sentence of the passage, copied');
  if (!question.endsWith('?') && !INTERROGATIVE_START.test(question) && !BLANK.test(question))
    fail('not-a-question', 'no question mark, interrogative word or blank to fill');
  if (c.kind === 'multiple-choice') {
    const n = c.options.length;
    if (n < 4 || n > 5) fail('option-count', `${n} options; a multiple-choice question has 4 or 5`);
    const normalised = c.options.map(normaliseText);
    const repeated = normalised.findIndex((o, i) => normalised.indexOf(o) !== i);
    if (repeated >= 0)
      fail(
        'duplicate-options',
        `options ${String.fromCharCode(65 + normalised.indexOf(normalised[repeated]!))} and ${String.fromCharCode(65 + repeated)} say the same`,
      );
    const index = c.answer.charCodeAt(0) - 65;
    if (index < 0 || index >= n) fail('answer-key', `answer ${c.answer} is not one of the ${n} options`);
    if (c.options.some((o) => AMBIGUOUS_OPTION.test(o.trim())))
      fail('ambiguous-option', 'an "all/none/both of the above" option makes more than one key possible');
    const long = c.options.find((o) => o.length > QA_LIMITS.option.max);
    if (long) fail('option-length', `an option is ${long.length} characters, over ${QA_LIMITS.option.max}`);
    const key = normalised[index];
    if (key && key.length >= 6 && normalisedQuestion.includes(key))
      fail('answer-in-question', 'the correct option is written in the question');
  } else {
    const answer = c.answer.trim();
    const words = answer.split(/\s+/).filter(Boolean).length;
    if (answer.length > QA_LIMITS.freeFormAnswer.maxChars || words > QA_LIMITS.freeFormAnswer.maxWords)
      fail(
        'answer-length',
        `answer is ${words} words, ${answer.length} characters; a verifiable answer is short`,
      );
    if (!opts.allowYesNo && YES_NO.test(answer))
      fail(
        'yes-no-answer',
        `answer "${answer.slice(0, 40)}" is yes/no or true/false: a guess gets it half the time`,
      );
    const key = normaliseText(answer);
    if (key.length >= 4 && ` ${normalisedQuestion} `.includes(` ${key} `))
      fail('answer-in-question', 'the answer is written in the question');
  }
  const marked = [c.question, c.answer, c.rationale, ...(c.kind === 'multiple-choice' ? c.options : [])]
    .map((text) => BLOCK_MARKER.exec(text)?.[0])
    .find((m) => m !== undefined);
  if (marked) fail('prompt-marker', `the QA carries the prompt's data-block marker "${marked}"`);
  // Last, so a reference already refused for its form is not reported twice: no trainer could
  // ever be paid for an item whose own answer the reward cannot verify.
  if (failures.length === 0) {
    const why = unverifiable(
      c.kind === 'multiple-choice'
        ? { kind: 'mcq', ground_truth: c.answer, options: c.options }
        : { kind: 'free-form', ground_truth: c.answer },
    );
    if (why) fail('unverifiable-answer', why);
  }
  return failures;
}
