"""Synthetic data sets in the formats public programs read (the originals download them)."""

import os

import numpy as np


def write_synthetic_cora(path, nodes=40, feats=30, classes=3, edges=80, seed=0):
    """A random graph in Cora's formats: cora.content lines `<paper id> <0/1 words...>
    <class label>`, cora.cites lines `<cited id> <citing id>`."""
    rng = np.random.default_rng(seed)
    os.makedirs(path, exist_ok=True)
    ids = rng.choice(100000, nodes, replace=False)
    words = (rng.random((nodes, feats)) < 0.2).astype(int)
    labels = rng.choice(['Neural_Networks', 'Theory', 'Genetic_Algorithms'][:classes], nodes)
    with open(os.path.join(path, 'cora.content'), 'w') as f:
        for i in range(nodes):
            f.write('\t'.join([str(ids[i]), *map(str, words[i]), labels[i]]) + '\n')
    with open(os.path.join(path, 'cora.cites'), 'w') as f:
        for a, b in rng.integers(0, nodes, (edges, 2)):
            f.write(f'{ids[a]}\t{ids[b]}\n')


NAMES = {
    "English": ["Smith", "Jackson", "Brown", "Taylor", "Walker", "Wright", "Green", "Hall"],
    "Japanese": ["Satoshi", "Tanaka", "Suzuki", "Yamamoto", "Kobayashi", "Sato", "Ito"],
    "Russian": ["Dovesky", "Ivanov", "Petrov", "Smirnov", "Volkov", "Sokolov", "Popov"],
}


def write_name_files(path):
    """data/names/<Language>.txt files, one name a line, as the char-RNN tutorials read."""
    os.makedirs(path, exist_ok=True)
    for language, names in NAMES.items():
        with open(os.path.join(path, f"{language}.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(names) + "\n")


def write_nanogpt_data(path, dataset="tiny", vocab_size=32, seed=0):
    """nanoGPT's prepared-data layout: data/<dataset>/train.bin and val.bin (uint16 token
    ids, as its prepare.py scripts write them) and meta.pkl with the vocab size."""
    import pickle

    rng = np.random.default_rng(seed)
    directory = os.path.join(path, "data", dataset)
    os.makedirs(directory, exist_ok=True)
    rng.integers(0, vocab_size, 400).astype(np.uint16).tofile(os.path.join(directory, "train.bin"))
    rng.integers(0, vocab_size, 200).astype(np.uint16).tofile(os.path.join(directory, "val.bin"))
    with open(os.path.join(directory, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": vocab_size}, f)


MAKEMORE_NAMES = ("emma olivia ava isabella sophia charlotte mia amelia harper evelyn abigail emily "
                  "elizabeth mila ella avery sofia camila aria scarlett victoria madison luna grace "
                  "chloe penelope layla riley zoey nora lily eleanor hannah lillian addison aubrey "
                  "ellie stella natalie zoe leah hazel").split()


def write_makemore_names(path):
    """makemore's input: names.txt, one name a line."""
    with open(os.path.join(path, "names.txt"), "w") as f:
        f.write("\n".join(MAKEMORE_NAMES) + "\n")
