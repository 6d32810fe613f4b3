"""Dispatch on a probe's expectation category: one `functools.singledispatch` per
question ("what does the judge read for this category", "which needles does it have"),
one handler per category, and a loud failure for a category with no handler.

Kept apart from `continuity.traces.schema` on purpose: the schema's source is bound into
every trace key (`continuity.traces.keys.VALIDATION_CODE`), and how other modules
dispatch on its types is not part of a trace.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from continuity.traces.schema import Expectation

__all__ = ["EXPECTATION_TYPES", "by_category", "by_category_of", "unhandled_categories"]

_R = TypeVar("_R")
EXPECTATION_TYPES: tuple[type[Expectation], ...] = typing.get_args(Expectation)
_DISPATCHERS: list[tuple[str, tuple[type, ...], functools._SingleDispatchCallable[Any]]] = []


def by_category(base: Callable[..., _R]) -> functools._SingleDispatchCallable[_R]:
    """`base` as a `functools.singledispatch` over the expectation categories, the one
    way a category is dispatched on: one handler per category, registered with
    ``@f.register(SomeExpectation)``. The base's own body never runs: a category with no
    handler raises TypeError naming the function and the category (never a silent
    default). `unhandled_categories` lists the gaps of every dispatcher imported."""
    return by_category_of(EXPECTATION_TYPES)(base)


def by_category_of(
    kinds: tuple[type, ...],
) -> Callable[[Callable[..., _R]], functools._SingleDispatchCallable[_R]]:
    """`by_category` for a dispatch over only `kinds` (a subset its caller narrowed to):
    `unhandled_categories` checks those kinds only."""

    def decorate(base: Callable[..., _R]) -> functools._SingleDispatchCallable[_R]:
        name = f"{base.__module__}.{base.__qualname__}"

        @functools.wraps(base)
        def unhandled(expectation: object, *args: Any, **kwargs: Any) -> _R:
            kind = type(expectation).__name__
            raise TypeError(f"{name} has no handler for the {kind} expectation")

        dispatcher = functools.singledispatch(unhandled)
        _DISPATCHERS.append((name, kinds, dispatcher))
        return dispatcher

    return decorate


def unhandled_categories() -> list[str]:
    """``module.function: Category`` for every expectation category that a `by_category`
    dispatcher imported so far has no handler for (empty when every one is exhaustive)."""
    return [
        f"{name}: {kind.__name__}"
        for name, kinds, dispatcher in _DISPATCHERS
        for kind in kinds
        if dispatcher.dispatch(kind) is dispatcher.registry[object]
    ]
