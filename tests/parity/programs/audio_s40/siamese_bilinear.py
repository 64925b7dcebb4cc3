# ruff: noqa: E501, F401, I001, UP004, UP008, UP030, UP031, UP032  (the program's own style, kept)
"""
Three small public patterns around pair scoring, written as their sources write them:

* harveyslash/Facial-Similarity-with-Siamese-Networks-in-Pytorch (MIT): ``SiameseNetwork``
  (``ReflectionPad2d`` + ``Conv2d`` + ``ReLU`` + ``BatchNorm2d`` towers, ``forward_once``)
  and ``ContrastiveLoss`` (``F.pairwise_distance(..., keepdim=True)``, ``torch.clamp(margin
  - d, min=0.0)``), trained 5 Adam steps on synthetic "same / different" 1 x 16 x 16 pairs;
  the dissimilarity printout; the same towers scored by ``nn.PairwiseDistance(p=1)``,
  ``nn.CosineEmbeddingLoss(margin=0.2)`` (targets +1 / -1) and ``nn.TripletMarginLoss``.
* PetarV/DGI (MIT): Deep Graph Infomax's ``Discriminator`` (``nn.Bilinear(n_h, n_h, 1)``
  with ``xavier_uniform_`` weights, ``c.unsqueeze(1).expand_as(h)``, ``torch.squeeze(...,
  2)``) with ``AvgReadout`` + ``sigmoid`` and ``BCEWithLogitsLoss`` over a shuffled-feature
  corruption (``np.random.permutation``), 5 Adam steps of a one-layer dense GCN.
* kentonl/e2e-coref's distance features as the PyTorch ports write them:
  ``torch.bucketize`` of span distances into [1, 2, 3, 4, 5-7, 8-15, 16-31, 32-63, 64+]
  buckets (``right=True`` as well), a bucket embedding, and ``torch.searchsorted``.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SiameseNetwork(nn.Module):
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.cnn1 = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(1, 4, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(4),

            nn.ReflectionPad2d(1),
            nn.Conv2d(4, 8, kernel_size=3),
            nn.ReLU(inplace=True),
            nn.BatchNorm2d(8),
        )

        self.fc1 = nn.Sequential(
            nn.Linear(8 * 16 * 16, 32),
            nn.ReLU(inplace=True),

            nn.Linear(32, 32),
            nn.ReLU(inplace=True),

            nn.Linear(32, 5))

    def forward_once(self, x):
        output = self.cnn1(x)
        output = output.view(output.size()[0], -1)
        output = self.fc1(output)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        return output1, output2


class ContrastiveLoss(torch.nn.Module):
    """
    Contrastive loss function.
    Based on: http://yann.lecun.com/exdb/publis/pdf/hadsell-chopra-lecun-06.pdf
    """

    def __init__(self, margin=2.0):
        super(ContrastiveLoss, self).__init__()
        self.margin = margin

    def forward(self, output1, output2, label):
        euclidean_distance = F.pairwise_distance(output1, output2, keepdim=True)
        loss_contrastive = torch.mean((1 - label) * torch.pow(euclidean_distance, 2) +
                                      (label) * torch.pow(torch.clamp(self.margin - euclidean_distance, min=0.0), 2))

        return loss_contrastive


class AvgReadout(nn.Module):
    def __init__(self):
        super(AvgReadout, self).__init__()

    def forward(self, seq, msk):
        if msk is None:
            return torch.mean(seq, 1)
        else:
            msk = torch.unsqueeze(msk, -1)
            return torch.sum(seq * msk, 1) / torch.sum(msk)


class Discriminator(nn.Module):
    def __init__(self, n_h):
        super(Discriminator, self).__init__()
        self.f_k = nn.Bilinear(n_h, n_h, 1)

        for m in self.modules():
            self.weights_init(m)

    def weights_init(self, m):
        if isinstance(m, nn.Bilinear):
            torch.nn.init.xavier_uniform_(m.weight.data)
            if m.bias is not None:
                m.bias.data.fill_(0.0)

    def forward(self, c, h_pl, h_mi, s_bias1=None, s_bias2=None):
        c_x = torch.unsqueeze(c, 1)
        c_x = c_x.expand_as(h_pl)

        sc_1 = torch.squeeze(self.f_k(h_pl, c_x), 2)
        sc_2 = torch.squeeze(self.f_k(h_mi, c_x), 2)

        if s_bias1 is not None:
            sc_1 += s_bias1
        if s_bias2 is not None:
            sc_2 += s_bias2

        logits = torch.cat((sc_1, sc_2), 1)

        return logits


class GCN(nn.Module):
    def __init__(self, in_ft, out_ft, bias=True):
        super(GCN, self).__init__()
        self.fc = nn.Linear(in_ft, out_ft, bias=False)
        self.act = nn.PReLU()

        if bias:
            self.bias = nn.Parameter(torch.FloatTensor(out_ft))
            self.bias.data.fill_(0.0)
        else:
            self.register_parameter('bias', None)

        for m in self.modules():
            self.weights_init(m)

    def weights_init(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight.data)
            if m.bias is not None:
                m.bias.data.fill_(0.0)

    # Shape of seq: (batch, nodes, features)
    def forward(self, seq, adj, sparse=False):
        seq_fts = self.fc(seq)
        out = torch.bmm(adj, seq_fts)
        if self.bias is not None:
            out += self.bias

        return self.act(out)


class DGI(nn.Module):
    def __init__(self, n_in, n_h):
        super(DGI, self).__init__()
        self.gcn = GCN(n_in, n_h)
        self.read = AvgReadout()

        self.sigm = nn.Sigmoid()

        self.disc = Discriminator(n_h)

    def forward(self, seq1, seq2, adj, sparse, msk, samp_bias1, samp_bias2):
        h_1 = self.gcn(seq1, adj, sparse)

        c = self.read(h_1, msk)
        c = self.sigm(c)

        h_2 = self.gcn(seq2, adj, sparse)

        ret = self.disc(c, h_1, h_2, samp_bias1, samp_bias2)

        return ret

    # Detach the return variables
    def embed(self, seq, adj, sparse, msk):
        h_1 = self.gcn(seq, adj, sparse)
        c = self.read(h_1, msk)

        return h_1.detach(), c.detach()


def bucket_distance(distances):
    """
    Places the given values (designed for distances) into 9 semi-logscale buckets:
    [0, 1, 2, 3, 4, 5-7, 8-15, 16-31, 32-63, 64+].
    """
    boundaries = torch.tensor([1, 2, 3, 4, 5, 8, 16, 32, 64])
    return torch.bucketize(distances, boundaries, right=True).clamp(max=9)


def main():
    torch.manual_seed(0)
    np.random.seed(0)
    # --- siamese ---
    protos = torch.rand(4, 1, 16, 16)
    idx1 = torch.randint(4, (12,))
    same = torch.rand(12) < 0.5
    idx2 = torch.where(same, idx1, (idx1 + 1 + torch.randint(3, (12,))) % 4)
    x1 = protos[idx1] + 0.1 * torch.randn(12, 1, 16, 16)
    x2 = protos[idx2] + 0.1 * torch.randn(12, 1, 16, 16)
    label = (~same).float().unsqueeze(1)  # 1: different
    net = SiameseNetwork()
    criterion = ContrastiveLoss()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.0005)
    for epoch in range(5):
        optimizer.zero_grad()
        output1, output2 = net(x1, x2)
        loss_contrastive = criterion(output1, output2, label)
        loss_contrastive.backward()
        optimizer.step()
        print("Epoch number {}\n Current loss {:.6f}\n".format(epoch, loss_contrastive.item()))
    net.eval()
    with torch.no_grad():
        output1, output2 = net(x1[:4], x2[:4])
        euclidean_distance = F.pairwise_distance(output1, output2)
        print('Dissimilarity', ['{:.4f}'.format(d) for d in euclidean_distance.tolist()], label[:4].view(-1).tolist())
        print('L1', [round(v, 4) for v in nn.PairwiseDistance(p=1)(output1, output2).tolist()])
        print('Linf', [round(v, 4) for v in nn.PairwiseDistance(p=float('inf'), keepdim=True)(output1, output2).view(-1).tolist()])
        print('self', nn.PairwiseDistance()(output1, output1).tolist())
    net.train()
    y = 1 - 2 * label.view(-1)
    o1, o2 = net(x1, x2)
    cos = nn.CosineEmbeddingLoss(margin=0.2)(o1, o2, y)
    cos_each = F.cosine_embedding_loss(o1, o2, y, margin=0.2, reduction='none')
    trip = nn.TripletMarginLoss(margin=1.0, p=2)(o1, o1.roll(1, 0).detach() + 0.1, o2)
    (cos + trip).backward()
    print('cosine embedding {:.6f} triplet {:.6f}'.format(cos.item(), trip.item()), [round(v, 5) for v in cos_each.tolist()])
    print('grad', '{:.6f}'.format(net.fc1[4].weight.grad.norm().item()))

    # --- Deep Graph Infomax ---
    nb_nodes, ft_size, hid_units = 10, 6, 8
    features = torch.rand(1, nb_nodes, ft_size)
    a = (torch.rand(nb_nodes, nb_nodes) < 0.3).float()
    a = ((a + a.t()) > 0).float() + torch.eye(nb_nodes)
    adj = (a / a.sum(1, keepdim=True)).unsqueeze(0)
    model = DGI(ft_size, hid_units)
    print(model.disc)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0)
    b_xent = nn.BCEWithLogitsLoss()
    for epoch in range(5):
        model.train()
        optimiser.zero_grad()
        idx = np.random.permutation(nb_nodes)
        shuf_fts = features[:, idx, :]
        lbl_1 = torch.ones(1, nb_nodes)
        lbl_2 = torch.zeros(1, nb_nodes)
        lbl = torch.cat((lbl_1, lbl_2), 1)
        logits = model(features, shuf_fts, adj, False, None, None, None)
        loss = b_xent(logits, lbl)
        print('Loss: {:.6f}'.format(loss.item()))
        loss.backward()
        optimiser.step()
    embeds, summary = model.embed(features, adj, False, None)
    print('embeds', tuple(embeds.shape), '{:.5f}'.format(embeds.sum().item()), [round(v, 4) for v in summary[0].tolist()])
    print('bilinear grad', '{:.6f}'.format(model.disc.f_k.weight.grad.norm().item()), tuple(model.disc.f_k.weight.shape))

    # --- distance buckets ---
    starts = torch.tensor([0, 3, 10, 40, 2, 7])
    ends = torch.tensor([0, 4, 16, 120, 33, 70])
    distances = ends - starts
    buckets = bucket_distance(distances)
    print('buckets', distances.tolist(), buckets.tolist(), buckets.dtype)
    print('left', torch.bucketize(distances, torch.tensor([1, 2, 3, 4, 5, 8, 16, 32, 64])).tolist())
    emb = nn.Embedding(10, 3)
    print('bucket emb', [round(v, 4) for v in emb(buckets).sum(0).tolist()])
    fl = torch.tensor([0.05, 0.5, 0.95, 0.25, 1.0])
    print('float bins', torch.bucketize(fl, torch.linspace(0, 1, 5), out_int32=True).tolist(),
          torch.searchsorted(torch.linspace(0, 1, 5), fl, side='right').tolist())


if __name__ == '__main__':
    main()
