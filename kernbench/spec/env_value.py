"""The value an A/B side gives its switch, as a bench's `ab:` block writes it.

An environment variable holds text, but YAML reads `a: 0` as a number: a whole number is
taken as its digits (`0`, `1`, `8`). A boolean or a float is refused, because YAML's
spelling of it is not the text the user wrote (`on` reads as true, `1.50` as 1.5).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema


def _as_text(value: Any) -> Any:
    if isinstance(value, bool | float):
        raise ValueError(f"YAML read {value!r}, not the text written: quote the value "
                         "(a: \"on\", b: \"1.50\")")
    if isinstance(value, int):
        return str(value)
    return value


EnvValue = Annotated[
    str,
    BeforeValidator(_as_text),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
]
