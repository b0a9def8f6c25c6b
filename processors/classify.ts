import type { Llm } from '../llm/index.js';
import {
  CLASSIFY_PROMPT,
  type ClassifyReply,
  classifyMessages,
  classifyReply,
} from '../llm/prompts/classify.js';
import type { Config } from '../schemas/config.js';
import type { ClassifiedQa, GradedQa } from '../schemas/qa.js';
import type { Taxonomy } from '../schemas/taxonomy.js';
import type { Processor } from '../topology/processor.js';
import { windowed } from '../topology/window.js';
import { type LlmFailure, llmFailure } from './llm-failure.js';

type ClassifyConfig = Config['classify'];

export interface ClassifyOptions extends ClassifyConfig {
  readonly llm: Llm;
  readonly inFlight: number;
  readonly taxonomy: Taxonomy;
}

type Classified =
  | { readonly kind: 'labels'; readonly labels: ClassifyReply['labels']; readonly model: string }
  | ({ readonly kind: 'unusable' } & LlmFailure);

/**
 * qa.graded -> qa.classified: the LLM's MeSH Biology labels (multi-label, with confidences) at or
 * above classify.minConfidence, and beside them the categories the article's own MeSH headings
 * reach through the taxonomy tree, a partial signal that costs no call. A QA whose labels all fall
 * under the minimum goes on with none: the sampler and the mix report count it as unlabelled.
 */
export function classifyProcessor(opts: ClassifyOptions): Processor {
  const schema = classifyReply(opts.taxonomy);
  return windowed<Classified>({
    name: 'classify',
    description: 'LLM: MeSH Biology subcategories, multi-label; article MeSH mapped beside them',
    reads: ['qa.graded'],
    writes: ['qa.classified'],
    stores: [],
    window: {
      inFlight: opts.inFlight,
      async start(input) {
        const { candidate } = input.value as GradedQa;
        try {
          const reply = await opts.llm.complete({
            stage: 'classify',
            schema,
            promptVersion: CLASSIFY_PROMPT,
            messages: classifyMessages(opts.taxonomy, candidate),
          });
          return { kind: 'labels', labels: reply.value.labels, model: reply.model };
        } catch (e) {
          return { kind: 'unusable', ...llmFailure(e, candidate) };
        }
      },
      finish(input, outcome, ctx) {
        if (!outcome.ok) throw outcome.error;
        const graded = input.value as GradedQa;
        const result = outcome.value;
        if (result.kind === 'unusable') {
          // The LLM layer's reasons already start with the stage's name.
          const reason = result.reason.startsWith('classify: ')
            ? result.reason
            : `classify: ${result.reason}`;
          ctx.deadLetter(input, result.code, reason, result.payload);
          return;
        }
        // The reply's schema admits only the taxonomy's ids (a journaled reply is validated again);
        // checked once more where the record is made, so no change to the schema can break it unseen.
        const unknown = result.labels.filter((l) => !opts.taxonomy.has(l.category));
        if (unknown.length) {
          ctx.deadLetter(
            input,
            'label-unknown',
            `classify: labels not in ${opts.taxonomy.name}: ${unknown.map((l) => JSON.stringify(l.category)).join(', ')}`,
          );
          return;
        }
        const best = confidentLabels(result.labels, opts.minConfidence);
        const classified: ClassifiedQa = {
          ...graded,
          classification: {
            labels: best,
            meshLabels: [
              ...new Set(
                graded.candidate.provenance.articleMesh.flatMap((d) => opts.taxonomy.categoriesOf(d)),
              ),
            ].sort(),
            taxonomy: { name: opts.taxonomy.name, meshYear: opts.taxonomy.meshYear },
            classifiedBy: { model: result.model, promptVersion: CLASSIFY_PROMPT },
          },
        };
        ctx.emit('qa.classified', graded.candidate.id, classified);
      },
    },
  });
}

/**
 * The labels a QA keeps: those at or above the minimum confidence (one under it is not a label),
 * a category named twice once with its highest confidence, in the model's order.
 */
export function confidentLabels(
  labels: ClassifyReply['labels'],
  minConfidence: number,
): { category: string; confidence: number }[] {
  const best = new Map<string, number>();
  for (const l of labels)
    if (l.confidence >= minConfidence)
      best.set(l.category, Math.max(best.get(l.category) ?? 0, l.confidence));
  return [...best].map(([category, confidence]) => ({ category, confidence }));
}
