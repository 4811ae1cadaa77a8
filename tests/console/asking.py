"""A workflow that asks a person one question, of the schema its inputs
name (issue 27): the console's answer form is built from each of these.

  bool    yes or no
  enum    a Literal choice
  number  a float that must not be negative (a wrong one: -1)
  object  a pydantic model with a nested model (that property in JSON)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from phasegate import PhaseContext, Workflow


class Size(BaseModel):
    width: int
    height: int


class Label(BaseModel):
    approved: bool
    priority: Literal["low", "normal", "high"]
    copies: int
    note: str = ""
    size: Size


SCHEMAS: dict[str, Any] = {
    "bool": bool,
    "enum": Literal["low", "normal", "high"],
    "number": Annotated[float, Field(ge=0)],
    "object": Label,
}


class Hostile(BaseModel):
    """Stored text that must be shown, never obeyed: markup in a property's
    name (its alias) and in a choice, an escape sequence, a bidi override."""

    pick: Literal["[bold]loud[/bold]", "\u202eevil", "plain"] = Field(alias="[red]pick[/red]")


#: Asked when inputs["kind"] is "hostile" (not part of the shared store).
HOSTILE: Any = Hostile

asks = Workflow("asks")


@asks.phase()
def ask(ctx: PhaseContext) -> dict[str, Any]:
    kind = ctx.inputs["kind"]
    answer = ctx.ask(
        f"pick_{kind}",
        f"Which {kind} for print job {ctx.inputs['job']}?",
        HOSTILE if kind == "hostile" else SCHEMAS[kind],
        payload={"job": ctx.inputs["job"], "printer": "lp-2\x1b[31m", "pages": 3},
    )
    return {"answer": answer.model_dump() if isinstance(answer, BaseModel) else answer}
