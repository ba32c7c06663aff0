"""Language of an answer: normalised probabilities of the question's language and of English.

``langid`` (97 languages, probabilities normalised over them) is the MIRAGE-BENCH detector. It
has no Yoruba, so questions in a language it lacks use ``lingua``, whose confidence values over
its 75 languages also sum to one.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def langid_identifier():
    from langid.langid import LanguageIdentifier, model

    return LanguageIdentifier.from_modelstring(model, norm_probs=True)


@lru_cache(maxsize=1)
def langid_languages() -> frozenset[str]:
    return frozenset(langid_identifier().nb_classes)


@lru_cache(maxsize=1)
def lingua_detector():
    from lingua import LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_all_languages().build()


def lingua_probabilities(text: str) -> dict[str, float]:
    values = lingua_detector().compute_language_confidence_values(text)
    return {v.language.iso_code_639_1.name.lower(): v.value for v in values}


def detector_for(language: str) -> str:
    """``langid`` where it knows the language, else ``lingua``."""
    return "langid" if language in langid_languages() else "lingua"


def language_probabilities(text: str, language: str) -> dict[str, float]:
    """Probability of every language the detector knows, for ``text`` written for ``language``."""
    if detector_for(language) == "lingua":
        return lingua_probabilities(text)
    return dict(langid_identifier().rank(text))


def language_features(text: str, language: str, min_chars: int = 20) -> dict[str, float | None]:
    """``target_language``, ``english_language`` and ``correct_language`` (the detected language is
    the question's; null for answers of ``min_chars`` characters or fewer, as BERGEN counts it)."""
    probabilities = language_probabilities(text, language)
    detected = max(probabilities, key=probabilities.get)
    return {
        "target_language": probabilities.get(language, 0.0),
        "english_language": probabilities.get("en", 0.0),
        "correct_language": float(detected == language) if len(text.strip()) > min_chars else None,
    }
