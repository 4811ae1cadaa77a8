"""The world may have moved between a checkpoint and its resume: a changed
probe, changed code of a done phase, or an old checkpoint stops the run for an
operator; changed code of a phase not yet done is the ordinary fix-and-resume."""

from __future__ import annotations

from phasegate import Engine, Workflow


def _change(st, probe):
    (b,) = [b for b in st["blocked"] if b["kind"] == "env_mismatch"]
    return next(c for c in b["changes"] if c["probe"] == probe)


def test_changed_probe_blocks_and_approve_continues(h):
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    h.clear_trace()

    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "env_mismatch: probe tax_table changed: vat-2026-v1 -> vat-2026-v2" in p.stdout
    assert h.trace() == [] and h.charges() == []
    st = h.status("r1")
    c = _change(st, "tax_table")
    assert (c["saved"], c["current"], c["phases"]) == ("vat-2026-v1", "vat-2026-v2", ["price"])
    env = {r["probe"]: r for r in st["env"]}
    assert env["tax_table"]["changed"] is True and env["tax_table"]["saved"] == "vat-2026-v1"

    assert h.decide("r1", "approve", reason="tax table update was planned").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:charge", "start:report"]  # price is not redone by an approval
    st = h.status("r1")
    assert [(d["action"], d["state"], d["reason"]) for d in st["decisions"]] == [
        ("approve", "applied", "tax table update was planned")
    ]
    assert {r["probe"]: r["changed"] for r in st["env"]}["tax_table"] is False


def test_a_probe_that_moves_again_after_approval_blocks_again(h):
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "approve", reason="v2 is expected").returncode == 0

    # Approved v2; the world is at v3 by the time the run resumes.
    h.tax.write_text("vat-2026-v3")
    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "vat-2026-v1 -> vat-2026-v3" in p.stdout
    assert h.trace() == []
    st = h.status("r1")
    assert [d["state"] for d in st["decisions"]] == ["void"]

    # Approving what is there now lets it go on; a later move stops it again.
    assert h.decide("r1", "approve", reason="v3 is fine too").returncode == 0
    assert h.resume("r1", kill="start:report").killed
    h.tax.write_text("vat-2026-v4")
    p = h.resume("r1")
    assert p.returncode == 3 and "vat-2026-v3 -> vat-2026-v4" in p.stdout
    assert len(h.charges()) == 3


def test_probe_that_moves_while_the_run_is_live_stops_before_the_phase_that_declares_it(h):
    """The tax table changes after the run started but before `price` runs."""
    assert h.run("r1", kill="start:load").killed  # load never checkpointed; nothing saved yet
    h.tax.write_text("vat-2026-v2")
    # No checkpoint holds a tax value yet: nothing the run relied on moved.
    assert h.resume("r1").returncode == 0
    price = h.checkpoint("r1", "price")
    assert '"tax_table":"vat-2026-v2"' in price["envelope"]


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_changed_code_of_a_done_phase_blocks(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    _edit(wf_file, '"amount": 100 + i}', '"amount": 1000 + i}')
    h.clear_trace()

    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "code of done phase load changed" in p.stdout
    assert h.trace() == []
    c = _change(h.status("r1"), "code:load")
    assert c["saved"] != c["current"] and c["phases"] == ["load"]

    # Rewinding to the changed phase re-runs it with the new code; charges
    # already made are not made again.
    assert h.decide("r1", "rewind", "--phase", "load", reason="re-run with the fix").returncode == 0
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:load", "start:price", "start:charge", "start:report"]
    assert len(h.charges()) == 3


def test_changed_code_of_a_done_phase_can_be_approved(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    _edit(wf_file, 'trace("start:price")', 'trace("start:price")  # reviewed')
    assert h.resume("r1").returncode == 3
    assert h.decide("r1", "approve", reason="comment only").returncode == 0
    h.clear_trace()
    assert h.resume("r1").returncode == 0
    assert h.trace() == ["start:report"]


def test_changed_code_of_a_phase_not_yet_done_does_not_block(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    _edit(wf_file, '"charged": len(charge),', '"charged": len(charge), "fixed": True,')
    h.clear_trace()

    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:report"]
    st = h.status("r1")
    assert any("code of phase report changed" in n for n in st["notes"]), st["notes"]
    assert '"fixed":true' in h.checkpoint("r1", "report")["output_json"]


def test_changed_shape_before_the_frontier_blocks(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    _edit(wf_file, '@wf.phase(needs=["load"], probes=["tax_table"])', '@wf.phase(needs=[], probes=["tax_table"])')
    _edit(wf_file, "def price(ctx, load)", "def price(ctx, load=None)")
    p = h.resume("r1")
    assert p.returncode == 3, p
    assert "shape" in p.stdout


# -- max_age, in-process with the engine's injectable clock ---------------------

aged = Workflow("aged", max_age=60)
ran: list[str] = []


@aged.phase()
def first(ctx) -> int:
    ran.append("first")
    return 1


@aged.phase(needs=["first"])
def second(ctx, first) -> int:
    ran.append("second")
    return first + 1


def test_max_age_makes_an_old_checkpoint_an_env_mismatch(tmp_path):
    now = [1_800_000_000.0]
    db = tmp_path / "aged.db"
    ran.clear()
    with Engine(db, clock=lambda: now[0]) as eng:
        eng.should_stop = lambda: "first" in ran  # stop cleanly after the first boundary
        assert eng.run(aged, "a1", inputs={}).status == "interrupted"
        eng.should_stop = None

        now[0] += 59  # young enough
        out = eng.run(aged, "a2", inputs={})
        assert out.status == "completed"

        now[0] += 61  # a1's checkpoint is now 120 s old
        out = eng.run(aged, "a1")
        assert out.status == "blocked"
        (reason,) = out.blocked
        assert reason.kind == "env_mismatch"
        (change,) = reason.data["changes"]
        assert change["probe"] == "age" and change["saved"] == "<= 60s" and change["current"] == "120s"
        assert change["phases"] == ["second"]
        assert ran == ["first", "first", "second"]

        eng.decide("a1", "approve", reason="nothing it read is time-sensitive", operator="ana")
        out = eng.run(aged, "a1")
        assert out.status == "completed" and out.result == 2
        assert ran[-1] == "second" and ran.count("first") == 2
        view = eng.status("a1")
        assert [(d.action, d.operator, d.state) for d in view.decisions] == [("approve", "ana", "applied")]


def test_a_phase_added_after_the_frontier_does_not_block(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    wf_file.write_text(
        wf_file.read_text()
        + """

@wf.phase(needs=["report"])
def audit(ctx, report) -> str:
    trace("start:audit")
    return f"audited {report['charged']}"
"""
    )
    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 0, p
    assert h.trace() == ["start:report", "start:audit"]
    st = h.status("r1")
    assert [ph["name"] for ph in st["phases"]] == ["load", "price", "charge", "report", "audit"]
    assert len(h.charges()) == 3


def test_a_phase_inserted_before_the_frontier_blocks(h):
    wf_file = h.copy_workflow()
    assert h.run("r1", target=f"{wf_file}:wf", kill="start:report").killed
    _edit(
        wf_file,
        "def _price(rows",
        """@wf.phase(needs=["load"])
def validate(ctx, load) -> int:
    trace("start:validate")
    return len(load)


def _price(rows""",
    )
    h.clear_trace()
    p = h.resume("r1")
    assert p.returncode == 3 and "shape" in p.stdout, p
    assert h.trace() == []
