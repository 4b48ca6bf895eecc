import signal
import sys


def _stopped_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C (or a cancelled job) before the stage has begun: one line, no traceback."""
    print(f"ncuflow: stopped by {signal.Signals(signum).name} while starting; nothing was "
          "lost: run the same snakemake command again to go on", file=sys.stderr)  # fmt: skip
    sys.exit(130)


# until the stage installs its own handlers (ncuflow.children.stop_on_signals); a stage
# started by the workflow starts with Ctrl-C ignored until here (cli.STARTS_DEAF)
for _signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(_signum, _stopped_while_starting)

from .cli import main  # noqa: E402  (after the handlers: importing takes a while)

sys.exit(main())
