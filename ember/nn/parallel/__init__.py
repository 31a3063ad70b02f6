"""``ember.nn.parallel`` (``torch.nn.parallel``): ``DistributedDataParallel`` and ``DataParallel``.

DDP reduces gradients through ``ember.distributed``'s collectives, which it reaches at run
time (NOTE [DDP and the layers] in distributed.py).
"""

from ember.nn.parallel.data_parallel import DataParallel
from ember.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
