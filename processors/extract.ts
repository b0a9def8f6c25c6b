import { Counter, type Registry } from 'prom-client';
import type { Completion, Llm } from '../llm/index.js';
import { FREEFORM_PROMPT, FreeformReply, freeformMessages } from '../llm/prompts/freeform.js';
import { MCQ_PROMPT, McqReply, mcqMessages } from '../llm/prompts/mcq.js';
import { RELEVANCE_PROMPT, RelevanceReply, relevanceMessages } from '../llm/prompts/relevance.js';
import type { Article } from '../schemas/article.js';
import type { DeadLetterCode } from '../schemas/dead-letter.js';
import { contentHash } from '../schemas/ids.js';
import type { Provenance } from '../schemas/provenance.js';
import { type PassageSpan, QaCandidate } from '../schemas/qa.js';
import { informativeFirst, passagesOf, sectionText } from '../sources/passages.js';
import { sentTextKey, unversioned, workIds } from '../sources/works.js';
import type { Processor } from '../topology/processor.js';
import { RetryableError } from '../topology/task.js';
import { windowed } from '../topology/window.js';
import { llmFailure } from './llm-failure.js';
import { looksEnglish } from './qa/language.js';

export interface ExtractOptions {
  readonly llm: Llm;
  /** Where the passages counter goes (the process's registry); none in unit tests. */
  readonly registry?: Registry;
  /** Articles whose LLM work is in flight at once (the window's capacity). */
  readonly inFlight: number;
  /** Passages of one article sent to the model, the most informative first (informativeFirst). */
  readonly maxPassages: number;
  /** Token budget of a passage (~4 characters a token). */
  readonly passageTokens: number;
}

/** Why a passage gave no question: one dead letter. */
interface PassageFailure {
  readonly code: DeadLetterCode;
  readonly reason: string;
  readonly payload?: string;
}

/**
 * A passage's end: questions for it, not relevant (with why), or failed (a dead letter each).
 * Questions and failures may come together: one generator's unusable reply does not cost the
 * other generator's questions.
 */
interface PassageResult {
  readonly passage: PassageSpan;
  readonly candidates: QaCandidate[];
  readonly skipped?: string;
  readonly failures?: readonly PassageFailure[];
}

/** A passage longer than this is not sent: the splitter cut no smaller (one huge word). */
const MAX_PASSAGE_CHARS = 20_000;

/**
 * articles -> qa.candidates, the paper's first stages: each passage is judged for relevance, and
 * a relevant one gets multiple-choice and free-form questions. An article's passages go out at
 * once (the LLM layer bounds concurrency); the window keeps `inFlight` articles' calls running
 * across steps. Every passage ends as questions, a skip counted in the metrics, or a dead letter
 * with its reason; an article with no text at all is one dead letter.
 */
export function extractProcessor(opts: ExtractOptions): Processor {
  const passages = new Counter({
    name: 'bioalchemy_extract_passages_total',
    help: 'Passages extract finished, by outcome: questions, none (relevant, no usable question), irrelevant, dead-letter',
    labelNames: ['outcome'],
    registers: opts.registry ? [opts.registry] : [],
  });
  return windowed<PassageResult[]>({
    name: 'extract',
    description: 'LLM: passage relevance, then MCQ and free-form QA per relevant passage',
    reads: ['articles'],
    writes: ['qa.candidates'],
    stores: [],
    window: {
      inFlight: opts.inFlight,
      async start(input) {
        const article = input.value as Article;
        const passages = passagesToExtract(article, opts);
        return Promise.all(passages.map((p) => extractPassage(opts.llm, article, p)));
      },
      finish(input, outcome, ctx) {
        if (!outcome.ok) {
          // Its calls were given up because we stop: the article waits for the next start.
          if (outcome.error instanceof RetryableError) throw outcome.error;
          ctx.deadLetter(input, 'processor-failed', `extract: ${(outcome.error as Error).message}`);
          return;
        }
        if (outcome.value.length === 0) {
          // An update whose texts were all extracted before: nothing to do, nothing lost.
          if ((input.value as Article).textSentBefore.length) return;
          ctx.deadLetter(input, 'no-text', 'extract: article has no text to make passages from');
          return;
        }
        for (const result of outcome.value) {
          passages.inc({
            outcome: result.failures?.length
              ? 'dead-letter'
              : result.skipped !== undefined
                ? 'irrelevant'
                : result.candidates.length
                  ? 'questions'
                  : 'none',
          });
          // Keyed by article: one work's questions are graded in one partition, in the order
          // extract made them, so they reach every band owner in that order and the same one of a
          // work's duplicates wins whatever the worker count (processors/dedup/).
          for (const c of result.candidates) ctx.emit('qa.candidates', c.articleId, c);
          const at = `passage ${result.passage.sectionIndex}:${result.passage.start}-${result.passage.end}`;
          for (const failure of result.failures ?? [])
            ctx.deadLetter(input, failure.code, `extract: ${at}: ${failure.reason}`, failure.payload);
        }
        // An article that gave no question and no failure still leaves a record saying why, so
        // every article ends somewhere: in QA, or in a dead letter with its reason.
        if (outcome.value.every((r) => !r.failures?.length && r.candidates.length === 0)) {
          const irrelevant = outcome.value.filter((r) => r.skipped !== undefined).length;
          ctx.deadLetter(
            input,
            'no-question',
            `extract: no passage gave a question (${irrelevant} judged irrelevant, ${outcome.value.length - irrelevant} without a usable question)`,
          );
        }
      },
    },
  });
}

/**
 * The passages extract asks about, most informative first, at most maxPassages. An update of a
 * work carries the texts an earlier record already brought: they are left out, so one work's
 * questions are extracted once (sources/works.ts).
 */
export function passagesToExtract(
  article: Article,
  opts: Pick<ExtractOptions, 'passageTokens' | 'maxPassages'>,
): PassageSpan[] {
  const all = passagesOf(article, { maxTokens: opts.passageTokens });
  const sent = new Set(article.textSentBefore);
  // One hash a text, not one a passage: a 10 MB abstract makes thousands of passages.
  const sentSections = new Set<number>();
  if (sent.size > 0)
    for (const sectionIndex of new Set(all.map((p) => p.sectionIndex)))
      if (sent.has(sentTextKey(sectionText(article, sectionIndex) ?? ''))) sentSections.add(sectionIndex);
  const fresh = all.filter((p) => !sentSections.has(p.sectionIndex));
  return informativeFirst(article, fresh).slice(0, opts.maxPassages);
}

async function extractPassage(llm: Llm, article: Article, passage: PassageSpan): Promise<PassageResult> {
  const done = (rest: Omit<PassageResult, 'passage' | 'candidates'> & { candidates?: QaCandidate[] }) => ({
    passage,
    candidates: [],
    ...rest,
  });
  const fail = (code: DeadLetterCode, reason: string) => done({ failures: [{ code, reason }] });
  if (passage.text.trim().length === 0) return fail('no-text', 'empty passage');
  if (passage.text.length > MAX_PASSAGE_CHARS)
    return fail(
      'too-large',
      `passage of ${passage.text.length} characters, over ${MAX_PASSAGE_CHARS} (no break to cut it at)`,
    );
  if (!looksEnglish(passage.text)) return fail('not-english', 'passage is not in English');
  let relevance: Completion<RelevanceReply>;
  try {
    relevance = await llm.complete({
      stage: 'relevance',
      schema: RelevanceReply,
      promptVersion: RELEVANCE_PROMPT,
      messages: relevanceMessages(article.title, passage.text),
    });
  } catch (e) {
    // A dead letter for this passage, while the article's other passages go on.
    return done({ failures: [llmFailure(e, passage)] });
  }
  if (!relevance.value.relevant) return done({ skipped: relevance.value.reason });
  // Each generator on its own: an unusable reply from one is a dead letter for it, and the other's
  // questions still go on.
  const [mcq, freeform] = await Promise.allSettled([
    llm.complete({
      stage: 'mcq',
      schema: McqReply,
      promptVersion: MCQ_PROMPT,
      messages: mcqMessages(article.title, passage.text),
    }),
    llm.complete({
      stage: 'freeform',
      schema: FreeformReply,
      promptVersion: FREEFORM_PROMPT,
      messages: freeformMessages(article.title, passage.text),
    }),
  ]);
  const provenance = provenanceOf(article);
  const candidates: QaCandidate[] = [];
  const refused: string[] = [];
  const failures: PassageFailure[] = [];
  const add = (draft: unknown, reply: Completion<unknown>) => {
    const parsed = QaCandidate.safeParse(draft);
    if (parsed.success) candidates.push(parsed.data);
    else
      refused.push(
        `${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message} (${reply.model})`,
      );
  };
  if (mcq.status === 'rejected') failures.push(llmFailure(mcq.reason, passage));
  else
    for (const q of mcq.value.value.questions) {
      add(
        {
          id: contentHash(article.id, passage.text, q.question),
          articleId: article.id,
          articleTitle: article.title,
          passage,
          kind: 'multiple-choice',
          question: q.question.trim(),
          options: q.options.map((o) => o.trim().replace(/^\(?[A-Ja-j][).:]\s+/, '')),
          answer: optionLetter(q.answer),
          rationale: q.rationale,
          provenance,
          generatedBy: { model: mcq.value.model, promptVersion: MCQ_PROMPT },
        },
        mcq.value,
      );
    }
  if (freeform.status === 'rejected') failures.push(llmFailure(freeform.reason, passage));
  else
    for (const q of freeform.value.value.questions) {
      add(
        {
          id: contentHash(article.id, passage.text, q.question),
          articleId: article.id,
          articleTitle: article.title,
          passage,
          kind: 'free-form',
          question: q.question.trim(),
          answer: q.answer.trim(),
          rationale: q.rationale,
          provenance,
          generatedBy: { model: freeform.value.model, promptVersion: FREEFORM_PROMPT },
        },
        freeform.value,
      );
    }
  // A question the record schema refuses (no option letter as key, say) is a dead letter; the
  // passage's other questions go on.
  if (refused.length)
    failures.push({ code: 'question-unusable', reason: `question not usable: ${refused.join('; ')}` });
  return done({ candidates, ...(failures.length ? { failures } : {}) });
}

/** "B", "b)", "(B)", "Option B" and "B. Mitochondria" are all key B; anything else stays as it is and fails the schema. */
export function optionLetter(answer: string): string {
  const m = answer.trim().match(/^(?:option\s+)?\(?([A-Ja-j])(?:[).:\s]|$)/i);
  return m ? m[1]!.toUpperCase() : answer.trim();
}

export function provenanceOf(article: Article): Provenance {
  return {
    articleId: article.id,
    source: article.source,
    ...(article.sourceUri ? { sourceUri: article.sourceUri } : {}),
    ...(article.pmid ? { pmid: article.pmid } : {}),
    ...(article.doi ? { doi: article.doi } : {}),
    workIds: [...new Set([...workIds(article), ...article.relatedIds.map(unversioned)])],
    licence: article.licence,
    journal: article.journal,
    published: article.published,
    articleMesh: article.mesh.map((m) => m.descriptorUi ?? m.name),
  };
}
