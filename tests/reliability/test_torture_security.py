"""Security: stored data stays data, files are private, and nothing in the
engine or the console can turn stored text into code or a command."""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

import pytest

from tests.torture import proc

WORKFLOWS = proc.ROOT / "tests" / "workflows"
INERT = f"{WORKFLOWS / 'inert.py'}:wf"
FAILS = f"{WORKFLOWS / 'inert.py'}:fails"


def _payloads(marker: Path) -> list[str]:
    cmd = f"touch {marker}"
    return [
        # a protocol-0 pickle whose loading would call os.system(cmd)
        f"cos\nsystem\n(S'{cmd}'\ntR.",
        f"__import__('os').system('{cmd}')",
        f"{{__import__('os').system('{cmd}')}}",
        f"${{{{ {cmd} }}}} {{{{7*7}}}} `{cmd}` $({cmd})",
        "[bold red]ALERT[/] [link=file:///etc/passwd]click[/link] [@click=app.quit]quit[/]",
        "\x1b[31mred\x1b[0m \x1b]8;;https://example.invalid\x1b\\\\link\x1b]8;;\x1b\\\\",
        "'); DROP TABLE phasegate_runs; --",
    ]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")
def test_hostile_payloads_are_stored_and_read_back_as_inert_data(tmp_path: Path) -> None:
    marker = tmp_path / "EXECUTED"
    payloads = _payloads(marker)
    db = tmp_path / "s.db"
    r = proc.run(["run", INERT, "--run-id", "hostile", "--input", json.dumps({"payloads": payloads}), "--db", str(db)])
    assert r.rc == 0, r
    # read back through the engine's public API
    from phasegate import Engine
    from phasegate.authoring.loader import load
    from phasegate.ops import safe

    with Engine(db) as eng:
        view = eng.status("hostile")
        assert view.inputs == {"payloads": payloads}
        again = eng.run(load(INERT), "hostile")  # a completed run: the result comes from the store
    assert again.result["same"] is True
    assert again.result["inputs"] == again.result["step"] == again.result["effect"] == payloads
    # and through the command line, in both forms
    st = json.loads(proc.inproc(["status", "hostile", "--json", "--db", str(db)]).stdout)
    assert st["inputs"]["payloads"] == payloads
    text = proc.inproc(["status", "--db", str(db)])
    assert text.rc == 0 and not text.traceback
    # an error message an operator reads, holding the same payloads
    for i, p in enumerate(payloads):
        r = proc.run(["run", FAILS, "--run-id", f"err-{i}", "--input", json.dumps({"message": p}), "--db", str(db)])
        assert r.rc == 1, r
        st = json.loads(proc.inproc(["status", f"err-{i}", "--json", "--db", str(db)]).stdout)
        assert st["error"]["message"] == p
        shown = proc.inproc(["status", f"err-{i}", "--db", str(db)])
        # shown whole, escape sequences as visible escapes (phasegate.ops.safe), never raw
        assert shown.rc == 0 and safe(p.splitlines()[0]) in shown.stdout
        assert "\x1b" not in shown.stdout
    assert not marker.exists(), "a stored payload was executed"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks children (POSIX only)")
def test_database_wal_and_archive_files_are_private_even_with_umask_0(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    umask0 = lambda: os.umask(0)  # noqa: E731 - the child's umask would allow 0666/0777
    ins = json.dumps({"payloads": ["x"]})
    r = proc.run(
        ["run", INERT, "--run-id", "a", "--input", ins, "--db", str(db)],
        preexec=umask0,
        env={"PHASEGATE_TEST_KILL_AT": ""},
    )
    assert r.rc == 0, r
    # a killed writer leaves its WAL and index behind: they are private too
    from tests.torture.crash import TARGET

    tins = json.dumps({"items": 1, "ledger": str(tmp_path / "l"), "mailbox": str(tmp_path / "m")})
    r = proc.run(
        ["run", TARGET, "--run-id", "k", "--input", tins, "--db", str(db)],
        preexec=umask0,
        env={"PHASEGATE_TEST_KILL_AT": "start:report"},
    )
    assert r.killed
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    for f in files:
        assert f.exists(), f
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, (f, oct(f.stat().st_mode))
    r = proc.run(["prune", "--apply", "--db", str(db)], preexec=umask0, env={"PHASEGATE_RETENTION_DAYS": "0"})
    assert r.rc == 0, r
    archive = Path(f"{db}.archive")
    written = [p for p in archive.rglob("*")]
    assert any(p.is_file() for p in written), r.stdout
    for p in [archive, *written]:
        want = 0o700 if p.is_dir() else 0o600
        assert stat.S_IMODE(p.stat().st_mode) == want, (p, oct(p.stat().st_mode))


#: Calls that turn data into code or a process.
_CODE = {"eval", "exec", "compile", "__import__"}
_MODULES = {"pickle", "cPickle", "dill", "marshal", "shelve", "jsonpickle", "yaml"}
_COMMANDS = {
    ("os", "system"),
    ("os", "popen"),
    ("os", "execv"),
    ("os", "execvp"),
    ("os", "execl"),
    ("os", "spawnv"),
    ("os", "startfile"),
}


def _findings(folder: Path, *, commands: bool) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(folder.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CODE:
                found.append(f"{where}: {node.func.id}()")
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for n in names:
                    root = n.split(".")[0]
                    if root in _MODULES or (commands and root in ("subprocess", "pty", "webbrowser")):
                        found.append(f"{where}: import {n}")
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in _MODULES and node.value.id != "yaml":
                    found.append(f"{where}: {node.value.id}.{node.attr}")
                if (node.value.id, node.attr) in _COMMANDS:
                    found.append(f"{where}: {node.value.id}.{node.attr}")
    return found


def test_no_pickle_eval_or_exec_in_the_engine() -> None:
    assert _findings(proc.ROOT / "engine", commands=False) == []


#: The one command the console may start: `phasegate resume` itself (the `e`
#: key, never in read-only), as an argv list with no shell.
_OWN_COMMAND = "console/resuming.py"


def test_the_console_never_runs_code_or_commands() -> None:
    console = proc.ROOT / "console"
    if not console.is_dir():
        pytest.skip("no console package in this checkout")
    found = _findings(console, commands=True)
    assert [f for f in found if not f.startswith(f"{_OWN_COMMAND}:") or "import subprocess" not in f] == []
    # ...and there, only our own command line, as a list, without a shell
    tree = ast.parse((console.parent / _OWN_COMMAND).read_text())
    calls = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("Popen", "run", "call")
    ]  # fmt: skip
    assert len(calls) == 1, "the console starts one command: phasegate resume"
    (call,) = calls
    argv = call.args[0]
    if isinstance(argv, ast.Call) and isinstance(argv.func, ast.Name):
        # Built by a function of the same module: its one return is the list.
        (fn,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == argv.func.id]
        (ret,) = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
        argv = ret.value
    # `-P`: a folder named `phasegate` in the working directory cannot shadow the package.
    assert isinstance(argv, ast.List) and [ast.unparse(e) for e in argv.elts[:4]] == [
        "sys.executable",
        "'-P'",
        "'-m'",
        "'phasegate'",
    ]
    assert "--" in [e.value for e in argv.elts if isinstance(e, ast.Constant)]
    assert not any(k.arg == "shell" for k in call.keywords)


def test_the_scanner_itself_finds_what_it_looks_for(tmp_path: Path) -> None:
    bad = tmp_path / "pkg"
    bad.mkdir()
    (bad / "m.py").write_text(
        "import pickle\nimport subprocess\nimport os\neval('1')\nos.system('x')\npickle.loads(b'')\n"
    )
    got = _findings(bad, commands=True)
    assert len(got) == 5, got
