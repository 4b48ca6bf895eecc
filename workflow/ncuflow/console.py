"""What Snakemake prints on the terminal: progress and errors, not its scheduler's chatter."""

from __future__ import annotations

import logging

# Per job, its rule, files and reason (a dozen lines) and two lines that say only that the
# scheduler looked for work and started some: the terminal keeps each job's "Finished" and
# progress lines and every error, the run's log file (.snakemake/log/) keeps all.
SCHEDULER_LINES = ("Select jobs to execute...",)
JOB_CHATTER = ("job_started", "job_info", "group_info")


def event_name(record: logging.LogRecord) -> str | None:
    """The Snakemake log event a record reports (``job_error``...), None for a plain line."""
    event = getattr(record, "event", None)
    return getattr(event, "value", event)


def _is_progress_or_error(record: logging.LogRecord) -> bool:
    if event_name(record) in JOB_CHATTER:
        return False
    return record.getMessage() not in SCHEDULER_LINES


def quiet_scheduler(logger_name: str = "snakemake.logging") -> bool:
    """Filter the scheduler's lines out of Snakemake's terminal handler; False where
    Snakemake's handlers are not the ones this knows (a logger plugin), which then print
    as they would."""
    handlers = [h for h in logging.getLogger(logger_name).handlers
                if h.name == "DefaultStreamHandler"]  # fmt: skip
    for handler in handlers:
        handler.addFilter(_is_progress_or_error)
    return bool(handlers)
