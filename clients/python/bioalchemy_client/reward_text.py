"""Text (reward/text.ts): the output's final text, folded to what the tokenizer reads, and its tokens and
sentences. Part of the verifiable reward (bioalchemy_client/reward.py).

JavaScript's regular expressions are ASCII where Python's are not: every pattern here is compiled with
re.ASCII, `$` is written `\\Z` (Python's `$` also matches before a final newline), and where a pattern
reads raw text (a reference, an option) JavaScript's `\\s`, `.` and trim() are spelled out (_S, _DOT,
_trim below, used by the other modules of the reward too)."""

from __future__ import annotations

import re
import unicodedata
from typing import List, NamedTuple, Optional, Sequence

from bioalchemy_client.reward_rules import _ANSWER_LABELS, _GREEK, _GREEK_LOOKALIKES, _NUMBER_WORDS, _REVISIONS, _RULES, _UNITS

_A = re.ASCII

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

# day_first: a date is written day, month, year ("April 6, 1917", "6th of April, 1917" = "6 April 1917"), so
# a reference dated to the month ("April 1917") or the day in either order is found in an answer that writes
# the date either way, and one to another day or year is not.
_MONTH = "(" + "|".join(m[0].upper() + m[1:] for m in _RULES["months"].split(" ")) + r")\.?"
_MONTH_DAY_YEAR = re.compile(r"\b" + _MONTH + r" ([0-9]{1,2})(?:st|nd|rd|th)?,? ([0-9]{4})\b", _A)
_DAY_OF_MONTH_YEAR = re.compile(r"\b([0-9]{1,2})(?:st|nd|rd|th)? (?:of )?" + _MONTH + r",? ([0-9]{4})\b", _A)


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
    s = _DAY_OF_MONTH_YEAR.sub(r"\1 \2 \3", _MONTH_DAY_YEAR.sub(r"\2 \1 \3", s))
    return _NOT.sub(" not", s)


# Footnote marks glued to what they annotate: "in 1953[2]", "[1, 4]", "[2-5]", and a superscript after a
# year ("1953²", which prepare folds to "1953^2"). Left in, "1953[2]" reads as two values and "1953^2" as a
# power.
_FOOTNOTE_BRACKET = re.compile(r"(?<=[A-Za-z0-9.,;:)'])\[\d{1,3}(?: *[,-] *\d{1,3})*\]", _A)
_FOOTNOTE_AFTER_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\^[0-9]{1,2}(?![0-9]|\.[0-9])", _A)


def drop_footnotes(text: str) -> str:
    """The prepared text without footnote marks (a named step of its own: see reward.py)."""
    return _FOOTNOTE_AFTER_YEAR.sub(r"\1", _FOOTNOTE_BRACKET.sub("", text))


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
# A line that opens by stating the answer ("Solution: Choice_C", "Final answer: B"); what follows the label
# is the answer.
_ANSWER_LABEL = re.compile(
    "^(?:" + _S + "|[>-])*(?:" + "|".join(p.replace(" ", _S + "+") for p in _ANSWER_LABELS) + ")"
    + _S + "*(?:is|:|=|-)" + _S + "*", re.I | _A)
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
    name: bool = False  # a form written as a proper name ("Seymour Hersh"): see reward_anchor.py _written_as_name


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
# Opens a mark's content when the occurrence is written as a proper name (reward_anchor.py _written_as_name).
MARK_NAME = "\u0003"


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
            name = _at(line, i + 1) == MARK_NAME
            stands = line[i + (2 if name else 1):close]
            out.append(Token("form", stands, MARK_OPEN + stands, space, None, False, name))
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
