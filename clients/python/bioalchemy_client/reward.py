"""The verifiable reward: the same rules as processors/reward.ts, tested on the same table of
cases (test/fixtures/reward-cases.json). Change them together."""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Optional, Sequence

LETTERS = "ABCDEFGHIJ"
NUMERIC_TOLERANCE = 0.01


def final_text(output: str) -> str:
    """The text after the last </think>; an unclosed <think> leaves nothing to grade."""
    text = output.replace("\r\n", "\n")
    close = text.lower().rfind("</think>")
    if close >= 0:
        return text[close + len("</think>"):]
    if re.search(r"<think>", text, re.IGNORECASE):
        return ""
    return text


def boxed(text: str) -> list:
    out = []
    for m in re.finditer(r"\\boxed\s*\{", text):
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
    r"(?:final\s+answer|correct\s+answer|correct\s+option|answer|option)\s*(?:is|:|=|-)\s*(?:option\s+)?([^\n]*)",
    re.IGNORECASE,
)


def answer_phrase(text: str) -> Optional[str]:
    last = None
    for m in _ANSWER_PHRASE.finditer(text):
        if m.group(1).strip():
            last = m.group(1)
    return last


def normalise(s: str) -> str:
    s = unicodedata.normalize("NFKD", s)
    s = "".join(ch for ch in s if not ("\u0300" <= ch <= "\u036f"))
    s = s.lower()
    s = re.sub(r"\\text\{([^}]*)\}", r"\1", s)
    s = "".join(ch if (ch.isalnum() or ch in ".%-" or ch.isspace()) else " " for ch in s)
    s = re.sub(r"(^|\s)[.-]+(?!\d)|[.-]+(?=\s|$)", " ", s)
    s = re.sub(r"\b(the|a|an)\b", " ", s, flags=re.ASCII)
    return re.sub(r"\s+", " ", s).strip()


def _letters_in(span: str, valid: str) -> list:
    out = []
    for m in re.finditer(r"(?<![A-Za-z0-9])([A-J])(?![A-Za-z0-9])", span):
        letter = m.group(1)
        if letter not in valid:
            continue
        after = span[m.start() + 1:]
        if letter in ("A", "I") and re.match(r"^ +[a-z]", after):
            continue
        out.append(letter)
    return out


def _option_in(span: str, options: Sequence[str], valid: str):
    letters = list(dict.fromkeys(_letters_in(span, valid)))
    if len(letters) > 1:
        return "two"
    if len(letters) == 1:
        return letters[0]
    norm = normalise(span)
    if not norm:
        return None
    named = []
    for i, o in enumerate(options):
        n = normalise(o)
        if n and (norm == n or (len(n) >= 4 and n in norm)):
            named.append(LETTERS[i])
    if len(named) == 1:
        return named[0]
    exact = [LETTERS[i] for i, o in enumerate(options) if normalise(o) == norm]
    if len(exact) == 1:
        return exact[0]
    return "two" if len(named) > 1 else None


def _no_answer(where: str) -> dict:
    return {"score": 0, "reason": f"no option found ({where})"}


def _score_mcq(truth: str, options: Sequence[str], text: str) -> dict:
    want = truth.strip().upper()
    valid = LETTERS[:len(options)] if len(options) >= 2 else LETTERS

    def judge(got, where):
        if got is None:
            return None
        if got == "two":
            return {"score": 0, "reason": f"two different options in the {where}"}
        if got == want:
            return {"score": 1, "reason": f"{got} in the {where}"}
        return {"score": 0, "reason": f"{got} in the {where}, expected {want}"}

    boxes = boxed(text)
    if boxes:
        return judge(_option_in(boxes[-1], options, valid), "boxed answer") or _no_answer("boxed")
    phrase = answer_phrase(text)
    if phrase is not None:
        r = judge(_option_in(phrase, options, valid), "answer phrase")
        if r:
            return r
    last_line = text.strip().split("\n")[-1].strip()
    m = re.match(r"^\(?\**([A-J])\**\)?[.):]?\s*$", last_line)
    if m:
        return judge(m.group(1) if m.group(1) in valid else None, "last line") or _no_answer("line")
    matches = [i for i, o in enumerate(options) if normalise(o) == normalise(last_line)]
    r = judge(LETTERS[matches[0]] if matches else None, "last line (option text)")
    if r:
        return r
    if len(set(_letters_in(last_line, valid))) > 1:
        return judge("two", "last line")
    letters = _letters_in(text, valid)
    return judge(letters[-1] if letters else None, "last standalone letter") or _no_answer("text")


def accepted_forms(truth: str, aliases: Sequence[str]) -> list:
    forms = [truth, *aliases]
    for f in [truth, *aliases]:
        m = re.match(r"^(.+?)\s*\(([^()]+)\)\s*$", f)
        if m:
            forms += [m.group(1), m.group(2)]
    out = []
    for f in forms:
        n = normalise(f)
        if n and n not in out:
            out.append(n)
    return out


_NUMBER = re.compile(
    r"^\s*[~≈]?\s*([-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+−]?\.\d+)", re.ASCII
)


def number_in(s: str) -> Optional[float]:
    m = _NUMBER.match(s)
    if not m:
        return None
    try:
        n = float(m.group(1).replace(",", "").replace("−", "-"))
    except ValueError:
        return None
    return n if math.isfinite(n) else None


def _numbers_match(a: float, b: float) -> bool:
    scale = max(abs(a), abs(b))
    return True if scale < 1e-9 else abs(a - b) <= NUMERIC_TOLERANCE * scale


def _fmt(n: float) -> str:
    return str(int(n)) if n == int(n) else str(n)


def _score_free_form(truth: str, aliases: Sequence[str], text: str) -> dict:
    forms = accepted_forms(truth, aliases)
    truth_number = number_in(truth)
    boxes = boxed(text)
    phrase = answer_phrase(text)
    last_line = text.strip().split("\n")[-1]
    if boxes:
        spans = [(boxes[-1], "boxed answer")]
    else:
        spans = ([(phrase, "answer phrase")] if phrase is not None else []) + [(last_line, "last line")]
    for span, where in spans:
        norm = re.sub(r"\.$", "", normalise(span))
        if norm in forms:
            return {"score": 1, "reason": f"matches in the {where}"}
        if truth_number is not None:
            got = number_in(re.sub(r"^[\s$*]+", "", span))
            if got is not None:
                if _numbers_match(got, truth_number):
                    return {"score": 1, "reason": f"{_fmt(got)} within tolerance in the {where}"}
                return {"score": 0, "reason": f"{_fmt(got)} is not {_fmt(truth_number)} ({where})"}
    return {"score": 0, "reason": f"no accepted form of the answer in the {spans[0][1]}"}


def score(kind: str, ground_truth: str, output: str, options: Sequence[str] = (),
          aliases: Sequence[str] = ()) -> dict:
    """{"score": 0 | 1, "reason": ...} for one output; kind is "mcq" or "free-form"."""
    text = final_text(output)
    if not text.strip():
        return {"score": 0, "reason": "empty output"}
    if kind == "mcq":
        return _score_mcq(ground_truth, options, text)
    return _score_free_form(ground_truth, aliases, text)


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float:
    """verl's reward signature (custom_reward_function.path = this module, name = compute_score)."""
    info = extra_info or {}
    kind = info.get("kind") or ("mcq" if re.fullmatch(r"[A-J]", str(ground_truth).strip()) else "free-form")
    options = info.get("options") or []
    return float(score(kind, str(ground_truth), solution_str, options=list(options))["score"])
