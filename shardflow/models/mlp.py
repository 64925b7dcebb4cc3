"""MLP: flatten -> [Linear -> activation -> Dropout] x len(hidden) -> Linear."""

from __future__ import annotations

from dataclasses import dataclass, field

import shardflow.nn as nn

from ._common import count_parameters, linear_flops, scale

__all__ = ["MLPConfig", "MLP"]

_ACTS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "silu": nn.SiLU}


@dataclass
class MLPConfig:
    in_features: int = 784
    hidden: tuple = field(default_factory=lambda: (512, 256))
    num_classes: int = 10
    activation: str = "relu"
    dropout: float = 0.0

    def __post_init__(self):
        self.hidden = tuple(self.hidden)
        for v in (self.in_features, self.num_classes, *self.hidden):
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"MLPConfig sizes must be positive integers, got {v!r}")
        if self.activation not in _ACTS:
            raise ValueError(f"MLPConfig.activation must be one of {sorted(_ACTS)}, got {self.activation!r}")


class MLP(nn.Module):
    def __init__(self, config: MLPConfig | None = None, **kwargs):
        super().__init__()
        self.config = config = config or MLPConfig(**kwargs)
        layers, prev = [nn.Flatten()], config.in_features
        for h in config.hidden:
            layers += [nn.Linear(prev, h), _ACTS[config.activation]()]
            if config.dropout:
                layers.append(nn.Dropout(config.dropout))
            prev = h
        layers.append(nn.Linear(prev, config.num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)  # (B, num_classes)

    def num_parameters(self) -> int:
        return count_parameters(self)

    def flops_per_sample(self, training: bool = False) -> int:
        sizes = (self.config.in_features, *self.config.hidden, self.config.num_classes)
        return scale(sum(linear_flops(a, b) for a, b in zip(sizes, sizes[1:])), training)
