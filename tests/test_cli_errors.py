"""Every `linkteam` command given bad input answers with one line naming what is wrong and
exit status 2, never a traceback; an unexpected error is one line naming the log that
holds its traceback (host/cli.py _call)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from host import cli

ROOT = Path(__file__).resolve().parents[1]
HIL2 = str(ROOT / "scenarios" / "hil2.toml")


def bad_inputs(tmp):
    binary = tmp / "binary.toml"
    binary.write_bytes(bytes(range(256)))
    not_json = tmp / "cfg.txt"
    not_json.write_text("{link: 1")
    wrong_json = tmp / "cfg.json"
    wrong_json.write_text("[1, 2]")
    from host.tools import keys
    key = str(tmp / "arm.key")
    if not os.path.exists(key):
        keys.create(key)
    open_key = tmp / "open.key"
    open_key.write_text("00" * 32)
    open_key.chmod(0o644)
    derived = tmp / "short.toml"
    derived.write_text('extends = "%s"\n[simulation]\nduration = -1.0\n' % HIL2)
    notrun = tmp / "notrun"
    notrun.mkdir()
    corrupt = tmp / "corrupt"
    corrupt.mkdir()
    (corrupt / "summary.json").write_text("{not json")
    # (argv, a word the message must hold)
    return [
        (["run", str(binary)], "not a text"),
        (["run", str(tmp / "missing.toml")], "No such file"),
        (["run", str(ROOT / "scenarios")], "a directory"),
        (["run", str(derived)], "duration"),
        (["run", HIL2, "--mode", "hil"], "--ports"),
        (["run", HIL2, "--mode", "hil", "--ports", "udp:abc"], "udp:abc"),
        (["run", HIL2, "--mode", "processes", "--grouping", "5,x"], "grouping"),
        (["console", "--link", "42", "--scenario", HIL2], "links 1-2"),
        (["console", "--link", "0", "--run", str(notrun)], "--link 0"),
        (["convert", str(tmp / "missing.scenario"), "-o", str(tmp / "x.toml")], "not a directory"),
        (["animate", str(notrun)], "not a run directory"),
        (["tune", str(binary), "--trials", "1"], "not a text"),
        (["flash", "--scenario", HIL2], "--port"),
        (["flash", "--port", "/nonexistent", "--link", "7", "--scenario", HIL2], "links 1-2"),
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--board", "stm32"], "stm32"),
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--board", "unix-udp"], "base_port"),
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--bus-json", "{base"], "--bus-json"),
        (["flash", "--chain", "1/dev/x", "--scenario", HIL2], "--chain"),
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--board", "unix-udp",
          "--bus-json", '{"base_port": 47000}', "--key", key], "/nonexistent"),
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--board", "unix-udp",
          "--bus-json", '{"base_port": 47000}'], "--key"),   # a board without a key refuses to run
        (["flash", "--port", "/nonexistent", "--link", "1", "--scenario", HIL2, "--board", "unix-udp",
          "--bus-json", '{"base_port": 47000}', "--key", str(open_key)], "chmod 600"),
        (["keys", "create", key], "exists"),
        (["keys", "rotate", str(tmp / "none.key")], "no key to rotate"),
        (["config", "dump", "--port", "/nonexistent"], "/nonexistent"),
        (["config", "restore", "--port", "/nonexistent"], "--file"),
        (["config", "restore", "--port", "/nonexistent", "--file", str(not_json)], "not JSON"),
        (["config", "restore", "--port", "/nonexistent", "--file", str(wrong_json)], "link config"),
        (["boards", "--ports", "/nonexistent"], None),   # a table row says it did not answer; exit 1
        (["scan", "--ports", "foo"], "--ports"),
        (["scan", "--ports", "udp:abc"], "udp:abc"),
        (["scan", "--ports", "serial:/nonexistent@1000000"], "cannot open"),
        (["scan", "--ports", "udp:47000", "--max-links", "0"], "--max-links"),
        (["budget", "--links", "0", "--bus", "uart:1000000"], "--links"),
        (["budget", "--links", "3", "--bus", "canfd:1X/5M"], "1X"),
        (["budget", "--links", "3", "--bus", "lin:19200"], "uart:BAUD"),
        (["budget", "--links", "3", "--bus", "uart:-5"], "positive"),
        (["budget", "--links", "3", "--bus", "uart:1M", "--rate", "0"], "--rate"),
        (["budget", "--links", "3", "--bus", "uart:1M", "--compute", "k_us=abc"], "k_us"),
        (["budget", "--links", "3", "--bus", "uart:1M", "--board", "stm32f4-168mhz",
          "--results", str(tmp / "missing.json")], "missing.json"),
        (["node", "--ports", "foo", "--link", "1", "status"], "--ports"),
        (["node", "--ports", "udp:47000", "--link", "0", "status"], "--link"),
        (["node", "--ports", "udp:47000", "--link", "1", "set", "no_such_key", "1"], "no_such_key"),
        (["node", "--ports", "udp:47000", "--link", "1", "set", "u_sat", "abc"], "u_sat"),
        (["node", "--ports", "udp:47000", "--link", "1", "set", "u_sat", "-1"], "u_sat"),
        (["node", "--ports", "udp:47000", "--link", "1", "jog", "--torque", "1e6", "--scenario", HIL2], "u_sat"),
        (["node", "--ports", "udp:47000", "--link", "1", "jog"], "--torque"),
        (["faults", "--only", "no-such-fault"], "no-such-fault"),   # nothing runs, FAULTS.md kept
        (["faults", "--modes", "in process"], "in process"),
        (["run", HIL2, "--out", "/proc/nope/x"], "--out"),
        (["animate", str(corrupt)], "summary.json"),
        (["vwire", str(tmp / "vw"), "--links", "0"], "--links"),
        (["tune", HIL2, "--trials", "1", "--storage", "bogus://x", "--out", str(tmp / "t")], "bogus://x"),
        (["tune", HIL2, "--trials", "0", "--out", str(tmp / "t")], "--trials"),
        (["envelope", "--duration", "-1", "--out", str(tmp / "env")], "--duration"),
        (["envelope", "--duration", "nan", "--out", str(tmp / "env")], "--duration"),
        (["envelope", "--jobs", "0", "--out", str(tmp / "env")], "--jobs"),
        (["budget", "--links", "100000000", "--bus", "uart:1M"], "--links"),
        (["budget", "--links", "3", "--bus", "uart:1M", "--rate", "inf"], "--rate"),
        (["budget", "--links", "3", "--bus", "can:"], "can:"),
        (["budget", "--links", "3", "--bus", "canfd:"], "canfd:"),
    ]


def test_every_command_answers_bad_input_in_one_line_with_status_2(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LINKTEAM_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.delenv("LINKTEAM_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    failures = []
    for argv, word in bad_inputs(tmp_path):
        rc = cli.main(argv)
        out, err = capsys.readouterr()
        lines = [x for x in err.splitlines() if x.strip()]
        want = 1 if word is None else 2
        if rc != want or "Traceback" in out + err or "unexpected error" in err or (
                word is not None and (len(lines) != 1 or word not in lines[0])):
            failures.append((argv, rc, out[-300:], err[-600:]))
    assert failures == []
    assert not (tmp_path / "logs").exists() or not list((tmp_path / "logs").iterdir())


def test_argparse_errors_are_status_2_without_traceback():
    for argv in (["run"], ["budget", "--links", "x", "--bus", "uart"], ["nosuchcommand"]):
        r = subprocess.run([sys.executable, "-m", "host.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "error:" in r.stderr, (argv, r.stderr)


def test_an_unexpected_error_is_one_line_and_a_log_with_the_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LINKTEAM_LOG_DIR", str(tmp_path))

    def boom(a):
        raise ZeroDivisionError("deep inside")

    assert cli._call(boom, None, "run") == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "ZeroDivisionError: deep inside" in err
    log = Path(re.search(r"traceback in (\S+)\)", err).group(1))
    assert log.parent == tmp_path and "Traceback (most recent call last)" in log.read_text()
    assert "def boom" not in err and "boom" in log.read_text()
