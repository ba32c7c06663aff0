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
    """More requests were rejected by the model than the configured fraction allows."""


class LLMUnavailable(PolyragError):
    """The model could not be reached (connection refused, 429 or 5xx after retries, timeouts,
    a key or model name the endpoint refuses). The job fails; every response received before
    is cached, so a rerun resumes where it stopped. Never recorded as a verdict or an error row."""
