"""ember.optim: optimizers and learning-rate schedulers with ``torch.optim``'s API.

Parameters are plain leaf tensors (``ember.nn.Parameter`` is one); this package never imports
``ember.nn``.
"""

from ember.optim import lr_scheduler as lr_scheduler
from ember.optim.adadelta import Adadelta
from ember.optim.adafactor import Adafactor
from ember.optim.adagrad import Adagrad
from ember.optim.adam import Adam, AdamW
from ember.optim.adamax import Adamax
from ember.optim.asgd import ASGD
from ember.optim.lbfgs import LBFGS
from ember.optim.nadam import NAdam
from ember.optim.optimizer import Optimizer
from ember.optim.radam import RAdam
from ember.optim.rmsprop import RMSprop
from ember.optim.rprop import Rprop
from ember.optim.sgd import SGD

__all__ = ["ASGD", "LBFGS", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax",
           "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "lr_scheduler"]
