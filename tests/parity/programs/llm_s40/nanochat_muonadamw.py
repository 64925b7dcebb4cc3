# ruff: noqa: E501, F401, I001, E731, E741  (the program's own style, kept)
"""
karpathy/nanochat (MIT licence), ``nanochat/optim.py`` of 2026: ``MuonAdamW`` with its two
step kernels, ``adamw_step_fused`` (the arithmetic in float32 for a bfloat16 parameter,
0-D CPU tensors for the hyperparameters filled by ``fill_``, ``lerp_`` with a 0-D tensor
weight, ``beta ** step`` of 0-D tensors, ``add_(..., alpha=-step_size)`` with a 0-D tensor
``alpha``, ``copy_`` back) and ``muon_step_fused`` (parameters of one shape stacked by
``torch.stack``, Nesterov momentum by ``lerp_``, MuonEq row equilibration, Polar Express
orthogonalisation in bfloat16 for tall and wide matrices through ``mT``, Muon+
renormalisation, NorMuon's factored second moment with ``rsqrt`` / ``clamp_min``, cautious
weight decay with a boolean mask, ``torch._foreach_copy_`` over ``unbind(0)``). Changed: the
``@torch.compile(dynamic=False, fullgraph=True)`` decorators left out (as the other
programs here), ``COMPUTE_DTYPE`` bfloat16, a small two-layer model with a bfloat16
embedding (as nanochat stores ``wte``) instead of the GPT, random data.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

COMPUTE_DTYPE = torch.bfloat16


def adamw_step_fused(p: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor, step_t: Tensor, lr_t: Tensor,
                     beta1_t: Tensor, beta2_t: Tensor, eps_t: Tensor, wd_t: Tensor) -> None:
    p32 = p.float()
    exp_avg32 = exp_avg.float()
    exp_avg_sq32 = exp_avg_sq.float()
    grad32 = grad.float()
    p32.mul_(1 - lr_t * wd_t)
    exp_avg32.lerp_(grad32, 1 - beta1_t)
    exp_avg_sq32.lerp_(grad32.square(), 1 - beta2_t)
    bias1 = 1 - beta1_t ** step_t
    bias2 = 1 - beta2_t ** step_t
    denom = (exp_avg_sq32 / bias2).sqrt() + eps_t
    step_size = lr_t / bias1
    p32.add_(exp_avg32 / denom, alpha=-step_size)
    p.copy_(p32)
    exp_avg.copy_(exp_avg32)
    exp_avg_sq.copy_(exp_avg_sq32)


polar_express_coeffs = [
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
]


def muon_step_fused(stacked_grads: Tensor, stacked_params: Tensor, momentum_buffer: Tensor, second_momentum_buffer: Tensor,
                    momentum_t: Tensor, lr_t: Tensor, wd_t: Tensor, beta2_t: Tensor, ns_steps: int, red_dim: int) -> None:
    momentum = momentum_t.to(stacked_grads.dtype)
    momentum_buffer.lerp_(stacked_grads, 1 - momentum)
    g = stacked_grads.lerp_(momentum_buffer, momentum)
    X = g.bfloat16() if COMPUTE_DTYPE == torch.bfloat16 else g
    target = X.float().norm(dim=(-2, -1), keepdim=True) / (X.size(-2) ** 0.5)
    row_norm = X.float().norm(dim=-1, keepdim=True).clamp_min(1e-6)
    X = X * (target / row_norm).to(X.dtype)
    X = X / (X.norm(dim=(-2, -1), keepdim=True) * 1.01 + 1e-6)
    if g.size(-2) > g.size(-1):  # Tall matrix
        for a, b, c in polar_express_coeffs[:ns_steps]:
            A = X.mT @ X
            B = b * A + c * (A @ A)
            X = a * X + X @ B
    else:  # Wide matrix (original math)
        for a, b, c in polar_express_coeffs[:ns_steps]:
            A = X @ X.mT
            B = b * A + c * (A @ A)
            X = a * X + B @ X
    g = X.to(stacked_params.dtype)
    target_norm = min(g.size(-2), g.size(-1)) ** 0.5
    current_norm = g.float().norm(dim=(-2, -1), keepdim=True).clamp_min(1e-6)
    g = g * (target_norm / current_norm).to(g.dtype)
    beta2 = beta2_t.to(g.dtype)
    v_mean = g.float().square().mean(dim=red_dim, keepdim=True)
    red_dim_size = g.size(red_dim)
    v_norm_sq = v_mean.sum(dim=(-2, -1), keepdim=True) * red_dim_size
    v_norm = v_norm_sq.sqrt()
    second_momentum_buffer.lerp_(v_mean.to(dtype=second_momentum_buffer.dtype), 1 - beta2)
    step_size = second_momentum_buffer.clamp_min(1e-10).rsqrt()
    scaled_sq_sum = (v_mean * red_dim_size) * step_size.float().square()
    v_norm_new = scaled_sq_sum.sum(dim=(-2, -1), keepdim=True).sqrt()
    final_scale = step_size * (v_norm / v_norm_new.clamp_min(1e-10))
    g = g * final_scale.to(g.dtype)
    lr = lr_t.to(g.dtype)
    wd = wd_t.to(g.dtype)
    mask = (g * stacked_params) >= 0
    stacked_params.sub_(lr * g + lr * wd * stacked_params * mask)


class MuonAdamW(torch.optim.Optimizer):
    def __init__(self, param_groups: list[dict]):
        super().__init__(param_groups, defaults={})
        self._adamw_step_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._adamw_lr_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._adamw_beta1_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._adamw_beta2_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._adamw_eps_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._adamw_wd_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._muon_momentum_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._muon_lr_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._muon_wd_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")
        self._muon_beta2_t = torch.tensor(0.0, dtype=torch.float32, device="cpu")

    def _step_adamw(self, group: dict) -> None:
        for p in group['params']:
            if p.grad is None:
                continue
            grad = p.grad
            state = self.state[p]
            if not state:
                state['step'] = 0
                state['exp_avg'] = torch.zeros_like(p)
                state['exp_avg_sq'] = torch.zeros_like(p)
            exp_avg = state['exp_avg']
            exp_avg_sq = state['exp_avg_sq']
            state['step'] += 1
            self._adamw_step_t.fill_(state['step'])
            self._adamw_lr_t.fill_(group['lr'])
            self._adamw_beta1_t.fill_(group['betas'][0])
            self._adamw_beta2_t.fill_(group['betas'][1])
            self._adamw_eps_t.fill_(group['eps'])
            self._adamw_wd_t.fill_(group['weight_decay'])
            adamw_step_fused(p, grad, exp_avg, exp_avg_sq, self._adamw_step_t, self._adamw_lr_t, self._adamw_beta1_t,
                             self._adamw_beta2_t, self._adamw_eps_t, self._adamw_wd_t)

    def _step_muon(self, group: dict) -> None:
        params: list[Tensor] = group['params']
        if not params:
            return
        p = params[0]
        state = self.state[p]
        num_params = len(params)
        shape, device, dtype = p.shape, p.device, p.dtype
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = torch.zeros(num_params, *shape, dtype=dtype, device=device)
        momentum_buffer = state["momentum_buffer"]
        if "second_momentum_buffer" not in state:
            if shape[-2] >= shape[-1]:
                state_shape = (num_params, *shape[:-1], 1)
            else:
                state_shape = (num_params, *shape[:-2], 1, shape[-1])
            state["second_momentum_buffer"] = torch.zeros(state_shape, dtype=dtype, device=device)
        second_momentum_buffer = state["second_momentum_buffer"]
        red_dim = -1 if shape[-2] >= shape[-1] else -2
        stacked_grads = torch.stack([p.grad for p in params])
        stacked_params = torch.stack(params)
        self._muon_momentum_t.fill_(group["momentum"])
        self._muon_beta2_t.fill_(group["beta2"] if group["beta2"] is not None else 0.0)
        self._muon_lr_t.fill_(group["lr"] * max(1.0, shape[-2] / shape[-1])**0.5)
        self._muon_wd_t.fill_(group["weight_decay"])
        muon_step_fused(stacked_grads, stacked_params, momentum_buffer, second_momentum_buffer, self._muon_momentum_t,
                        self._muon_lr_t, self._muon_wd_t, self._muon_beta2_t, group["ns_steps"], red_dim)
        torch._foreach_copy_(params, list(stacked_params.unbind(0)))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            if group['kind'] == 'adamw':
                self._step_adamw(group)
            elif group['kind'] == 'muon':
                self._step_muon(group)
            else:
                raise ValueError(f"Unknown optimizer kind: {group['kind']}")


class TinyLM(nn.Module):
    """(added) an embedding stored in bfloat16, square and tall/wide matrices, a head"""

    def __init__(self, vocab=40, d=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d).to(torch.bfloat16)
        self.fc = nn.ModuleList([nn.Linear(d, 4 * d, bias=False), nn.Linear(d, 4 * d, bias=False)])
        self.proj = nn.ModuleList([nn.Linear(4 * d, d, bias=False), nn.Linear(4 * d, d, bias=False)])
        self.sq = nn.ModuleList([nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)])
        self.head = nn.Linear(d, vocab, bias=False)
        self.scale = nn.Parameter(torch.ones(d))

    def forward(self, idx, targets):
        x = F.rms_norm(self.wte(idx).float(), (32,))
        for fc, proj, sq in zip(self.fc, self.proj, self.sq):
            x = x + proj(F.relu(fc(F.rms_norm(x, (32,)))).square())
            x = x + sq(F.rms_norm(x, (32,)))
        logits = self.head(F.rms_norm(x, (32,)) * self.scale)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyLM()
    groups = [
        dict(kind='adamw', params=[model.wte.weight], lr=0.2, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0),
        dict(kind='adamw', params=[model.head.weight, model.scale], lr=0.004, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.01),
    ]
    for shape in sorted({tuple(p.shape) for m in (model.fc, model.proj, model.sq) for p in m.parameters()}):
        ps = [p for m in (model.fc, model.proj, model.sq) for p in m.parameters() if tuple(p.shape) == shape]
        groups.append(dict(kind='muon', params=ps, lr=0.02, momentum=0.95, ns_steps=5, beta2=0.95, weight_decay=0.1))
    opt = MuonAdamW(groups)
    print([(g['kind'], len(g['params'])) for g in opt.param_groups])
    data = torch.randint(0, 40, (4, 17))
    for step in range(5):
        loss = model(data[:, :-1], data[:, 1:])
        loss.backward()
        opt.step()
        model.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.6f}")
    print("wte", model.wte.weight.dtype, [round(v, 4) for v in model.wte.weight[3, :4].float().tolist()])
    print("fc", [round(v, 5) for v in model.fc[1].weight[0, :4].tolist()])
    st = opt.state[model.fc[0].weight]
    print("buffers", tuple(st["momentum_buffer"].shape), tuple(st["second_momentum_buffer"].shape),
          [round(v, 7) for v in st["second_momentum_buffer"].flatten()[:3].tolist()])
    print("adam step", opt.state[model.head.weight]['step'], opt._adamw_step_t.item())
