"""Sphinx configuration of the documentation site (`make docs`).

Markdown pages through MyST, the tutorials (docs/tutorials/*.py) through
sphinx-gallery, executed at build time on the CPU target. Before reading
the sources the build writes the generated pages: the language, host-API
and pass-config reference (scripts/gen_reference.py, into
reference/_generated/) and the performance plots (scripts/perf_plots.py,
into performance/_generated/). The dialect and pass reference comes from
ODS (docs/generated/, `cmake --build build --target tile-doc`).
"""

import os
import subprocess
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)

project = "tilelang-mlir"
author = "the tilelang-mlir authors"
copyright = "the tilelang-mlir authors"

extensions = ["myst_parser", "sphinx_gallery.gen_gallery"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "generated/*.md", "tutorials/README.rst",
                    "auto_tutorials/*.ipynb", "auto_tutorials/*.py",
                    "auto_tutorials/*.zip", "auto_tutorials/*.json"]
html_theme = "furo"
html_title = "tilelang-mlir"
# Every cross-reference must resolve: with -W a dangling one fails the build.
nitpicky = True
# Code in Markdown pages is shown as written; no language guessing warnings.
highlight_language = "none"
suppress_warnings = []

# The tutorials run on the CPU target in the build process; their kernels go
# into a cache of the build's own, so a build shows what this tree compiles.
os.environ.setdefault("TILELANG_MLIR_CACHE_DIR", os.path.join(ROOT, "build", "docs-cache"))
os.environ.setdefault("TILELANG_MLIR_AUTOTUNE_QUIET", "1")

sphinx_gallery_conf = {
    "examples_dirs": "tutorials",
    "gallery_dirs": "auto_tutorials",
    "filename_pattern": r"/t\d\d_",      # run every tutorial
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "capture_repr": (),
}


def _generate(app):
    """Writes the generated reference pages and the performance plots."""
    for script, out in (("gen_reference.py", "reference/_generated"),
                        ("perf_plots.py", "performance/_generated")):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script),
                        os.path.join(DOCS, out)], check=True, stdout=subprocess.DEVNULL)


def _mlir_lexer():
    """A small Pygments lexer for the MLIR in the ODS reference and the
    tutorials (Pygments has none): comments, SSA values, attributes and
    types, op names, numbers."""
    from pygments.lexer import RegexLexer
    from pygments import token

    class MLIRLexer(RegexLexer):
        name = "MLIR"
        aliases = ["mlir"]
        tokens = {"root": [
            (r"//.*?$", token.Comment),
            (r'"[^"]*"', token.String),
            (r"%[\w.$:#-]+", token.Name.Variable),
            (r"\^[\w.$-]+", token.Name.Label),
            (r"@[\w.$-]+", token.Name.Function),
            (r"#[\w.$]+", token.Name.Attribute),
            (r"![\w.$]+", token.Keyword.Type),
            (r"\b(memref|tensor|vector|index|[iuf]\d+|bf16|tf32)\b", token.Keyword.Type),
            (r"\b[a-z_]\w*\.[\w.]+", token.Name.Builtin),
            (r"-?\d+(\.\d+)?(e[+-]?\d+)?", token.Number),
            (r"\s+", token.Text),
            (r".", token.Text),
        ]}

    return MLIRLexer


def setup(app):
    app.connect("builder-inited", _generate)
    app.add_lexer("mlir", _mlir_lexer())
