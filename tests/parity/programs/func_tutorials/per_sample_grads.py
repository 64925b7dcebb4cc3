# ruff: noqa: I001, E402, E231, E701, W291, UP008  (the tutorial's own style and imports, kept)
# pytorch/tutorials intermediate_source/per_sample_grads.py at commit
# 0bb46a4a7c3e4a4d185372221fecb5754f68fcca (BSD-3-Clause), "Per-sample-gradients": a CNN's
# gradient per sample, by a loop of autograd.grad and by torch.func (functional_call, grad,
# vmap(in_dims=(None, None, 0, 0))), checked with allclose. Changes, and only these:
# device 'cuda' became 'cpu'; batch_size 64 became 4 and the targets' literal `(64,)` became
# `(batch_size,)` (it must match the batch); the benchmark's timeit(100) became timeit(1);
# the tutorial's long comment blocks are shortened. The code is as written.
"""
Per-sample-gradients
====================

Per-sample-gradient computation is computing the gradient for each and every
sample in a batch of data.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)

# Here's a simple CNN and loss function:

class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output

def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


######################################################################
# A batch of dummy data: 28 by 28 images, as MNIST's.

device = 'cpu'

num_models = 10
batch_size = 4
data = torch.randn(batch_size, 1, 28, 28, device=device)

targets = torch.randint(10, (batch_size,), device=device)

######################################################################
# The 'average' gradient of the entire mini-batch:

model = SimpleCNN().to(device=device)
predictions = model(data)  # move the entire mini-batch through the model

loss = loss_fn(predictions, targets)
loss.backward()  # back propagate the 'average' gradient of this mini-batch

######################################################################
# Per-sample gradients by hand: one forward and backward per sample.

def compute_grad(sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)

    prediction = model(sample)
    loss = loss_fn(prediction, target)

    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(data, targets):
    """ manually process each sample with per sample gradient """
    sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads

per_sample_grads = compute_sample_grads(data, targets)

print(per_sample_grads[0].shape)

######################################################################
# Per-sample-grads, *the efficient way*, using function transforms.

from torch.func import functional_call, vmap, grad

params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}

def compute_loss(params, buffers, sample, target):
    batch = sample.unsqueeze(0)
    targets = target.unsqueeze(0)

    predictions = functional_call(model, (params, buffers), (batch,))
    loss = loss_fn(predictions, targets)
    return loss

ft_compute_grad = grad(compute_loss)

ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))

ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)

######################################################################
# Check that the results using ``grad`` and ``vmap`` match the hand-made ones:

# Create a float64 baseline for more precise comparison
def compute_grad_fp64(sample, target):
    # Convert to float64 for higher precision
    sample_fp64 = sample.to(torch.float64)
    target_fp64 = target

    # Create a float64 version of the model
    model_fp64 = SimpleCNN().to(device=device)
    # Copy parameters from original model to float64 model
    with torch.no_grad():
        for param_fp32, param_fp64 in zip(model.parameters(), model_fp64.parameters()):
            param_fp64.copy_(param_fp32.to(torch.float64))

    sample_fp64 = sample_fp64.unsqueeze(0)  # prepend batch dimension
    target_fp64 = target_fp64.unsqueeze(0)

    prediction = model_fp64(sample_fp64)
    loss = loss_fn(prediction, target_fp64)

    return torch.autograd.grad(loss, list(model_fp64.parameters()))


def compute_fp64_baseline(data, targets, indices):
    """Compute float64 gradient for a specific sample"""
    # Only compute for the sample with the largest difference to save computation
    i = indices[0]  # Sample index
    sample_grad = compute_grad_fp64(data[i], targets[i])
    return sample_grad


for i, (per_sample_grad, ft_per_sample_grad) in enumerate(
    zip(per_sample_grads, ft_per_sample_grads.values())
):
    is_close = torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    if not is_close:
        # Calculate and print the maximum absolute difference
        abs_diff = (per_sample_grad - ft_per_sample_grad).abs()
        max_diff = abs_diff.max().item()
        mean_diff = abs_diff.mean().item()
        print(f"Gradient {i} mismatch:")
        print(f"  Max absolute difference: {max_diff}")
        print(f"  Mean absolute difference: {mean_diff}")
        print(f"  Shape of tensors: {per_sample_grad.shape}")

        # Find the location of maximum difference
        max_idx = abs_diff.argmax().item()
        flat_idx = max_idx
        if len(abs_diff.shape) > 1:
            # Convert flat index to multi-dimensional index
            indices = []
            temp_shape = abs_diff.shape
            for dim in reversed(temp_shape):
                indices.insert(0, flat_idx % dim)
                flat_idx //= dim
            print(f"  Max difference at index: {indices}")
            print(f"  Manual gradient value: {per_sample_grad[tuple(indices)].item()}")
            print(
                f"  Functional gradient value: {ft_per_sample_grad[tuple(indices)].item()}"
            )

            # Compute float64 baseline for the sample with the largest difference
            print("\nComputing float64 baseline for comparison...")
            try:
                fp64_grads = compute_fp64_baseline(data, targets, indices)
                fp64_value = fp64_grads[i][
                    tuple(indices[1:])
                ].item()  # Skip batch dimension
                print(f"  Float64 baseline value: {fp64_value}")

                # Compare both methods against float64 baseline
                manual_diff = abs(per_sample_grad[tuple(indices)].item() - fp64_value)
                functional_diff = abs(
                    ft_per_sample_grad[tuple(indices)].item() - fp64_value
                )
                print(f"  Manual method vs float64 difference: {manual_diff}")
                print(f"  Functional method vs float64 difference: {functional_diff}")

                if manual_diff < functional_diff:
                    print("  Manual method is closer to float64 baseline")
                else:
                    print("  Functional method is closer to float64 baseline")
            except Exception as e:
                print(f"  Error computing float64 baseline: {e}")

    # Keep the original assertion
    assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)

######################################################################
# Performance comparison

def get_perf(first, first_descriptor, second, second_descriptor):
    """takes torch.benchmark objects and compares delta of second vs first."""
    second_res = second.times[0]
    first_res = first.times[0]

    gain = (first_res-second_res)/first_res
    if gain < 0: gain *=-1 
    final_gain = gain*100

    print(f"Performance delta: {final_gain:.4f} percent improvement with {first_descriptor} ")

from torch.utils.benchmark import Timer

without_vmap = Timer(stmt="compute_sample_grads(data, targets)", globals=globals())
with_vmap = Timer(stmt="ft_compute_sample_grad(params, buffers, data, targets)",globals=globals())
no_vmap_timing = without_vmap.timeit(1)
with_vmap_timing = with_vmap.timeit(1)

print(f'Per-sample-grads without vmap {no_vmap_timing}')
print(f'Per-sample-grads with vmap {with_vmap_timing}')

get_perf(with_vmap_timing, "vmap", no_vmap_timing, "no vmap")
