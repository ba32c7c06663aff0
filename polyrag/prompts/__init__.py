"""Every prompt polyrag sends lives in this folder as a Jinja2 template.

Templates render with StrictUndefined (a missing variable is an error, not an empty string)
and without autoescaping: passages go to the model as written, never HTML-escaped.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jinja2
import yaml

PROMPTS_DIR = Path(__file__).parent


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(PROMPTS_DIR),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    # One passage per line, as MIRAGE-BENCH lays out its contexts.
    env.filters["oneline"] = lambda text: " ".join(str(text).split())
    return env


def render(template: str, **variables) -> str:
    """Render one template file (path relative to this folder) with fresh variables."""
    return environment().get_template(template).render(**variables).strip()


@lru_cache(maxsize=None)
def load_strings(name: str) -> dict:
    """A YAML table of per-language strings shipped beside the templates."""
    with open(PROMPTS_DIR / name, encoding="utf-8") as handle:
        return yaml.safe_load(handle)
