"""The capped real pilot's top layer: `registration` (``doit pilot_register``), `run`
(``doit compare_pilot``: readiness, authorization, slots, consumption and the
controller), `slots` (the slots from the sizing), `prepare` (a registered slot's
preparation child, its boundary crossed over the real checkpoint), `estimate` (the
pilot estimate beside a lookup estimate) and `smoke` (``doit pilot_smoke``, the
configured-process smoke).

The pilot's lower parts stay in the layers their callers need: the spend controller,
its probe child and the release gate in `continuity.spend`; the pilot's catalog and
estimate arithmetic in `continuity.plan`."""

__all__ = [
    "estimate",
    "registration",
    "run",
    "smoke",
]
