import { z } from 'zod';

const Paths = z
  .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
  .transform((p) => (typeof p === 'string' ? [p] : p))
  .describe(
    'dot path(s) into the record, first non-empty wins; keys match case-insensitively when no exact key exists',
  );

/**
 * How a JSON record maps onto an Article. Validated, so a typo in a user's mapping file fails
 * at start-up with a message rather than yielding a stream of empty articles.
 */
export const JsonlMapping = z
  .object({
    source: z.string().min(1).default('jsonl').describe("the Article's source field"),
    id: Paths.optional().describe('record id, quoted in dead letters'),
    title: Paths.optional(),
    abstract: Paths.optional().describe('a string, or a list of strings / {text} paragraphs'),
    text: Paths.optional().describe('unstructured full text: becomes one section'),
    sections: z
      .object({
        path: Paths,
        heading: z.string().min(1).default('section'),
        text: z.string().min(1).default('text'),
        citeSpans: z
          .string()
          .min(1)
          .optional()
          .describe(
            'field of each paragraph listing {start, end, text} citation spans; numbered ones are cut out',
          ),
      })
      .optional()
      .describe(
        'a list of {heading, text} paragraphs; consecutive ones under the same heading join into one section',
      ),
    doi: Paths.optional(),
    pmid: Paths.optional(),
    pmcid: Paths.optional(),
    related: Paths.optional().describe(
      "other records of the same work: a DOI, PMID or PMCID, or a list of them (bioRxiv's `published`)",
    ),
    journal: Paths.optional().describe('a string, or an object with a name'),
    published: Paths.optional().describe('a year or a date string'),
    licence: Paths.optional(),
    keywords: Paths.optional().describe("a list, or one string split on ';'"),
    paragraphBreak: z
      .string()
      .min(1)
      .optional()
      .describe("a marker standing for a paragraph break (S2ORC abstracts use ':::')"),
    annotated: z
      .object({ text: Paths, annotations: Paths })
      .optional()
      .describe(
        'Semantic Scholar datasets-API full text: one string plus span annotations (title, abstract, sectionheader, paragraph)',
      ),
  })
  .strict();
export type JsonlMapping = z.infer<typeof JsonlMapping>;
export type JsonlMappingInput = z.input<typeof JsonlMapping>;

/**
 * S2ORC in both shapes it has been published in:
 * - release 2020-07-05: `metadata` lines (paper_id, title, abstract with ':::' breaks, doi,
 *   pubmed_id, pmc_id, journal, year) and `pdf_parses` lines (abstract and body_text as
 *   [{section, text, cite_spans…}]), or the two merged into one line;
 * - the Semantic Scholar datasets API (2023-): corpusid, externalids {doi, pubmed, pubmedcentral}
 *   (capitalised in the papers dataset), content.text with JSON-encoded span annotations.
 */
export const S2ORC: JsonlMappingInput = {
  source: 's2orc',
  id: ['paper_id', 'corpusid', 'corpus_id'],
  title: ['title', 'metadata.title'],
  abstract: ['abstract', 'metadata.abstract', 'paperAbstract', 'pdf_parse.abstract'],
  sections: {
    path: ['body_text', 'pdf_parse.body_text'],
    heading: 'section',
    text: 'text',
    citeSpans: 'cite_spans',
  },
  doi: ['doi', 'externalids.doi', 'external_ids.doi', 'metadata.doi'],
  pmid: ['pubmed_id', 'externalids.pubmed', 'external_ids.pubmed', 'metadata.pubmed_id'],
  pmcid: ['pmc_id', 'externalids.pubmedcentral', 'external_ids.pubmedcentral', 'metadata.pmc_id'],
  journal: ['journal', 'venue', 'metadata.journal', 'metadata.venue'],
  published: ['publicationdate', 'year', 'metadata.year'],
  licence: ['license', 'content.source.oainfo.license', 'openaccessinfo.license'],
  paragraphBreak: ':::',
  annotated: { text: 'content.text', annotations: 'content.annotations' },
};

/** Plain records with the obvious field names. */
export const GENERIC: JsonlMappingInput = {
  source: 'jsonl',
  id: ['id', '_id'],
  title: 'title',
  abstract: 'abstract',
  text: ['text', 'body', 'full_text'],
  sections: { path: 'sections', heading: 'heading', text: 'text' },
  doi: 'doi',
  pmid: ['pmid', 'pubmed_id'],
  pmcid: ['pmcid', 'pmc_id'],
  related: ['related_ids', 'related'],
  journal: 'journal',
  published: ['published', 'date', 'year'],
  licence: ['licence', 'license'],
  keywords: 'keywords',
};

export const JSONL_PRESETS = { s2orc: S2ORC, generic: GENERIC } as const;
export type JsonlPreset = keyof typeof JSONL_PRESETS;

/** A preset name, 'auto' (S2ORC-looking records use s2orc, others generic), or a mapping of one's own. */
export type JsonlMappingChoice = JsonlPreset | 'auto' | JsonlMappingInput;

export const S2ORC_MAPPING = JsonlMapping.parse(S2ORC);
export const GENERIC_MAPPING = JsonlMapping.parse(GENERIC);

const S2ORC_MARKS = ['paper_id', 'corpusid', 'body_text', 'externalids', 'pdf_parse'];

export function looksLikeS2orc(record: Record<string, unknown>): boolean {
  return S2ORC_MARKS.some((k) => k in record);
}

/** Resolves a choice to a parsed mapping (or to 'auto'); throws a readable error for a bad custom mapping. */
export function resolveMapping(choice: JsonlMappingChoice = 'auto'): JsonlMapping | 'auto' {
  if (choice === 'auto') return 'auto';
  if (choice === 's2orc') return S2ORC_MAPPING;
  if (choice === 'generic') return GENERIC_MAPPING;
  const parsed = JsonlMapping.safeParse(choice);
  if (!parsed.success) throw new Error(`invalid JSONL mapping: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
