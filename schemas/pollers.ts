import { z } from 'zod';

/**
 * The config of the literature pollers (PubMed, Europe PMC, bioRxiv): schemas only, so the config
 * file can be checked without loading a poller; processors/sources/pollers/ builds pollers from it.
 */

/** A calendar day as YYYY-MM-DD (UTC), as the pollers' cursors and `since` hold it. */
export const isDay = (s: string) =>
  /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`));

/** How politely and how persistently to ask. Every field has a default; configs override a few. */
export const HttpSettings = z.object({
  userAgent: z
    .string()
    .min(1)
    .optional()
    .describe('default: bioalchemy-stream/<version> with the contact address'),
  contact: z
    .string()
    .optional()
    .describe('an e-mail address put in the User-Agent, so operators can reach us'),
  timeoutMs: z.number().int().positive().default(60_000).describe('per attempt, body included'),
  retries: z
    .number()
    .int()
    .min(0)
    .default(4)
    .describe('attempts after the first on 429, 5xx and network errors'),
  backoffMs: z.number().int().min(0).default(1_000),
  maxBackoffMs: z.number().int().min(0).default(60_000),
  maxRetryAfterMs: z
    .number()
    .int()
    .min(0)
    .default(120_000)
    .describe('a longer Retry-After is not waited out here: the error is thrown and the step retries later'),
  maxBodyBytes: z
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
});
export type HttpSettings = z.infer<typeof HttpSettings>;

/** Settings every poller shares; each poller's config extends these. */
export const CommonPollerConfig = z.object({
  since: z
    .string()
    .refine(isDay, 'a date as YYYY-MM-DD')
    .describe('first day to read when there is no cursor yet'),
  lagDays: z
    .number()
    .int()
    .min(0)
    .max(30)
    .default(1)
    .describe('days a finished day is left to settle before it is read (UTC)'),
  baseUrl: z.url().optional().describe("the API's root; the public endpoint by default"),
  requestsPerSecond: z.number().positive().optional().describe("the API's polite rate by default"),
  maxPageFailures: z
    .number()
    .int()
    .min(1)
    .default(3)
    .describe('polls an unreadable listing page is retried on before it is given up as a dead letter'),
  http: HttpSettings.optional(),
});

export const PubmedConfig = CommonPollerConfig.extend({
  kind: z.literal('pubmed'),
  query: z.string().min(1).default('hasabstract').describe('PubMed search term; the day window is added'),
  // efetch ids travel in the URL; NCBI asks for POST beyond 200.
  pageSize: z.number().int().min(1).max(200).default(100).describe('PMIDs fetched per page'),
  tool: z.string().min(1).default('bioalchemy-stream').describe("E-utilities 'tool' parameter"),
  email: z.string().optional().describe("E-utilities 'email' parameter (default: env NCBI_EMAIL)"),
});
export type PubmedConfig = z.infer<typeof PubmedConfig>;
export const EuropePmcConfig = CommonPollerConfig.extend({
  kind: z.literal('europepmc'),
  query: z.string().min(1).default('HAS_ABSTRACT:y').describe('Europe PMC query; the day window is added'),
  pageSize: z.number().int().min(1).max(1000).default(100),
  // FIRST_IDATE (first indexed) only grows at the front; a FIRST_PDATE window misses records
  // indexed after their publication day has been read.
  dateField: z.enum(['FIRST_IDATE', 'FIRST_PDATE']).default('FIRST_IDATE'),
  fullText: z.boolean().default(true).describe('fetch JATS full text of open-access records in Europe PMC'),
});
export type EuropePmcConfig = z.infer<typeof EuropePmcConfig>;
export const BiorxivConfig = CommonPollerConfig.extend({
  kind: z.literal('biorxiv'),
  server: z.enum(['biorxiv', 'medrxiv']).default('biorxiv'),
  category: z.string().min(1).optional().describe("subject category, e.g. 'cell_biology'; all by default"),
  // jatsxml lives on www.biorxiv.org, which often refuses automated clients: opt in.
  fullText: z.boolean().default(false).describe("fetch each preprint's JATS XML"),
});
export type BiorxivConfig = z.infer<typeof BiorxivConfig>;
/** One poller in the config file. Secrets are not config: the NCBI key comes from env NCBI_API_KEY. */
export const PollerConfig = z.discriminatedUnion('kind', [PubmedConfig, EuropePmcConfig, BiorxivConfig]);
export type PollerConfig = z.infer<typeof PollerConfig>;
export type PollerConfigInput = z.input<typeof PollerConfig>;
