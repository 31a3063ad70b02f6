"""``DataParallel`` on a machine without accelerators: the module itself.

torch's ``DataParallel`` replicates a module over the GPUs of one process; with no accelerator
it keeps ``device_ids`` empty and ``forward`` calls the module unchanged. ember has no
accelerator backend yet, so that is all of it here.
"""

from __future__ import annotations

from ember.nn.modules.module import Module

__all__ = ["DataParallel"]


class DataParallel(Module):
    """Single-process data parallelism over accelerators (``torch.nn.DataParallel``).

    Without an accelerator (ember today) ``device_ids`` is empty and ``forward`` runs
    ``module`` as it is, as torch does on a CPU-only machine.

    Example:
        >>> import ember
        >>> dp = ember.nn.DataParallel(ember.nn.Linear(2, 3))
        >>> dp(ember.ones(4, 2)).shape, dp.device_ids
        (ember.Size([4, 3]), [])
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module (no accelerator to scatter to)."""
        return self.module(*inputs, **kwargs)
