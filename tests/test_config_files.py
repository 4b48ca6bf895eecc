"""A config file ncuflow cannot read, refused with one line that names the file, the line
or key, and what is expected: tags, keys YAML reads as something else, aliases that expand
without bound, encodings, keys written twice; and what Snakemake itself answers before any
ncuflow code runs, as docs/troubleshooting.md quotes it."""

import codecs
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, run_snakemake
from ncuflow.errors import ConfigError, NcuflowError
from ncuflow.files import read_config

# Keys written twice, which YAML would otherwise drop in silence.
DUPLICATES = [
    ("mode: replay\nmode: gpu\nexperiments: {}\n", "mode", "written twice", "(lines 1 and 2)"),
    ("experiments:\n  sq:\n    family: matmul\n    sizes: {M: 8, N: M, K: M}\n    variants:\n"
     "      naive:\n      naive: {params: {BLOCK_X: 8}}\n",
     "experiments.sq.variants.naive", "written twice", "(lines 6 and 7)"),
    ("experiments:\n  sq:\n    family: matmul\n    sizes: {M: 8, M: 16, N: M, K: M}\n"
     "    variants: {naive: }\n", "experiments.sq.sizes.M", "written twice", "(lines 4 and 4)"),
]  # fmt: skip


# (a config file's text, the path of the message, what it says)
FILES = [
    ("mode: !!python/name:os.system ''\nexperiments: {}\n", "(top level)",
     "could not determine a constructor for the tag 'tag:yaml.org,2002:python/name:os.system'"),
    ("experiments:\n  ~:\n    family: matmul\n", "experiments.~",
     "the key '~' (line 2 of {path}) is read by YAML as None, not a name; quote it: '~'"),
    ("experiments:\n  yes:\n    family: matmul\n", "experiments.yes",
     "the key 'yes' (line 2 of {path}) is read by YAML as True, not a name; quote it: 'yes'"),
    ("1: 2\n", "1", "the key '1' (line 1 of {path}) is read by YAML as 1, not a name"),
    ("? [a, b]\n: 1\n", "(top level)", "a key at line 1 of {path} is a list or mapping"),
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(6)),
     "(top level)", "stands for more than 1,000,000 values once its aliases (*name) are"),
    ("__use_yte__: true\nexperiments: {}\n", "__use_yte__",
     "{path} asks Snakemake to evaluate it as a YTE template (Python expressions, already run"),
    ("", "(top level)", "{path} holds no mapping of keys"),
    ("- a\n- b\n", "(top level)", "{path} holds no mapping of keys"),
    ("experiments: {sq: {family: matmul\n", "(top level)",
     "{path} is not valid YAML: while parsing a flow mapping (line 1, column 19), expected ',' or "
     "'}}', but got '<stream end>' at line 2, column 1"),
    ("mode: 'gpu\n", "(top level)", "{path} is not valid YAML: while scanning a quoted scalar "
     "(line 1, column 7), found unexpected end of stream at line 2, column 1"),
    # issue 44: what Snakemake reads without the line (or with a traceback), with its line
    ("mode: gpu\n\tcapture: x\n", "(top level)", "{path} is not valid YAML: while scanning for the "
     "next token, found character '\\t' that cannot start any token at line 2, column 1: "
     "'\\tcapture: x'; indent with spaces: YAML allows no tab there"),
    ("ncu:\n  path: ncu\n\tsections: [SpeedOfLight]\n", "(top level)",
     "found character '\\t' that cannot start any token at line 3, column 1"),
    ("mode: replay\ncapture: *nope\n", "(top level)", "{path} is not valid YAML: found undefined "
     "alias 'nope' at line 2, column 10: 'capture: *nope'; an alias (*name) repeats an anchor "
     "(&name) written before it in the file: write the anchor first, or quote a text that starts "
     "with *"),
    ("experiments: " + "[" * 20000 + "]" * 20000 + "\n", "(top level)", "{path} is not valid YAML: "
     "mappings and lists nested deeper than 32 levels at line 1, column 45: 'experiments: [[[[["),
    ("experiments: " + "{a: " * 20000 + "1" + "}" * 20000 + "\n", "(top level)",
     "mappings and lists nested deeper than 32 levels at line 1, column 138: 'experiments: "),
    ("experiments: " + "[" * 500 + "]" * 500 + "\n", "(top level)",  # libyaml reads it
     "mappings and lists nested deeper than 32 levels at line 1, column 45"),
    ("".join(f"{'  ' * i}a:\n" for i in range(40)), "(top level)",
     "mappings and lists nested deeper than 32 levels at line 33, column 65: 'a:'; expected at most "
     "32 (a study needs 7)"),
    ("a0: &a0 [1]\n" + "".join(f"a{i + 1}: &a{i + 1} [*a{i}]\n" for i in range(40)), "(top level)",
     "mappings and lists nested deeper than 32 levels at line 10, column 5: 'a9: &a9 [*a8]'"),
    ("mode: replay\nloop: &a [1, *a]\n", "(top level)", "{path} is not valid YAML: an alias inside "
     "its own anchor's value (&a [*a]) nests it without end at line 2, column 7: 'loop: &a [1, "
     "*a]'; expected an alias after its anchor's value"),
    ("experiments:\n  on:\n    family: matmul\n", "experiments.on",
     "the key 'on' (line 2 of {path}) is read by YAML as True, not a name; quote it: 'on'"),
    ("experiments:\n  3.5:\n    family: matmul\n", "experiments.3.5",
     "the key '3.5' (line 2 of {path}) is read by YAML as 3.5, not a name"),
    ("experiments: !!set {a, b}\n", "experiments",
     "{path}: YAML reads this value as a set (a tag such as !!set or !!binary, or a date)"),
    ("seed: 2026-11-26\nexperiments: {}\n", "seed", "{path}: YAML reads this value as a date"),
    ("mode: !!binary aGVsbG8=\nexperiments: {}\n", "mode", "YAML reads this value as a bytes"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "where", "message"), FILES, ids=[f[2][:30] for f in FILES])
def test_a_config_file_yaml_reads_otherwise_is_refused(tmp_path: Path, text: str, where: str,
                                                       message: str) -> None:  # fmt: skip
    """Tags ncuflow never reads, keys that YAML turns into booleans, nulls or numbers, and
    aliases that expand to billions of values: one message, in a fraction of a second."""
    path = tmp_path / "study.yaml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        read_config(path)
    assert time.perf_counter() - started < 5
    assert str(error.value).startswith(f"config error at {where}: "), str(error.value)
    assert message.format(path=path) in str(error.value)
    assert "\n" not in str(error.value) and len(str(error.value)) < 600


# (a config file's bytes, what its one line says): issue 44's encodings
ENCODINGS = [
    ("mode: replay\n# caf\u00e9\nexperiments: {}\n".encode("latin-1"),
     "{path}: line 2: byte 0xe9 is not UTF-8; save the file as UTF-8 (it was saved as Latin-1 or "
     "another encoding)"),
    ("mode: replay\n".encode("utf-16"), "{path}: line 1: the file is UTF-16 (it starts with a "
     "UTF-16 byte order mark); save the file as UTF-8"),
    (codecs.BOM_UTF16_BE + "mode: replay\n".encode("utf-16-be"), "{path}: line 1: the file is UTF-16"),
    ("mode: replay\n".encode("utf-32"), "{path}: line 1: the file is UTF-32 (it starts with a "
     "UTF-32 byte order mark); save the file as UTF-8"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "message"), ENCODINGS, ids=["latin-1", "utf-16", "utf-16-be",
                                                               "utf-32"])  # fmt: skip
def test_a_config_file_that_is_not_utf8_is_refused_with_its_line(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "study.yaml"
    path.write_bytes(data)
    with pytest.raises(NcuflowError) as error:
        read_config(path)
    assert str(error.value).startswith(message.format(path=path)), str(error.value)


def test_a_config_file_that_is_not_there_is_named(tmp_path: Path) -> None:
    """The workflow's own config.yaml, removed: the Snakefile reads it before Snakemake."""
    with pytest.raises(NcuflowError, match=f"^{re.escape(str(tmp_path))}/config.yaml: no such"):
        read_config(tmp_path / "config.yaml")


def test_a_utf8_byte_order_mark_is_read_as_utf8(tmp_path: Path) -> None:
    path = tmp_path / "study.yaml"
    path.write_bytes(codecs.BOM_UTF8 + "mode: replay\nexperiments: {caf\u00e9: {}}\n".encode())
    assert read_config(path) == {"mode": "replay", "experiments": {"caf\u00e9": {}}}


@pytest.mark.parametrize(("text", "where", "message", "lines"), DUPLICATES)
def test_a_key_written_twice_is_refused(tmp_path: Path, text: str, where: str, message: str,
                                        lines: str) -> None:  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        read_config(path)
    assert str(error.value).startswith(f"config error at {where}: {message} in {path} {lines}")


# What Snakemake says of a --config or --configfile it cannot read, before any ncuflow code
# runs (its last line; docs/troubleshooting.md quotes each), and how the case is written.
SNAKEMAKE_ANSWERS = [
    (["--config", "mode"], "ValueError: Invalid config definition: Config entries have to be "
     "defined as name=value pairs. (Unparsable value: 'mode')"),
    (["--config", "ncu.path=/opt/ncu"], "ValueError: Invalid config definition: Config entry "
     "must start with a valid identifier."),
    (b"mode: replay\n# caf\xe9\n", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 "
     "in position 18: invalid continuation byte"),
    ("mode: replay\n".encode("utf-16"), "UnicodeDecodeError: 'utf-8' codec can't decode byte "
     "0xff in position 0: invalid start byte"),
    (b"experiments: " + b"[" * 20000 + b"]" * 20000, "RecursionError: maximum recursion depth "
     "exceeded"),
    (b"mode: replay\nncu:\n\tpath: ncu\n", "Config file is not valid JSON or YAML. In case of "
     "YAML, make sure to not mix whitespace and tab indentation."),
    (b"mode: replay\ncapture: *nope\n", "Config file is not valid JSON or YAML. In case of YAML, "
     "make sure to not mix whitespace and tab indentation."),
]  # fmt: skip


@pytest.mark.parametrize(("given", "line"), SNAKEMAKE_ANSWERS,
                         ids=["no =", "dotted key", "latin-1", "utf-16", "deep", "tab", "alias"])  # fmt: skip
def test_what_snakemake_answers_before_ncuflow_is_documented(
    tmp_path: Path, given: list[str] | bytes, line: str
) -> None:
    """Snakemake reads --config and --configfile before the Snakefile: these end there, in
    its own words. docs/troubleshooting.md shows each and what to do (ncuflow check names
    the line of a file)."""
    if isinstance(given, bytes):
        (tmp_path / "study.yaml").write_bytes(given)
        given = ["--configfile", str(tmp_path / "study.yaml")]
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", "--snakefile", str(ROOT / "Snakefile"),
                         "--directory", str(tmp_path), *given)  # fmt: skip
    said = proc.stdout + proc.stderr  # Snakemake prints these on stdout
    assert proc.returncode == 1 and line in said, said[-1000:]
    assert "ncuflow:" not in said  # no ncuflow code ran
    assert line in (ROOT / "docs" / "troubleshooting.md").read_text()


def test_the_workflows_own_config_is_read_by_ncuflow_first(workflow_copy: Path) -> None:
    """The default config.yaml is read by the Snakefile (not by Snakemake's command line):
    a tab in it gets ncuflow's line, with the line number, before Snakemake reads it. So
    does `ncuflow check` of a file."""
    config = workflow_copy / "config.yaml"
    config.write_text(config.read_text().replace("\n  ", "\n\t", 1))
    proc = run_snakemake(workflow_copy, "-n", "--cores", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    (line,) = [line for line in proc.stderr.splitlines() if line.startswith("ncuflow:")]
    assert line.startswith(f"ncuflow: config error at (top level): {config} is not valid YAML: "
                           "while scanning for the next token, found character '\\t' that "
                           "cannot start any token at line ")  # fmt: skip
    assert line.endswith("; indent with spaces: YAML allows no tab there")
    check = subprocess.run([sys.executable, "-m", "ncuflow", "check", str(config)],
                           capture_output=True, text=True)  # fmt: skip
    assert check.returncode == 1 and check.stderr.strip() == line
