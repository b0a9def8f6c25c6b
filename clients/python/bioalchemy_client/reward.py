"""The verifiable reward: the same rules as reward/*.ts (text.ts, anchor.ts, graders.ts, score.ts), step
for step, reading the same tables (reward/rules.json, linked here as reward_rules.json) and tested on the
same two tables of outputs (test/fixtures/reward-cases.json and test/fixtures/reward-adversarial.json).
Change them together; the steps are described at the top of reward/score.ts.

JavaScript's regular expressions are ASCII where Python's are not: every pattern here is compiled with
re.ASCII, `$` is written `\\Z` (Python's `$` also matches before a final newline), and where a pattern
reads raw text (a reference, an option) JavaScript's `\\s`, `.` and trim() are spelled out."""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from operator import itemgetter
import unicodedata
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

_A = re.ASCII


# -------------------------------------------------------------------------------------------------
# The tables (reward/rules.json; reward/rules.ts reads the same file)


def _load_rules() -> dict:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reward_rules.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


_RULES = _load_rules()


def _word_set(text: str) -> set:
    return set(text.split(" "))


_GREEK: Dict[str, str] = _RULES["greek"]
_GREEK_LOOKALIKES: Dict[str, str] = _RULES["greekLookalikes"]["letters"]
_NUMBER_WORDS: List[str] = _RULES["numberWords"]
_SCALES: Dict[str, float] = _RULES["scales"]
_UNITS = _word_set(_RULES["units"]["words"])
_UNIT_WORDS = _word_set(_RULES["unitWords"])
_BOUND_SYMBOLS = _word_set(_RULES["bounds"]["symbols"])
_BOUND_PHRASES = [p.split(" ") for p in _RULES["bounds"]["phrases"]]
_NEGATORS = _word_set(_RULES["negators"])
_CLAUSE_WORDS = _word_set(_RULES["clauseWords"])
_FILLERS = _word_set(_RULES["fillers"])
_LETTER_LINKS = _word_set(_RULES["letterLinks"])
_LETTER_PREFIXES = _word_set(_RULES["letterPrefixes"])
_CONTINUATIONS = _word_set(_RULES["continuations"])
_HEADS = _word_set(_RULES["heads"])
_LIST_WORDS = _word_set(_RULES["listWords"])
_DISJUNCTIONS = _word_set(_RULES["disjunctions"])
_LIST_PUNCTUATION = _word_set(_RULES["listPunctuation"])
_REVISIONS: List[str] = _RULES["revisions"]["phrases"]
_ENDINGS_ADDED: List[str] = _RULES["endings"]["added"]
_ENDINGS_SWAPS: List[List[str]] = _RULES["endings"]["swaps"]
_ENDINGS_IRREGULAR: List[List[str]] = _RULES["endings"]["irregular"]

# JavaScript's whitespace (\s, trim()) and what its `.` does not match, for patterns on raw text.
_JS_SPACE_CHARS = ("\t\n\x0b\x0c\r \u00a0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200b))
                   + "\u2028\u2029\u202f\u205f\u3000\ufeff")
_S = "[\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_DOT = "[^\n\r\u2028\u2029]"


def _trim(s: str) -> str:
    """JavaScript's String.prototype.trim."""
    return s.strip(_JS_SPACE_CHARS)


def _at(text: str, i: int) -> str:
    """text[i] as JavaScript reads it: '' (undefined) outside the string, negative indexes included."""
    return text[i] if 0 <= i < len(text) else ""


_DIGITS = frozenset("0123456789")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _is_digit(ch: str) -> bool:
    return ch != "" and ch in _DIGITS


def _is_alnum(ch: str) -> bool:
    return ch != "" and ch in _ALNUM


def _is_space(ch: str) -> bool:
    return ch != "" and ch in " \t\n\f\v"


# -------------------------------------------------------------------------------------------------
# Text (reward/text.ts)


def final_text(output: str) -> str:
    """The text after the last </think>; an unclosed <think> leaves nothing to grade."""
    text = re.sub(r"\r\n?", "\n", output)
    close = None
    for close in re.finditer(r"</think>", text, re.I | _A):
        pass
    if close is not None:
        return text[close.end():]
    return "" if re.search(r"<think>", text, re.I | _A) else text


_CONTROL = re.compile("[\u0000-\u0008\u000b-\u001f\u007f]")
_SUPERSCRIPTS = re.compile("[\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b]+")
_COMBINING = re.compile("[\u0300-\u036f]")
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]")
_QUOTES = re.compile("[\u2018\u2019\u02bc\u2032]")
_DASHES = re.compile("[\u2212\u2010-\u2015]")
_GREEK_LETTER = re.compile("[\u0391-\u03a9\u03b1-\u03c9]")
_LOOKALIKE = re.compile(r"([A-Za-z]-|[A-Za-z]-?[0-9])([abgdk])(?![a-z])", _A)
# Gene symbols write the letter as a capital after the digit: IL1B = IL-1beta, HIF1A = HIF-1alpha.
_LOOKALIKE_CAPITAL = re.compile(r"([A-Za-z]-?[0-9])([ABGDK])(?![A-Za-z0-9])", _A)
_KAPPA_B = re.compile(r"([A-Za-z]-)K(?=B(?![a-z]))", _A)
_PLUSES = re.compile(r"([A-Za-z])(\+{2,3})(?!\+)", _A)
_PRIME_SPELLED = re.compile(r"([0-9])[ -]?prime\b", re.I | _A)
_OXIDATION = re.compile(r"\b([A-Z][a-z]?)\((I{1,3}|IV|VI{0,2})\)", _A)
_ROMAN = {"I": 1, "II": 2, "III": 3, "IV": 4, "V": 5, "VI": 6, "VII": 7}
_POSITIVE = re.compile(r"([0-9])[- ]?positive\b", _A)
_NEGATIVE = re.compile(r"([0-9])[- ]?negative\b", _A)
_TEXT_MACRO = re.compile(
    r"\\(?:text|textit|textrm|textbf|mathrm|mathit|mathbf|emph|mbox|operatorname|ce)\s*\{([^{}]*)\}", _A)
_LATEX_TIMES = re.compile(r"\\(?:times|cdot)", _A)
_LATEX_SPACE = re.compile(r"\\[,;:! ]", _A)
_LATEX_GROUP = re.compile(r"([\^_])\{([^{}]*)\}", _A)
_MARKDOWN = re.compile(r"[*#`]", _A)
_UNDERSCORES = re.compile(r"(^|[^A-Za-z0-9_])_{1,2}([^_\n]+?)_{1,2}(?![A-Za-z0-9_])", _A)
_NOT = re.compile(r"n't\b", re.I | _A)


def prepare(text: str) -> str:
    """Unicode and LaTeX folded to what the tokenizer reads: control characters gone (the anchor's marks
    use two), accents dropped, Greek letters spelled out (and Latin look-alikes after a name's hyphen or
    digit: NF-kB = NF-kappaB), typographic quotes, primes, dashes and spaces made ASCII, \\text{}
    unwrapped, markdown emphasis gone."""
    s = _CONTROL.sub(" ", text)
    # Superscript exponents ("10⁻³") would fold to plain digits ("10-3"): mark them first.
    s = _SUPERSCRIPTS.sub(lambda m: "^" + unicodedata.normalize("NFKD", m.group(0)), s)
    s = _COMBINING.sub("", unicodedata.normalize("NFKD", s))
    s = _SPACES.sub(" ", s)
    s = _DASHES.sub("-", _QUOTES.sub("'", s))
    s = _GREEK_LETTER.sub(lambda m: _GREEK.get(m.group(0).lower(), m.group(0)), s)
    s = _LOOKALIKE.sub(lambda m: m.group(1) + _GREEK_LOOKALIKES[m.group(2)], s)
    s = _LOOKALIKE_CAPITAL.sub(lambda m: m.group(1) + _GREEK_LOOKALIKES[m.group(2).lower()], s)
    s = _KAPPA_B.sub(r"\1kappa", s)
    # Charges as pluses ("Fe+++" = "Fe3+"), primes spelled ("3 prime" = "3'").
    s = _PLUSES.sub(lambda m: f"{m.group(1)}{len(m.group(2))}+", s)
    s = _PRIME_SPELLED.sub(r"\1'", s)
    # Oxidation states and markers in words: "Fe(III)" = "Fe3+", "CD4-positive" = "CD4+".
    s = _OXIDATION.sub(lambda m: f"{m.group(1)}{_ROMAN[m.group(2)]}+", s)
    s = _NEGATIVE.sub(r"\1-", _POSITIVE.sub(r"\1+", s))
    s = _LATEX_GROUP.sub(r"\1\2", s)
    for _ in range(2):
        s = _TEXT_MACRO.sub(r"\1", s)
    s = s.replace("\\%", "%")
    s = _LATEX_TIMES.sub("×", s)
    s = _LATEX_SPACE.sub(" ", s)
    s = _MARKDOWN.sub(" ", s)
    s = _UNDERSCORES.sub(r"\1\2", s)
    return _NOT.sub(" not", s)


_BOXED = re.compile(r"\\boxed\s*\{", _A)


def boxed(text: str) -> List[str]:
    """Contents of every \\boxed{...} (nested braces allowed), in order."""
    out = []
    for m in _BOXED.finditer(text):
        depth, i = 1, m.end()
        start = i
        while i < len(text) and depth > 0:
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
            i += 1
        if depth == 0:
            out.append(text[start:i - 1])
    return out


_ANSWER_PHRASE = re.compile(
    r"\b(?:final\s+answer|correct\s+answer|correct\s+option|correct\s+choice|answer|option|choice)"
    r"\s*(?:is|would\s+be|will\s+be|should\s+be|:|=|-)\s*([^\n]*)",
    re.I | _A,
)
_REVISION = re.compile(r"\b(?:" + "|".join(p.replace(" ", r"\s+") for p in _REVISIONS) + r")\b", re.I | _A)


def after_revision(text: str) -> str:
    """What follows the last phrase that takes back what came before it, or the whole text."""
    last = None
    for last in _REVISION.finditer(text):
        pass
    return text[last.end():] if last is not None else text


# NamedTuples, not dataclasses: verl loads this file by path without registering it in sys.modules
# (load_extern_object), and a dataclass looks its module up there.
class Token(NamedTuple):
    kind: str  # "word" | "num" | "punct" | "form" (an accepted form the anchor marked: text is what it stands for)
    text: str
    key: str
    space: bool
    value: Optional[float]
    attached: bool


_SIGNIFICANT = frozenset(",;:.!?/-()%&+=<>~±'≤≥")
_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+", _A)
_SCIENTIFIC = re.compile(r"\s*[x×]\s*10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?", _A)
_POWER_OF_TEN = re.compile(r"\s*\^\s*\{?\s*([-+]?\d+)\s*\}?", _A)
_FRACTION = re.compile(r"/(\d+)(?!\d|[.,]\d)", _A)
_LETTERS_RUN = re.compile(r"[A-Za-z]+", _A)
_WORD = re.compile(r"[A-Za-z0-9]+", _A)
_INTEGER = re.compile(r"\d+", _A)
_SIGN_AFTER = frozenset("([{=:~<>≈≤≥")
# The anchor's mark of an accepted form: \u0001, what it stands for, \u0002.
MARK_OPEN = "\u0001"
MARK_CLOSE = "\u0002"


def tokenize(line: str) -> List[Token]:
    """One line of prepared text as tokens."""
    out: List[Token] = []
    space = True
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if _is_space(ch):
            space = True
            i += 1
            continue
        if ch == MARK_OPEN:
            close = line.find(MARK_CLOSE, i)
            if close < 0:  # never: the anchor writes both marks, prepare removes any in the output
                close = n
            stands = line[i + 1:close]
            out.append(Token("form", stands, MARK_OPEN + stands, space, None, False))
            space = False
            i = close + 1
            continue
        signed = (ch in "-+" and (i == 0 or _is_space(line[i - 1]) or line[i - 1] in _SIGN_AFTER)
                  and _is_digit(_at(line, i + 2) if _at(line, i + 1) == "." else _at(line, i + 1)))
        start = i + 1 if signed else i
        m = _NUMBER.match(line, start) if _is_digit(_at(line, start)) or _at(line, start) == "." else None
        if m:
            end = m.end()
            value = float(m.group(0).replace(",", ""))
            key = m.group(0).replace(",", "")
            frac = _FRACTION.match(line, end) if _INTEGER.fullmatch(m.group(0)) else None
            if frac and float(frac.group(1)) != 0:
                value /= float(frac.group(1))
                key += "/" + frac.group(1)
                end = frac.end()
            sci = None
            if not frac:
                sci = (_POWER_OF_TEN if m.group(0) == "10" else _SCIENTIFIC).match(line, end)
            if sci and m.group(0) == "10":
                value = float("1e" + sci.group(1))
                key += "^" + sci.group(1)
                end = sci.end()
            elif sci:
                value *= float("1e" + sci.group(1))
                key += "e" + sci.group(1)
                end = sci.end()
            g = _LETTERS_RUN.match(line, end)
            glued = g.group(0) if g else None
            if glued is None or (glued in _UNITS and not _is_alnum(_at(line, end + len(glued)))):
                if signed and ch == "-":
                    value = -value
                prev = out[-1] if out else None
                attached = (not space and prev is not None and prev.key in ("-", "/") and not prev.space
                            and len(out) >= 2 and out[-2].kind == "word" and not signed)
                out.append(Token("num", line[i:end], (ch if signed else "") + key, space, value, attached))
                space = False
                i = end
                continue
            # A number glued to letters that are no unit is a name: "16S", "5S", "3D".
        if _is_alnum(ch):
            word = _WORD.match(line, i).group(0)
            key = word.lower()
            number = _NUMBER_WORDS.index(key) if key in _NUMBER_WORDS else None
            out.append(Token("word", word, key, space, None if number is None else float(number), False))
            space = False
            i += len(word)
            continue
        if ch in _SIGNIFICANT:
            out.append(Token("punct", ch, ch, space, None, False))
            space = False
        else:
            space = True
        i += 1
    return out


def _is_word(t: Optional[Token]) -> bool:
    return t is not None and t.kind != "punct"


def _get(tokens: Sequence[Token], k: int) -> Optional[Token]:
    return tokens[k] if 0 <= k < len(tokens) else None


def sentences_of(text: str) -> List[List[Token]]:
    """A line's sentences. A full stop after a lone letter or a number ends no sentence ("C. Golgi",
    "A. B. C.", "3. 4."), so a list of candidates stays one sentence."""
    out: List[List[Token]] = []
    for line in text.split("\n"):
        tokens = tokenize(line)
        current: List[Token] = []
        for i, t in enumerate(tokens):
            current.append(t)
            nxt = _get(tokens, i + 1)
            if t.kind != "punct" or t.key not in ".!?" or (nxt is not None and not nxt.space):
                continue
            prev = _get(tokens, i - 1)
            if t.key == "." and prev is not None and (
                    prev.kind == "num" or (prev.kind == "word" and len(prev.text) == 1)):
                continue
            out.append(current)
            current = []
        out.append(current)
    return [s for s in out if any(_is_word(t) for t in s)]


def _is_question(sentence: Sequence[Token]) -> bool:
    return bool(sentence) and sentence[-1].key == "?"


# -------------------------------------------------------------------------------------------------
# The anchor (reward/anchor.ts): the reference's accepted forms found in the prepared text first,
# each occurrence marked as one token standing for the answer (or an option's letter).


class Form(NamedTuple):
    text: str
    stands: str  # an option's letter, or ANSWER


ANSWER = "@"

_FREE_GAP = re.compile(r"[ \t\-'/^_~$()]")


# A key character: a letter, a digit or a sign; a minus that ends a name is a charge ("Cl-", "Ca2-",
# "CD4-"), one inside a name joins it; a full stop or comma between digits is kept as ".".
_KEY_CHAR = re.compile(r"[A-Za-z0-9+<>=≤≥%]|(?<=[A-Za-z0-9^])-(?![A-Za-z0-9])|(?<=[0-9])[.,](?=[0-9])")


def _keyed(text: str) -> Tuple[str, List[int]]:
    """The text as a key (lower-case letters, digits, signs and charges; a full stop or comma between
    digits as '.'), with each key character's index in the text."""
    at = [m.start() for m in _KEY_CHAR.finditer(text)]
    if len(at) < 2:
        return "".join(text[i] for i in at).replace(",", ".").lower(), at
    return "".join(itemgetter(*at)(text)).replace(",", ".").lower(), at


def _residue(gap: str) -> str:
    """A gap with what any writer may put in one (spaces, hyphens, primes) taken out."""
    return _FREE_GAP.sub("", gap)


_TRAILING_STOPS = re.compile(r"[.!;:,]+\Z")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I | _A)


@lru_cache(maxsize=4096)
def _bare(form: str) -> str:
    """A form without a leading article ("the Golgi" = "Golgi"), prepared as outputs are."""
    s = _TRAILING_STOPS.sub("", _trim(prepare(form)), count=1)
    without = _ARTICLE.sub("", s, count=1)
    return s if _keyed(without)[0] == "" else without


def form_key(form: str) -> str:
    """A form's key, '' for a form with nothing to find."""
    return _keyed(_bare(form))[0]


class _Pattern(NamedTuple):
    key: str
    gaps: List[str]  # gaps[k]: the residue the reference has between key characters k and k + 1


_LAST_WORD = re.compile(r"([A-Za-z]+)\Z", _A)


def _patterns_of(form: str) -> List[_Pattern]:
    """The keys one term is written under: itself, with an added ending (kinases, increased), and for
    a last word of four or more letters that is no acronym, its other number (mitochondria =
    mitochondrion, nuclei = nucleus, mice = mouse)."""
    patterns = _PATTERNS.get(form)
    if patterns is None:
        # A trainer scores several rollouts of one item in a row, so recent references repeat.
        if len(_PATTERNS) >= 4096:
            _PATTERNS.clear()
        patterns = _PATTERNS[form] = _compute_patterns(form)
    return patterns


_PATTERNS: Dict[str, List[_Pattern]] = {}


def _compute_patterns(form: str) -> List[_Pattern]:
    text = _bare(form)
    key, at = _keyed(text)
    if key == "":
        return []
    gaps = [_residue(text[at[k] + 1:i]) for k, i in enumerate(at[1:])]
    keys = dict.fromkeys([key])
    m = _LAST_WORD.search(text)
    if m is not None:
        last = m.group(1)
        for ending in _ENDINGS_ADDED:
            keys[key + ending] = None
        word = last.lower()
        if len(word) >= 4 and last != last.upper():
            def swap(frm: str, to: str, whole: bool) -> None:
                if (word == frm) if whole else (word.endswith(frm) and len(word) - len(frm) >= 3):
                    keys[key[:len(key) - len(frm)] + to] = None

            for a, b in _ENDINGS_SWAPS:
                swap(a, b, False)
                swap(b, a, False)
            for a, b in _ENDINGS_IRREGULAR:
                swap(a, b, True)
                swap(b, a, True)
    return [_Pattern(k, gaps) for k in keys]


_BINOMIAL = re.compile(r"^([A-Z])[a-z]{2,}" + _S + r"+([a-z]{3,}(?:" + _S + _DOT + r"*)?)\Z", _A)
_ABBREVIATED = re.compile(r"^([A-Z]\.)" + _S + r"*([a-z]{3,})((?:" + _S + _DOT + r"*)?)\Z", _A)
_BINOMIALS: Dict[str, str] = _RULES["binomials"]["names"]


def binomial_forms(forms: Sequence[str]) -> List[str]:
    """The other way a binomial is written: "Escherichia coli K-12" abbreviated "E. coli K-12", and a
    known abbreviation written out ("E. coli" = "Escherichia coli", from the rules' table)."""
    out = []
    for f in forms:
        full = _BINOMIAL.match(_trim(f))
        if full:
            out.append(f"{full.group(1)}. {full.group(2)}")
            continue
        short = _ABBREVIATED.match(_trim(f))
        genus = _BINOMIALS.get(f"{short.group(1)} {short.group(2)}") if short else None
        if short and genus:
            out.append(genus + short.group(3))
    return out


def _occurrence(text: str, at: List[int], k: int, p: _Pattern) -> Optional[Tuple[int, int]]:
    """Where the key match [k, k + length) lies in the text, when it is a whole term there."""
    for j in range(k, k + len(p.key) - 1):
        if at[j + 1] == at[j] + 1:
            continue
        gap = _residue(text[at[j] + 1:at[j + 1]])
        if gap != "" and gap != (p.gaps[j - k] if j - k < len(p.gaps) else ""):
            return None
    start = at[k]
    last = at[k + len(p.key) - 1]
    # A term inside a longer word, or glued by a hyphen or a sign to more of a name ("anti-TNF", "CD4+"
    # for CD4, "E. coli-derived"), is another term.
    before = _at(text, start - 1)
    after = _at(text, last + 1)
    if _is_alnum(before) or (before == "-" and _is_alnum(_at(text, start - 2))):
        return None
    if _is_alnum(after) or after == "+" or after == "-":
        return None
    return start, last + 1


def anchor(prepared: str, forms: Sequence[Form]) -> str:
    """The text with every occurrence of a form replaced by a mark of what it stands for: at each place
    the longest occurrence wins, and occurrences do not overlap."""
    if not forms:
        return prepared
    text = prepared
    key, at = _keyed(text)
    found: List[Tuple[int, int, str, bool]] = []
    for form in forms:
        for n, p in enumerate(_patterns_of(form.text)):
            k = key.find(p.key)
            while k >= 0:
                span = _occurrence(text, at, k, p)
                # The form as written (its first pattern) wins over another's ending or number at
                # the same place: "colony" is the option "colony", not "colonies" in the singular.
                if span:
                    found.append((span[0], span[1], form.stands, n == 0))
                k = key.find(p.key, k + 1)
    found.sort(key=lambda f: (f[0], -f[1], not f[3]))  # stable, as Array.prototype.sort
    out: List[str] = []
    pos = 0
    for start, end, stands, _written in found:
        if start < pos:
            continue
        out.append(text[pos:start] + MARK_OPEN + stands + MARK_CLOSE)
        pos = end
    return "".join(out) + text[pos:]


# -------------------------------------------------------------------------------------------------
# Candidates (reward/graders.ts)

LETTERS = "ABCDEFGHIJ"
NUMERIC_TOLERANCE = 0.01


class Mention(NamedTuple):
    value: str  # the option letter, ANSWER for an accepted form of a free-form answer, or a number's key
    number: Optional[tuple]  # (value, percent)
    bound: Optional[str]  # "<", "at least", ...: the number is a bound, not a value
    start: int
    end: int
    listed: bool  # beside another short item in a list ("increase or decrease"): a hedge


class _Grader(NamedTuple):
    text: bool  # free-form text: a box that names nothing known is another answer, not an empty one
    forms: List[Form]  # what the anchor marks before the text is read
    mentions: Callable[[List[Token]], List[Mention]]
    decide: Callable[[List[Mention], str], dict]


def _is_list_separator(t: Optional[Token]) -> bool:
    if t is None:
        return False
    return t.key in _LIST_PUNCTUATION if t.kind == "punct" else t.key in _LIST_WORDS


def _listed_beside(tokens: List[Token], start: int, end: int) -> bool:
    """Another short item in a list right beside [start, end): "decrease" in "increase or decrease",
    "S. aureus" in "E. coli, or maybe S. aureus", "E. coli and/or S. aureus", "E. coli (or S. aureus)"."""
    def competes(item):
        words = [t for t in item if _is_word(t)]
        if not words or len(words) > 4:
            return False
        if words[0].key in _CONTINUATIONS or any(w.key in _NEGATORS for w in words):
            return False
        return any(w.key not in _FILLERS for w in words)

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
        j += 1
        while joins(_get(tokens, j)):
            j += 1
        item = []
        while j < len(tokens) and not stops(j):
            item.append(tokens[j])
            j += 1
        if competes(item):
            return True
    j = start - 1
    while parens(_get(tokens, j)):
        j -= 1
    if _is_list_separator(_get(tokens, j)):
        j -= 1
        while joins(_get(tokens, j)):
            j -= 1
        item = []
        while j >= 0 and not stops(j):
            item.insert(0, tokens[j])
            j -= 1
        if competes(item):
            return True
    return False


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
    return Mention(key, (value, percent), _bound_before(tokens, i), i, end, False)


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
                out.append(Mention(letter, None, None, i, i + 1, False))
        return out

    def decide(found, where):
        named = list(dict.fromkeys(m.value for m in found))
        if len(named) > 1:
            return {"score": 0, "reason": f"{' and '.join(named)} named in the {where}"}
        if named[0] == want:
            return {"score": 1, "reason": f"{want} in the {where}"}
        return {"score": 0, "reason": f"{named[0]} in the {where}, expected {want}"}

    return _Grader(False, forms, mentions, decide)


_LONG_SHORT = re.compile(r"^(" + _DOT + r"+?)" + _S + r"*\(([^()]+)\)" + _S + r"*\Z", _A)


def accepted_forms(truth: str, aliases: Sequence[str]) -> List[str]:
    """The ground truth's accepted forms: itself, its aliases, and both sides of "long form (SHORT)"."""
    forms = [truth, *aliases]
    for f in [truth, *aliases]:
        m = _LONG_SHORT.match(f)
        if m:
            forms += [m.group(1), m.group(2)]
    return list(dict.fromkeys(f for f in map(_trim, forms) if form_key(f) != ""))


def numeric_form(form: str) -> Optional[tuple]:
    """(value, percent) when a form is nothing but a number and its units ("37 °C", "25%")."""
    tokens = [t for t in tokenize(prepare(form)) if t.key != "~"]
    n = _number_at(tokens, 0) if tokens else None
    return n.number if n is not None and n.end == len(tokens) else None


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


def _numeric_grader(truth: str, accepted: Sequence[str]) -> _Grader:
    numbers = [n for n in map(numeric_form, accepted) if n is not None]

    def mentions(tokens):
        out = []
        i = 0
        while i < len(tokens):
            n = _number_at(tokens, i)
            if n:
                out.append(n)
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
        if any(_same_number(first.number, n, NUMERIC_TOLERANCE) for n in numbers):
            return {"score": 1, "reason": f"{first.value} matches in the {where}"}
        return {"score": 0, "reason": f"{first.value} is not {truth} ({where})"}

    return _Grader(False, [], mentions, decide)


def _free_form_grader(truth: str, aliases: Sequence[str]) -> _Grader:
    accepted = accepted_forms(truth, aliases)
    if numeric_form(truth) is not None:
        return _numeric_grader(truth, accepted)
    forms = [Form(text, ANSWER) for text in [*accepted, *binomial_forms(accepted)]]

    def mentions(tokens):
        out = []
        for i, t in enumerate(tokens):
            if t.kind != "form":
                continue
            # "kinase" is not the answer in "a kinase inhibitor": the answer ends its phrase.
            nxt = _get(tokens, i + 1)
            if (nxt is not None and nxt.kind == "word" and nxt.key not in _CONTINUATIONS and nxt.key not in _HEADS
                    and nxt.key not in _FILLERS and not nxt.key.endswith("ly")):
                continue
            out.append(Mention(ANSWER, None, None, i, i + 1, _listed_beside(tokens, i, i + 1)))
        return out

    def decide(found, where):
        if any(m.listed for m in found):
            return {"score": 0, "reason": f"the answer is one of a list or a hedge in the {where}"}
        return {"score": 1, "reason": f"matches in the {where}"}

    return _Grader(True, forms, mentions, decide)


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
            if m.start > k or between == k:
                negated.add(index)
    positive = [m for index, m in enumerate(mentions) if index not in negated]
    return positive, len(negated)


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
    phrases = [s for m in _ANSWER_PHRASE.finditer(text) for s in sentences_of(m.group(1))[:1]]
    if phrases:
        yield _Place("answer phrase", phrases, False)
    sentences = [s for s in sentences_of(text) if not _is_question(s)]
    if not sentences:
        return
    also_named = [s for s in sentences[:-1] if _candidates_only(grader, s)]
    yield _Place("final sentence", also_named + [sentences[-1]], True)


_ANY_ALNUM = re.compile(r"[A-Za-z0-9]", _A)


def score(kind: str, ground_truth: str, output: str, options: Sequence[str] = (),
          aliases: Sequence[str] = ()) -> dict:
    """{"score": 0 | 1, "reason": ...} for one output; kind is "mcq" or "free-form"."""
    prepared = prepare(final_text(output))
    if not _ANY_ALNUM.search(prepared):
        return {"score": 0, "reason": "empty output"}
    grader = (_mcq_grader(ground_truth, list(options)) if kind == "mcq"
              else _free_form_grader(ground_truth, list(aliases)))
    text = after_revision(anchor(prepared, grader.forms))
    for place in _places_of(text, grader):
        if place.unknown:
            return {"score": 0, "reason": f"a box without the answer among the {place.where}"}
        verdict = _judge(grader, place.sentences, place.where)
        if verdict:
            return verdict
        if place.decisive:
            return {"score": 0, "reason": f"no candidate answer in the {place.where}"}
    return {"score": 0, "reason": "no candidate answer in the final sentence"}


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


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **_reward_kwargs) -> float:
    """verl's reward signature (custom_reward_function.path = this module, name = compute_score).

    ground_truth is the row's ground truth as verl passes it (reward_model.ground_truth): the mapping
    {answer, kind, options, aliases} of current rows, its lists as Python lists (pyarrow, datasets) or
    numpy arrays (pandas); or, from rows exported before it carried them, the answer string, with
    kind and options then read from extra_info when there is one. Keyword arguments verl adds from
    custom_reward_function.reward_kwargs are accepted and not used."""
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
    return float(score(str(kind), answer, solution_str, options=options, aliases=aliases)["score"])
