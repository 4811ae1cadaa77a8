"""A decision names exactly what the operator saw (#16, finding 13):
`--effect` matches one effect exactly or is refused with the candidates
listed, and an approval can be tied to the values its preview showed
(`--expect-env HASH`), refused if the run was blocked on other values since."""

from __future__ import annotations

import re

from engine_harness import WORKFLOWS, Harness, one_line_error

SHARED = f"{WORKFLOWS / 'shared_endings.py'}:wf"


def test_an_effect_is_named_exactly_or_the_decision_is_refused(h: Harness) -> None:
    p = h.cli("run", SHARED, "--run-id", "r1", "--input", "{}", env={"PHASEGATE_TEST_KILL_AT": "in:a/b"})
    assert p.killed, p
    assert h.cli("resume", "r1").returncode == 3
    st = h.status("r1")
    assert [e["key"] for e in st["effects"] if e["state"] == "in_doubt"] == ["r1/pay/a/b"]
    before = h.dump()
    # "b" is the ending of the in-doubt key, but it names the other effect: refused, candidates listed.
    for args in (["--effect", "b"], ["--effect", "pay/b"], ["--effect", "r1/pay/b"]):
        p = h.cli("decide", "r1", "confirm_effect", *args, "--reason", "seen")
        line = one_line_error(p)
        assert "not in doubt" in line and "r1/pay/a/b" in line, line
        assert "not in doubt" in one_line_error(
            h.cli("decide", "r1", "retry_effect", *args, "--reason", "x", "--dry-run")
        )
    assert h.dump() == before
    # The key, phase/name or name of the in-doubt effect itself is exact.
    for effect in ("a/b", "pay/a/b", "r1/pay/a/b"):
        p = h.cli("decide", "r1", "retry_effect", "--effect", effect, "--reason", "x", "--dry-run")
        assert p.returncode == 0 and "r1/pay/a/b" in p.stdout, p
    assert h.cli("decide", "r1", "retry_effect", "--effect", "a/b", "--reason", "not there").returncode == 0
    assert [d["effect"] for d in h.status("r1")["decisions"]] == ["r1/pay/a/b"]
    assert h.cli("resume", "r1").returncode == 0


def _env_hash(p) -> str:
    m = re.search(r"env hash: ([0-9a-f]{16})", p.stdout)
    assert m, p.stdout
    return m.group(1)


def test_an_approval_accepts_the_values_its_preview_showed(h: Harness) -> None:
    assert h.run("r1", kill="start:charge").killed
    h.tax.write_text("vat-2026-v2")
    assert h.resume("r1").returncode == 3
    seen = h.cli("decide", "r1", "approve", "--reason", "ok", "--dry-run")
    assert seen.returncode == 0, seen
    assert "accepts: tax_table: vat-2026-v1 -> vat-2026-v2" in seen.stdout, seen.stdout
    shown = _env_hash(seen)
    # The world moves again and a start blocks on the new value before the operator decides.
    h.tax.write_text("vat-2026-v3")
    assert h.resume("r1").returncode == 3
    before = h.dump()
    p = h.cli("decide", "r1", "approve", "--reason", "ok", "--expect-env", shown)
    assert "moved since the preview" in one_line_error(p)
    assert "moved since the preview" in one_line_error(
        h.cli("decide", "r1", "approve", "--reason", "ok", "--expect-env", shown, "--dry-run")
    )
    assert h.dump() == before
    # --expect-env only makes sense for an approval.
    assert "for approve" in one_line_error(h.cli("decide", "r1", "reset", "--reason", "x", "--expect-env", shown))
    again = h.cli("decide", "r1", "approve", "--reason", "ok", "--dry-run")
    assert "vat-2026-v1 -> vat-2026-v3" in again.stdout
    fresh = _env_hash(again)
    assert fresh != shown
    assert h.cli("decide", "r1", "approve", "--reason", "ok", "--expect-env", fresh).returncode == 0
    assert h.resume("r1").returncode == 0
