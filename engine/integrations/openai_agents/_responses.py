"""A model response and a tool's output as a durable step stores them, and a saved response read back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from agents import ModelResponse, Usage
from openai.types.responses import ResponseOutputItem
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import BaseModel, TypeAdapter, ValidationError

from ...errors import UsageError

_items = TypeAdapter(list[ResponseOutputItem])


def stored_output(output: Any) -> Any:
    """A tool's output as JSON the step log keeps (and a replay gives back).

    Args:
        output: What the tool returned.

    Returns:
        It as JSON values: a model dumped, a scalar kept, anything else through JSON or as its text.
    """
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if output is None or isinstance(output, str | int | float | bool):
        return output
    try:
        return json.loads(json.dumps(output))
    except (TypeError, ValueError):
        return str(output)


def dump_response(response: ModelResponse) -> dict[str, Any]:
    """A model response as the step saves it.

    Args:
        response: The SDK's response.

    Returns:
        Its output items, usage and ids as JSON values.
    """
    usage = response.usage
    return {
        "output": [item.model_dump(mode="json", by_alias=True) for item in response.output],
        "usage": {
            "requests": usage.requests,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "input_tokens_details": usage.input_tokens_details.model_dump(mode="json"),
            "output_tokens_details": usage.output_tokens_details.model_dump(mode="json"),
        },
        "response_id": response.response_id,
        "request_id": getattr(response, "request_id", None),
    }


def load_response(name: str, saved: Any) -> ModelResponse:
    """A saved model response rebuilt, each item validated as the SDK's own type (stored data is untrusted).

    Args:
        name: The step's name (for the error).
        saved: What the step holds.

    Returns:
        The response as the SDK's `ModelResponse`.

    Raises:
        UsageError: it is not the shape `dump_response` writes.
    """
    try:
        if not isinstance(saved, Mapping):
            raise TypeError("not an object")
        output = _items.validate_python(saved["output"])
        u = saved["usage"]
        usage = Usage(
            requests=int(u["requests"]),
            input_tokens=int(u["input_tokens"]),
            output_tokens=int(u["output_tokens"]),
            total_tokens=int(u["total_tokens"]),
            input_tokens_details=InputTokensDetails.model_validate(u["input_tokens_details"]),
            output_tokens_details=OutputTokensDetails.model_validate(u["output_tokens_details"]),
        )
        response_id = saved.get("response_id")
        if response_id is not None and not isinstance(response_id, str):
            raise TypeError("response_id is not text")
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise UsageError(
            f"the saved model response {name!r} cannot be read as an Agents SDK response ({type(exc).__name__}); "
            "was the store written by another version of the agent?"
        ) from None
    fields = {f.name for f in dataclasses.fields(ModelResponse)}
    extra: dict[str, Any] = {}
    request_id = saved.get("request_id")
    # `request_id` is a field of later releases than the floor.
    if "request_id" in fields and isinstance(request_id, str):
        extra["request_id"] = request_id
    return ModelResponse(output=output, usage=usage, response_id=response_id, **extra)
