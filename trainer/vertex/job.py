"""`python -m trainer.vertex.job` (qt-job): look at a Vertex AI job that qt-submit or
qt-batch-predict created: its status, its logs, follow it to its end, or cancel it. JOB is the
resource name they print, projects/PROJECT/locations/REGION/customJobs/ID (or
hyperparameterTuningJobs/ID, batchPredictionJobs/ID)."""

from __future__ import annotations

import logging
import sys

from dataformat import commandline
from trainer.vertex import client, follow

log = logging.getLogger("trainer.vertex.job")

EXAMPLES = """\
examples:
  qt-job status projects/my-project/locations/us-central1/customJobs/123
  qt-job logs projects/my-project/locations/us-central1/customJobs/123
  qt-job wait projects/my-project/locations/us-central1/hyperparameterTuningJobs/456
  qt-job cancel projects/my-project/locations/us-central1/customJobs/123
"""


def parse_args(argv: list[str] | None):
    parser = commandline.ArgumentParser(
        prog="qt-job",
        description="(also: python -m trainer.vertex.job) Look at, follow or cancel a Vertex AI job.",
        examples=EXAMPLES,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="{status,logs,wait,cancel}")
    helps = {
        "status": "the job's state, times, error, trials and output, once",
        "logs": "every log line the job has written so far",
        "wait": "follow the job to its end; exit 0 only if it succeeds",
        "cancel": "ask Vertex AI to cancel the job",
    }
    for action, text in helps.items():
        sub = actions.add_parser(action, help=text, description=text, examples="")
        sub.add_argument("job", metavar="JOB", help="the job's resource name, as qt-submit printed it")
        if action == "wait":
            follow.add_flags(sub)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(lambda: _run(argv), "the job itself goes on")


def _run(argv: list[str] | None) -> int:
    args = parse_args(argv)
    client.parse_name(args.job)  # a mistyped name is one line before any credentials are looked for
    if args.action == "status":
        print("\n".join(follow.status_lines(client.get(args.job))))
    elif args.action == "logs":
        for line in client.log_lines(args.job, None):
            print(f"{line.time.astimezone():%Y-%m-%d %H:%M:%S}  {line.task}  {line.text}")
    elif args.action == "cancel":
        client.cancel(args.job)
        log.info("Cancellation requested; see it end with: qt-job wait %s", args.job)
    else:
        return follow.follow(args.job, args.poll_secs, follow.interrupt_policy(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
