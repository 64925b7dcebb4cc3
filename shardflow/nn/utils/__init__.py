"""``shardflow.nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` (packed
variable-length sequences), ``parametrize`` / ``parametrizations`` (weight norm, spectral
norm) and the legacy ``weight_norm`` / ``spectral_norm`` hooks."""

from . import parametrizations, parametrize, rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters",
           "parametrizations", "parametrize", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm"]
