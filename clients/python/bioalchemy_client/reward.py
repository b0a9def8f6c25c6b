"""The verifiable reward: the same rules as reward/*.ts (text.ts, anchor.ts, graders.ts, score.ts), step
for step, reading the same tables (reward/rules.json, linked here as reward_rules.json) and tested on the
same two tables of outputs (test/fixtures/reward-cases.json and test/fixtures/reward-adversarial.json).
Change them together; the steps are described at the top of reward/score.ts.

The port is split as the TypeScript is, one file each: reward_rules.py (the tables, as rules.ts),
reward_text.py (text.ts), reward_anchor.py (anchor.ts), reward_names.py (names.ts), reward_graders.py
(graders.ts), and this file
(score.ts: places, the judge, `score`, `unverifiable`; and verl's `compute_score`). Its public names
(`score`, `compute_score`, `canonical_outputs`, `unverifiable`, and the steps' own) stay importable from
here. The imports are absolute: verl loads this file by path (see verl.py).

JavaScript's regular expressions are ASCII where Python's are not: every pattern here is compiled with
re.ASCII, `$` is written `\\Z` (Python's `$` also matches before a final newline), and where a pattern
reads raw text (a reference, an option) JavaScript's `\\s`, `.` and trim() are spelled out."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple

# What the steps below use, and the public names of the other modules (with _RULES and _patterns_of,
# which the tests read): importable from here as they were before the port was split.
from bioalchemy_client.reward_anchor import ANSWER, Form, _patterns_of, anchor, binomial_forms, form_key
from bioalchemy_client.reward_graders import (LETTERS, NUMERIC_TOLERANCE, Mention, _free_form_grader,
                                              _Grader, _mcq_grader, accepted_forms, is_verb, numeric_form)
from bioalchemy_client.reward_rules import (_ALTERNATIVES, _ANAPHORS, _CLAUSE_WORDS, _CONCLUSIONS, _CONTINUATIONS,
                                           _COPULAS, _FILLERS,
                                           _HEDGES, _NAME_PARTICLES, _NEGATORS, _NOTES, _REMARK_LABELS, _REMARKS,
                                           _RULES, _SUBORDINATORS)
from bioalchemy_client.reward_text import (_A, _ANSWER_LABEL, _ANSWER_PHRASE, _S, MARK_CLOSE, MARK_OPEN, Token,
                                           _is_question, _is_word, _trim, after_revision, boxed, drop_footnotes, final_text,
                                           prepare, sentences_of, tokenize)


# -------------------------------------------------------------------------------------------------
# Places and the decision (reward/score.ts)


def _read_sentence(grader: _Grader, tokens: List[Token]) -> Tuple[List[Mention], int]:
    """The candidates of a sentence, and how many a negation cancels: a negation reaches the candidates
    after it in its clause ("not C", "does not increase"), and one before it when only filler lies
    between ("C is not correct", "C is clearly wrong"), not "C and not B"."""
    mentions = grader.mentions(tokens)
    mention_at = set()
    for m in mentions:
        mention_at.update(range(m.start, m.end))
    clause_of = []
    clause = 0
    for i, t in enumerate(tokens):
        if i not in mention_at and ((t.kind == "punct" and t.key in ",;:") or t.key in _CLAUSE_WORDS):
            clause += 1
        clause_of.append(clause)

    def skippable(t):
        return t.kind == "punct" or t.key in _FILLERS or t.key.endswith("ly")

    negated = set()  # indexes into mentions
    for k, t in enumerate(tokens):
        if k in mention_at or t.kind != "word" or t.key not in _NEGATORS:
            continue
        for index, m in enumerate(mentions):
            if clause_of[m.start] != clause_of[k]:
                continue
            between = m.end
            while between < k and skippable(tokens[between]) and between not in mention_at:
                between += 1
            if (m.start > k and not _copula_between(tokens, k, m.start)) or between == k:
                negated.add(index)
    positive = [m for index, m in enumerate(mentions) if index not in negated]
    return positive, len(negated)


def _copula_between(tokens: List[Token], start: int, end: int) -> bool:
    """A copula between a negation and the candidate after it states the candidate: the negation is in the
    subject ("The scientist who never married him was George Eliot", "(not 1934) was Chadwick")."""
    return any(t.key in _COPULAS for t in tokens[start + 1:end])


def _candidates_only(grader: _Grader, tokens: List[Token]) -> bool:
    """A sentence of nothing but candidates and filler ("C", "3 copies", "A is possible.")."""
    mentions = grader.mentions(tokens)
    if not mentions:
        return False
    return all(t.kind == "punct" or t.key in _FILLERS or any(m.start <= i < m.end for m in mentions)
               for i, t in enumerate(tokens))


def _judge(grader: _Grader, sentences: List[List[Token]], where: str) -> Optional[dict]:
    read = [_read_sentence(grader, s) for s in sentences]
    positive = [m for r in read for m in r[0]]
    if positive:
        return grader.decide(positive, where)
    if any(r[1] > 0 for r in read):
        return {"score": 0, "reason": f"only negated candidates in the {where}"}
    return None


class _Place(NamedTuple):
    where: str
    sentences: list
    decisive: bool  # when it names nothing, nothing later is read (a box is the answer, even an empty one)
    unknown: bool = False  # a box with something other than the answer in it
    whole: Optional[List[Token]] = None  # the whole answer, read by _judge_whole_answer: its final sentence


def _starts_with(tokens: List[Token], phrase: str) -> bool:
    words = [t for t in tokens if t.kind != "punct"]
    return all(k < len(words) and words[k].key == w for k, w in enumerate(phrase.split(" ")))


def _ends_answer(grader: _Grader, tokens: List[Token]) -> bool:
    """end_of_answer: a sentence after the answer that leaves it standing: it names no candidate, no negator
    and no hedge, and is a remark ("Hope this helps!", "Confidence: high") or opens with a word that refers
    back ("It is often called the heart's natural pacemaker.")."""
    first = tokens[0]
    # "Confidence: 0.8" is a remark whatever its value: a number there is no answer to a count.
    if first.key in _REMARK_LABELS and len(tokens) > 1 and tokens[1].key == ":" and len(tokens) <= 5:
        return not any(t.kind == "form" for t in tokens)
    if grader.mentions(tokens):
        return False
    # A closing remark may say "else" ("Let me know if you need anything else."): no hedge there.
    if any(_starts_with(tokens, r) for r in _REMARKS):
        return True
    if any(t.key in _NEGATORS or t.key in _HEDGES for t in tokens):
        return False
    return first.kind == "word" and first.key in _ANAPHORS and not _names_another(tokens)


def _names_another(tokens: List[Token]) -> bool:
    """"It is the AV node.": an anaphor, a copula and a short name that ends the sentence names an answer the
    grader does not know (another one), not an elaboration of the one before."""
    words = [t for t in tokens if t.kind != "punct"]
    if len(words) < 3 or words[1].key not in _COPULAS:
        return False
    rest = [t for t in words[2:] if t.key not in ("the", "a", "an")]
    return 0 < len(rest) <= 3


def _restates_option(grader: _Grader, tokens: List[Token]) -> bool:
    """A sentence that gives an option's letter and its own text ("Choice A: Mitochondria", "B) Ribosome"),
    as reasoning lists the options: it names no answer."""
    mentions = grader.mentions(tokens)
    return (len(mentions) >= 2 and all(m.value == mentions[0].value for m in mentions)
            and any(tokens[m.start].kind == "form" for m in mentions)
            and any(tokens[m.start].kind == "word" for m in mentions))


# At most this many sentences after the answer are passed over as remarks or elaborations.
_MAX_AFTER_ANSWER = 5


# A line with anything to read: sentences_of gives it at least one sentence.
_HAS_CONTENT = re.compile("[A-Za-z0-9\u0001]", _A)


def _final_answer_line(text: str, grader: _Grader) -> Optional[List[List[Token]]]:
    """final_line: what follows the label on the last line, when that line (remarks after it aside) opens with
    an answer label and no line before it does; else None. Only the last lines are cut into tokens, and none
    when no line has a label: most outputs are decided by the next places."""
    lines = text.split("\n")
    if not any(_ANSWER_LABEL.search(line) for line in lines):
        return None
    content = [k for k, line in enumerate(lines) if _HAS_CONTENT.search(line)]
    at = len(content) - 1
    while at > 0 and (_NOTE.match(lines[content[at]]) or all(_ends_answer(grader, s)
                                                              for s in sentences_of(lines[content[at]]))):
        at -= 1
    if at < 0:
        return None
    last = content[at]
    labelled = sum(1 for line in lines[:last + 1] if _ANSWER_LABEL.search(line))
    if labelled != 1 or not _ANSWER_LABEL.search(lines[last]):
        return None
    return sentences_of(_ANSWER_LABEL.sub("", lines[last], count=1))


# notes_after: a line after the final answer that opens as a note ("Note: ...", "Please note ...").
_NOTE = re.compile("^(?:" + _S + "|[>*-])*(?:" + "|".join(p.replace(" ", _S + "+") for p in _NOTES) + r")\b",
                   _A | re.IGNORECASE)


def _places_of(text: str, grader: _Grader) -> Iterator[_Place]:
    boxes = boxed(text)
    if boxes:
        each = [sentences_of(b.replace("\n", " ")) for b in boxes]
        if grader.text and len(each) > 1 and any(
                not any(grader.mentions(s) for s in sentences) for sentences in each):
            yield _Place("boxed answers", [], True, True)
        else:
            yield _Place("boxed answer", [s for sentences in each for s in sentences], True)
        return
    # final_line: the last line (after remarks) opens with an answer label and no other line does.
    line = _final_answer_line(text, grader)
    if line is not None:
        yield _Place("final answer line", line, False)
    phrases = [s for m in _ANSWER_PHRASE.finditer(text) for s in sentences_of(m.group(1))[:1]]
    if phrases:
        yield _Place("answer phrase", phrases, False)
    # An answer stated as such (a final line, "the answer is") that names no candidate is another answer: the
    # reference elsewhere in the text is not read then.
    stated = line is not None or bool(phrases)
    sentences = [s for s in sentences_of(text) if not _is_question(s)]
    end = len(sentences)
    while end > 1 and len(sentences) - end < _MAX_AFTER_ANSWER and _ends_answer(grader, sentences[end - 1]):
        end -= 1
    if end == 0:
        return
    last = sentences[end - 1]
    # offers_alternative: "Alternatively, it could be ..." after "The answer might be X." hedges X.
    if not grader.mentions(last) and any(t.key in _ALTERNATIVES for t in last):
        yield _Place("final sentence", [last], True)
        return
    restated = _restates_option(grader, last)
    also_named = [s for s in sentences[:end - 1]
                  if _candidates_only(grader, s) and (restated or not _restates_option(grader, s))]
    whole = grader.whole_answer and not stated
    # The last item of an enumeration is no final answer: the whole answer is read (enumeration).
    if not (whole and _is_item(last) and _is_enumeration(sentences)):
        yield _Place("final sentence", also_named + [last], not whole)
    if whole:
        yield _Place("answer", sentences, True, whole=last)


def _judge_whole_answer(grader: _Grader, sentences: List[List[Token]], last: List[Token]) -> Optional[dict]:
    """where_it_occurs: when the final sentence names no candidate, the reference wherever it occurs in the
    answer pays ("Jane Doe played the detective. She won an award for it."), as people grade, unless a refusal
    step finds what a policy could game:
    - denied_reference: it is quoted and denied somewhere ("It is not Jane Doe.");
    - listed_reference: it is one of a list or a hedge (grader.decide);
    - taken_back: the final sentence offers an alternative ("Alternatively, ..."), concludes with another
      answer ("So the structure in question is the AV node."), denies or hedges what came before in its main
      clause ("It is not, however, the only one.": _doubts_in_main_clause), or names another answer ("It is
      the AV node.")."""
    read = [_read_sentence(grader, s) for s in sentences]
    positive = [m for r in read for m in r[0]]
    denied = any(r[1] > 0 for r in read)
    if not positive:
        return {"score": 0, "reason": "only negated candidates in the answer"} if denied else None
    if denied:
        return {"score": 0, "reason": "the reference is quoted and denied in the answer"}
    if _takes_back(last):
        return {"score": 0, "reason": "the final sentence takes the answer back"}
    if (any(r[0] and _is_item(s) for r, s in zip(read, sentences))
            and _is_enumeration(sentences)):
        return {"score": 0, "reason": "the answer is one item of an enumeration in the answer", "undecided": True}
    return grader.decide(positive, "answer")


def _is_enumeration(sentences: List[List[Token]]) -> bool:
    """Three or more items: a list, where one or two numbered lines are steps of an answer."""
    return sum(1 for s in sentences if _is_item(s)) >= 3


def _is_item(tokens: List[Token]) -> bool:
    """enumeration: a line that opens as an item ("1. Gold", "2) Copper", "- Zinc"). The reference as one item
    of three or more, with nothing stated as the answer, is a list the question may or may not ask for:
    undecided, as a list in a sentence is."""
    first = tokens[0] if tokens else None
    second = tokens[1] if len(tokens) > 1 else None
    return ((first is not None and first.kind == "num" and second is not None and second.key in (".", ")"))
            or (first is not None and first.key == "-"))


def _takes_back(last: List[Token]) -> bool:
    """taken_back: see _judge_whole_answer."""
    if any(t.key in _ALTERNATIVES for t in last):
        return True
    first = last[0]
    if first.key in _CONCLUSIONS:
        return True
    refers_back = first.kind == "word" and first.key in _ANAPHORS
    doubts = _doubts_in_main_clause(last)
    return (refers_back and (doubts or _names_another_plainly(last))) or _opens_with_another_name(last)


def _doubts_in_main_clause(tokens: List[Token]) -> bool:
    """doubts_in_main_clause: a negator or a hedge before the sentence's first subordinator or bracket doubts what came
    before ("It is not, however, the only one.", "It might also be ..."); one in a clause about something else
    describes it ("It is played by teams who are not allowed shoes.", "These are younglings that haven't learned to
    fly yet."). A doubt there names no other candidate, so reading it as a description opens nothing a policy could
    game: a sentence that names one is read by _names_another and _opens_with_another_name."""
    for t in tokens:
        if t.key == "(" or t.key in _SUBORDINATORS:
            return False
        if t.key in _NEGATORS or t.key in _HEDGES:
            return True
    return False


_PARTICIPLE = re.compile("[a-z]{3,}ed", _A)


def _names_another_plainly(tokens: List[Token]) -> bool:
    """_names_another, where what follows the copula is only a name: "They were married in 1200." and "It was
    written in 1594." say more of the answer, they name no other one."""
    rest = [t for t in tokens if _is_word(t)][2:]
    return _names_another(tokens) and not any(
        t.kind == "num" or t.key in _CONTINUATIONS or _PARTICIPLE.fullmatch(t.text) for t in rest)


_NAME_WORD = re.compile("[A-Z][a-z]", _A)


def _is_name_word(t: Token, inside: bool) -> bool:
    """A word of a name, or a particle inside one ("Hugo Marie de Vries")."""
    return t.kind == "word" and (_NAME_WORD.match(t.text) is not None or (inside and t.text in _NAME_PARTICLES))


def _opens_with_another_name(last: List[Token]) -> bool:
    """"Hugo Marie de Vries rediscovered the laws.": a final sentence whose subject is a name of two words or
    more (the reference is no candidate there) names another answer of the same kind."""
    # "The Queen presented ...": an article opens a description, not a name.
    k = 1 if last[0].key in ("the", "a", "an") else 0
    start = k
    while k < len(last) and _is_name_word(last[k], k > start):
        k += 1
    return k - start >= 2 and k < len(last) and is_verb(last[k])


_ANY_ALNUM = re.compile(r"[A-Za-z0-9]", _A)


def score(kind: str, ground_truth: str, output: str, options: Sequence[str] = (),
          aliases: Sequence[str] = ()) -> dict:
    """{"score": 0 | 1, "reason": ...} for one output; kind is "mcq" or "free-form"."""
    return read_answer(kind, ground_truth, output, options=options, aliases=aliases)[0]


def _span_of(sentences: List[List[Token]]) -> str:
    """The sentences of a place as written (tokens keep their text and the space before them)."""
    return " ".join("".join((" " if i > 0 and t.space else "") + t.text for i, t in enumerate(s))
                    for s in sentences).strip(" ")


def read_answer(kind: str, ground_truth: str, output: str, options: Sequence[str] = (),
                aliases: Sequence[str] = ()) -> Tuple[dict, Optional[str]]:
    """The rules' verdict, and the answer span when they leave it undecided (reward/score.ts
    readAnswer): the only outputs a verifier model may be asked about; None when the verdict stands."""
    prepared = drop_footnotes(prepare(final_text(output)))
    if not _ANY_ALNUM.search(prepared):
        return {"score": 0, "reason": "empty output"}, None
    grader = (_mcq_grader(ground_truth, list(options)) if kind == "mcq"
              else _free_form_grader(ground_truth, list(aliases)))
    forms = grader.forms + grader.written(prepared) if grader.written else grader.forms
    text = after_revision(anchor(prepared, forms))
    for place in _places_of(text, grader):
        if place.unknown:
            return {"score": 0, "reason": f"a box without the answer among the {place.where}"}, None
        verdict = (_judge_whole_answer(grader, place.sentences, place.whole) if place.whole is not None
                   else _judge(grader, place.sentences, place.where))
        if verdict and verdict.get("undecided"):
            return ({"score": 0, "reason": verdict["reason"]},
                    _span_of(place.sentences) or _trim(prepared))
        if verdict:
            return verdict, None
        another = grader.another(place.sentences) if place.decisive and grader.another else None
        if another:
            return {"score": 0, "reason": f"another year ({another}) in the {place.where}"}, None
        if place.decisive:
            return ({"score": 0, "reason": f"no candidate answer in the {place.where}"},
                    _span_of(place.sentences) or _trim(prepared))
    return {"score": 0, "reason": "no candidate answer in the final sentence"}, _trim(prepared)


def canonical_outputs(answer: str) -> List[str]:
    """The canonical forms an answer is written in (the exported `solution` is the first): the reward
    must pay each of them, or no trainer could ever be paid for the item."""
    return [f"Answer: {answer}", f"\\boxed{{{answer}}}", f"The answer is {answer}."]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_string(s: str) -> str:
    """JSON.stringify of a string: non-ASCII as is, a lone surrogate escaped."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(s, ensure_ascii=False))


def unverifiable(kind: str, ground_truth: str, options: Sequence[str] = (),
                 aliases: Sequence[str] = ()) -> Optional[str]:
    """Why the reward could not pay a reference's own canonical forms, or None when it pays each: a
    reference that fails here would train nothing, whatever a model answers."""
    for output in canonical_outputs(ground_truth):
        r = score(kind, ground_truth, output, options=options, aliases=aliases)
        if r["score"] != 1:
            return f"the reward cannot verify its own reference in {_json_string(output)}: {r['reason']}"
    return None


# -------------------------------------------------------------------------------------------------
# verl


def _strings(value: Any) -> List[str]:
    """A list of strings from a list, a tuple or a numpy array (as pandas reads parquet), or None."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in list(value)]


VERIFIER_URL_ENV = "BIOALCHEMY_REWARD_VERIFIER_URL"


def _ask_feeder(url: str, item: dict, timeout_s: float, token: Optional[str]) -> Optional[dict]:
    """The feeder's /v1/reward for one item (its reward.verifier decides what the rules cannot), or
    None when it cannot be asked: the local verdict then stands, a trainer is never stopped by it."""
    import urllib.request  # only on this opt-in path

    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url.rstrip("/") + "/v1/reward", data=json.dumps(item).encode(),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as res:
            body = json.loads(res.read())
    except Exception:  # noqa: BLE001 - any failure is the stated fallback: the local rules' verdict
        return None
    return body if isinstance(body, dict) and body.get("score") in (0, 1) else None


def compute_score(data_source, solution_str, ground_truth, extra_info=None, verifier_url=None,
                  verifier_timeout_s=10.0, **_reward_kwargs) -> float:
    """verl's reward signature (custom_reward_function.path = this module, name = compute_score).

    ground_truth is the row's ground truth as verl passes it (reward_model.ground_truth): the mapping
    {answer, kind, options, aliases} of current rows, its lists as Python lists (pyarrow, datasets) or
    numpy arrays (pandas); or, from rows exported before it carried them, the answer string, with
    kind and options then read from extra_info when there is one. Other keyword arguments verl adds
    from custom_reward_function.reward_kwargs are accepted and not used.

    Scored here by the rules, always. Opt-in: with verifier_url (a reward_kwargs entry) or the
    environment variable BIOALCHEMY_REWARD_VERIFIER_URL set to a feeder whose config sets
    reward.verifier, an output the rules leave undecided is asked of the feeder's /v1/reward (its
    verifier model, cached and journaled there); if the feeder does not answer within
    verifier_timeout_s, the local 0 stands."""
    info = extra_info if isinstance(extra_info, Mapping) else {}
    if isinstance(ground_truth, Mapping):
        answer = str(ground_truth.get("answer") or "")
        kind = ground_truth.get("kind") or info.get("kind")
        options = _strings(ground_truth.get("options"))
        aliases = _strings(ground_truth.get("aliases"))
    else:
        answer = str(ground_truth)
        kind = info.get("kind")
        options = _strings(info.get("options"))
        aliases = []
    if not options:
        options = _strings(info.get("options"))
    if not kind:
        kind = "mcq" if re.fullmatch(r"[A-J]", answer.strip(), _A) else "free-form"
    result, undecided = read_answer(str(kind), answer, solution_str, options=options, aliases=aliases)
    url = verifier_url or os.environ.get(VERIFIER_URL_ENV)
    if url and answer and undecided is not None:
        item = {"kind": str(kind), "ground_truth": answer, "options": options, "aliases": aliases,
                "output": solution_str}
        question = info.get("question")
        if isinstance(question, str) and question:
            item["question"] = question
        asked = _ask_feeder(url, item, float(verifier_timeout_s), os.environ.get("BIOALCHEMY_FEEDER_TOKEN"))
        if asked is not None:
            return float(asked["score"])
    return float(result["score"])
