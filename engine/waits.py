"""What a phase raises, or is raised, when it waits: `RetryLater` and `NoAnswer`.

Neither is phasegate's error: `RetryLater` is the author's way to say "not
now, try again at this time" (a rate limit's `Retry-After`), and `NoAnswer`
is what `ctx.ask` raises when its question's deadline passed unanswered, for
the phase to catch (escalate, take a default, give up).
"""

from __future__ import annotations

import math
from typing import Any

from .errors import UsageError


class RetryLater(Exception):  # noqa: N818 - named for what the author means, as `StopIteration` is
    """Raise from a phase or a step: try it again in `seconds`.

    The run parks until then (status `waiting`, kind `retry_later`), holding
    no process; a worker resumes it when due. It counts as one attempt of the
    step's retry policy when the step declares one (`retries=`), else of the
    phase's; past the policy's attempts the run fails as any failure does. A
    step or phase that declares no retries allows `DEFAULT_ATTEMPTS`.

    Args:
        seconds: How long to wait (a rate limit's `Retry-After`), >= 0.
        reason: What the operator reads ("429 from the model API").
    """

    DEFAULT_ATTEMPTS = 5
    """Attempts allowed where neither the step nor the phase declares retries."""

    def __init__(self, seconds: float, reason: str = "retry later") -> None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise UsageError(f"RetryLater needs a number of seconds, not {seconds!r}")
        super().__init__(f"retry in {float(seconds):g} s: {reason}")
        self.seconds = max(0.0, float(seconds))
        """How long to wait, in seconds."""
        self.reason = str(reason)
        """What the operator reads."""
        self.spent = False
        """Set once a step's own retry policy has counted its attempts out:
        only a retry policy the phase declares may try it again."""


class NoAnswer(Exception):  # noqa: N818 - what the phase is told, not a failure of phasegate's
    """Raised by `ctx.ask` once the question's deadline (`timeout=`) passed
    with no answer, and by `ctx.recv` once its deadline passed with no message.

    A replay raises it again (the timeout is recorded), whatever answer or
    message may come later.

    Args:
        question: The question's name (for `ctx.recv`, the topic's).
        deadline: When it lapsed (UNIX seconds).
        topic: True when raised by `ctx.recv`: `question` is a topic.
    """

    def __init__(self, question: str, deadline: float | None = None, *, topic: bool = False) -> None:
        said = (
            f"no message on topic {question!r} by its deadline"
            if topic
            else f"question {question!r} had no answer by its deadline"
        )
        super().__init__(said)
        self.question = question
        """The question's name (for `ctx.recv`, the topic's)."""
        self.deadline = deadline
        """When it lapsed (UNIX seconds)."""
        self.topic = topic
        """Whether `ctx.recv` raised it (no message on the topic `question`)."""


def seconds_arg(what: str, value: Any) -> float:
    """A number of seconds an author gave, checked.

    Raises:
        UsageError: not a finite number >= 0.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise UsageError(f"{what} must be a number of seconds >= 0, not {value!r}")
    return float(value)
