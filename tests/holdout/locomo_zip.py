"""Where LoCoMo's archive is, and tiny invented archives in LoCoMo's two layouts.

The real archive is third-party data kept outside the checkout (never committed):
``$CONTINUITY_LOCOMO_ZIP``, else ``../shared/external/locomo/locomo10.zip`` beside the
checkout, else ``/work/shared/external/locomo/locomo10.zip``. Tests that need it skip
without it unless ``CI`` is set, where a missing archive fails.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = (
    Path(os.environ.get("CONTINUITY_LOCOMO_ZIP", "/nonexistent")),
    REPO.parent / "shared" / "external" / "locomo" / "locomo10.zip",
    Path("/work/shared/external/locomo/locomo10.zip"),
)


def locomo_zip() -> Path:
    """The real archive, or a skip (a failure under CI)."""
    for path in CANDIDATES:
        if path.is_file():
            return path
    message = "LoCoMo's archive is not here; set CONTINUITY_LOCOMO_ZIP"
    if "CI" in os.environ:
        pytest.fail(message)
    pytest.skip(message)


def sample(sample_id: str = "conv-7", qa: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One invented conversation in LoCoMo's sample layout: two sessions, two speakers."""
    conversation = {
        "speaker_a": "Quenby",
        "speaker_b": "Ferrant",
        "session_1_date_time": "3:10 pm on 4 March, 2023",
        "session_1": [
            {"speaker": "Quenby", "dia_id": "D1:1", "text": "I took up glassblowing last week!"},
            {"speaker": "Ferrant", "dia_id": "D1:2",
             "text": "Nice. I adopted a ferret called Bix."},
            {"speaker": "Ferrant", "dia_id": "D1:3", "text": "He hides my socks.",
             "blip_caption": "a ferret in a sock drawer"},
        ],
        "session_2_date_time": "9:05 am on 11 March, 2023",
        "session_2": [
            {"speaker": "Ferrant", "dia_id": "D2:1", "text": "How is the glass going?"},
            {"speaker": "Quenby", "dia_id": "D2:2", "text": "I made a blue vase for my aunt."},
        ],
        "session_3_date_time": "10:00 am on 12 March, 2023",
        "session_3": [],
    }  # fmt: skip
    questions = qa if qa is not None else [
        {"question": "What did Quenby make for her aunt?", "answer": "a blue vase",
         "evidence": ["D2:2"], "category": 4},
        {"question": "When did Quenby take up glassblowing?",
         "answer": "The week before 4 March 2023", "evidence": ["D1:1"], "category": 2},
        {"question": "What is Quenby's ferret called?", "evidence": ["D1:2"], "category": 5,
         "adversarial_answer": "Bix"},
        {"question": "What did Ferrant adopt?", "answer": "a ferret", "evidence": ["D9:9"],
         "category": 1},
        {"question": "Did Quenby make a vase?", "answer": "vase", "evidence": ["D2:2"],
         "category": 3},
        {"question": "Where does Ferrant live?", "answer": "Tollby", "evidence": [],
         "category": 4},
    ]  # fmt: skip
    return {"sample_id": sample_id, "conversation": conversation, "qa": questions}


def write_zip(path: Path, members: dict[str, Any]) -> Path:
    """A zip whose members are JSON-encoded values (bytes are written as they are)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in members.items():
            data = value if isinstance(value, bytes) else json.dumps(value).encode()
            archive.writestr(name, data)
    return path
