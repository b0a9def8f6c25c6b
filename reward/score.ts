import type { RewardRequestItem, RewardResult } from '../schemas/feeder.js';
import { anchor } from './anchor.js';
import { freeFormGrader, type Grader, isVerb, type Mention, mcqGrader, type Verdict } from './graders.js';
import { RULES } from './rules.js';
import {
  ANSWER_LABEL,
  ANSWER_PHRASE,
  afterRevision,
  boxed,
  dropFootnotes,
  finalText,
  isQuestion,
  isWord,
  prepare,
  sentencesOf,
  type Token,
} from './text.js';

// The verifiable reward, anchored on the reference. The same steps live in
// clients/python/bioalchemy_client/reward.py (with reward_text.py, reward_anchor.py,
// reward_graders.py and reward_rules.py, one per file here), both read the tables of
// reward/rules.json, and both pass the same tables of outputs (test/fixtures/reward-*.json):
// change them together.
//
// The steps, in order:
// 1. finalText + prepare: the text after any <think> block, folded to plain ASCII (Greek spelled
//    out, primes, dashes, \text{}, markdown emphasis).
//    dropFootnotes: footnote marks glued to what they annotate ("1953[2]", "1953²") go.
// 2. anchor: every occurrence of the reference's accepted forms (itself, its aliases, both sides
//    of "long (SHORT)", a binomial's abbreviation, its singular or plural) becomes one token, so
//    punctuation inside a name ("E. coli", "1,25-", "Na+/K+") never cuts it. For multiple choice
//    the forms are the options' texts, each standing for its letter. With them, the forms the
//    output itself writes (names.ts: "Gregor Johann Mendel", "SA node"). A citation mark run into
//    a form goes with it ("Otto Hahn1.": citationDigits); a comma, quotes or full stops between
//    letters inside a name do not cut it ("Kiss Me, Kate", "D.I.V.O.R.C.E.": loosePunctuation).
// 3. afterRevision: an explicit revision ("First I thought A, but on reflection C") leaves only
//    what follows it.
// 4. placesOf: the answer span: every \boxed{}; else the last line when it alone opens with an
//    answer label ("Solution: Choice_C", finalLine); else every "answer: ..." / "the answer is
//    ..." phrase; else the last sentence that is not a question, a remark or an elaboration
//    (endOfAnswer), with every earlier sentence that is nothing but candidates ("C", "3 copies")
//    and no restated option ("Choice A: Mitochondria"). The first place that names anything decides.
//    Free-form (issue 50): when no answer is stated as such and the final sentence names no
//    candidate, the whole answer is read (judgeWholeAnswer): the reference where it occurs pays,
//    unless a named refusal step finds what a policy could game (denied, listed, taken back).
// 5. judge: a candidate in a clause with a negation is no answer ("not C", "C is wrong"); a
//    conflicting candidate beside it scores 0: another option, another value or a bound
//    ("p < 0.05 or p > 0.05"), another item of a list ("E. coli or S. aureus"), another box.
//    A free-form answer ends its phrase: "kinase" is not the answer in "a kinase inhibitor", unless
//    the sentence named the head before ("the largest bee ... is the queen bee": headGiven); the
//    head, a counted word and the rest of a longer name before "or" go with it as one candidate.
// 6. undecided (issue 61): what the rules cannot tell scores 0 and is left to a verifier: no
//    candidate found, a list without a disjunction (hedgeOrList), an enumeration's item, a date in
//    the reference's month without its day; another year or another month of a dated reference
//    (anotherYear, dateOfYear) is decided.

type Input = Pick<RewardRequestItem, 'kind' | 'ground_truth' | 'output'> &
  Partial<Pick<RewardRequestItem, 'options' | 'aliases'>>;

export function score(input: Input): RewardResult {
  return readAnswer(input).result;
}

/**
 * The rules' verdict, and whether they decided it. `undecided` is the answer span (the sentences
 * the rules read as the answer, as written) when they found neither the reference nor a
 * conflicting answer there: the only outputs a verifier model may be asked about
 * (processors/reward-verifier.ts). Every other output, an empty one or one whose only candidates
 * are negated included, is decided: its verdict stands whatever a verifier would say.
 */
export interface RulesReading {
  readonly result: RewardResult;
  readonly undecided: string | null;
}

/** The sentences of a place as written (tokens keep their text and the space before them). */
const spanOf = (sentences: Token[][]): string =>
  sentences
    .map((s) => s.map((t, i) => (i > 0 && t.space ? ' ' : '') + t.text).join(''))
    .join(' ')
    .trim();

export function readAnswer(input: Input): RulesReading {
  const prepared = dropFootnotes(prepare(finalText(input.output)));
  if (!/[A-Za-z0-9]/.test(prepared)) return { result: { score: 0, reason: 'empty output' }, undecided: null };
  const grader =
    input.kind === 'mcq'
      ? mcqGrader(input.ground_truth, input.options ?? [])
      : freeFormGrader(input.ground_truth, input.aliases ?? []);
  const forms = grader.written ? [...grader.forms, ...grader.written(prepared)] : grader.forms;
  const text = afterRevision(anchor(prepared, forms));
  for (const place of placesOf(text, grader)) {
    if (place.unknown)
      return {
        result: { score: 0, reason: `a box without the answer among the ${place.where}` },
        undecided: null,
      };
    const verdict = place.whole
      ? judgeWholeAnswer(grader, place.sentences, place.whole)
      : judge(grader, place.sentences, place.where);
    if (verdict?.undecided)
      return {
        result: { score: 0, reason: verdict.reason },
        undecided: spanOf(place.sentences) || prepared.trim(),
      };
    if (verdict) return { result: verdict, undecided: null };
    const another = place.decisive ? grader.another?.(place.sentences) : null;
    if (another)
      return {
        result: { score: 0, reason: `another year (${another}) in the ${place.where}` },
        undecided: null,
      };
    if (place.decisive)
      return {
        result: { score: 0, reason: `no candidate answer in the ${place.where}` },
        undecided: spanOf(place.sentences) || prepared.trim(),
      };
  }
  return {
    result: { score: 0, reason: 'no candidate answer in the final sentence' },
    undecided: prepared.trim(),
  };
}

/**
 * The canonical forms an answer is written in (the exported `solution` is the first): the reward
 * must pay each of them, or no trainer could ever be paid for the item.
 */
export const canonicalOutputs = (answer: string): string[] => [
  `Answer: ${answer}`,
  `\\boxed{${answer}}`,
  `The answer is ${answer}.`,
];

/**
 * Why the reward could not pay a reference's own canonical forms, or null when it pays each: a
 * reference that fails here would train nothing, whatever a model answers.
 */
export function unverifiable(item: Omit<Input, 'output'>): string | null {
  for (const output of canonicalOutputs(item.ground_truth)) {
    const r = score({ ...item, output });
    if (r.score !== 1)
      return `the reward cannot verify its own reference in ${JSON.stringify(output)}: ${r.reason}`;
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Places and the decision

/**
 * The candidates of a sentence, and how many a negation cancels: a negation reaches the
 * candidates after it in its clause ("not C", "does not increase"), and one before it when only
 * filler lies between ("C is not correct", "C is clearly wrong"), not "C and not B".
 */
function readSentence(grader: Grader, tokens: Token[]): { positive: Mention[]; negated: number } {
  const mentions = grader.mentions(tokens);
  const mentionAt = new Map<number, Mention>();
  for (const m of mentions) for (let k = m.start; k < m.end; k++) mentionAt.set(k, m);
  const clauseOf: number[] = [];
  let clause = 0;
  tokens.forEach((t, i) => {
    if (!mentionAt.has(i) && ((t.kind === 'punct' && ',;:'.includes(t.key)) || RULES.clauseWords.has(t.key)))
      clause++;
    clauseOf.push(clause);
  });
  const skippable = (t: Token) => t.kind === 'punct' || RULES.fillers.has(t.key) || t.key.endsWith('ly');
  const negated = new Set<Mention>();
  tokens.forEach((t, k) => {
    if (mentionAt.has(k) || t.kind !== 'word' || !RULES.negators.has(t.key)) return;
    for (const m of mentions) {
      if (clauseOf[m.start] !== clauseOf[k]) continue;
      let between = m.end;
      while (between < k && skippable(tokens[between]!) && !mentionAt.has(between)) between++;
      if ((m.start > k && !copulaBetween(tokens, k, m.start)) || between === k) negated.add(m);
    }
  });
  const positive = mentions.filter((m) => !negated.has(m));
  return { positive, negated: negated.size };
}

/**
 * A copula between a negation and the candidate after it states the candidate: the negation is in
 * the subject ("The scientist who never married him was George Eliot", "(not 1934) was Chadwick").
 */
const copulaBetween = (tokens: Token[], from: number, to: number) =>
  tokens.slice(from + 1, to).some((t) => RULES.endOfAnswer.copulas.has(t.key));

/** A sentence of nothing but candidates and filler ("C", "3 copies", "A is possible."). */
function candidatesOnly(grader: Grader, tokens: Token[]): boolean {
  const mentions = grader.mentions(tokens);
  if (mentions.length === 0) return false;
  return tokens.every(
    (t, i) =>
      t.kind === 'punct' || RULES.fillers.has(t.key) || mentions.some((m) => i >= m.start && i < m.end),
  );
}

function judge(grader: Grader, sentences: Token[][], where: string): Verdict | null {
  const read = sentences.map((s) => readSentence(grader, s));
  const positive = read.flatMap((r) => r.positive);
  if (positive.length > 0) return grader.decide(positive, where);
  return read.some((r) => r.negated > 0)
    ? { score: 0, reason: `only negated candidates in the ${where}` }
    : null;
}

interface Place {
  readonly where: string;
  readonly sentences: Token[][];
  /** When it names nothing, nothing later is read (a box is the answer, even an empty one). */
  readonly decisive: boolean;
  /** A box with something other than the answer in it. */
  readonly unknown?: boolean;
  /** The whole answer, read by judgeWholeAnswer: its final sentence, which names no candidate. */
  readonly whole?: Token[];
}

const startsWith = (tokens: Token[], phrase: string) =>
  phrase.split(' ').every((w, k) => tokens.filter((t) => t.kind !== 'punct')[k]?.key === w);

/**
 * endOfAnswer: a sentence after the answer that leaves it standing: it names no candidate, no
 * negator and no hedge, and is a remark ("Hope this helps!", "Confidence: high") or opens with a
 * word that refers back ("It is often called the heart's natural pacemaker.").
 */
function endsAnswer(grader: Grader, tokens: Token[]): boolean {
  const first = tokens[0]!;
  // "Confidence: 0.8" is a remark whatever its value: a number there is no answer to a count.
  if (RULES.endOfAnswer.labels.has(first.key) && tokens[1]?.key === ':' && tokens.length <= 5)
    return !tokens.some((t) => t.kind === 'form');
  if (grader.mentions(tokens).length > 0) return false;
  // A closing remark may say "else" ("Let me know if you need anything else."): no hedge there.
  if (RULES.endOfAnswer.remarks.some((r) => startsWith(tokens, r))) return true;
  if (tokens.some((t) => RULES.negators.has(t.key) || RULES.endOfAnswer.hedges.has(t.key))) return false;
  return first.kind === 'word' && RULES.endOfAnswer.anaphors.has(first.key) && !namesAnother(tokens);
}

/**
 * "It is the AV node.": an anaphor, a copula and a short name that ends the sentence names an
 * answer the grader does not know (another one), not an elaboration of the one before.
 */
function namesAnother(tokens: Token[]): boolean {
  const words = tokens.filter((t) => t.kind !== 'punct');
  if (words.length < 3 || !RULES.endOfAnswer.copulas.has(words[1]!.key)) return false;
  const rest = words.slice(2).filter((t) => !['the', 'a', 'an'].includes(t.key));
  return rest.length > 0 && rest.length <= 3;
}

/**
 * restatesOption: a sentence that gives an option's letter and its own text ("Choice A:
 * Mitochondria", "B) Ribosome"), as reasoning lists the options: it names no answer.
 */
function restatesOption(grader: Grader, tokens: Token[]): boolean {
  const mentions = grader.mentions(tokens);
  return (
    mentions.length >= 2 &&
    mentions.every((m) => m.value === mentions[0]!.value) &&
    mentions.some((m) => tokens[m.start]!.kind === 'form') &&
    mentions.some((m) => tokens[m.start]!.kind === 'word')
  );
}

/** At most this many sentences after the answer are passed over as remarks or elaborations. */
const MAX_AFTER_ANSWER = 5;

/** A line with anything to read: sentencesOf gives it at least one sentence. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: \u0001 opens the anchor's mark of an accepted form
const HAS_CONTENT = /[A-Za-z0-9\u0001]/;

/**
 * finalLine: what follows the label on the last line, when that line (remarks after it aside)
 * opens with an answer label and no line before it does; else null. Only the last lines are cut
 * into tokens, and none when no line has a label: most outputs are decided by the next places.
 */
function finalAnswerLine(text: string, grader: Grader): Token[][] | null {
  const lines = text.split('\n');
  if (!lines.some((l) => ANSWER_LABEL.test(l))) return null;
  const content = lines.flatMap((l, k) => (HAS_CONTENT.test(l) ? [k] : []));
  let at = content.length - 1;
  while (
    at > 0 &&
    (NOTE.test(lines[content[at]!]!) || sentencesOf(lines[content[at]!]!).every((s) => endsAnswer(grader, s)))
  )
    at--;
  if (at < 0) return null;
  const last = content[at]!;
  const labelled = lines.slice(0, last + 1).filter((l) => ANSWER_LABEL.test(l)).length;
  if (labelled !== 1 || !ANSWER_LABEL.test(lines[last]!)) return null;
  return sentencesOf(lines[last]!.replace(ANSWER_LABEL, ''));
}

/** notesAfter: a line after the final answer that opens as a note ("Note: ...", "Please note ..."). */
const NOTE = new RegExp(`^[\\s>*-]*(?:${RULES.notes.map((p) => p.replace(/ /g, '\\s+')).join('|')})\\b`, 'i');

function* placesOf(text: string, grader: Grader): Generator<Place> {
  const boxes = boxed(text);
  if (boxes.length > 0) {
    const each = boxes.map((b) => sentencesOf(b.replace(/\n/g, ' ')));
    if (
      grader.text &&
      each.length > 1 &&
      each.some((sentences) => !sentences.some((s) => grader.mentions(s).length > 0))
    )
      yield { where: 'boxed answers', sentences: [], decisive: true, unknown: true };
    else yield { where: 'boxed answer', sentences: each.flat(), decisive: true };
    return;
  }
  // finalLine: the last line (after remarks) opens with an answer label and no other line does.
  const line = finalAnswerLine(text, grader);
  if (line !== null) yield { where: 'final answer line', sentences: line, decisive: false };
  const phrases = [...text.matchAll(ANSWER_PHRASE)].flatMap((m) => sentencesOf(m[1]!).slice(0, 1));
  if (phrases.length > 0) yield { where: 'answer phrase', sentences: phrases, decisive: false };
  // An answer stated as such (a final line, "the answer is") that names no candidate is another
  // answer: the reference elsewhere in the text is not read then.
  const stated = line !== null || phrases.length > 0;
  const sentences = sentencesOf(text).filter((s) => !isQuestion(s));
  let end = sentences.length;
  while (end > 1 && sentences.length - end < MAX_AFTER_ANSWER && endsAnswer(grader, sentences[end - 1]!))
    end--;
  const last = sentences[end - 1];
  if (last === undefined) return;
  // offersAlternative: "Alternatively, it could be ..." after "The answer might be X." hedges X.
  if (grader.mentions(last).length === 0 && last.some((t) => RULES.endOfAnswer.alternatives.has(t.key))) {
    yield { where: 'final sentence', sentences: [last], decisive: true };
    return;
  }
  const restated = restatesOption(grader, last);
  const alsoNamed = sentences
    .slice(0, end - 1)
    .filter((s) => candidatesOnly(grader, s) && (restated || !restatesOption(grader, s)));
  const whole = grader.wholeAnswer && !stated;
  // The last item of an enumeration is no final answer: the whole answer is read (enumeration).
  if (!(whole && isItem(last) && isEnumeration(sentences)))
    yield { where: 'final sentence', sentences: [...alsoNamed, last], decisive: !whole };
  if (whole) yield { where: 'answer', sentences, decisive: true, whole: last };
}

/**
 * whereItOccurs: when the final sentence names no candidate, the reference wherever it occurs in
 * the answer pays ("Jane Doe played the detective. She won an award for it."), as people grade,
 * unless a refusal step finds what a policy could game:
 * - deniedReference: it is quoted and denied somewhere ("It is not Jane Doe.");
 * - listedReference: it is one of a list or a hedge (grader.decide);
 * - takenBack: the final sentence offers an alternative ("Alternatively, ..."), opens a
 *   conclusion with another answer ("So the structure in question is the AV node."), denies or hedges
 *   what came before in its main clause ("It is not, however, the only one.": doubtsInMainClause),
 *   or names another answer ("It is the AV node.");
 * - enumeration: it is one item of a numbered or bulleted list of three or more (undecided).
 */
function judgeWholeAnswer(grader: Grader, sentences: Token[][], last: Token[]): Verdict | null {
  const read = sentences.map((s) => readSentence(grader, s));
  const positive = read.flatMap((r) => r.positive);
  const denied = read.some((r) => r.negated > 0);
  if (positive.length === 0)
    return denied ? { score: 0, reason: 'only negated candidates in the answer' } : null;
  if (denied) return { score: 0, reason: 'the reference is quoted and denied in the answer' };
  if (takesBack(last)) return { score: 0, reason: 'the final sentence takes the answer back' };
  if (read.some((r, k) => r.positive.length > 0 && isItem(sentences[k]!)) && isEnumeration(sentences))
    return { score: 0, reason: 'the answer is one item of an enumeration in the answer', undecided: true };
  return grader.decide(positive, 'answer');
}

/**
 * enumeration: a line that opens as an item ("1. Gold", "2) Copper", "- Zinc"). The reference as one
 * item of three or more, with nothing stated as the answer, is a list the question may or may not
 * ask for: undecided, as a list in a sentence is.
 */
const isItem = (tokens: Token[]) =>
  (tokens[0]?.kind === 'num' && ['.', ')'].includes(tokens[1]?.key ?? '')) || tokens[0]?.key === '-';

/** Three or more items: a list, where one or two numbered lines are steps of an answer. */
const isEnumeration = (sentences: Token[][]) => sentences.filter(isItem).length >= 3;

/** takenBack: see judgeWholeAnswer. */
function takesBack(last: Token[]): boolean {
  if (last.some((t) => RULES.endOfAnswer.alternatives.has(t.key))) return true;
  const first = last[0]!;
  if (RULES.endOfAnswer.conclusions.has(first.key)) return true;
  const refersBack = first.kind === 'word' && RULES.endOfAnswer.anaphors.has(first.key);
  return (
    (refersBack && (doubtsInMainClause(last) || namesAnotherPlainly(last))) || opensWithAnotherName(last)
  );
}

/**
 * doubtsInMainClause: a negator or a hedge before the sentence's first subordinator or bracket
 * doubts what came before ("It is not, however, the only one.", "It might also be ..."); one in a
 * clause about something else describes it ("It is played by teams who are not allowed shoes.",
 * "These are younglings that haven't learned to fly yet."). A doubt there names no other
 * candidate, so reading it as a description opens nothing a policy could game: a sentence that
 * names one is read by namesAnother and opensWithAnotherName.
 */
function doubtsInMainClause(tokens: Token[]): boolean {
  for (const t of tokens) {
    if (t.key === '(' || RULES.endOfAnswer.subordinators.has(t.key)) return false;
    if (RULES.negators.has(t.key) || RULES.endOfAnswer.hedges.has(t.key)) return true;
  }
  return false;
}

/**
 * namesAnother, where what follows the copula is only a name: "They were married in 1200." and
 * "It was written in 1594." say more of the answer, they name no other one.
 */
const namesAnotherPlainly = (tokens: Token[]) =>
  namesAnother(tokens) &&
  !tokens
    .filter(isWord)
    .slice(2)
    .some((t) => t.kind === 'num' || RULES.continuations.has(t.key) || /^[a-z]{3,}ed$/.test(t.text));

/** A word of a name, or a particle inside one ("Hugo Marie de Vries"). */
const isNameWord = (t: Token, inside: boolean) =>
  t.kind === 'word' && (/^[A-Z][a-z]/.test(t.text) || (inside && RULES.nameParticles.has(t.text)));

/**
 * "Hugo Marie de Vries rediscovered the laws.": a final sentence whose subject is a name of two
 * words or more (the reference is no candidate there) names another answer of the same kind.
 */
function opensWithAnotherName(last: Token[]): boolean {
  // "The Queen presented ...": an article opens a description, not a name.
  let k = ['the', 'a', 'an'].includes(last[0]!.key) ? 1 : 0;
  const start = k;
  while (k < last.length && isNameWord(last[k]!, k > start)) k++;
  return k - start >= 2 && k < last.length && isVerb(last[k]!);
}
