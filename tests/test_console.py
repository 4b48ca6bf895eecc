import logging

from ncuflow.console import quiet_scheduler


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.name = "DefaultStreamHandler"
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_the_terminal_keeps_progress_and_drops_the_scheduler_lines() -> None:
    logger = logging.getLogger("ncuflow-test-console")
    logger.setLevel(logging.INFO)
    terminal, logfile = Lines(), Lines()
    logfile.name = "DefaultLogFileHandler"
    logger.addHandler(terminal)
    logger.addHandler(logfile)
    assert quiet_scheduler(logger.name)
    logger.info("Select jobs to execute...")
    logger.info("Execute 2 jobs...", extra={"event": "job_started"})
    logger.info("rule measure: ...", extra={"event": "job_info"})
    logger.info("3 of 69 steps (4%) done", extra={"event": "progress"})
    logger.error("Error in rule measure")
    assert terminal.lines == ["3 of 69 steps (4%) done", "Error in rule measure"]
    assert len(logfile.lines) == 5


def test_without_snakemake_handlers_nothing_is_filtered() -> None:
    assert not quiet_scheduler("ncuflow-test-no-handlers")
