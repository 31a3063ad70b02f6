"""The char-GPT demo trained data-parallel: ``python -m ember.distributed.run --nproc-per-node 2
-m ember.examples.charlm --ddp``; rank 0 alone prints and saves, and its checkpoint loads in a
plain process (a tiny model, a few steps: about ten seconds on two cores)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import ember
from ember.examples import charlm
from ember.examples.gpt import GPT, GPTConfig

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--steps", "4", "--layers", "1", "--d-model", "16", "--heads", "2", "--batch-size", "2",
        "--block-size", "8", "--eval-iters", "1", "--sample-chars", "5"]


def test_charlm_ddp_two_ranks(tmp_path):
    out = tmp_path / "ckpt.pt"
    proc = subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node",
                           "2", "--standalone", "-m", "ember.examples.charlm", "--ddp", *TINY,
                           "--quiet", "--out", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert text.count("data-parallel: 2 ranks, 2 sequences each") == 1
    assert text.count("held-out loss:") == 1  # rank 1 prints nothing
    assert len(re.findall(r"^step +4:", text, re.M)) == 1
    val = float(re.search(r"^held-out loss: ([0-9.]+)", text, re.M).group(1))

    ckpt = ember.load(str(out))  # loads anywhere: a plain GPT state dict
    assert ckpt["step"] == 4
    model = GPT(GPTConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    summary = charlm.main(["--resume", str(out), "--eval-only", "--eval-iters", "1",
                           "--batch-size", "2", "--sample-chars", "5", "--quiet"])
    assert abs(summary["final_val"] - val) < 5e-5  # printed with 4 decimals
