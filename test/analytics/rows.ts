import { type QaRow, qaRow } from '../../analytics/qa-store.js';
import { ClassifiedQa } from '../../schemas/qa.js';

/** A valid ClassifiedQa, flattened the way the count sink does it. */
export function qa(
  id: string,
  categories: readonly string[],
  opts: {
    verdict?: 'accept' | 'reject';
    question?: string;
    answer?: string;
    source?: string;
    published?: string;
    classifiedAt?: number;
  } = {},
): QaRow {
  const record = ClassifiedQa.parse({
    candidate: {
      id,
      articleId: 'doi:10.1000/xyz',
      passage: { sectionIndex: 0, start: 0, end: 5, text: 'Text.' },
      kind: 'free-form',
      question: opts.question ?? `What does ${id} ask?`,
      answer: opts.answer ?? 'mitochondria',
      provenance: {
        articleId: 'doi:10.1000/xyz',
        source: opts.source ?? 'jats',
        licence: 'CC BY 4.0',
        published: opts.published ?? null,
      },
      generatedBy: { model: 'm', promptVersion: 'extract-v1' },
    },
    grade: {
      scores: { quality: 0.9, difficulty: 0.4, answerability: 1, verifiability: 0.8 },
      verdict: opts.verdict ?? 'accept',
      reasons: [],
      gradedBy: { model: 'm', promptVersion: 'grade-v1' },
    },
    classification: {
      labels: categories.map((category) => ({ category, confidence: 0.9 })),
      meshLabels: [],
      taxonomy: { name: 'MeSH Biology', meshYear: 2024 },
      classifiedBy: { model: 'm', promptVersion: 'classify-v1' },
    },
  });
  return qaRow(record, opts.classifiedAt ?? 0);
}

/** The SQL-injection probe of the brief, plus the characters string escaping gets wrong. */
export const NASTY = `'); DROP TABLE qa; -- \\' \\\\ "x" \n\t{run:String} ?  ünïcødé 🧬`;
