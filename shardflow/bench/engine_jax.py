"""The JAX peer of ``shardflow bench engine``: the three CPU workloads as one ``jax.jit`` train
step each (forward, backward and optimizer update in one XLA program).

Same model, same start: the forward functions below are the JAX spelling of
``bench/workloads.py``'s PyTorch definitions (same shapes, layouts and op order: ``Linear``
weights ``(out, in)``, NCHW/OIHW convolutions, pre-LN GPT blocks with causal attention,
tanh-GELU and the LM head tied to the token embedding), and ``make_step`` starts from the
PyTorch model's initial ``state_dict``, so every column of the benchmark trains the same
weights on the same batch. The optimizers are written out with PyTorch's update rules:
``SGD(lr=0.01, momentum=0.9)`` (``buf = 0.9 buf + g; p -= lr buf``) for MLP and CNN,
``AdamW(lr=3e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)`` (decoupled decay, bias
correction) for GPT-mini. ``params`` and optimizer state are donated to the step, so XLA
updates them in place as PyTorch's optimizers do.

``jax`` is optional (the ``bench`` extra, ``pip install 'shardflow[bench]'``): ``available()``
says whether it imports; the engine benchmark then leaves this column out with that reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

NAME = "jax.jit"


def available() -> tuple[bool, str]:
    """(True, version) when jax imports, else (False, why and how to install it)."""
    try:
        import jax
    except ImportError as e:
        return False, f"jax is not installed ({e}); pip install 'shardflow[bench]'"
    return True, jax.__version__


# ---------------------------------------------------------------- forwards (params: dict)
def _linear(p, prefix, x, bias=True):
    y = x @ p[prefix + ".weight"].T  # weight (out, in), as torch.nn.Linear
    return y + p[prefix + ".bias"] if bias else y


def _cross_entropy(jnp, jax, logits, y):
    """Mean negative log-likelihood of integer targets y over the rows of logits (N, K)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def _mlp_loss(jnp, jax, p, x, y):  # x (B, 784), y (B,)
    h = jax.nn.relu(_linear(p, "0", x))
    h = jax.nn.relu(_linear(p, "2", h))
    return _cross_entropy(jnp, jax, _linear(p, "4", h), y)


def _cnn_loss(jnp, jax, p, x, y):  # x (B, 3, 32, 32), y (B,)
    def conv(prefix, h):  # 3x3, stride 1, padding 1, NCHW activations, OIHW weights
        out = jax.lax.conv_general_dilated(h, p[prefix + ".weight"], (1, 1), ((1, 1), (1, 1)),
                                           dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + p[prefix + ".bias"][None, :, None, None]

    def pool(h):  # MaxPool2d(2)
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    h = pool(jax.nn.relu(conv("0", x)))  # (B, 32, 16, 16)
    h = pool(jax.nn.relu(conv("3", h)))  # (B, 64, 8, 8)
    h = h.reshape(h.shape[0], -1)  # (B, 4096), torch.nn.Flatten's C-major order
    h = jax.nn.relu(_linear(p, "7", h))
    return _cross_entropy(jnp, jax, _linear(p, "9", h), y)


def _layer_norm(jnp, p, prefix, x, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)  # biased, as torch
    return (x - mu) / jnp.sqrt(var + eps) * p[prefix + ".weight"] + p[prefix + ".bias"]


def gpt_loss(n_layer: int, n_head: int):
    """GPT-mini's loss for ``n_layer`` blocks of ``n_head`` heads (the other sizes come from
    the parameters and the batch)."""

    def loss(jnp, jax, p, idx, y):  # idx (B, T) int, y (B, T) int
        B, T = idx.shape
        x = p["wte.weight"][idx] + p["wpe.weight"][:T]  # (B, T, C)
        C = x.shape[-1]
        hs = C // n_head
        causal = jnp.tril(jnp.ones((T, T), dtype=bool))
        for i in range(n_layer):
            b = f"h.{i}."
            qkv = _linear(p, b + "c_attn", _layer_norm(jnp, p, b + "ln_1", x))  # (B, T, 3C)
            q, k, v = (t.reshape(B, T, n_head, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
                       for t in jnp.split(qkv, 3, axis=-1))
            att = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
            att = jax.nn.softmax(jnp.where(causal, att, -jnp.inf), axis=-1)
            a = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)  # (B, T, C)
            x = x + _linear(p, b + "c_proj", a)
            h = jax.nn.gelu(_linear(p, b + "c_fc", _layer_norm(jnp, p, b + "ln_2", x)), approximate=True)
            x = x + _linear(p, b + "mlp_proj", h)
        logits = _layer_norm(jnp, p, "ln_f", x) @ p["wte.weight"].T  # tied head, (B, T, V)
        return _cross_entropy(jnp, jax, logits.reshape(B * T, -1), y.reshape(B * T))

    return loss


LOSSES: dict[str, Callable[..., Any]] = {
    "mlp": _mlp_loss, "cnn": _cnn_loss, "gpt": gpt_loss(n_layer=4, n_head=4),
    "gpt-l": gpt_loss(n_layer=12, n_head=12),
}
OPTIMIZERS = {"mlp": "sgd", "cnn": "sgd", "gpt": "adamw", "gpt-l": "adamw"}


# ---------------------------------------------------------------- optimizers (PyTorch's rules)
def _sgd_momentum(jax, params, grads, state, lr=0.01, momentum=0.9):
    bufs = jax.tree_util.tree_map(lambda b, g: momentum * b + g, state["buf"], grads)
    params = jax.tree_util.tree_map(lambda p, b: p - lr * b, params, bufs)
    return params, {"buf": bufs}


def _adamw(jnp, jax, params, grads, state, lr=3e-4, b1=0.9, b2=0.999, eps=1e-8, wd=0.1):
    t = state["t"] + 1
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t

    def update(p, m, v):
        p = p * (1 - lr * wd)  # decoupled weight decay first, as torch.optim.AdamW
        return p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps)

    return jax.tree_util.tree_map(update, params, m, v), {"t": t, "m": m, "v": v}


def _params_from_torch(jnp, state_dict) -> dict:
    """float32 jax arrays of the torch model's parameters; the tied LM head is not a key."""
    return {k: jnp.asarray(v.detach().cpu().numpy()) for k, v in state_dict.items()
            if k != "lm_head.weight"}


def make_step(key: str, torch_model, x: np.ndarray, y: np.ndarray) -> Callable[[], Any]:
    """A no-argument callable running one jitted train step of workload ``key`` (see
    ``make_train_step``)."""
    if key not in LOSSES:
        raise KeyError(f"no JAX version of workload {key!r}; have {', '.join(LOSSES)}")
    return make_train_step(LOSSES[key], OPTIMIZERS[key], torch_model, x, y)


def make_train_step(loss_fn, optimizer: str, torch_model, x: np.ndarray,
                    y: np.ndarray) -> Callable[[], Any]:
    """A no-argument callable running one jitted step ``loss_fn(jnp, jax, params, x, y)`` ->
    grads -> ``optimizer`` ('sgd' or 'adamw', PyTorch's rules and the workloads' settings);
    it starts from ``torch_model``'s current weights and returns the loss (a jax scalar,
    synchronised: the benchmark's clock must see the work, not its dispatch)."""
    import jax
    import jax.numpy as jnp

    if optimizer not in ("sgd", "adamw"):
        raise ValueError(f"optimizer must be 'sgd' or 'adamw', got {optimizer!r}")
    params = _params_from_torch(jnp, torch_model.state_dict())
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)
    if optimizer == "sgd":
        state = {"buf": zeros()}
    else:
        state = {"t": jnp.zeros((), jnp.float32), "m": zeros(), "v": zeros()}

    def train_step(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda p: loss_fn(jnp, jax, p, x, y))(params)
        if optimizer == "sgd":
            params, state = _sgd_momentum(jax, params, grads, state)
        else:
            params, state = _adamw(jnp, jax, params, grads, state)
        return params, state, loss

    jitted = jax.jit(train_step, donate_argnums=(0, 1))
    xs, ys = jnp.asarray(x), jnp.asarray(np.asarray(y).astype(np.int32))
    carry = {"params": params, "state": state}

    def step():
        carry["params"], carry["state"], loss = jitted(carry["params"], carry["state"], xs, ys)
        return loss.block_until_ready()

    return step
