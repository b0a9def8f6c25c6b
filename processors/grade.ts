import { Counter, type Registry } from 'prom-client';
import type { Llm } from '../llm/index.js';
import { FREEFORM_GRADE_PROMPT, freeformGradeMessages } from '../llm/prompts/freeform-grade.js';
import { BOUNDED_SCORES, JudgeReply } from '../llm/prompts/judge.js';
import { MCQ_QUALITY_PROMPT, mcqQualityMessages } from '../llm/prompts/mcq-quality.js';
import type { Config } from '../schemas/config.js';
import type { QaBand } from '../schemas/dedup.js';
import type { ModelStamp } from '../schemas/provenance.js';
import type { EvalMatch, Grade, GradeAccept, GradedQa, QaCandidate, RejectionCode } from '../schemas/qa.js';
import type { Processor } from '../topology/processor.js';
import { windowed } from '../topology/window.js';
import { type LlmFailure, llmFailure } from './llm-failure.js';
import { deterministicChecks, type RuleFailure } from './qa/checks.js';
import { EvalSets } from './qa/decontaminate.js';
import { dedupOrder, questionBands } from './qa/near-duplicates.js';

type GradeConfig = Config['grade'];

export interface GradeOptions extends GradeConfig {
  readonly llm: Llm;
  readonly inFlight: number;
  /** Where the rejections counter goes (the process's registry); none in unit tests. */
  readonly registry?: Registry;
}

/** The deterministic checks, as the model stamp of a grade they decided alone. */
export const CHECKS_STAMP = { model: 'deterministic-checks', promptVersion: 'checks-v3' } as const;

/** What the judge said, on its own 1-5 scale, before grade applies grade.accept to it. */
interface Judgement {
  readonly reply: JudgeReply;
  readonly gradedBy: ModelStamp;
}

type Judged =
  | { readonly kind: 'checks'; readonly failures: RuleFailure[]; readonly matches: EvalMatch[] }
  | { readonly kind: 'judge'; readonly judgement: Judgement }
  | ({ readonly kind: 'unusable' } & LlmFailure);

/** What the dedup store holds under `graded:<id>`: how that candidate ended (1 on stores of older versions). */
type GradedMark = 'accepted' | 'rejected' | 1;

const NOT_SCORED = { quality: 0, difficulty: 0, answerability: 0, verifiability: 0 } as const;

/**
 * qa.candidates -> qa.bands | qa.rejected, one of the two (or a dead letter) per candidate.
 * Deterministic checks run first and spare the judge's call when they fail; then the LLM judge
 * (multiple-choice quality evaluation, or free-form grading) scores it, and grade.accept decides
 * from the scores, whatever the judge's verdict (a verdict that contradicts them is a rejection
 * of its own). An accepted QA goes to the owners of its MinHash bands, which refuse it if it repeats
 * a question accepted by any worker (processors/dedup/); a candidate id seen before is refused here
 * from grade's own store. Every rejection carries one code per rule it failed.
 */
export function gradeProcessor(opts: GradeOptions): Processor {
  const rejections = gradeRejections(opts.registry);
  // Per eval set: candidates rejected `contaminated` or `eval-source` by one of its items.
  const evalRejections = registryCounter(
    opts.registry,
    'bioalchemy_grade_eval_rejections_total',
    'QA grade rejected as contaminated by, or from the source article of, an item of an eval set (grade.evalSets)',
    ['code', 'eval_set'],
  );
  // Loaded here, synchronously: a bad eval set stops the pipeline at start with its error.
  const evalSets = new EvalSets({
    paths: opts.evalSets,
    threshold: opts.nearDuplicate,
    maxBytes: opts.evalSetMaxMb * 2 ** 20,
    pollMs: opts.evalSetsPollMs,
  });
  const sourceShare = new EvalSourceShare();
  return windowed<Judged>({
    name: 'grade',
    description:
      'eval-set decontamination + deterministic checks + LLM judge scores against grade.accept; accepted QA to their MinHash band owners',
    reads: ['qa.candidates'],
    writes: ['qa.bands', 'qa.rejected'],
    stores: ['dedup'],
    window: {
      inFlight: opts.inFlight,
      async start(input) {
        const candidate = input.value as QaCandidate;
        // The eval sets as of this candidate's start: a set seen after it applies to later ones.
        // Eval-source is decided here per candidate, not at extract: the candidate carries its
        // article's ids, one stage holds the sets and every refusal lands in qa.rejected with its
        // code, and candidates already extracted when a set arrives are caught too.
        const matches = (await evalSets.current()).check({
          ...candidate,
          options: candidate.kind === 'multiple-choice' ? candidate.options : [],
        });
        const failures = deterministicChecks(candidate, opts);
        // Contaminated candidates never reach the judge: its call would be paid for nothing.
        if (failures.length || matches.length) return { kind: 'checks', failures, matches };
        try {
          return { kind: 'judge', judgement: await judge(opts.llm, opts.accept, candidate) };
        } catch (e) {
          return { kind: 'unusable', ...llmFailure(e, candidate) };
        }
      },
      finish(input, outcome, ctx) {
        for (const n of evalSets.drainNotices()) ctx.log[n.level](n.msg);
        if (!outcome.ok) throw outcome.error;
        const candidate = input.value as QaCandidate;
        const judged = outcome.value;
        const dedup = ctx.store('dedup');
        const graded = `graded:${candidate.id}`;
        const reject = (grade: Omit<Grade, 'verdict'>) => {
          // Counted when the step commits: a replayed step counts its rejections once.
          ctx.onCommit(() => {
            for (const code of grade.codes) rejections.inc({ code });
            for (const m of grade.evalMatches ?? [])
              evalRejections.inc({ code: m.code, eval_set: m.evalSet });
          });
          ctx.emit('qa.rejected', candidate.id, {
            candidate,
            grade: { ...grade, verdict: 'reject' },
          } satisfies GradedQa);
        };
        const scored =
          judged.kind === 'judge'
            ? { scores: unitScores(judged.judgement.reply), gradedBy: judged.judgement.gradedBy }
            : { scores: NOT_SCORED, gradedBy: CHECKS_STAMP };
        // A candidate id seen before is a second record of the same candidate: ids hash the
        // article id, the passage text and the question, so the model writing one question twice
        // for a passage, two passages of one text, or an article produced twice give it again.
        // Not a replay: a replayed step's state rolled back with it, so its own mark is gone. The
        // record says what is known (the same id again), not which of these it was.
        const before = dedup.get<GradedMark>(graded);
        if (before !== undefined) {
          reject({
            ...scored,
            reasons: [
              `duplicate: candidate ${candidate.id} again (same article id, passage text and question), graded before${before === 1 ? '' : ` and ${before}`}`,
            ],
            codes: ['duplicate'],
            duplicateOf: candidate.id,
          });
          return;
        }
        if (judged.kind === 'unusable') {
          ctx.deadLetter(input, judged.code, `grade: ${judged.reason}`, judged.payload);
          return;
        }
        const mark = (how: Exclude<GradedMark, 1>) => dedup.put(graded, how satisfies GradedMark);
        if (judged.kind === 'checks') {
          mark('rejected');
          const { matches } = judged;
          for (const warning of sourceShare.count(matches)) ctx.log.warn(warning);
          reject({
            ...scored,
            reasons: [...matches.map(matchReason), ...judged.failures.map((f) => `${f.code}: ${f.reason}`)],
            codes: [...new Set(matches.map((m) => m.code)), ...judged.failures.map((f) => f.code)],
            ...(matches.length ? { evalMatches: matches } : {}),
          });
          return;
        }
        sourceShare.count([]);
        const { reply } = judged.judgement;
        const judgeReasons = reply.reasons.map((r) => `judge: ${r}`);
        const failures = acceptFailures(reply, opts.accept);
        if (failures.length) {
          mark('rejected');
          reject({
            ...scored,
            reasons: [...failures.map((f) => `${f.code}: ${f.reason}`), ...judgeReasons],
            codes: failures.map((f) => f.code),
          });
          return;
        }
        mark('accepted');
        // Duplicates of questions accepted anywhere are refused by the band owners and the join
        // (processors/dedup/): this QA goes to the owner of each of its bands, the QA itself
        // with the exact band's record.
        const accepted: GradedQa = {
          candidate,
          grade: { ...scored, verdict: 'accept', reasons: judgeReasons, codes: [] },
        };
        const { signature, bands } = questionBands(candidate.question);
        const order = dedupOrder(candidate.id, candidate.provenance.published);
        for (const { band, key } of bands)
          ctx.emit('qa.bands', key, {
            qaId: candidate.id,
            band,
            bands: bands.length,
            signature,
            order,
            ...(band === 'exact' ? { graded: accepted } : {}),
          } satisfies QaBand);
      },
    },
  });
}

/** The words of a rejection for an eval match: `contaminated: pubmedqa item 123 (13-gram "...")`. */
function matchReason(m: EvalMatch): string {
  return m.code === 'eval-source'
    ? `eval-source: the article (${m.evidence}) is the source of ${m.evalSet} item ${m.itemId}`
    : `contaminated: ${m.evalSet} item ${m.itemId} (${m.how === '13-gram' ? `shares the 13-gram "${m.evidence}"` : `question ${m.evidence}`})`;
}

/**
 * Warns, once per set, when an eval set is the source of nearly every candidate's article: a set
 * that names every article (a list of the corpus given as an eval set, say) would leave the
 * pipeline with no QA, each refusal recorded but easy to miss.
 */
export class EvalSourceShare {
  private graded = 0;
  private readonly sourced = new Map<string, number>();
  private readonly warned = new Set<string>();

  count(matches: readonly EvalMatch[]): string[] {
    this.graded++;
    const warnings: string[] = [];
    for (const m of matches) {
      if (m.code !== 'eval-source') continue;
      const n = (this.sourced.get(m.evalSet) ?? 0) + 1;
      this.sourced.set(m.evalSet, n);
      if (this.graded >= 20 && n >= 0.9 * this.graded && !this.warned.has(m.evalSet)) {
        this.warned.add(m.evalSet);
        warnings.push(
          `eval set ${m.evalSet} names the source article of ${n} of the ${this.graded} candidates graded since start: every one is rejected eval-source; check that it is an eval set`,
        );
      }
    }
    return warnings;
  }
}

/** QA refused, by code: grade's rules and the dedup join's duplicates count in one metric. */
export function gradeRejections(registry: Registry | undefined): Counter<'code'> {
  return registryCounter(
    registry,
    'bioalchemy_grade_rejections_total',
    'QA grade rejected, by the code of each rule it failed (one rejection may count under several)',
    ['code'],
  );
}

/** The registry's counter of that name: one per registry, however many grade processors are built on it. */
function registryCounter<L extends string>(
  registry: Registry | undefined,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  const existing = registry?.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: registry ? [registry] : [] });
}

/**
 * The codes of a record on qa.rejected, as counted in the run summary: anyone can produce to the
 * topic, so a record without codes (written before codes existed) or not JSON is counted as such.
 */
export function rejectionCodesOf(value: string): string[] {
  try {
    const codes = (JSON.parse(value) as { grade?: { codes?: unknown } } | null)?.grade?.codes;
    if (Array.isArray(codes) && codes.length && codes.every((c) => typeof c === 'string')) return codes;
    return ['(no code)'];
  } catch {
    return ['(not JSON)'];
  }
}

/**
 * The rules of grade.accept the judge's scores fail, in the order the rule names them, and
 * `judge-inconsistent` when the verdict says otherwise than the scores: an acceptance with a
 * score under its minimum, or a rejection with every score at or above it. Empty: accept.
 */
export function acceptFailures(reply: JudgeReply, accept: GradeAccept): RuleFailure[] {
  const failures: RuleFailure[] = [];
  for (const score of BOUNDED_SCORES) {
    const min = accept[score];
    if (min !== null && reply[score] < min)
      failures.push({
        code: `low-${score}` satisfies RejectionCode,
        reason: `${score} ${reply[score]} of 5, under grade.accept.${score} ${min}`,
      });
  }
  if (reply.verdict === 'accept' && failures.length)
    failures.push({
      code: 'judge-inconsistent',
      reason: 'the judge accepted with a score under its minimum',
    });
  if (reply.verdict === 'reject' && !failures.length)
    failures.push({
      code: 'judge-inconsistent',
      reason: 'the judge rejected with every score at or above its minimum',
    });
  return failures;
}

/** The judge's 1-5 scores as the 0-1 scores a grade holds. */
function unitScores(v: JudgeReply): Grade['scores'] {
  const unit = (score: number) => (score - 1) / 4;
  return {
    quality: unit(v.quality),
    difficulty: unit(v.difficulty),
    answerability: unit(v.answerability),
    verifiability: unit(v.verifiability),
  };
}

async function judge(llm: Llm, accept: GradeAccept, c: QaCandidate): Promise<Judgement> {
  const reply =
    c.kind === 'multiple-choice'
      ? await llm.complete({
          stage: 'mcq-quality',
          schema: JudgeReply,
          promptVersion: MCQ_QUALITY_PROMPT,
          messages: mcqQualityMessages(c.passage.text, accept, c),
        })
      : await llm.complete({
          stage: 'freeform-grade',
          schema: JudgeReply,
          promptVersion: FREEFORM_GRADE_PROMPT,
          messages: freeformGradeMessages(c.passage.text, accept, c),
        });
  return {
    reply: reply.value,
    gradedBy: {
      model: reply.model,
      promptVersion: c.kind === 'multiple-choice' ? MCQ_QUALITY_PROMPT : FREEFORM_GRADE_PROMPT,
    },
  };
}
