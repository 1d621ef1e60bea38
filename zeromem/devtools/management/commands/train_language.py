from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from zeromem.devtools.evaluation import locomo
from zeromem.devtools.language import labelled
from zeromem.devtools.language.training import head_train
from zeromem.devtools.language.vectors import minilm_vectors
from zeromem.language.head import HEAD_PATH


class Command(BaseCommand):
    help = ("Fit the language seam's chatter head on the dev split of the labelled language set and write its "
            "weights (zeromem/language/chatter_head.json). With --json the last stdout line is one JSON object.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--labelled", default=str(labelled.LABELLED_PATH), help="the labelled set (jsonl)")
        parser.add_argument("--locomo", default=str(locomo.DEFAULT_PATH), help="LoCoMo data for the set's LoCoMo "
                                                                                "items (left out when absent)")
        parser.add_argument("--output", default=str(HEAD_PATH), help="where the weights go")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        source = Path(options["labelled"])
        items = labelled.load(source, locomo_path=Path(options["locomo"]), report=self.stderr.write)
        texts = [item.texts[0] for item in items if item.judgement == "chatter"]
        vectors = minilm_vectors(texts, workers=settings.ZEROMEMORY_EMBEDDING_WORKERS,
                                 cache_dir=Path(settings.ZEROMEMORY_MODEL_CACHE_DIR))
        trained = head_train(items, vectors)
        locomo_items = sum(item.source == "locomo" for item in items if item.judgement == "chatter")
        weights = trained.fit.weights(labelled_sha256=labelled.digest(source), train_items=trained.dev_items,
                                      locomo_items=locomo_items)
        Path(options["output"]).write_text(json.dumps(weights, indent=1) + "\n")
        fit = trained.fit
        figures = {"dev_items": trained.dev_items, "test_items": trained.test_items, "locomo_items": locomo_items,
                   "C": fit.c, "threshold": fit.threshold, "strict_threshold": fit.strict_threshold,
                   "dev_cv_accuracy": fit.cv_accuracy, "test_accuracy": trained.test_accuracy,
                   "test_statements_lost": trained.test_statements_lost,
                   "test_strict_accuracy": trained.test_strict_accuracy,
                   "test_strict_statements_lost": trained.test_strict_statements_lost}
        self.stderr.write(f"chatter head: C {fit.c}; dev (cross-validated) accuracy {fit.cv_accuracy} on "
                          f"{trained.dev_items} items; on the {trained.test_items} test items, at threshold "
                          f"{fit.threshold}: accuracy {trained.test_accuracy}, statements taken for chatter "
                          f"{trained.test_statements_lost}; at the strict threshold {fit.strict_threshold}: "
                          f"accuracy {trained.test_strict_accuracy}, statements taken for chatter "
                          f"{trained.test_strict_statements_lost}; written to {options['output']}")
        if options["json"]:
            self.stdout.write(json.dumps(figures))
