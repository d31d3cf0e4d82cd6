"""No C++ function of lib/ is over 200 lines (scripts/longest_functions.py),
but those its ALLOWED list names (lib/Conversion/TileToGPU/, waiting for
their split), each no longer than listed; no circle of files of
lib/Conversion calls each other (scripts/call_graph.py)."""

import importlib.util
import os
import subprocess
import sys

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "..", "scripts")
SCRIPT = os.path.join(SCRIPTS, "longest_functions.py")
CALL_GRAPH = os.path.join(SCRIPTS, "call_graph.py")


def _script(path=SCRIPT, name="longest_functions"):
    spec = importlib.util.spec_from_file_location(name, path)
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


def test_no_circle_of_files_calling_each_other_in_lib_conversion():
    out = subprocess.run([sys.executable, CALL_GRAPH, "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_call_graph_finds_circles_and_only_circles(tmp_path):
    """Two files calling each other's functions are a circle (so are three
    in a ring); a call through an interface's virtual method, a static
    helper of the same name in two files and a method of the calling file
    are no edge."""
    cg = _script(CALL_GRAPH, "call_graph")
    (tmp_path / "iface.h").write_text(
        "class Iface {\npublic:\n  virtual void run() const = 0;\n};\n"
        "class Impl : public Iface {\npublic:\n  void run() const override;\n};\n")
    (tmp_path / "impl.cpp").write_text(
        "void Impl::run() const { useIt(*this); }\n"
        "static int helper() { return 1; }\n")
    (tmp_path / "user.cpp").write_text(
        "void useIt(const Iface &i) {\n  i.run();\n  helper();\n}\n"
        "static int helper() { return 2; }\n")
    (tmp_path / "a.cpp").write_text("void fromA() { fromB(); }\n")
    (tmp_path / "b.cpp").write_text("void fromB(Lowering &l) {\n  if (x)\n    l.fromC();\n}\n")
    (tmp_path / "c.cpp").write_text("void Lowering::fromC() { fromA(); }\n")
    edges = cg.graph(str(tmp_path), headers=[str(tmp_path / "iface.h")])
    name = {os.path.basename(k): {os.path.basename(v) for v in vs} for k, vs in edges.items()}
    assert name["impl.cpp"] == {"user.cpp"} and name["user.cpp"] == set()
    found = [[os.path.basename(f) for f in comp] for comp in cg.circles(edges)]
    assert found == [["a.cpp", "b.cpp", "c.cpp"]]
    lines = cg.describe(edges, cg.circles(edges)[0])
    assert any("fromA calls fromB" in line for line in lines)
