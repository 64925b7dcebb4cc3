# ruff: noqa: E501, F401, I001  (the program's own style, kept)
"""
PyTorch's documentation, ``docs/source/optim.md`` "Weight Averaging (SWA and EMA)"
(BSD-3-Clause, as PyTorch): the SWA example (``AveragedModel``, ``SWALR`` after a
``CosineAnnealingLR``, ``update_bn``) and the EMA example (``get_ema_multi_avg_fn``,
``use_buffers=True``), and the custom averaging function of the same section. Filled in
where the docs write ``...``: a small BatchNorm MLP, a synthetic regression loader, SGD, 12
epochs with ``swa_start = 6`` (the docs: 300 and 160).
"""
import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, SWALR, get_ema_multi_avg_fn, update_bn
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(64, 4)
Y = X @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(64, 1)
loader = DataLoader(TensorDataset(X, Y), batch_size=16, shuffle=True)
test_input = torch.randn(5, 4)
loss_fn = nn.MSELoss()


def make_model():
    return nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))


model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

# SWA
swa_model = torch.optim.swa_utils.AveragedModel(model)
scheduler = CosineAnnealingLR(optimizer, T_max=12)
swa_start = 6
swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=3, anneal_strategy="cos")

for epoch in range(12):
    for input, target in loader:
        optimizer.zero_grad()
        loss_fn(model(input), target).backward()
        optimizer.step()
    if epoch > swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()
    with torch.no_grad():  # (printed for the comparison; train mode, as the loop)
        loss = loss_fn(model(X), Y)
    print(f"epoch {epoch} loss {loss.item():.6f} lr {optimizer.param_groups[0]['lr']:.6f} n_averaged {swa_model.n_averaged.item()}")

# Update bn statistics for the swa_model at the end
torch.optim.swa_utils.update_bn(loader, swa_model)
# Use swa_model to make predictions on test data
swa_model.eval()
preds = swa_model(test_input)
print("swa preds", [round(v, 5) for v in preds.view(-1).tolist()])
print("swa bn running_mean", [round(v, 5) for v in swa_model.module[1].running_mean[:4].tolist()])
print("swa bn running_var", [round(v, 5) for v in swa_model.module[1].running_var[:4].tolist()])
print("swa bn num_batches_tracked", swa_model.module[1].num_batches_tracked.item())
print("swa state keys", list(swa_model.state_dict())[:3], len(swa_model.state_dict()))

# EMA
torch.manual_seed(1)
model = make_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
decay = 0.9
ema_model = torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)
for epoch in range(4):
    for input, target in loader:
        optimizer.zero_grad()
        loss_fn(model(input), target).backward()
        optimizer.step()
        ema_model.update_parameters(model)
ema_model.eval()
print("ema preds", [round(v, 5) for v in ema_model(test_input).view(-1).tolist()])
print("ema bn running_mean", [round(v, 5) for v in ema_model.module[1].running_mean[:4].tolist()])

# Custom averaging strategies
ema_avg = lambda averaged_model_parameter, model_parameter, num_averaged: \
        0.1 * averaged_model_parameter + 0.9 * model_parameter
custom_model = torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_avg)
for _ in range(3):
    for input, target in loader:
        optimizer.zero_grad()
        loss_fn(model(input), target).backward()
        optimizer.step()
    custom_model.update_parameters(model)
print("custom avg weight", [round(v, 5) for v in custom_model.module[0].weight[0].tolist()])
print("custom avg n_averaged", custom_model.n_averaged.item())
