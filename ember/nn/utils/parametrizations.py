"""Ready-made parametrizations (``torch.nn.utils.parametrizations``): ``orthogonal``,
``weight_norm`` and ``spectral_norm``, each registered through ``parametrize``.

The parametrization modules keep torch's attribute and buffer names (``base``, ``_u``, ``_v``), so a
parametrized torch module's state_dict loads into ember's and back.
"""

from __future__ import annotations

from ember.autograd.grad_mode import no_grad
from ember.core.dtype import finfo
from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize
from ember.nn.utils.spectral_norm import _default_spectral_dim
from ember.nn.utils.weight_norm import _norm_except_dim, _weight_norm
from ember.ops.creation import eye, zeros_like
from ember.ops.linalg import (
    geqrf,
    linalg_householder_product,
    linalg_qr,
    linalg_solve,
    matrix_exp,
    mv,
    vdot,
)
from ember.ops.pointwise import allclose, where
from ember.ops.random import randn
from ember.ops.shape import cat
from ember.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


# -- orthogonal --------------------------------------------------------------------------------
def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2:]
    eps = 10.0 * n * finfo(Q.dtype).eps
    return allclose(Q.mH @ Q, eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q factor of the tall ``A = QR`` normalised so that ``diag(R) >= 0`` (unique)."""
    Q, R = linalg_qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """Maps an unconstrained matrix to an orthogonal one (NOTE [Orthogonal maps]).

    NOTE [Orthogonal maps]
    A tall ``n x k`` input (a wide one is transposed first) becomes orthogonal columns by one of
    three maps: ``matrix_exp``/``cayley`` take the lower triangle, pad it to ``n x n``, make it
    skew-symmetric ``A = X - X^T`` and return the first ``k`` columns of ``exp(A)`` or of
    ``(I - A/2)^{-1} (I + A/2)``; ``householder`` reads the strictly lower triangle as reflectors
    and the diagonal's signs (cast to int, never differentiated) as a final column flip. With
    ``use_trivialization`` the result is multiplied by the buffer ``base``, an orthogonal matrix
    set by ``right_inverse``, so assigning any matrix works and optimisation starts at
    ``original = -I``, which every map sends to the identity.
    """

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map == "householder":
            A = X.tril(-1)  # (*, n, k): the reflectors
            tau = 2.0 / (1.0 + (A * A).sum(-2))  # (*, k)
            Q = linalg_householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            Q = self._skew_map(X.tril(), n, k)
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _skew_map(self, X: Tensor, n: int, k: int) -> Tensor:
        if n != k:  # (*, n, k) -> (*, n, n)
            X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], -1)
        A = X - X.mH  # skew-symmetric
        if self.orthogonal_map == "matrix_exp":
            Q = matrix_exp(A)
        else:
            Id = eye(n, dtype=A.dtype, device=A.device)
            Q = linalg_solve(Id - 0.5 * A, Id + 0.5 * A)
        return Q[..., :k] if n != k else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2:]
        transpose = n < k
        if transpose:
            Q, n, k = Q.mT, k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            A = self._householder_inverse(Q)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete the columns to a square orthogonal matrix
            extra = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, extra], -1))
        self.base = Q
        neg_id = zeros_like(Q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id

    @staticmethod
    def _householder_inverse(Q: Tensor) -> Tensor:
        """Reflectors whose ``householder`` map is ``Q``'s QR factor with ``diag(R) > 0``.

        The diagonal holds R's signs; where LAPACK chose no reflection (tau 0) the sign is
        flipped, because the forward map always reflects (its tau is never 0).
        """
        A, tau = geqrf(Q)
        signs = A.diagonal(dim1=-2, dim2=-1).sign()
        A.diagonal(dim1=-2, dim2=-1).copy_(where(tau == 0.0, -signs, signs))
        return A


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to orthogonal matrices
    (``torch.nn.utils.parametrizations.orthogonal``); a wide matrix gets orthonormal rows.

    Args:
        module: the module owning the tensor.
        name: the parameter or buffer to constrain.
        orthogonal_map: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; by default
            ``matrix_exp`` for square matrices and ``householder`` otherwise.
        use_trivialization: multiply by a stored orthogonal ``base`` (NOTE [Orthogonal maps]);
            without it, only ``householder`` can be assigned to.

    Returns:
        ``module``, parametrized.

    Raises:
        ValueError: no such tensor, fewer than 2 dimensions, or an unknown map.

    Example:
        >>> import ember
        >>> m = ember.nn.utils.parametrizations.orthogonal(ember.nn.Linear(3, 3))
        >>> bool(ember.allclose(m.weight @ m.weight.mT, ember.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# -- weight norm -------------------------------------------------------------------------------
class _WeightNorm(Module):
    """``w = g * v / ||v||``, the norm taken over every dim but ``dim`` (all dims for -1)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as magnitude times direction
    (``torch.nn.utils.parametrizations.weight_norm``).

    The originals are ``parametrizations.<name>.original0`` (the magnitude ``g``, the norm of
    ``w`` over every dim except ``dim``, keeping dims) and ``original1`` (the direction ``v``,
    initially ``w``). ``dim=None`` (or -1) takes one norm over the whole tensor. A state_dict
    saved with the legacy ``<name>_g``/``<name>_v`` keys still loads.

    Returns:
        ``module``, parametrized.

    Example:
        >>> import ember
        >>> m = ember.nn.utils.parametrizations.weight_norm(ember.nn.Linear(3, 2))
        >>> m.parametrizations.weight.original0.shape
        ember.Size([2, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def legacy_keys(mod, state_dict, prefix, *rest) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(legacy_keys)
    return module


# -- spectral norm -----------------------------------------------------------------------------
class _SpectralNorm(Module):
    """``w / sigma(w)``: ``sigma`` by power iteration on ``w`` reshaped to a matrix with ``dim``
    first; the singular-vector estimates ``_u``, ``_v`` are buffers refined in training only."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:  # a vector is normalised exactly, with nothing to estimate
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)  # start from a reasonable estimate

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)  # (out, rest)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mv(weight_mat.H, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: the in-place updates of the next call must not touch this call's graph
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration
    (``torch.nn.utils.parametrizations.spectral_norm``).

    Each forward in training mode runs ``n_power_iterations`` steps that update the buffers
    ``parametrizations.<name>.0._u`` and ``._v``; in eval mode the stored estimate is used.

    Args:
        module: the module owning the tensor.
        name: the parameter or buffer to normalise.
        n_power_iterations: power-iteration steps per training forward (15 at registration).
        eps: guards the vector normalisations.
        dim: the dimension of output features (default 1 for ConvTranspose, else 0).

    Returns:
        ``module``, parametrized.

    Raises:
        ValueError: no such tensor, or ``n_power_iterations <= 0``.
        IndexError: ``dim`` out of range.

    Example:
        >>> import ember
        >>> m = ember.nn.utils.parametrizations.spectral_norm(ember.nn.Linear(4, 3))
        >>> sorted(m.parametrizations.weight[0]._buffers)
        ['_u', '_v']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = _default_spectral_dim(module)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
