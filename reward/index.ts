// The verifiable reward: what the feeder's /v1/reward, grade and the exports use.
export { acceptedForms } from './graders.js';
export { canonicalOutputs, type RulesReading, readAnswer, score, unverifiable } from './score.js';
