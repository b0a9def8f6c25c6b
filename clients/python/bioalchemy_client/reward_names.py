"""Names written shorter or fuller than the reference (reward/names.ts): a person's name without or with
middle names ("Gregor Mendel" for Gregor Johann Mendel and the other way), and an abbreviation the output
uses for the reference's words ("SA node" for sinoatrial node, "CSF" for cerebrospinal fluid). Part of the
verifiable reward (bioalchemy_client/reward.py)."""

from __future__ import annotations

import re
import unicodedata
from typing import List, Optional, Sequence

from bioalchemy_client.reward_text import _A, _S, _trim

_NOT_LOWER = re.compile(r"[^a-z]", _A)


def _js_lower(s: str) -> str:
    """String.prototype.toLowerCase for what is kept after it (a-z): Python's lower() agrees there."""
    return s.lower()


def is_short_form(short: str, long: str) -> bool:
    """One term written as a short form of the other: its letters, in order, within the other's, from the same
    first letter ("SA node" of "sinoatrial node", "DNA" of "deoxyribonucleic acid", "IL-6" of "interleukin
    6"). A descriptor ("hormone" of "insulin") is not one."""
    s = _NOT_LOWER.sub("", _js_lower(short))
    long_letters = _NOT_LOWER.sub("", _js_lower(long))
    if not s or len(s) >= len(long_letters) or s[0] != long_letters[0]:
        return False
    k = 0
    for ch in long_letters:
        if k < len(s) and ch == s[k]:
            k += 1
    return k == len(s)


# A word of a person's name ("Gregor", "McClintock", "O'Brien") or an initial ("J.").
_NAME_WORD = re.compile(r"(?:[A-Z][A-Za-z'-]*[a-z]|[A-Z]\.)", _A)
_SPACES = re.compile(_S + "+")


_COMBINING = re.compile("[\u0300-\u036f]")


def _person_name(form: str) -> Optional[List[str]]:
    """The words of a person's name of two to four words, first and last written out, or None."""
    # Accents dropped, as outputs often drop them ("Jose Rizal" for José Protasio Rizal).
    words = _SPACES.split(_trim(_COMBINING.sub("", unicodedata.normalize("NFKD", form))))
    if len(words) < 2 or len(words) > 4 or not all(_NAME_WORD.fullmatch(w) for w in words):
        return None
    return None if words[0].endswith(".") or words[-1].endswith(".") else words


def shorter_names(accepted: Sequence[str]) -> List[str]:
    """A name of three or four words as its first and last ("Gregor Mendel")."""
    out = []
    for f in accepted:
        words = _person_name(f)
        if words and len(words) > 2:
            out.append(f"{words[0]} {words[-1]}")
    return out


def _abbreviates(abbr: str, words: Sequence[str]) -> bool:
    """Can the abbreviation's letters be read off the words in order, each word giving its initial and then
    any of its later letters? "SA" of [sinoatrial], "ATP" of [adenosine, triphosphate]; not "ADP" of
    [adenosine, triphosphate]."""
    if not words:
        return not abbr
    word, rest = words[0], words[1:]
    if not abbr or abbr[0] != word[0]:
        return False
    k, pos = 1, 1
    while True:
        if _abbreviates(abbr[k:], rest):
            return True
        if k >= len(abbr):
            return False
        at = word.find(abbr[k], pos)
        if at < 0:
            return False
        pos = at + 1
        k += 1


_ABBREVIATION = re.compile(r"\b[A-Z]{2,6}\b", _A)
_CAPITALS_OR_DIGITS = re.compile(r"[A-Z]{2}|[0-9]", _A)
_NOT_LOWER_RUN = re.compile(r"[^a-z]+", _A)
_MIDDLE = r"(?:\s+(?:[A-Z][A-Za-z'-]*[a-z]|[A-Z]\.)){1,2}"


def written_forms(text: str, accepted: Sequence[str]) -> List[str]:
    """The forms of the reference this output writes that no table lists: a person's name with middle names
    or initials ("Gregor Johann Mendel" for Gregor Mendel), and an abbreviation of the reference's first
    words before the rest of them ("SA node") or of all its words ("CSF"). Only what the text holds is
    returned, so a wrong abbreviation ("AV node" for sinoatrial node) is never an accepted form."""
    out: List[str] = []
    abbreviations = list(dict.fromkeys(m.group(0) for m in _ABBREVIATION.finditer(text)))
    for form in accepted:
        name = _person_name(form)
        if name:
            # JavaScript's \s here: the text is prepared, its spaces ASCII (as re.ASCII reads them).
            pattern = re.compile(r"\b" + re.escape(name[0]) + _MIDDLE + r"\s+" + re.escape(name[-1]) + r"\b", _A)
            out += [m.group(0) for m in pattern.finditer(text)]
            continue
        # A reference already in capitals or with digits ("IL-6", "TP53") is no phrase to abbreviate.
        if _CAPITALS_OR_DIGITS.search(form):
            continue
        words = _SPACES.split(_trim(form))
        for abbr in abbreviations:
            for k in range(1, len(words) + 1):
                tail = words[k:]
                if not tail and k < 2:
                    continue
                head = [w for w in _NOT_LOWER_RUN.split(_js_lower(" ".join(words[:k]))) if w != ""]
                if _abbreviates(_js_lower(abbr), head):
                    out.append(" ".join([abbr, *tail]))
    return list(dict.fromkeys(out))
