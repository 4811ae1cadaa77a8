"""One source of truth for a run's frontier (#17, finding 1): the runs list
(`phasegate status`, which the console's list also reads), the detail
(`phasegate status RUN`) and `--json` say the same thing for every run, a run
whose chain is damaged above all (its head is past what is trusted)."""

from __future__ import annotations

import json
import re

from engine_harness import HERE_WORKFLOWS


def _list_frontiers(h) -> dict[str, str]:
    """`phasegate status`: one line a run, the frontier as `I/N phase`."""
    p = h.cli("status")
    assert p.returncode in (0, 3), p
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"(\S+)\s+\S+\s+\S+\s+(\d+/\d+ \S+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _detail_frontier(h, run_id: str) -> str:
    p = h.cli("status", run_id)
    m = re.search(r"^frontier\s+(\d+/\d+ \S+) \((\d+) steps done\)", p.stdout, re.M)
    assert m, p.stdout
    return m.group(1)


def test_list_detail_and_json_agree_on_every_run(h):
    assert h.run("done").returncode == 0
    assert h.run("killed", kill="step:price_all").killed  # interrupted, mid-phase
    assert h.run("damaged", kill="start:report").killed
    out = h.checkpoint("damaged", "price")["output_json"]
    h.sql(
        "UPDATE phasegate_checkpoints SET output_json=? WHERE run_id='damaged' AND phase='price'",
        (out.replace('"total":200', '"total":900'),),
    )
    assert h.resume("damaged").returncode == 3  # blocked: integrity, at price
    wf_file = h.copy_workflow("flaky.py", HERE_WORKFLOWS / "flaky.py")
    assert h.cli("run", f"{wf_file}:wf", "--run-id", "failed").returncode == 1

    listed = _list_frontiers(h)
    assert set(listed) == {"done", "killed", "damaged", "failed"}, listed
    docs = {d["run_id"]: d for d in json.loads(h.cli("status", "--json").stdout)}
    for run_id, shown in listed.items():
        fr = docs[run_id]["frontier"]
        assert shown == f"{fr['index']}/{fr['of']} {fr['phase']}", run_id
        assert _detail_frontier(h, run_id) == shown, run_id
    # The damaged checkpoint is not counted done anywhere.
    assert docs["damaged"]["frontier"]["phase"] == "price"
