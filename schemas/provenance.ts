import { z } from 'zod';

/** Who made a record from what: carried by every derived record back to its article. */
export const Provenance = z.object({
  articleId: z.string().min(1),
  source: z.string().min(1).describe('source reader or poller that produced the article, e.g. jats, medline'),
  sourceUri: z.string().optional().describe('file path or URL the article came from'),
  pmid: z
    .string()
    .optional()
    .describe("the article's PMID, beside a DOI article id: grade matches eval items' sources by either"),
  doi: z.string().optional().describe("the article's DOI, beside a PMID article id"),
  workIds: z
    .array(z.string())
    .default([])
    .describe(
      "every id of the article's work (its records' and declared relations' ids): grade matches eval items' sources by any",
    ),
  licence: z.string().nullable().describe('licence of the article text, as stated by the source'),
  journal: z.string().nullable().default(null),
  published: z
    .string()
    .regex(/^\d{4}(-\d{2}(-\d{2})?)?$/)
    .nullable()
    .default(null)
    .describe("the article's publication date: YYYY, YYYY-MM or YYYY-MM-DD"),
  articleMesh: z
    .array(z.string())
    .default([])
    .describe(
      "the article's MeSH descriptors (UI, else name): classify maps them to categories without an LLM",
    ),
});
export type Provenance = z.infer<typeof Provenance>;

/** The model and prompt version behind an LLM-made field; a new prompt version means new records. */
export const ModelStamp = z.object({
  model: z.string().min(1),
  promptVersion: z.string().min(1),
});
export type ModelStamp = z.infer<typeof ModelStamp>;
