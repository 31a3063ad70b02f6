"""Train a character-level GPT on Python's own documentation: ``python -m ember.examples.charlm``.

The corpus is the text of the standard library's ``pydoc_data.topics`` (it ships with every
Python), split 90/10 into training and held-out text over a character vocabulary. The default
run is a fixed number of steps (the same losses on every run on a given machine; the time it
will take is printed after a few steps), with a warmup + cosine learning-rate schedule;
``--time-budget SECONDS`` sizes the run to a time instead. Progress shows as a tqdm bar (or
plain lines without tqdm or a terminal), with held-out loss at intervals; the run ends with
the held-out loss and a generated sample.

The checkpoint (``--out``) is written atomically at the end, every ``--save-every`` steps and
on Ctrl-C; it holds the model, the optimizer, the schedule's position, the training settings
and both random states, so ``--resume PATH`` continues exactly as an uninterrupted run would.
``--eval-only`` evaluates and samples without writing anything.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

import ember
import ember.nn.utils
from ember.examples._common import (
    OneLineParser,
    Progress,
    StopOnInterrupt,
    clock,
    fail,
    integer,
    limit_blas_threads,
    number,
    warn,
)
from ember.examples.gpt import GPT, GPTConfig

PROG = "python -m ember.examples.charlm"
UNIGRAM_NOTE = "a model that ignores context (unigram frequencies) scores {:.3f}"
KIND, VERSION = "ember.examples.charlm", 1
DEFAULT_STEPS = 800
PROBE_STEPS = 5  # steps timed (after the first, which warms caches) for the time estimate
MB = 10**6  # --memory-budget is in megabytes


# -- data -------------------------------------------------------------------------------------
def load_text() -> str:
    """The documentation topics of ``pydoc_data`` joined in key order (about 0.5M characters)."""
    from pydoc_data.topics import topics
    return "\n".join(topics[k] for k in sorted(topics))


@dataclass(frozen=True)
class CharCorpus:
    """A character vocabulary and the text encoded as int64 tensors, split train/held-out."""

    chars: str
    train: ember.Tensor
    val: ember.Tensor

    @classmethod
    def from_text(cls, text: str, val_fraction: float = 0.1,
                  chars: str | None = None) -> CharCorpus:
        """Encode ``text`` over ``chars`` (default: its own sorted characters).

        Raises:
            ValueError: ``text`` has characters that ``chars`` lacks.
        """
        chars = chars if chars is not None else "".join(sorted(set(text)))
        codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
        alphabet = np.frombuffer(chars.encode("utf-32-le"), dtype="<u4")
        order = np.argsort(alphabet, kind="stable")
        pos = np.searchsorted(alphabet[order], codes).clip(0, len(chars) - 1)
        unknown = alphabet[order][pos] != codes
        if unknown.any():
            missing = sorted({chr(c) for c in codes[unknown]})
            raise ValueError(f"CharCorpus: the vocabulary lacks {len(missing)} character(s) of "
                             f"the text; got {''.join(missing[:10])!r}")
        data = ember.from_numpy(order[pos].astype(np.int64))
        n = int(len(text) * (1.0 - val_fraction))
        return cls(chars, data[:n], data[n:])

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)

    def encode(self, s: str) -> ember.Tensor:
        return ember.tensor([self.chars.index(c) for c in s if c in self.chars],
                            dtype=ember.int64)

    def unigram_loss(self) -> float:
        """Cross-entropy of the held-out text under the training text's character frequencies."""
        counts = ember.bincount(self.train, minlength=len(self.chars)).double() + 1.0
        logp = (counts / counts.sum()).log()
        return -logp[self.val].mean().item()


def get_batch(data: ember.Tensor, batch_size: int, block_size: int,
              generator: ember.Generator | None = None) -> tuple[ember.Tensor, ember.Tensor]:
    """Random windows of the text: inputs ``(B, T)`` and the next characters ``(B, T)``."""
    starts = ember.randint(0, len(data) - block_size, (batch_size,), generator=generator)
    idx = starts[:, None] + ember.arange(block_size + 1)  # (B, 1) + (T+1,) -> (B, T+1)
    chunk = data[idx]
    return chunk[:, :-1], chunk[:, 1:]  # (B, T+1) -> (B, T), (B, T)


@ember.no_grad()
def evaluate(model: GPT, data: ember.Tensor, batch_size: int, iters: int,
             seed: int = 1234) -> float:
    """Mean loss over ``iters`` held-out batches, always the same ones (a fixed generator)."""
    was_training = model.training
    model.eval()
    gen = ember.Generator().manual_seed(seed)
    total = 0.0
    for _ in range(iters):
        x, y = get_batch(data, batch_size, model.cfg.block_size, gen)
        total += model(x, y)[1].item()
    model.train(was_training)
    return total / iters


# -- training ---------------------------------------------------------------------------------
def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    """Linear warmup to ``base``, then cosine decay to ``base / 10`` at ``total``."""
    if step < warmup:
        return base * (step + 1) / warmup
    frac = min(1.0, (step - warmup) / max(1, total - warmup))
    return base * (0.1 + 0.45 * (1.0 + math.cos(math.pi * frac)))


def train_step(model: GPT, opt: ember.optim.Optimizer, next_batch, grad_accum: int) -> float:
    """One optimizer step over ``grad_accum`` micro-batches (loss / N, N backward calls).

    ``next_batch()`` returns ``(x, y)``. The gradients of the N scaled losses add up in
    ``.grad`` to the gradient of the mean loss over all N micro-batches, so (for a model
    without batch-dependent layers) this equals one step on the concatenated batch.
    """
    total = 0.0
    for i in range(grad_accum):
        x, y = next_batch()
        # under DDP only the last micro-batch's backward all-reduces the summed gradients
        local = model.no_sync() if hasattr(model, "no_sync") and i < grad_accum - 1 else \
            contextlib.nullcontext()
        with local:
            loss = model(x, y)[1] / grad_accum
            loss.backward()
        total += loss.item()
    ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return total


def make_optimizer(model: GPT, lr: float, weight_decay: float = 0.1) -> ember.optim.AdamW:
    """AdamW with weight decay on matrices only (not on biases, norms or positions)."""
    seen, decay, no_decay = set(), [], []
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        (decay if p.dim() >= 2 and "wpe" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return ember.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


class Schedule:
    """How many steps to run: a fixed total, or as many as fit in ``seconds``.

    With a time budget the total is unknown (None) for the first ``probe`` steps; after that it
    is re-estimated after every step from the average wall time per step so far (evaluations
    included), so the learning-rate schedule and the progress report know their length and the
    run ends near the budget even when the machine's load changes.
    """

    def __init__(self, total: int | None, seconds: float | None, start: int,
                 probe: int = 4) -> None:
        self.fixed = seconds is None
        self.total = total if self.fixed else None
        self.seconds, self.start, self.probe = seconds, start, probe
        self.t0 = time.perf_counter()

    def observe(self, step: int) -> bool:
        """Call after each step with the steps done; True when the total changed."""
        done = step - self.start
        if self.fixed or done < self.probe:
            return False
        elapsed = time.perf_counter() - self.t0
        left = max(0, int((self.seconds - elapsed) / (elapsed / done)))
        total, self.total = self.total, step + left
        return total != self.total


# -- options ----------------------------------------------------------------------------------
# Option defaults, filled in after parsing so that the options a user gave are known: a resumed
# run takes the training settings from its checkpoint unless the user gives them again.
DEFAULTS = {"batch_size": 16, "block_size": 64, "layers": 4, "heads": 4, "d_model": 128,
            "dropout": 0.0, "lr": 3e-3, "warmup": 20, "grad_accum": 1, "eval_iters": 8,
            "sample_chars": 300, "temperature": 0.8, "seed": 1337, "threads": 1,
            "save_every": 200}
MODEL_FLAGS = {"block_size": "block_size", "layers": "n_layer", "heads": "n_head",
               "d_model": "n_embd", "dropout": "dropout"}  # option -> GPTConfig field
TRAIN_SETTINGS = ("batch_size", "lr", "warmup", "grad_accum", "eval_interval", "eval_iters",
                  "seed")
TRAIN_ONLY = ("steps", "time_budget", "save_every", "lr", "warmup", "grad_accum",
              "checkpoint_activations", "memory_budget", "out")


def default_out() -> str:
    """Where the checkpoint goes without ``--out``: ``ember-charlm.pt`` in the temp folder."""
    return os.path.join(tempfile.gettempdir(), "ember-charlm.pt")


def flag(dest: str) -> str:
    """``"batch_size"`` -> ``"--batch-size"``."""
    return "--" + dest.replace("_", "-")


def build_parser() -> OneLineParser:
    p = OneLineParser(prog=PROG, description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)

    def opt(name: str, kind, help: str, metavar: str = "N") -> None:
        default = DEFAULTS.get(name.lstrip("-").replace("-", "_"))
        suffix = "" if default is None else f" (default: {default})"
        p.add_argument(name, type=kind, default=None, help=help + suffix, metavar=metavar)

    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=integer(1), default=None, metavar="N",
                        help=f"optimizer steps (default: {DEFAULT_STEPS}; with --resume: steps "
                             "after the checkpoint's, default: the rest of its run)")
    length.add_argument("--time-budget", type=number(0.0), default=None, metavar="SECONDS",
                        help="train for about this long instead of a fixed number of steps")
    opt("--batch-size", integer(1), "sequences per micro-batch")
    opt("--block-size", integer(1), "context length")
    opt("--layers", integer(1), "transformer blocks")
    opt("--heads", integer(1), "attention heads, a divisor of --d-model")
    opt("--d-model", integer(1), "width")
    opt("--dropout", number(0.0, 1.0, low_open=False, high_open=True), "dropout probability", "P")
    opt("--lr", number(0.0), "peak learning rate", "LR")
    opt("--warmup", integer(0), "warmup steps")
    opt("--grad-accum", integer(1), "micro-batches per step")
    opt("--eval-interval", integer(1), "steps between held-out evaluations (default: a fifth "
        "of --steps, or 100 with --time-budget)")
    opt("--eval-iters", integer(1), "held-out batches per evaluation")
    p.add_argument("--eval-only", action="store_true",
                   help="evaluate and sample only, writing nothing (usually with --resume)")
    p.add_argument("--resume", metavar="PATH", default=None,
                   help="continue from a checkpoint of this demo")
    p.add_argument("--out", metavar="PATH", default=None,
                   help=f"where the checkpoint is written (default: {default_out()})")
    opt("--save-every", integer(1), "steps between checkpoints")
    opt("--sample-chars", integer(0), "characters generated at the end")
    opt("--temperature", number(0.0), "sampling temperature", "T")
    opt("--seed", integer(0, 2**64 - 1), "seed of the initialisation, data order and sample")
    p.add_argument("--device", default="cpu", choices=["cpu"], help="cpu only for now")
    opt("--threads", integer(1), "BLAS threads (these matrices are small: extra threads "
        "mostly spin)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    p.add_argument("--compile", action="store_true",
                   help="run the model through ember.compile (fused C kernels; forward and "
                        "backward compiled; sizes that change become dynamic)")
    ckpt = p.add_mutually_exclusive_group()
    ckpt.add_argument("--checkpoint-activations", action="store_true",
                      help="recompute every block's activations in backward instead of keeping "
                           "them")
    ckpt.add_argument("--memory-budget", type=number(0.0), default=None, metavar="MB",
                      help="checkpoint just the blocks needed for their activations to fit in "
                           "MB megabytes (10**6 bytes)")
    p.add_argument("--memory-report", action="store_true",
                   help="print ember.memory.memory_summary() after training")
    p.add_argument("--profile", metavar="DIR", default=None,
                   help="profile training steps 2-4 (time, shapes, memory): Chrome trace and "
                        "HTML report in DIR")
    p.add_argument("--ddp", action="store_true",
                   help="data-parallel training over the ranks started by python -m "
                        "ember.distributed.run: each rank trains on its own batches, gradients "
                        "are averaged (DistributedDataParallel); rank 0 prints and saves")
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The options, checked; ``args.given`` names those on the command line.

    A mistake ends the program with one ``error:`` line on stderr and exit code 2.
    """
    args = build_parser().parse_args(argv)
    args.given = frozenset(k for k, v in vars(args).items() if v is not None and v is not False)
    for name, value in DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.out is None:
        args.out = default_out()
    check_args(args)
    return args


def check_args(args: argparse.Namespace) -> None:
    """What one option cannot check alone: combinations, and where the checkpoint goes."""
    if args.ddp and args.time_budget is not None:
        fail(PROG, "argument --time-budget: not with --ddp (every rank must run the same "
                   "number of steps); use --steps")
    if args.resume is None and args.d_model % args.heads:
        fail(PROG, f"argument --heads: must divide --d-model {args.d_model}; got {args.heads}")
    if args.eval_only:
        ignored = [flag(k) for k in TRAIN_ONLY if k in args.given]
        if ignored:
            warn(PROG, f"{', '.join(ignored)} ignored with --eval-only: nothing is trained or "
                       "written")
        return
    out = os.path.abspath(args.out)
    folder = os.path.dirname(out)
    if os.path.isdir(out):
        fail(PROG, f"argument --out: {args.out} is a directory; expected a file path")
    if not os.path.isdir(folder):
        fail(PROG, f"argument --out: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        fail(PROG, f"argument --out: the folder {folder} is not writable")


# -- checkpoints ------------------------------------------------------------------------------
@dataclass
class RunState:
    """Where training stands: the step, the planned total and what is needed to go on."""

    step: int
    total: int | None
    data_gen: ember.Generator
    train: list[float] = field(default_factory=list)  # one loss per step since step 0
    val: list[list] = field(default_factory=list)  # [step, held-out loss] pairs


def save_checkpoint(path: str, model: GPT, opt, corpus: CharCorpus, args, st: RunState) -> None:
    """Everything a resumed run needs, written atomically (NOTE [Atomic save] in ember.save).

    Under ``--ddp`` only rank 0 writes (the model's own state dict: it loads anywhere)."""
    if _DDP["rank"]:
        return
    ember.save({"kind": KIND, "version": VERSION, "model": model.state_dict(),
                "optimizer": opt.state_dict(), "config": dataclasses.asdict(model.cfg),
                "chars": corpus.chars, "step": st.step, "total": st.total,
                "settings": {k: getattr(args, k) for k in TRAIN_SETTINGS},
                "rng": ember.get_rng_state(), "data_rng": st.data_gen.get_state(),
                "history": {"train": list(st.train), "val": [list(v) for v in st.val]}}, path)


REQUIRED = ("model", "optimizer", "config", "chars", "step", "total", "settings", "rng",
            "data_rng", "history")


def read_checkpoint(path: str) -> dict:
    """Load ``--resume PATH``; anything wrong with it ends the run with one line naming it."""
    where = f"--resume {path}"
    if not os.path.exists(path):
        fail(PROG, f"{where}: no such file")
    if os.path.isdir(path):
        fail(PROG, f"{where}: is a directory, not a checkpoint file")
    if not os.access(path, os.R_OK):
        fail(PROG, f"{where}: cannot be read (permission denied)")
    if os.path.getsize(path) == 0:
        fail(PROG, f"{where}: the file is empty (0 bytes)")
    try:
        ckpt = ember.load(path)
    except Exception as e:  # whatever the bytes are, the user needs one line, not a traceback
        fail(PROG, f"{where}: not a checkpoint that ember.load can read "
                   f"({type(e).__name__}: {_first_line(e)})")
    if not isinstance(ckpt, dict) or ckpt.get("kind") != KIND:
        if isinstance(ckpt, dict) and {"model", "optimizer", "config", "step"} <= set(ckpt):
            fail(PROG, f"{where}: written by an earlier version of this demo, without the "
                       "random state a resumed run needs; train afresh")
        fail(PROG, f"{where}: a checkpoint, but not one of this demo: it holds "
                   f"{_describe(ckpt)}")
    if ckpt.get("version") != VERSION:
        fail(PROG, f"{where}: checkpoint format version {ckpt.get('version')!r}; this demo "
                   f"reads version {VERSION}")
    missing = [k for k in REQUIRED if k not in ckpt]
    if missing:
        fail(PROG, f"{where}: an incomplete checkpoint of this demo: no {', '.join(missing)}")
    return ckpt


def _first_line(e: BaseException, limit: int = 160) -> str:
    text = (str(e).strip().splitlines() or [""])[0]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _describe(obj) -> str:
    if isinstance(obj, dict):
        keys = [repr(k) for k in list(obj)[:4]]
        more = ", ..." if len(obj) > 4 else ""
        return f"a dict with keys {', '.join(keys)}{more}" if keys else "an empty dict"
    if isinstance(obj, ember.Tensor):
        return f"a tensor of shape {tuple(obj.shape)}"
    return f"a {type(obj).__name__}"


def reconcile(args: argparse.Namespace, ckpt: dict) -> None:
    """Settings of a resumed run: the checkpoint's, with a warning for each one overridden."""
    where = f"the checkpoint {args.resume}"
    cfg = ckpt["config"]
    for name, key in MODEL_FLAGS.items():
        if name in args.given and getattr(args, name) != cfg.get(key):
            warn(PROG, f"{flag(name)} {getattr(args, name)} ignored: {where} holds a model with "
                       f"{key}={cfg.get(key)}, and a resumed model keeps its sizes")
    saved = ckpt["settings"]
    for name in TRAIN_SETTINGS:
        if name not in args.given:
            setattr(args, name, saved[name])
        elif getattr(args, name) != saved[name] and not args.eval_only:
            if name == "seed":
                warn(PROG, f"--seed {args.seed} seeds only the sample: training continues "
                           f"with the random state saved in {where}")
            else:
                warn(PROG, f"{flag(name)} {getattr(args, name)} differs from {where}'s "
                           f"{saved[name]}; continuing with {getattr(args, name)}, so the run "
                           "will not match an uninterrupted one")
    step, total = ckpt["step"], ckpt["total"]
    if args.eval_only:
        return
    if args.steps is None and args.time_budget is None:
        if total is None:
            fail(PROG, f"--resume {args.resume}: stopped at step {step}, before its time budget "
                       "had sized the run; pass --steps N or --time-budget SECONDS")
        if step >= total:
            fail(PROG, f"--resume {args.resume}: its run is complete ({step} steps); pass "
                       "--steps N to train N more steps, or --eval-only to evaluate it")
    elif total is not None and step < total:
        given = f"--steps {args.steps}" if args.steps else f"--time-budget {args.time_budget:g}"
        warn(PROG, f"{where} stopped at step {step} of {total}; {given} replaces the rest of "
                   "that run with a new learning-rate schedule (leave it out to finish the run "
                   "as planned)")


# -- the run ----------------------------------------------------------------------------------
def build(args: argparse.Namespace, corpus: CharCorpus, ckpt: dict | None):
    """Model and optimizer: fresh from ``args``, or from a checkpoint's config and states."""
    if ckpt is None:
        cfg = GPTConfig(vocab_size=len(corpus.chars), block_size=args.block_size,
                        n_layer=args.layers, n_head=args.heads, n_embd=args.d_model,
                        dropout=args.dropout)
        model = GPT(cfg)
        return model, make_optimizer(model, args.lr)
    try:
        model = GPT(GPTConfig(**ckpt["config"]))
        opt = make_optimizer(model, args.lr)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
    except (TypeError, ValueError, KeyError, RuntimeError) as e:
        fail(PROG, f"--resume {args.resume}: a damaged checkpoint of this demo "
                   f"({type(e).__name__}: {_first_line(e)})")
    return model, opt


def configure_checkpointing(args: argparse.Namespace, model: GPT, corpus: CharCorpus) -> None:
    """``--checkpoint-activations``: every block; ``--memory-budget MB``: the planner's blocks."""
    from ember.utils.checkpoint import apply_plan, checkpoint_modules, plan
    blocks = list(model.blocks)
    if args.memory_budget is not None:
        gen = ember.Generator().manual_seed(args.seed)
        x, _ = get_batch(corpus.train, args.batch_size, model.cfg.block_size, gen)
        # the blocks' input, (B, T) -> (B, T, C); its dropout draw must not shift training's
        with ember.no_grad(), ember.random.fork_rng():
            h = model.drop(model.wte(x) + model.wpe(ember.arange(x.shape[1])))
        budget = f"{args.memory_budget:g} MB"
        with ember.random.fork_rng():
            lowest = plan(blocks, h, 1 << 62).peak_for(range(len(blocks)))
        if args.memory_budget * MB < lowest:
            fail(PROG, f"argument --memory-budget: {budget} is below the smallest achievable "
                       f"peak, {lowest / MB:.3g} MB with every block checkpointed")
        with ember.random.fork_rng():
            p = plan(blocks, h, int(args.memory_budget * MB))
        apply_plan(model, p)
        print(f"activation checkpointing: blocks {list(p.checkpointed)} of {len(blocks)}, "
              f"predicted peak {p.predicted_peak / MB:.3g} MB (budget {budget}; "
              f"{p.plain_peak / MB:.3g} MB with none checkpointed)")
    elif args.checkpoint_activations:
        checkpoint_modules(blocks)
        print(f"activation checkpointing: all {len(blocks)} blocks")


def sample(model: GPT, corpus: CharCorpus, n: int, temperature: float, seed: int) -> str:
    """``n`` characters generated after the prompt ``"The "``."""
    prompt = corpus.encode("The ")[None, :]  # (T,) -> (1, T)
    gen = ember.Generator().manual_seed(seed)
    model.eval()
    out = model.generate(prompt, n, temperature=temperature, generator=gen)
    model.train()
    return corpus.decode(out[0].tolist())


def estimate_line(sched: Schedule, st: RunState, seconds_per_step: float) -> str:
    """The time a fixed run will take, or the steps a time budget allows."""
    if sched.fixed:
        left = clock(seconds_per_step * (sched.total - st.step))
        return (f"{sched.total - sched.start} steps at {seconds_per_step:.2f} s a step: about "
                f"{left} to go (--time-budget SECONDS fits the run to a time instead)")
    return (f"time budget {sched.seconds:g} s: about {sched.total - sched.start} steps at "
            f"{seconds_per_step:.2f} s a step")


def start_profiler(out_dir: str | None):
    """``--profile DIR``: a profiler over steps 2-4 whose trace and report land in DIR."""
    if out_dir is None:
        return None
    from ember.profiler import profile, schedule
    from ember.profiler.report import write_report

    def ready(prof) -> None:
        os.makedirs(out_dir, exist_ok=True)
        trace = os.path.join(out_dir, "charlm.pt.trace.json")
        prof.export_chrome_trace(trace)
        print(f"profile: {trace} and {write_report(trace)}")

    prof = profile(schedule=schedule(wait=1, warmup=1, active=3, repeat=1), on_trace_ready=ready,
                   record_shapes=True, profile_memory=True)
    prof.start()
    return prof


def train(args, model: GPT, opt, corpus: CharCorpus, st: RunState, stop) -> None:
    """The training loop, from ``st.step`` to the schedule's end or a Ctrl-C (``stop``)."""
    sched = Schedule(st.total, args.time_budget, st.step)
    start = st.step
    tokens = args.batch_size * model.cfg.block_size * args.grad_accum
    bar = Progress(start, sched.total, args.quiet)
    t_last, t_first, rate = time.perf_counter(), None, None
    prof = start_profiler(args.profile)

    def next_batch():
        if not args.ddp:
            return get_batch(corpus.train, args.batch_size, model.cfg.block_size, st.data_gen)
        # one data stream for the job (resumable as one): every rank draws the world's
        # batches and keeps its own
        batches = [get_batch(corpus.train, args.batch_size, model.cfg.block_size, st.data_gen)
                   for _ in range(_DDP["world"])]
        return batches[_DDP["rank"]]

    if args.compile:
        model.compile()     # in place: training, evaluation and sampling run compiled
    step_model = model
    if args.ddp:
        from ember.nn.parallel import DistributedDataParallel
        step_model = DistributedDataParallel(model)
    while (sched.total is None or st.step < sched.total) and not stop.requested:
        for g in opt.param_groups:
            g["lr"] = lr_at(st.step, sched.total or 10**9, args.lr, args.warmup)
        loss = train_step(step_model, opt, next_batch, args.grad_accum)
        if prof is not None:
            prof.step()
        st.step += 1
        st.train.append(loss)
        now = time.perf_counter()
        rate = tokens / (now - t_last) if rate is None else 0.8 * rate + 0.2 * tokens / (
            now - t_last)
        t_last, t_first = now, t_first or now
        if sched.observe(st.step):
            bar.set_total(sched.total)
        st.total = sched.total
        if st.step - start == PROBE_STEPS + 1:
            bar.write(estimate_line(sched, st, (now - t_first) / PROBE_STEPS))
        evaluating = st.step % args.eval_interval == 0 or st.step == sched.total
        bar.update(st.step, loss, rate, line=not evaluating)
        if evaluating:
            val = evaluate(model, corpus.val, args.batch_size, args.eval_iters)
            st.val.append([st.step, val])
            bar.write(f"step {st.step:5d}: train loss {loss:.4f}, held-out loss {val:.4f}")
        if st.step % args.save_every == 0 and st.step != sched.total:
            save_checkpoint(args.out, model, opt, corpus, args, st)
    bar.close()
    if prof is not None:
        prof.stop()


def main(argv: list[str] | None = None) -> dict:
    """Run the example; returns a summary (losses, sample, checkpoint path) for tests.

    Raises:
        SystemExit: 2 after a one-line message for a user's mistake; 130 after Ctrl-C (the
            checkpoint then holds the last finished step).
    """
    args = parse_args(argv)
    with limit_blas_threads(args.threads), data_parallel(args):
        return run(args)


_DDP = {"rank": 0, "world": 1}  # this process's place in a --ddp run


@contextlib.contextmanager
def data_parallel(args: argparse.Namespace):
    """``--ddp``: join the launcher's process group; ranks other than 0 run quietly."""
    if not args.ddp:
        yield
        return
    import ember.distributed as dist
    own = not dist.is_initialized()
    if own:
        dist.init_process_group("gloo")  # ember's CPU default: shared memory on one machine
    _DDP.update(rank=dist.get_rank(), world=dist.get_world_size())
    quiet = open(os.devnull, "w") if _DDP["rank"] else None  # noqa: SIM115
    if quiet is not None:
        args.quiet = True
    try:
        with contextlib.redirect_stdout(quiet) if quiet else contextlib.nullcontext():
            if not _DDP["rank"]:
                print(f"data-parallel: {_DDP['world']} ranks, {args.batch_size} sequences each "
                      f"per micro-batch")
            yield
    finally:
        if quiet is not None:
            quiet.close()
        _DDP.update(rank=0, world=1)
        if own:
            dist.destroy_process_group()


def cli(argv: list[str] | None = None) -> int:
    """``main`` for the command line: Ctrl-C outside training exits 130 without a traceback."""
    try:
        main(argv)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


def prepare(args: argparse.Namespace):
    """Checkpoint, corpus, model, optimizer and run state, for a fresh or a resumed run."""
    ckpt = read_checkpoint(args.resume) if args.resume else None
    if ckpt is not None:
        reconcile(args, ckpt)
    ember.manual_seed(args.seed)
    try:
        corpus = CharCorpus.from_text(load_text(), chars=ckpt["chars"] if ckpt else None)
    except ValueError as e:
        fail(PROG, f"--resume {args.resume}: trained on other text than this Python's "
                   f"pydoc_data ({_first_line(e)})")
    if ckpt is None and args.block_size >= len(corpus.val):
        fail(PROG, f"argument --block-size: must be below {len(corpus.val)} (the held-out "
                   f"text's length); got {args.block_size}")
    model, opt = build(args, corpus, ckpt)
    data_gen = ember.Generator().manual_seed(args.seed)
    if ckpt is None:
        steps = args.steps or DEFAULT_STEPS
        total = None if args.time_budget else steps
        if args.eval_interval is None:
            args.eval_interval = max(1, steps // 5) if total else 100
        return corpus, model, opt, RunState(0, total, data_gen)
    ember.set_rng_state(ckpt["rng"])
    data_gen.set_state(ckpt["data_rng"])
    step, total = ckpt["step"], ckpt["total"]
    if args.steps is not None:
        total = step + args.steps
    elif args.time_budget is not None:
        total = None
    hist = ckpt["history"]
    if args.eval_only:
        print(f"evaluating {args.resume} (step {step})")
    else:
        print(f"resuming {args.resume} at step {step}" + (f" of {total}" if total else ""))
    return corpus, model, opt, RunState(step, total, data_gen, list(hist["train"]),
                                        [list(v) for v in hist["val"]])


def run(args: argparse.Namespace) -> dict:
    """Train (unless ``--eval-only``), save, check the saved copy, evaluate and sample."""
    corpus, model, opt, st = prepare(args)
    configure_checkpointing(args, model, corpus)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"corpus: {len(corpus.train) + len(corpus.val):,} characters of pydoc_data.topics, "
          f"vocabulary {len(corpus.chars)}; model: {model.cfg.n_layer} layers, "
          f"{model.cfg.n_head} heads, d_model {model.cfg.n_embd}, context "
          f"{model.cfg.block_size}, {n_params:,} parameters")
    unigram = corpus.unigram_loss()
    print(UNIGRAM_NOTE.format(unigram) + f"; uniform guessing scores "
          f"{math.log(len(corpus.chars)):.3f}")
    summary = {"unigram": unigram, "train": [], "val": []}
    if args.eval_only:
        if args.resume is None:
            print(f"--eval-only without --resume: evaluating an untrained model (seed "
                  f"{args.seed}); pass --resume PATH to evaluate a checkpoint, such as the "
                  f"one training writes to {args.out}")
    else:
        first = st.step
        with StopOnInterrupt() as stop:
            train(args, model, opt, corpus, st, stop)
            if stop.requested:
                interrupted(args, model, opt, corpus, st)
        summary.update(train=st.train[first:], val=[v for v in st.val if v[0] > first])
        save_checkpoint(args.out, model, opt, corpus, args, st)
    summary["history"] = {"train": st.train, "val": st.val}
    last = st.val[-1] if st.val and not args.eval_only else (None, None)
    val = last[1] if last[0] == st.step else evaluate(model, corpus.val, args.batch_size,
                                                      args.eval_iters)
    summary.update(final_val=val, step=st.step, model=model)
    if not args.eval_only:
        summary.update(check_saved_copy(args, corpus, val))
    if args.memory_report:
        print(ember.memory.memory_summary())
    print(f"held-out loss: {val:.4f} (a model that ignores context: {unigram:.3f})")
    text = sample(model, corpus, args.sample_chars, args.temperature, args.seed)
    summary["sample"] = text
    print("sample (temperature {:g}):\n{}\n{}\n{}".format(args.temperature, "-" * 60, text,
                                                          "-" * 60))
    return summary


def interrupted(args, model: GPT, opt, corpus: CharCorpus, st: RunState) -> None:
    """Ctrl-C: save the last finished step, say how to go on, exit 130 as a shell does."""
    save_checkpoint(args.out, model, opt, corpus, args, st)
    again = f"{PROG} --resume {args.out}"
    if os.path.abspath(args.out) != os.path.abspath(default_out()):
        again += f" --out {args.out}"
    of = f" of {st.total}" if st.total else ""
    print(f"\ninterrupted at step {st.step}{of}; checkpoint saved to {args.out}", flush=True)
    print(f"resume with: {again}", flush=True)
    raise SystemExit(130)


def check_saved_copy(args, corpus: CharCorpus, val: float) -> dict:
    """Load the checkpoint just written into a fresh model: the held-out loss must not move."""
    if _DDP["rank"]:
        return {}
    ckpt = ember.load(args.out)
    fresh = GPT(GPTConfig(**ckpt["config"]))
    fresh.load_state_dict(ckpt["model"])
    again = evaluate(fresh, corpus.val, args.batch_size, args.eval_iters)
    if again != val:
        raise RuntimeError(f"charlm: reloaded checkpoint gives held-out loss {again}, "
                           f"expected {val}")
    print(f"checkpoint: step {ckpt['step']} saved to {args.out} "
          f"({os.path.getsize(args.out) / MB:.1f} MB); reloaded, it gives the same held-out "
          f"loss")
    return {"checkpoint": args.out, "reloaded_val": again, "reloaded": fresh}


if __name__ == "__main__":
    sys.exit(cli())
