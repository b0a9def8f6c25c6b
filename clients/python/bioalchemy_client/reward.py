"""The verifiable reward: the same rules as processors/reward.ts, token for token, tested on the same
two tables (test/fixtures/reward-cases.json and test/fixtures/reward-adversarial.json). Change them
together; the rules are described at the top of processors/reward.ts."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence

LETTERS = "ABCDEFGHIJ"
NUMERIC_TOLERANCE = 0.01

_A = re.ASCII


def final_text(output: str) -> str:
    """The text after the last </think>; an unclosed <think> leaves nothing to grade."""
    text = re.sub(r"\r\n?", "\n", output)
    closes = list(re.finditer(r"</think>", text, re.I))
    if closes:
        return text[closes[-1].end():]
    return "" if re.search(r"<think>", text, re.I) else text


_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi",
    "ο": "omicron", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau", "υ": "upsilon",
    "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
}


def prepare(text: str) -> str:
    """Unicode and LaTeX folded to what the tokenizer reads (see processors/reward.ts prepare)."""
    s = re.sub(r"[\u2070\u00b9\u00b2\u00b3\u2074-\u2079\u207a\u207b]+",
               lambda m: "^" + unicodedata.normalize("NFKD", m.group(0)), text)
    s = unicodedata.normalize("NFKD", s)
    s = re.sub(r"[\u0300-\u036f]", "", s)
    s = re.sub(r"[\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]", " ", s)
    s = re.sub(r"[\u2018\u2019\u02bc]", "'", s)
    s = re.sub(r"[\u2212\u2010-\u2015]", "-", s)
    s = re.sub(r"[\u0391-\u03a9\u03b1-\u03c9]", lambda m: _GREEK.get(m.group(0).lower(), m.group(0)), s)
    s = re.sub(r"\\(?:text|mathrm|textbf|mathbf|mbox)\s*\{([^{}]*)\}", r"\1", s, flags=_A)
    s = s.replace("\\%", "%")
    s = re.sub(r"\\(?:times|cdot)", "×", s)
    s = re.sub(r"\\[,;:! ]", " ", s)
    s = re.sub(r"[*#`]", " ", s)
    return re.sub(r"n't\b", " not", s, flags=re.I | _A)


def boxed(text: str) -> list:
    """Contents of every \\boxed{...} (nested braces allowed), in order."""
    out = []
    for m in re.finditer(r"\\boxed\s*\{", text, _A):
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

# -------------------------------------------------------------------------------------------------
# Tokens


# NamedTuples, not dataclasses: verl loads this file by path without registering it in sys.modules
# (load_extern_object), and a dataclass looks its module up there.
class Token(NamedTuple):
    kind: str  # "word" | "num" | "punct"
    text: str
    key: str
    space: bool
    value: Optional[float]
    attached: bool


_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                 "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
                 "nineteen", "twenty"]
_UNITS = set(("kDa Da kD bp kb kbp Mb nt aa g mg ug ng pg kg L l mL ml uL ul nL M mM uM nM pM fM mol mmol "
              "nmol s ms min h hr hrs d x X mV Hz kHz C K cm mm um nm Gy U IU").split())
_UNIT_WORDS = set((
    "percent per cent fold times degree degrees celsius copy copies cell cells kilodaltons kilodalton "
    "daltons dalton base bases pairs pair nucleotides amino acids residues hours hour minutes minute "
    "seconds second days day weeks week months month years year molar micromolar millimolar nanomolar "
    "grams gram milligrams micrograms liters litres milliliters chromosomes chromosome genes gene mu").split())
_SIGNIFICANT = set(",;:.!?/-()%&+=<>~±'")
_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|\.\d+", _A)
_SCIENTIFIC = re.compile(r"\s*[x×]\s*10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?", _A)
_POWER_OF_TEN = re.compile(r"\s*\^\s*\{?\s*([-+]?\d+)\s*\}?", _A)
_FRACTION = re.compile(r"/(\d+)(?!\d|[.,]\d)", _A)
_LETTERS_RUN = re.compile(r"[A-Za-z]+", _A)
_WORD = re.compile(r"[A-Za-z0-9]+", _A)
_INTEGER = re.compile(r"\d+", _A)
_LOWER_LETTER = re.compile(r"[a-z]", _A)
_SIGN_AFTER = set("([{=:~<>≈")
_DIGITS = set("0123456789")
_ALNUM = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _is_space(ch: str) -> bool:
    return ch in " \t\n\f\v"


def tokenize(line: str) -> List[Token]:
    """One line of prepared text as tokens."""
    out: List[Token] = []
    space = True
    i = 0
    n = len(line)
    at = lambda k: line[k] if 0 <= k < n else ""  # noqa: E731
    while i < n:
        ch = line[i]
        if _is_space(ch):
            space = True
            i += 1
            continue
        signed = (ch in "-+" and (i == 0 or _is_space(line[i - 1]) or line[i - 1] in _SIGN_AFTER)
                  and (at(i + 2) if at(i + 1) == "." else at(i + 1)) in _DIGITS)
        start = i + 1 if signed else i
        m = _NUMBER.match(line, start) if at(start) != "" and at(start) in "0123456789." else None
        if m:
            end = m.end()
            value = float(m.group(0).replace(",", ""))
            key = m.group(0).replace(",", "")
            frac = _FRACTION.match(line, end) if _INTEGER.fullmatch(m.group(0)) else None
            if frac and int(frac.group(1)) != 0:
                value /= int(frac.group(1))
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
            if glued is None or (glued in _UNITS and at(end + len(glued)) not in _ALNUM):
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
        if ch in _ALNUM:
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
    """A line's sentences; a full stop after a lone letter or a number ends no sentence."""
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
# Candidates


class Mention(NamedTuple):
    value: str
    number: Optional[tuple]  # (value, percent)
    start: int
    end: int
    listed: bool


class _Grader(NamedTuple):
    text: bool
    mentions: Callable[[List[Token]], List[Mention]]
    decide: Callable[[List[Mention], str], dict]


_NEGATORS = set(("not no never neither nor none cannot without incorrect wrong false unlikely rather instead "
                 "unlike except excluded eliminated").split())
_CLAUSE_WORDS = set("but whereas however although though while yet rather instead unlike except".split())
_FILLER = set((
    "it is are was were be been will would should could might may can must the a an this that these those "
    "there so thus therefore hence then overall answer final correct right best option options choice "
    "choices i think guess believe maybe perhaps possibly probably likely plausible both either also my "
    "its yes of all only here we say pick go with choose approximately about around roughly nearly "
    "exactly value result").split())
_LETTER_LINKS = set((
    "and or nor vs versus is are was were would could should will might may must can seems appears "
    "because since as but best fits matches describes correctly only also both then so therefore thus rather "
    "not instead than over unlike which that here for").split())
_LETTER_PREFIXES = set(("vitamin hepatitis type class group chain complex site domain protein photosystem helix "
                        "influenza strand form region").split())
_CONTINUATIONS = set((
    "as because since which that due when after before in with by given suggesting indicating "
    "consistent compared relative from at for under on to during following upon via through than "
    "and or nor is are was were will would").split())
_HEADS = set("system pathway signaling signalling gene protein technique method approach process mechanism".split())
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_LIST_WORDS = {"or", "and", "nor", "vs", "versus"}
_LIST_PUNCT = {",", ";", "/", "&"}
_JOINERS = {"-", "/", "'", "+"}


def _is_list_separator(t: Optional[Token]) -> bool:
    if t is None:
        return False
    return t.key in _LIST_PUNCT if t.kind == "punct" else t.key in _LIST_WORDS


def form_key(form: str) -> str:
    """Keys of a form: its words and numbers joined, leading articles dropped."""
    words = [t for t in tokenize(prepare(form)) if _is_word(t)]
    while len(words) > 1 and words[0].key in ("the", "a", "an"):
        words.pop(0)
    return "".join(t.key for t in words)


def _form_at(tokens: List[Token], i: int, forms: Mapping, longest: int) -> Optional[tuple]:
    best = None
    joined = ""
    j = i
    # A key longer than the longest form plus an ending matches nothing.
    while j < len(tokens) and len(joined) <= longest:
        t = tokens[j]
        if t.kind == "punct":
            if j > i and t.key in _JOINERS and not t.space:
                j += 1
                continue
            break
        if j > i and tokens[j - 1].kind == "punct" and t.space:
            break
        joined += t.key
        value = forms.get(joined)
        if value is None:
            for ending in ("s", "es", "d", "ed"):
                if joined.endswith(ending) and joined[:-len(ending)] in forms:
                    value = forms[joined[:-len(ending)]]
                    break
        if value is not None:
            best = (j + 1, value)
        j += 1
    return best


def _hyphenated(tokens: List[Token], start: int, end: int) -> bool:
    before = _get(tokens, start - 1)
    after = _get(tokens, end)
    nxt = _get(tokens, end + 1)
    return bool(
        (before is not None and before.key == "-" and not before.space and not tokens[start].space
         and _is_word(_get(tokens, start - 2)))
        or (after is not None and after.key == "-" and not after.space and _is_word(nxt) and not nxt.space))


def _listed_beside(tokens: List[Token], start: int, end: int) -> bool:
    def competes(item):
        words = [t for t in item if _is_word(t)]
        if not words or len(words) > 4:
            return False
        if words[0].key in _CONTINUATIONS or any(w.key in _NEGATORS for w in words):
            return False
        return any(w.key not in _FILLER for w in words)

    def stops(t):
        return _is_list_separator(t) or (t.kind == "punct" and t.key in ",;:.!?(")

    if _is_list_separator(_get(tokens, end)):
        item = []
        j = end + 1
        while j < len(tokens) and not stops(tokens[j]):
            item.append(tokens[j])
            j += 1
        if competes(item):
            return True
    if _is_list_separator(_get(tokens, start - 1)):
        item = []
        j = start - 2
        while j >= 0 and not stops(tokens[j]):
            item.insert(0, tokens[j])
            j -= 1
        if competes(item):
            return True
    return False


def _unit(w: Optional[Token]) -> bool:
    return w is not None and w.kind == "word" and (w.text in _UNITS or w.key in _UNIT_WORDS)


def _number_at(tokens: List[Token], i: int) -> Optional[Mention]:
    t = tokens[i]
    if t.value is None or (t.kind == "num" and t.attached):
        return None
    end = i + 1
    percent = False
    value, key = t.value, t.key
    scale = tokens[end] if end < len(tokens) and tokens[end].kind == "word" else None
    if scale is not None and scale.key in _SCALES:
        value *= _SCALES[scale.key]
        key += " " + scale.key
        end += 1
    units = 0
    while units < 3 and end < len(tokens):
        u = tokens[end]
        nxt = _get(tokens, end + 1)
        if u.key == "±" and nxt is not None and nxt.kind == "num":
            end += 2
        elif u.key == "%":
            end += 1
        elif _unit(u):
            end += 1
        elif (u.key == "/" or (u.key == "-" and not u.space)) and _unit(nxt):
            end += 2
        else:
            break
        if tokens[end - 1].key in ("%", "percent", "cent"):
            percent = True
        units += 1
    return Mention(key, (value, percent), i, end, False)


def _mcq_grader(truth: str, options: Sequence[str]) -> _Grader:
    want = truth.strip().upper()
    valid = LETTERS[:len(options)] if len(options) >= 2 else LETTERS
    forms: dict = {}
    for i, o in enumerate(options):
        key = form_key(o)
        if not _LOWER_LETTER.fullmatch(key) and key not in forms:
            forms[key] = LETTERS[i]
    longest = max([len(k) for k in forms] + [0])

    def letter_at(tokens, i, words):
        t = tokens[i]
        if t.kind != "word" or len(t.text) != 1 or t.text.upper() not in valid:
            return None
        prev, nxt, after = _get(tokens, i - 1), _get(tokens, i + 1), _get(tokens, i + 2)
        if t.text == t.text.upper():
            if prev is not None and prev.kind == "word" and prev.key in _LETTER_PREFIXES:
                return None
            if (nxt is not None and nxt.kind == "word" and nxt.space and _LOWER_LETTER.match(nxt.text)
                    and nxt.key not in _LETTER_LINKS):
                return None
            if (nxt is not None and nxt.key == "." and after is not None and after.kind == "word"
                    and after.space and _LOWER_LETTER.match(after.text)):
                return None
            return t.text
        alone = words == 1
        closed = nxt is not None and nxt.key == ")" and not nxt.space
        named = prev is not None and prev.kind == "word" and prev.key in ("option", "choice", "answer")
        return t.text.upper() if (alone or closed or named) else None

    def mentions(tokens):
        out = []
        words = sum(1 for x in tokens if _is_word(x))
        i = 0
        while i < len(tokens):
            form = _form_at(tokens, i, forms, longest) if _is_word(tokens[i]) else None
            if form and not _hyphenated(tokens, i, form[0]):
                out.append(Mention(form[1], None, i, form[0], False))
                i = form[0]
                continue
            letter = letter_at(tokens, i, words)
            if letter:
                out.append(Mention(letter, None, i, i + 1, False))
            i += 1
        return out

    def decide(found, where):
        named = list(dict.fromkeys(m.value for m in found))
        if len(named) > 1:
            return {"score": 0, "reason": f"{' and '.join(named)} named in the {where}"}
        if named[0] == want:
            return {"score": 1, "reason": f"{want} in the {where}"}
        return {"score": 0, "reason": f"{named[0]} in the {where}, expected {want}"}

    return _Grader(False, mentions, decide)


def accepted_forms(truth: str, aliases: Sequence[str]) -> list:
    """The ground truth's accepted forms: itself, its aliases, and both sides of "long form (SHORT)"."""
    forms = [truth, *aliases]
    for f in [truth, *aliases]:
        m = re.match(r"^(.+?)\s*\(([^()]+)\)\s*$", f, _A)
        if m:
            forms += [m.group(1), m.group(2)]
    return list(dict.fromkeys(f.strip() for f in forms if form_key(f.strip()) != ""))


def numeric_form(form: str) -> Optional[tuple]:
    """(value, percent) when a form is nothing but a number and its units ("37 °C", "25%")."""
    tokens = [t for t in tokenize(prepare(form)) if t.key != "~"]
    n = _number_at(tokens, 0) if tokens else None
    return n.number if n is not None and n.end == len(tokens) else None


def _numbers_match(a: float, b: float, tolerance: float) -> bool:
    scale = max(abs(a), abs(b))
    return True if scale < 1e-9 else abs(a - b) <= max(tolerance, 1e-9) * scale


def _same_number(a: tuple, b: tuple, tolerance: float) -> bool:
    xs = [a[0], a[0] / 100] if a[1] else [a[0]]
    ys = [b[0], b[0] / 100] if b[1] else [b[0]]
    return any(_numbers_match(x, y, tolerance) for x in xs for y in ys)


def _free_form_grader(truth: str, aliases: Sequence[str]) -> _Grader:
    accepted = accepted_forms(truth, aliases)
    numbers = [n for n in map(numeric_form, accepted) if n is not None]
    if numeric_form(truth) is not None:
        def number_mentions(tokens):
            out = []
            i = 0
            while i < len(tokens):
                n = _number_at(tokens, i)
                if n:
                    out.append(n)
                i = n.end if n else i + 1
            return out

        def number_decide(found, where):
            first = found[0]
            if any(not _same_number(m.number, first.number, 0) for m in found):
                return {"score": 0, "reason": f"several values ({', '.join(m.value for m in found)}) in the {where}"}
            if any(_same_number(first.number, n, NUMERIC_TOLERANCE) for n in numbers):
                return {"score": 1, "reason": f"{first.value} matches in the {where}"}
            return {"score": 0, "reason": f"{first.value} is not {truth} ({where})"}

        return _Grader(False, number_mentions, number_decide)

    forms = {form_key(f): "answer" for f in accepted}
    longest = max([len(k) for k in forms] + [0])

    def mentions(tokens):
        out = []
        i = 0
        while i < len(tokens):
            form = _form_at(tokens, i, forms, longest) if _is_word(tokens[i]) else None
            if not form or _hyphenated(tokens, i, form[0]):
                i += 1
                continue
            nxt = _get(tokens, form[0])
            if (nxt is not None and nxt.kind == "word" and nxt.key not in _CONTINUATIONS and nxt.key not in _HEADS
                    and nxt.key not in _FILLER and not nxt.key.endswith("ly")):
                i += 1
                continue
            out.append(Mention("answer", None, i, form[0], _listed_beside(tokens, i, form[0])))
            i = form[0]
        return out

    def decide(found, where):
        if any(m.listed for m in found):
            return {"score": 0, "reason": f"the answer is one of a list or a hedge in the {where}"}
        return {"score": 1, "reason": f"matches in the {where}"}

    return _Grader(True, mentions, decide)


# -------------------------------------------------------------------------------------------------
# Places and the decision


def _read_sentence(grader: _Grader, tokens: List[Token]) -> tuple:
    mentions = grader.mentions(tokens)
    mention_at = {}
    for m in mentions:
        for k in range(m.start, m.end):
            mention_at[k] = m
    clause_of = []
    clause = 0
    for i, t in enumerate(tokens):
        if i not in mention_at and ((t.kind == "punct" and t.key in ",;:") or t.key in _CLAUSE_WORDS):
            clause += 1
        clause_of.append(clause)

    def skippable(t):
        return t.kind == "punct" or t.key in _FILLER or t.key.endswith("ly")

    negated = []
    for k, t in enumerate(tokens):
        if k in mention_at or t.kind != "word" or t.key not in _NEGATORS:
            continue
        for m in mentions:
            if clause_of[m.start] != clause_of[k]:
                continue
            between = m.end
            while between < k and skippable(tokens[between]) and between not in mention_at:
                between += 1
            if (m.start > k or between == k) and m not in negated:
                negated.append(m)
    positive = [m for m in mentions if m not in negated]
    return positive, len(negated)


def _candidates_only(grader: _Grader, tokens: List[Token]) -> bool:
    mentions = grader.mentions(tokens)
    if not mentions:
        return False
    return all(t.kind == "punct" or t.key in _FILLER or any(m.start <= i < m.end for m in mentions)
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
    decisive: bool
    unknown: bool = False


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


def score(kind: str, ground_truth: str, output: str, options: Sequence[str] = (),
          aliases: Sequence[str] = ()) -> dict:
    """{"score": 0 | 1, "reason": ...} for one output; kind is "mcq" or "free-form"."""
    text = prepare(final_text(output))
    if not re.search(r"[A-Za-z0-9]", text, _A):
        return {"score": 0, "reason": "empty output"}
    grader = (_mcq_grader(ground_truth, list(options)) if kind == "mcq"
              else _free_form_grader(ground_truth, list(aliases)))
    for place in _places_of(text, grader):
        if place.unknown:
            return {"score": 0, "reason": f"a box without the answer among the {place.where}"}
        verdict = _judge(grader, place.sentences, place.where)
        if verdict:
            return verdict
        if place.decisive:
            return {"score": 0, "reason": f"no candidate answer in the {place.where}"}
    return {"score": 0, "reason": "no candidate answer in the final sentence"}


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
