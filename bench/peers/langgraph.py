"""LangGraph with its SqliteSaver: one super-step per node of a chain graph,
each node handing the same state on (so every super-step checkpoints it)."""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from ..workloads import Marks

NAME = "LangGraph SqliteSaver"


def available() -> str | None:
    """None when installed, else why not."""
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401
        import langgraph.graph  # noqa: F401
    except ImportError as exc:
        return f"not installed ({exc.name}); pip install '.[bench]'"
    return None


def version() -> str:
    from importlib.metadata import version as v

    return f"langgraph {v('langgraph')}, langgraph-checkpoint-sqlite {v('langgraph-checkpoint-sqlite')}"


def durability(path: Path) -> str:
    """What SqliteSaver ships with: it sets WAL and leaves synchronous at the driver's default."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    finally:
        conn.close()
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    fsync = (
        "fsync on every commit"
        if (mode == "wal" and sync >= 2) or (mode != "wal" and sync >= 1)
        else "no fsync per commit"
    )
    return f"journal_mode={mode}, synchronous={names.get(sync, sync)}: {fsync}"


def _graph(nodes: int, state: Any, marks: Marks) -> Any:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class S(TypedDict):
        data: Any

    g = StateGraph(S)
    prev = START
    for i in range(nodes):
        name = f"n{i:02d}"

        def node(s: S) -> dict[str, Any]:
            marks.mark()
            return {"data": state}

        g.add_node(name, node)
        g.add_edge(prev, name)
        prev = name
    g.add_edge(prev, END)
    return g


def step_gaps(path: Path, state: Any, nodes: int) -> list[float]:
    """Seconds between consecutive node entries in one invocation: one super-step each."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    marks = Marks()
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        app = _graph(nodes, state, marks).compile(checkpointer=SqliteSaver(conn))
        app.invoke({"data": state}, {"configurable": {"thread_id": uuid.uuid4().hex}})
    finally:
        conn.close()
    return marks.gaps()


def build_history(path: Path, thread: str, checkpoints: int) -> None:
    """A thread with `checkpoints` checkpoints in its history, written by the
    real graph (synchronous=OFF while building: only the fixture, not the figure)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    marks = Marks()
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        conn.execute("PRAGMA synchronous=OFF")
        nodes = max(1, min(50, checkpoints - 2))  # one invocation writes nodes + 2 checkpoints
        app = _graph(nodes, {"rows": [{"id": i} for i in range(8)]}, marks).compile(checkpointer=saver)
        cfg = {"configurable": {"thread_id": thread}}
        done = 0
        while done < checkpoints:
            app.invoke({"data": {"start": done}}, cfg)
            done += nodes + 2
    finally:
        conn.close()


def count(path: Path, thread: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,)).fetchone()[0])
    finally:
        conn.close()


def get_state_time(path: Path, thread: str, reps: int) -> list[float]:
    """Seconds per `get_state` of the thread's latest checkpoint: what a resume reads."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    marks = Marks()
    conn = sqlite3.connect(path, check_same_thread=False)
    out = []
    try:
        app = _graph(50, {}, marks).compile(checkpointer=SqliteSaver(conn))
        cfg = {"configurable": {"thread_id": thread}}
        app.get_state(cfg)
        for _ in range(reps):
            t0 = time.perf_counter()
            app.get_state(cfg)
            out.append(time.perf_counter() - t0)
    finally:
        conn.close()
    return out
