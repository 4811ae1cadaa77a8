"""`phasegate mcp` (issue 39), with the real `mcp` client, on SQLite and
PostgreSQL: the tools and their annotations; a proposal of an answer, a
rewind and a confirm-effect that stays proposed and unapplied through
`worker --once` until a person seconds it; a second under the assistant's
name refused; stored hostile text reaching the client escaped; bad arguments
refused in one line with nothing recorded. The store is read back as an
operator reads it (`phasegate status --json`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from engine_harness import ROOT, Harness
from mcp import Client
from mcp_client import call, error_line, ok, session

WAITS = ROOT / "tests" / "workflows" / "waits.py"
READ_TOOLS = {"list_runs", "run_status", "causes", "preview", "verify"}


def _blocked_on_tax(h: Harness, run_id: str = "r1") -> None:
    assert h.run(run_id, kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume(run_id).returncode == 3


def _asking(h: Harness, run_id: str = "r1") -> None:
    p = h.cli(
        "run", f"{WAITS}:refund", "--run-id", run_id, "--input", json.dumps({"order": "A-17"}),
        env={"PHASEGATE_PARK_SECONDS": "0.5"},
    )  # fmt: skip
    assert p.returncode == 5, p


def _decisions(h: Harness, run_id: str = "r1") -> list[tuple[str, str, str]]:
    return [(d["action"], d["operator"], d["state"]) for d in h.status(run_id)["decisions"]]


def test_the_tools_are_listed_with_their_annotations(h: Harness) -> None:
    assert h.run("r1").returncode == 0

    async def work(c: Client) -> Any:
        triage = await c.get_prompt("triage")
        return await c.list_tools(), await c.list_resource_templates(), await c.list_prompts(), triage

    tools, templates, prompts, triage = session(h.target, work)
    said = triage.messages[0].content.text  # type: ignore[union-attr]
    assert all(f"`{tool}`" in said for tool in ("causes", "run_status", "preview", "propose"))
    by_name = {t.name: t for t in tools.tools}
    # Five reads and one proposal: nothing to second, cancel, claim, prune, reseal or change the policy.
    assert set(by_name) == READ_TOOLS | {"propose"}
    for name in READ_TOOLS:
        a = by_name[name].annotations
        assert a is not None and a.read_only_hint is True and a.destructive_hint is False, (name, a)
    a = by_name["propose"].annotations
    assert a is not None and a.read_only_hint is False and a.destructive_hint is False
    assert set(by_name["propose"].input_schema["required"]) == {"run_id", "action", "reason"}
    assert [t.uri_template for t in templates.resource_templates] == ["phasegate://runs/{run_id}"]
    assert [p.name for p in prompts.prompts] == ["triage"]


def test_run_status_and_the_resource_are_what_status_json_says(h: Harness) -> None:
    _blocked_on_tax(h)

    async def work(c: Client) -> Any:
        st = await c.call_tool("run_status", {"run_id": "r1"})
        res = await c.read_resource("phasegate://runs/r1")
        return st, res

    st, res = session(h.target, work)
    cli = h.status("r1")
    assert ok(st) == cli
    assert json.loads(res.contents[0].text) == cli


def test_a_proposed_rewind_waits_for_a_person_then_the_worker_applies_it(h: Harness) -> None:
    _blocked_on_tax(h)
    # The policy lists nothing: a person's rewind would apply at the next run. The assistant's waits.
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "rewind", "phase": "price",
                                        "reason": "the tax table moved; price again"}))  # fmt: skip
    assert (got["state"], got["proposer"], got["action"]) == ("proposed", "mcp:claude-ai", "rewind")
    n = got["decision"]
    assert got["second"].startswith(f"phasegate decide r1 second --decision {n} --reason TEXT --db ")
    st = h.status("r1")
    (prop,) = st["decisions"]
    assert prop["state"] == "proposed" and prop["assistant"] is True and prop["proposer"] == "mcp:claude-ai"
    assert st["status"] == "blocked"
    assert "(AI assistant) rewind [proposed]" in h.cli("status", "r1").stdout

    h.clear_trace()
    assert h.cli("worker", "--once").returncode == 0
    assert h.trace() == [] and h.status("r1")["status"] == "blocked"
    assert _decisions(h) == [("rewind", "mcp:claude-ai", "proposed")]

    # The command the assistant handed over, as a person runs it (argv from its words).
    p = h.decide("r1", "second", "--decision", str(n), reason="checked the finance change log")
    assert p.returncode == 0, p
    assert _decisions(h) == [("rewind", "mcp:claude-ai", "pending"), ("second", "tester", "applied")]
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "completed"
    assert "start:price" in h.trace()
    assert h.cli("verify").returncode == 0


def test_a_proposed_answer_waits_for_a_person(h: Harness) -> None:
    _asking(h)
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "answer", "question": "approve_refund",
                                        "value": '{"approved": true, "amount": 200}',
                                        "reason": "the order was returned unopened"}))  # fmt: skip
    assert got["state"] == "proposed"
    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "waiting" and st["questions"][0]["state"] == "open"
    p = h.decide("r1", "second", "--decision", str(got["decision"]), reason="agreed")
    assert p.returncode == 0, p
    assert h.cli("worker", "--once", env={"PHASEGATE_PARK_SECONDS": "0.5"}).returncode == 0
    st = h.status("r1")
    assert st["status"] == "completed", st["attention"]
    assert st["questions"][0]["state"] == "answered"


def test_a_proposed_confirm_effect_waits_and_a_second_under_its_name_is_refused(h: Harness) -> None:
    assert h.run("r1", kill="after:charge:inv-1").killed
    assert h.status("r1")["status"] == "interrupted"
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "confirm_effect", "effect": "charge:inv-1",
                                        "result": '{"charge_id": "ch-1"}',
                                        "reason": "the gateway's dashboard shows the charge"}))  # fmt: skip
    n = str(got["decision"])
    # The worker resumes the interrupted run, which meets the effect in doubt: the proposal answers nothing yet.
    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "blocked" and any(b["kind"] == "in_doubt_effect" for b in st["blocked"])
    assert _decisions(h) == [("confirm_effect", "mcp:claude-ai", "proposed")]

    # The assistant's name is refused as a second, whatever its spelling; nothing is recorded.
    before = h.dump()
    for name in ("mcp:claude-ai", "MCP:claude-ai", "mcp:another-assistant"):
        p = h.decide("r1", "second", "--decision", n, "--operator", name, reason="me")
        assert "is an AI assistant's (mcp:...): a person decides" in h.one_line_error(p, 2)
    assert h.dump() == before

    assert h.decide("r1", "second", "--decision", n, reason="I saw it too").returncode == 0
    assert h.cli("worker", "--once").returncode == 0
    assert h.status("r1")["status"] == "completed"
    keys = h.charge_keys()
    assert len(keys) == 3 and len(set(keys)) == 3  # charged once each: the confirmed one was not called again


def test_the_servers_operator_names_the_proposals(h: Harness) -> None:
    _blocked_on_tax(h)
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "approve", "reason": "rates as planned"},
                  operator="triage-bot"))  # fmt: skip
    assert got["proposer"] == "triage-bot"
    (d,) = h.status("r1")["decisions"]
    assert d["assistant"] is True and d["account"].endswith("/mcp:triage-bot")
    # A person typing the assistant's name is the assistant, for a second.
    before = h.dump()
    p = h.decide("r1", "second", "--decision", str(got["decision"]), "--operator", "triage-bot", reason="x")
    assert "an AI assistant's proposal is seconded by a person" in h.one_line_error(p, 2)
    assert h.dump() == before


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("propose", {"run_id": "r1", "action": "bogus", "reason": "x"}, "unknown action 'bogus'"),
        ("propose", {"run_id": "r1", "action": "rewind", "reason": "x"}, "phase"),
        ("propose", {"run_id": "r1", "action": "rewind", "phase": "nope", "reason": "x"}, "nope"),
        ("propose", {"run_id": "r1", "action": "approve", "reason": "   "}, "reason"),
        ("propose", {"run_id": "r1", "action": "approve"}, "bad arguments: reason"),
        ("propose", {"run_id": "gone", "action": "approve", "reason": "x"}, "no run 'gone'"),
        ("propose", {"run_id": "r1", "action": "confirm_effect", "effect": "charge:inv-0", "reason": "x"}, "effect"),
        ("propose", {"run_id": "r1", "action": "answer", "value": "{not json", "reason": "x"}, "value is not JSON"),
        ("propose", {"run_id": "r1", "action": "approve", "reason": 7}, "bad arguments: reason"),
        ("list_runs", {"limit": "many"}, "bad arguments: limit"),
        ("list_runs", {"limit": 0}, "limit must be 1..200"),
        ("list_runs", {"after": "[{}]"}, "not a cursor"),
        ("list_runs", {"status": ["sleepy"]}, "unknown status 'sleepy'"),
        ("preview", {"run_id": "r1", "action": "degrade"}, "degrade"),
        ("run_status", {"run_id": "x" * 300}, "run id"),
        ("second", {"run_id": "r1", "decision": 1}, "Unknown tool"),
    ],
)
def test_bad_arguments_are_one_line_and_record_nothing(h: Harness, tool: str, args: dict[str, Any], words: str) -> None:
    _blocked_on_tax(h)
    before = h.dump()
    line = error_line(call(h.target, tool, args))
    assert words in line, line
    assert h.dump() == before


def test_a_second_proposal_of_the_same_action_is_refused(h: Harness) -> None:
    _blocked_on_tax(h)
    args = {"run_id": "r1", "action": "approve", "reason": "rates as planned"}
    ok(call(h.target, "propose", args))
    before = h.dump()
    assert "already has this proposed" in error_line(call(h.target, "propose", args, name="other-client"))
    assert h.dump() == before


def test_the_read_tools_record_nothing(h: Harness) -> None:
    _blocked_on_tax(h)
    h.sql("UPDATE phasegate_checkpoints SET output_json = '[]' WHERE run_id = 'r1' AND phase = 'price'")
    before = h.dump()

    async def work(c: Client) -> Any:
        out = {}
        out["list"] = await c.call_tool("list_runs", {})
        out["causes"] = await c.call_tool("causes", {})
        out["preview"] = await c.call_tool("preview", {"run_id": "r1", "action": "approve"})
        out["verify"] = await c.call_tool("verify", {"deep": True})
        return out

    got = session(h.target, work)
    assert ok(got["verify"])["ok"] is False  # the damage is found, and not recorded on the run
    assert h.dump() == before
    assert [r["run_id"] for r in ok(got["list"])["runs"]] == ["r1"]


def test_hostile_text_reaches_the_client_escaped(h: Harness) -> None:
    hostile = "evil\x1b]52;c;cm0gLXJmIH4=\x07\u202egnp.exe\x9b31m"
    _blocked_on_tax(h)
    h.sql("UPDATE phasegate_runs SET attention = ? WHERE run_id = 'r1'", (hostile,))
    assert h.decide("r1", "pause", reason=hostile).returncode == 0

    async def work(c: Client) -> Any:
        return [
            await c.call_tool("list_runs", {}),
            await c.call_tool("run_status", {"run_id": "r1"}),
            await c.call_tool("causes", {}),
            (await c.read_resource("phasegate://runs/r1")).contents[0].text,
        ]

    got = session(h.target, work)
    texts = _strings([ok(r) for r in got[:3]] + [json.loads(got[3])])
    for ch in ("\x1b", "\x07", "\u202e", "\x9b"):
        assert not any(ch in t for t in texts)
    shown = "evil\\x1b]52;c;cm0gLXJmIH4=\\x07<U+202E>gnp.exe\\x9b31m"
    assert any(shown in t for t in texts)
    reasons = [d["reason"] for d in ok(got[1])["decisions"]]
    assert reasons == [shown]


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_hostile_client_name_is_cut_to_a_plain_name(h: Harness) -> None:
    _blocked_on_tax(h)
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "approve", "reason": "x"},
                  name="\x1b[31mclaude\u202e/web:ada"))  # fmt: skip
    assert got["proposer"] == "mcp:31mclaude-web-ada"
    (d,) = h.status("r1")["decisions"]
    assert d["account"].endswith("/mcp:31mclaude-web-ada") and "/web:" not in d["account"]


def test_list_runs_pages_by_cursor_in_the_consoles_order(h: Harness) -> None:
    for i in range(5):
        assert h.run(f"r{i}").returncode == 0
    _blocked_on_tax(h, "b1")
    assert h.run("k1", kill="start:charge").killed

    async def work(c: Client) -> Any:
        whole = await c.call_tool("list_runs", {"limit": 200})
        pages, after = [], None
        while True:
            page = ok(await c.call_tool("list_runs", {"limit": 2, **({"after": after} if after else {})}))
            pages.append(page)
            after = page["next"]
            if after is None:
                return ok(whole), pages

    whole, pages = session(h.target, work)
    ids = [r["run_id"] for r in whole["runs"]]
    assert ids[:2] == ["k1", "b1"] or ids[:2] == ["b1", "k1"]  # those that need a person first
    assert [r["run_id"] for p in pages for r in p["runs"]] == ids
    assert whole["total"] == 7 and all(p["total"] == 7 for p in pages)
    by_id = {r["run_id"]: r for r in whole["runs"]}
    assert by_id["k1"]["status"] == "interrupted" and by_id["k1"]["needs_attention"] is True
    for rid in ids:
        assert by_id[rid]["status"] == h.status(rid)["status"]
    only = ok(call(h.target, "list_runs", {"status": ["blocked"]}))
    assert [r["run_id"] for r in only["runs"]] == ["b1"]
    # k1 is stored `running` with a dead holder: shown, and filtered, as interrupted.
    interrupted = ok(call(h.target, "list_runs", {"status": ["interrupted"]}))
    assert [r["run_id"] for r in interrupted["runs"]] == ["k1"]
    assert ok(call(h.target, "list_runs", {"status": ["running"]}))["runs"] == []
    both = ok(call(h.target, "list_runs", {"status": ["interrupted", "blocked"]}))
    assert sorted(r["run_id"] for r in both["runs"]) == ["b1", "k1"]


def test_an_assistants_proposal_is_announced_once_with_its_reason(h: Harness) -> None:
    _blocked_on_tax(h)
    out = h.tmp / "events.jsonl"
    cmd = f"cat >> {out}; echo >> {out}"
    assert h.cli("watch", "--once", "--exec", cmd).returncode == 0  # the stop itself
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "approve",
                                        "reason": "rates as planned\x1b[2J"}))  # fmt: skip
    assert h.decide("r1", "pause", reason="a person's pause is not announced").returncode == 0
    for _ in range(2):  # once, however often the watch looks
        assert h.cli("watch", "--once", "--exec", cmd).returncode == 0
    events = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert [e["status"] for e in events] == ["blocked", "proposed"]
    ev = events[1]
    assert ev["kinds"] == ["assistant_proposal"] and ev["run_id"] == "r1"
    p = ev["proposal"]
    assert (p["decision"], p["proposer"], p["assistant"], p["action"]) == (got["decision"], "mcp:claude-ai", True,
                                                                           "approve")  # fmt: skip
    assert p["reason"] == "rates as planned\\x1b[2J"
    assert f"r1 second --decision {got['decision']}" in p["second"]
    assert "an AI assistant, proposed approve" in ev["summary"] and "\x1b" not in ev["summary"]


def test_an_assistants_proposal_forged_to_pending_is_never_applied(h: Harness) -> None:
    """Stored data is untrusted: one UPDATE and a recomputed plain seal cannot
    turn an assistant's proposal of an action no policy lists into a decision."""
    from phasegate.history import trail

    _blocked_on_tax(h)
    got = ok(call(h.target, "propose", {"run_id": "r1", "action": "approve", "reason": "rates as planned"}))
    cols = ["id", "run_id", "action", "phase", "effect_key", "answers", "reason", "operator", "account", "at",
            "state", "expires_at", "seconded_by", "batch_id", "policy_id", "prev_id", "detail_json"]  # fmt: skip
    (row,) = h.sql(f"SELECT {', '.join(cols)} FROM phasegate_decisions WHERE id = ?", (got["decision"],))
    rec = dict(zip(cols, row, strict=True))
    rec["state"] = "pending"
    h.sql(
        "UPDATE phasegate_decisions SET state = 'pending', seal = ? WHERE id = ?",
        (trail.decision_seal(rec, None), rec["id"]),
    )
    h.clear_trace()
    assert h.cli("worker", "--once").returncode == 0
    st = h.status("r1")
    assert st["status"] == "blocked" and "start:charge" not in h.trace()
    harmed = [b for b in st["blocked"] if b["kind"] == "integrity"]
    assert [(b["decision"], b["problem"]) for b in harmed] == [(rec["id"], "unexplained")], harmed
    v = h.cli("verify", "--json")
    assert v.returncode == 3 and "an AI assistant (mcp:claude-ai) proposed it" in v.stdout


def test_in_process_the_read_tools_agree_with_the_command_line(h: Harness) -> None:
    # A blocked run, a waiting run and a completed one, on either backend: the same
    # comparison the stdio test makes on the demo store, here through `mcp.Client(server)`.
    _blocked_on_tax(h, "r1")
    _asking(h, "r2")
    assert h.run("r3").returncode == 0

    async def work(c: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"list": ok(await c.call_tool("list_runs", {"limit": 200}))}
        out["causes"] = ok(await c.call_tool("causes", {}))
        out["status"] = {r["run_id"]: ok(await c.call_tool("run_status", {"run_id": r["run_id"]}))
                         for r in out["list"]["runs"]}  # fmt: skip
        out["preview"] = ok(await c.call_tool("preview", {"run_id": "r1", "action": "approve"}))
        return out

    got = session(h.target, work)
    lines = h.cli("status").stdout.splitlines()
    listed = got["list"]["runs"]
    assert [r["run_id"] for r in listed] == [line.split()[0] for line in lines] and len(listed) == 3
    for r, line in zip(listed, lines, strict=True):
        assert line.rstrip().endswith(r["reason"].rstrip()), (r, line)
    p = h.cli("status", "--by-cause", "--json")
    assert p.returncode in (0, 3), p
    assert got["causes"]["causes"] == json.loads(p.stdout) and got["causes"]["causes"]
    for rid, st in got["status"].items():
        assert st == h.status(rid), rid
    dry = h.decide("r1", "approve", "--dry-run", reason="look").stdout
    assert dry.splitlines()[0] == got["preview"]["summary"]
    for part in got["preview"]["accepts"]:
        assert part in dry
