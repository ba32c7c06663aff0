"""Logging for Snakemake scripts: everything (progress bars too) goes to the rule's log file,
and a PolyragError's one-line message also reaches the console. Every script run this way dies
with the Snakemake process that started it (``polyrag.parent_watch``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from polyrag.errors import PolyragError
from polyrag.parent_watch import die_with_workflow
from polyrag.progress import LogLines


def run_logged(main: Callable[[], None], log_path: str) -> None:
    die_with_workflow()
    console = sys.stderr
    handle = open(log_path, "a", encoding="utf-8", buffering=1)
    sys.stderr = LogLines(handle)  # progress bars (one line per refresh) and warnings land in the log
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[logging.StreamHandler(handle)],
        force=True,
    )
    try:
        main()
    except PolyragError as error:
        logging.getLogger("polyrag").error("%s", error)
        print(f"polyrag: {error}", file=console)
        raise SystemExit(1) from None
    except Exception:
        logging.getLogger("polyrag").exception("unexpected error")
        print(f"polyrag: unexpected error, traceback in {log_path}", file=console)
        raise
    finally:
        sys.stderr = console
        handle.close()
