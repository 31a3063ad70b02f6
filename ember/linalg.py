"""``ember.linalg``: the ``torch.linalg`` namespace (re-exports only; ops live in ember.ops).

``vector_norm`` and ``matrix_norm`` belong to the reduction family and are looked up lazily
on first access, so this module imports nothing beyond ``ember.ops.linalg`` and cannot form
an import cycle with ``ember/__init__.py``.
"""

from __future__ import annotations

from ember.ops.linalg import LinAlgError, matmul
from ember.ops.linalg import linalg_cholesky as cholesky
from ember.ops.linalg import linalg_det as det
from ember.ops.linalg import linalg_eig as eig
from ember.ops.linalg import linalg_eigh as eigh
from ember.ops.linalg import linalg_eigvals as eigvals
from ember.ops.linalg import linalg_eigvalsh as eigvalsh
from ember.ops.linalg import linalg_householder_product as householder_product
from ember.ops.linalg import linalg_inv as inv
from ember.ops.linalg import linalg_matrix_power as matrix_power
from ember.ops.linalg import linalg_matrix_rank as matrix_rank
from ember.ops.linalg import linalg_pinv as pinv
from ember.ops.linalg import linalg_qr as qr
from ember.ops.linalg import linalg_slogdet as slogdet
from ember.ops.linalg import linalg_solve as solve
from ember.ops.linalg import linalg_svd as svd
from ember.ops.linalg import linalg_svdvals as svdvals
from ember.ops.linalg_composites import linalg_cholesky_ex as cholesky_ex
from ember.ops.linalg_composites import linalg_cond as cond
from ember.ops.linalg_composites import linalg_cross as cross
from ember.ops.linalg_composites import linalg_diagonal as diagonal
from ember.ops.linalg_composites import linalg_inv_ex as inv_ex
from ember.ops.linalg_composites import linalg_matrix_exp as matrix_exp
from ember.ops.linalg_composites import linalg_multi_dot as multi_dot
from ember.ops.linalg_composites import linalg_norm as norm
from ember.ops.linalg_composites import linalg_solve_ex as solve_ex
from ember.ops.linalg_composites import linalg_solve_triangular as solve_triangular
from ember.ops.linalg_composites import linalg_tensorinv as tensorinv
from ember.ops.linalg_composites import linalg_tensorsolve as tensorsolve
from ember.ops.linalg_composites import linalg_vander as vander
from ember.ops.linalg_composites import linalg_vecdot as vecdot
from ember.ops.linalg_factor import linalg_ldl_factor as ldl_factor
from ember.ops.linalg_factor import linalg_ldl_factor_ex as ldl_factor_ex
from ember.ops.linalg_factor import linalg_ldl_solve as ldl_solve
from ember.ops.linalg_factor import linalg_lstsq as lstsq
from ember.ops.linalg_factor import linalg_lu as lu
from ember.ops.linalg_factor import linalg_lu_factor as lu_factor
from ember.ops.linalg_factor import linalg_lu_factor_ex as lu_factor_ex
from ember.ops.linalg_factor import linalg_lu_solve as lu_solve

# vector_norm and matrix_norm are left out of __all__: a star-import must not depend on them.
__all__ = ["LinAlgError", "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul",
           "matrix_power", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
           "cross", "diagonal", "multi_dot", "norm", "tensorinv", "tensorsolve", "vander",
           "vecdot", "cholesky_ex", "inv_ex", "matrix_exp", "solve_ex", "solve_triangular",
           "cond", "householder_product", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "lstsq", "ldl_factor", "ldl_factor_ex", "ldl_solve"]

# name here -> name in ember.ops.reduction (defined by the reduction family)
_LAZY = {"vector_norm": "linalg_vector_norm", "matrix_norm": "linalg_matrix_norm"}


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'ember.linalg' has no attribute '{name}'")
    from ember.ops import reduction

    try:
        fn = getattr(reduction, target)
    except AttributeError:
        raise AttributeError(f"ember.linalg.{name} is not available: ember.ops.reduction "
                             f"defines no {target}") from None
    globals()[name] = fn
    return fn


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
