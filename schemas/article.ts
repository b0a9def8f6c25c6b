import { z } from 'zod';

export const MeshHeading = z.object({
  descriptorUi: z.string().nullable(),
  name: z.string().min(1),
  majorTopic: z.boolean(),
  qualifiers: z
    .array(z.object({ ui: z.string().nullable(), name: z.string(), majorTopic: z.boolean() }))
    .default([]),
});
export type MeshHeading = z.infer<typeof MeshHeading>;

export const Section = z.object({
  heading: z.string(),
  text: z.string(),
});
export type Section = z.infer<typeof Section>;

export const Caption = z.object({
  kind: z.enum(['figure', 'table']),
  label: z.string().nullable(),
  text: z.string(),
});

/** How a record joined its work (sources/works.ts): the first record, or the key that linked it. */
export const WorkLink = z.enum(['first', 'id', 'relation', 'text', 'near-text']);
export type WorkLink = z.infer<typeof WorkLink>;

/** One record of a work: its own article id, the source it came from and how it was linked. */
export const WorkRecord = z.object({
  id: z.string().min(1),
  source: z.string().min(1),
  link: WorkLink,
});
export type WorkRecord = z.infer<typeof WorkRecord>;

export const Article = z.object({
  id: z.string().min(1).describe('doi:…, pmid:…, pmcid:… or sha256:… (ids.articleId)'),
  source: z.string().min(1),
  sourceUri: z.string().optional(),
  doi: z.string().nullable(),
  pmid: z.string().nullable(),
  pmcid: z.string().nullable(),
  title: z.string(),
  abstract: z.string(),
  sections: z.array(Section),
  captions: z.array(Caption).default([]),
  keywords: z.array(z.string()).default([]),
  mesh: z.array(MeshHeading).default([]).describe('MeSH headings when the source has them (MEDLINE)'),
  publicationTypes: z.array(z.string()).default([]),
  journal: z.string().nullable(),
  published: z
    .string()
    .regex(/^\d{4}(-\d{2}(-\d{2})?)?$/)
    .nullable()
    .describe('YYYY, YYYY-MM or YYYY-MM-DD'),
  licence: z.string().nullable(),
  contentHash: z.string().min(1).describe('hash of title, abstract and section text'),
  relatedIds: z
    .array(z.string().min(1))
    .default([])
    .describe(
      "other records of the same work, as the source declares them (bioRxiv's `published` DOI), as article ids",
    ),
  records: z
    .array(WorkRecord)
    .default([])
    .describe(
      'every record merged into this work (the article is a work): its id, source and link; empty for one record',
    ),
  textSentBefore: z
    .array(z.string())
    .default([])
    .describe(
      'keys of the texts (abstract, sections) an earlier record of this work already carried: extract skips them',
    ),
});
export type Article = z.infer<typeof Article>;
