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
});
export type Article = z.infer<typeof Article>;
