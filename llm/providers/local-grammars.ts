/**
 * Grammars (llama.cpp GBNF) the local provider uses for the two generation stages instead of the
 * one node-llama-cpp builds from the stage's JSON Schema. A 270M model writes whatever its grammar
 * lets it, and with the schema alone most of what it wrote was refused by grade for its form (a
 * statement for a question, three options, a key that is no option's letter, a sentence for an
 * answer). Here those are impossible to write; grade's rules stay as they are, and a remote model
 * gets the plain schema (the reply is still validated against it).
 *
 * What each grammar enforces beyond the schema:
 * - a question starts with an interrogative and ends with its only "?";
 * - mcq: 4 or 5 options of 1-80 characters, and a key among their letters (A-D for 4, A-E for 5);
 * - freeform: an answer of 1-40 characters with no sentence end in it;
 * - options and answers without "<" or ">" (the model copied the prompt's "<first option>");
 * - one question a reply: relevance has already decided the passage is worth one, and asked for
 *   up to three the model wrote the same question three times (BENCHMARKS.md).
 * JSON is written compact, its keys in the schema's order.
 */

/** How a question may begin. */
export const INTERROGATIVES = [
  'What',
  'Which',
  'How',
  'Why',
  'Where',
  'When',
  'Who',
  'Whose',
  'In what',
  'In which',
  'At what',
  'By what',
  'By which',
  'To what',
  'Through what',
];

/** Rules both grammars share: a question, a bounded string, and their characters. */
const COMMON = [
  `question ::= "\\"" interrogative " " qchar{12,180} "?\\""`,
  `interrogative ::= ${INTERROGATIVES.map((w) => `"${w}"`).join(' | ')}`,
  // No quote, backslash, control character or question mark inside the question.
  'qchar ::= [^"\\\\?\\x00-\\x1f]',
  'char ::= [^"\\\\\\x00-\\x1f]',
  'ochar ::= [^"\\\\<>\\x00-\\x1f]',
  'rationale ::= "\\"" char{0,240} "\\""',
].join('\n');

const MCQ = [
  'root ::= "{\\"questions\\":[" mcq "]}"',
  'mcq ::= four | five',
  'four ::= "{\\"question\\":" question ",\\"options\\":[" option ("," option){3} "],\\"answer\\":\\"" [A-D] "\\",\\"rationale\\":" rationale "}"',
  'five ::= "{\\"question\\":" question ",\\"options\\":[" option ("," option){4} "],\\"answer\\":\\"" [A-E] "\\",\\"rationale\\":" rationale "}"',
  'option ::= "\\"" ochar{1,80} "\\""',
  COMMON,
].join('\n');

const FREEFORM = [
  'root ::= "{\\"questions\\":[" pair "]}"',
  'pair ::= "{\\"question\\":" question ",\\"answer\\":" answer ",\\"rationale\\":" rationale "}"',
  // A term, a name or a number with its unit: no "?" or "!", and no full stop that ends it.
  'answer ::= "\\"" achar{0,39} [^"\\\\?!.<>\\x00-\\x1f ] "\\""',
  'achar ::= [^"\\\\?!<>\\x00-\\x1f]',
  COMMON,
].join('\n');

/** The grammar of a stage, by the name its JSON Schema goes under (the stage's name). */
export const STAGE_GRAMMARS: Readonly<Record<string, string>> = { mcq: MCQ, freeform: FREEFORM };
