# ruff: noqa  (the lecture notebook's code, its own style kept)
# Karpathy's "Neural Networks: Zero to Hero" lecture notebook
# lectures/makemore/makemore_part2_mlp.ipynb (github.com/karpathy/nn-zero-to-hero, MIT
# License, stored commit 4c35597046b21602524fd572c68d9e35173f5d87): the Bengio et al. MLP --
# embedding lookup C[X], emb.view, tanh layer, manual softmax and then F.cross_entropy,
# minibatches by torch.randint, the train/dev/test split, the learning-rate sweep tensors,
# the embedding scatter plot and sampling with a seeded torch.Generator. Its code cells, in
# order, as one script. Changes, and only these:
# * names.txt is not shipped: the test runs the script in this folder, whose names.txt is
#   200 made-up lowercase names;
# * a cell whose last line is a bare expression (which the notebook displays) prints it:
#   `x` became `print(x)`;
# * the IPython magic `%matplotlib inline` is gone; the plotting cells stay (the test uses
#   matplotlib's Agg backend);
# * sizes: the training loop runs 24 steps instead of 200000 (learning-rate decay at step 12
#   instead of 100000);
# * the notebook's unexecuted early cell `loss = -prob[torch.arange(32), Y].log().mean()`
#   indexes with 32 rows (the lecture's first five words); over the whole word list it raises
#   IndexError in torch as in shardflow, so it reads `torch.arange(X.shape[0])` here.
import torch
import torch.nn.functional as F
import matplotlib.pyplot as plt # for making figures

# read in all the words
words = open('names.txt', 'r').read().splitlines()
print(words[:8])

print(len(words))

# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
print(itos)

# build the dataset

block_size = 3 # context length: how many characters do we take to predict the next one?
X, Y = [], []
for w in words:
  
  #print(w)
  context = [0] * block_size
  for ch in w + '.':
    ix = stoi[ch]
    X.append(context)
    Y.append(ix)
    #print(''.join(itos[i] for i in context), '--->', itos[ix])
    context = context[1:] + [ix] # crop and append
  
X = torch.tensor(X)
Y = torch.tensor(Y)

print((X.shape, X.dtype, Y.shape, Y.dtype))

# build the dataset
block_size = 3 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  for w in words:

    #print(w)
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      #print(''.join(itos[i] for i in context), '--->', itos[ix])
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

import random
random.seed(42)
random.shuffle(words)
n1 = int(0.8*len(words))
n2 = int(0.9*len(words))

Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])

C = torch.randn((27, 2))

emb = C[X]
print(emb.shape)

W1 = torch.randn((6, 100))
b1 = torch.randn(100)

h = torch.tanh(emb.view(-1, 6) @ W1 + b1)

print(h)

print(h.shape)

W2 = torch.randn((100, 27))
b2 = torch.randn(27)

logits = h @ W2 + b2

print(logits.shape)

counts = logits.exp()

prob = counts / counts.sum(1, keepdims=True)

print(prob.shape)

loss = -prob[torch.arange(X.shape[0]), Y].log().mean()
print(loss)

# ------------ now made respectable :) ---------------

print((Xtr.shape, Ytr.shape)) # dataset

g = torch.Generator().manual_seed(2147483647) # for reproducibility
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g)
b1 = torch.randn(200, generator=g)
W2 = torch.randn((200, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]

print(sum(p.nelement() for p in parameters)) # number of parameters in total

for p in parameters:
  p.requires_grad = True

lre = torch.linspace(-3, 0, 1000)
lrs = 10**lre

lri = []
lossi = []
stepi = []

for i in range(24):
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (32,))
  
  # forward pass
  emb = C[Xtr[ix]] # (32, 3, 2)
  h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
  logits = h @ W2 + b2 # (32, 27)
  loss = F.cross_entropy(logits, Ytr[ix])
  #print(loss.item())
  
  # backward pass
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update
  #lr = lrs[i]
  lr = 0.1 if i < 12 else 0.01
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  #lri.append(lre[i])
  stepi.append(i)
  lossi.append(loss.log10().item())

#print(loss.item())

print(plt.plot(stepi, lossi))

emb = C[Xtr] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ytr)
print(loss)

emb = C[Xdev] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ydev)
print(loss)

# visualize dimensions 0 and 1 of the embedding matrix C for all characters
plt.figure(figsize=(8,8))
plt.scatter(C[:,0].data, C[:,1].data, s=200)
for i in range(C.shape[0]):
    plt.text(C[i,0].item(), C[i,1].item(), itos[i], ha="center", va="center", color='white')
plt.grid('minor')

# training split, dev/validation split, test split
# 80%, 10%, 10%

context = [0] * block_size
print(C[torch.tensor([context])].shape)



# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(20):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      emb = C[torch.tensor([context])] # (1,block_size,d)
      h = torch.tanh(emb.view(1, -1) @ W1 + b1)
      logits = h @ W2 + b2
      probs = F.softmax(logits, dim=1)
      ix = torch.multinomial(probs, num_samples=1, generator=g).item()
      context = context[1:] + [ix]
      out.append(ix)
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out))
