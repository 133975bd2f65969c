"""Following a Vertex AI job to its end, as the SDK's `CustomJob.run(sync=True)` does: its state
changes, its log lines, a tuning job's trials and best trial so far, what it left at the end, and
an exit code that says how it ended. Ctrl-C asks whether to cancel the job (or cancels it, or
leaves it running), so that stopping to watch never silently stops or keeps a paid job."""

from __future__ import annotations

import argparse
import datetime
import logging
import re
import sys
import time
from dataclasses import dataclass, field

from dataformat import commandline
from dataformat.errors import UserError
from trainer.vertex import client

log = logging.getLogger("trainer.vertex.follow")

# JobState values after which nothing changes, and the exit code each gives.
FINAL = {
    "JOB_STATE_SUCCEEDED": 0,
    "JOB_STATE_PARTIALLY_SUCCEEDED": 1,
    "JOB_STATE_FAILED": 1,
    "JOB_STATE_CANCELLED": 1,
    "JOB_STATE_EXPIRED": 1,
}
INTERRUPTED = 130  # as for any command stopped with Ctrl-C: the job itself goes on
POLL_SECS = 15.0


@dataclass
class Seen:
    """What has been shown so far, so that each poll shows only what is new."""

    state: str = ""
    trials: dict[str, str] = field(default_factory=dict)  # trial id -> state
    best: str = ""  # the best trial's id
    logs_since: datetime.datetime | None = None  # the newest log line's time
    shown: dict[str, datetime.datetime] = field(default_factory=dict)  # lines within LATE of it, by key: their time
    logs: bool = True  # False once the logs cannot be read
    log_failures: int = 0  # reads of the logs that failed, in a row


def add_flags(parser: argparse.ArgumentParser, wait: bool = False, trials: bool = True) -> None:
    """The flags of following a job; with `wait`, --wait/--no-wait too (for the commands that create one); `trials`
    where the job may be a tuning study."""
    if wait:
        parser.add_argument(
            "--wait",
            action=argparse.BooleanOptionalAction,
            help=f"follow the job to its end: states, logs{', trials' * trials}; exit 0 only if it succeeds "
            "(default: --wait on a terminal, --no-wait elsewhere)",
        )
    parser.add_argument(
        "--cancel-on-interrupt",
        action="store_true",
        help="on Ctrl-C, cancel the job without asking (default: ask on a terminal, else leave it running)",
    )
    parser.add_argument(
        "--poll-secs",
        type=commandline.positive_number,
        default=POLL_SECS,
        help=f"seconds between two looks at the job (default: {POLL_SECS:g})",
    )


def waits(args: argparse.Namespace) -> bool:
    return sys.stdout.isatty() if args.wait is None else args.wait


def interrupt_policy(args: argparse.Namespace) -> str:
    """What Ctrl-C does: cancel, ask (someone is at the terminal), or leave the job running."""
    if args.cancel_on_interrupt:
        return "cancel"
    return "ask" if sys.stdin.isatty() else "leave"


def follow_if_asked(name: str, args: argparse.Namespace) -> int:
    """What a command that created job `name` ends with: follows it with --wait, else says how to."""
    if not waits(args):
        log.info("Follow it with: qt-job wait %s", name)
        return 0
    return follow(name, args.poll_secs, interrupt_policy(args))


def follow(name: str, poll_secs: float = POLL_SECS, on_interrupt: str = "leave") -> int:
    """Shows the job's progress until it ends; returns 0 if it succeeded, 1 if not, 130 if left running. A look
    that does not reach Google Cloud (a dropped connection) is tried again, up to RETRIES times in a row."""
    seen, failures, cancelling = Seen(), 0, False
    while True:
        try:
            try:
                job = client.get(name)
            except client.Unreachable as error:
                failures += 1
                if failures > RETRIES:
                    raise UserError(f"{error}; the job goes on: follow it again with qt-job wait {name}") from None
                log.warning("%s; looking again in %g s", error, poll_secs)
                time.sleep(poll_secs)
                continue
            failures = 0
            show_changes(job, seen)
            show_new_logs(name, seen)
            if job.get("state") in FINAL:
                return finish(job)
            time.sleep(poll_secs)
        except KeyboardInterrupt:
            if cancelling:  # the second Ctrl-C: cancelling without asking again stopped no one
                log.warning("Stopped following; the job is being cancelled (qt-job status %s)", name)
                return INTERRUPTED
            if not _cancel_after_interrupt(name, on_interrupt):
                return INTERRUPTED
            cancelling = True


RETRIES = 5  # failed looks at a job in a row, each after --poll-secs, before following stops
# Cloud Logging may take in a replica's line after newer ones of another: each look reads back this far.
LATE = datetime.timedelta(seconds=60)


def _cancel_after_interrupt(name: str, policy: str) -> bool:
    """Cancels the job if the policy (or the person asked) says so; True if it did."""
    cancel = policy == "cancel"
    if policy == "ask":
        try:
            cancel = input(f"\nCancel {name}? [y/N] ").strip().lower() in ("y", "yes")
        except (KeyboardInterrupt, EOFError):  # a second Ctrl-C, or no answer: the job goes on
            cancel = False
    if not cancel:
        log.warning("Stopped following; the job goes on. Follow it again with: qt-job wait %s", name)
        return False
    try:
        client.cancel(name)
    except KeyboardInterrupt:
        log.warning("Stopped while asking to cancel %s; whether it is cancelled: qt-job status %s", name, name)
        return False
    log.info("Cancelling %s; following it to its end (Ctrl-C again to stop following)", name)
    return True


def show_changes(job: dict, seen: Seen) -> None:
    """A line for a new state and, in a tuning job, for each trial that started or ended."""
    state = job.get("state", "JOB_STATE_UNSPECIFIED")
    if state != seen.state:
        seen.state = state
        _line(job.get("updateTime"), state)
    for trial in job.get("trials", []):
        _show_trial(job, trial, seen)


def _show_trial(job: dict, trial: dict, seen: Seen) -> None:
    number, state = trial["id"], trial.get("state", "")
    before = seen.trials.get(number)
    seen.trials[number] = state
    if before is None:
        _line(trial.get("startTime"), f"trial {number} started: {trial_flags(trial)}")
    if state == before or state not in ("SUCCEEDED", "INFEASIBLE"):
        return
    if state == "INFEASIBLE":
        _line(trial.get("endTime"), f"trial {number} failed: {trial.get('infeasibleReason', 'no reason given')}")
        return
    best = best_trial(job)
    best_text = f"{metric_text(job, best)} in trial {best['id']}" if best else "none yet"
    _line(trial.get("endTime"), f"trial {number} finished: {metric_text(job, trial)} (best so far: {best_text})")


def show_new_logs(name: str, seen: Seen) -> None:
    """The job's log lines written since the last look. A log that cannot be read (no permission
    to read logs, say) is said once, and the job is followed without it."""
    if not seen.logs:
        return
    try:
        for line in client.log_lines(name, seen.logs_since and seen.logs_since - LATE):
            if line.key in seen.shown:
                continue
            seen.shown[line.key] = line.time
            seen.logs_since = max(seen.logs_since or line.time, line.time)
            _line(line.time, f"{line.task + '  ' if line.task else ''}{line.text}")
        seen.log_failures = 0
        if seen.logs_since:
            seen.shown = {key: when for key, when in seen.shown.items() if when >= seen.logs_since - LATE}
    except UserError as error:  # no permission, say; or no connection, RETRIES looks in a row
        seen.log_failures += 1
        if isinstance(error, client.Unreachable) and seen.log_failures <= RETRIES:
            return  # a dropped connection: the next look reads them
        seen.logs = False
        log.warning("Following the job without its logs: %s", error)


def finish(job: dict) -> int:
    """The job's last words: how it ended, what it left, and the exit code."""
    state = job["state"]
    if "trials" in job or "studySpec" in job:
        _show_best(job)
    output = job_output(job)
    if output:
        print(f"{'output:':10} {output}")
    failed = int(job.get("completionStats", {}).get("failedCount", 0))
    if failed:  # a batch prediction "succeeds" with every instance failed
        log.warning("%d instance(s) failed; the files named errors_* in the output say why", failed)
    if state == "JOB_STATE_SUCCEEDED":
        return 0
    message = job.get("error", {}).get("message")
    log.error("The job ended in %s%s", state, f": {message}" if message else "")
    return FINAL[state]


def _show_best(job: dict) -> None:
    best = best_trial(job)
    if best is None:
        print("No trial finished with a metric.")
        return
    print(f"{'best:':10} trial {best['id']}, {metric_text(job, best)}")
    print(f"{'flags:':10} {trial_flags(best)}")
    model = trial_model(job, best)
    if model:
        print(f"{'model:':10} {model}")


def trial_model(job: dict, trial: dict) -> str | None:
    """Where a tuning trial's export is: Vertex AI gives each trial the folder named by its id under the job's."""
    base = job.get("trialJobSpec", {}).get("baseOutputDirectory", {}).get("outputUriPrefix")
    return f"{base.rstrip('/')}/{trial['id']}/model/" if base else None


def best_trial(job: dict) -> dict | None:
    """The finished trial with the best final value of the study's metric, or None."""
    metric = job["studySpec"]["metrics"][0]
    scored = [trial for trial in job.get("trials", []) if trial_metric(job, trial) is not None]
    if not scored:
        return None
    pick = max if metric.get("goal") == "MAXIMIZE" else min
    return pick(scored, key=lambda trial: trial_metric(job, trial))


def trial_metric(job: dict, trial: dict) -> float | None:
    metric_id = job["studySpec"]["metrics"][0]["metricId"]
    for metric in trial.get("finalMeasurement", {}).get("metrics", []):
        if metric.get("metricId") == metric_id and "value" in metric:
            return float(metric["value"])
    return None


def metric_text(job: dict, trial: dict) -> str:
    metric_id = job["studySpec"]["metrics"][0]["metricId"]
    step = trial.get("finalMeasurement", {}).get("stepCount")
    value = trial_metric(job, trial)
    shown = "no value" if value is None else f"{value:.4f}"
    return f"{metric_id} {shown}" + (f" at step {step}" if step else "")


def trial_flags(trial: dict) -> str:
    """The flags Vertex AI passed to a trial, as the trainer received them."""
    return " ".join(f"--{p['parameterId']}={_value_text(p.get('value'))}" for p in trial.get("parameters", []))


def _value_text(value) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)


def job_output(job: dict) -> str | None:
    """Where the job's results are: a batch prediction's files (and counts), or the job's output folder."""
    if "outputInfo" in job:
        stats = job.get("completionStats", {})
        counts = f" ({stats.get('successfulCount', 0)} predicted, {stats.get('failedCount', 0)} failed)"
        return job["outputInfo"].get("gcsOutputDirectory", "") + (counts if stats else "")
    spec = job.get("jobSpec") or {}
    return spec.get("baseOutputDirectory", {}).get("outputUriPrefix")


def status_lines(job: dict) -> list[str]:
    """What `qt-job status` shows: the job's name, state, times, error, trials and output."""
    lines = [f"{'name:':10} {job.get('name', '')}", f"{'state:':10} {job.get('state', 'JOB_STATE_UNSPECIFIED')}"]
    for key, label in (("createTime", "created:"), ("startTime", "started:"), ("endTime", "ended:")):
        if key in job:
            lines.append(f"{label:10} {_clock(job[key], full=True)}")
    if job.get("error", {}).get("message"):
        lines.append(f"{'error:':10} {job['error']['message']}")
    for trial in job.get("trials", []):
        label = f"trial {trial['id']}:"
        lines.append(f"{label:10} {trial.get('state', '')}  {metric_text(job, trial)}  {trial_flags(trial)}")
    best = best_trial(job) if "studySpec" in job else None
    if best:
        lines.append(f"{'best:':10} trial {best['id']}, {metric_text(job, best)}")
        model = trial_model(job, best)
        if model:
            lines.append(f"{'model:':10} {model}")
    output = job_output(job)
    if output:
        lines.append(f"{'output:':10} {output}")
    return lines


def _line(when, text: str) -> None:
    print(f"{_clock(when)}  {text}", flush=True)


def _clock(when, full: bool = False) -> str:
    """A job's time (RFC 3339 text, or a datetime) in local time; now when it has none."""
    if isinstance(when, str):
        when = parse_time(when)
    moment = (when or datetime.datetime.now(datetime.timezone.utc)).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z" if full else "%H:%M:%S")


def parse_time(text: str) -> datetime.datetime | None:
    """RFC 3339 in UTC, as the API writes times ("2024-05-01T12:00:01.123456789Z"); None if not."""
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", text)
    if not match:
        return None
    moment = datetime.datetime.strptime(match[1], "%Y-%m-%dT%H:%M:%S")
    microseconds = int((match[2] or "0")[:6].ljust(6, "0"))  # Python keeps microseconds, not nanoseconds
    return moment.replace(microsecond=microseconds, tzinfo=datetime.timezone.utc)
