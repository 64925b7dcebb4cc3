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
           "tree_structure", "tree_map", "tree_map_only", "tree_all", "tree_any", "tree_iter"]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable[[Any], tuple[list, Any]]
    unflatten_fn: Callable[[Iterable, Any], Any]


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None, to_dumpable_context=None,
                         from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Make ``cls`` a container: ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context) -> x``. The serialization and key-path arguments of torch's
    signature are accepted and unused (shardflow has no tree-spec serialization)."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


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
