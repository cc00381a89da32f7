"""Dates written many ways, and their ISO form: the translator sample's task.

Formats (years 1950-2049): "March 3, 1998", "3 March 1998", "the 3rd of March 1998",
"Mar 3 1998", "Tuesday, March 3, 1998", "03/03/1998" and "3/3/98" (US month/day),
"3.3.1998" (day.month), "1998.03.03", "1998年3月3日". Target: "1998-03-03".
"""
import datetime
import random

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def ordinal(n):
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def render(d, fmt):
    m, y = MONTHS[d.month - 1], d.year
    return [
        lambda: f"{m} {d.day}, {y}",
        lambda: f"{d.day} {m} {y}",
        lambda: f"the {ordinal(d.day)} of {m} {y}",
        lambda: f"{m[:3]} {d.day} {y}",
        lambda: f"{DAYS[d.weekday()]}, {m} {d.day}, {y}",
        lambda: f"{d.month:02d}/{d.day:02d}/{y}",
        lambda: f"{d.month}/{d.day}/{y % 100:02d}",
        lambda: f"{d.day}.{d.month}.{y}",
        lambda: f"{y}.{d.month:02d}.{d.day:02d}",
        lambda: f"{y}年{d.month}月{d.day}日",
    ][fmt]()


FORMATS = 10


def example(rng):
    start = datetime.date(1950, 1, 1).toordinal()
    d = datetime.date.fromordinal(start + rng.randrange(36524))  # 1950-01-01 .. 2049-12-31
    text = render(d, rng.randrange(FORMATS))
    if rng.random() < 0.3:
        text = text.lower()
    return text, d.isoformat()


def dataset(n, seed):
    rng = random.Random(seed)
    return [example(rng) for _ in range(n)]


def vocabulary():
    """The character vocabulary: ids 0-3 are <pad>, <bos>, <eos>, <unk>."""
    chars = set()
    for text, iso in dataset(20000, 0):
        chars.update(text)
        chars.update(iso)
    for name in MONTHS + DAYS:
        chars.update(name + name.lower())
    chars.update("0123456789-/., 年月日")
    return ["<pad>", "<bos>", "<eos>", "<unk>"] + sorted(chars)
