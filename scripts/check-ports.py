#!/usr/bin/env python3
"""docs/ports.md's measured figures are what its own commands measure now.

- "How big each port is": the shell function the page gives (`lines`) is
  run for each row of its table, and the page's whole-plugin loop is run;
  each count printed must be the page's (code lines and `wc -l`).
- With `--sanity-logs DIR`: DIR/sanity-<cloud>.log holds the output of
  `scripts/csi-sanity.sh --cloud <cloud> -- --ginkgo.focus 'Controller
  Service'` (as .ci/run saves it); its `Ran N of M Specs` must be the
  profile table's N for that cloud, and every cloud of the table must have
  a log.

Exit status 1 when a figure differs, 2 when the check could not run.

    python3 scripts/check-ports.py [--sanity-logs DIR]
"""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "ports.md"


def blocks(text):
    """The page's indented code blocks, each as one string."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("    "):
            current.append(line[4:])
        elif current and line.strip() == "":
            current.append("")
        else:
            if current:
                found.append("\n".join(current).strip() + "\n")
            current = []
    return found


def table(text, header):
    """The rows (lists of cells) of the table whose header row starts so."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    sys.exit(f"check-ports.py: no table '{header}' in {PAGE}")


def bash(script):
    return subprocess.run(
        ["bash", "-c", script], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout


def main():
    args = sys.argv[1:]
    logs = None
    if args[:1] == ["--sanity-logs"] and len(args) == 2:
        logs = Path(args[1])
    elif args:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    text = PAGE.read_text()
    failures = []
    code = blocks(text)

    # The per-driver counts: the `lines` function, then one call per row.
    definition = next((b for b in code if "lines() {" in b), None)
    if definition is None:
        sys.exit(f"check-ports.py: no lines() command in {PAGE}")
    definition = "\n".join(l for l in definition.splitlines() if not l.startswith("lines "))
    checked = 0
    for row in table(text, "| driver | its functions | lines |"):
        names = " ".join(re.findall(r"`([a-z_]+)`", row[1]))
        got = bash(f'{definition}\nlines "{names}"\n').strip()
        checked += 1
        if got != row[2]:
            failures.append(f"{row[0]} ({names}): the page says {row[2]} lines, the command counts {got}")

    # The whole plugin: code lines per file, and wc -l.
    loop = next((b for b in code if b.startswith("for f in ")), None)
    if loop is None:
        sys.exit(f"check-ports.py: no whole-plugin loop in {PAGE}")
    m = re.search(r"`drivers\.rs` (\d+), `main\.rs` (\d+), `simulated\.rs` (\d+) \(`wc -l`[^:]*: (\d+), (\d+) and (\d+)\)", text)
    if m is None:
        sys.exit(f"check-ports.py: no whole-plugin figures in {PAGE}")
    counted = [line.split()[1] for line in bash(loop).splitlines()]
    files = re.search(r"for f in (\S+); do", loop).group(1)
    totals = [line.split()[0] for line in bash(f"wc -l {files}").splitlines()[:3]]
    for what, page, got in zip(
        ["drivers.rs", "main.rs", "simulated.rs"] * 2,
        m.groups(),
        counted + totals,
    ):
        checked += 1
        if page != got:
            failures.append(f"{what}: the page says {page}, the command counts {got}")

    if logs is not None:
        for row in table(text, "| `--cloud` |"):
            cloud = row[0].strip("`")
            log = logs / f"sanity-{cloud}.log"
            checked += 1
            if not log.is_file():
                failures.append(f"{cloud}: no {log}")
                continue
            ran = re.findall(r"^Ran (\d+) of \d+ Specs", log.read_text(), re.M)
            if ran != [row[3]]:
                failures.append(f"{cloud}: the page says {row[3]} specs passed, {log} ran {ran}")

    for f in failures:
        print(f"check-ports.py: docs/ports.md: {f}", file=sys.stderr)
    if failures:
        print(f"check-ports.py: {len(failures)} of {checked} figures differ", file=sys.stderr)
        return 1
    print(f"check-ports.py: {checked} figures of docs/ports.md are what its commands measure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
