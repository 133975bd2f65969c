"""What a person looks at first after a run: the confusion matrix and the training curves as PNGs in
the job dir, and JOB_DIR/report.md linking them beside the final metrics and a per-class table.

matplotlib is optional (the "plots" extra): without it only report.md is written. Files go through
tf.io.gfile, so job dirs may be local paths or gs:// paths.
"""

from __future__ import annotations

import io
import logging
import math
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from trainer import early_stopping
from trainer.metrics import CURVE_COUNTS, CURVE_THRESHOLDS, majority_rate

log = logging.getLogger(__name__)

CONFUSION_FILE = "confusion_matrix.png"
CURVES_OF_THRESHOLDS_FILE = "roc_and_precision_recall.png"  # binary labels
TABLE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
CURVES_FILE = "training_curves.png"
REPORT_FILE = "report.md"
EVAL_DIR = "eval"  # where the Estimator writes its evaluation summaries, under the job dir
EVENTS_GLOB = "events.out.tfevents.*"
CELL_TEXT_MAX_CLASSES = 20  # above this, the cells are too small for their counts
LABEL_MAX_CHARS = 20
DPI = 100
SKIPPED = "figures skipped: pip install 'queue-trainer[plots]' to get them"

Series = list[tuple[int, float]]
Curves = dict[str, dict[str, Series]]


# --- the numbers -------------------------------------------------------------------------------


def read_curves(job_dir: str) -> Curves:
    """Every scalar summary of the run, by step: {"train": {tag: [(step, value), ...]}, "eval": {...}},
    from the event files in JOB_DIR (training) and JOB_DIR/eval (evaluation)."""
    return {"train": read_scalars(job_dir), "eval": read_scalars(posixpath.join(job_dir, EVAL_DIR))}


def read_scalars(folder: str) -> dict[str, Series]:
    """The scalars of the event files directly in `folder`, each tag's sorted by step. A step written twice
    (a run resumed from an earlier checkpoint) keeps the value read last: files go oldest first."""
    by_tag: dict[str, dict[int, float]] = {}
    for path in sorted(tf.io.gfile.glob(posixpath.join(folder, EVENTS_GLOB))):  # names start with the time
        for event in _events(path):
            for value in event.summary.value:
                number = scalar(value)
                if number is not None:
                    by_tag.setdefault(value.tag, {})[int(event.step)] = number
    return {tag: sorted(values.items()) for tag, values in sorted(by_tag.items())}


def _events(path: str):
    """The events of one file, up to a damaged record (a job killed while writing) instead of failing on it."""
    try:
        yield from tf.compat.v1.train.summary_iterator(path)
    except tf.errors.DataLossError as error:
        log.warning("reading %s stopped at a damaged record: %s", path, error.message)


def scalar(value: Any) -> float | None:
    """A summary value as a number: TF1 summaries keep it in simple_value, TF2 ones in a one-number
    tensor; None for anything else (images, histograms, text)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind == "tensor":
        array = tf.make_ndarray(value.tensor)
        if array.size == 1 and array.dtype.kind in "biuf":
            return float(array.reshape(()))
    return None


def confusion_counts(matrix: Any, class_names: Sequence[str]) -> np.ndarray:
    """The confusion matrix as a square integer array (rows: true class, columns: predicted), one row
    per class name; a ValueError if it does not fit the class names."""
    counts = np.asarray(matrix, dtype=np.int64)
    if counts.shape != (len(class_names), len(class_names)):
        raise ValueError(f"a confusion matrix of shape {counts.shape} for {len(class_names)} class names")
    return counts


# --- the figures -------------------------------------------------------------------------------


def has_matplotlib() -> bool:
    """Whether matplotlib can be imported (the "plots" extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _figure(width: float, height: float) -> Any:
    """A matplotlib Figure drawn by the Agg backend, off screen and without pyplot's global state (no
    backend switch, no figure left open in a long-running process). ImportError without matplotlib."""
    import matplotlib  # noqa: F401  (first, so that a missing matplotlib fails here)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure: Any, path: str) -> str:
    """Writes `figure` as a PNG to `path` (local or gs://); returns `path`."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    with tf.io.gfile.GFile(path, "wb") as file:
        file.write(buffer.getvalue())
    return path


def confusion_matrix_png(matrix: Any, class_names: Sequence[str], path: str) -> str:
    """Draws the confusion matrix (rows: true class, columns: predicted) to `path` as a PNG; returns `path`.
    Cells are shaded by their share of the true class, so a small class's mistakes show as clearly as a
    large one's, and hold their counts up to CELL_TEXT_MAX_CLASSES classes."""
    counts = confusion_counts(matrix, class_names)
    shares = row_shares(counts)
    side = min(18.0, max(6.0, 0.5 * len(class_names) + 3))
    figure = _figure(side + 1.5, side)  # the colour bar takes the extra width
    axes = figure.add_subplot()
    image = axes.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    figure.colorbar(image, ax=axes, shrink=0.8, label="share of the true class")
    _label_classes(axes, class_names)
    if len(class_names) <= CELL_TEXT_MAX_CLASSES:
        _write_counts(axes, counts, shares)
    axes.set_title(_accuracy_title(counts))
    return _save(figure, path)


def row_shares(counts: np.ndarray) -> np.ndarray:
    """Each cell's share of its row (of its true class); 0 in a row without examples."""
    totals = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)


def _label_classes(axes: Any, class_names: Sequence[str]) -> None:
    """Class names on both axes (shortened, and thinned out past 60 classes), predicted below, true on the left."""
    every = math.ceil(len(class_names) / 60)
    ticks = list(range(0, len(class_names), every))
    labels = [_short(class_names[index]) for index in ticks]
    size = 10 if len(class_names) <= CELL_TEXT_MAX_CLASSES else 7
    slanted = len(ticks) * max(map(len, labels)) > 40  # names side by side would run into each other
    axes.set_xticks(ticks, labels, fontsize=size, rotation=45 if slanted else 0, ha="right" if slanted else "center")
    axes.set_yticks(ticks, labels, fontsize=size)
    axes.set_xlabel("predicted class")
    axes.set_ylabel("true class")


def _short(name: str) -> str:
    """A class name cut to LABEL_MAX_CHARS characters, so long names do not squeeze the matrix."""
    return name if len(name) <= LABEL_MAX_CHARS else name[: LABEL_MAX_CHARS - 1] + "…"


def _write_counts(axes: Any, counts: np.ndarray, shares: np.ndarray) -> None:
    """Each cell's count, white on dark cells, and faint for the zeros so the mistakes stand out."""
    size = 9 if len(counts) <= 12 else 8
    for (row, column), count in np.ndenumerate(counts):
        colour = "white" if shares[row, column] > 0.5 else ("0.7" if count == 0 else "black")
        axes.text(column, row, str(count), ha="center", va="center", fontsize=size, color=colour)


def _accuracy_title(counts: np.ndarray) -> str:
    """The title: the accuracy the matrix shows, and on how many examples."""
    total = int(counts.sum())
    if total == 0:
        return "Confusion matrix (no examples)"
    return f"Confusion matrix: accuracy {np.trace(counts) / total:.1%} on {total:,} examples"


def training_curves_png(curves: Curves, path: str) -> str:
    """Draws loss by step (training and evaluation) and accuracy by step (train_accuracy and the evaluation's
    accuracy) side by side, from read_curves(), to `path` as a PNG; returns `path`."""
    figure = _figure(13, 4.8)
    loss, accuracy = figure.subplots(1, 2)
    _plot(loss, curves, [("train", "loss", "training"), ("eval", "loss", "evaluation")], "loss")
    _plot(accuracy, curves, [("train", "train_accuracy", "training"), ("eval", "accuracy", "evaluation")], "accuracy")
    if _spans_decades(loss):
        loss.set_yscale("log")
    if accuracy.lines:
        from matplotlib.ticker import PercentFormatter

        accuracy.yaxis.set_major_formatter(PercentFormatter(1.0))
    return _save(figure, path)


def _plot(axes: Any, curves: Curves, series: list[tuple[str, str, str]], name: str) -> None:
    """One panel: each (run, tag, label) of `series` that the run has, training as a line and evaluation
    as points joined by a line (it has few), or a note that there are none."""
    for run, tag, label in series:
        points = curves.get(run, {}).get(tag, [])
        if points:
            steps, values = zip(*points)
            style = {"marker": "o", "markersize": 4} if run == "eval" else {"linewidth": 1}
            axes.plot(steps, values, label=label, **style)
    axes.set_title(f"{name} by step")
    axes.set_xlabel("step")
    axes.grid(alpha=0.3)
    if axes.lines:
        axes.legend()
    else:
        axes.text(0.5, 0.5, f"no {name} summaries found", ha="center", va="center", transform=axes.transAxes)


def _spans_decades(axes: Any) -> bool:
    """Whether the panel's values are all positive and span more than a factor of 10, where a log scale
    shows the late, small improvements that a linear one flattens."""
    values = [value for line in axes.lines for value in line.get_ydata()]
    return bool(values) and min(values) > 0 and max(values) > 10 * min(values)


# --- the report and the entry point ------------------------------------------------------------


def write_report(
    job_dir: str,
    metrics: Mapping[str, Any],
    class_names: Sequence[str],
    figures: Mapping[str, str],
    lead: str = "",
    folder: str = "",
) -> str:
    """Writes report.md in `folder` (the job dir by default): the final step, accuracy and loss, image links to
    `figures` (name: path), and per class the precision, recall and support (from the confusion matrix); returns
    its path."""
    folder = folder or job_dir
    stop = early_stopping.read_stop(job_dir) if folder == job_dir else None
    lines = [
        f"# Report: {job_dir}" + ("" if folder == job_dir else ", its best export"),
        "",
        _summary(metrics, lead, "Final evaluation" if folder == job_dir else "The best export's evaluation"),
        *(["", f"Training {stop.describe()}."] if stop else []),
        *_figure_links(folder, figures),
        "",
        "## Per class",
        "",
        *_class_table(metrics, class_names),
        *_threshold_section(metrics, class_names),
    ]
    path = posixpath.join(folder, REPORT_FILE)
    with tf.io.gfile.GFile(path, "w") as file:
        file.write("\n".join(lines) + "\n")
    return path


BEST_POINTER = "This is the last evaluation's model, the latest export's."  # report.md's line on the best export's


def point_to_best(folder: str, said: str) -> None:
    """report.md in `folder` with its line on the best export's report (BEST_POINTER, then `said`) below the summary,
    or with none where `said` is empty; an earlier run's line replaced (GCS has no append: the file is written
    again)."""
    path = posixpath.join(folder, REPORT_FILE)
    if not tf.io.gfile.exists(path):
        return
    with tf.io.gfile.GFile(path) as file:
        lines = [line for line in file.read().split("\n") if not line.startswith(BEST_POINTER)]
    if said:
        lines[3:3] = [f"{BEST_POINTER} {said}", ""]
    with tf.io.gfile.GFile(path, "w") as file:
        file.write("\n".join(lines))


def _summary(metrics: Mapping[str, Any], lead: str = "", what: str = "Final evaluation") -> str:
    """The line with the final evaluation's step, the `lead` metric, accuracy (beside the majority class's alone:
    on imbalanced labels a constant model's accuracy looks good), log loss (the Estimator's `loss` where there is
    none: it averages each batch's mean) and example count."""
    loss = "log_loss" if "log_loss" in metrics else "loss"
    led = f"{lead} **{_number(metrics[lead])}**, " if lead in metrics and lead not in ("accuracy", loss) else ""
    baseline = majority_rate(metrics)
    alone = f" (the majority class alone: {_percent(baseline)})" if baseline is not None else ""
    line = (
        f"{what} at step {_integer(metrics.get('global_step'))}: {led}"
        f"accuracy **{_percent(metrics.get('accuracy'))}**{alone}, {loss.replace('_', ' ')} "
        f"**{_number(metrics.get(loss))}**"
    )
    if "confusion_matrix" in metrics:
        line += f", on {int(np.sum(metrics['confusion_matrix'])):,} examples"
    return line + "."


def _figure_links(job_dir: str, figures: Mapping[str, str]) -> list[str]:
    """Markdown image links to the figures, relative to the job dir where they are in it."""
    if not figures:
        return []
    lines = ["", "## Figures"]
    for name, path in figures.items():
        lines += ["", f"![{name}]({_relative(job_dir, path)})"]
    return lines


def _relative(job_dir: str, path: str) -> str:
    """`path` relative to the job dir when it is inside it (as the report is), else as given."""
    prefix = job_dir.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else path


def _class_table(metrics: Mapping[str, Any], class_names: Sequence[str]) -> list[str]:
    """A Markdown table: class name, precision, recall and support (its row of the confusion matrix)."""
    matrix = metrics.get("confusion_matrix")
    supports = confusion_counts(matrix, class_names).sum(axis=1).tolist() if matrix is not None else None
    lines = ["| class | precision | recall | support |", "| --- | ---: | ---: | ---: |"]
    for index, name in enumerate(class_names):
        precision = _percent(metrics.get(f"precision/class_{index}"))
        recall = _percent(metrics.get(f"recall/class_{index}"))
        support = _integer(supports[index] if supports else None)
        lines.append(f"| {_cell(name)} | {precision} | {recall} | {support} |")
    return lines


def at_thresholds(metrics: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
    """Binary labels: {"threshold", "precision", "recall", "f1", "false_positive_rate"} at each of the
    evaluation's thresholds (a row is positive above one); None for other labels."""
    if CURVE_COUNTS[0] not in metrics:
        return None
    tp, fp, tn, fn = (np.asarray(metrics[name], np.float64) for name in CURVE_COUNTS)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
        recall = np.where(tp + fn > 0, tp / (tp + fn), np.nan)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        false_positive_rate = np.where(fp + tn > 0, fp / (fp + tn), np.nan)
    thresholds = np.asarray(CURVE_THRESHOLDS)
    return {"threshold": thresholds, "precision": precision, "recall": recall, "f1": f1, "fpr": false_positive_rate}


def _threshold_section(metrics: Mapping[str, Any], class_names: Sequence[str]) -> list[str]:
    """Binary labels: the ROC and PR AUCs, and precision, recall and F1 at thresholds, with the F1-best one, of
    class 1 (preprocessing's --positive-class), named."""
    table = at_thresholds(metrics)
    if table is None:
        return []
    best = int(np.nanargmax(table["f1"]))
    shown = sorted({*(int(round(t * 100)) for t in TABLE_THRESHOLDS), best})
    lines = [
        "",
        f"## Thresholds (the positive class: {class_names[1]})",
        "",
        f"ROC AUC **{_number(metrics.get('auc'))}**, "
        f"precision-recall AUC **{_number(metrics.get('auc_precision_recall'))}**. "
        f"The F1-best threshold is **{table['threshold'][best]:.2f}** (F1 {table['f1'][best]:.3f}); "
        "a row is predicted positive when its probability of that class (`probabilities[1]` in qt-predict's and a "
        "server's output, whose `class_ids` split at 0.5) is above the threshold.",
        "",
        "| threshold | precision | recall | F1 | false positive rate |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for i in shown:
        mark = " (F1-best)" if i == best else ""
        values = [_percent(_finite(table[key][i])) for key in ("precision", "recall")]
        values += [_number(_finite(table["f1"][i])), _percent(_finite(table["fpr"][i]))]
        lines.append(f"| {table['threshold'][i]:.2f}{mark} | " + " | ".join(values) + " |")
    return lines


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def curves_of_thresholds_png(metrics: Mapping[str, Any], path: str) -> str:
    """The ROC curve and the precision-recall curve, side by side."""
    table = at_thresholds(metrics)
    figure = _figure(10, 4.5)
    roc, pr = figure.subplots(1, 2)
    roc.plot(np.append(table["fpr"], 0.0), np.append(table["recall"], 0.0), marker=".")
    roc.plot([0, 1], [0, 1], linestyle="--", color="grey")
    roc.set(
        xlabel="false positive rate",
        ylabel="true positive rate (recall)",
        title=f"ROC, AUC {_number(metrics.get('auc'))}",
    )
    pr.plot(table["recall"], table["precision"], marker=".")
    pr.set(
        xlabel="recall",
        ylabel="precision",
        title=f"precision-recall, AUC {_number(metrics.get('auc_precision_recall'))}",
    )
    for axes in (roc, pr):
        axes.set_xlim(0, 1)
        axes.set_ylim(0, 1.02)
        axes.grid(alpha=0.3)
    return _save(figure, path)


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


def _integer(value: int | None) -> str:
    return "–" if value is None else f"{int(value):,}"


def write_figures(
    job_dir: str, metrics: Mapping[str, Any], class_names: Sequence[str], lead: str = "", folder: str = ""
) -> dict[str, str]:
    """The one call at the end of a run: confusion_matrix.png and training_curves.png in the job dir (with
    matplotlib), then report.md linking them, its summary led by the `lead` metric (--best-metric's). Returns
    {"confusion matrix": path, "training curves": path, "report": path}, with only the report's path without
    matplotlib. With another `folder` (the best export's evaluation), all but the job's training curves there."""
    folder = folder or job_dir
    tf.io.gfile.makedirs(folder)
    figures: dict[str, str] = {}
    if has_matplotlib():
        figures = draw_figures(job_dir, metrics, class_names, folder)
    else:
        log.info(SKIPPED)
    return {**figures, "report": write_report(job_dir, metrics, class_names, figures, lead, folder)}


def draw_figures(
    job_dir: str, metrics: Mapping[str, Any], class_names: Sequence[str], folder: str = ""
) -> dict[str, str]:
    """The PNGs in `folder` (the job dir by default; the training curves only there, the confusion matrix only
    when the metrics have one); {name: path}."""
    folder = folder or job_dir
    figures = {}
    if "confusion_matrix" in metrics:
        path = posixpath.join(folder, CONFUSION_FILE)
        figures["confusion matrix"] = confusion_matrix_png(metrics["confusion_matrix"], class_names, path)
    else:
        log.warning("no confusion_matrix in the evaluation metrics: no %s", CONFUSION_FILE)
    if folder == job_dir:
        figures["training curves"] = training_curves_png(read_curves(job_dir), posixpath.join(job_dir, CURVES_FILE))
    if at_thresholds(metrics) is not None:
        path = posixpath.join(folder, CURVES_OF_THRESHOLDS_FILE)
        figures["ROC and precision-recall curves"] = curves_of_thresholds_png(metrics, path)
    return figures
