"""The networks visits come from: the --networks model of gen.py (off by default).

With --networks each visit gets the address it was made from (key `ip` of the visit log). The server keeps only a
keyed digest of the address's prefix (IPv4 /24, IPv6 /48), so what matters is which visits share a prefix:
- a household shares its home connection (an IPv4 /24 and, when its ISP offers IPv6, a /48); devices of the
  population join an earlier household of their country with --household-share;
- a home connection is renumbered (a new prefix from the ISP's pool) with --home-renumber, and the household
  moves (another ISP, another prefix) with --move, each at most once in the window;
- phones are on the home Wi-Fi with --phone-wifi, otherwise on their carrier, whose carrier-grade NAT hands
  each session an address from a pool of prefixes shared by every subscriber of that carrier in the country;
- laptops are away from home with LAPTOP_AWAY: at an office shared with colleagues, or on public Wi-Fi;
- on a trip, laptops and desktops use the trip's lodging network, phones its Wi-Fi or their own carrier
  (roaming data is routed through the home network, so the carrier's prefixes stay the same);
- a connection with both families is used over IPv6 with IPV6_PREFERRED.
Each rate is cited where a public figure exists and marked as an estimate otherwise (README.md, "Networks").
Every draw is made on the model's own random stream, so turning it on moves nothing else in the log.
"""

# Share of users reaching Google over IPv6: 45-49 % through 2025 (Google IPv6 statistics). Used per connection.
IPV6_SHARE = 0.45
# Estimate: Happy Eyeballs (RFC 8305) tries IPv6 first and falls back after 250 ms, so a dual-stack connection
# reaches a dual-stack site over IPv6 nearly always.
IPV6_PREFERRED = 0.9
# Estimate: share of a site's devices whose home connection another device of the same population shares.
HOUSEHOLD_SHARE = 0.25
# Estimate: share of home connections given another prefix within 90 days (dynamic addressing; some ISPs renew
# daily, most keep an address for months).
HOME_RENUMBER = 0.15
# About 8-9 % of US residents moved within a year (US Census Bureau, CPS ASEC geographic mobility, 2021-2023):
# about 2.2 % within 90 days.
MOVE = 0.022
# Estimate guided by Opensignal's Wi-Fi time share (smartphone users spend roughly 40-70 % of their time on
# Wi-Fi, by country).
PHONE_WIFI = 0.55
# Estimate: share of a laptop's visits made away from home, and of laptops that have an office to be away at.
LAPTOP_AWAY = 0.3
LAPTOP_OFFICE = 0.6
# Estimates: carriers per country, the prefixes each carrier's NAT pool spans, offices per country.
CARRIERS = 3
CGNAT_PREFIXES = 64
OFFICES = 400


def add_arguments(ap):
    ap.add_argument("--networks", action="store_true",
                    help="give each visit the address it came from (key ip; see README.md, Networks)")
    for flag, default, text in (
            ("--household-share", HOUSEHOLD_SHARE, "share of devices that join an earlier household's home network"),
            ("--home-renumber", HOME_RENUMBER, "share of home connections renumbered once in the window"),
            ("--move", MOVE, "share of households that move once in the window"),
            ("--phone-wifi", PHONE_WIFI, "share of phone visits made on the home Wi-Fi"),
            ("--ipv6-share", IPV6_SHARE, "share of connections that have IPv6")):
        ap.add_argument(flag, type=float, default=default, metavar="P", help=f"with --networks: {text}")


def check_arguments(ap, args):
    for name in ("household_share", "home_renumber", "move", "phone_wifi", "ipv6_share"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            ap.error(f"--{name.replace('_', '-')} is a share, between 0 and 1")


def knobs(args):
    """The manifest's record of the model's settings (empty when it is off, as before it existed)."""
    if not args.networks:
        return {}
    return {"networks": {k: getattr(args, k) for k in
                         ("household_share", "home_renumber", "move", "phone_wifi", "ipv6_share")}}


class Networks:
    """Prefixes handed out so far, households, carriers and offices, for one log."""

    def __init__(self, rng, args, days):
        self.rng, self.args, self.days = rng, args, days
        self.next_block = 0
        self.households = {}   # country -> [household]
        self.pools = {}        # (country, carrier) -> ([v4 blocks], [v6 blocks])
        self.offices = {}      # (country, office) -> connection

    def block(self):
        self.next_block += 1
        return self.next_block

    def connection(self):
        """A fixed line: an IPv4 prefix and, with --ipv6-share, an IPv6 one."""
        return {"v4": self.block(), "v6": self.block() if self.rng.random() < self.args.ipv6_share else None}

    def event(self, p):
        return self.rng.uniform(0, self.days) if self.rng.random() < p else None

    def household(self, country):
        homes = self.households.setdefault(country, [])
        if homes and self.rng.random() < self.args.household_share:
            return self.rng.choice(homes)
        home = {"id": sum(len(h) for h in self.households.values()), "line": self.connection(),
                "renumber": self.event(self.args.home_renumber), "move": self.event(self.args.move)}
        home["renumbered"] = self.connection() if home["renumber"] is not None else None
        home["moved"] = self.connection() if home["move"] is not None else None
        homes.append(home)
        return home

    def device(self, country, mobile, laptop, trips):
        """A device's places: its household, its carrier, its office, a lodging network per trip."""
        office = None
        if laptop and self.rng.random() < LAPTOP_OFFICE:
            key = (country, self.rng.randrange(OFFICES))
            if key not in self.offices:
                self.offices[key] = self.connection()
            office = self.offices[key]
        carrier = None
        if mobile:
            key = (country, self.rng.randrange(CARRIERS))
            if key not in self.pools:
                v6 = self.rng.random() < self.args.ipv6_share
                self.pools[key] = ([self.block() for _ in range(CGNAT_PREFIXES)],
                                   [self.block() for _ in range(CGNAT_PREFIXES)] if v6 else [])
            carrier = self.pools[key]
        return {"home": self.household(country), "office": office, "carrier": carrier, "mobile": mobile,
                "laptop": laptop, "lodging": [self.connection() for _ in trips]}

    @staticmethod
    def home_line(home, day):
        """The home connection on `day`: the latest of the first line, the renumbered one and the moved one."""
        changes = [(home[when], home[line]) for when, line in (("renumber", "renumbered"), ("move", "moved"))
                   if home[when] is not None and home[when] <= day]
        return max(changes, key=lambda c: c[0])[1] if changes else home["line"]

    def address(self, v4, v6):
        if v6 is not None and self.rng.random() < IPV6_PREFERRED:
            return f"2a00:{v6 >> 16:x}:{v6 & 0xffff:x}::{self.rng.randrange(1, 0xffff):x}"
        return f"{1 + (v4 >> 16) % 223}.{(v4 >> 8) & 255}.{v4 & 255}.{self.rng.randrange(1, 255)}"

    def visit(self, device, day, trip):
        """The address of one visit; `trip` is the index of the trip under way, or None."""
        rng = self.rng
        if device["mobile"] and rng.random() >= self.args.phone_wifi:
            v4s, v6s = device["carrier"]
            return self.address(rng.choice(v4s), rng.choice(v6s) if v6s else None)
        if trip is not None:
            line = device["lodging"][trip]
        elif device["laptop"] and rng.random() < LAPTOP_AWAY:
            line = device["office"] or self.connection()
        else:
            line = self.home_line(device["home"], day)
        return self.address(line["v4"], line["v6"])
