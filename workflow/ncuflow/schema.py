"""JSON Schemas of what users write (``workflow/schemas/``): the study config, a family's
``family.yaml`` and a variant's declaration. Each is checked against its schema before its
meaning is, and a failure is one line: where, what, and what is expected (the key's
description). The reference pages in docs/reference/ are generated from the same files.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from .errors import ConfigError, key_path, shown
from .files import load_yaml

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
CONFIG, FAMILY, VARIANT = (SCHEMAS / f"{n}.schema.yaml" for n in ("config", "family", "variant"))


def _deepest(err: Any) -> Any:
    """Inside anyOf, the branch error that reaches deepest into the value (the list element
    that is wrong rather than the whole list)."""
    while err.validator in {"anyOf", "oneOf"} and err.context:
        deeper = max(err.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        if len(deeper.absolute_path) <= len(err.absolute_path):
            break
        err = deeper
    return err


def _kind(value: Any) -> str:
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _alternatives(err: Any) -> str:
    """What is wrong with a value that none of anyOf's branches takes: its type, where every
    branch wants another; the one complaint of the branch whose type it has; else that it
    is not valid."""
    branches = list(err.context or ())
    if branches and all(b.validator == "type" for b in branches):
        wanted = " or ".join(str(b.validator_value) for b in branches)
        return f"{shown(err.instance)} is {_kind(err.instance)}, not {wanted}"
    others = [b for b in branches if b.validator != "type"]
    return others[0].message if len(others) == 1 else f"{shown(err.instance)} is not valid"


def _message(err: Any) -> ConfigError:
    """One line from a jsonschema ValidationError: where, what, and what is expected."""
    err = _deepest(err)
    path = list(err.absolute_path)
    if err.validator in {"anyOf", "oneOf"}:
        message = _alternatives(err)
    elif err.validator == "enum":
        choices = ", ".join(map(str, err.validator_value))
        message = f"{shown(err.instance)} is not a valid choice; valid: {choices}"
    elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        extra = next(k for k in err.instance if k not in allowed)
        path.append(extra)
        message = f"unknown key {extra!r}; valid: {', '.join(allowed)}"
    elif err.validator == "pattern":
        message = f"{shown(err.instance)} holds characters that are not allowed"
    elif err.validator == "type":
        message = f"{shown(err.instance)} is {_kind(err.instance)}, not {err.validator_value}"
    else:
        message = err.message
    description, node = None, err
    while node is not None and description is None:
        description = node.schema.get("description") if isinstance(node.schema, dict) else None
        node = node.parent
    if description and err.validator not in {"additionalProperties", "enum"}:
        message += f" (expected: {description})"
    return ConfigError(key_path(path), message)


@functools.cache
def load(schema: Path) -> dict[str, Any]:
    return load_yaml(schema.read_text())


@functools.cache
def _validator(schema: Path) -> Any:
    """A validator of ``schema`` that fills in each missing key's default, at every level,
    before checking what is below it (a default of {} then gets its own keys' defaults)."""
    from jsonschema import Draft202012Validator, validators

    properties = Draft202012Validator.VALIDATORS["properties"]

    def with_defaults(validator: Any, props: Any, instance: Any, subschema: Any) -> Any:
        if isinstance(instance, dict):
            for name, sub in props.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from properties(validator, props, instance, subschema)

    filling = validators.extend(Draft202012Validator, {"properties": with_defaults})
    return filling(load(schema))


def validate(data: dict[str, Any], schema: Path) -> dict[str, Any]:
    """Check ``data`` against ``schema`` and fill in its defaults, in place; a failure is a
    ConfigError whose path is the key's place in ``data``."""
    error = next(iter(_validator(schema).iter_errors(data)), None)
    if error is not None:
        raise _message(error)
    return data
