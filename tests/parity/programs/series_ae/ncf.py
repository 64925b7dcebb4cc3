# ruff: noqa: UP008, UP032  (the repository's own style kept: super(Class, self), str.format)
"""Neural collaborative filtering (GMF, MLP, NeuMF pre-trained from both) on made-up
implicit feedback, with hit ratio and NDCG at k, as a script.

Modelled on guoyang9/NCF (``model.py``: the four embeddings, the halving MLP tower with
dropout, ``_init_weight_`` with ``normal_``/``xavier_uniform_``/``kaiming_uniform_(a=1,
nonlinearity='sigmoid')`` and NeuMF-pre's ``weight.data.copy_`` from the two pre-trained
models; ``data_utils.py``: a ``Dataset`` that draws negatives each epoch with
``np.random``; ``main.py``: ``BCEWithLogitsLoss``, Adam (SGD for NeuMF-pre), the
``DataLoader(shuffle=True)`` loop; ``evaluate.py``: ``torch.topk`` then ``torch.take``,
``hit`` and ``ndcg``). This is a re-implementation in our own words with tiny sizes and
synthetic data, not a copy of that repository's files.
"""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data as data


class NCF(nn.Module):
    def __init__(self, user_num, item_num, factor_num, num_layers, dropout, model, GMF_model=None, MLP_model=None):
        super(NCF, self).__init__()
        self.dropout = dropout
        self.model = model
        self.GMF_model = GMF_model
        self.MLP_model = MLP_model

        self.embed_user_GMF = nn.Embedding(user_num, factor_num)
        self.embed_item_GMF = nn.Embedding(item_num, factor_num)
        self.embed_user_MLP = nn.Embedding(user_num, factor_num * (2 ** (num_layers - 1)))
        self.embed_item_MLP = nn.Embedding(item_num, factor_num * (2 ** (num_layers - 1)))

        tower = []
        for i in range(num_layers):
            width = factor_num * (2 ** (num_layers - i))
            tower.append(nn.Dropout(p=self.dropout))
            tower.append(nn.Linear(width, width // 2))
            tower.append(nn.ReLU())
        self.MLP_layers = nn.Sequential(*tower)

        predict_size = factor_num if self.model in ['MLP', 'GMF'] else factor_num * 2
        self.predict_layer = nn.Linear(predict_size, 1)
        self._init_weight_()

    def _init_weight_(self):
        if not self.model == 'NeuMF-pre':
            nn.init.normal_(self.embed_user_GMF.weight, std=0.01)
            nn.init.normal_(self.embed_user_MLP.weight, std=0.01)
            nn.init.normal_(self.embed_item_GMF.weight, std=0.01)
            nn.init.normal_(self.embed_item_MLP.weight, std=0.01)
            for m in self.MLP_layers:
                if isinstance(m, nn.Linear):
                    nn.init.xavier_uniform_(m.weight)
            nn.init.kaiming_uniform_(self.predict_layer.weight, a=1, nonlinearity='sigmoid')
            for m in self.modules():
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.data.zero_()
        else:
            self.embed_user_GMF.weight.data.copy_(self.GMF_model.embed_user_GMF.weight)
            self.embed_item_GMF.weight.data.copy_(self.GMF_model.embed_item_GMF.weight)
            self.embed_user_MLP.weight.data.copy_(self.MLP_model.embed_user_MLP.weight)
            self.embed_item_MLP.weight.data.copy_(self.MLP_model.embed_item_MLP.weight)
            for (m1, m2) in zip(self.MLP_layers, self.MLP_model.MLP_layers):
                if isinstance(m1, nn.Linear) and isinstance(m2, nn.Linear):
                    m1.weight.data.copy_(m2.weight)
                    m1.bias.data.copy_(m2.bias)
            joined = torch.cat([self.GMF_model.predict_layer.weight, self.MLP_model.predict_layer.weight], dim=1)
            summed = self.GMF_model.predict_layer.bias + self.MLP_model.predict_layer.bias
            self.predict_layer.weight.data.copy_(0.5 * joined)
            self.predict_layer.bias.data.copy_(0.5 * summed)

    def forward(self, user, item):
        if not self.model == 'MLP':
            output_GMF = self.embed_user_GMF(user) * self.embed_item_GMF(item)
        if not self.model == 'GMF':
            interaction = torch.cat((self.embed_user_MLP(user), self.embed_item_MLP(item)), -1)
            output_MLP = self.MLP_layers(interaction)
        if self.model == 'GMF':
            concat = output_GMF
        elif self.model == 'MLP':
            concat = output_MLP
        else:
            concat = torch.cat((output_GMF, output_MLP), -1)
        prediction = self.predict_layer(concat)
        return prediction.view(-1)


class NCFData(data.Dataset):
    """Positive pairs (label 1) and, in training, ``num_ng`` sampled negatives per positive."""

    def __init__(self, features, num_item, train_mat=None, num_ng=0, is_training=None):
        super(NCFData, self).__init__()
        self.features_ps = features
        self.num_item = num_item
        self.train_mat = train_mat
        self.num_ng = num_ng
        self.is_training = is_training
        self.labels = [0 for _ in range(len(features))]

    def ng_sample(self):
        assert self.is_training, 'no need to sampling when testing'
        self.features_ng = []
        for x in self.features_ps:
            u = x[0]
            for t in range(self.num_ng):
                j = np.random.randint(self.num_item)
                while (u, j) in self.train_mat:
                    j = np.random.randint(self.num_item)
                self.features_ng.append([u, j])
        labels_ps = [1 for _ in range(len(self.features_ps))]
        labels_ng = [0 for _ in range(len(self.features_ng))]
        self.features_fill = self.features_ps + self.features_ng
        self.labels_fill = labels_ps + labels_ng

    def __len__(self):
        return (self.num_ng + 1) * len(self.labels)

    def __getitem__(self, idx):
        features = self.features_fill if self.is_training else self.features_ps
        labels = self.labels_fill if self.is_training else self.labels
        return features[idx][0], features[idx][1], labels[idx]


def load_all(user_num=12, item_num=20, test_num=9):
    """Made-up interactions: each user likes items near ``3 * user``; one held-out positive
    per user, ranked among ``test_num`` negatives in the test list."""
    rng = np.random.RandomState(7)
    train_data, train_mat = [], set()
    test_data = []
    for u in range(user_num):
        liked = sorted({(3 * u + d) % item_num for d in rng.randint(0, 5, size=4)})
        held, rest = liked[0], liked[1:]
        for i in rest:
            train_data.append([u, i])
            train_mat.add((u, i))
        test_data.append([u, held])
        pool = [i for i in range(item_num) if i not in liked]
        for i in rng.choice(pool, size=test_num, replace=False):
            test_data.append([u, int(i)])
    return train_data, test_data, user_num, item_num, train_mat


def hit(gt_item, pred_items):
    return 1 if gt_item in pred_items else 0


def ndcg(gt_item, pred_items):
    if gt_item in pred_items:
        index = pred_items.index(gt_item)
        return np.reciprocal(np.log2(index + 2))
    return 0


def metrics(model, test_loader, top_k):
    HR, NDCG = [], []
    for user, item, label in test_loader:
        predictions = model(user, item)
        _, indices = torch.topk(predictions, top_k)
        recommends = torch.take(item, indices).cpu().numpy().tolist()
        gt_item = item[0].item()
        HR.append(hit(gt_item, recommends))
        NDCG.append(ndcg(gt_item, recommends))
    return np.mean(HR), np.mean(NDCG)


def run(model_name, train_loader, test_loader, user_num, item_num, GMF_model=None, MLP_model=None,
        epochs=2, lr=0.01):
    model = NCF(user_num, item_num, 8, 2, 0.0, model_name, GMF_model, MLP_model)
    loss_function = nn.BCEWithLogitsLoss()
    if model_name == 'NeuMF-pre':
        optimizer = optim.SGD(model.parameters(), lr=lr)
    else:
        optimizer = optim.Adam(model.parameters(), lr=lr)
    print(model_name, sum(p.numel() for p in model.parameters()))
    best_hr = 0
    for epoch in range(epochs):
        model.train()
        train_loader.dataset.ng_sample()
        for step, (user, item, label) in enumerate(train_loader):
            label = label.float()
            model.zero_grad()
            prediction = model(user, item)
            loss = loss_function(prediction, label)
            loss.backward()
            optimizer.step()
            print(f"{model_name} epoch {epoch} step {step} users {user[:4].tolist()} loss {loss.item():.6f}")
        model.eval()
        HR, NDCG = metrics(model, test_loader, 3)
        print("HR: {:.3f}\tNDCG: {:.3f}".format(np.mean(HR), np.mean(NDCG)))
        if HR >= best_hr:
            best_hr = HR
            os.makedirs('models', exist_ok=True)
            torch.save(model.state_dict(), 'models/{}.pth'.format(model_name))
    return model


if __name__ == "__main__":
    np.random.seed(0)
    torch.manual_seed(0)
    train_data, test_data, user_num, item_num, train_mat = load_all()
    train_dataset = NCFData(train_data, item_num, train_mat, 2, True)
    test_dataset = NCFData(test_data, item_num, train_mat, 0, False)
    train_loader = data.DataLoader(train_dataset, batch_size=32, shuffle=True, num_workers=0)
    test_loader = data.DataLoader(test_dataset, batch_size=10, shuffle=False, num_workers=0)
    GMF_model = run('GMF', train_loader, test_loader, user_num, item_num)
    MLP_model = run('MLP', train_loader, test_loader, user_num, item_num)
    print(MLP_model)
    GMF_model.load_state_dict(torch.load('models/GMF.pth'))
    neumf = run('NeuMF-pre', train_loader, test_loader, user_num, item_num, GMF_model, MLP_model, lr=0.05)
    print(list(neumf.state_dict().keys())[:6])
