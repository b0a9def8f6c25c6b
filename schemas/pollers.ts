import { z } from 'zod';

/**
 * The config of the literature pollers (PubMed, Europe PMC, bioRxiv): schemas only, so the config
 * file can be checked without loading a poller; sources/pollers/ builds pollers from it.
 */

/** A calendar day as YYYY-MM-DD (UTC), as the pollers' cursors and `since` hold it. */
export const isDay = (s: string) =>
  /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`));

/** How politely and how persistently to ask. Every field has a default; configs override a few. */
export const HttpSettings = z
  .object({
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
      .describe(
        'a longer Retry-After is not waited out here: the error is thrown and the step retries later; every Retry-After is stored with the cursor either way',
      ),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(256 * 1024 * 1024),
  })
  .strict();
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
  // Pollers used to give an unreadable page up after this many polls, losing its records for good.
  maxPageFailures: z
    .never({
      error:
        'maxPageFailures is gone: an unreadable page now stalls its poller until it reads again or `bioalchemy poll --skip` gives it up',
    })
    .optional(),
  stallBackoffMs: z
    .number()
    .int()
    .min(0)
    .default(30_000)
    .describe(
      'wait before reading an unreadable page again; doubles on each failure up to maxStallBackoffMs',
    ),
  maxStallBackoffMs: z.number().int().min(0).default(900_000),
  stallAlertAfterMs: z
    .number()
    .int()
    .min(0)
    .default(3_600_000)
    .describe('a poller stalled this long raises the BioalchemyPollerStalled alert and logs an error'),
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
/**
 * One poller in the config file. Secrets are not config: the NCBI key comes from env NCBI_API_KEY.
 * Strict, as the rest of the config: a misspelt key would otherwise be a setting that does nothing.
 */
export const PollerConfig = z.discriminatedUnion('kind', [
  PubmedConfig.strict(),
  EuropePmcConfig.strict(),
  BiorxivConfig.strict(),
]);
export type PollerConfig = z.infer<typeof PollerConfig>;
export type PollerConfigInput = z.input<typeof PollerConfig>;

/**
 * What the ingest task keeps per poller in its `cursors` store, committed with each page (or alone
 * when a page could not be read): the position, why the poller is stuck if it is, and until when
 * its host asked not to be called. `status`, /metrics and the dashboard read it from the log.
 */
export const PollerState = z.object({
  /** The poller's name ('pubmed', 'europepmc', 'biorxiv', 'medrxiv'), for readers without the config. */
  poller: z.string(),
  /** The poller's own opaque cursor; null: nothing read yet (starts at `since`). */
  cursor: z.string().nullable(),
  stalled: z
    .object({
      since: z.iso.datetime(),
      /** Upstream's own words where it gave any (NCBI's ERROR, bioRxiv's messages[0].status). */
      reason: z.string(),
      url: z.string().nullable(),
      /** Failed reads of this page so far. */
      attempts: z.number().int().min(1),
      /** The poller's stallAlertAfterMs when it last failed, so readers without the config can alert. */
      alertAfterMs: z.number().int().min(0),
    })
    .nullable(),
  paused: z
    .object({
      /** The host's next allowed call (Retry-After), honoured by every later poll in any process. */
      until: z.iso.datetime(),
      host: z.string(),
      reason: z.string(),
    })
    .nullable(),
});
export type PollerState = z.infer<typeof PollerState>;
