// The LLM layer's public surface; processors import from here only.

export { LLM_CALLS_TOPIC, LlmCallLog } from './calls.js';
export { type Clock, systemClock } from './clock.js';
export { ENDPOINTS_TOPIC, EndpointMemory } from './endpoint-memory.js';
export {
  LlmContextError,
  LlmRefusalError,
  LlmReplyError,
  LlmRequestError,
  LlmStoppedError,
} from './errors.js';
export type { ConcurrencyState } from './flow/endpoint.js';
export type { EndpointFault } from './flow/faults.js';
export type { ResponseJournal } from './journal/journal.js';
export { JOURNAL_TOPIC, LogJournal } from './journal/log.js';
export { MemoryJournal } from './journal/memory.js';
export { type Completion, type CompletionRequest, Llm, type LlmOptions } from './llm.js';
export type { LlmMetrics } from './metrics.js';
