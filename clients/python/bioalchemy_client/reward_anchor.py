"""The anchor (reward/anchor.ts): the reference's accepted forms found in the prepared text first,
each occurrence marked as one token standing for the answer (or an option's letter). Part of the
verifiable reward (bioalchemy_client/reward.py)."""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from bioalchemy_client.reward_rules import _ENDINGS_ADDED, _ENDINGS_IRREGULAR, _ENDINGS_SWAPS, _NAME_PARTICLES, _RULES
from bioalchemy_client.reward_text import _A, _DOT, _S, MARK_CLOSE, MARK_NAME, MARK_OPEN, _at, _is_alnum, _trim, prepare


class Form(NamedTuple):
    text: str
    stands: str  # an option's letter, or ANSWER


ANSWER = "@"

_FREE_GAP = re.compile("[ \t\\-'\"\u201c\u201d/^_~$()]")


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
    written: bool  # the form as written (no ending or other number): only it takes loose punctuation


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
    return [_Pattern(k, gaps, n == 0) for n, k in enumerate(keys)]


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
        raw = text[at[j] + 1:at[j + 1]]
        gap = _residue(raw)
        if (gap != "" and gap != (p.gaps[j - k] if j - k < len(p.gaps) else "")
                and not (p.written and _loose_punctuation(text, at[j], at[j + 1], raw))):
            return None
    start = at[k]
    last = at[k + len(p.key) - 1]
    # A term inside a longer word, or glued by a hyphen or a sign to more of a name ("anti-TNF", "CD4+"
    # for CD4, "E. coli-derived"), is another term.
    before = _at(text, start - 1)
    after = _at(text, last + 1)
    if (_is_alnum(before) and not _camel_glued(text, start)) or (before == "-" and _is_alnum(_at(text, start - 2))):
        return None
    cited = _citation_after(text, start, last + 1)
    if cited > 0:
        return start, last + 1 + cited
    if _is_alnum(after) or after == "+" or after == "-":
        return None
    return start, last + 1


_LOOSE_COMMA = re.compile(r", +\Z")


def _loose_punctuation(text: str, frm: int, to: int, raw: str) -> bool:
    """loosePunctuation: punctuation a writer puts inside a name the reference writes without it, as
    the SQuAD normalisation people agree with drops it: a comma between two words of a title ("Kiss Me,
    Kate" for Kiss Me Kate) and a full stop between single letters ("D.I.V.O.R.C.E.", "U.S.A."). Quotes
    anywhere inside are free (_FREE_GAP: 'James "Buster" Douglas'). Only the form as written takes it,
    not its plural: "E. coli, S. aureus" is a list, not "E. colis"."""
    if _LOOSE_COMMA.match(raw):
        # Words on both sides: "A, C, E" is a list of letters, not the name ACE.
        return _is_alnum(_at(text, frm - 1)) and _is_alnum(_at(text, to + 1))
    return raw == "." and not _is_alnum(_at(text, frm - 1)) and not _is_alnum(_at(text, to + 1))


_CITATION = re.compile(r"([0-9]{1,2})(?:[.,;:](?![0-9A-Za-z])|\Z|(?=\n))")
_FOUR_LETTERS_END = re.compile(r"[A-Za-z]{4}\Z")


def _camel_glued(text: str, start: int) -> bool:
    """glued_after_word: a capitalised form run into the lower-case word before it, as search-backed
    assistants drop the spaces around their links ("was copied wasBuddhism.", "signed byCanada,"): a case
    change inside a word opens a new one there. A form that opens in lower case, or after a capital ("NASA" in
    "UNASA"), stays inside the word."""
    return ("a" <= _at(text, start - 1) <= "z" and "A" <= _at(text, start) <= "Z"
            and "a" <= _at(text, start + 1) <= "z")


def _citation_after(text: str, start: int, end: int) -> int:
    """citationDigits: a citation mark run into the word it annotates, as search-backed assistants copy
    them ("was Otto Hahn1.", "is Ghent12, the ..."): one or two digits glued to a form that ends in a
    word of four letters or more, right before a full stop, comma, semicolon or colon that ends the
    clause (or the line). The mark goes with the form; a name that ends in its own digits ("Notch1",
    "Sox2") is a form of its own and matches first, and a short one ("Cdk1" for Cdk) is another name.
    Returns how many characters the mark takes (0: none)."""
    m = _CITATION.match(text, end)
    if m is None or not _FOUR_LETTERS_END.search(text[max(start, end - 4):end]):
        return 0
    return len(m.group(1))


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
        name = MARK_NAME if stands == ANSWER and _written_as_name(text, start, end) else ""
        out.append(text[pos:start] + MARK_OPEN + name + stands + MARK_CLOSE)
        pos = end
    return "".join(out) + text[pos:]


_TITLE_WORD = re.compile(r"[A-Z][a-z]", _A)
_INITIALS = re.compile(r"(?:[A-Z]{1,2}|(?:[A-Z]\.)+)\Z", _A)
_NEXT_NAME = re.compile(_S + r"+[A-Z][a-z]", _A)


def _written_as_name(text: str, start: int, end: int) -> bool:
    """written_as_name: the occurrence is written as a proper name, each word capitalised ("Seymour Hersh", "the
    Colorado River"), not only opened by a capital that starts a sentence. A name may run on into a verb or a
    longer name ("Seymour Hersh first told ...") and still be the answer."""
    words = re.split(_S + "+", text[start:end])

    def inside(w, k):
        return 0 < k < len(words) - 1 and w in _NAME_PARTICLES

    if not all(_TITLE_WORD.match(w) or _INITIALS.match(w) or inside(w, k) for k, w in enumerate(words)):
        return False
    if not any(_TITLE_WORD.match(w) for w in words):
        return False
    if len(words) > 1:
        return True
    # One word that opens a sentence is a name when another capitalised word follows it ("Mozilla Corporation"),
    # not when its capital only opens the sentence ("Kinase inhibitors ...").
    k = start - 1
    while k >= 0 and text[k] in " \t\"'([\u201c\u201d":
        k -= 1
    return (k >= 0 and text[k] not in ".!?:\n") or _NEXT_NAME.match(text[end:end + 3]) is not None
