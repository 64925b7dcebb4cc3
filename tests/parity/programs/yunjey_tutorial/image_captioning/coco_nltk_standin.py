"""Stand-ins for the non-torch packages the image-captioning tutorial reads its data with
(neither is installed; COCO is a download), and for the one matplotlib call of sample.py.
Written for this project, not copied.

* ``COCO(annotation_file)``: pycocotools' reader, the parts used: ``anns`` (id -> {"caption",
  "image_id"}) and ``loadImgs(id)`` ([{"file_name"}]), from a file in COCO's caption JSON
  layout (``annotations`` and ``images`` lists) that the test writes.
* ``word_tokenize(text)``: nltk's, for plain sentences: words and punctuation marks.
* ``matplotlib.pyplot.imshow(array)``: keeps the array in ``SHOWN`` (importing the real
  pyplot costs seconds, and sample.py only shows its input image).
"""

import json
import re
import types

SHOWN = []

class COCO:
    def __init__(self, annotation_file=None):
        with open(annotation_file) as f:
            dataset = json.load(f)
        self.anns = {a["id"]: a for a in dataset["annotations"]}
        self.imgs = {i["id"]: i for i in dataset["images"]}

    def loadImgs(self, ids=()):
        return [self.imgs[i] for i in ids] if isinstance(ids, list | tuple) else [self.imgs[ids]]


def word_tokenize(text):
    return re.findall(r"\w+|[^\w\s]", text)


def imshow(array, *args, **kwargs):
    SHOWN.append(array)


def modules():
    """``sys.modules`` entries for ``import nltk``, ``from pycocotools.coco import COCO`` and
    ``import matplotlib.pyplot as plt``."""
    nltk = types.ModuleType("coco_nltk_standin.nltk")
    nltk.tokenize = types.SimpleNamespace(word_tokenize=word_tokenize)
    coco = types.ModuleType("coco_nltk_standin.pycocotools.coco")
    coco.COCO = COCO
    pycocotools = types.ModuleType("coco_nltk_standin.pycocotools")
    pycocotools.coco = coco
    pyplot = types.ModuleType("coco_nltk_standin.matplotlib.pyplot")
    pyplot.imshow = imshow
    matplotlib = types.ModuleType("coco_nltk_standin.matplotlib")
    matplotlib.pyplot = pyplot
    return {"nltk": nltk, "pycocotools": pycocotools, "pycocotools.coco": coco, "matplotlib": matplotlib,
            "matplotlib.pyplot": pyplot}
