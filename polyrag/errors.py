"""Errors that stop a run with one message naming the file, key or row at fault."""


class PolyragError(Exception):
    """Base class: the message is meant to be read by the user as is."""


class ConfigError(PolyragError):
    """The configuration is invalid (names the config file and key)."""


class DataError(PolyragError):
    """A dataset file or row is invalid (names the file and row)."""


class BackendUnavailable(PolyragError):
    """An LLM backend cannot run here (package missing, no GPU, no API key)."""


class TooManyFailures(PolyragError):
    """More LLM calls failed after retries than the configured fraction allows."""
