from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from zeromem.devtools.evaluation import locomo
from zeromem.devtools.language import labelled
from zeromem.devtools.language.training import Trained, head_train
from zeromem.devtools.language.vectors import minilm_vectors
from zeromem.language.head import HEADS_DIR

HEADS = ("chatter", "change")  # each fitted on its judgement's items, written to <judgement>_head.json


class Command(BaseCommand):
    help = ("Fit the language seam's learned heads (chatter, change) on the dev split of the labelled language set "
            "and write their weights (zeromem/language/<judgement>_head.json). With --json the last stdout line is "
            "one JSON object, the figures per head.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--labelled", default=str(labelled.LABELLED_PATH), help="the labelled set (jsonl)")
        parser.add_argument("--locomo", default=str(locomo.DEFAULT_PATH), help="LoCoMo data for the set's LoCoMo "
                                                                                "items (left out when absent)")
        parser.add_argument("--output-dir", default=str(HEADS_DIR), help="where the weights go")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        source = Path(options["labelled"])
        items = labelled.load(source, locomo_path=Path(options["locomo"]), report=self.stderr.write)
        texts = [item.texts[0] for item in items if item.judgement in HEADS]
        vectors = minilm_vectors(texts, workers=settings.ZEROMEMORY_EMBEDDING_WORKERS,
                                 cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))
        figures = {}
        for judgement in HEADS:
            trained = head_train(items, vectors, judgement)
            locomo_items = sum(item.source == "locomo" for item in items if item.judgement == judgement)
            weights = trained.fit.weights(judgement, labelled_sha256=labelled.digest(source),
                                          train_items=trained.dev_items, locomo_items=locomo_items)
            output = Path(options["output_dir"]) / f"{judgement}_head.json"
            output.write_text(json.dumps(weights, indent=1) + "\n")
            figures[judgement] = self._report(judgement, trained, locomo_items, output)
        if options["json"]:
            self.stdout.write(json.dumps(figures))

    def _report(self, judgement: str, trained: Trained, locomo_items: int, output: Path) -> dict[str, Any]:
        fit = trained.fit
        self.stderr.write(f"{judgement} head: C {fit.c}; dev (cross-validated) accuracy {fit.cv_accuracy} on "
                          f"{trained.dev_items} items; on the {trained.test_items} test items, at threshold "
                          f"{fit.threshold}: accuracy {trained.test_accuracy}, noes taken for a yes "
                          f"{trained.test_statements_lost}; at the strict threshold {fit.strict_threshold}: "
                          f"accuracy {trained.test_strict_accuracy}, noes taken for a yes "
                          f"{trained.test_strict_statements_lost}; written to {output}")
        return {"dev_items": trained.dev_items, "test_items": trained.test_items, "locomo_items": locomo_items,
                "C": fit.c, "threshold": fit.threshold, "strict_threshold": fit.strict_threshold,
                "dev_cv_accuracy": fit.cv_accuracy, "test_accuracy": trained.test_accuracy,
                "test_statements_lost": trained.test_statements_lost,
                "test_strict_accuracy": trained.test_strict_accuracy,
                "test_strict_statements_lost": trained.test_strict_statements_lost}
