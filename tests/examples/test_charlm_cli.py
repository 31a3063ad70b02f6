"""The char-level GPT demo run as a user runs it, in a subprocess with tiny settings.

A user's mistake (an option or a ``--resume`` file) ends in one ``error:`` line on stderr and
exit code 2, never a traceback; ``--eval-only`` writes nothing; Ctrl-C saves the last finished
step and exits 130, and resuming from there gives exactly the losses and weights of an
uninterrupted run; without tqdm the demo prints plain progress lines.
"""

from __future__ import annotations

import os
import pickle
import re
import shlex
import signal
import struct
import subprocess
import sys

import numpy as np
import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
DEMO = [sys.executable, "-m", "ember.examples.charlm"]
TINY = ["--batch-size", "4", "--block-size", "16", "--layers", "1", "--heads", "2",
        "--d-model", "32", "--eval-iters", "2", "--sample-chars", "8", "--warmup", "2",
        "--lr", "1e-2"]
ERROR = "python -m ember.examples.charlm: error: "


def _env(tmp_path, **extra) -> dict:
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=ROOT)
    env.update(extra)
    env.pop("PYTHONSTARTUP", None)
    return env


def demo(tmp_path, *argv, **env) -> subprocess.CompletedProcess:
    return subprocess.run(DEMO + list(argv), capture_output=True, text=True, cwd=ROOT,
                          env=_env(tmp_path, **env), timeout=300)


def assert_one_line_error(proc, *fragments) -> str:
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert "Traceback" not in proc.stderr and len(err.splitlines()) == 1, proc.stderr
    assert err.startswith(ERROR)
    for fragment in fragments:
        assert fragment in err
    return err


# -- options ----------------------------------------------------------------------------------
BAD_OPTIONS = {
    "batch-size-0": (["--batch-size", "0"], "argument --batch-size: must be at least 1; got 0"),
    "steps-negative": (["--steps", "-5"], "argument --steps: must be at least 1; got -5"),
    "grad-accum-0": (["--grad-accum", "0"], "argument --grad-accum: must be at least 1; got 0"),
    "lr-negative": (["--lr", "-0.1"], "argument --lr: must be a finite number > 0; got -0.1"),
    "lr-nan": (["--lr", "nan"], "argument --lr: must be a finite number > 0; got nan"),
    "dropout-1": (["--dropout", "1"], "argument --dropout: must be a finite number >= 0 and < 1"),
    "steps-not-a-number": (["--steps", "ten"], "argument --steps: expected an integer; got 'ten'"),
    "temperature-0": (["--temperature", "0"], "argument --temperature: must be a finite number"),
    "eval-iters-0": (["--eval-iters", "0"], "argument --eval-iters: must be at least 1"),
    "save-every-0": (["--save-every", "0"], "argument --save-every: must be at least 1"),
    "heads-not-dividing": (["--heads", "3"], "argument --heads: must divide --d-model 128; got 3"),
    "steps-and-time-budget": (["--steps", "5", "--time-budget", "9"],
                              "argument --time-budget: not allowed with argument --steps"),
    "memory-budget-inf": (["--memory-budget", "inf"], "argument --memory-budget: must be a"),
    "out-folder-missing": (["--out", "/nonexistent-folder/x.pt"],
                           "argument --out: the folder /nonexistent-folder does not exist"),
    "block-size-too-long": (TINY + ["--block-size", "10000000"],
                            "argument --block-size: must be below"),
}


@pytest.mark.parametrize("argv,message", list(BAD_OPTIONS.values()), ids=list(BAD_OPTIONS))
def test_a_bad_option_is_one_line_and_exit_code_2(argv, message, tmp_path):
    proc = demo(tmp_path, *argv)
    assert_one_line_error(proc, message)
    assert proc.stdout == "" or "block-size" in message  # refused before any work
    assert os.listdir(tmp_path) == []  # nothing written


def test_out_that_is_a_folder_is_refused(tmp_path):
    proc = demo(tmp_path, "--out", str(tmp_path))
    assert_one_line_error(proc, f"argument --out: {tmp_path} is a directory")


# -- --resume files ---------------------------------------------------------------------------
def _bad_file(tmp_path, kind: str) -> str:
    path = tmp_path / "ckpt.pt"
    if kind == "directory":
        path.mkdir()
    elif kind == "random-bytes":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "state-dict":
        ember.save({"weight": ember.ones(2, 2), "bias": ember.zeros(2)}, str(path))
    elif kind == "earlier-version":
        ember.save({"model": {}, "optimizer": {}, "config": {}, "chars": "ab", "step": 3},
                   str(path))
    elif kind == "unsafe-pickle":
        with open(path, "wb") as f:
            pickle.dump(os.getcwd, f)
    return str(path)


BAD_FILES = {
    "missing": "no such file",
    "directory": "is a directory, not a checkpoint file",
    "random-bytes": "not a checkpoint that ember.load can read (UnpicklingError: ",
    "empty": "the file is empty (0 bytes)",
    "state-dict": "a checkpoint, but not one of this demo: it holds a dict with keys 'weight', "
                  "'bias'",
    "earlier-version": "written by an earlier version of this demo, without the random state",
    "unsafe-pickle": "not a checkpoint that ember.load can read (UnpicklingError: ",
}


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_a_bad_resume_file_is_one_line_naming_it(kind, tmp_path):
    path = _bad_file(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    proc = demo(tmp_path, *TINY, "--resume", path)
    assert_one_line_error(proc, f"--resume {path}: {BAD_FILES[kind]}")
    assert sorted(os.listdir(tmp_path)) == before


# -- a trained checkpoint: --eval-only, Ctrl-C and --resume ------------------------------------
STEPS = 200


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """An uninterrupted tiny run of STEPS steps, dropout on (so the global RNG matters)."""
    tmp = tmp_path_factory.mktemp("whole")
    out = tmp / "whole.pt"
    proc = demo(tmp, *TINY, "--dropout", "0.1", "--steps", str(STEPS), "--quiet", "--out",
                str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, str(out)


def _eval_lines(stdout: str) -> list[str]:
    return re.findall(r"^step +\d+: train loss .*$", stdout, flags=re.M)


def _signature(path: str) -> tuple:
    st = os.stat(path)
    with open(path, "rb") as f:
        return st.st_mtime_ns, f.read()


def test_eval_only_writes_nothing(uninterrupted, tmp_path):
    _, ckpt = uninterrupted
    before = _signature(ckpt)
    proc = demo(tmp_path, "--eval-only", "--resume", ckpt, "--out", ckpt, "--sample-chars", "8")
    assert proc.returncode == 0, proc.stderr
    assert "--out ignored with --eval-only: nothing is trained or written" in proc.stderr
    assert "held-out loss:" in proc.stdout and "Traceback" not in proc.stderr
    assert _signature(ckpt) == before and os.listdir(tmp_path) == []


def test_eval_only_without_resume_says_what_it_evaluates_and_keeps_the_checkpoint(tmp_path):
    trained = tmp_path / "ember-charlm.pt"  # where a default training run writes (TMPDIR)
    trained.write_bytes(b"a trained model")
    before = _signature(str(trained))
    proc = demo(tmp_path, *TINY, "--eval-only")
    assert proc.returncode == 0, proc.stderr
    assert "--eval-only without --resume: evaluating an untrained model" in proc.stdout
    assert f"pass --resume PATH to evaluate a checkpoint, such as the one training writes to " \
           f"{trained}" in proc.stdout
    assert _signature(str(trained)) == before and os.listdir(tmp_path) == [trained.name]


def _interrupt(tmp_path, out: str) -> tuple[int, str, str]:
    """Start the run, send SIGINT once training has begun, return (code, stdout, stderr)."""
    proc = subprocess.Popen(DEMO + TINY + ["--dropout", "0.1", "--steps", str(STEPS), "--quiet",
                                           "--out", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=_env(tmp_path))
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if " s a step: about " in line:  # printed after a few steps
            proc.send_signal(signal.SIGINT)
            break
    rest, err = proc.communicate(timeout=300)
    return proc.returncode, "".join(lines) + rest, err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_saves_and_resume_matches_an_uninterrupted_run(uninterrupted, tmp_path):
    whole_proc, whole_ckpt = uninterrupted
    out = str(tmp_path / "part.pt")
    code, first, err = _interrupt(tmp_path, out)
    assert code == 130, err
    assert "Traceback" not in err
    step = int(re.search(rf"^interrupted at step (\d+) of {STEPS}; checkpoint saved to "
                         rf"{re.escape(out)}$", first, flags=re.M).group(1))
    assert 0 < step < STEPS
    assert ember.load(out)["step"] == step
    hint = re.search(r"^resume with: (.*)$", first, flags=re.M).group(1)
    assert hint == f"python -m ember.examples.charlm --resume {out} --out {out}"
    again = demo(tmp_path, *shlex.split(hint)[3:], "--quiet", "--sample-chars", "8")
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""  # nothing conflicts: the settings come from the checkpoint
    assert f"resuming {out} at step {step} of {STEPS}" in again.stdout
    # the same losses, step by step, and the same weights, bit for bit
    assert _eval_lines(first) + _eval_lines(again.stdout) == _eval_lines(whole_proc.stdout)
    whole, resumed = ember.load(whole_ckpt), ember.load(out)
    assert resumed["step"] == whole["step"] == STEPS
    assert resumed["history"] == whole["history"] and len(whole["history"]["train"]) == STEPS
    for name, value in whole["model"].items():
        np.testing.assert_array_equal(resumed["model"][name].numpy(), value.numpy(), name)
    assert again.stdout.split("held-out loss: ")[-1] == whole_proc.stdout.split(
        "held-out loss: ")[-1]  # final loss and sample


def test_resume_warns_about_flags_the_checkpoint_overrides(uninterrupted, tmp_path):
    _, ckpt = uninterrupted
    proc = demo(tmp_path, "--resume", ckpt, "--steps", "1", "--layers", "3", "--d-model", "64",
                "--lr", "0.5", "--sample-chars", "4", "--quiet", "--out",
                str(tmp_path / "more.pt"))
    assert proc.returncode == 0, proc.stderr
    warnings = proc.stderr.strip().splitlines()
    assert all(w.startswith("python -m ember.examples.charlm: warning: ") for w in warnings)
    text = "\n".join(warnings)
    assert f"--layers 3 ignored: the checkpoint {ckpt} holds a model with n_layer=1" in text
    assert "--d-model 64 ignored" in text and "n_embd=32" in text
    assert f"--lr 0.5 differs from the checkpoint {ckpt}'s 0.01; continuing with 0.5" in text
    assert len(warnings) == 3
    assert f"resuming {ckpt} at step {STEPS} of {STEPS + 1}" in proc.stdout


def test_resuming_a_finished_run_without_steps_says_what_to_do(uninterrupted, tmp_path):
    _, ckpt = uninterrupted
    proc = demo(tmp_path, "--resume", ckpt)
    assert_one_line_error(proc, f"--resume {ckpt}: its run is complete ({STEPS} steps); pass "
                                "--steps N to train N more steps, or --eval-only")


# -- progress without tqdm --------------------------------------------------------------------
def _in_a_terminal(tmp_path, argv: list[str], **env) -> tuple[int, str, str]:
    """Run with stdout on a pseudo-terminal (where a tqdm bar would be drawn)."""
    import fcntl
    import pty
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # rows, cols
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=subprocess.PIPE, cwd=ROOT, env=_env(tmp_path, **env))
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), b"".join(chunks).decode(errors="replace"), err


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
@pytest.mark.parametrize("tqdm", ["missing", "installed"])
def test_progress_is_plain_lines_without_tqdm(tqdm, tmp_path):
    pytest.importorskip("tqdm")
    env = {}
    if tqdm == "missing":  # a tqdm that cannot be imported, ahead of the installed one
        fake = tmp_path / "no_tqdm"
        fake.mkdir()
        (fake / "tqdm.py").write_text("raise ModuleNotFoundError(\"No module named 'tqdm'\", "
                                      "name='tqdm')\n")
        env["PYTHONPATH"] = f"{fake}{os.pathsep}{ROOT}"
    argv = DEMO + TINY + ["--steps", "20", "--out", str(tmp_path / "x.pt")]
    code, out, err = _in_a_terminal(tmp_path, argv, **env)
    assert code == 0, err
    assert "Traceback" not in err and "Traceback" not in out
    lines = re.findall(r"^step (\d+)/20: loss \d+\.\d{4}, [\d,]+ tokens/s, \d+:\d\d elapsed, "
                       r"about \d+:\d\d left\r?$", out, flags=re.M)
    if tqdm == "missing":
        assert lines == [str(s) for s in range(2, 21, 2) if s % 4]  # evaluations at 4, 8, ..
        assert "\r\x1b" not in out and "%|" not in out
    else:
        assert lines == [] and "%|" in out  # the control: a terminal gets the bar
    assert out.rstrip().endswith("-" * 60)  # the run ends with the sample
