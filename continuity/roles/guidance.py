"""The treatment two checkouts may differ in: the pack's retrieval guidance.

Rpack is a revision whose pack renderer exports `WITNESS` (the text telling the reader
how to use ConversationHistory with the pack's packed ids); R0 is the same revision with
the frozen patch in ``fixtures/roles/`` reversed, so it lacks it. A registration accepts
a pair only when every differing file is one of `GUIDANCE_PATHS` (frozen here, and only
here), the difference touches `RENDERER_PATH`, and the witness is in Rpack's renderer
and not in R0's.
"""

from __future__ import annotations

__all__ = ["GUIDANCE_PATCH", "GUIDANCE_PATHS", "RENDERER_PATH", "ROLE_PROTOCOL", "WITNESS"]

# The role protocol a checkout must implement to be run as a role (no shim for older
# checkouts): `doit units --lookup-role ROLE` with the arm/soul/receipt contract.
ROLE_PROTOCOL = "continuity-lookup-role-v1"
# The exported name whose presence in the renderer marks Rpack.
WITNESS = "PACK_RETRIEVAL_GUIDANCE"
# The pack renderer: a treatment must touch it.
RENDERER_PATH = "continuity/memory/pack.py"
# Every file allowed to differ between R0 and Rpack (repository-relative, POSIX): the
# pack renderer and its direct helpers. Frozen: widening it widens what a registered
# comparison may attribute to the guidance.
GUIDANCE_PATHS: tuple[str, ...] = (RENDERER_PATH,)
# The frozen patch that adds the guidance (R0 = this revision with it reversed).
GUIDANCE_PATCH = "fixtures/roles/pack-retrieval-guidance.patch"
