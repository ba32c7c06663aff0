"""Language of an answer: normalised probabilities of the question's language and of English.

``langid`` (97 languages, probabilities normalised over them) is the MIRAGE-BENCH detector. It
has no Yoruba, so questions in a language it lacks use ``lingua``, whose confidence values over
its 75 languages also sum to one.
"""

from __future__ import annotations

import logging
import os
import pickle
from functools import lru_cache
from pathlib import Path


log = logging.getLogger(__name__)

# langid ships its model bz2-compressed; decompressing takes ~5 s in every job, so the decoded
# arrays are kept in the user's cache folder after the first load (and rebuilt when damaged).
LANGID_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "polyrag" / "langid-1.1.6.pkl"


@lru_cache(maxsize=1)
def langid_identifier():
    from langid.langid import LanguageIdentifier, model

    if LANGID_CACHE.exists():
        try:
            with open(LANGID_CACHE, "rb") as handle:
                return LanguageIdentifier(*pickle.load(handle), norm_probs=True)
        except Exception as error:  # noqa: BLE001 - any damage (truncated, overwritten, another layout): rebuild
            log.warning("the langid model cache %s is damaged (%s: %s); rebuilding it from langid's own model",
                        LANGID_CACHE, type(error).__name__, error)
    identifier = LanguageIdentifier.from_modelstring(model, norm_probs=True)
    parts = (identifier.nb_ptc, identifier.nb_pc, identifier.nb_numfeats, identifier.nb_classes,
             identifier.tk_nextmove, identifier.tk_output)
    LANGID_CACHE.parent.mkdir(parents=True, exist_ok=True)
    partial = LANGID_CACHE.with_suffix(f".{os.getpid()}.partial")
    with open(partial, "wb") as handle:
        pickle.dump(parts, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(partial, LANGID_CACHE)
    return identifier


@lru_cache(maxsize=1)
def langid_languages() -> frozenset[str]:
    return frozenset(langid_identifier().nb_classes)


@lru_cache(maxsize=1)
def lingua_detector():
    from lingua import LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_all_languages().build()


#: lingua's confidences differ between processes in their last bits (30 demo texts scored for
#: Yoruba in three processes: 15-17 texts differed, up to 2.2e-16; its sum over languages runs in
#: an order that changes from process to process): rounded, one config gives one result.
LINGUA_DECIMALS = 9


def lingua_probabilities(text: str) -> dict[str, float]:
    values = lingua_detector().compute_language_confidence_values(text)
    return {v.language.iso_code_639_1.name.lower(): round(v.value, LINGUA_DECIMALS) for v in values}


def detector_for(language: str) -> str:
    """``langid`` where it knows the language, else ``lingua``."""
    return "langid" if language in langid_languages() else "lingua"


def language_probabilities(text: str, language: str) -> dict[str, float]:
    """Probability of every language the detector knows, for ``text`` written for ``language``."""
    if detector_for(language) == "lingua":
        return lingua_probabilities(text)
    return dict(langid_identifier().rank(text))


def has_letters(text: str) -> bool:
    """Whether ``text`` can carry evidence of a language (``—``, ``...`` and digits cannot)."""
    return any(character.isalpha() for character in text)


def top_language(probabilities: dict[str, float]) -> str:
    return max(probabilities, key=probabilities.get)


def detected_language(text: str, language: str) -> str | None:
    """The detector's top language for ``text`` written for ``language`` (langid, or lingua where
    langid lacks ``language``); None for a text without a letter."""
    return top_language(language_probabilities(text, language)) if has_letters(text) else None


def language_features(text: str, language: str, min_chars: int = 20) -> dict[str, float | None]:
    """``target_language``, ``english_language`` and ``correct_language`` (the detected language is
    the question's; null for answers of ``min_chars`` characters or fewer, as BERGEN counts it).

    An answer without a single letter (``—``, ``...``, digits) carries no evidence of a language:
    all three are null rather than the detector's prior."""
    if not has_letters(text):
        return dict.fromkeys(["target_language", "english_language", "correct_language"])
    probabilities = language_probabilities(text, language)
    detected = top_language(probabilities)
    return {
        "target_language": probabilities.get(language, 0.0),
        "english_language": probabilities.get("en", 0.0),
        "correct_language": float(detected == language) if len(text.strip()) > min_chars else None,
    }
