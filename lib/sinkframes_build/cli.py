"""Command line of the book's build: ``python -m sinkframes_build {build,toc,standin-hub}`` beside every command
of the installed library (``python -m sinkframes``): run from a clone of the repository, whose ``lib/`` holds
this package (the installed package does not).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from sinkframes import cli as library_cli
from sinkframes.manifest import ALL_PROFILES


def _cmd_build(args: argparse.Namespace) -> int:
    from .batch import build

    return build(profile=args.profile, pages=args.pages, out_dir=args.out, html=not args.no_html, jobs=args.jobs,
                 executor=args.executor, ray_address=args.ray_address, reuse=args.reuse)


def _cmd_toc(args: argparse.Namespace) -> int:
    from sinkframes.manifest import (
        PACKAGED_DEFAULTS,
        PACKAGED_MANIFEST,
        load_manifest,
        render_toc,
        repo_root,
    )

    from .plan import template_defaults_text

    m = load_manifest()
    text = render_toc(m)
    if args.write:
        import nbformat

        from .install import repository, set_install_cell

        root = repo_root()
        url, branch = repository(root)
        try:
            (root / "_toc.yml").write_text(text)
            PACKAGED_MANIFEST.write_text((root / "notebooks" / "manifest.yml").read_text())
            PACKAGED_DEFAULTS.write_text(template_defaults_text(m))
            from sinkframes.report import reproduction_map

            (root / reproduction_map.PAGE).write_text(reproduction_map.page_markdown())
            from .readme import with_models_table

            readme = root / "README.md"
            readme.write_text(with_models_table(readme.read_text()))
            for page in m.pages:  # the templates' install cells follow _config.yml's repository
                nb = nbformat.read(root / page.template, as_version=4)
                if set_install_cell(nb, url, branch):
                    nbformat.write(nb, root / page.template)
        except OSError as exc:
            raise ValueError(f"cannot write the table of contents or a template ({exc}); make them writable "
                             "(or run without --write to print the table of contents)") from exc
    else:
        print(text, end="")
    return 0


def _cmd_standin_hub(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sinkframes.corpus import PAPER_CSV_URL, keep_download

    from .standin_hub import write_standin_hub

    out = Path(args.out).expanduser().resolve()
    summary = write_standin_hub(out, layers=args.layers, profiles=tuple(args.profiles), progress=True)
    for repo, revisions in summary.models.items():
        print(f"{repo:<36} {', '.join(revisions):<20.60} tokenizer: {summary.tokenizers[repo]}")
    if args.paper_csv:
        print(f"the paper's CSV ({PAPER_CSV_URL}) is read from {keep_download(PAPER_CSV_URL, args.paper_csv)}")
    print(f"\n{len(summary.models)} stand-in models in {summary.hub}. Use them with:\n"
          f"  HF_HOME={out} HF_HUB_OFFLINE=1 SINKFRAMES_MAX_SENTENCES=4 python -m sinkframes_build build "
          f"--profile {args.profiles[0]} --out <scratch folder> --no-html")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sinkframes_build",
                                description="The book's build (build, toc, standin-hub) and the library's commands.")
    sub = p.add_subparsers(dest="command", required=True)
    library_cli.add_commands(sub)
    b = sub.add_parser("build", help="execute the manifest's pages with papermill, then build the HTML")
    b.add_argument("--profile", choices=list(ALL_PROFILES), default="offline")
    b.add_argument("--pages", nargs="*", default=None, help="page ids (default: all)")
    b.add_argument("--out", default=None, help="folder for executed pages (default: book/)")
    b.add_argument("--no-html", action="store_true", help="skip the jupyter-book build")
    b.add_argument("--jobs", type=int, default=1,
                   help="run independent pages in this many worker processes (default 1: one after another)")
    b.add_argument("--reuse", action="store_true",
                   help="copy a page whose template, parameters, library and installed software are unchanged "
                        "since it last ran to the end, instead of executing it (make book does)")
    b.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="local: this machine's processes (--jobs); ray: Ray tasks, one GPU each where there are GPUs")
    b.add_argument("--ray-address", default=None,
                   help="with --executor ray: the cluster to join (e.g. ray://head:10001; default: a local Ray)")
    b.set_defaults(func=_cmd_build)

    t = sub.add_parser(
        "toc",
        help="print (or --write) _toc.yml from the manifest; --write also regenerates the templates' install cells, "
             "the manifest's packaged copy, the templates' defaults and the reproduction map (book/reproduction.md)",
    )
    t.add_argument("--write", action="store_true")
    t.set_defaults(func=_cmd_toc)

    h = sub.add_parser(
        "standin-hub",
        help="write a local Hugging Face cache (HF_HOME layout) of shrunk random-weight stand-ins of every model of "
             "the paper and colab profiles, to rehearse those profiles with no network",
    )
    h.add_argument("--out", required=True, help="the folder to use as HF_HOME")
    h.add_argument("--layers", type=int, default=2, help="layers of each stand-in (default 2)")
    h.add_argument("--profiles", nargs="+", choices=["paper", "colab"], default=["paper", "colab"])
    h.add_argument("--paper-csv", default=None,
                   help="a local copy of wiki_dataset_sink.csv, kept as the download of the profiles' csv_path URL "
                        "in SINKFRAMES_CACHE")
    h.set_defaults(func=_cmd_standin_hub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return library_cli.run(parser().parse_args(list(sys.argv[1:] if argv is None else argv)))
