import os
import re
import importlib.util
import json
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bioalchemy_client import canonical_outputs, compute_score, score, unverifiable
from bioalchemy_client.reward import _RULES, _patterns_of, form_key
from conftest import REPO

# The same two tables run in test/feeder/reward.test.ts: one set of rules, two languages.
CASES = json.loads((REPO / "test" / "fixtures" / "reward-cases.json").read_text())
ADVERSARIAL = json.loads((REPO / "test" / "fixtures" / "reward-adversarial.json").read_text())
ORGANELLES = ["Mitochondria", "Ribosome", "Golgi apparatus", "Nucleus"]


def test_the_tables_cover_both_kinds_right_and_wrong():
    assert len(CASES) >= 60
    assert {(c["kind"], c["score"]) for c in CASES} == {("mcq", 0), ("mcq", 1), ("free-form", 0), ("free-form", 1)}
    assert len(ADVERSARIAL) >= 100 and "score" not in ADVERSARIAL[0]


@pytest.mark.parametrize("case", CASES, ids=[c["note"] for c in CASES])
def test_same_rules_as_typescript(case):
    r = score(case["kind"], case["ground_truth"], case["output"], options=case["options"],
              aliases=case.get("aliases", []))
    assert r["score"] == case["score"], r["reason"]


@pytest.mark.parametrize("row", ADVERSARIAL, ids=[r["note"] for r in ADVERSARIAL])
def test_outputs_built_to_game_the_reward_score_0(row):
    r = score(row["kind"], row["ground_truth"], row["output"], options=row["options"],
              aliases=row.get("aliases", []))
    assert r["score"] == 0, r["reason"]


def test_compute_score_reads_the_ground_truth_of_current_rows_without_extra_info():
    truth = {"answer": "C", "kind": "mcq", "options": ORGANELLES, "aliases": ["Golgi apparatus"]}
    assert compute_score("bioalchemy", "The answer is the Golgi apparatus.", truth) == 1.0
    assert compute_score("bioalchemy", "\\boxed{B}", truth) == 0.0
    free = {"answer": "deoxyribonucleic acid (DNA)", "kind": "free-form", "options": [],
            "aliases": ["deoxyribonucleic acid", "DNA"]}
    assert compute_score("bioalchemy", "\\boxed{DNA}", free) == 1.0


def test_compute_score_takes_numpy_arrays_as_pandas_reads_parquet():
    # pandas gives list columns inside structs as numpy arrays; `x or []` on one raises
    # "The truth value of an array with more than one element is ambiguous".
    truth = {"answer": "C", "kind": "mcq", "options": np.array(ORGANELLES, dtype=object),
             "aliases": np.array(["Golgi apparatus"], dtype=object)}
    assert compute_score("bioalchemy", "Golgi apparatus", truth) == 1.0
    assert compute_score("bioalchemy", "Ribosome", truth, {"options": np.array(ORGANELLES, dtype=object)}) == 0.0
    empty = {"answer": "increase", "kind": "free-form", "options": np.array([], dtype=object),
             "aliases": np.array([], dtype=object)}
    assert compute_score("bioalchemy", "It will increase.", empty) == 1.0


def test_compute_score_loads_as_verl_loads_a_custom_reward_file():
    # verl's load_extern_object executes custom_reward_function.path without putting the module in
    # sys.modules; a dataclass in it then fails to build ("'NoneType' object has no attribute '__dict__'").
    path = REPO / "clients" / "python" / "bioalchemy_client" / "reward.py"
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(str(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    truth = {"answer": "C", "kind": "mcq", "options": np.array(ORGANELLES, dtype=object), "aliases": np.array([])}
    assert module.compute_score("bioalchemy", "The Golgi apparatus.", truth) == 1.0


def test_compute_score_keeps_the_old_row_shape():
    extra = {"kind": "mcq", "options": np.array(ORGANELLES, dtype=object)}
    assert compute_score("bioalchemy", "Answer: c", "C", extra) == 1.0
    assert compute_score("bioalchemy", "Golgi apparatus", "C", extra) == 1.0
    assert compute_score("bioalchemy", "\\boxed{B}", "C", {"kind": "mcq", "options": ["a", "b", "c", "d"]}) == 0.0
    assert compute_score("bioalchemy", "\\boxed{mitochondria}", "Mitochondria") == 1.0
    assert compute_score("bioalchemy", "\\boxed{C}", "C") == 1.0


def _variants(row):
    """Each table row in the wrappings models put around an answer."""
    out = row["output"]
    reasoning = ("The Golgi apparatus receives proteins from the endoplasmic reticulum; mitochondria make ATP. "
                 "Expression may increase or decrease, 3 or 4 copies, 12.5 kDa.\n")
    for text in (out, reasoning + out, out + "\n\nHope this helps!", f"**{out}**", out.upper(), out.lower(),
                 f"Answer: {out}", f"\\boxed{{{out}}}", f"<think>{reasoning}</think>\n{out}", out.replace(" ", "\n"),
                 out + "?", "It is not " + out):
        item = {k: row[k] for k in ("kind", "ground_truth", "options")}
        item["aliases"] = row.get("aliases", [])
        item["output"] = text
        yield item


def test_typescript_and_python_give_the_same_score_and_reason():
    items = [v for row in CASES + ADVERSARIAL for v in _variants(row)]
    run = subprocess.run(["npx", "tsx", "test/feeder/reward-score.ts"], cwd=REPO, capture_output=True, text=True,
                         input="".join(json.dumps(i) + "\n" for i in items), check=True)
    typescript = [json.loads(line) for line in run.stdout.split("\n") if line]  # not splitlines: \x85
    assert len(typescript) == len(items)
    python = [score(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"])
              for i in items]
    differ = [(i["output"], t, p) for i, t, p in zip(items, typescript, python) if t != p]
    assert not differ, differ[:5]
    assert 0 < sum(r["score"] for r in python) < len(python)


# -------------------------------------------------------------------------------------------------
# Properties (hypothesis): for references generated in each class of biology's notation, every
# canonical form and every other accepted spelling scores 1, and a hedge (two answers, a list, a
# negation, an empty box) scores 0. The same classes run under fast-check in
# test/feeder/reward-properties.test.ts.

RULES = json.loads((REPO / "reward" / "rules.json").read_text())
TABLE_WORDS = {w for name in ("fillers", "negators", "continuations", "heads", "listWords", "clauseWords", "unitWords",
                              "letterLinks", "letterPrefixes") for w in RULES[name].split(" ")}
# Derandomised, so CI gives every run the same examples (a failure there is not a coin toss);
# HYPOTHESIS_RANDOM=1 explores new ones, as a session does before it changes the rules.
PROPERTIES = settings(max_examples=150, deadline=None, derandomize=not os.environ.get("HYPOTHESIS_RANDOM"),
                      suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def lower(min_size, max_size):
    return st.text("abcdefghiklmnoprstuvy", min_size=min_size, max_size=max_size).filter(lambda w: w not in TABLE_WORDS)


@st.composite
def binomial(draw):
    """"Escherichia coli" and "E. coli", either written as the reference."""
    initial = draw(st.sampled_from("ABCDEFGHKLMPSTVY"))
    genus, species = f"{initial}{draw(lower(4, 9))}", draw(lower(4, 9))
    full, short = f"{genus} {species}", f"{initial}. {species}"
    # A genus that is its initial and the species ("Aaaaa" for "A. aaaa") is the abbreviation written
    # without its gap: no real name is.
    assume(form_key(genus) not in {p.key for p in _patterns_of(short)})
    choice = draw(st.integers(0, 2))
    if choice == 0:
        # Written out only where the rules' table knows the genus: another may share the initial.
        return short, [short.replace(". ", "."), f"*{short}*"]
    if choice == 1:
        known, name = draw(st.sampled_from(sorted(_RULES["binomials"]["names"].items())))
        return known, [name, known.replace(". ", "."), f"*{name}*"]
    return full, [short, f"_{full}_", full.replace(" ", "  ")]


@st.composite
def locants(draw):
    """Chemical names with locants: "1,25-dihydroxyvitamin D3", "2,3-bisphosphoglycerate"."""
    numbers = draw(st.lists(st.integers(1, 30), min_size=1, max_size=3, unique=True))
    stem = draw(st.sampled_from(["dihydroxyvitamin D3", "bisphosphoglycerate", "dichlorophenol",
                                 "diaminopimelate", "trimethylxanthine"]))
    reference = f"{','.join(map(str, sorted(numbers)))}-{stem}"
    return reference, [f"{reference}.", reference.replace("-", "\u2010", 1)]


SUPERSCRIPT = str.maketrans("23+-", "²³⁺⁻")


@st.composite
def ion(draw):
    """Ions and charges ("Ca2+", "Cl-") and the pumps named after them ("Na+/K+-ATPase")."""
    element = st.sampled_from(["Ca", "Mg", "Na", "K", "Fe", "Zn", "Cu", "Mn", "Cl", "H"])
    charge = draw(st.sampled_from(["", "2", "3"]))
    sign = draw(st.sampled_from(["+", "-"]))
    if draw(st.booleans()):
        first, second = draw(element), draw(element)
        assume(first != second)
        reference = f"{first}+/{second}+-ATPase"
        return reference, [f"{first}⁺/{second}⁺-ATPase", reference.replace("-", " ")]
    reference = f"{draw(element)}{charge}{sign}"
    name = reference[:-len(charge + sign)]
    return reference, [name + (charge + sign).translate(SUPERSCRIPT), f"{name}^{{{charge}{sign}}}"]


@st.composite
def marker(draw):
    """CD markers: "CD4+ T cells", "CD8+", "CD25- cells"."""
    n = draw(st.integers(1, 300))
    sign = draw(st.sampled_from(["+", "+", "-"]))
    cells = draw(st.sampled_from(["T cells", "cells", "B cells", ""]))
    tail = f" {cells}" if cells else ""
    reference = f"CD{n}{sign}{tail}"
    return reference, [f"CD{n}{sign.translate(SUPERSCRIPT)}{tail}", f"**{reference}**"]


@st.composite
def prime(draw):
    """Primes: "3' UTR", "5′ cap" (prime, apostrophe or right quote)."""
    end = draw(st.sampled_from("35"))
    what = draw(st.sampled_from(["UTR", "cap", "end", "splice site", "overhang"]))
    mark = draw(st.sampled_from(["'", "\u2032", "\u2019"]))
    other = "\u2032" if mark == "'" else "'"
    return f"{end}{mark} {what}", [f"{end}{other} {what}", f"{end}'-{what}", f"{end}{mark}{what}"]


GREEK = [("α", "alpha", "a"), ("β", "beta", "b"), ("γ", "gamma", "g"), ("κ", "kappa", "k"), ("δ", "delta", "d")]


@st.composite
def greek(draw):
    """Greek letters, as the letter, its name or (after a hyphen or digit) a Latin look-alike: NF-κB,
    NF-kappaB, NF-kB; IL-1β; β-catenin, beta-catenin."""
    letter, spelled, lookalike = draw(st.sampled_from(GREEK))
    if draw(st.booleans()):
        stem = draw(st.sampled_from(["catenin", "tubulin", "actin", "globin", "galactosidase", "lactamase"]))
        with_letter, with_name, others = f"{letter}-{stem}", f"{spelled}-{stem}", []
    else:
        name = draw(st.sampled_from(["NF-", "TNF-", "IL-1", "TGF-", "HIF-1", "PPAR", "ER", "PKC", "GSK-3"]))
        suffix = "B" if name == "NF-" else ""
        with_letter, with_name = f"{name}{letter}{suffix}", f"{name}{spelled}{suffix}"
        # A look-alike Latin letter stands for a Greek one only right after a hyphen or a digit.
        others = [f"{name}{lookalike}{suffix}"] if name[-1] in "-0123456789" else []
    if draw(st.booleans()):
        return with_letter, [with_name, *others]
    return with_name, [with_letter, *others]


NUMBERS = [("mitochondrion", "mitochondria"), ("nucleus", "nuclei"), ("bacterium", "bacteria"), ("cilium", "cilia"),
           ("flagellum", "flagella"), ("larva", "larvae"), ("vertebra", "vertebrae"), ("mouse", "mice"),
           ("matrix", "matrices"), ("cortex", "cortices"), ("kinase", "kinases"), ("colony", "colonies"),
           ("nucleolus", "nucleoli"), ("stoma", "stomata"), ("tooth", "teeth")]


@st.composite
def plural(draw):
    """Singular and plural: mitochondrion / mitochondria, nucleus / nuclei."""
    one, many = draw(st.sampled_from([p for p in NUMBERS if p != ("stoma", "stomata")]))
    return (one, [many]) if draw(st.booleans()) else (many, [one])


CLASSES = {"binomial": binomial(), "locants": locants(), "ion": ion(), "marker": marker(), "prime": prime(),
           "greek": greek(), "plural": plural()}


def abbreviated(reference):
    m = re.match(r"^([A-Z])[a-z]{2,} ([a-z]{3,})$", reference)
    return f"{m.group(1)}. {m.group(2)}" if m else reference


def pays(reference, output):
    return score("free-form", reference, output)


@pytest.mark.parametrize("name", CLASSES)
def test_every_canonical_form_and_spelling_of_a_generated_reference_scores_1(name):
    @PROPERTIES
    @given(CLASSES[name])
    def check(written):
        reference, spellings = written
        assert unverifiable("free-form", reference) is None
        for output in [*canonical_outputs(reference), *(o for s in spellings for o in canonical_outputs(s))]:
            r = pays(reference, output)
            assert r["score"] == 1, (reference, output, r["reason"])

    check()


@pytest.mark.parametrize("name", CLASSES)
def test_a_hedge_a_list_a_negation_or_an_empty_box_scores_0(name):
    @PROPERTIES
    @given(CLASSES[name], CLASSES[name])
    def check(a, b):
        x, y = a[0], b[0]
        assume(form_key(x) != form_key(y))
        assume(all(form_key(s) != form_key(x) for s in b[1]))
        # Two binomials of one initial and one species share their abbreviation (Escherichia and
        # Entamoeba coli), and one that contains the other ("A. aaab" in "Aaaab aaly") names it.
        assume(form_key(abbreviated(x)) != form_key(abbreviated(y)))
        assume(form_key(abbreviated(x)) not in form_key(y) and form_key(abbreviated(y)) not in form_key(x))
        for output in [f"Answer: {x} or {y}", f"Answer: {y} or {x}", f"Answer: {x}, {y}", f"Answer: {y}, {x}",
                       f"\\boxed{{{x}}} \\boxed{{{y}}}", f"Answer: not {x}", f"It is not {x}.", "\\boxed{}"]:
            r = pays(x, output)
            assert r["score"] == 0, (x, output, r["reason"])

    check()


@PROPERTIES
@given(st.lists(st.one_of(*CLASSES.values()), min_size=4, max_size=5, unique_by=lambda w: form_key(w[0])),
       st.integers(0, 4), st.integers(0, 3))
def test_options_in_notation_pay_the_keys_text_and_only_it(written, key, other):
    texts = [w[0] for w in written]
    # Options that contain one another are refused by grade's duplicate and answer checks.
    assume(all(i == j or form_key(t) not in form_key(u) for i, t in enumerate(texts) for j, u in enumerate(texts)))
    assume(len({form_key(abbreviated(t)) for t in texts}) == len(texts))
    # One term twice (mitochondrion, mitochondria) is one option written twice.
    assume(not any(form_key(s) == form_key(u) for w in written for s in w[1] for u in texts if u != w[0]))
    k = key % len(texts)
    o = (k + 1 + other % (len(texts) - 1)) % len(texts)
    letter = "ABCDE"[k]
    assert unverifiable("mcq", letter, texts) is None
    assert score("mcq", letter, f"Answer: {texts[k]}", options=texts)["score"] == 1, texts[k]
    assert score("mcq", letter, f"The answer is {texts[o]}.", options=texts)["score"] == 0, texts[o]
    assert score("mcq", letter, f"Answer: {texts[k]} or {texts[o]}", options=texts)["score"] == 0


NOTATION = ["Escherichia coli", "E. coli", "S. aureus", "Saccharomyces cerevisiae", "1,25-dihydroxyvitamin D3",
            "2,3-bisphosphoglycerate", "Ca2+", "Cl-", "Na+/K+-ATPase", "H+/K+-ATPase", "CD4+ T cells", "CD8+",
            "3' UTR", "5\u2032 cap", "NF-\u03baB", "NF-kB", "NF-kappaB", "\u03b2-catenin", "beta-catenin", "IL-1\u03b2",
            "TNF-a", "mitochondrion", "mitochondria", "nucleus", "nuclei", "mice", "16S rRNA", "pH 7.4", "37 \u00b0C"]
TEMPLATES = ["Answer: {x}", "\\boxed{{{x}}}", "The answer is {x}.", "Answer: {x} or {y}", "Answer: {x}, {y}",
             "Answer: not {x}", "{y} rather than {x}", "It is {x} ({y}).", "First {y}, but on reflection {x}.",
             "The {x} pathway.", "{x}-derived cells", "anti-{x}", "Answer: **{x}**", "Answer: _{x}_",
             "Answer: {x}\n\n{y} is wrong.", "\\boxed{{{x}}} \\boxed{{{y}}}"]


def test_typescript_and_python_agree_on_notation():
    items = []
    for n, x in enumerate(NOTATION):
        for m, template in enumerate(TEMPLATES):
            y = NOTATION[(n + m + 1) % len(NOTATION)]
            for truth in (x, y):
                items.append({"kind": "free-form", "ground_truth": truth, "options": [], "aliases": [],
                              "output": template.format(x=x, y=y)})
            options = [NOTATION[(n + 3 * j) % len(NOTATION)] for j in range(4)]
            items.append({"kind": "mcq", "ground_truth": "ABCD"[m % 4], "options": options, "aliases": [],
                          "output": template.format(x=options[m % 4], y=options[(m + 1) % 4])})
    run = subprocess.run(["npx", "tsx", "test/feeder/reward-score.ts"], cwd=REPO, capture_output=True, text=True,
                         input="".join(json.dumps(i) + "\n" for i in items), check=True)
    typescript = [json.loads(line) for line in run.stdout.split("\n") if line]  # not splitlines: \x85
    assert len(typescript) == len(items)
    python = [score(i["kind"], i["ground_truth"], i["output"], options=i["options"]) for i in items]
    differ = [(i, t, p) for i, t, p in zip(items, typescript, python) if t != p]
    assert not differ, differ[:5]
    assert 0 < sum(r["score"] for r in python) < len(python)


def test_unverifiable_names_the_canonical_form_the_reward_cannot_pay():
    assert unverifiable("free-form", "E. coli") is None
    assert unverifiable("mcq", "C", ORGANELLES) is None
    assert canonical_outputs("3' UTR") == ["Answer: 3' UTR", "\\boxed{3' UTR}", "The answer is 3' UTR."]
    assert unverifiable("free-form", "???") == (
        'the reward cannot verify its own reference in "Answer: ???": no candidate answer in the final sentence')


# An abbreviation is written out only by the rules' table of binomials: another genus may share the initial.
@pytest.mark.parametrize("kind, truth, options, output", [
    ("free-form", "Streptococcus pyogenes", [], "Answer: Staphylococcus pyogenes"),
    ("mcq", "A", ["Escherichia coli", "Entamoeba coli", "Giardia lamblia", "Vibrio cholerae"], "Answer: E. coli"),
    ("free-form", "Escherichia coli", [], "Answer: Entamoeba coli"),
    ("free-form", "Escherichia coli", [], "\\boxed{Escherichia coli} \\boxed{Entamoeba coli}"),
    ("mcq", "A", ["Escherichia coli", "Entamoeba coli", "Giardia lamblia", "Vibrio cholerae"],
     "Answer: Entamoeba coli"),
])
def test_a_genus_of_the_same_initial_is_not_the_reference(kind, truth, options, output):
    assert score(kind, truth, output, options=options)["score"] == 0
