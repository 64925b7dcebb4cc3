"""The sbp rule table: op name -> rule, assembled from an explicit list of op families.

A *rule* is ``rule(name, func, args, kwargs)``: ``name`` is the op's registered name
(``autograd/dispatch.register``), ``func`` the plain op; it decides the sbp every global
input must have and the sbp and logical shape of each output, and runs the op on the shards
(``propagate.run_on_shards``), or returns ``NotImplemented`` for an argument pattern it does
not cover (the handler then falls back to gather -> compute -> re-shard).

Each family module (``elementwise.py``, ``reduce.py``, ...) owns a :class:`RuleSet` and
registers its rules on it next to the names of the ops they describe
(``@family.rule("sum", "mean")``). ``handler.py`` merges the families into one table with
:func:`build_table`, which refuses an op claimed by two families.

Why not inside ``shardflow/ops``: ops are layer L3 and the sbp vocabulary, boxing and
placements are L6 (``distributed``); an op module may not import them (``lint-imports``). So
the rules sit here, keyed by the op's registered name, one file per op family — the family's
name list and its rule side by side (OneFlow keeps an op's sbp signature with the op; this is
as close as the layers allow).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["Rule", "RuleSet", "build_table"]

Rule = Callable[[str, Callable, tuple, dict], object]


class RuleSet:
    """The sbp rules of one op family: ``@family.rule("sum", "mean")`` on each rule."""

    def __init__(self, family: str):
        self.family = family
        self.rules: dict[str, Rule] = {}

    def rule(self, *names: str) -> Callable[[Rule], Rule]:
        """Decorator: ``fn`` is the sbp rule of the ops ``names``."""

        def deco(fn: Rule) -> Rule:
            self.add(names, fn)
            return fn

        return deco

    def add(self, names: Iterable[str], fn: Rule) -> None:
        """Make ``fn`` the rule of every op in ``names`` (a family's name list)."""
        for n in names:
            if n in self.rules:
                raise ValueError(
                    f"sbp rules: op {n!r} is listed twice in the {self.family} family "
                    f"({self.rules[n].__name__} and {fn.__name__}); keep one"
                )
            self.rules[n] = fn

    def __repr__(self) -> str:
        return f"RuleSet({self.family!r}, {len(self.rules)} ops)"


def build_table(*families: RuleSet) -> dict[str, Rule]:
    """One ``{op name: rule}`` table; an op claimed by two families is an error."""
    table: dict[str, Rule] = {}
    owner: dict[str, str] = {}
    for fam in families:
        for n, fn in fam.rules.items():
            if n in table:
                raise ValueError(
                    f"sbp rules: op {n!r} has a rule in both the {owner[n]} and the "
                    f"{fam.family} family; an op belongs to one family"
                )
            table[n] = fn
            owner[n] = fam.family
    return table
