import json

import pytest

from dataformat.errors import UserError
from trainer import config as config_module
from trainer.config import Config, check_values, from_sources


def test_defaults_are_the_documented_ones():
    config = Config()
    assert (config.batch_size, config.learning_rate) == (128, None)  # None: the network's own (trainer.model)


def test_yaml_overrides_defaults_and_flags_override_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("batch-size: 64\nlearning_rate: 0.01\nhidden_units: [32, 16]\n")
    config = from_sources(str(path), {"learning_rate": "0.5", "conv_filters": "8,8"})
    assert config.batch_size == 64
    assert config.learning_rate == 0.5
    assert config.hidden_units == (32, 16)
    assert config.conv_filters == (8, 8)


def test_yaml_numbers_and_switch_words_are_the_flags_values_of_settings_that_take_auto(tmp_path):
    """`num_towers: 1` was "1 is not a valid str", and the documented `average_weights: on`, which YAML reads
    as true, "True is not a valid str"."""
    path = tmp_path / "c.yaml"
    path.write_text("num_towers: 1\nsteps_per_run: 4\naverage_weights: on\nstage_on_device: no\n")
    config = from_sources(str(path), {})
    assert (config.num_towers, config.steps_per_run, config.average_weights, config.stage_on_device) == (
        "1", "4", "on", "off",
    )  # fmt: skip


def test_an_empty_flag_means_no_layers():
    """`--conv-filters '' --hidden-units ''` is softmax regression on the pixels."""
    config = from_sources(None, {"conv_filters": "", "hidden_units": ""})
    assert (config.conv_filters, config.hidden_units) == ((), ())


@pytest.mark.parametrize(
    "text, message",
    [
        ("batch_sise: 3\n", "unknown setting 'batch_sise'"),
        ("batch_size: many\n", "batch_size: 'many' is not a valid int"),
        ("batch_size: 2.5\n", "batch_size: 2.5 is not a valid int"),
        ("hidden_units: [a]\n", "not a valid list of integers"),
        ("- 1\n", "expected a mapping"),
        ("a: [\n", "not valid YAML: line 2, column 1: expected the node content"),
        ("batch_size: [1, 2\nlr: 3\n", r"not valid YAML: line 2, column 3: expected ',' or ']'.*flow sequence"),
        ("batch_size: 32\n".encode("utf-16"), "not UTF-8 text; save it as UTF-8"),  # Notepad's Unicode
        ("batch_size: 3\nseed: 1\nbatch_size: 5\n", "line 3, column 1: 'batch_size' is given twice"),  # 5 won
        ("1: a\ntrue: b\n", "line 2, column 1: True is given twice"),  # one key of the dict PyYAML makes
    ],
)
def test_bad_yaml_names_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(UserError, match=message) as error:
        from_sources(str(path), {})
    assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"batch_size": "0"}, "--batch-size 0: must be at least 1"),
        ({"train_steps": "-5"}, "--train-steps -5: must be at least 1"),
        ({"learning_rate": "0"}, "--learning-rate 0.0: must be positive"),
        ({"dropout": "1"}, "--dropout 1.0"),
        ({"data_format": "nchw"}, "--data-format nchw"),
        ({"stage_on_device": "yes"}, "--stage-on-device yes: must be auto, on or off"),
        ({"intra_op_threads": "-1"}, "--intra-op-threads -1: must not be negative"),
        ({"batch_size": "x"}, "--batch-size: 'x' is not a valid int"),
        ({"data_dir": "a", "train_files": "b", "eval_files": "c"}, "either --data-dir or --train-files"),
        ({"train_files": "b"}, "^--train-files needs --eval-files too: the two go together$"),
        # inf and nan passed the checks: a traceback from TensorFlow, or a model of NaN weights exported
        ({"learning_rate": "inf"}, "--learning-rate inf: must be a finite number"),
        ({"embedding_l2": "nan"}, "--embedding-l2 nan: must be a finite number"),
        ({"class_weights": "1,inf"}, "--class-weights 1,inf: must be none, balanced, or one non-negative weight"),
        ({"class_weights": "0,0"}, "--class-weights 0,0: must weigh some class above 0"),
        ({"seed": "-1"}, r"--seed -1: must be in 0 to 2\*\*32 - 1"),
        ({"seed": "4294967296"}, "--seed 4294967296: must be in"),
        # An OverflowError's traceback once training started; minutes of building 2**31 readers' ops, silently.
        ({"steps_per_run": "99999999999999999999"}, "--steps-per-run 99999999999999999999: must be auto or a whole"),
        ({"reader_threads": "2147483647"}, "--reader-threads 2147483647: must be at most 1024"),
        ({"best_metric": "recall/class_01"}, "--best-metric recall/class_01: must be auto, accuracy"),  # a KeyError
    ],
)
def test_nonsense_flags_name_the_flag(flags, message):
    with pytest.raises(UserError, match=message):
        from_sources(None, flags)


@pytest.mark.parametrize(
    "name, value, expected",
    [("batch_size", "128.0", 128), ("batch_size", "128", 128), ("seed", "3.00", 3), ("batch_size", 64.0, 64)],
)
def test_integral_floats_are_integers_as_tuning_sends_them(name, value, expected):
    assert getattr(from_sources(None, {name: value}), name) == expected


@pytest.mark.parametrize("value", ["128.5", "1e3", "12a", 64.5])
def test_a_fraction_is_still_not_an_integer(value):
    with pytest.raises(UserError, match=f"--batch-size: {value!r} is not a valid int"):
        from_sources(None, {"batch_size": value})


def test_a_diverged_run_says_so_in_one_line(vectors_dir, tmp_path, caplog):
    """A loss of NaN ended in TensorFlow's NanLossDuringTrainingError traceback."""
    from trainer.dataset import read_metadata
    from trainer.task import main

    argv = ["--data-dir", vectors_dir, "--job-dir", str(tmp_path / "job"), "--train-steps", "50"]
    assert main([*argv, "--learning-rate", "1e30"]) == 2
    said = "the training loss became NaN (the model diverged); rerun with a lower --learning-rate (it was 1e+30), in"
    assert said in caplog.text
    caplog.clear()  # class weights past float32 were blamed on the learning rate alone
    classes = len(read_metadata(vectors_dir + "/metadata.json").class_names)
    weights = ",".join(["1e38"] * classes)
    assert main([*argv[:3], str(tmp_path / "job2"), *argv[4:], "--class-weights", weights]) == 2
    assert f"(it was its default), or check --class-weights {weights}, in a new --job-dir" in caplog.text
    assert "Traceback" not in caplog.text
    names = read_metadata(vectors_dir + "/metadata.json").class_names  # which class took which weight, said
    assert f"Class weights (--class-weights {weights}): {names[0]} 1e+38, {names[1]} 1e+38" in caplog.text


def test_running_out_of_memory_names_the_batch_sizes_in_one_line(vectors_dir, tmp_path, caplog, monkeypatch):
    """A GPU's memory, filled by a batch's activations, ended in TensorFlow's ResourceExhaustedError and its trace
    of allocations. No GPU here: the run meets a real allocation too large for any machine."""
    import tensorflow as tf

    from trainer import experiment
    from trainer.task import main

    monkeypatch.setattr(experiment, "run", lambda config: tf.zeros([2**60]))  # 4 EiB: past any address space
    assert main(["--data-dir", vectors_dir, "--job-dir", str(tmp_path / "job"), "--batch-size", "64"]) == 2
    said = "out of memory: OOM when allocating tensor with shape[1152921504606846976] and type float on "
    assert said in caplog.text and "lower --batch-size (it was 64) or --eval-batch-size (256) to" in caplog.text
    assert "Traceback" not in caplog.text


def test_a_batch_above_the_training_examples_is_refused_before_any_step(vectors_dir, tmp_path, caplog):
    """--batch-size 100000000 failed after 35 s of allocating, in TensorFlow's words; the default batch on a smaller
    dataset trains as before."""
    from trainer.dataset import read_metadata
    from trainer.task import main

    examples = read_metadata(vectors_dir + "/metadata.json").splits["train"].examples
    argv = ["--data-dir", vectors_dir, "--job-dir", str(tmp_path / "job"), "--train-steps", "1"]
    assert main([*argv, "--batch-size", str(examples + 1)]) == 2
    expected = f"--batch-size {examples + 1}: 1 tower(s) x {examples + 1} is more than the {examples:,} training "
    assert f"{expected}examples; use at most {examples:,}" in caplog.text
    # A shuffle buffer of copies starved the input for minutes, blaming the storage; a queue past int32 failed in
    # TensorFlow's words, naming no flag.
    assert main([*argv, "--shuffle-buffer", "100000000"]) == 2
    assert f"--shuffle-buffer 100000000: more than the {examples:,} training examples" in caplog.text
    assert main([*argv, "--eval-batch-size", "2147483647"]) == 2
    assert "--eval-batch-size and --read-batch-size: they make a queue of 4,294,967,550 examples" in caplog.text
    assert not (tmp_path / "job" / "config.yaml").exists()


def test_a_model_larger_than_the_machines_memory_is_refused_before_its_session(vectors_dir, tmp_path, caplog):
    """--hidden-units 1000000000 was killed by the system as the session made its variables: no line, exit 137."""
    from trainer.devices import memory_bytes
    from trainer.task import main

    argv = ["--data-dir", vectors_dir, "--job-dir", str(tmp_path / "job"), "--train-steps", "1"]
    assert main([*argv, "--hidden-units", "2147483647"]) == 2  # 16 inputs: 550 GB, more than any CI machine
    line = caplog.records[-1].getMessage()
    assert line.startswith("the model's variables need ") and "more than this machine's" in line
    assert f"{memory_bytes() / 1e9:,.1f} GB of memory (the largest, classifier/dense/kernel, " in line
    assert line.endswith("; lower --hidden-units, or the network's other sizes") and "Traceback" not in caplog.text


def test_an_empty_job_dir_is_refused_in_one_line(vectors_dir, caplog):
    """--job-dir "" ended in a TypeError's traceback, logging the cloud's folders."""
    from trainer.task import main

    assert main(["--data-dir", vectors_dir, "--job-dir", "", "--train-steps", "1"]) == 2
    assert "--job-dir is required" in caplog.text and "Traceback" not in caplog.text


def test_a_job_dir_that_is_its_own_export_dir_keeps_its_best_export(vectors_dir, tmp_path):
    """The best export's report once went to JOB_DIR/best/, and removed it there: where --export-dir is the job dir
    (as Vertex AI's AIP_MODEL_DIR alone sets both), the best exports themselves."""
    from trainer.config import newest_export
    from trainer.task import main

    job = str(tmp_path / "job")
    assert main(["--data-dir", vectors_dir, "--job-dir", job, "--export-dir", job, "--train-steps", "20"]) == 0
    assert newest_export(f"{job}/best") and newest_export(f"{job}/latest")


def test_a_value_given_to_a_switch_is_refused_not_ignored():
    """`--xla false` turned XLA on: the switch takes no value, and `false` was ignored as an unknown argument."""
    from trainer.config import check_no_switch_values

    with pytest.raises(UserError, match=r"--xla takes no value \(false\): --xla turns it on, --no-xla off"):
        check_no_switch_values(["--data-dir", "d", "--xla", "false"], ["false"])
    check_no_switch_values(["--xla", "--some-cloud-flag", "x"], ["--some-cloud-flag", "x"])  # a cloud's own flags


@pytest.mark.parametrize(
    "module", ["preprocessing", "trainer.task", "trainer.predict", "trainer.vertex.submit", "trainer.vertex.deploy"]
)
def test_every_command_says_its_version(module):
    """`qt-preprocess --version` asked for --output, and qt-train ignored it and asked for --data-dir."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("qt-") and len(done.stdout.splitlines()) == 1
    assert done.stdout.split()[-1][0].isdigit() or "(not installed)" in done.stdout


def test_a_resume_with_another_setting_names_a_default_as_default(tmp_path, caplog):
    """A resume with --learning-rate 1e-4 where the run before took the data's default said "(was None)"."""
    from trainer import experiment

    config_module.save(Config(job_dir=str(tmp_path)), str(tmp_path))
    before = experiment._settings_before(str(tmp_path))
    resume = Config(job_dir=str(tmp_path), learning_rate=1e-4, warm_start_from=str(tmp_path / "older"))
    experiment._warn_of_changed_settings(resume, before, trained=100, finished=False)
    assert "Resuming at step 100 with other settings than its run before: --learning-rate 0.0001 (was default);" in (
        caplog.text
    )  # and not --warm-start-from, which a resume leaves out, in a line of its own
    # config.yaml keeps where the job's weights started: a rerun with it warm-started from another job's.
    assert experiment._as_saved(resume, None, before, trained=100).warm_start_from is None
    assert experiment._as_saved(resume, None, None, trained=0).warm_start_from == str(tmp_path / "older")
    # A rerun of a finished run trains nothing: they were dropped without a word.
    rerun = Config(job_dir=str(tmp_path), learning_rate=0.01, export_dir=str(tmp_path / "other"))
    experiment._warn_of_changed_settings(rerun, before, trained=700, finished=True)
    said = "Other training settings than its run's, --learning-rate 0.01 (was default), change nothing: training"
    assert said in caplog.text and "--export-dir" not in caplog.text.split(said)[1]  # it exports there


def test_a_finished_job_dir_without_its_config_yaml_reruns_and_exports(vectors_dir, tmp_path):
    """Checkpoints without their config.yaml (copied, or of an older trainer) evaluated, then failed to export:
    "TensorFlow stopped: .../config.yaml; No such file or directory", exit 1."""
    from trainer.export import latest_export
    from trainer.task import main

    job_dir = tmp_path / "job"
    argv = ["--data-dir", vectors_dir, "--job-dir", str(job_dir), "--train-steps", "20"]
    assert main(argv) == 0
    (job_dir / "config.yaml").unlink()
    assert main(argv) == 0
    assert (job_dir / "config.yaml").exists()
    export = latest_export(Config(job_dir=str(job_dir)), "best")
    assert (tmp_path / export / "assets.extra" / "config.yaml").exists()


def test_an_integer_beyond_int32_is_refused_naming_the_flag():
    """--train-steps 99999999999999999999 ended in OverflowError, --batch-size in ValueError, with tracebacks."""
    from trainer.config import check_values

    for flags in ({"train_steps": "99999999999999999999"}, {"hidden_units": "64,3000000000"}):
        with pytest.raises(UserError, match=r"--(train-steps|hidden-units) .*: must be at most 2,147,483,647"):
            check_values(from_sources(None, flags))
    check_values(from_sources(None, {"train_steps": "2147483647", "seed": "4000000000"}))  # a seed may be larger


def test_a_tilde_in_a_path_setting_is_the_home_folder_as_the_shell_expands_it(tmp_path, monkeypatch):
    """No shell sees ~ in a YAML file or after --job-dir=: taken as is, it made a folder named ~ in the current one."""
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "settings.yaml"
    path.write_text("job_dir: ~/runs/a\nexport_dir: gs://bucket/~exports\n")
    config = from_sources(str(path), {"train_files": "~/d/train-*,/abs/t-*", "eval_files": "e-*"})
    assert config.job_dir == f"{tmp_path}/runs/a" and config.export_dir == "gs://bucket/~exports"
    assert config.train_files == f"{tmp_path}/d/train-*,/abs/t-*" and config.eval_files == "e-*"
    assert from_sources(None, {"job_dir": "runs/a,~root"}).job_dir == "runs/a,~root"  # one folder: its , splits none


def test_config_yaml_keeps_steps_the_data_decides_as_null(vectors_dir, tmp_path):
    """The steps that --num-epochs (or a table's default) resolved to were saved as --train-steps, which then
    overrode --num-epochs in a run repeated from the file: a quarter of the pass it asked for at another batch size."""
    import yaml

    from trainer.task import main

    job_dir = tmp_path / "job"
    assert main(["--data-dir", vectors_dir, "--job-dir", str(job_dir), "--num-epochs", "1", "--batch-size", "64"]) == 0
    saved = yaml.safe_load((job_dir / "config.yaml").read_text())
    assert saved["train_steps"] is None and saved["num_epochs"] == 1
    assert main(["--data-dir", vectors_dir, "--job-dir", str(job_dir), "--train-steps", "30"]) == 0
    assert yaml.safe_load((job_dir / "config.yaml").read_text())["train_steps"] == 30  # as given


def test_num_epochs_with_more_train_steps_ends_at_the_pass_and_reports_it(vectors_dir, tmp_path):
    """--num-epochs 1 --train-steps 1000 said 'Training: 1000 steps', ended at the pass with no report.md (its
    last evaluation was not known as the last), and each rerun trained one pass more."""
    from trainer.task import main

    job_dir = tmp_path / "job"
    argv = ["--data-dir", vectors_dir, "--job-dir", str(job_dir), "--num-epochs", "1", "--train-steps", "1000"]
    assert main(argv) == 0
    step = json.loads((job_dir / "eval_metrics.json").read_text())["global_step"]
    assert step < 1000 and (job_dir / "report.md").exists()
    assert main(argv) == 0
    assert json.loads((job_dir / "eval_metrics.json").read_text())["global_step"] == step


def test_a_flag_unsets_what_the_config_file_set_and_yaml_takes_a_flags_forms(tmp_path):
    """num_epochs: 3 in a --config file (a run's config.yaml, reused) could not be turned off: --num-epochs none, null
    and 0 were each refused; hidden_units: 64 was 'not a valid list of integers', though --hidden-units 64 is one."""
    path = tmp_path / "c.yaml"
    path.write_text("num_epochs: 3\nearly_stopping_evals: 2\nlearning_rate: 0.01\nhidden_units: 64\n")
    flags = {"num_epochs": "none", "early_stopping_evals": "null", "learning_rate": "auto"}
    config = from_sources(str(path), flags)
    assert (config.num_epochs, config.early_stopping_evals, config.learning_rate) == (None, None, None)
    assert config.hidden_units == (64,)
    assert from_sources(str(path), {}).num_epochs == 3
    with pytest.raises(UserError, match=r"--num-epochs: 'never' is not a valid int"):
        from_sources(None, {"num_epochs": "never"})
    with pytest.raises(UserError, match=r"--data-dir"):  # a path named none stays a path
        check_values(from_sources(None, {"data_dir": "none[1]"}))


def test_metadata_goes_with_train_files_not_with_a_data_dir():
    """--data-dir d --metadata other/metadata.json trained on d's own metadata.json, the flag ignored silently."""
    with pytest.raises(UserError, match=r"--metadata m.json: goes with --train-files; --data-dir reads the metadata"):
        Config(data_dir="d", metadata="m.json")
    assert Config(train_files="t*", eval_files="e*", metadata="m.json").metadata == "m.json"
