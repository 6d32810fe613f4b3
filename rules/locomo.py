"""`doit import_locomo`: LoCoMo's archive as an external holdout source."""

from __future__ import annotations

from typing import Any

from continuity.graph import task_action
from rules.params import NewDirOption, TaskSpec, param


def _import(**options: Any) -> str:
    from continuity.commands.import_locomo import ImportLocomoRequest, import_locomo

    return import_locomo(ImportLocomoRequest.of(options))


def task_import_locomo() -> TaskSpec:
    """Import LoCoMo's archive as an external holdout source (see --help).

    Reads LoCoMo's zip (locomo10.json, or the locomo10_v2 folder of one file per
    conversation), maps each conversation into an `imported` trace (speaker A is the
    owner; speaker B's messages arrive through the chat tool as real MCP tool results;
    sessions stay sessions with their dates; turn ids are LoCoMo's dialogue ids), turns
    its questions into probes (categories 1-4 free_recall with the gold answer verbatim,
    category 5 abstention with LoCoMo's adversarial answer as the decoy), drops a
    question only with a reason, and writes a new directory: traces/, manifest.json,
    statistical-spec.json (groups `shorter` and `longer` by length;
    seeded-sha256-rank-v1, two per group) and import-report.json. The same archive
    always gives byte-identical files. Codes: locomo_zip_unreadable,
    locomo_format_invalid, locomo_output_exists, locomo_output_invalid.
    """
    return {
        "actions": [task_action(_import)],
        "params": [
            param("zip", str, "", "LoCoMo's archive (locomo10.zip)"),
            param(
                "output",
                NewDirOption(
                    "--output", exists="locomo_output_exists", invalid="locomo_output_invalid"
                ),
                "",
                "a directory that does not exist yet",
            ),
        ],
        "verbosity": 2,
    }
