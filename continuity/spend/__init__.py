"""The spend controller: the guarded request side of a capped real lookup run, and the
controller's parts.

- `continuity.spend.contract`: the frozen contract ``lookup-guard-v1`` (reader binding,
  options and header allowlists) and the auxiliary-callers check;
- `continuity.spend.guard`: the guarded provider, one per sequential probe run;
- `continuity.spend.transport`: its own fetch, latched and single-shot;
- `continuity.spend.payload`: payload allowlists, the framing H and U_k;
- `continuity.spend.admission`: the final payload of a request and its admission size;
- `continuity.spend.usage` and `continuity.spend.settle`: raw usage, tiers, the catalog
  cost and the outcome of a request;
- `continuity.spend.permits`: the permit interface ``lookup-permit-v1`` and the
  test-only source;
- `continuity.spend.account`: the running total T and the cap rule;
- `continuity.spend.assumptions`: assumed-v1;
- `continuity.spend.money`: exact money;
- `continuity.spend.descriptor`: the pilot descriptor (cap-gated-v1) and its checks;
- `continuity.spend.lease`: the pilot controller's SQLite writer lease (spend controller II);
- `continuity.spend.durable`: a durable permit source (holds on disk before a grant);
- `continuity.spend.consumption`: one-use consumption of an authorization (the burn
  registry and the claim pair);
- `continuity.spend.authorization`: the authorization attestation and its validator;
- `continuity.spend.safety`: cache-key allocation, resolved-settings checks and the fixed
  refusal codes of a pilot child;
- `continuity.spend.containment`: containing a child's process group;
- `continuity.spend.output_caps`: which output cap each back end's requests carry, read
  from the bytes its client sends (what readiness's output-cap verdict comes from);
- `continuity.spend.recovery`: observing a crashed controller's recorded groups before
  the lease is taken;
- `continuity.spend.gate`: the release gate of the capped real route (its state is
  stated there, once).

Nothing here authorizes a request by itself: a brand is not a credential, and a request
is sent only through the pilot controller (`continuity.spend.controller`) behind the
release gate.
"""

__all__ = [
    "assumptions",
    "authorization",
    "child_config",
    "consumption",
    "containment",
    "contract",
    "controller",
    "descriptor",
    "gate",
    "lease",
    "money",
    "output_caps",
    "pilot_child",
    "preparation",
    "recovery",
    "safety",
]
