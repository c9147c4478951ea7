"""Helpers shared by gen.py and its opt-in models (networks.py, extended.py): reading the fingerprint network's
values and drawing from random streams. Moved out of gen.py unchanged, so that a model in a module of its own
can draw exactly as gen.py does without importing gen.py."""
import json
import math
import random


def dec(v):
    if isinstance(v, str) and v.startswith("*STRINGIFIED*"):
        return json.loads(v[len("*STRINGIFIED*"):])
    if v == "*MISSING_VALUE*":
        return None
    return v


def pick(rng, pairs):
    r = rng.random() * sum(p for _, p in pairs)
    acc = 0.0
    for v, p in pairs:
        acc += p
        if r < acc:
            return v
    return pairs[-1][0]


def poisson_draw(r, lam):
    # Knuth for small lam, normal approx otherwise
    if lam < 30:
        L, k, p = math.exp(-lam), 0, 1.0
        while True:
            p *= r.random()
            if p <= L:
                return k
            k += 1
    return max(0, int(round(r.gauss(lam, math.sqrt(lam)))))


def knob_rng(seed, name):
    """A knob's own stream. Seeded from a string (hashed with SHA-512 by `random`, so stable across runs) so
    that it can never coincide with the seed-derived streams the original draws use."""
    return random.Random(f"{seed}/{name}")


def scaled_flag(r, flag, p, scale):
    """Turn a draw that came out True with probability p into one that is True with probability min(1, p*scale),
    keeping the original outcome where possible: below 1, thin the True outcomes; above 1, turn just enough
    False outcomes True. The original draw is made as before, so the other streams do not move."""
    if scale == 1.0:
        return flag
    if scale < 1.0:
        return flag and r.random() < scale
    if flag or p >= 1.0:
        return flag
    return r.random() < (min(1.0, p * scale) - p) / (1.0 - p)


def scaled_trips(r, trips, rate, scale, draw):
    """Trips at `scale` times the rate. A Poisson count thinned with probability `scale` is Poisson(rate*scale),
    and adding an independent Poisson(rate*(scale-1)) gives Poisson(rate*scale): the original trips stay where
    they were, some are dropped or new ones are added."""
    if scale == 1.0:
        return trips
    if scale < 1.0:
        return [t for t in trips if r.random() < scale]
    return trips + [draw(r) for _ in range(poisson_draw(r, rate * (scale - 1.0)))]
