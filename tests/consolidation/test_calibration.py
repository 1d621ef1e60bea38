"""The clustering floor separates same-fact paraphrases from unrelated pairs with the real embedder."""

from zeromem.core.domain.policy import DEFAULT_POLICY
from zeromem.devtools.bench.clustering import calibrate


def test_the_floor_keeps_paraphrases_and_rejects_unrelated_pairs():
    result = calibrate(floor=DEFAULT_POLICY.clustering.cosine_floor)
    assert result["embedder"] == "builtin:minilm"
    assert result["same_fact"]["above_floor"] >= result["same_fact"]["pairs"] - 1
    assert result["unrelated"]["above_floor"] == 0
    assert result["related"]["above_floor"] <= 2
