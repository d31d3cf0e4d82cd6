"""No C++ function of lib/ is over 200 lines (scripts/longest_functions.py),
but those its ALLOWED list names (lib/Conversion/TileToGPU/, waiting for
their split), each no longer than listed."""

import importlib.util
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "longest_functions.py")


def _script():
    spec = importlib.util.spec_from_file_location("longest_functions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_function_in_lib_is_over_the_limit():
    out = subprocess.run([sys.executable, SCRIPT, "--check", "--top", "5"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_allow_list_is_only_tilegpu_and_the_limit_is_200():
    lf = _script()
    assert lf.LIMIT == 200
    assert all(path.startswith("lib/Conversion/TileToGPU/") for path, _ in lf.ALLOWED)


def test_the_reader_measures_functions(tmp_path):
    """Comments, strings, lambdas, classes and namespaces are read right, and
    a long function, a grown allowed one and a stale entry are reported."""
    lf = _script()
    body = "\n".join(f"  x += {i};" for i in range(250))
    src = tmp_path / "a.cpp"
    src.write_text(
        "namespace n {\n"
        "// void fake() {\n"
        "struct S {\n"
        "  int get() const { return 1; }\n"
        "};\n"
        "static const char *s = \"{ not a brace\";\n"
        "int Long::run(int a,\n"
        "              int b) {\n"
        "  auto f = [&](int y) { return y; };\n"
        "  int x = '{';\n"
        f"{body}\n"
        "  return x;\n"
        "}\n"
        "} // namespace n\n")
    funcs = {f.name: f for f in lf.functions(str(src))}
    assert set(funcs) == {"get", "Long::run"}
    assert funcs["get"].lines == 1
    assert funcs["Long::run"].line == 7 and funcs["Long::run"].lines == 256
    rel = funcs["Long::run"].path
    assert any("Long::run has 256 lines (limit 200)" in p for p in lf.violations(list(funcs.values())))
    lf.ALLOWED = {(rel, "Long::run"): 255, ("gone.cpp", "f"): 10}
    problems = lf.violations(list(funcs.values()))
    assert any("more than the 255 it is allowed" in p for p in problems)
    assert any("gone.cpp: f is in ALLOWED but no longer found" in p for p in problems)
    lf.ALLOWED = {(rel, "Long::run"): 256}
    assert lf.violations(list(funcs.values())) == []
