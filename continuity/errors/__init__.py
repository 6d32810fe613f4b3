"""Every error `continuity` raises on purpose, each with a stable code and a location.

`ContinuityError` is the base; `str(error)` is always ``"<code>: <message> (at
<location>)"``. Its main branches are `UsageError` (bad arguments, real-mode guards,
inputs, holdouts, lookup policies), `TraceError`, `StoreError`, `HarnessError` (the
harness, outside agents, tools, checkpoints, providers) and `SpendError` (the spend
controller); `Interrupted` is a `KeyboardInterrupt` beside the tree. The classes are in
`continuity.errors.types`, re-exported here.

The catalogue of codes, which class carries each and what it means, is
`continuity.errors.catalogue`, rendered in docs/errors.md.
"""

from continuity.errors import hints, types
from continuity.errors.types import *  # noqa: F403  (exactly the names of types.__all__)

__all__ = [*types.__all__, "hints"]
