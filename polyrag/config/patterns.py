"""The placeholders a path in the config may hold: ``{lang}`` in a per-language file pattern (a
system's answers, a passage file, a corpus file), none in a folder or a single file.

These paths become Snakemake inputs, where any other ``{name}`` is a wildcard that no output
defines: Snakemake would stop with a WildcardError after validation instead of naming the key.
"""

from __future__ import annotations

import re

from polyrag.errors import ConfigError

LANG = "{lang}"
#: A ``{...}`` field as Python's format and Snakemake's wildcards read it.
FIELD = re.compile(r"\{[^{}]*\}")


def check_placeholders(where: str, path: str, allowed: tuple[str, ...] = (LANG,)) -> None:
    """Refuse ``path`` (at ``where``: the source and key) when it holds a brace other than the
    ``allowed`` placeholders, naming the first one found and what the key takes."""
    rest = FIELD.sub(lambda field: "" if field.group() in allowed else field.group(), path)
    found = FIELD.search(rest)
    brace = found.group() if found else next((c for c in rest if c in "{}"), None)
    if brace is None:
        return
    takes = (f"the only placeholder it takes is {' and '.join(allowed)} (the language key)" if allowed
             else "it takes no placeholder")
    raise ConfigError(f"{where}: {path!r} holds {brace}; {takes}, and any other brace is a Snakemake wildcard")
