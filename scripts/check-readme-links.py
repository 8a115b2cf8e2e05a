#!/usr/bin/env python3
"""Every link in the published packages' READMEs resolves on the registry page.

crates.io renders a package's README outside the repository: a relative
link resolves only to a file inside the package, and a link to anything
else in the repository must be an absolute URL at the release's tag. For
each README below, every link (inline, reference-style, autolink) must be

- a path inside its package, as `cargo package --list` lists it (a
  directory when a listed file is under it), or
- https://github.com/<repository>/tree|blob/v<version>/<path> where <path>
  is a file or directory of this repository that git tracks, or
- a link to another site (http or https; not fetched: CI is offline),

and the same for the README of the crate `csi-sim-cloud new` writes
(csi-sim-cloud/template/README.md), whose paths are the files it writes;

and an anchor (`#...`) on a Markdown file of this repository must name one
of its headings (GitHub's spelling). A `{` in a link (an unfilled
template) fails. Exit status 1 when a link fails, 2 when the check could
not run.

    python3 scripts/check-readme-links.py
"""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The published packages and their READMEs, relative to the repository.
PACKAGES = {
    "csi-proxy-client": ".",
    "csi-node-server": "csi-node-server",
    "csi-sim-cloud": "csi-sim-cloud",
}

INLINE = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def run(args):
    return subprocess.run(args, cwd=REPO, check=True, capture_output=True, text=True).stdout


def links(text):
    # Code blocks hold commands and TOML, not links (their lines kept, for
    # the line numbers).
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = re.sub(r"`[^`\n]*`", "", text)
    found = []
    for pattern in (INLINE, REFERENCE, AUTOLINK):
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append((line, m.group(1)))
    return sorted(found)


def slug(heading):
    """A heading's anchor as GitHub spells it."""
    heading = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", path.read_text())
    seen = {}
    out = set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def check_anchor(path, anchor):
    """None when fine, else what is wrong."""
    if not anchor:
        return None
    if path.is_dir():
        path = path / "README.md"
    if path.suffix != ".md" or not path.is_file():
        return None
    if anchor not in anchors(path):
        return f"no heading #{anchor} in {path.relative_to(REPO)}"
    return None


def main():
    manifest = tomllib.loads((REPO / "Cargo.toml").read_text())
    repository = manifest["workspace"]["package"]["repository"].rstrip("/")
    tracked = set(run(["git", "ls-files"]).split("\n"))
    tracked_dirs = {str(Path(f).parent) for f in tracked if f}
    for f in list(tracked_dirs):
        for parent in Path(f).parents:
            tracked_dirs.add(str(parent))
    failures = 0
    checked = 0
    readmes = []
    for name, directory in PACKAGES.items():
        package_dir = REPO / directory
        version = tomllib.loads((package_dir / "Cargo.toml").read_text())["package"]["version"]
        if isinstance(version, dict):
            version = manifest["workspace"]["package"]["version"]
        listed = set(run(["cargo", "package", "--list", "--allow-dirty", "-p", name]).split("\n"))
        readmes.append((name, package_dir, version, listed))
        if name == "csi-sim-cloud":
            # `csi-sim-cloud new` writes template/ out as a crate, its
            # README that crate's: a relative link must name a file it
            # writes (Cargo.toml.in becomes Cargo.toml).
            template = package_dir / "template"
            written = {
                str(f.relative_to(template)).replace("Cargo.toml.in", "Cargo.toml")
                for f in template.rglob("*")
                if f.is_file()
            }
            readmes.append(("csi-sim-cloud new template", template, version, written))
    for name, package_dir, version, listed in readmes:
        prefix = f"{repository}/"
        tag = f"v{version}"
        listed_dirs = set()
        for f in listed:
            for parent in Path(f).parents:
                listed_dirs.add(str(parent))
        readme = package_dir / "README.md"
        for line, target in links(readme.read_text()):
            checked += 1
            where = f"{readme.relative_to(REPO)}:{line}: {target}"
            url, _, anchor = target.partition("#")
            problem = None
            if "{" in target or "}" in target:
                problem = "an unfilled placeholder"
            elif url.startswith(prefix) or url == repository:
                rest = url[len(prefix):] if url.startswith(prefix) else ""
                m = re.fullmatch(r"(tree|blob)/([^/]+)(?:/(.*))?", rest)
                if not m:
                    problem = f"not {repository}/tree/{tag}/PATH"
                elif m.group(2) != tag:
                    problem = f"at {m.group(2)}, not at this release's tag {tag}"
                else:
                    path = (m.group(3) or "").rstrip("/")
                    if path and path not in tracked and path not in tracked_dirs:
                        problem = f"{path} is not in the repository"
                    else:
                        problem = check_anchor(REPO / path, anchor)
            elif re.match(r"[a-z][a-z0-9+.-]*:", url):
                if not url.startswith(("https://", "http://", "mailto:")):
                    problem = "neither a path in the package nor a web address"
            elif url == "":
                # An anchor in the README itself.
                problem = check_anchor(readme, anchor)
            else:
                path = url.removeprefix("./").rstrip("/")
                if path.startswith("/") or ".." in Path(path).parts:
                    problem = "outside the package: use an absolute URL at the tag"
                elif path not in listed and path not in listed_dirs:
                    problem = (
                        f"{path} is not in the {name} package (cargo package --list); "
                        f"link {repository}/tree/{tag}/... instead"
                    )
                else:
                    problem = check_anchor(package_dir / path, anchor)
            if problem:
                failures += 1
                print(f"{where}: {problem}", file=sys.stderr)
    if failures:
        print(f"check-readme-links.py: {failures} of {checked} links fail", file=sys.stderr)
        return 1
    print(f"check-readme-links.py: {checked} links in {len(readmes)} READMEs resolve")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (subprocess.CalledProcessError, OSError, KeyError) as e:
        detail = getattr(e, "stderr", "") or ""
        print(f"check-readme-links.py: cannot check: {e} {detail}", file=sys.stderr)
        sys.exit(2)
