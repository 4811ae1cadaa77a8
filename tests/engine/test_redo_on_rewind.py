"""redo_on_rewind (#11): an idempotent effect declared so gets a new key
epoch when a rewind or a reset re-opens its phase, so the target acts again;
the default stays "never repeat"; the preview says which effects act again."""

from __future__ import annotations

import json

from engine_harness import WORKFLOWS

TARGET = f"{WORKFLOWS / 'redo.py'}:wf"


def _published(h) -> list[dict]:
    path = h.tmp / "target.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _run(h, **inputs):
    p = h.cli("run", TARGET, "--run-id", "r1", "--input", json.dumps({"target": str(h.tmp / "target.jsonl"), **inputs}))
    assert p.returncode == 0, (p.stdout, p.stderr)


def test_a_rewind_publishes_again_under_a_new_key(h):
    _run(h, redo=True)
    p = h.decide("r1", "rewind", "--phase", "publish", "--dry-run")
    assert p.returncode == 0 and "redo_on_rewind: acts again under a new key" in p.stdout, p.stdout
    assert h.decide("r1", "rewind", "--phase", "publish", reason="fixed the data").returncode == 0
    assert h.resume("r1").returncode == 0
    keys = [r["key"] for r in _published(h)]
    assert keys == ["r1/publish/publish", "r1/publish/publish@0.1"]
    # resuming again does not publish a third time
    assert h.resume("r1").returncode == 0
    assert len(_published(h)) == 2


def test_a_reset_publishes_again(h):
    _run(h, redo=True)
    assert h.decide("r1", "reset", reason="start over").returncode == 0
    assert h.resume("r1").returncode == 0
    assert [r["key"] for r in _published(h)] == ["r1/publish/publish", "r1/publish/publish@1.0"]


def test_by_default_a_rewind_never_repeats(h):
    _run(h)
    p = h.decide("r1", "rewind", "--phase", "publish", "--dry-run")
    assert "acts again" not in p.stdout
    assert h.decide("r1", "rewind", "--phase", "publish", reason="fixed the data").returncode == 0
    assert h.resume("r1").returncode == 0
    assert [r["key"] for r in _published(h)] == ["r1/publish/publish"]


def test_redo_needs_an_idempotent_effect(h):
    p = h.cli(
        "run", TARGET, "--run-id", "r1", "--input",
        json.dumps({"target": str(h.tmp / "target.jsonl"), "redo": True, "idempotent": False}),
    )  # fmt: skip
    assert p.returncode == 1 and "redo_on_rewind needs idempotent=True" in p.stdout + p.stderr
    assert _published(h) == []
