# ruff: noqa: E721, UP034  (d2l.ai's own `type(m) == nn.Linear` and parenthesised style kept)
"""The PyTorch code of the d2l.ai book ("Dive into Deep Learning", d2l-ai/d2l-en, chapters
linear-regression, linear-classification, multilayer-perceptrons, builders-guide,
convolutional-neural-networks, convolutional-modern, recurrent-neural-networks,
recurrent-modern, attention-mechanisms-and-transformers; the ``d2l/torch.py`` helpers),
section by section on tiny synthetic data.

A re-implementation in our own words, not a copy, and no ``d2l`` import: the book's habits
with the same torch calls -- ``synthetic_data`` through ``torch.normal``, a shuffled
``data_iter`` and a hand-written ``sgd`` under ``torch.no_grad()``; the concise versions on
``nn.LazyLinear`` with ``net[0].weight.data.normal_``, ``TensorDataset``/``DataLoader``;
softmax regression by hand (``y_hat[range(len(y_hat)), y]``); an MLP; ``apply_init`` after a
dry run of lazy layers; weight decay both by an ``l2_penalty`` and by ``weight_decay`` in a
parameter group; dropout written by hand (``torch.rand(X.shape) > dropout``); batch norm by
hand (``moving_mean``/``moving_var`` and ``mean(dim=(0, 2, 3), keepdim=True)``) and
``nn.LazyBatchNorm2d``; a LeNet built of ``nn.LazyConv2d`` and a small AlexNet-style net; an
RNN from scratch with ``F.one_hot``, ``grad_clipping`` and ``predict``; ``nn.GRU``/``nn.LSTM``
language models; ``masked_softmax`` with ``torch.repeat_interleave``, additive and scaled
dot-product attention scoring with ``torch.bmm``.
"""
import math
import random

import torch
from torch import nn
from torch.nn import functional as F


def synthetic_data(w, b, num_examples):
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(indices[i: min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def linear_regression():
    true_w = torch.tensor([2, -3.4])
    true_b = 4.2
    features, labels = synthetic_data(true_w, true_b, 40)
    print("features:", features[0], "\nlabel:", labels[0])
    w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    lr, num_epochs, batch_size = 0.03, 3, 10
    for epoch in range(num_epochs):
        for X, y in data_iter(batch_size, features, labels):
            l = squared_loss(linreg(X, w, b), y)
            l.sum().backward()
            sgd([w, b], lr, batch_size)
        with torch.no_grad():
            train_l = squared_loss(linreg(features, w, b), labels)
            print(f"epoch {epoch + 1}, loss {float(train_l.mean()):f}")
    print(f"error in estimating w: {true_w - w.reshape(true_w.shape)}")
    print(f"error in estimating b: {true_b - b}")

    # the concise version
    dataset = torch.utils.data.TensorDataset(features, labels)
    loader = torch.utils.data.DataLoader(dataset, batch_size, shuffle=True)
    print(next(iter(loader))[0].shape)
    net = nn.Sequential(nn.LazyLinear(1))
    print(net)
    net(features[:2])  # dry run materialises the lazy weight
    net[0].weight.data.normal_(0, 0.01)
    net[0].bias.data.fill_(0)
    print(net, net[0].weight.shape)
    loss = nn.MSELoss()
    trainer = torch.optim.SGD(net.parameters(), lr=0.03)
    for epoch in range(num_epochs):
        for X, y in loader:
            l = loss(net(X), y)
            trainer.zero_grad()
            l.backward()
            trainer.step()
        l = loss(net(features), labels)
        print(f"epoch {epoch + 1}, loss {l:f}")
    w, b = net[0].weight.data, net[0].bias.data
    print("w error:", true_w - w.reshape(true_w.shape), "b error:", true_b - b)


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdim=True)
    return X_exp / partition


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[range(len(y_hat)), y])


def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def fake_images(n, classes=10, size=8):
    X = torch.rand(n, 1, size, size)
    y = torch.randint(0, classes, (n,))
    X[torch.arange(n), 0, y % size, :] += 1.0  # a class-dependent bright row
    return X, y


def softmax_regression():
    X = torch.normal(0, 1, (2, 5))
    X_prob = softmax(X)
    print(X_prob, X_prob.sum(1))
    y = torch.tensor([0, 2])
    y_hat = torch.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
    print(y_hat[[0, 1], y], cross_entropy(y_hat, y), accuracy(y_hat, y) / len(y))

    X, y = fake_images(32)
    num_inputs, num_outputs = 64, 10
    W = torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)
    b = torch.zeros(num_outputs, requires_grad=True)

    def net(X):
        return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

    for epoch in range(3):
        for i in range(0, 32, 16):
            l = cross_entropy(net(X[i:i + 16]), y[i:i + 16])
            l.mean().backward()
            with torch.no_grad():
                for p in (W, b):
                    p -= 0.1 * p.grad
                    p.grad.zero_()
        with torch.no_grad():
            print(f"softmax epoch {epoch}: loss {cross_entropy(net(X), y).mean().item():.6f} "
                  f"acc {accuracy(net(X), y) / len(y):.4f}")


def init_weights(m):
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, std=0.01)


def mlp_and_init():
    X, y = fake_images(32)
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    net.apply(init_weights)
    loss = nn.CrossEntropyLoss(reduction="none")
    trainer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(3):
        net.train()
        l = loss(net(X), y)
        trainer.zero_grad()
        l.mean().backward()
        trainer.step()
        print(f"mlp epoch {epoch}: {l.mean().item():.6f}")

    # builders' guide: lazy layers, a dry run, then apply_init
    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    print(lazy[0].weight)
    lazy(torch.rand(2, 20))
    print(lazy[0].weight.shape, lazy)

    def init_xavier(module):
        if type(module) == nn.Linear:
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)

    def init_42(module):
        if type(module) == nn.Linear:
            nn.init.constant_(module.weight, 42)

    def my_init(module):
        if type(module) == nn.Linear:
            print("Init", *[(name, param.shape) for name, param in module.named_parameters()][0])
            nn.init.uniform_(module.weight, -10, 10)
            module.weight.data *= module.weight.data.abs() >= 5

    lazy.apply(init_xavier)
    print(lazy[0].weight.data[0], lazy[2].bias.data)
    lazy[2].apply(init_42)
    print(lazy[2].weight.data[0])
    lazy.apply(my_init)
    print(lazy[0].weight[:2])
    print(*[(name, param.shape) for name, param in lazy.named_parameters()])
    print(lazy.state_dict()["2.bias"].data, type(lazy[2].bias))

    shared = nn.LazyLinear(8)
    tied = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.LazyLinear(1))
    tied(torch.rand(2, 20))
    tied[2].weight.data[0, 0] = 100
    print(tied[2].weight.data[0] == tied[4].weight.data[0])


def l2_penalty(w):
    return (w ** 2).sum() / 2


def weight_decay_and_dropout():
    n_train, num_inputs, batch_size = 20, 50, 5
    true_w, true_b = torch.ones((num_inputs, 1)) * 0.01, 0.05
    features, labels = synthetic_data(true_w.reshape(-1), true_b, n_train)
    w = torch.normal(0, 1, size=(num_inputs, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    for epoch in range(4):
        for i in range(0, n_train, batch_size):
            X, y = features[i:i + batch_size], labels[i:i + batch_size]
            l = squared_loss(linreg(X, w, b), y) + 3 * l2_penalty(w)
            l.sum().backward()
            sgd([w, b], 0.003, batch_size)
        print(f"wd scratch epoch {epoch}: L2 norm of w {torch.norm(w).item():.6f}")

    net = nn.Sequential(nn.Linear(num_inputs, 1))
    for param in net.parameters():
        param.data.normal_()
    trainer = torch.optim.SGD([{"params": net[0].weight, "weight_decay": 3}, {"params": net[0].bias}], lr=0.003)
    for epoch in range(4):
        for i in range(0, n_train, batch_size):
            X, y = features[i:i + batch_size], labels[i:i + batch_size]
            trainer.zero_grad()
            l = nn.MSELoss(reduction="none")(net(X), y)
            l.mean().backward()
            trainer.step()
        print(f"wd concise epoch {epoch}: L2 norm of w {net[0].weight.norm().item():.6f}")

    def dropout_layer(X, dropout):
        assert 0 <= dropout <= 1
        if dropout == 1:
            return torch.zeros_like(X)
        mask = (torch.rand(X.shape) > dropout).float()
        return mask * X / (1.0 - dropout)

    X = torch.arange(16, dtype=torch.float32).reshape((2, 8))
    print("dropout_p = 0:", dropout_layer(X, 0))
    print("dropout_p = 0.5:", dropout_layer(X, 0.5))
    print("dropout_p = 1:", dropout_layer(X, 1))

    class DropoutMLPScratch(nn.Module):
        def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2, dropout_1, dropout_2):
            super().__init__()
            self.lin1 = nn.LazyLinear(num_hiddens_1)
            self.lin2 = nn.LazyLinear(num_hiddens_2)
            self.lin3 = nn.LazyLinear(num_outputs)
            self.relu = nn.ReLU()
            self.dropout_1, self.dropout_2 = dropout_1, dropout_2

        def forward(self, X):
            H1 = self.relu(self.lin1(X.reshape((X.shape[0], -1))))
            if self.training:
                H1 = dropout_layer(H1, self.dropout_1)
            H2 = self.relu(self.lin2(H1))
            if self.training:
                H2 = dropout_layer(H2, self.dropout_2)
            return self.lin3(H2)

    images, classes = fake_images(16)
    for model in (DropoutMLPScratch(10, 32, 16, 0.5, 0.5),
                  nn.Sequential(nn.Flatten(), nn.LazyLinear(32), nn.ReLU(), nn.Dropout(0.5),
                                nn.LazyLinear(16), nn.ReLU(), nn.Dropout(0.5), nn.LazyLinear(10))):
        model(images)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            l = F.cross_entropy(model(images), classes)
            opt.zero_grad()
            l.backward()
            opt.step()
            print(f"{type(model).__name__} step {step}: {l.item():.6f}")
        model.eval()
        print("eval:", F.cross_entropy(model(images), classes).item())


def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    if not torch.is_grad_enabled():
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        X_hat = (X - mean) / torch.sqrt(var + eps)
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta
    return Y, moving_mean.data, moving_var.data


class BatchNorm(nn.Module):
    def __init__(self, num_features, num_dims):
        super().__init__()
        shape = (1, num_features) if num_dims == 2 else (1, num_features, 1, 1)
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.1)
        return Y


def conv_nets():
    images, classes = fake_images(16, size=28)
    lenet_scratch_bn = nn.Sequential(
        nn.LazyConv2d(6, kernel_size=5), BatchNorm(6, num_dims=4), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.LazyConv2d(16, kernel_size=5), BatchNorm(16, num_dims=4), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
        nn.LazyLinear(32), BatchNorm(32, num_dims=2), nn.Sigmoid(), nn.LazyLinear(10))
    lenet_concise_bn = nn.Sequential(
        nn.LazyConv2d(6, kernel_size=5, padding=2), nn.LazyBatchNorm2d(), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.LazyConv2d(16, kernel_size=5), nn.LazyBatchNorm2d(), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
        nn.LazyLinear(32), nn.LazyBatchNorm1d(), nn.Sigmoid(), nn.LazyLinear(10))
    alexnet_small = nn.Sequential(
        nn.LazyConv2d(8, kernel_size=5, stride=2, padding=1), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.LazyConv2d(12, kernel_size=3, padding=1), nn.ReLU(),
        nn.LazyConv2d(12, kernel_size=3, padding=1), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2), nn.Flatten(),
        nn.LazyLinear(32), nn.ReLU(), nn.Dropout(p=0.5), nn.LazyLinear(10))

    def init_cnn(module):
        if type(module) == nn.Linear or type(module) == nn.Conv2d:
            nn.init.xavier_uniform_(module.weight)

    for name, net in (("lenet-scratch-bn", lenet_scratch_bn), ("lenet-bn", lenet_concise_bn),
                      ("alexnet", alexnet_small)):
        X = torch.randn(1, 1, 28, 28)
        net(images[:2])  # the dry run: lazy shapes
        net.apply(init_cnn)
        for layer in net:
            X = layer(X) if not isinstance(layer, (BatchNorm, nn.BatchNorm1d)) else X
            if name == "alexnet":
                print(layer.__class__.__name__, "output shape:\t", X.shape)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(2):
            net.train()
            l = F.cross_entropy(net(images), classes)
            opt.zero_grad()
            l.backward()
            opt.step()
            print(f"{name} step {step}: {l.item():.6f}")
        net.eval()
        with torch.no_grad():
            print(f"{name} eval: {F.cross_entropy(net(images), classes).item():.6f}")
    print(lenet_concise_bn[1], lenet_concise_bn[1].running_mean[:3], lenet_concise_bn[1].num_batches_tracked)
    print(lenet_scratch_bn[1].moving_var.reshape(-1)[:3], lenet_scratch_bn[1].gamma.reshape((-1,))[:3])


# -- recurrent ---------------------------------------------------------------------------------

def corpus_indices(vocab_size=12, n=200):
    return torch.tensor([(3 * i + i // 5) % vocab_size for i in range(n)])


class RNNScratch(nn.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.W_xh = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(torch.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(torch.zeros(num_hiddens))

    def forward(self, inputs, state=None):
        if state is None:
            state = torch.zeros((inputs.shape[1], self.num_hiddens), device=inputs.device)
        else:
            state, = state
        outputs = []
        for X in inputs:
            state = torch.tanh(torch.matmul(X, self.W_xh) + torch.matmul(state, self.W_hh) + self.b_h)
            outputs.append(state)
        return outputs, state


class RNNLMScratch(nn.Module):
    def __init__(self, rnn, vocab_size):
        super().__init__()
        self.rnn, self.vocab_size = rnn, vocab_size
        self.W_hq = nn.Parameter(torch.randn(rnn.num_hiddens, vocab_size) * 0.01)
        self.b_q = nn.Parameter(torch.zeros(vocab_size))

    def one_hot(self, X):
        return F.one_hot(X.T, self.vocab_size).type(torch.float32)

    def output_layer(self, rnn_outputs):
        outputs = [torch.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs]
        return torch.stack(outputs, 1)

    def forward(self, X, state=None):
        rnn_outputs, _ = self.rnn(self.one_hot(X), state)
        return self.output_layer(rnn_outputs)

    def predict(self, prefix, num_preds):
        state, outputs = None, [prefix[0]]
        for i in range(len(prefix) + num_preds - 1):
            X = torch.tensor([[outputs[-1]]])
            embs = self.one_hot(X)
            rnn_outputs, state = self.rnn(embs, state)
            if i < len(prefix) - 1:
                outputs.append(prefix[i + 1])
            else:
                Y = self.output_layer(rnn_outputs)
                outputs.append(int(Y.argmax(axis=2).reshape(1)))
        return outputs


class RNNLM(RNNLMScratch):
    """The concise language model around ``nn.GRU`` / ``nn.LSTM``."""

    def __init__(self, rnn, vocab_size):
        nn.Module.__init__(self)
        self.rnn, self.vocab_size = rnn, vocab_size
        self.linear = nn.LazyLinear(vocab_size)

    def output_layer(self, hiddens):
        return self.linear(hiddens).swapaxes(0, 1)

    def predict(self, prefix, num_preds):
        state, outputs = None, [prefix[0]]
        for i in range(len(prefix) + num_preds - 1):
            X = torch.tensor([[outputs[-1]]])
            rnn_outputs, state = self.rnn(self.one_hot(X), state)
            if i < len(prefix) - 1:
                outputs.append(prefix[i + 1])
            else:
                outputs.append(int(self.output_layer(rnn_outputs).argmax(axis=2).reshape(1)))
        return outputs


def grad_clipping(model, grad_clip_val):
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > grad_clip_val:
        for param in params:
            param.grad[:] *= grad_clip_val / norm
    return norm


def recurrent():
    vocab_size, num_steps = 12, 6
    corpus = corpus_indices(vocab_size)
    X = torch.stack([corpus[i: i + num_steps] for i in range(0, 48, 3)])
    Y = torch.stack([corpus[i + 1: i + num_steps + 1] for i in range(0, 48, 3)])
    for name, model in (("scratch", RNNLMScratch(RNNScratch(vocab_size, 16), vocab_size)),
                        ("gru", RNNLM(nn.GRU(vocab_size, 16), vocab_size)),
                        ("lstm", RNNLM(nn.LSTM(vocab_size, 16), vocab_size))):
        model(X[:1])
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        for epoch in range(4):
            l = F.cross_entropy(model(X).reshape(-1, vocab_size), Y.reshape(-1))
            opt.zero_grad()
            with torch.no_grad():
                l.backward()
            norm = grad_clipping(model, 1)
            opt.step()
            print(f"{name} epoch {epoch}: perplexity {math.exp(l.item()):.6f} grad norm {float(norm):.6f}")
        print(name, model.predict([1, 4, 7], 6))
    print(model.rnn, [tuple(p.shape) for p in model.rnn.parameters()])


# -- attention scoring -----------------------------------------------------------------------------

def masked_softmax(X, valid_lens):
    def _sequence_mask(X, valid_len, value=0):
        maxlen = X.size(1)
        mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
        X[~mask] = value
        return X

    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = _sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout, **kwargs):
        super().__init__(**kwargs)
        self.W_k = nn.LazyLinear(num_hiddens, bias=False)
        self.W_q = nn.LazyLinear(num_hiddens, bias=False)
        self.w_v = nn.LazyLinear(1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        queries, keys = self.W_q(queries), self.W_k(keys)
        features = queries.unsqueeze(2) + keys.unsqueeze(1)
        features = torch.tanh(features)
        scores = self.w_v(features).squeeze(-1)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class DotProductAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


def attention_scoring():
    print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([2, 3])))
    print(masked_softmax(torch.rand(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))
    queries = torch.normal(0, 1, (2, 1, 20))
    keys = torch.normal(0, 1, (2, 10, 2))
    values = torch.normal(0, 1, (2, 10, 4))
    valid_lens = torch.tensor([2, 6])
    attention = AdditiveAttention(num_hiddens=8, dropout=0.1)
    attention.eval()
    print(attention(queries, keys, values, valid_lens))
    print(attention.attention_weights.reshape((1, 1, 2, 10)))
    queries = torch.normal(0, 1, (2, 1, 2))
    attention = DotProductAttention(dropout=0.5)
    attention.eval()
    out = attention(queries, keys, values, valid_lens)
    print(out.shape, out.sum().item())
    attention.train()
    out = attention(queries, keys, values, valid_lens)
    print("train-mode dropout:", out.sum().item())


if __name__ == "__main__":
    torch.manual_seed(0)
    random.seed(0)
    linear_regression()
    softmax_regression()
    mlp_and_init()
    weight_decay_and_dropout()
    conv_nets()
    recurrent()
    attention_scoring()
