"""Candidates (reward/graders.ts): what a grader reads as a candidate answer in a sentence (an option's
letter or text, an accepted form, a number with its units) and how it decides between them. Part of
the verifiable reward (bioalchemy_client/reward.py)."""

from __future__ import annotations

import functools
import itertools
import re
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

from bioalchemy_client.reward_anchor import ANSWER, Form, binomial_forms, form_key
from bioalchemy_client.reward_names import is_short_form, shorter_names, written_forms
from bioalchemy_client.reward_rules import (_APPOSITIONS, _BOUND_PHRASES, _MONTHS, _REGIONS, _TITLES, _BOUND_SYMBOLS, _CONTINUATIONS, _COUNT_WORDS, _DISJUNCTIONS,
                                            _FILLERS, _HEADS, _LETTER_LINKS, _LETTER_PREFIXES, _LIST_PUNCTUATION,
                                            _LIST_WORDS, _NEGATORS, _SCALES, _SUBJECT_VERBS, _UNIT_WORDS, _UNITS)
from bioalchemy_client.reward_text import _A, _DOT, _S, Token, _get, _is_word, _trim, prepare, tokenize

LETTERS = "ABCDEFGHIJ"
NUMERIC_TOLERANCE = 0.01


class Mention(NamedTuple):
    value: str  # the option letter, ANSWER for an accepted form of a free-form answer, or a number's key
    number: Optional[tuple]  # (value, percent)
    bound: Optional[str]  # "<", "at least", ...: the number is a bound, not a value
    start: int
    end: int
    # beside another short item: "hedge" when a disjunction joins them ("increase or decrease", "E. coli and/or
    # S. aureus"), "list" otherwise ("E. coli, S. aureus and B. subtilis"); None: alone
    listed: Optional[str]


class _Grader(NamedTuple):
    text: bool  # free-form text: a box that names nothing known is another answer, not an empty one
    forms: List[Form]  # what the anchor marks before the text is read
    mentions: Callable[[List[Token]], List[Mention]]
    # the verdict; "undecided": True when the rules cannot tell (a list may be what the question asks for): it
    # scores 0 and goes to a verifier when there is one
    decide: Callable[[List[Mention], str], dict]
    written: Optional[Callable[[str], List[Form]]] = None  # more forms the output itself writes (reward_names.py)
    whole_answer: bool = False  # free-form: when the final sentence names no candidate, the whole answer is read
    # free-form: another answer of the reference's kind in a place that names none (_another_year)
    another: Optional[Callable[[List[List[Token]]], Optional[str]]] = None


def _is_list_separator(t: Optional[Token]) -> bool:
    if t is None:
        return False
    return t.key in _LIST_PUNCTUATION if t.kind == "punct" else t.key in _LIST_WORDS


def _listed_beside(tokens: List[Token], start: int, end: int, region_answer: bool = False) -> bool:
    """Another short item in a list right beside [start, end): "decrease" in "increase or decrease",
    "S. aureus" in "E. coli, or maybe S. aureus", "E. coli and/or S. aureus", "E. coli (or S. aureus)"."""
    def competes(item, separator, after, before, nxt):
        words = [t for t in item if _is_word(t)]
        if not words:
            return False
        if words[0].key in _CONTINUATIONS or any(w.key in _NEGATORS for w in words):
            return False
        if _names_it_again(words, before):
            return False
        if separator.key == "," and (_apposition(words, after, nxt) or _year(words)):
            return False
        if separator.key == "," and _place_and_region(words, before, region_answer):
            return False
        # What the item names, after the filler that opens it ("I believe it is E. coli or S. aureus").
        named = list(itertools.dropwhile(lambda w: w.key in _FILLERS, words))
        return 0 < len(named) <= 4

    def stops(j):
        t = tokens[j]
        # A full stop after one letter abbreviates ("S. aureus"): it ends no item.
        prev = _get(tokens, j - 1)
        if t.key == "." and prev is not None and prev.kind == "word" and len(prev.text) == 1:
            return False
        return _is_list_separator(t) or (t.kind == "punct" and t.key in ",;:.!?(")

    def parens(t):
        return t is not None and t.key in "()"

    # After the first separator, more of them and a disjunction belong to it (", or", "and/or").
    def joins(t):
        if t is None:
            return False
        return (t.key in _LIST_PUNCTUATION or parens(t)) if t.kind == "punct" else t.key in _DISJUNCTIONS

    j = end
    while parens(_get(tokens, j)):
        j += 1
    if _is_list_separator(_get(tokens, j)):
        separator = tokens[j]
        j += 1
        while joins(_get(tokens, j)):
            j += 1
        item = []
        while j < len(tokens) and not stops(j):
            item.append(tokens[j])
            j += 1
        if competes(item, separator, _get(tokens, j), False, _get(tokens, j + 1)):
            return True
    j = start - 1
    while parens(_get(tokens, j)):
        j -= 1
    if _is_list_separator(_get(tokens, j)):
        separator = tokens[j]
        j -= 1
        while joins(_get(tokens, j)):
            j -= 1
        item = []
        while j >= 0 and not stops(j):
            item.insert(0, tokens[j])
            j -= 1
        if competes(item, separator, _get(tokens, end), True, _get(tokens, end + 1)):
            return True
    return False


_YEAR = re.compile(r"\d{4}", _A)
_PARTICIPLE = re.compile(r"[a-z]+ed", _A)


def _names_it_again(words: List[Token], before: bool) -> bool:
    """names_it_again: the other item is another accepted form of the reference ("Dionysus (or Bacchus)", "the
    god Bacchus or Dionysus"): one thing named twice, not two candidates. An item after the reference is nothing
    but forms and filler; one before it (which runs back to where the sentence starts) ends with a form right
    before the separator."""
    if before:
        return words[-1].kind == "form"
    return any(w.kind == "form" for w in words) and all(w.kind == "form" or w.key in _FILLERS for w in words)


_ARTICLES = frozenset(("a", "an", "the"))
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", _A)


def _apposition(words: List[Token], after: Optional[Token], nxt: Optional[Token]) -> bool:
    """apposition: after a comma, a phrase that describes the answer ("Pour Moi, a French-bred colt", "The
    Observer, published in London", "lignite, also known as brown coal", "Isaac Newton, specifically ..."), or
    gives its title or place in a work ("Arthur Wellesley, 1st Duke of Wellington", "the Gospel of Luke, chapter
    2"), not another item: it opens with an apposition word, a participle, a title (rules' titles) or an ordinal.
    One that opens with an article is a list item when a list word follows it ("mitochondria, the nucleus and the
    ribosome"), unless it is a description of three words or more that runs on after "and" with no article
    ("Isaac Newton, a renowned mathematician and physicist")."""
    first = words[0]
    # Written in lower case: "A. aaaaa" after a comma is a binomial, not the article.
    describes = (first.text in _APPOSITIONS or (len(first.key) > 4 and _PARTICIPLE.fullmatch(first.text) is not None)
                 or first.key in _TITLES or _ORDINAL.fullmatch(first.key) is not None)
    if not describes:
        return False
    if after is None or after.key not in _LIST_WORDS:
        return True
    if first.text not in _ARTICLES:
        return after.key == "and"
    return after.key == "and" and len(words) >= 3 and nxt is not None and nxt.key not in _ARTICLES


def _region_key(words: Sequence[Token]) -> str:
    """The words of an item or a form as the regions table writes them: lower case, no leading article."""
    key = " ".join(w.key for w in words if w.kind in ("word", "num"))
    return re.sub(r"^(?:the|a|an) ", "", key)


def _is_region(words: Sequence[Token]) -> bool:
    return all(w.kind != "form" for w in words) and _region_key(words) in _REGIONS


@functools.lru_cache(maxsize=4096)
def _region_form(form: str) -> bool:
    """A form that names a region of the table ("the United States", "Missouri")."""
    return _is_region(tokenize(prepare(form)))


def _place_and_region(words: Sequence[Token], before: bool, region_answer: bool) -> bool:
    """place_and_region: a place, a comma and a region of the rules' table ("Rhodes, Greece", "Kansas City,
    Missouri", "Selby, Yorkshire, England") says where the place lies: the region is no other candidate beside
    the answer (the item after it), nor is the place beside a region that is the answer (the item before it).
    Two regions ("France, Germany") or two places ("Paris, Lyon") stay a list."""
    return region_answer and not _is_region(words) if before else not region_answer and _is_region(words)


def _year(words: List[Token]) -> bool:
    """A year after a comma ("July 20, 1969"): a date, not another item, beside a text answer."""
    return len(words) == 1 and words[0].kind == "num" and _YEAR.fullmatch(words[0].key) is not None


def _bound_before(tokens: List[Token], i: int) -> Optional[str]:
    """The bound written before the number at i ("<", "<=", "at least"), or None."""
    prev = _get(tokens, i - 1)
    if prev is not None and prev.kind == "punct" and prev.key in _BOUND_SYMBOLS:
        return prev.key
    before = _get(tokens, i - 2)
    if (prev is not None and prev.key == "=" and before is not None and before.kind == "punct"
            and before.key in _BOUND_SYMBOLS):
        return before.key + "="
    for words in _BOUND_PHRASES:
        if i >= len(words) and all(tokens[i - len(words) + k].key == w for k, w in enumerate(words)):
            return " ".join(words)
    return None


def _unit(w: Optional[Token]) -> bool:
    return w is not None and w.kind == "word" and (w.text in _UNITS or w.key in _UNIT_WORDS)


def _number_at(tokens: List[Token], i: int) -> Optional[Mention]:
    """The number at i with its units ("12.5 kDa", "25 %", "3-fold", "three copies"), or None."""
    t = tokens[i]
    if t.value is None or (t.kind == "num" and t.attached):
        return None
    end = i + 1
    percent = False
    value, key = t.value, t.key
    nxt = _get(tokens, end)
    scale = _SCALES.get(nxt.key) if nxt is not None and nxt.kind == "word" else None
    if scale is not None:
        value *= scale
        key += " " + nxt.key
        end += 1
    units = 0
    while units < 3 and end < len(tokens):
        u = tokens[end]
        after = _get(tokens, end + 1)
        if u.key == "±" and after is not None and after.kind == "num":
            end += 2
        elif u.key == "%":
            end += 1
        elif _unit(u):
            end += 1
        elif (u.key == "/" or (u.key == "-" and not u.space)) and _unit(after):
            end += 2
        else:
            break
        if tokens[end - 1].key in ("%", "percent", "cent"):
            percent = True
        units += 1
    return Mention(key, (value, percent), _bound_before(tokens, i), i, end, None)


_LOWER_START = re.compile(r"[a-z]", _A)
_LETTER_KEY = re.compile(r"[a-z]?", _A)


def _mcq_grader(truth: str, options: Sequence[str]) -> _Grader:
    want = _trim(truth).upper()
    valid = LETTERS[:len(options)] if len(options) >= 2 else LETTERS
    # A one-letter option ("A", "C", "G", "T") is read as a letter, as the prompt asks for letters.
    # An abbreviation two options share ("E. coli" of Escherichia and Entamoeba coli) names neither.
    written = [[] if _LETTER_KEY.fullmatch(form_key(o)) else [o] for o in options[:len(LETTERS)]]
    other = [binomial_forms(own) for own in written]

    def shared(text):
        return sum(1 for fs in other if any(form_key(f) == form_key(text) for f in fs)) > 1

    forms: List[Form] = [Form(text, LETTERS[i]) for i, own in enumerate(written)
                         for text in [*own, *[f for f in other[i] if not shared(f)]]]

    def letter_at(tokens, i, words):
        t = tokens[i]
        if t.kind != "word" or len(t.text) != 1 or t.text.upper() not in valid:
            return None
        prev, nxt, after = _get(tokens, i - 1), _get(tokens, i + 1), _get(tokens, i + 2)
        if t.text == t.text.upper():
            if prev is not None and prev.kind == "word" and prev.key in _LETTER_PREFIXES:
                return None
            # A unit after a number ("25°C", "300 K") is no option.
            if prev is not None and prev.kind == "num" and t.text in _UNITS:
                return None
            if (nxt is not None and nxt.kind == "word" and nxt.space and _LOWER_START.match(nxt.text)
                    and nxt.key not in _LETTER_LINKS):
                return None
            if (nxt is not None and nxt.key == "." and after is not None and after.kind == "word"
                    and after.space and _LOWER_START.match(after.text)):
                return None
            return t.text
        # A lower-case letter is an option only where it cannot be a word: alone, "(c)", "c)", "option c".
        alone = words == 1
        closed = nxt is not None and nxt.key == ")" and not nxt.space
        named = prev is not None and prev.kind == "word" and prev.key in ("option", "choice", "answer")
        return t.text.upper() if (alone or closed or named) else None

    def mentions(tokens):
        out = []
        words = sum(1 for x in tokens if _is_word(x))
        for i, t in enumerate(tokens):
            letter = t.text if t.kind == "form" else letter_at(tokens, i, words)
            if letter:
                out.append(Mention(letter, None, None, i, i + 1, None))
        return out

    def decide(found, where):
        named = list(dict.fromkeys(m.value for m in found))
        if len(named) > 1:
            return {"score": 0, "reason": f"{' and '.join(named)} named in the {where}"}
        if named[0] == want:
            return {"score": 1, "reason": f"{want} in the {where}"}
        return {"score": 0, "reason": f"{named[0]} in the {where}, expected {want}"}

    return _Grader(False, forms, mentions, decide, whole_answer=False)


_LONG_SHORT = re.compile(r"^(" + _DOT + r"+?)" + _S + r"*\(([^()]+)\)" + _S + r"*\Z", _A)


def accepted_forms(truth: str, aliases: Sequence[str]) -> List[str]:
    """The ground truth's accepted forms: itself, its aliases, and for "term (bracket)" the term, and the
    bracket when one is a short form of the other ("sinoatrial node (SA node)", "DNA (deoxyribonucleic
    acid)"): a bracket that describes ("insulin (hormone)") names another thing."""
    forms = [truth, *aliases]
    for f in [truth, *aliases]:
        m = _LONG_SHORT.match(f)
        if m:
            forms.append(m.group(1))
            if is_short_form(m.group(2), m.group(1)) or is_short_form(m.group(1), m.group(2)):
                forms.append(m.group(2))
    return list(dict.fromkeys(f for f in map(_trim, forms) if form_key(f) != ""))


_INTEGER_KEY = re.compile(r"[-+]?\d+\Z", _A)
_FIVE_OR_SIX_DIGITS = re.compile(r"\d{5,6}\Z", _A)
_YEAR_KEY = re.compile(r"(?:1[0-9]{3}|20[0-9]{2})\Z", _A)


@functools.lru_cache(maxsize=4096)  # every accepted form of a reference is asked (counts), rollouts repeat items
def numeric_form(form: str) -> Optional[tuple]:
    """(value, percent, key, exact) when a form is nothing but a number and its units ("37 °C", "25%"): key
    is the number as written, exact that it is an integer counting things (a year, "46", "3 copies")."""
    tokens = [t for t in tokenize(prepare(form)) if t.key != "~"]
    n = _number_at(tokens, 0) if tokens else None
    if n is None or n.end != len(tokens):
        return None
    # integer_exactly: a year or a count is right or wrong, never near (1978 is not 1992); a measure
    # ("37 °C", "12.5 kDa") keeps the tolerance.
    integer = tokens[0].kind == "word" or _INTEGER_KEY.match(tokens[0].key) is not None
    counts = all(t.kind == "word" and (t.text in _COUNT_WORDS or t.key in _COUNT_WORDS) for t in tokens[1:])
    return (n.number[0], n.number[1], n.value, integer and counts)


def _footnote_residue(n: Mention, years: Sequence[tuple]) -> Mention:
    """"19532" where the reference is the year 1953 is the year with its footnote mark run in ("1953" and a
    superscript 2 copied as plain text); five or six digits are no year."""
    for y in years:
        if _FIVE_OR_SIX_DIGITS.match(n.value) and n.value.startswith(y[2]):
            return n._replace(value=y[2], number=(y[0], False))
    return n


def _js_max(a: float, b: float) -> float:
    """Math.max: NaN when either is NaN (Python's max depends on the order)."""
    return a if a != a else b if b != b else max(a, b)


def _numbers_match(a: float, b: float, tolerance: float) -> bool:
    """Within a relative tolerance (absolute below 1e-9); 1e-9 relative stands for exactly equal."""
    scale = _js_max(abs(a), abs(b))
    return True if scale < 1e-9 else abs(a - b) <= max(tolerance, 1e-9) * scale


def _same_number(a: tuple, b: tuple, tolerance: float) -> bool:
    """Percent and fraction are the same number: 25% = 0.25 (and 25% = 25)."""
    xs = [a[0], a[0] / 100] if a[1] else [a[0]]
    ys = [b[0], b[0] / 100] if b[1] else [b[0]]
    return any(_numbers_match(x, y, tolerance) for x in xs for y in ys)


def _is_year(n: Mention) -> bool:
    """A year as a sentence writes one: four digits and no unit ("in 1830")."""
    return n.end - n.start == 1 and _YEAR_KEY.match(n.value) is not None


_DAY = re.compile(r"\d{1,2}\Z", _A)


def _day_of_date(tokens: List[Token], n: Mention) -> bool:
    """day_of_date: a number of 1 to 31 beside a month ("15 September 1830", "July 4") is a date's day."""
    if n.end - n.start != 1 or not _DAY.match(n.value) or int(n.value) > 31:
        return False

    def month(t):
        return t is not None and t.kind == "word" and t.key in _MONTHS

    after = _get(tokens, n.end)
    return (month(_get(tokens, n.start - 1)) or month(after)
            or (after is not None and after.key == "of" and month(_get(tokens, n.end + 1))))


def _determiner(tokens: List[Token], n: Mention) -> bool:
    """"one" before a word that is no unit is a determiner ("one of the largest", "one side"), no count."""
    after = _get(tokens, n.end)
    return n.end - n.start == 1 and tokens[n.start].key == "one" and after is not None and after.kind == "word"


def _numeric_grader(truth: str, accepted: Sequence[str]) -> _Grader:
    numbers = [n for n in map(numeric_form, accepted) if n is not None]
    years = [n for n in numbers if n[3] and _YEAR_KEY.match(n[2])]

    # same_kind: a year beside a count that is no year ("56 years, from 1216 to 1272"), the day of a date ("15
    # September 1830") and "one" as a determiner compete with nothing.
    def mentions(tokens):
        out = []
        i = 0
        while i < len(tokens):
            n = _number_at(tokens, i)
            if n:
                m = _footnote_residue(n, years)
                if not _day_of_date(tokens, m) and not _determiner(tokens, m) and (years or not _is_year(m)):
                    out.append(m)
            i = n.end if n else i + 1
        return out

    def decide(found, where):
        bounded = next((m for m in found if m.bound is not None), None)
        if bounded is not None:
            return {"score": 0, "reason": f"{bounded.bound} {bounded.value} is a bound, not a value ({where})"}
        # Two values are two answers even when both lie within the tolerance ("99 or 100").
        first = found[0]
        if any(not _same_number(m.number, first.number, 0) for m in found):
            return {"score": 0, "reason": f"several values ({', '.join(m.value for m in found)}) in the {where}"}
        if any(_same_number(first.number, n, 0 if n[3] else NUMERIC_TOLERANCE) for n in numbers):
            return {"score": 1, "reason": f"{first.value} matches in the {where}"}
        return {"score": 0, "reason": f"{first.value} is not {truth} ({where})"}

    return _Grader(False, [], mentions, decide, whole_answer=True)


_CAPITALISED = re.compile(r"[A-Z][a-z]")
_DESCRIBING = re.compile(r"[a-z]{3,}(?:ly|ed)\Z")


def _capitalised(t: Optional[Token]) -> bool:
    return t is not None and t.kind == "word" and _CAPITALISED.match(t.text) is not None


def _name_runs_on(tokens: Sequence[Token], i: int) -> Tuple[int, bool]:
    """name_runs_on: where a name that runs on into a longer one ends ("the Colorado River" for Colorado, "the Notch
    Delta pathway" for Notch Delta) when a disjunction follows it, or a list separator and another name on the same
    last word (parallel: a list, whatever an apposition after a comma would be): the capitalised words after it
    (and a head of the rules' table) are part of it, so "the Colorado River or the Hudson River" and "the Colorado
    River, the Hudson River" are a hedge and a list, not the answer followed by more of its name. Otherwise the
    longer name ends where the answer does, as before: "Denali National Park and Preserve" and "New York City, US"
    are one place, as people read them."""
    alone = (i + 1, False)
    end = i + 1
    while _capitalised(_get(tokens, end)):
        end += 1
    head = _get(tokens, end)
    if head is not None and head.kind == "word" and head.key in _HEADS:
        end += 1
    if end == i + 1:
        return alone
    nxt = _get(tokens, end)
    if nxt is not None and (nxt.key == "/" or nxt.key in _DISJUNCTIONS):
        return end, False
    # Another name on the same last word after a list separator ("the Colorado River, the Hudson River").
    if not _is_list_separator(nxt):
        return alone
    j = end + 1
    while j < len(tokens) and (_is_list_separator(tokens[j]) or tokens[j].key in _ARTICLES):
        j += 1
    # "Charles de Gaulle Airport, also known as Roissy Airport" describes it (an apposition, or an adverb or a
    # participle that opens one: "colloquially known as", "named after").
    if j >= len(tokens) or tokens[j].text in _APPOSITIONS or _DESCRIBING.match(tokens[j].text):
        return alone
    k = j
    while k < len(tokens) and tokens[k].kind != "punct" and not _is_list_separator(tokens[k]):
        k += 1
    return (end, True) if k > j + 1 and tokens[k - 1].key == tokens[end - 1].key else alone


def _stem(key: str) -> str:
    """A word's key without a plural ending: "bees" and "bee" are one head."""
    return key[:-1] if key.endswith("s") else key


_HEAD_WORD = re.compile(r"[a-z]{3,}\Z")


def _head_given(tokens: Sequence[Token], i: int) -> bool:
    """head_given: the answer as the modifier of a compound whose head the sentence has already named
    ("The largest bee in a hive is the queen bee.", "heat energy ... is geothermal energy"): the head is
    what the sentence is about, the modifier is what it answers. The compound is one candidate (its head
    goes with it), so a list or a hedge beside it still refuses ("the queen bee or the worker bee"). A head
    the sentence has not named ("a kinase inhibitor") ends nothing."""
    head = tokens[i + 1]
    if not _HEAD_WORD.match(head.text):
        return False
    after = _get(tokens, i + 2)
    if after is not None and after.kind in ("word", "form"):
        return False
    want = _stem(head.key)
    return any(t.kind == "word" and _stem(t.key) == want for t in tokens[:i])


def is_verb(t: Token) -> bool:
    """A verb after a subject: one of subjectVerbs, or any word ending in -ed."""
    return t.kind == "word" and ((len(t.key) > 4 and t.key.endswith("ed")) or t.key in _SUBJECT_VERBS)


def _hedge_or_list(tokens: List[Token]) -> str:
    """hedge_or_list: a listed answer is hedged when its sentence holds a disjunction or a slash ("A or B", "A, B,
    or C", "A and/or B"): a policy offering candidates. A list without one ("the cast includes A, B and C") may be
    what the question asks for, which the rules cannot tell: undecided."""
    return "hedge" if any(t.key == "/" or (t.kind == "word" and t.key in _DISJUNCTIONS) for t in tokens) else "list"


def _year_at(tokens: List[Token], i: int) -> bool:
    """A year as written: four digits alone ("1917"; not "1,917", "1990s", "19172" or "COVID-2019")."""
    t = tokens[i]
    nxt = _get(tokens, i + 1)
    return (t.kind == "num" and not t.attached and _YEAR_KEY.match(t.text) is not None
            and (nxt is None or nxt.space or nxt.kind == "punct"))


def _another_year(accepted: Sequence[str]) -> Optional[Callable[[List[List[Token]]], Optional[str]]]:
    """another_year: a reference that states one number, a year ("March 1930", "the 1917 revolution"), is
    contradicted by a place that names none of its forms and states years, none of them its own ("It opened in
    1931."): an answer of the same kind, decided, not left to a verifier. A range or a second number in the
    reference ("1135-1154", "1951-52") leaves other years possible."""
    numbers = []
    for f in accepted:
        tokens = tokenize(prepare(f))
        numbers += [t.text if _year_at(tokens, i) else "" for i, t in enumerate(tokens) if t.kind == "num"]
    years = set(numbers)
    if len(years) != 1 or "" in years:
        return None

    def another(sentences):
        stated = [t.text for s in sentences for i, t in enumerate(s) if _year_at(s, i)]
        return stated[0] if stated and not any(y in years for y in stated) else None

    return another


# What a year form inside a date stands for (date_of_year in _free_form_grader).
_ANOTHER_DATE = "another date"
_SAME_MONTH = "same month"


def _free_form_grader(truth: str, aliases: Sequence[str]) -> _Grader:
    accepted = accepted_forms(truth, aliases)
    # A number is read as one only when every accepted form is a number: a reference written as one with aliases
    # in words ("234U", "Uranium") is a name.
    if numeric_form(truth) is not None and all(numeric_form(f) is not None for f in accepted):
        return _numeric_grader(truth, accepted)
    forms = [Form(text, ANSWER) for text in [*accepted, *binomial_forms(accepted), *shorter_names(accepted)]]
    region_answer = any(_region_form(f) for f in accepted)
    # A number with names in words ("43", "forty-three"), whichever one the reference names first: a word after it
    # is what it counts ("303 AD" for "three hundred and three / 303").
    counts = any(numeric_form(f) is not None for f in accepted)
    # The months the reference itself (not an alias: "2013 / 27 November 2013" asks for the year) dates it to.
    months = {t.key for t in tokenize(prepare(truth)) if t.key in _MONTHS}

    def written(text):
        return [Form(f, ANSWER) for f in written_forms(text, accepted)]

    def mentions(tokens):
        out = []
        for i, t in enumerate(tokens):
            if t.kind != "form":
                continue
            # date_of_year: a form that is a year, inside a date ("8 November 2013" for 27 November 2013 / 2013:
            # dates read day first), is that date's year: where the reference dates it to a month, another month
            # is another date, and its month without the reference's day is undecided.
            month = _get(tokens, i - 1)
            if months and month is not None and month.kind == "word" and month.key in _MONTHS:
                value = _SAME_MONTH if month.key in months else _ANOTHER_DATE
                out.append(Mention(value, None, None, i - 1, i + 1, None))
                continue
            # ends_its_phrase: "kinase" is not the answer in "a kinase inhibitor": the answer ends its phrase,
            # unless a verb follows it (the subject of its sentence: "Barbara McClintock discovered
            # transposition"; or a clause about it: "a type of gin made in Scotland", "a bear named Ben"), it is
            # written as a proper name ("Seymour Hersh first told ...", "the Colorado River"), or it is a number
            # and the word is what it counts ("four players").
            nxt = _get(tokens, i + 1)
            # The rest of a longer name (name_runs_on), the word a number counts, a head of the rules' table ("the
            # mTOR pathway") or the head the sentence named (head_given) goes with it: the two are one candidate,
            # so "37 points or 38 points", "the mTOR pathway or the MAPK pathway" and "the Colorado River or the
            # Hudson River" are hedges as "37 or 38" is, and "the mTOR pathway is not involved" denies it.
            end = i + 1
            parallel = False
            if t.name:
                end, parallel = _name_runs_on(tokens, i)
            elif nxt is not None and nxt.kind == "word" and nxt.key in _HEADS:
                end = i + 2
            elif (nxt is not None and nxt.kind == "word" and nxt.key not in _CONTINUATIONS
                    and nxt.key not in _FILLERS and not nxt.key.endswith("ly") and not is_verb(nxt)):
                if not counts and not _head_given(tokens, i):
                    continue
                end = i + 2
            listed = parallel or _listed_beside(tokens, i, end, region_answer)
            out.append(Mention(ANSWER, None, None, i, end, _hedge_or_list(tokens) if listed else None))
        return out

    def decide(found, where):
        if any(m.value == _ANOTHER_DATE for m in found):
            return {"score": 0, "reason": f"another date in the {where}"}
        if any(m.value == _SAME_MONTH for m in found):
            return {"score": 0, "reason": f"a date in the reference's month in the {where}", "undecided": True}
        if any(m.listed == "hedge" for m in found):
            return {"score": 0, "reason": f"the answer is one of a hedge in the {where}"}
        if any(m.listed == "list" for m in found):
            return {"score": 0, "reason": f"the answer is one of a list in the {where}", "undecided": True}
        return {"score": 1, "reason": f"matches in the {where}"}

    return _Grader(True, forms, mentions, decide, written, whole_answer=True, another=_another_year(accepted))
