"""The OpenAI Agents SDK on phasegate: `PhasegateRunner.run` instead of `Runner.run`.

    from phasegate.integrations.openai_agents import PhasegateRunner

    @wf.phase()
    async def agent_loop(ctx: AsyncPhaseContext) -> dict:
        result = await PhasegateRunner.run(agent, ctx.inputs["task"], effects=("refund",))
        return {"output": result.final_output}

Inside an async phase the agent runs as `Runner.run` runs it, with every
call that leaves the process made durable:

- each model request is a durable step, `openai-agents:model:N` (N counts
  the run's model responses from 1, across handoffs and approvals); a resume
  returns the saved response and never asks the model again;
- each function tool call is a durable step named by the model's call id,
  `openai-agents:tool:CALL_ID`, so parallel calls keep their names on a
  replay whatever order their tasks start in; the tools named in `effects`
  are also phasegate effects (`openai-agents:effect:CALL_ID`): the intent is
  committed before the tool runs, and the completion, in the step's own
  transaction, before its result goes back to the model; the tool reads its
  idempotency key with `effect_key()`;
- a tool with `needs_approval` parks the run on a question,
  `openai-agents:approve:CALL_ID`, whose prompt and payload name the tool,
  its arguments and the call id; `phasegate decide RUN answer --question Q
  --value true` approves the call in the SDK's `RunState`, `false` (or
  `{"approved": false, "reason": "..."}`) rejects it and the model is told.

A second `PhasegateRunner.run` in the same phase names its steps
`openai-agents.2:...`. Those names are what stored runs are found by: they
are pinned by tests/integrations/test_openai_agents_names.py.

Outside an async phase `PhasegateRunner.run` refuses (UsageError): what an
author wrote it for is durability, and a silent plain run (from a sync phase's
`asyncio.run`, say) would repeat every model request and effect on a resume.
Use `agents.Runner.run` there. Streaming is refused the same way.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import hashlib
import json
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import UsageError
from ..ids import validate_name
from ..run.asynccontext import AsyncPhaseContext, running_phase


def _missing() -> str:
    """Why the SDK cannot be imported, in one line: not installed, or another `agents` in its place."""
    import importlib.util
    import sys

    found = sys.modules.get("agents")
    where = getattr(found, "__file__", None)
    if where is None:
        try:
            spec = importlib.util.find_spec("agents")
        except (ImportError, ValueError):
            spec = None
        where = spec.origin if spec is not None else None
    if where is not None and "site-packages" not in str(where) and "dist-packages" not in str(where):
        return (
            f"phasegate.integrations.openai_agents: the module 'agents' found at {where} is not the OpenAI "
            "Agents SDK; a file or folder named agents beside your workflow shadows it: rename it"
        )
    return "phasegate.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'phasegate[openai-agents]'"


try:
    from agents import (
        Agent,
        FunctionTool,
        Handoff,
        Model,
        ModelProvider,
        ModelResponse,
        RunConfig,
        Runner,
        RunResult,
        ToolApprovalItem,
        Usage,
    )
    from openai.types.responses import ResponseOutputItem
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
except ImportError:  # exercised by tests in a fresh interpreter without the SDK, and with it shadowed
    raise ImportError(_missing()) from None


__all__ = ["PREFIX", "PhasegateRunner", "Verdict", "effect_key"]

PREFIX = "openai-agents"
"""The first part of every step, effect and question name this adapter records."""

STREAMING = (
    "streaming is not durable on phasegate yet: use `await PhasegateRunner.run(...)` "
    "(its RunResult has the whole output) instead of run_streamed"
)
OUTSIDE = (
    "PhasegateRunner.run works inside an async phase of a phasegate run (an `async def` phase awaiting it); "
    "outside one, call agents.Runner.run"
)

_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("phasegate_openai_agents_key", default=None)

_items = TypeAdapter(list[ResponseOutputItem])


def effect_key() -> str:
    """The idempotency key of the effect tool call running now.

    A tool named in `PhasegateRunner.run`'s `effects` gets one key per call,
    the same on every attempt of that call: send it to the service that acts
    (an `Idempotency-Key` header) so that an attempt cut off by a crash and
    made again is done once.

    Returns:
        The key of the effect this tool call is.

    Raises:
        UsageError: not called from inside a tool that `effects` names.
    """
    key = _key.get()
    if key is None:
        raise UsageError("effect_key() is only known inside a tool call that PhasegateRunner.run's effects=(...) names")
    return key


class Verdict(BaseModel):
    """An answer to a tool's approval question that says why (`true`/`false` are answers too)."""

    approved: bool
    """Whether the tool call may run."""
    reason: str | None = None
    """What the model is told when the call is rejected."""


_Answer = bool | Verdict


def _part(call_id: Any) -> str:
    """A call id as part of a name: itself when it is a fine name, else a digest of it."""
    text = call_id if isinstance(call_id, str) else json.dumps(call_id, default=str)
    try:
        validate_name("step", f"{PREFIX}.99:approve:{text}")
    except UsageError:
        return "sha256-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return text


def _stored_output(output: Any) -> Any:
    """A tool's output as JSON the step log keeps (and a replay gives back)."""
    if isinstance(output, BaseModel):
        return output.model_dump(mode="json")
    if output is None or isinstance(output, str | int | float | bool):
        return output
    try:
        return json.loads(json.dumps(output))
    except (TypeError, ValueError):
        return str(output)


def _dump_response(response: ModelResponse) -> dict[str, Any]:
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


def _load_response(name: str, saved: Any) -> ModelResponse:
    """A saved model response rebuilt, each item validated as the SDK's own type (stored data is untrusted)."""
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
    if "request_id" in fields and isinstance(request_id, str):
        extra["request_id"] = request_id
    return ModelResponse(output=output, usage=usage, response_id=response_id, **extra)


class _DurableModel(Model):
    """A model whose every response is a durable step of the phase."""

    def __init__(self, inner: Model, journal: _Journal) -> None:
        self._inner = inner
        self._journal = journal

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await self._journal.model_call(self._inner, args, kwargs)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise UsageError(STREAMING)

    async def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            await close()

    def get_retry_advice(self, request: Any) -> Any:
        advice = getattr(self._inner, "get_retry_advice", None)
        return advice(request) if advice is not None else None


class _DurableProvider(ModelProvider):
    """The run's model provider, whose models are durable (agents that name their model by a string)."""

    def __init__(self, inner: ModelProvider, journal: _Journal) -> None:
        self._inner = inner
        self._journal = journal

    def get_model(self, model_name: str | None) -> Model:
        return self._journal.model(self._inner.get_model(model_name))

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()


class _Journal:
    """One `PhasegateRunner.run`: its names, its wrapped agents and models, its model-call count."""

    def __init__(self, ctx: AsyncPhaseContext, prefix: str, effects: frozenset[str]) -> None:
        self.ctx = ctx
        self.prefix = prefix
        self.effects = effects
        self.responses = 0
        """Model responses received (or replayed) so far: the next one is `model:{responses + 1}`."""
        self._agents: dict[int, Agent[Any]] = {}
        self._models: dict[int, _DurableModel] = {}
        self._kept: list[Any] = []
        """What the ids above are ids of, kept alive for the run (ids are not reused meanwhile)."""
        self.tool_names: set[str] = set()

    # -- model requests ---------------------------------------------------------

    def model(self, inner: Model) -> Model:
        if isinstance(inner, _DurableModel):
            return inner
        found = self._models.get(id(inner))
        if found is None:
            found = self._models[id(inner)] = _DurableModel(inner, self)
            self._kept.append(inner)
        return found

    async def model_call(self, inner: Model, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ModelResponse:
        name = f"{self.prefix}:model:{self.responses + 1}"

        async def request() -> dict[str, Any]:
            return _dump_response(await inner.get_response(*args, **kwargs))

        saved = await self.ctx.step(name, request, durable=True)
        # Counted once answered: a failed request saved nothing, and the model
        # is asked again under the same name when the phase runs again.
        self.responses += 1
        return _load_response(name, saved)

    # -- tools -----------------------------------------------------------------

    def tool(self, tool: Any) -> Any:
        if not isinstance(tool, FunctionTool):
            return tool  # hosted tools run on the provider's side, inside the model's response
        self.tool_names.add(tool.name)
        wrapped = copy.copy(tool)
        wrapped.on_invoke_tool = self._invoker(tool.name, tool.on_invoke_tool)
        return wrapped

    def _invoker(self, tool_name: str, original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        effect = tool_name in self.effects

        async def invoke(tool_ctx: Any, arguments: str) -> Any:
            part = _part(getattr(tool_ctx, "tool_call_id", None))

            async def call() -> Any:
                return _stored_output(await original(tool_ctx, arguments))

            async def act(key: str) -> Any:
                token = _key.set(key)
                try:
                    return await call()
                finally:
                    _key.reset(token)

            async def body() -> Any:
                if effect:
                    # Intent committed before `act`; its completion rides with
                    # this step's commit, before the result returns to the model.
                    return await self.ctx.effect(f"{self.prefix}:effect:{part}", act)
                return await call()

            return await self.ctx.step(f"{self.prefix}:tool:{part}", body, durable=True)

        return invoke

    # -- agents and handoffs ---------------------------------------------------

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        found = self._agents.get(id(agent))
        if found is not None:
            return found
        clone = agent.clone()
        self._agents[id(agent)] = clone  # before its handoffs: they may lead back to it
        self._kept.append(agent)
        if isinstance(agent.model, Model):
            clone.model = self.model(agent.model)
        if getattr(agent, "mcp_servers", None):
            raise UsageError(
                f"agent {agent.name!r} has MCP servers: their tool calls are not durable steps under "
                "PhasegateRunner yet; give the agent function tools (@function_tool) that call the server"
            )
        clone.tools = [self.tool(t) for t in agent.tools]
        clone.handoffs = [self.agent(h) if isinstance(h, Agent) else self.handoff(h) for h in agent.handoffs]
        return clone

    def handoff(self, handoff: Handoff[Any, Any]) -> Handoff[Any, Any]:
        original = handoff.on_invoke_handoff
        journal = self

        async def invoke(run_ctx: Any, arguments: str) -> Any:
            target = await original(run_ctx, arguments)
            return journal.agent(target) if isinstance(target, Agent) else target

        wrapped = dataclasses.replace(handoff, on_invoke_handoff=invoke)
        ref = getattr(handoff, "_agent_ref", None)
        target = ref() if callable(ref) else None
        if isinstance(target, Agent):
            wrapped._agent_ref = weakref.ref(self.agent(target))
        return wrapped

    def run_config(self, given: Any) -> RunConfig:
        config = given if isinstance(given, RunConfig) else RunConfig(**(given or {}))
        changes: dict[str, Any] = {"model_provider": _DurableProvider(config.model_provider, self)}
        if isinstance(config.model, Model):
            changes["model"] = self.model(config.model)
        return dataclasses.replace(config, **changes)

    # -- approvals -------------------------------------------------------------

    async def approve(self, state: Any, item: ToolApprovalItem) -> None:
        raw = item.raw_item
        call_id = getattr(raw, "call_id", None) if not isinstance(raw, dict) else raw.get("call_id")
        tool = item.tool_name or "?"
        text = getattr(raw, "arguments", None) if not isinstance(raw, dict) else raw.get("arguments")
        try:
            arguments: Any = json.loads(text, strict=False) if isinstance(text, str) else text
        except ValueError:
            arguments = text
        agent = getattr(getattr(item, "agent", None), "name", None)
        payload = {"tool": tool, "arguments": arguments, "call_id": call_id, "agent": agent}
        # What the model wrote, shown as JSON (control characters escaped): stored and printed text.
        shown = json.dumps(arguments, separators=(",", ":"), default=str)
        part = _part(call_id)
        prompt = (
            f"Approve the call of tool {tool!r} with arguments {shown} (call {part}, agent {agent!r})? "
            "true runs it, false rejects it and the model is told"
        )
        answer = await self.ctx.ask(
            f"{self.prefix}:approve:{part}",
            prompt,
            _Answer,
            payload=json.loads(json.dumps(payload, default=str)),
        )
        if isinstance(answer, Verdict):
            approved, reason = answer.approved, answer.reason
        else:
            approved, reason = bool(answer), None
        if approved:
            state.approve(item)
        elif reason:
            state.reject(item, rejection_message=reason)
        else:
            state.reject(item)


def _reachable_tools(agent: Agent[Any], seen: set[int] | None = None) -> tuple[set[str], bool]:
    """The function tool names of the agent and every agent it can hand off to; False when some handoff is opaque."""
    seen = seen if seen is not None else set()
    if id(agent) in seen:
        return set(), True
    seen.add(id(agent))
    names = {t.name for t in agent.tools if isinstance(t, FunctionTool)}
    complete = True
    for h in agent.handoffs:
        target: Any = h
        if isinstance(h, Handoff):
            ref = getattr(h, "_agent_ref", None)
            target = ref() if callable(ref) else None
        if isinstance(target, Agent):
            more, whole = _reachable_tools(target, seen)
            names |= more
            complete = complete and whole
        else:
            complete = False
    return names, complete


class PhasegateRunner:
    """`agents.Runner`, durable: awaited inside an async phase (see the module's note)."""

    @classmethod
    async def run(
        cls,
        starting_agent: Agent[Any],
        input: Any,
        *,
        effects: Iterable[str] = (),
        **runner_kwargs: Any,
    ) -> RunResult:
        """Run the agent as `agents.Runner.run` does, its model requests and tool calls durable.

        Args:
            starting_agent: The agent to run (it is not changed: the run uses a wrapped copy).
            input: What `Runner.run` takes: a text, a list of input items.
            effects: Names of function tools that act on the world (a refund, an email): each call is a
                phasegate effect, done at most once, its key readable with `effect_key()`.
            **runner_kwargs: Passed to `Runner.run` (`context`, `max_turns`, `hooks`, `run_config`...).

        Returns:
            The `RunResult` of the run's last `Runner.run` (after every approval was answered).

        Raises:
            UsageError: called outside an async phase, `effects` names a tool no agent has, or an agent
                has MCP servers.
        """
        ctx = running_phase()
        if ctx is None:
            raise UsageError(OUTSIDE)
        wanted = frozenset(effects if not isinstance(effects, str) else (effects,))
        names, complete = _reachable_tools(starting_agent)
        unknown = sorted(wanted - names)
        if unknown and complete:
            raise UsageError(
                f"effects names tools no agent of the run has: {', '.join(unknown)} "
                f"(function tools: {', '.join(sorted(names)) or 'none'})"
            )
        journal = _Journal(ctx, _prefix(ctx), wanted)
        agent = journal.agent(starting_agent)
        runner_kwargs["run_config"] = journal.run_config(runner_kwargs.get("run_config"))
        result = await Runner.run(agent, input, **runner_kwargs)
        while result.interruptions:
            state = result.to_state()
            for item in result.interruptions:
                await journal.approve(state, item)
            result = await Runner.run(agent, state, **runner_kwargs)
        return result

    @classmethod
    def run_streamed(cls, *args: Any, **kwargs: Any) -> Any:
        """Refused: streaming is not durable yet.

        Args:
            *args: What `Runner.run_streamed` takes.
            **kwargs: What `Runner.run_streamed` takes.

        Raises:
            UsageError: always, naming `PhasegateRunner.run` instead.
        """
        raise UsageError(STREAMING)

    @classmethod
    def run_sync(cls, *args: Any, **kwargs: Any) -> Any:
        """Refused: a durable run is awaited in an async phase.

        Args:
            *args: What `Runner.run_sync` takes.
            **kwargs: What `Runner.run_sync` takes.

        Raises:
            UsageError: always, naming `await PhasegateRunner.run` instead.
        """
        raise UsageError(
            "PhasegateRunner.run_sync is not durable: declare the phase `async def` and "
            "`await PhasegateRunner.run(...)`"
        )


_runs: weakref.WeakKeyDictionary[AsyncPhaseContext, int] = weakref.WeakKeyDictionary()
"""How many `PhasegateRunner.run` calls each execution of a phase has made."""


def _prefix(ctx: AsyncPhaseContext) -> str:
    """`openai-agents` for the phase's first `PhasegateRunner.run`, `openai-agents.2` for its second..."""
    n = _runs.get(ctx, 0) + 1
    _runs[ctx] = n
    return PREFIX if n == 1 else f"{PREFIX}.{n}"
