"""`doit compare_pilot`'s route burns an authorization by what it authorizes (issue 36,
item 5): after one pilot ran, the same authorization with its id respelled (one
trailing space) does not pay for a second pilot, even with the output root removed."""

from __future__ import annotations

import json
import shutil

import pytest

from continuity.errors import SpendError
from continuity.servers.wire import WireServer
from tests.roles.pilot_toy import pilot_toy  # noqa: F401 (fixture)
from tests.roles.test_pilot_run import SOL, Route, route  # noqa: F401 (fixture)


def test_a_respelled_authorization_never_pays_for_a_second_pilot(route: Route) -> None:  # noqa: F811
    route.authorize()
    first = route.run(WireServer(model=SOL))
    assert first.stop is None and first.counts.completed == 3
    shutil.rmtree(route.output)  # the owner clears the root: the burn is elsewhere
    value = json.loads(route.authorization.read_text())
    value["id"] += " "  # one trailing space: another spelling, the same authorization
    route.authorization.write_text(json.dumps(value))
    second = WireServer(model=SOL)
    with pytest.raises(SpendError) as caught:
        route.run(second)
    assert caught.value.code == "lookup_authorization_consumed"
    assert second.calls == []  # nothing was sent for the second pilot
    assert not (route.output / "authorization-consumed.json").exists()
