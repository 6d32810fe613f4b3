"""The per-seed cast of a generated trace: people, vendor, places and the drawn values.

`draw_world` makes every choice from the shared neutral vocabulary below (ASCII names,
companies, towns, codenames, carriers; free of the words the abstention probes ask
about) and the seed's scenario: the identifiers, the secret, the moving dates and the
revised amounts the probes later ask for.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from continuity.traces.prng import Rng
from continuity.traces.scenarios import Scenario

__all__ = [
    "CARRIERS",
    "CODENAME_WORDS",
    "COMPANY_HEADS",
    "COMPANY_TAILS",
    "FIRST_NAMES",
    "ID_ALPHABET",
    "LAST_NAMES",
    "LETTERS",
    "TOWN_PARTS",
    "WEEKDAYS",
    "World",
    "draw_world",
    "long_date",
]

LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
ID_ALPHABET = LETTERS + "23456789"
_SECRET_ALPHABET = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def long_date(day: dt.date) -> str:
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


@dataclasses.dataclass
class World:
    """The per-seed cast and values."""

    scenario: Scenario
    owner: str
    owner_email: str
    vendor: str
    domain: str
    contact: str
    people: list[str]
    towns: list[str]
    codename: str
    phone: str
    postcode: str
    account_ref: str
    case_id: str
    provisional_ref: str
    booking_ref: str
    secret: str
    dates: tuple[str, str, str]
    amounts: tuple[str, str]
    weekday: str
    carrier: str
    start: dt.date


def draw_world(rng: Rng, scenario: Scenario) -> World:
    names = [
        f"{first} {last}"
        for first, last in zip(rng.sample(FIRST_NAMES, 9), rng.sample(LAST_NAMES, 9), strict=True)
    ]
    owner, contact, people = names[0], names[1], names[2:]
    vendor = f"{rng.choice(COMPANY_HEADS)} {rng.choice(COMPANY_TAILS)}"
    domain = vendor.lower().replace(" ", "") + ".example"
    towns = sorted({rng.choice(TOWN_PARTS[0]) + rng.choice(TOWN_PARTS[1]) for _ in range(8)})
    prefix_acc, prefix_case, prefix_book = scenario.id_prefixes
    booking_ref = f"{prefix_book}-{rng.token(ID_ALPHABET, 4)}-{rng.token(ID_ALPHABET, 4)}"
    provisional_ref = booking_ref
    while provisional_ref == booking_ref:
        provisional_ref = f"{prefix_book}-{rng.token(ID_ALPHABET, 4)}-{rng.token(ID_ALPHABET, 4)}"
    secret = ""
    while not (any(c.isdigit() for c in secret) and any(c in "#!%*" for c in secret)):
        secret = rng.token(_SECRET_ALPHABET + "#!%*", 14)
    start = dt.date(2027, 1, 4) + dt.timedelta(days=rng.between(0, 300))
    event_days: list[dt.date] = []
    while len(event_days) < 3:
        day = start + dt.timedelta(days=rng.between(35, 95))
        if 10 <= day.day <= 28 and all(day.day != d.day for d in event_days):
            event_days.append(day)
    first_amount = rng.between(2_400, 9_800)
    second_amount = first_amount + rng.choice((-1, 1)) * rng.between(150, 900)
    owner_first, owner_last = owner.lower().split()
    return World(
        scenario=scenario,
        owner=owner,
        owner_email=f"{owner_first}.{owner_last}@mail.example",
        vendor=vendor,
        domain=domain,
        contact=contact,
        people=people,
        towns=towns,
        codename=f"Project {rng.choice(CODENAME_WORDS)}",
        phone=f"07700 900{rng.between(100, 999)}",
        postcode=f"{rng.token('BCDFGHJKLMNPRSTVWXZ', 2)}{rng.between(2, 9)} "
        f"{rng.between(1, 9)}{rng.token('ABDEFGHJLNPQRSTUWXYZ', 2)}",
        account_ref=f"{prefix_acc}-{rng.token(ID_ALPHABET, 6)}",
        case_id=f"{prefix_case}-{rng.between(10_000, 99_999)}-{rng.token(LETTERS, 2)}",
        provisional_ref=provisional_ref,
        booking_ref=booking_ref,
        secret=secret,
        dates=(
            long_date(event_days[0]),
            long_date(event_days[1]),
            long_date(event_days[2]),
        ),
        amounts=(f"${first_amount:,}.00", f"${second_amount:,}.00"),
        weekday=rng.choice(WEEKDAYS),
        carrier=rng.choice(CARRIERS),
        start=start,
    )


# -- the shared neutral vocabulary ----------------------------------------------------

FIRST_NAMES: tuple[str, ...] = (
    "Ada",
    "Bram",
    "Cato",
    "Dalia",
    "Edda",
    "Fenn",
    "Greer",
    "Hale",
    "Ines",
    "Joss",
    "Kit",
    "Lorne",
    "Mira",
    "Nell",
    "Orrin",
    "Pell",
    "Quill",
    "Ros",
    "Sable",
    "Tamsin",
    "Uma",
    "Vero",
    "Wren",
    "Yara",
    "Zeb",
    "Anouk",
    "Basil",
    "Cleo",
    "Dov",
    "Elin",
)
LAST_NAMES: tuple[str, ...] = (
    "Ashgrove",
    "Brindle",
    "Calloway",
    "Darrow",
    "Elmhurst",
    "Fairley",
    "Gorse",
    "Hollins",
    "Ingram",
    "Jessop",
    "Kettering",
    "Lowther",
    "Marchbank",
    "Nettleton",
    "Oakes",
    "Pruett",
    "Quenby",
    "Rudge",
    "Sallow",
    "Thorne",
    "Upfield",
    "Vance",
    "Wetherall",
    "Yelland",
    "Zander",
    "Birtle",
    "Corrie",
    "Dunmore",
    "Esk",
    "Fothergill",
)
COMPANY_HEADS: tuple[str, ...] = (
    "Alder",
    "Birch",
    "Copper",
    "Delph",
    "Ember",
    "Flint",
    "Garnet",
    "Heron",
    "Iron",
    "Juniper",
    "Kestrel",
    "Linden",
    "Marl",
    "North",
    "Osier",
    "Pewter",
    "Quarry",
    "Rowan",
    "Slate",
    "Tern",
    "Umber",
    "Vale",
    "Willow",
    "Yarrow",
)
COMPANY_TAILS: tuple[str, ...] = (
    "Supply",
    "Works",
    "Hire",
    "Logistics",
    "Services",
    "Trading",
    "Partners",
    "Engineering",
    "Freight",
    "Studio",
    "Depot",
    "Makers",
)
TOWN_PARTS: tuple[tuple[str, ...], tuple[str, ...]] = (
    (
        "Ash",
        "Brack",
        "Cold",
        "Dun",
        "East",
        "Fair",
        "Gold",
        "High",
        "Kings",
        "Long",
        "Mill",
        "Nether",
        "Over",
        "Red",
        "Stan",
        "Thorn",
        "Up",
        "West",
    ),
    (
        "ford",
        "ley",
        "well",
        "bridge",
        "stead",
        "field",
        "wick",
        "more",
        "ham",
        "bury",
        "combe",
        "holt",
    ),
)
CODENAME_WORDS: tuple[str, ...] = (
    "Larkspur",
    "Bluebell",
    "Tamarisk",
    "Foxglove",
    "Marigold",
    "Campion",
    "Yarrowby",
    "Sorrel",
    "Teasel",
    "Bracken",
    "Heather",
    "Juniperline",
    "Clover",
    "Saffron",
    "Tansy",
    "Woodruff",
    "Meadowsweet",
    "Speedwell",
    "Knapweed",
    "Vetch",
    "Bryony",
    "Celandine",
    "Hawthorn",
    "Samphire",
)
CARRIERS: tuple[str, ...] = (
    "Parcelwise",
    "Northway Couriers",
    "Swiftline Freight",
    "Redkite Express",
    "Quayside Carriers",
    "Fenland Haulage",
)
WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
