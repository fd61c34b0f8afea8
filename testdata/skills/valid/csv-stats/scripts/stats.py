#!/usr/bin/env python3
"""Print row count, column count and the sum of the price column of a CSV file."""
import csv
import sys
from decimal import Decimal


def main(argv):
    if len(argv) != 2:
        print("usage: stats.py FILE.csv", file=sys.stderr)
        return 2
    with open(argv[1], newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        rows = [r for r in reader if r]
    total = Decimal("0")
    if "price" in header:
        i = header.index("price")
        for r in rows:
            total += Decimal(r[i])
    print(f"rows={len(rows)} columns={len(header)} sum(price)={total.quantize(Decimal('0.01'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
