"""Legacy spectral normalisation by forward pre-hook (``torch.nn.utils.spectral_norm``).

The parameter ``<name>`` moves to ``<name>_orig``; buffers ``<name>_u`` and ``<name>_v`` hold the
power-iteration estimates of the leading singular vectors; a forward pre-hook sets the plain
attribute ``<name> = <name>_orig / sigma`` before every call, refining ``u``/``v`` in training
only. A state_dict hook records the format version in the metadata (torch's
``spectral_norm`` entry), and a load pre-hook converts version-0 state dicts (which stored
``<name>`` instead of ``<name>_v``). ``parametrizations.spectral_norm`` is the maintained form.
"""

from __future__ import annotations

from ember.autograd.grad_mode import no_grad
from ember.nn.functional import _core as F
from ember.nn.modules.conv import _ConvTranspose
from ember.nn.modules.module import Module
from ember.nn.parameter import is_lazy
from ember.ops.linalg import dot, linalg_pinv, matmul, mv
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["SpectralNorm", "SpectralNormStateDictHook", "SpectralNormLoadStateDictPreHook",
           "spectral_norm", "remove_spectral_norm"]


def _default_spectral_dim(module: Module) -> int:
    """1 for transposed convolutions (their output channels are dim 1), else 0."""
    return 1 if isinstance(module, _ConvTranspose) else 0


class SpectralNorm:
    """The forward pre-hook computing ``<name> = <name>_orig / sigma``."""

    _version: int = 1  # 1: ``<name>_v`` is saved; 0: ``<name>`` was saved instead

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as ``(size(dim), -1)``, ``dim`` moved first."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(mv(weight_mat, v), dim=0, eps=self.eps))
            # clones: the next call's in-place updates must not touch this call's graph
            u, v = u.clone(), v.clone()
        sigma = dot(u, mv(weight_mat, v))
        return weight / sigma

    def remove(self, module: Module) -> None:
        """Make ``<name>`` a Parameter holding the current normalised weight again."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name,
                self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat: Tensor, u: Tensor, target_sigma) -> Tensor:
        """A ``v`` with ``u = normalize(W v)`` and ``u^T W v = target_sigma`` (least squares).

        The pseudo-inverse cuts off at ``rtol=1e-15`` like torch's ``pinverse`` default, so a
        wide ``W`` (rank-deficient ``W^T W``) gives rounding-dominated results in both.
        """
        wt = weight_mat.t()
        gram_inv = linalg_pinv(matmul(wt, weight_mat), rtol=1e-15)
        v = matmul(matmul(gram_inv, wt), u.unsqueeze(1)).squeeze(1)
        return v.mul_(target_sigma / dot(u, mv(weight_mat, v)))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        """Move ``<name>`` to ``<name>_orig``, add ``u``/``v`` and install the hooks."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if is_lazy(weight):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # ``<name>`` stays readable (initialisers expect it) as a plain, unregistered attribute
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module.register_state_dict_post_hook(SpectralNormStateDictHook(fn))
        module.register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Converts a version-0 state dict (``<name>``, ``_orig``, ``_u``) to the current keys.

    Version 0 saved the normalised ``W = W_orig / sigma`` and ``u = normalize(W_orig v)``. With
    ``sigma = mean(W_orig / W)``, ``v`` is recovered by solving ``W_orig v ~ u`` and rescaling
    it so that ``u^T W_orig v = sigma``.
    """

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict, prefix: str, local_metadata: dict,
                 strict: bool, missing_keys: list, unexpected_keys: list,
                 error_msgs: list) -> None:
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        key = prefix + fn.name
        current = all(key + s in state_dict for s in ("_orig", "_u", "_v"))
        if version is None and current and key not in state_dict:
            return  # current keys without metadata (a hand-built state dict)
        missing = [key + s for s in ("_orig", "", "_u") if key + s not in state_dict]
        if missing:
            if strict:
                missing_keys.extend(missing)
            return
        with no_grad():
            weight_orig = state_dict[key + "_orig"]
            weight = state_dict.pop(key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            u = state_dict[key + "_u"]
            state_dict[key + "_v"] = fn._solve_v_and_rescale(weight_mat, u, sigma)


class SpectralNormStateDictHook:
    """Records ``spectral_norm[<name>.version]`` in the module's state_dict metadata."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: dict, prefix: str,
                 local_metadata: dict) -> None:
        entries = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in entries:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        entries[key] = self.fn._version


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Legacy spectral normalisation: ``<name> = <name>_orig / sigma`` recomputed by a forward
    pre-hook, with ``sigma`` by power iteration over the buffers ``<name>_u``, ``<name>_v``.

    Args:
        module: the module owning the parameter.
        name: the parameter to normalise.
        n_power_iterations: power-iteration steps per training forward.
        eps: guards the vector normalisations.
        dim: the dimension of output features (default 1 for ConvTranspose, else 0).

    Returns:
        ``module``.

    Raises:
        RuntimeError: ``name`` already has a spectral_norm hook.
        ValueError: ``n_power_iterations <= 0``.

    Example:
        >>> import ember
        >>> m = ember.nn.utils.spectral_norm(ember.nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if dim is None:
        dim = _default_spectral_dim(module)
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm` and drop its state_dict hooks.

    Raises:
        ValueError: ``module`` has no spectral_norm hook on ``name``.

    Example:
        >>> from ember.nn.utils import remove_spectral_norm, spectral_norm
        >>> m = spectral_norm(ember.nn.Linear(3, 3))
        >>> hasattr(m, "weight_orig"), hasattr(remove_spectral_norm(m), "weight_orig")
        (True, False)
    """
    hooks = module._forward_pre_hooks
    key = next((k for k, h in hooks.items()
                if isinstance(h, SpectralNorm) and h.name == name), None)
    if key is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hooks[key].remove(module)
    del hooks[key]
    for table, kind in ((module._state_dict_hooks, SpectralNormStateDictHook),
                        (module._load_state_dict_pre_hooks, SpectralNormLoadStateDictPreHook)):
        for k, h in list(table.items()):
            if isinstance(h, kind) and h.fn.name == name:
                del table[k]
                break
    return module
