# ruff: noqa: E731, E741, F811  (d2l.ai's lambdas, `l` and redefined f / f_hess kept)
"""The PyTorch code of d2l.ai's "Optimization Algorithms" chapter (d2l-ai/d2l-en,
chapter_optimization: gd, sgd, minibatch-sgd, momentum, adagrad, rmsprop, adadelta, adam,
lr-scheduler) and the ``d2l/torch.py`` helpers it uses, without the ``d2l`` package.

Written from memory in the book's words: gradient descent and Newton's method on
``torch.cosh`` / ``x * torch.cos(c * x)`` (the iterate becomes a 0-d tensor, printed with
``f'{x:f}'`` and ``print(..., x)``), ``train_2d`` with noisy gradients from
``torch.normal(0.0, 1, (1,)).item()`` and the exponential / polynomial learning rates; the
airfoil data through ``np.genfromtxt`` and ``load_array`` (a shuffled ``DataLoader``),
``train_ch11`` with each optimizer written by hand under ``torch.no_grad()`` (``v[:] = ...``,
``p[:] -= ...``, Yogi's ``torch.sign``), ``train_concise_ch11`` with ``torch.optim``'s
SGD / momentum / Adagrad / RMSprop / Adadelta / Adam; and the lr-scheduler section's LeNet
on Fashion-MNIST-shaped data with ``lr_scheduler.MultiStepLR`` and the book's own
SquareRoot / Factor / Cosine(warmup) schedulers (``train`` tells them apart by
``scheduler.__module__ == lr_scheduler.__name__``).

Changed for the test: the data are synthetic (the test writes a 200-row
``airfoil_self_noise.dat``; the images are random tensors with a class-dependent bright
band), sizes and epochs are small, and ``d2l.Animator`` / ``d2l.plot`` print the points
they would plot (``Animator.add`` prints ``x`` and the values to 6 decimals).
"""
import math
import time

import numpy as np
import torch
from torch import nn
from torch.optim import lr_scheduler
from torch.utils import data

# -- d2l helpers ------------------------------------------------------------------------------

class Timer:
    """Record multiple running times."""
    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        self.tik = time.time()

    def stop(self):
        self.times.append(time.time() - self.tik)
        return self.times[-1]

    def avg(self):
        return sum(self.times) / len(self.times)

    def sum(self):
        return sum(self.times)

    def cumsum(self):
        return np.array(self.times).cumsum().tolist()


class Accumulator:
    """For accumulating sums over `n` variables."""
    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class Animator:
    """CHANGED: d2l's plotting animator; this one keeps the points and prints them."""
    def __init__(self, xlabel=None, ylabel=None, legend=None, xlim=None, ylim=None, **kwargs):
        self.X, self.Y, self.legend = None, None, legend

    def add(self, x, y):
        if not hasattr(y, "__len__"):
            y = [y]
        n = len(y)
        if not hasattr(x, "__len__"):
            x = [x] * n
        if not self.X:
            self.X = [[] for _ in range(n)]
        if not self.Y:
            self.Y = [[] for _ in range(n)]
        for i, (a, b) in enumerate(zip(x, y)):
            if a is not None and b is not None:
                self.X[i].append(a)
                self.Y[i].append(b)
        print("plot", f"{x[0]:.4f}", " ".join("-" if b is None else f"{b:.6f}" for b in y))


def plot(X, Y):
    """CHANGED: d2l.plot draws; this prints."""
    print("plot", [round(float(x), 4) for x in X], [round(float(y), 6) for y in Y])


def try_gpu(i=0):
    if torch.cuda.device_count() >= i + 1:
        return torch.device(f'cuda:{i}')
    return torch.device('cpu')


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a PyTorch data iterator."""
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train)


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def evaluate_loss(net, data_iter, loss):
    metric = Accumulator(2)  # Sum of losses, no. of examples
    for X, y in data_iter:
        out = net(X)
        y = y.reshape(out.shape)
        l = loss(out, y)
        metric.add(l.sum(), l.numel())
    return metric[0] / metric[1]


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def evaluate_accuracy_gpu(net, data_iter, device=None):
    if isinstance(net, nn.Module):
        net.eval()  # Set the model to evaluation mode
        if not device:
            device = next(iter(net.parameters())).device
    metric = Accumulator(2)
    with torch.no_grad():
        for X, y in data_iter:
            if isinstance(X, list):
                X = [x.to(device) for x in X]
            else:
                X = X.to(device)
            y = y.to(device)
            metric.add(accuracy(net(X), y), y.numel())
    return metric[0] / metric[1]


# -- gd.md ------------------------------------------------------------------------------------

def gradient_descent():
    def f(x):  # Objective function
        return x ** 2

    def f_grad(x):  # Gradient (derivative) of the objective function
        return 2 * x

    def gd(eta, f_grad):
        x = 10.0
        results = [x]
        for i in range(10):
            x -= eta * f_grad(x)
            results.append(float(x))
        print(f'epoch 10, x: {x:f}')
        return results

    results = gd(0.2, f_grad)
    gd(0.05, f_grad)
    gd(1.1, f_grad)

    c = torch.tensor(0.15 * np.pi)

    def f(x):  # Objective function
        return x * torch.cos(c * x)

    def f_grad(x):  # Gradient of the objective function
        return torch.cos(c * x) - c * x * torch.sin(c * x)

    gd(2, f_grad)

    c = torch.tensor(0.5)

    def f(x):  # Objective function
        return torch.cosh(c * x)

    def f_grad(x):  # Gradient of the objective function
        return c * torch.sinh(c * x)

    def f_hess(x):  # Hessian of the objective function
        return c**2 * torch.cosh(c * x)

    def newton(eta=1):
        x = 10.0
        results = [x]
        for i in range(10):
            x -= eta * f_grad(x) / f_hess(x)
            results.append(float(x))
        print('epoch 10, x:', x)
        return results

    newton()

    c = torch.tensor(0.15 * np.pi)

    def f(x):  # Objective function
        return x * torch.cos(c * x)

    def f_grad(x):  # Gradient of the objective function
        return torch.cos(c * x) - c * x * torch.sin(c * x)

    def f_hess(x):  # Hessian of the objective function
        return - 2 * c * torch.sin(c * x) - x * c**2 * torch.cos(c * x)

    newton()
    newton(0.5)
    f_line = torch.arange(-10, 10, 0.01)
    print(len(results), f_line.shape, float(f(f_line).min()))


def train_2d(trainer, steps=20, f_grad=None):
    """Optimize a 2D objective function with a customized trainer."""
    # `s1` and `s2` are internal state variables that will be used in Momentum, adagrad, RMSProp
    x1, x2, s1, s2 = -5, -2, 0, 0
    results = [(x1, x2)]
    for i in range(steps):
        if f_grad:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2, f_grad)
        else:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2)
        results.append((x1, x2))
    print(f'epoch {i + 1}, x1: {float(x1):f}, x2: {float(x2):f}')
    return results


# -- sgd.md -----------------------------------------------------------------------------------

def stochastic_gradient_descent():
    global lr, eta, t

    def f(x1, x2):  # Objective function
        return x1 ** 2 + 2 * x2 ** 2

    def f_grad(x1, x2):  # Gradient of the objective function
        return 2 * x1, 4 * x2

    def sgd(x1, x2, s1, s2, f_grad):
        g1, g2 = f_grad(x1, x2)
        # Simulate noisy gradient
        g1 += torch.normal(0.0, 1, (1,)).item()
        g2 += torch.normal(0.0, 1, (1,)).item()
        eta_t = eta * lr()
        return (x1 - eta_t * g1, x2 - eta_t * g2, 0, 0)

    def constant_lr():
        return 1

    eta = 0.1
    lr = constant_lr  # Constant learning rate
    train_2d(sgd, steps=50, f_grad=f_grad)

    def exponential_lr():
        # Global variable that is defined outside this function and updated inside
        global t
        t += 1
        return math.exp(-0.1 * t)

    t = 1
    lr = exponential_lr
    train_2d(sgd, steps=1000, f_grad=f_grad)

    def polynomial_lr():
        # Global variable that is defined outside this function and updated inside
        global t
        t += 1
        return (1 + 0.1 * t) ** (-0.5)

    t = 1
    lr = polynomial_lr
    train_2d(sgd, steps=50, f_grad=f_grad)


# -- minibatch-sgd.md -------------------------------------------------------------------------

def get_data_ch11(batch_size=10, n=1500):
    data = np.genfromtxt('airfoil_self_noise.dat', dtype=np.float32, delimiter='\t')
    data = torch.from_numpy((data - data.mean(axis=0)) / data.std(axis=0))
    data_iter = load_array((data[:n, :-1], data[:n, -1]), batch_size, is_train=True)
    return data_iter, data.shape[1]-1


def sgd(params, states, hyperparams):
    for p in params:
        p.data.sub_(hyperparams['lr'] * p.grad)
        p.grad.data.zero_()


def train_ch11(trainer_fn, states, hyperparams, data_iter, feature_dim, num_epochs=2):
    # Initialization
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1), requires_grad=True)
    b = torch.zeros((1), requires_grad=True)
    net, loss = lambda X: linreg(X, w, b), squared_loss
    # Train
    animator = Animator(xlabel='epoch', ylabel='loss', xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()
            l.backward()
            trainer_fn([w, b], states, hyperparams)
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                animator.add(n/X.shape[0]/len(data_iter), (evaluate_loss(net, data_iter, loss),))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')
    return timer.cumsum(), animator.Y[0]


def train_sgd(lr, batch_size, num_epochs=2):
    data_iter, feature_dim = get_data_ch11(batch_size)
    return train_ch11(sgd, None, {'lr': lr}, data_iter, feature_dim, num_epochs)


def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=4):
    # Initialization
    net = nn.Sequential(nn.Linear(5, 1))

    def init_weights(module):
        if type(module) == nn.Linear:  # noqa: E721
            torch.nn.init.normal_(module.weight, std=0.01)

    net.apply(init_weights)

    optimizer = trainer_fn(net.parameters(), **hyperparams)
    loss = nn.MSELoss(reduction='none')
    animator = Animator(xlabel='epoch', ylabel='loss', xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            optimizer.zero_grad()
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)
            l.mean().backward()
            optimizer.step()
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                # `MSELoss` computes squared error without the 1/2 factor
                animator.add(n/X.shape[0]/len(data_iter), (evaluate_loss(net, data_iter, loss) / 2,))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')


def minibatch_sgd():
    timer = Timer()
    A = torch.zeros(16, 16)
    B = torch.randn(16, 16)
    C = torch.randn(16, 16)
    # Compute A = BC one element at a time
    timer.start()
    for i in range(16):
        for j in range(16):
            A[i, j] = torch.dot(B[i, :], C[:, j])
    timer.stop()
    # Compute A = BC one column at a time
    timer.start()
    for j in range(16):
        A[:, j] = torch.mv(B, C[:, j])
    timer.stop()
    # Compute A = BC in one go
    timer.start()
    A = torch.mm(B, C)
    timer.stop()
    print(torch.allclose(A, B @ C), len(timer.times))

    gd_res = train_sgd(1, 1500, 10)
    sgd_res = train_sgd(0.005, 1)
    mini1_res = train_sgd(.4, 100)
    mini2_res = train_sgd(.05, 10)
    print(len(gd_res[1]), len(sgd_res[1]), len(mini1_res[1]), len(mini2_res[1]))

    data_iter, _ = get_data_ch11(10)
    trainer = torch.optim.SGD
    train_concise_ch11(trainer, {'lr': 0.01}, data_iter)


# -- momentum.md ------------------------------------------------------------------------------

def init_momentum_states(feature_dim):
    v_w = torch.zeros((feature_dim, 1))
    v_b = torch.zeros(1)
    return (v_w, v_b)


def sgd_momentum(params, states, hyperparams):
    for p, v in zip(params, states):
        with torch.no_grad():
            v[:] = hyperparams['momentum'] * v + p.grad
            p[:] -= hyperparams['lr'] * v
        p.grad.data.zero_()


def momentum():
    eta, beta = 0.4, 0.5

    def f_2d(x1, x2):
        return 0.1 * x1 ** 2 + 2 * x2 ** 2

    def momentum_2d(x1, x2, v1, v2):
        v1 = beta * v1 + 0.2 * x1
        v2 = beta * v2 + 4 * x2
        return x1 - eta * v1, x2 - eta * v2, v1, v2

    train_2d(momentum_2d)
    betas = [0.95, 0.9, 0.6, 0]
    x = torch.arange(40).detach().numpy()
    print([round(float(beta ** x[-1]), 6) for beta in betas])

    data_iter, feature_dim = get_data_ch11(batch_size=10)

    def train_momentum(lr, momentum, num_epochs=2):
        train_ch11(sgd_momentum, init_momentum_states(feature_dim),
                   {'lr': lr, 'momentum': momentum}, data_iter,
                   feature_dim, num_epochs)

    train_momentum(0.02, 0.5)
    train_momentum(0.01, 0.9)
    train_momentum(0.005, 0.9)
    trainer = torch.optim.SGD
    train_concise_ch11(trainer, {'lr': 0.005, 'momentum': 0.9}, data_iter)

    lambdas = [0.1, 1, 10, 19]
    eta = 0.1
    t = torch.arange(20).detach().numpy()
    print([round(float((1 - eta * lam) ** t[-1]), 6) for lam in lambdas])


# -- adagrad.md / rmsprop.md / adadelta.md / adam.md ------------------------------------------

def init_adagrad_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def adagrad(params, states, hyperparams):
    eps = 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] += torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


def init_rmsprop_states(feature_dim):
    s_w = torch.zeros((feature_dim, 1))
    s_b = torch.zeros(1)
    return (s_w, s_b)


def rmsprop(params, states, hyperparams):
    gamma, eps = hyperparams['gamma'], 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] = gamma * s + (1 - gamma) * torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()


def init_adadelta_states(feature_dim):
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    delta_w, delta_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((s_w, delta_w), (s_b, delta_b))


def adadelta(params, states, hyperparams):
    rho, eps = hyperparams['rho'], 1e-5
    for p, (s, delta) in zip(params, states):
        with torch.no_grad():
            # In-place updates via [:]
            s[:] = rho * s + (1 - rho) * torch.square(p.grad)
            g = (torch.sqrt(delta + eps) / torch.sqrt(s + eps)) * p.grad
            p[:] -= g
            delta[:] = rho * delta + (1 - rho) * g * g
        p.grad.data.zero_()


def init_adam_states(feature_dim):
    v_w, v_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    s_w, s_b = torch.zeros((feature_dim, 1)), torch.zeros(1)
    return ((v_w, s_w), (v_b, s_b))


def adam(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:] -= hyperparams['lr'] * v_bias_corr / (torch.sqrt(s_bias_corr) + eps)
        p.grad.data.zero_()
    hyperparams['t'] += 1


def yogi(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-3
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = s + (1 - beta2) * torch.sign(
                torch.square(p.grad) - s) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:] -= hyperparams['lr'] * v_bias_corr / (torch.sqrt(s_bias_corr) + eps)
        p.grad.data.zero_()
    hyperparams['t'] += 1


def adaptive_methods():
    eta = 0.4

    def adagrad_2d(x1, x2, s1, s2):
        eps = 1e-6
        g1, g2 = 0.2 * x1, 4 * x2
        s1 += g1 ** 2
        s2 += g2 ** 2
        x1 -= eta / math.sqrt(s1 + eps) * g1
        x2 -= eta / math.sqrt(s2 + eps) * g2
        return x1, x2, s1, s2

    train_2d(adagrad_2d)

    data_iter, feature_dim = get_data_ch11(batch_size=10)
    train_ch11(adagrad, init_adagrad_states(feature_dim), {'lr': 0.1}, data_iter, feature_dim)
    trainer = torch.optim.Adagrad
    train_concise_ch11(trainer, {'lr': 0.1}, data_iter)

    gammas = [0.95, 0.9, 0.8, 0.7]
    x = torch.arange(40).detach().numpy()
    print([round(float((1-gamma) * gamma ** x[-1]), 9) for gamma in gammas])
    train_ch11(rmsprop, init_rmsprop_states(feature_dim), {'lr': 0.01, 'gamma': 0.9}, data_iter, feature_dim)
    trainer = torch.optim.RMSprop
    train_concise_ch11(trainer, {'lr': 0.01, 'alpha': 0.9}, data_iter)

    train_ch11(adadelta, init_adadelta_states(feature_dim), {'rho': 0.9}, data_iter, feature_dim)
    trainer = torch.optim.Adadelta
    train_concise_ch11(trainer, {'rho': 0.9}, data_iter)

    train_ch11(adam, init_adam_states(feature_dim), {'lr': 0.01, 't': 1}, data_iter, feature_dim)
    trainer = torch.optim.Adam
    train_concise_ch11(trainer, {'lr': 0.01}, data_iter)

    data_iter, _ = get_data_ch11(batch_size=10)
    train_ch11(yogi, init_adam_states(feature_dim), {'lr': 0.01, 't': 1}, data_iter, feature_dim)


# -- lr-scheduler.md --------------------------------------------------------------------------

def net_fn():
    model = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))

    return model


def load_data_fashion_mnist(batch_size, n_train=64, n_test=32):
    """CHANGED: Fashion-MNIST-shaped random images, a bright band per class."""
    def images(n):
        X = torch.rand(n, 1, 28, 28) * 0.5
        y = torch.randint(0, 10, (n,))
        for i in range(n):
            X[i, 0, 2 * y[i]:2 * y[i] + 6, :] += 0.5
        return X, y
    train, test = images(n_train), images(n_test)
    return (data.DataLoader(data.TensorDataset(*train), batch_size, shuffle=True),
            data.DataLoader(data.TensorDataset(*test), batch_size, shuffle=False))


loss = nn.CrossEntropyLoss()
device = try_gpu()


# The code is almost identical to `d2l.train_ch6` defined in the
# lenet section of chapter convolutional neural networks
def train(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler=None):
    net.to(device)
    animator = Animator(xlabel='epoch', xlim=[0, num_epochs],
                        legend=['train loss', 'train acc', 'test acc'])

    for epoch in range(num_epochs):
        metric = Accumulator(3)  # train_loss, train_acc, num_examples
        for i, (X, y) in enumerate(train_iter):
            net.train()
            trainer.zero_grad()
            X, y = X.to(device), y.to(device)
            y_hat = net(X)
            l = loss(y_hat, y)
            l.backward()
            trainer.step()
            with torch.no_grad():
                metric.add(l * X.shape[0], accuracy(y_hat, y), X.shape[0])
            train_loss = metric[0] / metric[2]
            train_acc = metric[1] / metric[2]
            if (i + 1) % 2 == 0:  # CHANGED: every 50 batches
                animator.add(epoch + i / len(train_iter), (train_loss, train_acc, None))

        test_acc = evaluate_accuracy_gpu(net, test_iter)
        animator.add(epoch+1, (None, None, test_acc))

        if scheduler:
            if scheduler.__module__ == lr_scheduler.__name__:
                # Using PyTorch In-Built scheduler
                scheduler.step()
            else:
                # Using custom defined scheduler
                for param_group in trainer.param_groups:
                    param_group['lr'] = scheduler(epoch)

    print(f'train loss {train_loss:.3f}, train acc {train_acc:.3f}, '
          f'test acc {test_acc:.3f}')


class SquareRootScheduler:
    def __init__(self, lr=0.1):
        self.lr = lr

    def __call__(self, num_update):
        return self.lr * pow(num_update + 1.0, -0.5)


class FactorScheduler:
    def __init__(self, factor=1, stop_factor_lr=1e-7, base_lr=0.1):
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.base_lr = base_lr

    def __call__(self, num_update):
        self.base_lr = max(self.stop_factor_lr, self.base_lr * self.factor)
        return self.base_lr


class CosineScheduler:
    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0):
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.max_steps = self.max_update - self.warmup_steps

    def get_warmup_lr(self, epoch):
        increase = (self.base_lr_orig - self.warmup_begin_lr) \
                       * float(epoch) / float(self.warmup_steps)
        return self.warmup_begin_lr + increase

    def __call__(self, epoch):
        if epoch < self.warmup_steps:
            return self.get_warmup_lr(epoch)
        if epoch <= self.max_update:
            self.base_lr = self.final_lr + (
                self.base_lr_orig - self.final_lr) * (1 + math.cos(
                math.pi * (epoch - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr


def learning_rate_scheduling():
    batch_size = 16  # CHANGED: 256
    train_iter, test_iter = load_data_fashion_mnist(batch_size=batch_size)

    lr, num_epochs = 0.3, 3  # CHANGED: 30 epochs
    net = net_fn()
    trainer = torch.optim.SGD(net.parameters(), lr=lr)
    train(net, train_iter, test_iter, num_epochs, loss, trainer, device)

    lr = 0.1
    trainer.param_groups[0]["lr"] = lr
    print(f'learning rate is now {trainer.param_groups[0]["lr"]:.2f}')

    scheduler = SquareRootScheduler(lr=0.1)
    plot(torch.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])

    net = net_fn()
    trainer = torch.optim.SGD(net.parameters(), lr)
    train(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler)

    scheduler = FactorScheduler(factor=0.9, stop_factor_lr=1e-2, base_lr=2.0)
    plot(torch.arange(50), [scheduler(t) for t in range(50)])

    net = net_fn()
    trainer = torch.optim.SGD(net.parameters(), lr=0.5)
    scheduler = lr_scheduler.MultiStepLR(trainer, milestones=[15, 30], gamma=0.5)

    def get_lr(trainer, scheduler):
        lr = scheduler.get_last_lr()[0]
        trainer.step()
        scheduler.step()
        return lr

    plot(torch.arange(num_epochs), [get_lr(trainer, scheduler) for t in range(num_epochs)])
    train(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler)

    scheduler = CosineScheduler(max_update=20, base_lr=0.3, final_lr=0.01)
    plot(torch.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    net = net_fn()
    trainer = torch.optim.SGD(net.parameters(), lr=0.3)
    train(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler)

    scheduler = CosineScheduler(20, warmup_steps=5, base_lr=0.3, final_lr=0.01)
    plot(torch.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
    net = net_fn()
    trainer = torch.optim.SGD(net.parameters(), lr=0.3)
    train(net, train_iter, test_iter, num_epochs, loss, trainer, device, scheduler)


if __name__ == "__main__":
    torch.manual_seed(0)
    gradient_descent()
    stochastic_gradient_descent()
    minibatch_sgd()
    momentum()
    adaptive_methods()
    learning_rate_scheduling()
