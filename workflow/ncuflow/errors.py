"""The exception types a user sees: a message that names what is wrong and what is expected."""


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
