"""LeNet-5 (LeCun et al. 1998) with modern defaults: conv5x5(6) -> pool -> conv5x5(16) ->
pool -> 120 -> 84 -> classes. 28x28 inputs (MNIST) are padded by 2 to the original 32x32;
``activation`` relu (default) or tanh, ``pool`` max (default) or avg."""

from __future__ import annotations

from dataclasses import dataclass

import shardflow.nn as nn

from ._common import conv_flops, count_parameters, linear_flops, scale

__all__ = ["LeNetConfig", "LeNet5"]


@dataclass
class LeNetConfig:
    in_channels: int = 1
    num_classes: int = 10
    image_size: int = 28
    activation: str = "relu"
    pool: str = "max"

    def __post_init__(self):
        if self.image_size not in (28, 32):
            raise ValueError(f"LeNetConfig.image_size must be 28 or 32, got {self.image_size}")
        if self.activation not in ("relu", "tanh") or self.pool not in ("max", "avg"):
            raise ValueError("LeNetConfig.activation is relu|tanh and pool is max|avg")


class LeNet5(nn.Module):
    def __init__(self, config: LeNetConfig | None = None, **kwargs):
        super().__init__()
        self.config = c = config or LeNetConfig(**kwargs)
        act = nn.ReLU if c.activation == "relu" else nn.Tanh
        pool = nn.MaxPool2d if c.pool == "max" else nn.AvgPool2d
        pad = 2 if c.image_size == 28 else 0
        self.features = nn.Sequential(
            nn.Conv2d(c.in_channels, 6, 5, padding=pad), act(), pool(2),  # (B, 6, 14, 14)
            nn.Conv2d(6, 16, 5), act(), pool(2),  # (B, 16, 5, 5)
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), act(), nn.Linear(120, 84), act(),
            nn.Linear(84, c.num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))

    def num_parameters(self) -> int:
        return count_parameters(self)

    def flops_per_sample(self, training: bool = False) -> int:
        c = self.config
        f = conv_flops(c.in_channels, 6, 5, 28, 28) + conv_flops(6, 16, 5, 10, 10)
        f += linear_flops(400, 120) + linear_flops(120, 84) + linear_flops(84, c.num_classes)
        return scale(f, training)
