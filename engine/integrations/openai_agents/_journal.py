"""One `PhasegateRunner.run`'s durable parts: its models, tools, agents and handoffs, wrapped."""

from __future__ import annotations

import copy
import dataclasses
import weakref
from collections.abc import Callable
from typing import Any

from agents import Agent, FunctionTool, Handoff, Model, ModelProvider, ModelResponse, RunConfig

from ...errors import UsageError
from ...run.asynccontext import AsyncPhaseContext
from ._effects import current_key
from ._names import _part
from ._responses import dump_response, load_response, stored_output

STREAMING = (
    "streaming is not durable on phasegate yet: use `await PhasegateRunner.run(...)` "
    "(its RunResult has the whole output) instead of run_streamed"
)


class _DurableModel(Model):
    """A model whose every response is a durable step of the phase."""

    def __init__(self, inner: Model, journal: Journal) -> None:
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

    def __init__(self, inner: ModelProvider, journal: Journal) -> None:
        self._inner = inner
        self._journal = journal

    def get_model(self, model_name: str | None) -> Model:
        return self._journal.model(self._inner.get_model(model_name))

    async def aclose(self) -> None:
        aclose = getattr(self._inner, "aclose", None)
        if aclose is not None:
            await aclose()


class Journal:
    """One `PhasegateRunner.run`: its names, its wrapped agents and models, its model-call count."""

    def __init__(self, ctx: AsyncPhaseContext, prefix: str, effects: frozenset[str]) -> None:
        """Made once per `PhasegateRunner.run`.

        Args:
            ctx: The running phase its steps are saved in.
            prefix: The first part of its names (`openai-agents`, `openai-agents.2`...).
            effects: The function tools whose calls are effects.
        """
        self.ctx = ctx
        """The running phase."""
        self.prefix = prefix
        """The first part of every name this run records."""
        self.effects = effects
        """The names of the function tools whose calls are effects."""
        self.responses = 0
        """Model responses received (or replayed) so far: the next one is `model:{responses + 1}`."""
        self._agents: dict[int, Agent[Any]] = {}
        self._models: dict[int, _DurableModel] = {}
        self._kept: list[Any] = []
        """What the ids above are ids of, kept alive for the run (ids are not reused meanwhile)."""

    # -- model requests ---------------------------------------------------------

    def model(self, inner: Model) -> Model:
        """The durable model over `inner` (one per model: an agent and a handoff may share it).

        Args:
            inner: The agent's or the provider's model.

        Returns:
            Its durable wrapper.
        """
        if isinstance(inner, _DurableModel):
            return inner
        found = self._models.get(id(inner))
        if found is None:
            found = self._models[id(inner)] = _DurableModel(inner, self)
            self._kept.append(inner)
        return found

    async def model_call(self, inner: Model, args: tuple[Any, ...], kwargs: dict[str, Any]) -> ModelResponse:
        """One model request as the run's next `model:N` step: the saved response on a replay.

        Args:
            inner: The model asked.
            args: `get_response`'s arguments.
            kwargs: `get_response`'s keyword arguments.

        Returns:
            The response, rebuilt from what the step saved.
        """
        name = f"{self.prefix}:model:{self.responses + 1}"

        async def request() -> dict[str, Any]:
            return dump_response(await inner.get_response(*args, **kwargs))

        saved = await self.ctx.step(name, request, durable=True)
        # Counted once answered: a failed request saved nothing, and the model
        # is asked again under the same name when the phase runs again.
        self.responses += 1
        return load_response(name, saved)

    # -- tools -----------------------------------------------------------------

    def tool(self, tool: Any) -> Any:
        """A function tool whose calls are durable steps (effects when `effects` names it).

        Args:
            tool: One of an agent's tools.

        Returns:
            A wrapped copy of a function tool; any other tool as it is.
        """
        if not isinstance(tool, FunctionTool):
            return tool  # hosted tools run on the provider's side, inside the model's response
        wrapped = copy.copy(tool)
        wrapped.on_invoke_tool = self._invoker(tool.name, tool.on_invoke_tool)
        return wrapped

    def _invoker(self, tool_name: str, original: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        effect = tool_name in self.effects

        async def invoke(tool_ctx: Any, arguments: str) -> Any:
            part = _part(getattr(tool_ctx, "tool_call_id", None))

            async def call() -> Any:
                return stored_output(await original(tool_ctx, arguments))

            async def act(key: str) -> Any:
                token = current_key.set(key)
                try:
                    return await call()
                finally:
                    current_key.reset(token)

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
        """The agent's durable clone: its model, tools and handoffs wrapped (the agent itself is not changed).

        Args:
            agent: An agent the run may reach.

        Returns:
            Its clone, the same one each time it is reached.

        Raises:
            UsageError: the agent has MCP servers.
        """
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
        """A handoff that leads to the durable clone of its agent.

        Args:
            handoff: An agent's explicit handoff.

        Returns:
            A copy whose target is the clone.
        """
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
        """The run's `RunConfig`, its provider and model durable.

        Args:
            given: The author's `run_config` (a `RunConfig`, a dict of its fields, or None).

        Returns:
            A copy whose models are durable.
        """
        config = given if isinstance(given, RunConfig) else RunConfig(**(given or {}))
        changes: dict[str, Any] = {"model_provider": _DurableProvider(config.model_provider, self)}
        if isinstance(config.model, Model):
            changes["model"] = self.model(config.model)
        return dataclasses.replace(config, **changes)
