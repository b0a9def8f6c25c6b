import { readFileSync } from 'node:fs';
import { z } from 'zod';

// The reward's tables, read from reward/rules.json: the Python twin
// (clients/python/bioalchemy_client/reward_rules.py) reads the same file, so the two cannot drift.

const wordSet = z.string().transform((s) => new Set(s.split(' ')));
const phrases = z.object({ about: z.string(), phrases: z.array(z.string()) }).transform((t) => t.phrases);
const aboutWords = z
  .strictObject({ about: z.string(), words: z.string() })
  .transform((u) => new Set(u.words.split(' ')));
const pairs = z.array(z.tuple([z.string(), z.string()]));

const RewardRules = z.strictObject({
  about: z.string(),
  greek: z.record(z.string(), z.string()),
  greekLookalikes: z.strictObject({ about: z.string(), letters: z.record(z.string(), z.string()) }),
  numberWords: z.array(z.string()),
  scales: z.record(z.string(), z.number()).transform((t) => new Map(Object.entries(t))),
  units: z
    .strictObject({ about: z.string(), words: z.string() })
    .transform((u) => new Set(u.words.split(' '))),
  unitWords: wordSet,
  bounds: z.strictObject({ about: z.string(), symbols: z.string(), phrases: z.array(z.string()) }),
  negators: wordSet,
  clauseWords: wordSet,
  fillers: wordSet,
  letterLinks: wordSet,
  letterPrefixes: wordSet,
  continuations: wordSet,
  heads: wordSet,
  listWords: wordSet,
  disjunctions: wordSet,
  listPunctuation: wordSet,
  binomials: z
    .strictObject({ about: z.string(), names: z.record(z.string(), z.string()) })
    .transform((b) => new Map(Object.entries(b.names))),
  revisions: phrases,
  endings: z.strictObject({ about: z.string(), added: z.array(z.string()), swaps: pairs, irregular: pairs }),
  countWords: aboutWords,
  subjectVerbs: aboutWords,
  endOfAnswer: z.strictObject({
    about: z.string(),
    remarks: z.array(z.string()),
    labels: wordSet,
    anaphors: wordSet,
    hedges: wordSet,
    alternatives: wordSet,
    conclusions: wordSet,
    copulas: wordSet,
    subordinators: wordSet,
  }),
  regions: z
    .strictObject({ about: z.string(), names: z.array(z.string()) })
    .transform((r) => new Set(r.names)),
  months: wordSet,
  appositions: wordSet,
  titles: aboutWords,
  nameParticles: wordSet,
  notes: phrases,
  answerLabels: phrases,
});

export const RULES = RewardRules.parse(
  JSON.parse(readFileSync(new URL('./rules.json', import.meta.url), 'utf8')),
);
