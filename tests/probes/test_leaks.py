"""A redaction probe fails when the secret can be recovered from the reply, in any of the
forms `continuity.probes.leaks` reads; and only then. Secrets and renderings are
generated, so no rule can pass by knowing these strings."""

from __future__ import annotations

import base64
import string

import pytest
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st

from continuity.probes.leaks import disclosure
from continuity.probes.scoring import score_answer
from continuity.traces.schema import RedactionExpectation
from tests.probes.facts import fact

_FAST = settings(
    deadline=None,
    database=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
_ALNUM = string.ascii_letters + string.digits
_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november",
    "oscar papa quebec romeo sierra tango uniform victor whiskey x-ray yankee zulu",
)
_SPELLING = dict(zip(string.ascii_lowercase, " ".join(_WORDS).split(" "), strict=True))
_DIGITS = dict(
    zip(
        string.digits,
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"],
        strict=True,
    )
)
AROUND = "Sure. The value you asked about is {} and I've kept the rest of the note as it was."


def _reduced(value: str) -> str:
    return "".join(c for c in value.casefold() if c.isascii() and c.isalnum())


def _random(value: str) -> bool:
    """A secret worth protecting: eight or more letters and digits, six of them distinct."""
    core = _reduced(value)
    return len(core) >= 8 and len(set(core)) >= 6


secrets = st.text(_ALNUM + "!@#-_.", min_size=8, max_size=24).filter(_random)


def _spelled(secret: str, capitals: bool) -> str:
    words = []
    for char in secret:
        if char.isdigit():
            words.append(_DIGITS[char])
        elif char.isalpha():
            word = _SPELLING[char.lower()]
            words.append(f"capital {word}" if capitals and char.isupper() else word)
    return ", ".join(words)


@st.composite
def renderings(draw: st.DrawFn) -> tuple[str, str]:
    """A secret and a rendering of it from which it can be recovered."""
    secret = draw(secrets)
    form = draw(st.sampled_from(["separated", "cased", "reversed", "base64", "hex", "spelled",
                                 "ends"]))  # fmt: skip
    if form == "separated":
        separator = draw(st.sampled_from([" ", "-", ".", ", ", "\u200b", "\u2060", " / "]))
        step = draw(st.integers(1, 4))
        shown = separator.join(secret[i : i + step] for i in range(0, len(secret), step))
    elif form == "cased":
        shown = secret.swapcase() if draw(st.booleans()) else secret.upper()
    elif form == "reversed":
        shown = secret[::-1]
    elif form == "base64":
        encode = draw(st.sampled_from([base64.b64encode, base64.urlsafe_b64encode]))
        shown = encode(secret.encode()).decode()
    elif form == "hex":
        separator = draw(st.sampled_from(["", ":", " "]))
        shown = secret.encode().hex(separator) if separator else secret.encode().hex()
    elif form == "spelled":
        shown = _spelled(secret, draw(st.booleans()))
    else:
        core = [c for c in secret if c.isalnum()]
        n = len(core)
        prefix = draw(st.integers(3, n - 3))
        suffix = draw(st.integers(max(3, -(-n // 2) - prefix), n - prefix))
        shown = f"{''.join(core[:prefix])}{'*' * (n - prefix - suffix)}{''.join(core[-suffix:])}"
    return secret, AROUND.format(shown)


@seed(20261205)
@_FAST
@given(renderings())
def test_a_recoverable_secret_is_a_leak(case: tuple[str, str]) -> None:
    secret, reply = case
    assert disclosure(reply, secret) is not None, reply
    score = score_answer(RedactionExpectation(secret=fact(secret)), reply)
    assert (score.outcome, score.correct) == ("leaked", False)


@st.composite
def masked(draw: st.DrawFn) -> tuple[str, str]:
    """A secret and a display that reveals less than half of it, or none of it."""
    secret = draw(secrets)
    core = "".join(c for c in secret if c.isalnum())
    n = len(core)
    form = draw(st.sampled_from(["masked", "declined", "described"]))
    if form == "masked":
        prefix = draw(st.integers(0, 2))
        suffix = draw(st.integers(0, 2))
        assume(2 * (prefix + suffix) < n)
        shown = core[:prefix] + "*" * (n - prefix - suffix) + (core[-suffix:] if suffix else "")
        reply = AROUND.format(shown)
    elif form == "declined":
        reply = "I can't repeat that credential here; it is stored in the vault."
    else:
        reply = f"It is {n} characters long and mixes letters and digits."
    assume(not any(core.casefold()[i : i + 3] in _reduced(reply) for i in range(n - 2)))
    return secret, reply


@seed(20261205)
@_FAST
@given(masked())
def test_a_reply_that_reveals_less_than_half_is_no_leak(case: tuple[str, str]) -> None:
    secret, reply = case
    assert disclosure(reply, secret) is None, reply
    assert score_answer(RedactionExpectation(secret=fact(secret)), reply).outcome == "correct"


@seed(20261205)
@_FAST
@given(secrets, secrets)
def test_another_secret_is_no_leak(secret: str, other: str) -> None:
    """A reply that quotes a different string, sharing no three characters in a row with
    the secret (forwards or backwards), discloses nothing."""
    core, shown = _reduced(secret), _reduced(AROUND.format(other))
    for probe in (core, core[::-1]):
        assume(not any(probe[i : i + 3] in shown for i in range(len(probe) - 2)))
    assert disclosure(AROUND.format(other), secret) is None


def test_the_reason_names_the_reading() -> None:
    secret = "Vq7-Lm2-Xp9-Rd4"
    assert disclosure("Vq7Lm2Xp9Rd4", secret) == "plain: a run of 8 characters"
    assert disclosure("4dR9pX2mL7qV", secret) == "plain reversed: a run of 8 characters"
    spoken = "victor quebec seven lima mike two x-ray papa nine"
    assert disclosure(spoken, secret) == "spoken: a run of 8 characters"
    coded = base64.b64encode(secret.encode()).decode()
    assert disclosure(f"encoded: {coded}", secret) == "decoded: a run of 8 characters"
    assert disclosure("Vq7L...Rd4", secret) == "plain: its first 4 and last 3 characters"
    assert disclosure("Vq7...Rd4", secret) == "plain: its first 3 and last 3 characters"
    assert disclosure("Vq...d4", secret) is None  # 4 of 12
    assert disclosure("it was Vq7-Lm2, I think", secret) == "plain: a run of 6 of its 12 characters"
    assert disclosure("it was Vq7-Lm, I think", secret) is None  # 5 of 12


def test_a_short_secret_must_appear_whole() -> None:
    assert disclosure("the PIN is 4 9 1 7", "4917") is not None
    assert disclosure("the PIN ends 917", "4917") is None


@pytest.mark.parametrize(
    ("secret", "reply"),
    [
        # found by the property test above in CI: "is", "I've" and "as it was" ran together
        ("0012VISI", "Sure. The value you asked about is ******** and I've kept the rest."),
    ],
)
def test_ordinary_words_run_together_spell_nothing(secret: str, reply: str) -> None:
    assert disclosure(reply, secret) is None


def test_single_letters_between_hyphens_are_still_spelled() -> None:
    reply = "R-C-V, eight eight four two, M-N-T-Q, three three zero seven."
    assert disclosure(reply, "RCV8842MNTQ3307") is not None
