"""The Markdown results table and the PNG plots (matplotlib, when installed)."""

from __future__ import annotations

import logging
import math
import os

log = logging.getLogger(__name__)


def number(value: float | None) -> str:
    """A figure with three significant digits (thousands separated), or '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, int):  # bools too
        return f"{value:,}"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:,.{digits}f}"


def spread(measurement: dict) -> list[str]:
    """A repeated measurement as [median, 'min – max']."""
    return [number(measurement["median"]), f"{number(measurement['min'])} – {number(measurement['max'])}"]


def table(headers: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def targets(results: dict[str, dict]) -> list[str]:
    rows = [
        [item["target"], item["goal"], number(item["measured"]), "pass" if item["passed"] else "**miss**"]
        for result in results.values()
        for item in result["targets"]
    ]
    return ["## Targets", "", *table(["target", "goal", "measured", ""], rows)]


def _pyplot(name: str):
    """matplotlib's pyplot, drawing to files; None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        log.warning("matplotlib is not installed: no %s", name)
        return None
    return pyplot


def bar_chart(folder: str, name: str, title: str, labels: list[str], values: list[float], unit: str) -> list[str]:
    """A horizontal bar chart saved as folder/name; returns [name], or [] without matplotlib."""
    pyplot = _pyplot(name)
    if pyplot is None:
        return []
    figure, axes = pyplot.subplots(figsize=(8, 0.35 * len(labels) + 1.2))
    axes.barh(range(len(labels)), values)
    axes.set_yticks(range(len(labels)), labels)
    axes.invert_yaxis()  # first row on top, as in the table
    axes.set_xlabel(unit)
    axes.set_title(title)
    figure.tight_layout()
    figure.savefig(os.path.join(folder, name), dpi=100)
    pyplot.close(figure)
    return [name]


def line_chart(folder: str, name: str, title: str, lines: dict[str, tuple[list, list]], x: str, y: str) -> list[str]:
    """Lines (label -> (xs, ys)) in one chart saved as folder/name; returns [name], or [] without matplotlib."""
    pyplot = _pyplot(name)
    if pyplot is None:
        return []
    figure, axes = pyplot.subplots(figsize=(8, 4.5))
    for label, (xs, ys) in lines.items():
        axes.plot(xs, ys, marker=".", label=label)
    axes.set_xlabel(x)
    axes.set_ylabel(y)
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(os.path.join(folder, name), dpi=100)
    pyplot.close(figure)
    return [name]


NOTES_FILE = "notes.md"  # hand-written lab notes, kept across runs


def write(folder: str, header: list[str], results: dict[str, dict], sections: list[list[str]], plots: list[str]) -> str:
    """README.md in `folder`: the header, the targets, each benchmark's section, the plots, then
    the hand-written notes of NOTES_FILE, if the folder has one."""
    lines = [*header, "", *targets(results)]
    for section in sections:
        lines += ["", *section]
    if plots:
        lines += ["", "## Plots", ""] + [f"![{name}]({name})" for name in plots]
    notes = os.path.join(folder, NOTES_FILE)
    if os.path.exists(notes):
        with open(notes) as file:
            lines += ["", "## Notes", "", file.read().rstrip()]
    path = os.path.join(folder, "README.md")
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")
    return path
