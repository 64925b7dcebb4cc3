# ruff: noqa  (the tutorial as published, its own style kept)
# pytorch/tutorials intermediate_source/memory_format_tutorial.py (BSD-3-Clause; author
# Vitaly Fedyunin), stored commit 061d3b2: "(beta) Channels Last Memory Format", its CPU
# parts. Changed, and only these: the prose and the recorded GPU logs are cut; the
# ``torch.backends.cudnn.version() >= 7603`` block (which on a CPU build compares None with
# an int: TypeError, in torch too) is the same code on the CPU in float32 (no ``.cuda()``,
# ``.half()``, ``device="cuda"``, ``float16``), so that ``model`` and ``input`` exist for the
# "Converting existing models" section, which then prints its output's channels-last check
# (added ``print``); the operator-checking section's functions are kept but not applied:
# ``attribute(torch.Tensor)`` / ``attribute(torch)`` rewrite every public callable of the
# library in place and put back the looked-up values, which turns static methods into plain
# functions -- run inside the test process it would change both libraries for later tests.
# It runs as a script.

# Classic PyTorch contiguous tensor
import torch

N, C, H, W = 10, 3, 32, 32
x = torch.empty(N, C, H, W)
print(x.stride())  # Ouputs: (3072, 1024, 32, 1)

# Conversion operator
x = x.to(memory_format=torch.channels_last)
print(x.shape)  # Outputs: (10, 3, 32, 32) as dimensions order preserved
print(x.stride())  # Outputs: (3072, 1, 96, 3)

# Back to contiguous
x = x.to(memory_format=torch.contiguous_format)
print(x.stride())  # Outputs: (3072, 1024, 32, 1)

# Alternative option
x = x.contiguous(memory_format=torch.channels_last)
print(x.stride())  # Ouputs: (3072, 1, 96, 3)

# Format checks
print(x.is_contiguous(memory_format=torch.channels_last))  # Ouputs: True

special_x = torch.empty(4, 1, 4, 4)
print(special_x.is_contiguous(memory_format=torch.channels_last))  # Ouputs: True
print(special_x.is_contiguous(memory_format=torch.contiguous_format))  # Ouputs: True

# Create as channels last
x = torch.empty(N, C, H, W, memory_format=torch.channels_last)
print(x.stride())  # Ouputs: (3072, 1, 96, 3)

# ``clone`` preserves memory format
y = x.clone()
print(y.stride())  # Ouputs: (3072, 1, 96, 3)

# ``to``, ``cuda``, ``float`` ... preserves memory format
if torch.cuda.is_available():
    y = x.cuda()
    print(y.stride())  # Ouputs: (3072, 1, 96, 3)

# ``empty_like``, ``*_like`` operators preserves memory format
y = torch.empty_like(x)
print(y.stride())  # Ouputs: (3072, 1, 96, 3)

# Pointwise operators preserves memory format
z = x + y
print(z.stride())  # Ouputs: (3072, 1, 96, 3)

# Conv, Batchnorm modules using cudnn backends support channels last

if True:  # torch.backends.cudnn.version() >= 7603 (on the CPU, in float32)
    model = torch.nn.Conv2d(8, 4, 3)
    model = model.to(memory_format=torch.channels_last)  # Module parameters need to be channels last

    input = torch.randint(1, 10, (2, 8, 4, 4), dtype=torch.float32, requires_grad=True)
    input = input.to(memory_format=torch.channels_last)

    out = model(input)
    print(out.is_contiguous(memory_format=torch.channels_last))  # Ouputs: True

# Converting existing models

# Need to be done once, after model initialization (or load)
model = model.to(memory_format=torch.channels_last)  # Replace with your model

# Need to be done for every input
input = input.to(memory_format=torch.channels_last)  # Replace with your input
output = model(input)
print(output.is_contiguous(memory_format=torch.channels_last))


def contains_cl(args):
    for t in args:
        if isinstance(t, torch.Tensor):
            if t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous():
                return True
        elif isinstance(t, list) or isinstance(t, tuple):
            if contains_cl(list(t)):
                return True
    return False


def print_inputs(args, indent=""):
    for t in args:
        if isinstance(t, torch.Tensor):
            print(indent, t.stride(), t.shape, t.device, t.dtype)
        elif isinstance(t, list) or isinstance(t, tuple):
            print(indent, type(t))
            print_inputs(list(t), indent=indent + "    ")
        else:
            print(indent, t)


def check_wrapper(fn):
    name = fn.__name__

    def check_cl(*args, **kwargs):
        was_cl = contains_cl(args)
        try:
            result = fn(*args, **kwargs)
        except Exception as e:
            print("`{}` inputs are:".format(name))
            print_inputs(args)
            print("-------------------")
            raise e
        failed = False
        if was_cl:
            if isinstance(result, torch.Tensor):
                if result.dim() == 4 and not result.is_contiguous(memory_format=torch.channels_last):
                    print(
                        "`{}` got channels_last input, but output is not channels_last:".format(name),
                        result.shape,
                        result.stride(),
                        result.device,
                        result.dtype,
                    )
                    failed = True
        if failed and True:
            print("`{}` inputs are:".format(name))
            print_inputs(args)
            raise Exception("Operator `{}` lost channels_last property".format(name))
        return result

    return check_cl
