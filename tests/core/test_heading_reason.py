"""A CMake or webpack heading names the reason printed under it; javac's -Werror verdict names its first warning."""

from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.logparse import parse_log
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import builtin_rules

STAMP = "2026-12-06T19:40:00.0000000Z "
# output of cmake 3.25.1 on a project's own message(FATAL_ERROR), generated on this machine (sweep s13d), in an Actions step
CMAKE = [
    "##[group]Run cmake -S . -B build -DBACKEND=opengl",
    "cmake -S . -B build -DBACKEND=opengl",
    "##[endgroup]",
    "-- The C compiler identification is GNU 12.2.0",
    "-- Detecting C compile features - done",
    "CMake Error at CMakeLists.txt:5 (message):",
    "  Unsupported BACKEND=opengl; choose vulkan or metal",
    "",
    "",
    "-- Configuring incomplete, errors occurred!",
    'See also "/home/runner/work/app/app/build/CMakeFiles/CMakeOutput.log".',
    "##[error]Process completed with exit code 1.",
]
# output of webpack 5.113.0 on a JS syntax error, generated on this machine (sweep s13d)
WEBPACK = [
    "##[group]Run npx webpack --mode production",
    "npx webpack --mode production",
    "##[endgroup]",
    "./src/math.js 47 bytes [built] [code generated] [1 error]",
    "",
    "ERROR in ./src/math.js 2:12",
    "Module parse failed: Unexpected token (2:12)",
    "File was parsed as module type 'javascript/auto'.",
    "> 2 |   return a +* b;",
    "",
    "webpack 5.113.0 compiled with 1 error in 250 ms",
    "##[error]Process completed with exit code 1.",
]
# output of javac 17.0.15 -Xlint:all -Werror, generated on this machine (sweep s13d)
JAVAC = [
    "##[group]Run javac -Xlint:all -Werror -d out src/Main.java",
    "javac -Xlint:all -Werror -d out src/Main.java",
    "##[endgroup]",
    "src/Main.java:5: warning: [rawtypes] found raw type: List",
    "        List names = new ArrayList();",
    "        ^",
    "  missing type arguments for generic class List<E>",
    "src/Main.java:6: warning: [unchecked] unchecked call to add(E) as a member of the raw type List",
    "        names.add(\"a\");",
    "                 ^",
    "error: warnings found and -Werror specified",
    "1 error",
    "2 warnings",
    "##[error]Process completed with exit code 1.",
]


def _both(lines: list[str]):
    raw = "".join(STAMP + line + "\n" for line in lines)
    rules = builtin_rules()
    return classify(list(parse_log(raw)), rules), classify(relevant_lines(raw.encode(), rules), rules)


def test_cmake_heading_names_the_message_under_it():
    for result in _both(CMAKE):
        assert result.category == "compile_error"
        assert result.root_cause.line == 7
        assert result.root_cause.text == "  Unsupported BACKEND=opengl; choose vulkan or metal"


def test_webpack_heading_names_the_error_message_under_it():
    for result in _both(WEBPACK):
        assert result.category == "compile_error"
        assert result.root_cause.line == 7
        assert result.root_cause.text.startswith("Module parse failed: Unexpected token")


def test_javac_werror_verdict_names_the_first_warning():
    for result in _both(JAVAC):
        assert result.category == "compile_error"
        assert result.root_cause.line == 4
        assert result.root_cause.text.startswith("src/Main.java:5: warning: [rawtypes]")


def test_a_heading_with_nothing_under_it_stays_the_root_cause():
    # a paste that kept only the heading (then the CI's exit line): no reason to name
    for result in _both(["CMake Error at CMakeLists.txt:5 (message):", "##[error]Process completed with exit code 1."]):
        assert result.root_cause.line == 1
    for result in _both(["error: warnings found and -Werror specified", "##[error]Process completed with exit code 1."]):
        assert result.root_cause.line == 1


def test_a_loaders_wrapper_under_the_webpack_heading_gives_way_to_the_loaders_error():
    # format of webpack 5 over a loader's failure (its stats printer's heading, NormalModule's ModuleBuildError)
    lines = ["ERROR in ./src/app.ts 3:4", "Module build failed (from ./node_modules/ts-loader/index.js):",
             "Error: TypeScript emitted no output for /home/runner/work/app/app/src/app.ts.",
             "webpack 5.113.0 compiled with 1 error in 250 ms", "##[error]Process completed with exit code 1."]
    for result in _both(lines):
        assert result.root_cause.line == 3


def test_rpmbuilds_failed_source_download_names_curls_answer():
    # output of rpmbuild 4.18.0 --undefine=_disable_source_fetch, generated on this machine (sweep s13d)
    lines = ["$ rpmbuild --undefine=_disable_source_fetch -bs python-tinyq.spec",
             "warning: Downloading https://files.pythonhosted.org/packages/source/t/tinyq/tinyq-9.9.9.tar.gz to "
             "/builds/acme/tinyq/rpmbuild/SOURCES/tinyq-9.9.9.tar.gz",
             "curl: (22) The requested URL returned error: 404",
             "error: Couldn't download https://files.pythonhosted.org/packages/source/t/tinyq/tinyq-9.9.9.tar.gz",
             "ERROR: Job failed: exit code 1"]
    for result in _both(lines):
        assert result.category == "dependency"
        assert result.rule_id == "package-source-download-failed"
        assert result.root_cause.line == 3
