"""scan() and ``python -m ember.serialization.scan`` on safe and unsafe files of every format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

import ember
import ember.serialization as es
from ember.serialization import safetensors as st

from .test_malicious import CALL, G, S, wrap

ROOT = Path(__file__).resolve().parents[2]


def _files(tmp_path) -> dict[str, Path]:
    files = {"ember": tmp_path / "ember.pt", "torch": tmp_path / "torch.pt",
             "legacy": tmp_path / "legacy.pt", "st": tmp_path / "w.safetensors",
             "evil": tmp_path / "evil.pkl"}
    es.save({"w": ember.ones(2), "p": ember.tensor([1.0])}, files["ember"])
    torch.save({"w": torch.nn.Parameter(torch.ones(2)), "v": torch.zeros(1, dtype=torch.int64)},
               files["torch"])
    torch.save([torch.ones(2)], files["legacy"], _use_new_zipfile_serialization=False)
    st.save_file({"w": ember.ones(2)}, files["st"])
    files["evil"].write_bytes(wrap(CALL(G("os", "system"), S("true"))))
    return files


def test_scan_verdicts_and_globals(tmp_path):
    f = _files(tmp_path)
    r = es.scan(f["ember"])
    assert r.safe and r.format == "zip checkpoint"
    assert r.globals == ["collections.OrderedDict", "torch.FloatStorage",
                         "torch._utils._rebuild_tensor_v2"]
    assert {op for _, op in r.pickles[0].code_opcodes} == {"GLOBAL", "REDUCE", "BINPERSID"}
    r = es.scan(f["torch"])
    assert r.safe and "torch._utils._rebuild_parameter" in r.globals
    r = es.scan(f["legacy"])
    assert r.safe and r.format == "legacy checkpoint" and len(r.pickles) == 5
    r = es.scan(f["st"])
    assert r.safe and r.pickles == [] and "safetensors" in r.format
    r = es.scan(f["evil"])
    assert not r.safe and r.unsafe_globals == ["os.system"]
    assert r.pickles[0].globals[0].status == "blocked"
    assert "UNSAFE" in str(r) and "os.system" in str(r)
    assert es.get_unsafe_globals_in_checkpoint(f["evil"]) == ["os.system"]


def test_scan_respects_the_user_allowlist(tmp_path):
    path = tmp_path / "c.pt"
    es.save({"c": ember.device("cpu"), "s": slice(1, 2)}, path)
    r = es.scan(path)
    assert not r.safe and r.unsafe_globals == ["builtins.slice"]
    with es.safe_globals([slice]):
        r = es.scan(path)
        assert r.safe and any(g.status == "allowed (user)" for g in r.pickles[0].globals)
        assert es.load(path)["s"] == slice(1, 2)


def test_scan_reports_garbage_and_truncation(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x80\x02}q\x00(X\x05\x00\x00")
    r = es.scan(junk)
    assert not r.safe and r.pickles[0].error
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert not es.scan(empty).safe
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    r = es.scan(broken)
    assert not r.safe and "central directory" in r.error


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "ember.serialization.scan", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def test_command_line(tmp_path):
    f = _files(tmp_path)
    ok = _cli(f["ember"], f["torch"], f["st"])
    assert ok.returncode == 0, ok.stderr
    assert "SAFE under weights_only" in ok.stdout and "Warning" not in ok.stderr
    bad = _cli(f["ember"], f["evil"])
    assert bad.returncode == 1 and "os.system @ 2: blocked" in bad.stdout
    js = _cli("--json", f["evil"])
    report = json.loads(js.stdout)
    assert report["safe"] is False and report["unsafe_globals"] == ["os.system"]
    missing = _cli(tmp_path / "nope.pt")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
