import json

import pytest

from bioalchemy_client.reward_names import is_short_form, shorter_names, written_forms
from bioalchemy_client.reward_text import drop_footnotes
from conftest import REPO

# Issue 45's named steps, each on its own, from the table test/feeder/reward-steps.test.ts reads too.
STEPS = json.loads((REPO / "test" / "fixtures" / "reward-steps.json").read_text())


@pytest.mark.parametrize("short, long, want", STEPS["isShortForm"])
def test_is_short_form(short, long, want):
    assert is_short_form(short, long) is want


@pytest.mark.parametrize("accepted, want", STEPS["shorterNames"])
def test_shorter_names(accepted, want):
    assert shorter_names(accepted) == want


@pytest.mark.parametrize("text, accepted, want", STEPS["writtenForms"])
def test_written_forms(text, accepted, want):
    assert written_forms(text, accepted) == want


@pytest.mark.parametrize("text, want", STEPS["dropFootnotes"])
def test_drop_footnotes(text, want):
    assert drop_footnotes(text) == want
