"""The treatment two checkouts may differ in: the pack's retrieval guidance.

Rpack is a revision whose pack renderer exports `WITNESS` (the text telling the reader
how to use ConversationHistory with the pack's packed ids); R0 is the same revision with
the frozen patch in ``fixtures/roles/`` reversed, so it lacks it. A registration accepts
a pair only when every differing file is one of `GUIDANCE_PATHS` (frozen here, and only
here), the difference touches `RENDERER_PATH`, and the witness is in Rpack's renderer
and not in R0's.
"""

from __future__ import annotations

import ast

__all__ = [
    "GUIDANCE_PATCH",
    "GUIDANCE_PATHS",
    "RENDERER_PATH",
    "ROLE_PROTOCOL",
    "WITNESS",
    "exports_witness",
]

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


def exports_witness(source: bytes) -> bool:
    """Whether a renderer's source *exports* the witness: a module-level assignment of a
    string literal to `WITNESS` whose name is listed in the module's ``__all__``. A
    mention in a comment, a docstring or a local variable is not the witness (the same
    rule the role receipt applies at run time: exported and a ``str``). Source that
    does not parse exports nothing."""
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    assigned = exported = False
    for node in module.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if WITNESS in names:
            assigned = _is_text(value)
        if "__all__" in names and isinstance(value, ast.List | ast.Tuple):
            exported = any(isinstance(e, ast.Constant) and e.value == WITNESS for e in value.elts)
    return assigned and exported


def _is_text(value: ast.expr) -> bool:
    """A string literal, implicitly concatenated or parenthesised (ast folds both)."""
    return isinstance(value, ast.Constant) and isinstance(value.value, str)
