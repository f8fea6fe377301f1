"""The README's results table, from ``benchmarks/results/<size>.json``.

Run: ``.venv/bin/python benchmarks/table.py`` (prints Markdown).
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = ("10k", "100k", "1m")


def _cell(measure: dict) -> str:
    unit = measure["unit"]
    value = f"{measure['value']:,.1f} {unit}".strip()
    floor = (
        f"{measure['floor']:,.1f} {unit}".strip()
        if measure["floor"] is not None
        else "–"
    )
    ratio = f"{measure['ratio']:.2f}×" if measure["ratio"] is not None else "–"
    verdict = "ok" if measure["ok"] else "**missed**"
    return f"{value} / {floor} / {ratio} {verdict}"


def main() -> None:
    runs = {
        size: json.loads((RESULTS / f"{size}.json").read_text())
        for size in SIZES
        if (RESULTS / f"{size}.json").exists()
    }
    names: dict[tuple[str, str], dict[str, dict]] = {}
    budgets: dict[tuple[str, str], str] = {}
    for size, run in runs.items():
        for measure in run["measures"]:
            if measure["number"] == "-":
                continue
            key = (
                measure["number"],
                measure["name"].split(",")[0]
                if measure["number"] == "5b"
                else measure["name"],
            )
            names.setdefault(key, {})[size] = measure
            budgets[key] = measure["budget"]
    print(
        "| # | measure | budget | "
        + " | ".join(f"{size}: value / floor / ratio" for size in runs)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(runs))
    for key, by_size in names.items():
        cells = [(_cell(by_size[size]) if size in by_size else "–") for size in runs]
        print(f"| {key[0]} | {key[1]} | {budgets[key]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
