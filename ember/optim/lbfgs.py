"""L-BFGS (``torch.optim.LBFGS``): a limited-memory quasi-Newton method driven by a closure,
with a fixed step or the strong-Wolfe line search of ember/optim/_line_search.py.

All parameters are treated as one flat vector (gradients are gathered with ``reshape``, so
non-contiguous parameters work too). The optimizer's whole state lives under its first
parameter, with torch's keys: ``func_evals`` and ``n_iter`` (counts over all steps), the last
direction ``d`` and step length ``t``, the curvature pairs ``old_dirs`` (gradient changes) and
``old_stps`` (parameter changes) with ``ro`` (their inverse inner products) and ``al`` (the
two-loop coefficients), ``H_diag`` (the initial inverse-Hessian scale), ``prev_flat_grad`` and
``prev_loss``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.autograd.grad_mode import enable_grad, no_grad
from ember.ops.creation import zeros
from ember.ops.shape import cat
from ember.optim._line_search import strong_wolfe
from ember.optim.optimizer import Optimizer, check_lr, scalar
from ember.tensor import Tensor

__all__ = ["LBFGS"]

# What a step carries over to the next one, in the order torch writes it into the state.
_MEMORY = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _two_loop(g: Tensor, mem: dict[str, Any], al: list) -> Tensor:
    """``-H g``, where ``H`` is the inverse-Hessian estimate built from the stored pairs
    (the two-loop recursion, Nocedal & Wright algorithm 7.4); fills ``al`` on the way."""
    dirs, stps, ro = mem["old_dirs"], mem["old_stps"], mem["ro"]
    q = g.neg()
    for i in reversed(range(len(dirs))):
        al[i] = stps[i].dot(q) * ro[i]
        q.add_(dirs[i], alpha=-al[i].item())
    r = q.mul(mem["H_diag"])
    for i in range(len(dirs)):
        beta = dirs[i].dot(r) * ro[i]
        r.add_(stps[i], alpha=(al[i] - beta).item())
    return r


class LBFGS(Optimizer):
    """L-BFGS (``torch.optim.LBFGS``); ``step(closure)`` runs up to ``max_iter`` iterations.

    Each iteration: the first one ever moves along ``-g`` with ``t = min(1, 1 / |g|_1) * lr``;
    later ones first store the pair ``(y, s) = (g - g_prev, t * d)`` when ``y . s > 1e-10``
    (keeping the last ``history_size``) and move along the two-loop direction with ``t = lr``.
    With ``line_search_fn="strong_wolfe"`` the step length is searched for instead. The step
    stops early on a small gradient (``tolerance_grad``), a small change of the loss or the
    parameters (``tolerance_change``), or ``max_eval`` evaluations of the closure.

    Args:
        params: the tensors to optimize (one group only).
        lr: learning rate (default 1).
        max_iter: iterations per ``step`` (default 20).
        max_eval: closure evaluations per ``step`` (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when every gradient element is at most this (default 1e-7).
        tolerance_change: stop when the loss or parameters change less (default 1e-9).
        history_size: curvature pairs kept (default 100).
        line_search_fn: None or ``"strong_wolfe"``.

    Raises:
        ValueError: a negative lr, or more than one parameter group.
        RuntimeError (from ``step``): a ``line_search_fn`` other than ``"strong_wolfe"``.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.LBFGS([w])
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> loss = opt.step(closure); w
        tensor([3.], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the parameters as one flat vector --------------------------------------------------
    def _gather_flat_grad(self) -> Tensor:
        return cat([zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None
                    else p.grad.reshape(-1) for p in self._params], 0)

    def _add_grad(self, step: Any, update: Tensor) -> None:
        """``params += step * update`` (``update`` flat)."""
        offset, alpha = 0, scalar(step)
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view(p.shape), alpha=alpha)
            offset += n

    def _evaluator(self, closure: Callable, d: Tensor) -> Callable[[Any], tuple[float, Tensor]]:
        """``t -> (loss, flat gradient)`` at ``params + t * d``; the parameters are put back."""
        x0 = [p.clone() for p in self._params]

        def evaluate(t: Any) -> tuple[float, Tensor]:
            self._add_grad(t, d)
            loss = float(closure())
            flat_grad = self._gather_flat_grad()
            for p, x in zip(self._params, x0, strict=True):
                p.copy_(x)
            return loss, flat_grad

        return evaluate

    # -- one iteration's pieces ---------------------------------------------------------------
    def _new_direction(self, state: dict[str, Any], mem: dict[str, Any], g: Tensor) -> None:
        """Set ``mem["d"]``: ``-g`` on the very first iteration (which also clears the
        history), else the L-BFGS direction after storing the newest curvature pair."""
        if state["n_iter"] == 1:
            mem.update(d=g.neg(), old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return
        y = g.sub(mem["prev_flat_grad"])
        s = mem["d"].mul(mem["t"])
        ys = y.dot(s)
        if ys > 1e-10:  # keep only pairs that keep the estimate positive definite
            if len(mem["old_dirs"]) == self.param_groups[0]["history_size"]:
                for key in ("old_dirs", "old_stps", "ro"):
                    mem[key].pop(0)
            mem["old_dirs"].append(y)
            mem["old_stps"].append(s)
            mem["ro"].append(1.0 / ys)
            mem["H_diag"] = ys / y.dot(y)
        if "al" not in state:
            state["al"] = [None] * self.param_groups[0]["history_size"]
        mem["d"] = _two_loop(g, mem, state["al"])

    def _remember_gradient(self, mem: dict[str, Any], g: Tensor, loss: float) -> None:
        if mem["prev_flat_grad"] is None:
            mem["prev_flat_grad"] = g.clone()
        else:
            mem["prev_flat_grad"].copy_(g)
        mem["prev_loss"] = loss

    @no_grad()
    def step(self, closure: Callable[[], Any]) -> Any:
        """Run up to ``max_iter`` L-BFGS iterations; return the closure's first loss.

        ``closure`` clears the gradients, computes the loss, calls ``backward`` and returns
        the loss; it runs with gradients enabled, once per evaluation.
        """
        if len(self.param_groups) != 1:
            raise AssertionError(
                f"Expected exactly one param_group, but got {len(self.param_groups)}")
        closure = enable_grad()(closure)
        group = self.param_groups[0]
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss, evals = float(orig_loss), 1
        state["func_evals"] += 1
        g = self._gather_flat_grad()
        if g.abs().max() <= tol_grad:
            return orig_loss
        mem = {key: state.get(key) for key in _MEMORY}
        for n_iter in range(1, max_iter + 1):
            state["n_iter"] += 1
            self._new_direction(state, mem, g)
            self._remember_gradient(mem, g, loss)
            d = mem["d"]
            t = mem["t"] = (min(1.0, 1.0 / g.abs().sum()) * scalar(group["lr"])
                            if state["n_iter"] == 1 else scalar(group["lr"]))
            gtd = g.dot(d)
            if gtd > -tol_change:  # not a descent direction (any more)
                break
            loss, g, t, spent, done = self._move(closure, group, d, t, loss, g, gtd,
                                                 max_eval - evals, n_iter == max_iter)
            mem["t"] = t
            evals += spent
            state["func_evals"] += spent
            if n_iter == max_iter or evals >= max_eval or done:
                break
            if d.mul(t).abs().max() <= tol_change or abs(loss - mem["prev_loss"]) < tol_change:
                break
        state.update(mem)
        return orig_loss

    def _move(self, closure: Callable, group: dict[str, Any], d: Tensor, t: Any, loss: float,
              g: Tensor, gtd: Tensor, budget: int, last: bool) -> tuple:
        """Take the step along ``d``: ``(loss, flat gradient, t, evaluations, converged)``
        after it. Without a line search the closure is not re-run on the last iteration."""
        fn = group["line_search_fn"]
        if fn is not None:
            if fn != "strong_wolfe":
                raise RuntimeError("only 'strong_wolfe' is supported")
            loss, g, t, spent = strong_wolfe(self._evaluator(closure, d), t, d, loss, g, gtd,
                                             max_ls=budget)
            self._add_grad(t, d)
            return loss, g, t, spent, g.abs().max() <= group["tolerance_grad"]
        self._add_grad(t, d)
        if last:
            return loss, g, t, 0, False
        loss = float(closure())
        g = self._gather_flat_grad()
        return loss, g, t, 1, g.abs().max() <= group["tolerance_grad"]
