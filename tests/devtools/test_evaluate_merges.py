"""`evaluate merges`' fixed definitions (empty merges, fragments, paraphrase pairs), and the command on a slice of
LoCoMo."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from zeromem.devtools.evaluation import locomo
from zeromem.devtools.evaluation.merges import is_empty, is_fragment, paraphrase_pairs


@pytest.mark.parametrize("text,empty", [
    ("John: Take care, bye!", True), ("Mel: Wow, that's so cool, thanks!", True),
    ("Mel: I ran the Berlin marathon in 3 hours 40 minutes.", False)])
def test_a_merge_with_fewer_than_four_content_words_is_empty(text, empty):
    assert is_empty(text) is empty


@pytest.mark.parametrize("text,fragment", [
    ('Mel: "Summer Sounds"- The playing an awesome pop song', False),
    ('Mel: The band "Summer Sounds played an awesome pop song.', True),
    ("Mel: We hiked up the ridge and then…", True), ("Mel: Lucky you!", True),
    ("Audrey: You got it :) I took a bunch of photos [shares image: two horses].", False)])
def test_unbalanced_quotes_a_cut_text_and_a_lone_exclamation_are_fragments(text, fragment):
    assert is_fragment(text) is fragment


def test_two_sentences_saying_the_same_with_the_same_values_are_a_paraphrase_pair():
    text = "Mel: Thank you for sharing the lasagna recipe! Thanks for sharing the lasagna recipe! I bake on Sundays."
    assert paraphrase_pairs(text) == [("Thank you for sharing the lasagna recipe!",
                                       "Thanks for sharing the lasagna recipe!")]
    assert paraphrase_pairs("Mel: I ran 5 km on Monday. I ran 8 km on Monday.") == []  # values differ


@pytest.mark.django_db(transaction=True)
def test_the_command_reports_each_figure_on_locomo():
    if not locomo.available():
        pytest.skip("LoCoMo data not found in ../shared/eval/locomo/ (read-only evaluation data)")
    out = io.StringIO()
    call_command("evaluate", "merges", "--conversations", "1", "--json", stdout=out, stderr=io.StringIO())
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["merged_texts"] > 0 and {"empty_merges", "fragments", "paraphrase_pairs", "samples"} <= set(result)
    written = ("cross_session_joins", "orphaned_referents", "content_free", "statements_lost")
    assert all(isinstance(result[key], int) and len(result["samples"][key]) == min(result[key], 5) for key in written)
    assert result["cross_session_joins_share"] == round(result["cross_session_joins"] / result["merged_texts"], 4)
    assert result["empty_merges"] == 0 and result["fragments"] == 0
