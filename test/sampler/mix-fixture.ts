import { MixState } from '../../schemas/mix-state.js';

/** A valid MixState with two topics, for tests of whatever stores or serves mixes. */
export function mixFixture(over: Partial<MixState> = {}): MixState {
  return MixState.parse({
    version: 1,
    at: '2026-12-01T12:00:00.000Z',
    reason: 'new data',
    alpha: 0.5,
    seed: 0,
    repeatCap: 1,
    taxonomy: { name: 'MeSH Biology', meshYear: 2024 },
    reference: { name: 'test', counts: { genetics: 100, ecology: 25 }, unknown: [] },
    heldOut: { topics: [], publishedFrom: null, sources: [] },
    observed: { genetics: 40, ecology: 10 },
    target: { genetics: 2 / 3, ecology: 1 / 3 },
    quotas: {
      genetics: { share: 2 / 3, quota: 20, upsample: 0.83, level: 1, threshold: 0.5, damp: 1 },
      ecology: { share: 1 / 3, quota: 10, upsample: 1.67, level: 1, threshold: 1, damp: 1 },
    },
    starving: [],
    metrics: {
      items: 50,
      heldOut: 0,
      size: 30,
      distinct: 30,
      maxMinRatio: 2,
      averageUpsample: 1.25,
      yield: 0.6,
      tvdReference: 0.13,
      tvdTarget: 0,
      jsTarget: 0,
      kept: null,
    },
    ...over,
  });
}
