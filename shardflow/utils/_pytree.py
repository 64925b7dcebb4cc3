"""``torch.utils._pytree`` path: flatten nested containers to a list of leaves and a
``TreeSpec``, map over leaves, rebuild.

Algorithm: a node is a value whose type is registered (list, tuple, dict, namedtuple,
OrderedDict, defaultdict, deque, and types added with ``register_pytree_node``); its flatten
function gives ``(children, context)`` and its unflatten function rebuilds it from rebuilt
children and the context. Anything else (a tensor, a number, None) is a leaf. ``tree_flatten``
walks depth first, children in the node's order (a dict's insertion order, as torch), and
returns the leaves and the spec; ``tree_unflatten`` consumes leaves in the same order.
"""

from __future__ import annotations

import collections
import types
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any", "tree_iter", "tree_map_",
           "tree_map_only_", "tree_all_only", "tree_any_only", "tree_is_leaf", "SequenceKey", "MappingKey",
           "GetAttrKey", "keystr", "key_get", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance"]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable[[Any], tuple[list, Any]]
    unflatten_fn: Callable[[Iterable, Any], Any]
    flatten_with_keys_fn: Callable[[Any], tuple[list, Any]] | None = None


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``; ``flatten_with_keys_fn(x) -> ([(key, child)],
    context)`` gives the key paths (``tree_flatten_with_path``). The serialization arguments of
    torch's signature are accepted and unused (shardflow has no tree-spec serialization)."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


def _is_namedtuple_instance(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class _NamedTupleMarker:
    """The registry key of every namedtuple class (the class itself is the context)."""


register_pytree_node(list, lambda x: (list(x), None), lambda xs, _: list(xs))
register_pytree_node(tuple, lambda x: (list(x), None), lambda xs, _: tuple(xs))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())), lambda xs, keys: dict(zip(keys, xs)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda xs, keys: collections.OrderedDict(zip(keys, xs)))
register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
                     lambda xs, ctx: collections.defaultdict(ctx[0], zip(ctx[1], xs)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen), lambda xs, maxlen: collections.deque(xs, maxlen))
register_pytree_node(_NamedTupleMarker, lambda x: (list(x), type(x)), lambda xs, cls: cls(*xs))


def _node_type(x):
    if _is_namedtuple_instance(x):
        return _NamedTupleMarker
    return type(x) if type(x) in SUPPORTED_NODES else None


class TreeSpec:
    """The structure of a flattened tree: the node ``type`` (None for a leaf), its flatten
    ``context`` and the specs of its children."""

    def __init__(self, type, context, children_specs: list[TreeSpec]) -> None:
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        return self.type is None

    def children(self) -> list[TreeSpec]:
        return list(self.children_specs)

    def child(self, index: int) -> TreeSpec:
        return self.children_specs[index]

    def unflatten(self, leaves: Iterable) -> Any:
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        it = iter(leaves)
        return self._build(it)

    def _build(self, it):
        if self.type is None:
            return next(it)
        children = [c._build(it) for c in self.children_specs]
        key = _NamedTupleMarker if self.type is not None and _is_namedtuple_type(self.type) else self.type
        return SUPPORTED_NODES[key].unflatten_fn(children, self.context)

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.type == other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def __hash__(self) -> int:
        return hash((self.type, self.num_leaves, self.num_nodes))

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        name = self.type.__name__
        inner = ",\n".join(" " * (indent + 2) + c.__repr__(indent + 2) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [" + (f"\n{inner}" if inner else "") + "])"


def _is_namedtuple_type(t) -> bool:
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


class LeafSpec(TreeSpec):
    """The spec of a leaf (torch's class; ``TreeSpec.is_leaf()`` is the check to use)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` depth first and its ``TreeSpec``; ``is_leaf(x)`` True stops the walk at ``x``."""
    leaves: list = []

    def walk(x) -> TreeSpec:
        node = None if is_leaf is not None and is_leaf(x) else _node_type(x)
        if node is None:
            leaves.append(x)
            return LeafSpec()
        children, context = SUPPORTED_NODES[node].flatten_fn(x)
        kind = type(x)
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> Any:
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree, is_leaf=None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree, is_leaf=None):
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree, *rests, is_leaf=None) -> Any:
    """``tree`` with each leaf ``x`` replaced by ``func(x, *(the matching leaves of rests))``;
    each of ``rests`` must have ``tree``'s structure (or a prefix-compatible one of the same leaves)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for r in rests:
        r_leaves, r_spec = tree_flatten(r, is_leaf)
        if len(r_leaves) != len(leaves):
            raise ValueError(f"tree_map: a tree in `rests` has {len(r_leaves)} leaves, the first tree has "
                             f"{len(leaves)}; pass trees of the same structure")
        others.append(r_leaves)
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def _type_pred(type_or_types_or_pred):
    if isinstance(type_or_types_or_pred, type | tuple | types.UnionType):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def tree_map_only(type_or_types_or_pred, /, func: Callable, tree, is_leaf=None) -> Any:
    """``tree_map`` applying ``func`` only to the leaves of the given type(s) (or passing the
    predicate); other leaves are kept."""
    pred = _type_pred(type_or_types_or_pred)
    return tree_map(lambda x: func(x) if pred(x) else x, tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_is_leaf(tree, is_leaf=None) -> bool:
    """Whether ``tree`` is a leaf (not a registered container, or ``is_leaf(tree)``)."""
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


def tree_map_(func: Callable, tree, *rests, is_leaf=None) -> Any:
    """``func`` called on every leaf (with the matching leaves of ``rests``) for its side
    effects; returns ``tree`` itself."""
    tree_map(func, tree, *rests, is_leaf=is_leaf)
    return tree


def tree_map_only_(type_or_types_or_pred, /, func: Callable, tree, is_leaf=None) -> Any:
    pred = _type_pred(type_or_types_or_pred)
    return tree_map_(lambda x: func(x) if pred(x) else None, tree, is_leaf=is_leaf)


def tree_all_only(type_or_types, /, pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    """``pred`` holds for every leaf of the given type(s) (other leaves are not asked)."""
    only = _type_pred(type_or_types)
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if only(x))


def tree_any_only(type_or_types, /, pred: Callable[[Any], bool], tree, is_leaf=None) -> bool:
    only = _type_pred(type_or_types)
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if only(x))


def is_namedtuple_class(cls) -> bool:
    return _is_namedtuple_type(cls)


def is_namedtuple_instance(obj) -> bool:
    return _is_namedtuple_instance(obj)


def is_namedtuple(obj) -> bool:
    """A namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


# ---------------------------------------------------------------- key paths
class SequenceKey(NamedTuple):
    """The index of a child in a list/tuple/deque: prints ``[idx]``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


class MappingKey(NamedTuple):
    """The key of a child in a dict: prints ``[key!r]``."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


class GetAttrKey(NamedTuple):
    """The attribute name of a child (a namedtuple field): prints ``.name``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp: tuple) -> str:
    """A key path as source text: ``(MappingKey('a'), SequenceKey(0))`` -> ``['a'][0]``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp: tuple) -> Any:
    """The value at key path ``kp`` in ``obj``."""
    for k in kp:
        obj = k.get(obj)
    return obj


def _keyed_children(x, node) -> list:
    """``[(key, child)]`` of container ``x`` (registered type ``node``)."""
    if node is _NamedTupleMarker:
        return [(GetAttrKey(f), getattr(x, f)) for f in type(x)._fields]
    if node in (dict, collections.OrderedDict, collections.defaultdict):
        return [(MappingKey(k), v) for k, v in x.items()]
    if node in (list, tuple, collections.deque):
        return [(SequenceKey(i), v) for i, v in enumerate(x)]
    with_keys = SUPPORTED_NODES[node].flatten_with_keys_fn
    if with_keys is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node}. Please pass a "
                         "flatten_with_keys_fn argument to register_pytree_node.")
    return list(with_keys(x)[0])


def tree_flatten_with_path(tree, is_leaf=None) -> tuple[list, TreeSpec]:
    """``([(key path, leaf)], spec)``: ``tree_flatten`` with each leaf's path from the root."""
    paths: list = []

    def walk(x, kp):
        node = None if is_leaf is not None and is_leaf(x) else _node_type(x)
        if node is None:
            paths.append(kp)
            return
        for k, c in _keyed_children(x, node):
            walk(c, (*kp, k))

    walk(tree, ())
    leaves, spec = tree_flatten(tree, is_leaf)
    return list(zip(paths, leaves)), spec


def tree_leaves_with_path(tree, is_leaf=None) -> list:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable, tree, *rests, is_leaf=None) -> Any:
    """``tree`` with each leaf ``x`` replaced by ``func(key_path, x, *(matching leaves of rests))``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    for o in others:
        if len(o) != len(pairs):
            raise ValueError(f"tree_map_with_path: a tree in `rests` has {len(o)} leaves, the first tree "
                             f"has {len(pairs)}; pass trees of the same structure")
    return spec.unflatten(func(kp, x, *xs) for (kp, x), *xs in zip(pairs, *others))
