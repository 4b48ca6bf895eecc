"""The exception types a user sees: a message that names what is wrong and what is expected."""

from collections.abc import Sequence
from typing import Any


def key_path(parts: Sequence[Any]) -> str:
    """Where a value stands in a document, as messages name it: ``experiments.sq.sizes[0]``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def shown(value: Any, most: int = 60) -> str:
    """A value as a message quotes it (its repr), cut at ``most`` characters: a message stays
    one short line whatever the value (a --config value of thousands of brackets, say)."""
    text = repr(value)
    return text if len(text) <= most else f"{text[: most - 1]}…"


class NcuflowError(Exception):
    """An error caused by the user's input or environment, shown without a traceback."""


class ConfigError(NcuflowError):
    """A config value is wrong; the message starts with its path in the config."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.problem = path, message
        super().__init__(f"config error at {path}: {message}")


class SpecError(NcuflowError):
    """A kernel family or variant declaration that is wrong; the message starts with its
    file."""
