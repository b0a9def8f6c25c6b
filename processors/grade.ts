import type { Llm } from '../llm/index.js';
import { FREEFORM_GRADE_PROMPT, freeformGradeMessages } from '../llm/prompts/freeform-grade.js';
import { JudgeReply } from '../llm/prompts/judge.js';
import { MCQ_QUALITY_PROMPT, mcqQualityMessages } from '../llm/prompts/mcq-quality.js';
import type { Grade, GradedQa, QaCandidate } from '../schemas/qa.js';
import type { Processor } from '../topology/processor.js';
import { windowed } from '../topology/window.js';
import { type LlmFailure, llmFailure } from './llm-failure.js';
import { type CheckFailure, deterministicChecks } from './qa/checks.js';
import { NearDuplicateIndex } from './qa/near-duplicates.js';

export interface GradeOptions {
  readonly llm: Llm;
  readonly inFlight: number;
  /** Estimated Jaccard similarity at which two questions are near-duplicates. */
  readonly nearDuplicate?: number;
}

/** The deterministic checks, as the model stamp of a grade they decided alone. */
export const CHECKS_STAMP = { model: 'deterministic-checks', promptVersion: 'checks-v1' } as const;

type Judged =
  | { readonly kind: 'checks'; readonly failures: CheckFailure[] }
  | { readonly kind: 'judge'; readonly grade: Grade }
  | ({ readonly kind: 'unusable' } & LlmFailure);

/**
 * qa.candidates -> qa.graded | qa.rejected, one of the two (or a dead letter) per candidate.
 * Deterministic checks run first and spare the judge's call when they fail; then the LLM judge
 * (multiple-choice quality evaluation, or free-form grading) scores it; last, in offset order
 * inside the step, exact and near-duplicates of accepted questions are refused, from an index
 * held in a state store so it survives restarts.
 */
export function gradeProcessor(opts: GradeOptions): Processor {
  return windowed<Judged>({
    name: 'grade',
    description: 'LLM judge scores + deterministic checks + MinHash near-duplicates',
    reads: ['qa.candidates'],
    writes: ['qa.graded', 'qa.rejected'],
    stores: ['dedup'],
    window: {
      inFlight: opts.inFlight,
      async start(input) {
        const candidate = input.value as QaCandidate;
        const failures = deterministicChecks(candidate);
        if (failures.length) return { kind: 'checks', failures };
        try {
          return { kind: 'judge', grade: await judge(opts.llm, candidate) };
        } catch (e) {
          return { kind: 'unusable', ...llmFailure(e, candidate) };
        }
      },
      finish(input, outcome, ctx) {
        if (!outcome.ok) throw outcome.error;
        const candidate = input.value as QaCandidate;
        const judged = outcome.value;
        // A candidate id seen before is the same record again (an article ingested twice: ids
        // hash article, passage and question). Not a replay: a replayed step's state rolled back
        // with it, so its own mark is gone. One grade per id, the repeat a dead letter.
        const dedup = ctx.store('dedup');
        const graded = `graded:${candidate.id}`;
        if (dedup.get(graded) !== undefined) {
          ctx.deadLetter(
            input,
            'duplicate',
            `grade: duplicate candidate ${candidate.id}, graded already (its article came in twice)`,
          );
          return;
        }
        if (judged.kind === 'unusable') {
          ctx.deadLetter(input, judged.code, `grade: ${judged.reason}`, judged.payload);
          return;
        }
        const reject = (grade: Grade) => {
          dedup.put(graded, 1);
          ctx.emit('qa.rejected', candidate.id, {
            candidate,
            grade: { ...grade, verdict: 'reject' },
          } satisfies GradedQa);
        };
        if (judged.kind === 'checks') {
          reject({
            scores: { quality: 0, difficulty: 0, answerability: 0, verifiability: 0 },
            verdict: 'reject',
            reasons: judged.failures.map((f) => `${f.check}: ${f.reason}`),
            gradedBy: CHECKS_STAMP,
          });
          return;
        }
        if (judged.grade.verdict === 'reject') {
          reject(judged.grade);
          return;
        }
        const duplicate = new NearDuplicateIndex(ctx.store('dedup'), opts.nearDuplicate).check(
          candidate.id,
          candidate.question,
        );
        if (duplicate) {
          reject({
            ...judged.grade,
            reasons: [
              duplicate.kind === 'exact'
                ? `duplicate: the same question as ${duplicate.of}`
                : `near-duplicate: ${Math.round(duplicate.similarity * 100)}% similar to ${duplicate.of}`,
            ],
          });
          return;
        }
        dedup.put(graded, 1);
        ctx.emit('qa.graded', candidate.id, { candidate, grade: judged.grade } satisfies GradedQa);
      },
    },
  });
}

async function judge(llm: Llm, c: QaCandidate): Promise<Grade> {
  const reply =
    c.kind === 'multiple-choice'
      ? await llm.complete({
          stage: 'mcq-quality',
          schema: JudgeReply,
          promptVersion: MCQ_QUALITY_PROMPT,
          messages: mcqQualityMessages(c.passage.text, c),
        })
      : await llm.complete({
          stage: 'freeform-grade',
          schema: JudgeReply,
          promptVersion: FREEFORM_GRADE_PROMPT,
          messages: freeformGradeMessages(c.passage.text, c),
        });
  const v = reply.value;
  const unit = (score: number) => (score - 1) / 4;
  return {
    scores: {
      quality: unit(v.quality),
      difficulty: unit(v.difficulty),
      answerability: unit(v.answerability),
      verifiability: unit(v.verifiability),
    },
    verdict: v.verdict,
    reasons: v.reasons.length
      ? v.reasons.map((r) => `judge: ${r}`)
      : v.verdict === 'reject'
        ? ['judge: rejected']
        : [],
    gradedBy: {
      model: reply.model,
      promptVersion: c.kind === 'multiple-choice' ? MCQ_QUALITY_PROMPT : FREEFORM_GRADE_PROMPT,
    },
  };
}
