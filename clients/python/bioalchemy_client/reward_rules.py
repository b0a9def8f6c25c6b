"""The verifiable reward's tables (reward/rules.json; reward/rules.ts reads the same file, linked here as
reward_rules.json), loaded once for the reward's modules: reward_text.py, reward_anchor.py,
reward_graders.py and reward.py."""

from __future__ import annotations

import json
import os
from typing import Dict, List


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
_COUNT_WORDS = _word_set(_RULES["countWords"]["words"])
_SUBJECT_VERBS = _word_set(_RULES["subjectVerbs"]["words"])
_REMARKS: List[str] = _RULES["endOfAnswer"]["remarks"]
_REMARK_LABELS = _word_set(_RULES["endOfAnswer"]["labels"])
_ANAPHORS = _word_set(_RULES["endOfAnswer"]["anaphors"])
_HEDGES = _word_set(_RULES["endOfAnswer"]["hedges"])
_ALTERNATIVES = _word_set(_RULES["endOfAnswer"]["alternatives"])
_CONCLUSIONS = _word_set(_RULES["endOfAnswer"]["conclusions"])
_COPULAS = _word_set(_RULES["endOfAnswer"]["copulas"])
_SUBORDINATORS = _word_set(_RULES["endOfAnswer"]["subordinators"])
_REGIONS = set(_RULES["regions"]["names"])
_MONTHS = _word_set(_RULES["months"])
_APPOSITIONS = _word_set(_RULES["appositions"])
_TITLES = _word_set(_RULES["titles"]["words"])
_NAME_PARTICLES = _word_set(_RULES["nameParticles"])
_NOTES: List[str] = _RULES["notes"]["phrases"]
_ANSWER_LABELS: List[str] = _RULES["answerLabels"]["phrases"]
