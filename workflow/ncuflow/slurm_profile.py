"""What the Slurm profile (profiles/slurm/config.yaml) decides as Snakemake reads it, before
the run starts: which command asks Slurm for its jobs' states, and how a refused submission
is shown.

Snakemake's Slurm executor asks ``sacct`` by default wherever the command exists. A cluster
without an accounting database has ``sacct`` too, but it answers every query with "Slurm
accounting storage is disabled": the executor then never learns that a job ended, and the
run waits for ever. ``status_command`` asks ``sacct`` once and names ``squeue`` where it
does not answer (``squeue`` lists a job for MinJobAge, 300 s by default, after it ends).

Where ``sbatch`` refuses a job (a partition that does not exist, a time or GPU request the
partition cannot meet), or the executor does not submit it (an account that the cluster's
accounting does not know), the executor reports a job error of a dozen lines, the whole
sbatch command among them, once per job refused for the same reason. ``one_line_sbatch_errors``
makes that one line per reason, which names the rule and says what was wrong. It filters
the records of Snakemake's logger itself, not one of its handlers: it is installed while the
profile is read, before Snakemake sets up its handlers (and replaces any there were)."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess

from .console import event_name

# The executor's messages for a submission that sbatch refused (up to the sbatch command it
# adds), and for one it did not make (up to the line Snakemake adds); and its own line for the
# latter, which says what that job error says.
SBATCH_FAILED = re.compile(r"SLURM sbatch failed\. The error message was '(?P<said>.*?)'\.\n", re.S)
NOT_SUBMITTED = re.compile(r"Job submission failed with exception: (?P<said>.*?)(For further|$)",
                           re.S)  # fmt: skip
EXCEPTION_LINES = ("Exception in run_job for rule ", "Exception in run_array_jobs for rule ")
# The executor's lines while it guesses an account, which end with one that says how it went
# (a guessed account, or "Unable to guess SLURM account. Trying to proceed without."): these
# are dropped, and that last line said once, as is its line for an account it cannot check
# (which it says before each job: a cluster without accounting takes any account).
ACCOUNT_GUESSING = (
    "No SLURM account given, trying to guess.",
    "No account was given, not able to get a SLURM account via sacct",
)
SAID_ONCE = (
    "Unable to guess SLURM account.",
    "Guessed SLURM account:",
    "Both 'sacctmgr' and 'sshare' returned empty results for account",
)
TROUBLESHOOTING = "docs/troubleshooting.md#slurm"


def status_command(timeout_s: float = 10.0) -> str:
    """``squeue`` where Slurm keeps no accounting (no ``sacct``, or one that says accounting
    storage is disabled), ``sacct`` otherwise: a slow or failing accounting database is the
    executor's to report, not a reason to poll with ``squeue``, which forgets a job MinJobAge
    after it ends and could leave the run waiting for one it missed."""
    sacct = shutil.which("sacct")
    if sacct is None:
        return "squeue"
    query = [sacct, "--noheader", "--allocations", "--starttime", "now", "--endtime", "now",
             "--format", "JobIDRaw"]  # fmt: skip
    try:
        answer = subprocess.run(query, capture_output=True, text=True, timeout=timeout_s,
                                check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "sacct"
    disabled = "accounting storage is disabled" in (answer.stdout + answer.stderr).lower()
    return "squeue" if answer.returncode != 0 and disabled else "sacct"


def refusal(rule_msg: str) -> tuple[str, str] | None:
    """Who refused a submission and what was said, on one line, where ``rule_msg`` is the
    executor's job error for one; None for any other job error (a job that failed)."""
    forms = (
        (SBATCH_FAILED, "sbatch refused"),
        (NOT_SUBMITTED, "the Slurm executor did not submit"),
    )
    for form, who in forms:
        found = form.match(rule_msg)
        if found is not None:
            lines = [line.strip().removeprefix("sbatch: error: ")
                     for line in found["said"].splitlines()]  # fmt: skip
            return who, "; ".join(line for line in lines if line).replace(":; ", ": ")
    return None


class OneLineSlurmErrors(logging.Filter):
    """Each reason a job was refused for as one line (for the first job refused for it), and
    the executor's guessing of an account as its outcome, once."""

    def __init__(self) -> None:
        super().__init__()
        self.said: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        event = getattr(record, "event", None)
        if event_name(record) == "job_error":
            refused = refusal(str(getattr(record, "rule_msg", None) or ""))
            if refused is None:
                return True
            who, said = refused
            rule = getattr(record, "rule_name", "?")
            line = f"ncuflow: {who} the job of rule {rule}: {said} ({TROUBLESHOOTING})"
            # a plain message from here on: Snakemake's formatters print it as it is
            record.msg, record.args, record.event = line, (), None
            return self._first(f"{who}: {said}")
        if event is not None or not isinstance(record.msg, str):
            return True
        if record.msg.startswith(ACCOUNT_GUESSING + EXCEPTION_LINES):
            return False
        if record.msg.startswith(SAID_ONCE):
            return self._first(record.msg)
        return True

    def _first(self, key: str) -> bool:
        """True the first time ``key`` is said, False after."""
        if key in self.said:
            return False
        self.said.add(key)
        return True


def one_line_sbatch_errors(logger_name: str = "snakemake.logging") -> None:
    """OneLineSlurmErrors on Snakemake's logger (once, however often the profile is read)."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(f, OneLineSlurmErrors) for f in logger.filters):
        logger.addFilter(OneLineSlurmErrors())
