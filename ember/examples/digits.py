"""A small CNN on scikit-learn's bundled 8x8 digits: ``python -m ember.examples.digits``.

1,797 grey-scale 8x8 images of handwritten digits ship inside scikit-learn (no download). A
two-convolution network with BatchNorm, ReLU, max pooling and Dropout is trained with Adam,
then train and test accuracy are reported. The run ends by showing two different switches:
``model.eval()`` changes what the model computes (Dropout becomes the identity, BatchNorm uses
its running statistics instead of the batch's), while ``ember.no_grad()`` changes nothing in
the outputs, only whether a graph is recorded for backward.
"""

from __future__ import annotations

import argparse
import time

import ember
import ember.nn as nn
from ember.examples._common import limit_blas_threads
from ember.utils.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    """``(N, 1, 8, 8)`` images -> ``(N, 10)`` logits.

    Shape: conv 3x3 (pad 1) ``1 -> c``, BN, ReLU, max-pool 2 -> ``(N, c, 4, 4)``; conv 3x3
    ``c -> 2c``, BN, ReLU, max-pool 2 -> ``(N, 2c, 2, 2)``; flatten, Dropout, Linear -> 10.
    """

    def __init__(self, channels: int = 16, dropout: float = 0.25) -> None:
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            nn.Conv2d(1, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(dropout), nn.Linear(8 * c, 10))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.head(self.features(x))  # (N, 1, 8, 8) -> (N, 2c, 2, 2) -> (N, 10)


def load_digits(test_fraction: float = 0.25, seed: int = 0):
    """Images scaled to [0, 1] as ``(N, 1, 8, 8)`` float32 and labels, split train/test."""
    from sklearn.datasets import load_digits as sk_load
    d = sk_load()
    x = ember.tensor(d.images, dtype=ember.float32).unsqueeze(1) / 16.0  # (N, 8, 8) -> (N,1,8,8)
    y = ember.tensor(d.target, dtype=ember.int64)
    perm = ember.randperm(len(y), generator=ember.Generator().manual_seed(seed))
    n_test = int(len(y) * test_fraction)
    test, train = perm[:n_test], perm[n_test:]
    return (x[train], y[train]), (x[test], y[test])


@ember.no_grad()
def accuracy(model: nn.Module, x: ember.Tensor, y: ember.Tensor) -> float:
    """Fraction of correct argmax predictions, in eval mode."""
    was_training = model.training
    model.eval()
    acc = (model(x).argmax(1) == y).float().mean().item()
    model.train(was_training)
    return acc


def train(model: nn.Module, train_set, epochs: int, batch_size: int, lr: float,
          seed: int, log=print) -> list[float]:
    """Adam with cross-entropy; returns the mean training loss of each epoch."""
    loader = DataLoader(TensorDataset(*train_set), batch_size=batch_size, shuffle=True,
                        generator=ember.Generator().manual_seed(seed))
    opt = ember.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    model.train()
    for epoch in range(epochs):
        total, n = 0.0, 0
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, n = total + loss.item() * len(yb), n + len(yb)
        losses.append(total / n)
        log(f"epoch {epoch + 1:2d}: train loss {losses[-1]:.4f}")
    return losses


def mode_demo(model: nn.Module, x: ember.Tensor) -> dict:
    """Outputs in train mode vs eval mode, and with vs without ``no_grad``."""
    model.train()
    ember.manual_seed(0)
    train_out = model(x)
    ember.manual_seed(0)  # the same dropout mask, so only no_grad differs
    with ember.no_grad():
        train_nograd = model(x)
    model.eval()
    eval_out = model(x)
    with ember.no_grad():
        eval_nograd = model(x)
    return {
        "train_vs_eval": (train_out - eval_out).abs().max().item(),
        "eval_vs_eval_nograd": (eval_out - eval_nograd).abs().max().item(),
        "train_vs_train_nograd": (train_out - train_nograd).abs().max().item(),
        "eval_requires_grad": eval_out.requires_grad,
        "nograd_requires_grad": eval_nograd.requires_grad,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ember.examples.digits", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--channels", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="BLAS threads")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    """Train, report accuracy and the eval()/no_grad() comparison; returns the figures."""
    args = parse_args(argv)
    with limit_blas_threads(args.threads):
        return run(args)


def run(args: argparse.Namespace) -> dict:
    """The body of ``main`` under the BLAS thread limit."""
    log = (lambda s: None) if args.quiet else print
    ember.manual_seed(args.seed)
    train_set, test_set = load_digits(seed=args.seed)
    model = DigitsCNN(args.channels)
    log(f"digits: {len(train_set[1])} training and {len(test_set[1])} test images, 8x8")
    t0 = time.perf_counter()
    losses = train(model, train_set, args.epochs, args.batch_size, args.lr, args.seed, log)
    result = {"losses": losses, "train_acc": accuracy(model, *train_set),
              "test_acc": accuracy(model, *test_set), "seconds": time.perf_counter() - t0}
    log(f"accuracy: train {result['train_acc']:.2%}, test {result['test_acc']:.2%} "
        f"({result['seconds']:.1f} s)")
    result.update(mode_demo(model, test_set[0][:32]))
    log("model.eval() vs train mode, same inputs: max |difference| = "
        f"{result['train_vs_eval']:.4f} (Dropout off, BatchNorm uses running statistics)")
    log("ember.no_grad() vs grad mode, same mode: max |difference| = "
        f"{result['eval_vs_eval_nograd']:.4f} in eval, {result['train_vs_train_nograd']:.4f} "
        f"in train (same dropout seed); outputs require grad: {result['eval_requires_grad']} "
        f"with grad, {result['nograd_requires_grad']} under no_grad")
    return result


if __name__ == "__main__":
    main()
