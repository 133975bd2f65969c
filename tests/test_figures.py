"""The figures and report at the end of a run (trainer/figures.py), from real event files."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from trainer import figures
from trainer import metrics as metric_names

CLASSES = ("cat", "dog", "bird | other")
MATRIX = [[50, 3, 2], [4, 40, 1], [0, 2, 18]]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

TRAIN = {"loss": [(1, 2.3), (100, 0.9), (200, 0.4)], "train_accuracy": [(1, 0.1), (100, 0.7), (200, 0.9)]}
EVAL = {"loss": [(100, 1.0), (200, 0.5)], "accuracy": [(100, 0.65), (200, 0.84)]}


def write_summaries(folder: str, scalars: dict[str, list[tuple[int, float]]]) -> None:
    """Scalars as a TF2 summary writer writes them (in tensors), with a text summary that is no scalar."""
    writer = tf.summary.create_file_writer(folder)
    with writer.as_default():
        for tag, points in scalars.items():
            for step, value in points:
                tf.summary.scalar(tag, value, step=step)
        tf.summary.text("notes", "not a number", step=1)
    writer.close()


def write_simple_values(path: str, events: list[tuple[int, str, float]]) -> None:
    """(step, tag, value) events as the Estimator's TF1 summaries write them (in simple_value)."""
    with tf.io.TFRecordWriter(path) as writer:
        for step, tag, value in events:
            summary = tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=value)])
            writer.write(tf.compat.v1.Event(step=step, wall_time=0, summary=summary).SerializeToString())


@pytest.fixture
def job_dir(tmp_path) -> str:
    """A job dir with training summaries in it and evaluation summaries in eval/."""
    job = tmp_path / "job"
    write_summaries(str(job), TRAIN)
    write_summaries(str(job / "eval"), EVAL)
    return str(job)


def metrics() -> dict:
    """eval_metrics.json as the trainer writes it, with the confusion matrix."""
    counts = np.array(MATRIX)
    result = {"accuracy": np.trace(counts) / counts.sum(), "loss": 0.5, "global_step": 200, "confusion_matrix": MATRIX}
    for index in range(len(CLASSES)):
        result[f"precision/class_{index}"] = counts[index, index] / counts[:, index].sum()
        result[f"recall/class_{index}"] = counts[index, index] / counts[index].sum()
    return result


def rounded(points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Points with their values rounded, to compare float32 summaries with the float64 written."""
    return [(step, round(value, 5)) for step, value in points]


def test_read_curves_gives_each_tag_by_step(job_dir):
    curves = figures.read_curves(job_dir)

    assert set(curves["train"]) == {"loss", "train_accuracy"}  # the text summary is left out
    assert set(curves["eval"]) == {"loss", "accuracy"}
    assert {tag: rounded(points) for tag, points in curves["train"].items()} == TRAIN
    assert {tag: rounded(points) for tag, points in curves["eval"].items()} == EVAL


def test_read_curves_reads_simple_values_and_keeps_the_last_value_of_a_step(tmp_path):
    write_simple_values(str(tmp_path / "events.out.tfevents.1700000000.host"), [(200, "loss", 0.4), (100, "loss", 0.9)])
    # A resumed run writes a newer file that repeats step 200.
    write_simple_values(str(tmp_path / "events.out.tfevents.1700000100.host"), [(200, "loss", 0.3), (300, "loss", 0.2)])

    curves = figures.read_curves(str(tmp_path))

    assert curves["eval"] == {} and list(curves["train"]) == ["loss"]
    assert rounded(curves["train"]["loss"]) == [(100, 0.9), (200, 0.3), (300, 0.2)]


def test_write_figures_writes_both_pngs_and_the_report(job_dir):
    pytest.importorskip("matplotlib")

    written = figures.write_figures(job_dir, metrics(), CLASSES)

    assert set(written) == {"confusion matrix", "training curves", "report"}
    for name in ("confusion matrix", "training curves"):
        with open(written[name], "rb") as file:
            assert file.read(8) == PNG_SIGNATURE
        with Image.open(written[name]) as image:
            width, height = image.size
        assert 400 <= width <= 2000 and 300 <= height <= 2000, (name, image.size)
    report = Path(written["report"]).read_text()
    assert "step 200" in report and "accuracy **90.0%**" in report and "on 120 examples" in report
    assert "![confusion matrix](confusion_matrix.png)" in report
    assert "![training curves](training_curves.png)" in report
    rows = {cells[0]: cells[1:] for cells in table_rows(report)}
    assert list(rows) == ["cat", "dog", "bird \\| other"]  # a | in a class name does not split its row
    assert rows["cat"] == ["92.6%", "90.9%", "55"]  # precision 50/54, recall 50/55, support 55
    assert sum(int(cells[2]) for cells in rows.values()) == np.sum(MATRIX)


def table_rows(report: str) -> list[list[str]]:
    """The cells of the per-class table's rows (after its header and separator)."""
    lines = [line for line in report.splitlines() if line.startswith("| ")][1:]
    cells = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]
    return [row for row in cells if not row[0].startswith("---")]


def test_without_matplotlib_only_the_report_is_written(job_dir, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    caplog.set_level(logging.INFO, logger=figures.log.name)

    written = figures.write_figures(job_dir, metrics(), CLASSES)

    assert written == {"report": f"{job_dir}/report.md"}
    assert not tf.io.gfile.glob(f"{job_dir}/*.png")
    report = Path(written["report"]).read_text()
    assert "![" not in report and len(table_rows(report)) == len(CLASSES)
    hints = [record for record in caplog.records if record.name == figures.log.name]
    assert [(record.levelno, record.getMessage()) for record in hints] == [
        (logging.INFO, "figures skipped: pip install 'queue-trainer[plots]' to get them")
    ]


def test_without_a_confusion_matrix_the_report_has_no_supports(job_dir):
    pytest.importorskip("matplotlib")
    partial = {key: value for key, value in metrics().items() if key != "confusion_matrix"}

    written = figures.write_figures(job_dir, partial, CLASSES)

    assert set(written) == {"training curves", "report"}
    assert [row[3] for row in table_rows(Path(written["report"]).read_text())] == ["–"] * len(CLASSES)


def test_a_matrix_that_does_not_fit_the_class_names_is_refused(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        figures.confusion_matrix_png([[1, 2], [3, 4]], CLASSES, str(tmp_path / "matrix.png"))


@pytest.mark.parametrize("classes", [10, 30])
def test_cells_hold_their_counts_up_to_20_classes(tmp_path, monkeypatch, classes):
    pytest.importorskip("matplotlib")
    drawn = []
    monkeypatch.setattr(figures, "_save", lambda figure, path: drawn.append(figure) or path)
    names = tuple(f"class {index}" for index in range(classes))
    counts = np.diag(np.full(classes, 5)) + 1

    figures.confusion_matrix_png(counts, names, str(tmp_path / "matrix.png"))

    cells = [text.get_text() for text in drawn[0].axes[0].texts]
    assert cells == ([] if classes > 20 else [str(count) for count in counts.flat])


def binary_metrics(scores_of_positives, scores_of_negatives) -> dict:
    """A binary evaluation's metrics as the head reports them, from each row's probability of class 1."""
    thresholds = np.asarray(metric_names.CURVE_THRESHOLDS)
    positives = np.asarray(scores_of_positives)[:, None] > thresholds
    negatives = np.asarray(scores_of_negatives)[:, None] > thresholds
    counts = [positives.sum(0), negatives.sum(0), (~negatives).sum(0), (~positives).sum(0)]
    found = {name: count.tolist() for name, count in zip(metric_names.CURVE_COUNTS, counts)}
    return {**found, "auc": 0.9, "auc_precision_recall": 0.8, "accuracy": 0.85, "loss": 0.3, "global_step": 10}


def test_binary_labels_get_roc_and_precision_recall_curves_and_a_threshold_table(tmp_path):
    rng = np.random.default_rng(0)
    scores = binary_metrics(rng.beta(5, 2, 300), rng.beta(2, 5, 700))  # positives score higher
    table = figures.at_thresholds(scores)
    best = int(np.nanargmax(table["f1"]))
    assert 0.3 < table["threshold"][best] < 0.7
    assert table["recall"][0] == 1.0 and table["fpr"][0] == 1.0  # above 0: every row is positive
    assert np.all(np.diff(table["recall"]) <= 0)  # recall falls as the threshold rises
    written = figures.write_figures(
        str(tmp_path), {**scores, "confusion_matrix": [[60, 10], [5, 25]]}, ("no", "yes"), "auc"
    )
    assert Image.open(written["ROC and precision-recall curves"]).size[0] > 500
    report = (tmp_path / "report.md").read_text()
    assert "## Thresholds (the positive class: yes)" in report
    # The summary leads with --best-metric's, and sets accuracy beside the majority class's alone.
    assert "auc **0.9**, accuracy **85.0%** (the majority class alone: 70.0%)" in report
    assert f"The F1-best threshold is **{table['threshold'][best]:.2f}**" in report
    assert f"| {table['threshold'][best]:.2f} (F1-best) | " in report and "| 0.90 | " in report
    (tmp_path / "multi").mkdir()
    confusion = [[5, 1, 0], [2, 3, 1], [0, 0, 8]]  # the third class is 8 of 20 rows
    multi = figures.write_figures(
        str(tmp_path / "multi"), {"accuracy": 0.8, "confusion_matrix": confusion}, tuple("abc")
    )
    assert "ROC and precision-recall curves" not in multi
    assert "accuracy **80.0%** (the majority class alone: 40.0%)" in (tmp_path / "multi" / "report.md").read_text()


def test_a_best_export_of_an_earlier_evaluation_gets_its_own_report(tmp_path):
    """report.md and its threshold are the last evaluation's; the best export, the model to deploy, was of another
    step, and nothing said so."""
    import json

    from trainer import export

    rng = np.random.default_rng(0)
    job = str(tmp_path)
    last = {**binary_metrics(rng.beta(3, 2, 300), rng.beta(2, 3, 700)), "global_step": 700}
    better = {**binary_metrics(rng.beta(5, 2, 300), rng.beta(2, 5, 700)), "global_step": 300}
    best = tmp_path / "export" / "best" / "1"
    (best / "assets.extra").mkdir(parents=True)
    (best / "assets.extra" / export.METRICS_FILE).write_text(json.dumps(export.json_numbers(better)))
    figures.write_figures(job, last, ("no", "yes"), "auc")
    for _ in range(2):  # a rerun with nothing to train writes it again
        written = export.write_best_report(job, str(best), last, ("no", "yes"), "auc")
    assert written == str(tmp_path / "best_report" / "report.md")
    threshold = figures.at_thresholds(better)["threshold"][int(np.nanargmax(figures.at_thresholds(better)["f1"]))]
    text = (tmp_path / "best_report" / "report.md").read_text()
    assert "The best export's evaluation at step 300: auc" in text and f"threshold is **{threshold:.2f}**" in text
    pointer = "The best export, by auc, is of step 300: see [its report](best_report/report.md)."
    assert (tmp_path / "report.md").read_text().count(pointer) == 1
    # A rerun whose best is the last evaluation's (another --best-metric): report.md is its report, and says so.
    assert export.write_best_report(job, str(best), {**last, "global_step": 300}, ("no", "yes"), "auc") == ""
    assert not list((tmp_path / "best_report").iterdir()) and pointer not in (tmp_path / "report.md").read_text()
    assert (best / "assets.extra" / export.METRICS_FILE).exists()  # the best export itself untouched


def test_the_last_words_add_the_best_exports_figures(tmp_path, capsys, caplog):
    """A model that overfit (a date's values memorized) printed its last evaluation's worse figures beside the
    best export's path."""
    from trainer.task import _report_best

    eval_dir = str(tmp_path / figures.EVAL_DIR)
    write_summaries(
        eval_dir,
        {
            "log_loss": [(500, 1.007), (1000, 1.05), (2000, 1.098)],
            "accuracy": [(500, 0.5162), (1000, 0.50), (2000, 0.487)],
        },
    )
    last = {"log_loss": 1.098, "accuracy": 0.487, metric_names.CONFUSION: [[40, 30, 30], [20, 9, 1], [5, 5, 10]]}
    best_export = export_of_step(tmp_path / "export" / "best" / "1", 500)
    with caplog.at_level(logging.WARNING):
        _report_best(str(tmp_path), best_export, last, "log_loss")
    best = "log_loss 1.0070, accuracy 0.5162, of the evaluation at step 500"
    assert capsys.readouterr().out == f"best export's:  {best}\n"
    caplog.clear()
    _report_best(str(tmp_path), best_export, {**last, "log_loss": 1.0, "accuracy": 0.7}, "log_loss")  # the last's best
    assert capsys.readouterr().out == "" and not caplog.text


def test_a_model_that_learned_little_is_warned_of_by_auc_for_two_classes_else_by_the_majority(caplog):
    """On rare positives a good model's accuracy may lie below the majority's (Caravan: AUC 0.72, as logistic
    regression's, and accuracy 0.938 against 0.940), and --class-weights lowers accuracy on purpose: neither learned
    little, and both were told so."""
    from trainer.task import _warn_if_learned_little

    three = {"accuracy": 0.487, metric_names.CONFUSION: [[40, 30, 30], [20, 9, 1], [5, 5, 10]]}
    with caplog.at_level(logging.WARNING):
        _warn_if_learned_little(three, "log_loss", class_weights=False)
    assert "accuracy, 0.4870, is no better than always answering the majority class, 0.6667" in caplog.text
    caplog.clear()
    _warn_if_learned_little({**three, "accuracy": 0.6666667}, "log_loss", class_weights=False)  # a constant model's
    assert "accuracy, 0.6667, is no better than always answering the majority class, 0.6667" in caplog.text
    caplog.clear()
    _warn_if_learned_little(three, "log_loss", class_weights=True)  # --class-weights balanced
    two = {"accuracy": 0.938, "auc": 0.72, metric_names.CONFUSION: [[940, 0], [62, 0]]}
    _warn_if_learned_little(two, "auc", class_weights=False)
    assert not caplog.text
    _warn_if_learned_little({**two, "auc": 0.51}, "auc", class_weights=False)  # a constant model's 0.5, nearly
    assert "The last evaluation's AUC, 0.5100, is near chance's 0.5: the model learned little" in caplog.text


def export_of_step(folder, step: int) -> str:
    """What the last words read of an export: the global step its variables hold."""
    (folder / "variables").mkdir(parents=True)
    with tf.Graph().as_default():
        global_step = tf.compat.v1.Variable(step, name="global_step", dtype=tf.int64)
        with tf.compat.v1.Session() as session:
            session.run(global_step.initializer)
            tf.compat.v1.train.Saver([global_step]).save(session, str(folder / "variables" / "variables"))
    return str(folder)
