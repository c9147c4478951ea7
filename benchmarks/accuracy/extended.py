"""Extended client signals: the --extended model of gen.py (off by default).

With --extended each visit gets a key `x`: signals a browser gives without a prompt that differ between identical
devices (same model, browser, time zone and languages) because they are settings or exact versions, not hardware:
- screen: availWidth/availHeight, the screen less the taskbar, Dock or panel (a per-device setting on desktops);
- userAgentData (Chromium browsers, not on iOS): platformVersion and fullVersionList, drawn from the fingerprint
  network given the device's user agent, then moved by the window's major releases, weekly patch releases and
  an OS update;
- intl: calendar, numberingSystem and hourCycle of the browser's locale (CLDR defaults; WebKit follows the
  system's 24-hour switch);
- preferences: colorScheme (light, dark, or switching by local time of day), reducedMotion, contrast.
Each rate is cited where a public figure exists and marked as an estimate otherwise (README.md, "Extended
signals"). Every draw is made on the model's own random stream, a fixed number per device, so turning the model
on moves nothing else in the log, and changing one of its knobs moves only what that knob governs.
"""
import functools
import random
import re
from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

from common import dec, pick

# Estimate: share of devices whose OS updates once within 90 days in a way platformVersion shows (a Windows
# feature update or the move to Windows 11, a macOS or Linux point release, the next Android version).
OS_UPDATE = 0.3
# Estimate guided by the network: 16 % of its Windows fingerprints report no taskbar (availHeight = height), and
# its macOS ones split between a menu bar alone (24-39 px) and a menu bar plus the Dock (105-120 px). Share of
# desktops whose taskbar, Dock or panel setting is not the one their model was drawn with.
AVAIL_CUSTOM = 0.2
# Estimate: share of WebKit devices (Safari, every iOS browser) whose 24-hour switch is not the locale's default.
HOUR_CYCLE_FLIP = 0.15
# About 22 % of Chrome's page loads came with prefers-color-scheme: dark (Chrome Platform Status, quoted in
# web.dev's Terra case study, December 2021). Share of devices set to dark all day; with the automatic ones at
# night, about 30 % of visits come out dark, in line with the rise since 2021.
DARK_SHARE = 0.22
# Estimate: share of the other phones and Macs on an automatic (time-of-day) appearance; a tenth of that on
# Windows and Linux, which have no built-in schedule.
AUTO_APPEARANCE = 0.25
AUTO_DESKTOP_FACTOR = 0.1
NIGHT = (19, 7)                   # estimate: automatic appearance is dark from 19:00 to 07:00 local time
# Estimate: share of Android phones on their model's usual Android version. The network ties userAgentData to
# the user agent alone, and Chrome's reduced Android user agent is the same for nearly every phone, so its
# platformVersion would be drawn as if owners of one model ran unrelated versions; the rest, like the network.
ANDROID_MODEL_VERSION = 0.7
# Estimates: share of devices asking for reduced motion, and for more contrast.
REDUCED_MOTION = 0.03
CONTRAST_MORE = 0.01

KNOBS = (("--os-update", OS_UPDATE, "share of devices whose OS updates once (platformVersion goes up)"),
         ("--avail-custom", AVAIL_CUSTOM, "share of desktops whose taskbar, Dock or panel is set unlike their model's"),
         ("--hour-cycle-flip", HOUR_CYCLE_FLIP, "share of WebKit devices whose 24-hour switch is not the locale's"),
         ("--dark-share", DARK_SHARE, "share of devices set to dark appearance all day"),
         ("--auto-appearance", AUTO_APPEARANCE, "share of the other phones and Macs whose appearance follows the clock"),
         ("--reduced-motion", REDUCED_MOTION, "share of devices asking for reduced motion"),
         ("--contrast-more", CONTRAST_MORE, "share of devices asking for more contrast"),
         ("--android-model-version", ANDROID_MODEL_VERSION, "share of Android phones on their model's usual version"))
KNOB_NAMES = [flag[2:].replace("-", "_") for flag, _, _ in KNOBS]

# Chrome ships a stable update about every week between its 4-weekly majors (Google Security Blog, August 2023:
# weekly stable updates from Chrome 116 on; the Chrome Releases blog lists them).
PATCH_EVERY_DAYS, MAJOR_EVERY_DAYS = 7, 28
FIRST_PATCH = (35, 85)            # estimate: patch number of a major's first stable build (Chrome Releases blog)
PATCH_STEP = (10, 40)             # estimate: how far a weekly release moves the patch number
# Estimates, in CSS pixels: Windows 11's taskbar 48, Windows 10's 40 (the network's two main insets); the macOS
# Dock adds about 80 to the menu bar; a Linux panel 48.
WIN11_TASKBAR, WIN10_TASKBAR, DOCK, LINUX_PANEL = 48, 40, 80, 48
PHONES = ("ios", "android")

# Chromium's brand list (components/embedder_support/user_agent_utils.cc, GenerateBrandVersionList and
# GetGreasedUserAgentBrandVersion): the major version picks the GREASE brand, its version and the order.
GREASE = re.compile(r"^Not.A.Brand$")
GREASE_CHARS = [" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"]
GREASE_VERSIONS = ["8", "99", "24"]
BRAND_ORDERS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]

# Locale defaults of CLDR 48 (hourCycle from its time data; checked with Intl.DateTimeFormat(locale, {hour:
# "numeric"}).resolvedOptions() under ICU 78.2). A locale not listed takes its language's entry, then h23, the
# world default. The first language of navigator.languages stands for the browser's locale.
HOUR_CYCLE = {"en": "h12", "en-GB": "h23", "en-IE": "h23", "en-ZA": "h23", "en-NG": "h23", "es-US": "h12",
              "es-MX": "h12", "es-419": "h12", "es-AR": "h12", "ko": "h12", "hi": "h12", "fil": "h12", "ar": "h12",
              "ar-MA": "h23", "zh-TW": "h12", "zh-HK": "h12", "ur": "h12", "bn": "h12", "mr": "h12"}
# Default numbering systems other than latn (CLDR 48): Arabic digits in most Arab regions, but not for bare "ar"
# nor in the Maghreb or the Emirates; a few other scripts.
ARAB_DIGIT_REGIONS = {"BH", "EG", "IQ", "JO", "KW", "LB", "OM", "PS", "QA", "SA", "SD", "SY", "YE"}
NUMBERING = {"fa": "arabext", "ps": "arabext", "bn": "beng", "mr": "deva", "ne": "deva", "my": "mymr"}
# Default calendars other than gregory (CLDR 48): Thai Buddhist, Persian.
CALENDAR = {"th": "buddhist", "fa": "persian", "ps": "persian"}


def add_arguments(ap):
    ap.add_argument("--extended", action="store_true",
                    help="give each visit the extended client signals (key x; see README.md, Extended signals)")
    for flag, default, text in KNOBS:
        ap.add_argument(flag, type=float, default=default, metavar="P", help=f"with --extended: {text}")


def check_arguments(ap, args):
    for name in KNOB_NAMES:
        if not 0.0 <= getattr(args, name) <= 1.0:
            ap.error(f"--{name.replace('_', '-')} is a share, between 0 and 1")


def knobs(args):
    """The manifest's record of the model's settings (empty when it is off, as before it existed)."""
    return {"extended": {k: getattr(args, k) for k in KNOB_NAMES}} if args.extended else {}


def intl(locale):
    """calendar, numberingSystem and hourCycle a browser reports by default for `locale`."""
    lang, _, region = locale.partition("-")
    numbering = "arab" if lang == "ar" and region in ARAB_DIGIT_REGIONS else NUMBERING.get(lang, "latn")
    return {"calendar": CALENDAR.get(lang, "gregory"), "numberingSystem": numbering,
            "hourCycle": HOUR_CYCLE.get(locale, HOUR_CYCLE.get(lang, "h23"))}


def vtuple(v):
    """A dotted version as integers, or None when it is not one."""
    parts = v.split(".") if isinstance(v, str) else []
    return tuple(int(p) for p in parts) if parts and all(p.isdigit() for p in parts) else None


def brand_list(major, product, versions):
    """The fullVersionList Chromium builds for `major`, with the product brand (None for plain Chromium)."""
    grease = {"brand": f"Not{GREASE_CHARS[major % 11]}A{GREASE_CHARS[(major + 1) % 11]}Brand",
              "version": GREASE_VERSIONS[major % 3] + ".0.0.0"}
    chromium = {"brand": "Chromium", "version": versions["Chromium"]}
    if product is None:
        out = [None, None]
        out[major % 2], out[(major + 1) % 2] = grease, chromium
        return out
    order, out = BRAND_ORDERS[major % 6], [None] * 3
    out[order[0]], out[order[1]], out[order[2]] = grease, chromium, {"brand": product, "version": versions[product]}
    return out


def parse_uach(d, ua):
    """(platformVersion, product brand, {brand: version}) of a network value that a real Chromium browser with
    this user agent would give: a brand list Chromium would build, whose majors are the user agent's. Values
    that are not (spoofed or headless browsers, about 0.3 % of the network's) give None."""
    if not d or not isinstance(d.get("platformVersion"), str) or len(d["platformVersion"]) > 32:
        return None
    fvl = d.get("fullVersionList") or []
    named = [b for b in fvl if not GREASE.match(b["brand"])]
    versions = {b["brand"]: b["version"] for b in named}
    product = next((b for b in versions if b != "Chromium"), None)
    ua_major = re.search(r"Chrome/(\d+)", ua)
    if ("Chromium" not in versions or len(versions) != len(named) or len(named) > 2 or product == "HeadlessChrome"
            or not ua_major or any(len(vtuple(v) or ()) != 4 or len(v) > 32 for v in versions.values())
            or any(len(b) > 64 for b in versions)):
        return None
    major = vtuple(versions["Chromium"])[0]
    if major != int(ua_major.group(1)) or (product and vtuple(versions[product])[0] != major):
        return None
    return (d["platformVersion"], product, versions) if brand_list(major, product, versions) == fvl else None


def own_keys(product, versions):
    """The version lines of a brand list: Chromium's, and the product's when it numbers its own builds (Edge)."""
    return ["Chromium"] + ([product] if product and versions[product] != versions["Chromium"] else [])


class Calendar:
    """Chromium-family versions over the window, shared by every device: each line's build number per major (the
    network's, extended past it by the usual step) and the patch numbers of the weekly releases. Slot 0 is the
    major that is stable when the window opens (the network's most common), slot s the s-th major released in it."""

    def __init__(self, rng, observed, release_days, days):
        # observed: {(cls, key, major, build, patch): weight}, from the network's values
        self.obs = observed
        majors = {}
        for (cls, key, major, build, patch), w in observed.items():
            if key == "Chromium":
                majors[major] = majors.get(major, 0) + w
        self.stable = max(majors, key=majors.get)
        self.builds = {}
        for (cls, key, major, build, patch), w in observed.items():
            per = self.builds.setdefault(key, {}).setdefault(major, {})
            per[build] = per.get(build, 0) + w
        starts = [release_days[0] - MAJOR_EVERY_DAYS] + list(release_days)
        ends = list(release_days) + [days]
        self.starts = starts
        # weekly releases inside the window: (slot, day); earlier ones are already in the network's versions
        self.events = [(s, d) for s in range(len(starts))
                       for d in range(starts[s] + PATCH_EVERY_DAYS, ends[s], PATCH_EVERY_DAYS) if d >= 0]
        keys = sorted(self.builds)
        self.first = {k: [None] + [rng.randint(*FIRST_PATCH) for _ in release_days] for k in keys}
        self.steps = {k: [rng.randint(*PATCH_STEP) for _ in self.events] for k in keys}

    @functools.lru_cache(maxsize=None)
    def build(self, key, major):
        """The build number of `key`'s `major`: the network's most common, or extrapolated from its last majors."""
        known = {m: max(bs, key=bs.get) for m, bs in self.builds.get(key, {}).items()}
        if major in known:
            return known[major]
        ms = sorted(known)
        last, first = ms[-1], ms[max(0, len(ms) - 4)]
        step = (known[last] - known[first]) // (last - first) if known[last] > known[first] else 50
        return known[last] + step * (major - last)

    @functools.lru_cache(maxsize=None)
    def known_patch(self, cls, key, major):
        """The network's most common patch number of this major's build (on this class if it has one)."""
        build = self.build(key, major)
        for same_cls in (True, False):
            ws = {}
            for (c, k, m, b, p), w in self.obs.items():
                if k == key and m == major and b == build and (c == cls or not same_cls):
                    ws[p] = ws.get(p, 0) + w
            if ws:
                return max(ws, key=ws.get)
        return 0

    @functools.lru_cache(maxsize=None)
    def patch(self, cls, key, slot, upto):
        """The patch number of `slot`'s latest release out by day `upto` (its first build if none is out yet)."""
        p = self.known_patch(cls, key, self.stable) if slot == 0 else self.first[key][slot]
        for i, (s, d) in enumerate(self.events):
            if s == slot and d <= upto:
                p += self.steps[key][i]
        return p

    def version(self, dev, key, day):
        """(major, minor, build, patch) of a device's `key` on `day`. The major follows the device's user-agent
        bumps; entering a major gives its latest release out by then; each weekly release of the device's major
        is taken after the device's own delay. Nothing goes down: each step only raises the version."""
        bumps = [b for b in dev["bumps"] if b <= day]
        major = dev["major"] + len(bumps)
        _, minor, build, patch = dev["v0"][key]
        if build == 0 and patch == 0:                    # a reduced version (Brave): only the major moves
            return (major, minor, 0, 0)
        slot = major - self.stable
        in_window = 0 <= slot < len(self.starts)
        if bumps:
            build = self.build(key, major)
            patch = (self.patch(dev["cls"], key, slot, max(bumps[-1], self.starts[slot])) if in_window
                     else self.known_patch(dev["cls"], key, major))
        if in_window and dev["bumps"]:                   # a device that never updates takes no patch either
            for i, (s, d) in enumerate(self.events):
                if s == slot and d + dev["delays"][i] <= day:
                    patch = max(patch, self.patch(dev["cls"], key, slot, d))
        return (major, minor, build, patch)


def vstr(v):
    return ".".join(str(p) for p in v)


def drift_tags(prev, x):
    """The tags of what changed since the device's previous visit, in the order README.md lists them."""
    pu, xu = prev.get("userAgentData", {}), x.get("userAgentData", {})
    return [tag for tag, changed in (
        ("fullversion", pu.get("fullVersionList") != xu.get("fullVersionList")),
        ("platformversion", pu.get("platformVersion") != xu.get("platformVersion")),
        ("avail", prev["screen"] != x["screen"]),
        ("colorscheme", prev["preferences"]["colorScheme"] != x["preferences"]["colorScheme"])) if changed]


class Extended:
    """The network's userAgentData values per user agent, the version calendar, and each device's settings."""

    def __init__(self, rng, args, nodes, uas_by_class, days, release_days):
        self.rng, self.args, self.days = rng, args, days
        self.uach, self.pv_pool, observed = {}, {}, {}
        node = nodes["userAgentData"]
        for cls, uas in uas_by_class.items():
            pvs = {}
            for ua, p in uas:
                # the probabilities only: the node's sampler would draw from the global `random` gen.py seeds
                probs = node.get_probabilities_given_known_values({"userAgent": ua})
                pairs = [(v, q) for v, q in ((parse_uach(dec(raw), ua), q) for raw, q in probs.items()) if v]
                self.uach[ua] = pairs
                for (pv, product, versions), q in pairs:
                    pvs[pv] = pvs.get(pv, 0) + p * q
                    for key in own_keys(product, versions):
                        major, _, build, patch = vtuple(versions[key])
                        if build:                        # reduced versions (Brave) say nothing of builds
                            k = (cls, key, major, build, patch)
                            observed[k] = observed.get(k, 0) + p * q
            total = sum(pvs.values())
            # OS-update targets: the class's well-formed versions held by at least 1 % of its fingerprints
            self.pv_pool[cls] = [(v, w) for v, w in pvs.items() if len(vtuple(v) or ()) == 3 and w >= 0.01 * total]
        self.cal = Calendar(rng, observed, release_days, days)
        self.zones = {}
        self.model_versions = {}

    def choose(self, pairs):
        """pick() from `pairs`, None when there is none: one draw either way, so every device draws alike."""
        if not pairs:
            self.rng.random()
            return None
        return pick(self.rng, pairs)

    def os_targets(self, cls, pv):
        """The versions an OS update can take `pv` to: a later one of the network's (the next major on Android,
        the same major on Linux); a point release on macOS and Linux when the network has none later."""
        cur = vtuple(pv)
        if not cur:
            return []
        cur = (cur + (0, 0, 0))[:3]
        later = [(v, w) for v, w in self.pv_pool[cls] if vtuple(v) > cur]
        if cls == "android" and later:
            later = [(v, w) for v, w in later if vtuple(v)[0] == min(vtuple(u)[0] for u, _ in later)]
        if cls == "linux":
            later = [(v, w) for v, w in later if vtuple(v)[0] == cur[0]]
        if not later and cls in ("macos", "linux"):
            later = [(vstr(cur[:2] + (cur[2] + 1,)), 1.0)]
        return later

    @staticmethod
    def inset(cls, m, pv, custom):
        """Screen minus avail area, in CSS pixels: the model's, or on a desktop with its own setting the other
        state of the same bar: Windows' taskbar auto-hidden or shown (40 px on Windows 10, whose platformVersion
        is below 13 per Microsoft's Windows 11 detection guide, else 48), the macOS Dock hidden or shown, a Linux
        panel hidden or shown."""
        dw, dh = max(0, m["sw"] - m["aw"]), max(0, m["sh"] - m["ah"])
        if not custom or cls in PHONES:
            return dw, dh
        if cls == "windows":
            win10 = pv is not None and (vtuple(pv) or (99,))[0] < 13
            return (dw, 0) if dh else (dw, WIN10_TASKBAR if win10 else WIN11_TASKBAR)
        if cls == "macos":
            return (dw, dh - DOCK) if dh > DOCK else (dw, dh + DOCK)
        return (dw, 0) if dh else (dw, LINUX_PANEL)

    def device(self, cls, m, fam, languages, ua_bumps, adopt_mean):
        """A device's settings. The draws come first, the same number for every device."""
        r, a = self.rng, self.args
        chromium = cls != "ios" and fam not in ("safari", "firefox")    # iOS browsers are WebKit underneath
        uach = self.choose(self.uach.get(m["ua"], []) if chromium else [])
        on_model_version = r.random() < a.android_model_version
        if uach and cls == "android" and on_model_version:
            uach = (self.model_version(m),) + tuple(uach[1:])
        update, update_day = r.random() < a.os_update, r.uniform(0, self.days)
        target = self.choose(self.os_targets(cls, uach[0]) if uach and update else [])
        delays = [r.expovariate(1.0 / adopt_mean) for _ in self.cal.events]
        custom, flip = r.random() < a.avail_custom, r.random() < a.hour_cycle_flip
        u_dark, u_auto = r.random(), r.random()
        reduced, more = r.random() < a.reduced_motion, r.random() < a.contrast_more
        webkit = cls == "ios" or fam == "safari"
        locale = intl(languages[0])
        if webkit and flip:                              # the system's 24-hour switch, which WebKit follows
            locale["hourCycle"] = "h23" if locale["hourCycle"] in ("h11", "h12") else "h12"
        auto_p = a.auto_appearance * (1.0 if cls in PHONES + ("macos",) else AUTO_DESKTOP_FACTOR)
        dev = {"cls": cls, "inset": self.inset(cls, m, uach[0] if uach else None, custom),
               "custom": custom and cls not in PHONES, "flip": webkit and flip, "intl": locale,
               "scheme": "dark" if u_dark < a.dark_share else ("auto" if u_auto < auto_p else "light"),
               "reduced": reduced, "contrast": "more" if more else "no-preference", "uach": None}
        if uach:
            pv, product, versions = uach
            dev["uach"] = {"pv": pv, "update": (update_day, target) if target else None, "product": product,
                           "keys": own_keys(product, versions), "major": vtuple(versions["Chromium"])[0],
                           "v0": {k: vtuple(versions[k]) for k in own_keys(product, versions)},
                           "cls": cls, "bumps": list(ua_bumps), "delays": delays}
        return dev

    def model_version(self, m):
        """An Android model's usual platformVersion: drawn from the class's versions once per model, on a stream
        of the model's own, so that it takes nothing from the devices' stream."""
        key = f"{self.args.seed}|{m['ua']}|{m['sw']}x{m['sh']}|{m['renderer']}|{m['hwc']}|{m['mem']}"
        if key not in self.model_versions:
            self.model_versions[key] = pick(random.Random(key), self.pv_pool["android"])
        return self.model_versions[key]

    def scheme(self, dev, t_ms, tz):
        if dev["scheme"] != "auto":
            return dev["scheme"]
        zone = self.zones.get(tz) or self.zones.setdefault(tz, ZoneInfo(tz))
        hour = datetime.fromtimestamp(t_ms / 1000, zone).hour
        return "dark" if hour >= NIGHT[0] or hour < NIGHT[1] else "light"

    def user_agent_data(self, u, day):
        versions = {k: vstr(self.cal.version(u, k, day)) for k in u["keys"]}
        if u["product"] and u["product"] not in versions:
            versions[u["product"]] = versions["Chromium"]
        pv = u["update"][1] if u["update"] and day >= u["update"][0] else u["pv"]
        major = vtuple(versions["Chromium"])[0]
        return {"platformVersion": pv, "fullVersionList": brand_list(major, u["product"], versions)}

    def visit(self, dev, t_ms, day, tz, sw, sh):
        """The `x` object of one visit on the screen (sw, sh) it is made on, in the wire format."""
        dw, dh = dev["inset"]
        x = {"screen": {"availWidth": min(32768, max(0, sw - dw)), "availHeight": min(32768, max(0, sh - dh))}}
        if dev["uach"]:
            x["userAgentData"] = self.user_agent_data(dev["uach"], day)
        x["intl"] = dev["intl"]
        x["preferences"] = {"colorScheme": self.scheme(dev, t_ms, tz), "reducedMotion": dev["reduced"],
                            "contrast": dev["contrast"]}
        return x


def record(dev):
    """The device table's `extended` field: the device's settings."""
    u = dev["uach"]
    return {"platform_version": u and u["pv"], "full_version": u and vstr(u["v0"]["Chromium"]),
            "os_update": u and u["update"] and {"day": round(u["update"][0], 2), "to": u["update"][1]},
            "inset": list(dev["inset"]), "inset_custom": dev["custom"], "hour_cycle": dev["intl"]["hourCycle"],
            "hour_cycle_flip": dev["flip"], "color_scheme": dev["scheme"], "reduced_motion": dev["reduced"],
            "contrast": dev["contrast"]}


def effects(devices):
    """The manifest's counts of what the model's draws came to."""
    xs = [(d["cls"], d["extended"]) for d in devices if "extended" in d]
    return {"user_agent_data": dict(Counter(c for c, x in xs if x["full_version"])),
            "os_updates": sum(1 for _, x in xs if x["os_update"]),
            "inset_custom": dict(Counter(c for c, x in xs if x["inset_custom"])),
            "hour_cycle_flips": sum(1 for _, x in xs if x["hour_cycle_flip"]),
            "color_scheme": dict(Counter(x["color_scheme"] for _, x in xs)),
            "reduced_motion": sum(1 for _, x in xs if x["reduced_motion"]),
            "contrast_more": sum(1 for _, x in xs if x["contrast"] == "more")}
