"""The eight invented scenarios of the hard suite.

Seeds cycle through the scenarios in this order: seed 101 is the grant, 102 the oven
repair, 103 the boat trailer (trace ``gen-rowing-103``), and so on; 109 is the grant again
with fresh names, values, sizes and layout. All vocabulary is ASCII, neutral (equipment,
logistics, vendors) and free of the words the abstention probes ask about; the names,
companies and places every scenario shares live with the per-seed cast in
`continuity.traces.generator._cast`.
"""

from __future__ import annotations

import msgspec

__all__ = [
    "SCENARIOS",
    "Scenario",
    "scenario_for_seed",
]


class Scenario(msgspec.Struct, frozen=True, kw_only=True):
    slug: str
    title: str  # "{project}" is the project phrase
    project: str  # what the owner is organising
    event: str  # the date that moves twice
    amount_subject: str  # the amount revised once
    account_vendor_role: str  # who issues the early account reference
    account_label: str
    id_prefixes: tuple[str, str, str]  # account, mid-result case, booking
    case_label: str  # the identifier in the middle of a long result
    booking_label: str
    booking_pack: str  # the oversized document whose head holds the booking reference
    portal: str
    escalation: str  # the commitment drafted after a steer, never sent
    confirmation: str  # the commitment actually sent
    shared_artifact: str
    final_artifact: str
    next_task: str
    next_keyword: str  # the distinctive part of `next_task`, scored by the keyword proxy
    equipment: tuple[str, ...]
    topics: tuple[str, ...]
    documents: tuple[str, ...]
    channels: tuple[str, ...]
    shipments: tuple[str, ...]
    sites: tuple[str, ...]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        slug="grant",
        title="Community workshop grant: application to award",
        project="the community workshop equipment grant",
        event="the funder's site visit",
        amount_subject="our match-funding contribution",
        account_vendor_role="the funder's applicant portal team",
        account_label="applicant account reference",
        id_prefixes=("APP", "QRY", "AWD"),
        case_label="funder query number",
        booking_label="award booking reference",
        booking_pack="award booking pack",
        portal="applicant portal",
        escalation="escalation email about the late budget query",
        confirmation="signed budget confirmation",
        shared_artifact="equipment inventory sheet",
        final_artifact="project timeline",
        next_task="submit the quarterly spend report",
        next_keyword="spend report",
        equipment=("bandsaw", "pillar drill", "dust extractor", "workbench", "lathe", "vice"),
        topics=(
            "eligible costs",
            "match funding",
            "the equipment list",
            "the spend profile",
            "the monitoring form",
            "the installation plan",
        ),
        documents=(
            "budget narrative",
            "equipment quotes summary",
            "monitoring plan",
            "installation method statement",
        ),
        channels=("workshop-volunteers", "grant-admin"),
        shipments=("bandsaw blades", "drill press table", "extractor hoses"),
        sites=("fundingdesk", "toolsupply", "makerspace-network"),
    ),
    Scenario(
        slug="oven",
        title="Deck oven repair and recommissioning",
        project="the bakery deck oven repair",
        event="the engineer's repair visit",
        amount_subject="the repair quote",
        account_vendor_role="the oven manufacturer's service desk",
        account_label="service account reference",
        id_prefixes=("SVC", "WTY", "ENG"),
        case_label="warranty case number",
        booking_label="engineer booking reference",
        booking_pack="engineer booking pack",
        portal="service portal",
        escalation="escalation email about the missed parts delivery",
        confirmation="purchase order confirmation",
        shared_artifact="shutdown checklist",
        final_artifact="production cover plan",
        next_task="book the flue inspection",
        next_keyword="flue inspection",
        equipment=(
            "deck oven",
            "steam generator",
            "heating element",
            "control board",
            "door seal",
            "thermocouple",
        ),
        topics=(
            "the element replacement",
            "the steam system",
            "the parts order",
            "the production cover",
            "the flue clearance",
            "the commissioning test",
        ),
        documents=(
            "oven service history",
            "parts list",
            "cleaning rota",
            "commissioning checklist",
        ),
        channels=("bakery-shift", "kitchen-ops"),
        shipments=("heating elements", "door seal kit", "control board"),
        sites=("ovenparts", "bakeryservice", "catering-engineers"),
    ),
    Scenario(
        slug="rowing",
        title="Rowing club boat trailer purchase and first tow",
        project="the rowing club's new boat trailer",
        event="the trailer collection",
        amount_subject="the trailer deposit",
        account_vendor_role="the trailer builder's sales office",
        account_label="customer account reference",
        id_prefixes=("TRL", "CHS", "TOW"),
        case_label="chassis build number",
        booking_label="collection booking reference",
        booking_pack="collection booking pack",
        portal="dealer portal",
        escalation="escalation email about the late lighting board",
        confirmation="deposit confirmation",
        shared_artifact="towing rota",
        final_artifact="regatta travel plan",
        next_task="arrange the trailer weighbridge check",
        next_keyword="weighbridge check",
        equipment=(
            "boat trailer",
            "lighting board",
            "hitch lock",
            "jockey wheel",
            "ratchet straps",
            "spare wheel",
        ),
        topics=(
            "the axle rating",
            "the lighting board",
            "the driver list",
            "the storage bay",
            "the regatta travel",
            "the hitch fitting",
        ),
        documents=(
            "towing guidance",
            "trailer specification",
            "boat bay map",
            "boat loading diagram",
        ),
        channels=("rowing-captains", "boathouse"),
        shipments=("lighting board", "hitch lock", "ratchet straps"),
        sites=("trailerworks", "rowing-federation", "towing-advice"),
    ),
    Scenario(
        slug="kiln",
        title="Studio kiln installation",
        project="the studio kiln installation",
        event="the kiln delivery",
        amount_subject="the installation quote",
        account_vendor_role="the kiln supplier's trade desk",
        account_label="trade account reference",
        id_prefixes=("KLN", "ELC", "DLV"),
        case_label="electrical survey number",
        booking_label="delivery booking reference",
        booking_pack="delivery booking pack",
        portal="trade portal",
        escalation="escalation email about the missing kiln shelves",
        confirmation="installation order confirmation",
        shared_artifact="firing schedule",
        final_artifact="studio layout plan",
        next_task="book the electrician's sign-off",
        next_keyword="sign-off",
        equipment=(
            "top-loading kiln",
            "kiln shelves",
            "props",
            "controller",
            "extraction hood",
            "isolator switch",
        ),
        topics=(
            "the electrical supply",
            "the floor loading",
            "the extraction",
            "the kiln shelves",
            "the glaze tests",
            "the delivery access",
        ),
        documents=(
            "kiln specification",
            "electrical survey notes",
            "glaze inventory",
            "clay order sheet",
        ),
        channels=("studio-members", "kiln-install"),
        shipments=("kiln shelves", "props and posts", "extraction hood"),
        sites=("kilnsupply", "studio-potters", "electrical-standards"),
    ),
    Scenario(
        slug="cider",
        title="Cider co-op pressing season",
        project="the cider co-op's pressing season",
        event="the pressing day",
        amount_subject="the fruit purchase price",
        account_vendor_role="the bottling supplier's accounts team",
        account_label="co-op account reference",
        id_prefixes=("COP", "LAB", "PRS"),
        case_label="lab sample number",
        booking_label="press hire booking reference",
        booking_pack="press hire booking pack",
        portal="members portal",
        escalation="escalation email about the short bottle delivery",
        confirmation="fruit order confirmation",
        shared_artifact="pressing rota",
        final_artifact="bottling plan",
        next_task="order the second pallet of bottles",
        next_keyword="second pallet",
        equipment=(
            "rack press",
            "fruit mill",
            "fermentation tanks",
            "bottle filler",
            "pallet truck",
            "crates",
        ),
        topics=(
            "the fruit supply",
            "the press hire",
            "the bottling line",
            "the lab samples",
            "the volunteer shifts",
            "the storage shed",
        ),
        documents=(
            "pressing plan",
            "fruit supplier list",
            "orchard contact list",
            "hygiene checklist",
        ),
        channels=("coop-members", "pressing-crew"),
        shipments=("bottles", "crown caps", "labels"),
        sites=("orchard-network", "bottlesupply", "cider-makers"),
    ),
    Scenario(
        slug="lighting",
        title="Theatre lighting rig hire and load-in",
        project="the touring lighting rig",
        event="the load-in",
        amount_subject="the rig hire fee",
        account_vendor_role="the hire company's accounts desk",
        account_label="hire account reference",
        id_prefixes=("HIR", "PAT", "LDN"),
        case_label="PAT test batch number",
        booking_label="load-in booking reference",
        booking_pack="load-in booking pack",
        portal="hire portal",
        escalation="escalation email about the missing dimmer rack",
        confirmation="hire order confirmation",
        shared_artifact="load-in checklist",
        final_artifact="focus plot",
        next_task="confirm the crew call times",
        next_keyword="crew call times",
        equipment=(
            "moving heads",
            "dimmer rack",
            "truss sections",
            "cable looms",
            "hazer",
            "lighting desk",
        ),
        topics=(
            "the truss plan",
            "the dimmer rack",
            "the power supply",
            "the crew calls",
            "the focus session",
            "the van access",
        ),
        documents=("rig plan", "power calculation", "gel swatch list", "crew call sheet"),
        channels=("lx-crew", "production-office"),
        shipments=("cable looms", "hazer fluid", "spare lamps"),
        sites=("stagehire", "venue-technical", "lighting-suppliers"),
    ),
    Scenario(
        slug="localisation",
        title="App localisation into four languages",
        project="the app localisation project",
        event="the string freeze",
        amount_subject="the translation agency quote",
        account_vendor_role="the translation agency's client desk",
        account_label="client account reference",
        id_prefixes=("CLT", "TKT", "REL"),
        case_label="glossary ticket number",
        booking_label="release slot reference",
        booking_pack="release slot booking pack",
        portal="agency portal",
        escalation="escalation email about the late glossary review",
        confirmation="scope confirmation",
        shared_artifact="terminology glossary",
        final_artifact="release checklist",
        next_task="run the screenshot review",
        next_keyword="screenshot review",
        equipment=(
            "string catalogue",
            "glossary",
            "screenshot set",
            "test devices",
            "style guide",
            "build pipeline",
        ),
        topics=(
            "the string freeze",
            "the glossary review",
            "the screenshot set",
            "the release notes",
            "the test devices",
            "the style guide",
        ),
        documents=("localisation brief", "style guide", "device matrix", "string inventory"),
        channels=("l10n-team", "release-planning"),
        shipments=("test devices", "device chargers", "tablet stands"),
        sites=("translation-agency", "app-store-help", "l10n-tools"),
    ),
    Scenario(
        slug="print",
        title="Print run for the spring catalogue",
        project="the spring catalogue print run",
        event="the press check",
        amount_subject="the print quote",
        account_vendor_role="the printer's estimating desk",
        account_label="print account reference",
        id_prefixes=("PRN", "PRF", "PRS"),
        case_label="proof batch number",
        booking_label="press slot reference",
        booking_pack="press slot booking pack",
        portal="printer's upload portal",
        escalation="escalation email about the colour shift on the proofs",
        confirmation="paper stock confirmation",
        shared_artifact="proofing checklist",
        final_artifact="distribution plan",
        next_task="approve the wet proofs",
        next_keyword="wet proofs",
        equipment=("paper stock", "proofs", "pallets", "shrink wrap", "cartons", "binding line"),
        topics=(
            "the paper stock",
            "the proofs",
            "the binding",
            "the distribution",
            "the press check",
            "the carton labels",
        ),
        documents=(
            "print specification",
            "carton label spec",
            "ink coverage note",
            "paper samples note",
        ),
        channels=("catalogue-team", "production-desk"),
        shipments=("paper samples", "proof sets", "carton samples"),
        sites=("printworks", "paper-merchant", "print-standards"),
    ),
)


def scenario_for_seed(seed: int) -> Scenario:
    """Seeds cycle through the eight scenarios; 101 is the first."""
    return SCENARIOS[(seed - 101) % len(SCENARIOS)]
