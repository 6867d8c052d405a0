"""Stack frames of every common format, read from real published examples (source beside each).

Excerpts are quoted verbatim from the address given (indentation as published; a `# format of` note marks
one rebuilt from a format's documentation). Frames come out most recent call last in each stack.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_triage.core.evidence.relate import module_under_test, relate
from ci_triage.core.logs.frames import MAX_PER_STACK, frames_in, repo_relative
from ci_triage.model import ChangedFile, Frame, Relatedness


def frames(text: str) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.function) for f in frames_in(text.splitlines())]


# https://github.com/SouravJohar/gangsta/issues/1
PYTHON = """\
Traceback (most recent call last):
  File "/usr/lib/python3.6/runpy.py", line 183, in _run_module_as_main
    mod_name, mod_spec, code = _get_module_details(mod_name, _Error)
  File "/usr/lib/python3.6/runpy.py", line 109, in _get_module_details
    __import__(pkg_name)
  File "/home/ubuntu/gangsta/server.py", line 24, in <module>
    from_ = item["message"]["from"]["id"]
KeyError: 'message'"""

# A chained traceback as published in a public file (find_string id 51912709795; the index names no
# repository for it): `string_utils/generation.py` raised, the test's handler raised again.
PYTHON_CHAINED = """\
Traceback (most recent call last):
  File "test.py", line 10, in test__roman_range_limit
    output = list(roman_range(3999))
  File "string_utils/generation.py", line 130, in roman_range
    validate(stop, 'stop')
  File "string_utils/generation.py", line 116, in validate
    raise ValueError(msg)
ValueError: "stop" must be an integer in the range 1-3999

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "test.py", line 26, in <module>
    test__roman_range_limit()
  File "test.py", line 16, in test__roman_range_limit
    assert False  # Force fail if there is an exception
AssertionError"""

# https://github.com/martymcenroe/AssemblyZero/issues/2320 (pytest --tb=short, as quoted there)
PYTEST_SHORT = """\
__________________________________ test_t010 __________________________________
...\\tests\\test_issue_7.py:44: in test_t010
    assert False, 'TDD RED: test_t010 not implemented'
E   AssertionError: TDD RED: test_t010 not implemented
E   assert False"""

# pytest long style: https://github.com/pytest-dev/pytest/issues/40 ends its entries with
# `failure_demo.py:281: AssertionError`; the entries before the last end with `path:line: ` (format of
# pytest's ReprFileLocation: the message is the exception's type name on the last entry only).
PYTEST_LONG = """\
    def test_foo():
>       assert helper(3) == 4

tests/test_demo.py:5: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

    def helper(x):
>       raise ValueError(x)
E       ValueError: 3

failure_demo.py:281: AssertionError"""

# https://github.com/ziyanx02/Genesis-backflip/issues/2 (faulthandler: most recent call first, no comma)
FAULTHANDLER = """\
Fatal Python error: Segmentation fault

Current thread 0x00007fa2972464c0 (most recent call first):
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/reward_wrapper.py", line 88 in _reward_feet_air_time
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 498 in compute_reward
  File "/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", line 546 in post_physics_step"""

# https://github.com/sems-server/sems/issues/40 (gdb bt)
GDB = """\
(gdb) bt
#0  0x0000000000588641 in trans_bucket::match_request (this=this@entry=0x7f290c446cf0, msg=msg@entry=0x7f28d5283600, ttype=ttype@entry=1) at trans_table.cpp:127
#1  0x00000000005b0cb6 in _trans_layer::process_rcvd_msg (this=this@entry=0x7f290c417640, msg=msg@entry=0x7f28d5283600) at trans_layer.cpp:1676
#2  0x00000000005b2343 in _trans_layer::received_msg (this=0x7f290c417640, msg=msg@entry=0x7f28d5283600) at trans_layer.cpp:1658
#3  0x0000000000593336 in udp_trsp::run (this=0x7f290c415800) at udp_trsp.cpp:381
#4  0x00000000004a54c5 in AmThread::_start (_t=0x7f290c415800) at AmThread.cpp:75
#5  0x00007f290e555007 in start_thread () from /lib/libpthread.so.0
#6  0x00007f290d09b5cd in clone () from /lib/libc.so.6"""

# https://github.com/IBM/CAST/pull/1001 (gdb: an inlined frame has no address)
GDB_INLINED = """\
#0  0x00007ffff6e88e94 in __strchr_power7 () from /lib64/libc.so.6
#1  0x0000000010022d84 in strstr (__needle=0x10066cc0 "^", __haystack=<optimized out>) at /usr/include/string.h:333
#2  main (orig_argc=<optimized out>, orig_argv=0x7ffffffff148) at /u/meaho/CAST/bb/src/bbcmd.cc:1026"""

# https://github.com/HaxeFoundation/hashlink/issues/104 (AddressSanitizer: access stack, then free stack)
ASAN = """\
==23804==ERROR: AddressSanitizer: heap-use-after-free on address 0x621000001558 at pc 0x000000540633 bp 0x7ffe82724870 sp 0x7ffe82724868
WRITE of size 8 at 0x621000001558 thread T0
    #0 0x540632 in hl_code_read /home/karas/hashlink/src/code.c:458:13
    #1 0x62cd86 in load_code /home/karas/hashlink/src/main.c:65:9
    #2 0x62cd86 in main /home/karas/hashlink/src/main.c:147
    #3 0x7fa18cbd41c0 in __libc_start_main /build/glibc-itYbWN/glibc-2.26/csu/../csu/libc-start.c:308
    #4 0x41bb89 in _start (/home/karas/hashlink/hl+0x41bb89)

0x621000001558 is located 88 bytes inside of 4096-byte region [0x621000001500,0x621000002500)
freed by thread T0 here:
    #0 0x4db860 in __interceptor_free.localalias.0 (/home/karas/hashlink/hl+0x4db860)
    #1 0x7fa18dc10cda in hl_free /home/karas/hashlink/src/alloc.c:967:3"""

# https://github.com/ianlancetaylor/libbacktrace/issues/117 (glibc backtrace_symbols_fd)
GLIBC = """\
BACKTRACE
./testlbt(main+0xb5)[0x402411]"""
# https://github.com/awslabs/aws-c-common/issues/356 (backtrace_symbols, no symbol name, a space)
GLIBC_OFFSET = "/home/bret/projects/crt/aws-c-common/cmake-build-debug/tests/aws-c-common-tests(+0xb5919) [0x55de434f2919]"

# https://github.com/machineonamission/uwd2/issues/12 (Rust >= 1.73 panic message; a Windows path)
RUST_PANIC = """\
thread 'main' panicked at src\\explorer_modinfo.rs:45:14:
called `Option::unwrap()` on a `None` value"""
# https://rust4noobs.pgjbz.dev/intermediary-02/12-panic.html (Rust < 1.73: the message comes first)
RUST_PANIC_OLD = "thread 'main' panicked at 'explicit panic', src/main.rs:2:5"
# https://pastebin.com/uzCXRU8L (RUST_BACKTRACE=1, the pastebin's `- ` list marks removed)
RUST_BACKTRACE = """\
thread 'main' panicked at 'index out of bounds: the len is 9 but the index is 11', /checkout/src/liballoc/vec.rs:1551:10
stack backtrace:
   9: core::panicking::panic_bounds_check
             at libcore/panicking.rs:58
  10: <alloc::vec::Vec<T> as core::ops::index::Index<usize>>::index
             at /checkout/src/liballoc/vec.rs:1551
  11: <rustland::layout::policy::auto_circulation::AutoCirculation as rustland::layout::policy::LayoutPolicy>::seat_window
             at src/rustland/layout/policy/auto_circulation.rs:63
  12: <rustland::compositor::Compositor as wlc::Callback>::view_created
             at src/rustland/compositor.rs:88"""
# format of the Rust book, ch09-01 (`at ./src/main.rs:4:6` frames; toolchain frames under /rustc/<hash>/)
RUST_BOOK = """\
thread 'main' panicked at src/main.rs:4:6:
index out of bounds: the len is 3 but the index is 99
stack backtrace:
   0: rust_begin_unwind
             at /rustc/f6e511eec7342f59a25f7c0534f1dbea00d01b14/library/std/src/panicking.rs:662:5
   6: panic::main
             at ./src/main.rs:4:6"""

# https://github.com/bcicen/grmon/issues/8 (Go panic)
GO_PANIC = """\
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x28 pc=0x1385f7c]

goroutine 1 [running]:
main.ReadRoutines(0xc000228000, 0xa1, 0x200, 0x10, 0xff, 0x0, 0x0, 0x0)
\t/Users/me/go/src/github.com/bcicen/grmon/parse.go:76 +0x19c
main.poll(0x105a2f0, 0x0, 0xc0000f9ec0, 0xc0001ae000, 0x0)
\t/Users/me/go/src/github.com/bcicen/grmon/client.go:38 +0x17c
main.Refresh()
\t/Users/me/go/src/github.com/bcicen/grmon/main.go:38 +0x26"""
# https://github.com/fiatjaf/njump/issues/65 (a container mount: /app/)
GO_CONTAINER = """\
goroutine 1 [running]:
main.main()
    /app/main.go:69 +0x1af"""
# format of `go test` (testing.T.Errorf prints the test file's base name and line, indented)
GO_TEST = """\
--- FAIL: TestParse (0.00s)
    parser_test.go:17: got 1, want 2
FAIL"""

# https://github.com/DevTokyoVx/nazuna/issues/119 (Node) and https://github.com/canjs/can-compile/issues/15
NODE = """\
Stack: TypeError: Cannot read properties of undefined (reading 'msg')
    at NazuninhaBotExec (/home/container/dados/src/index.js:84:200)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)"""
NODE_ANONYMOUS = """\
TypeError: Cannot read property 'view' of undefined
    at /home/aljosa/tmp/tmp1/node_modules/can-compile/lib/compile.js:55:17
    at /home/aljosa/tmp/tmp1/node_modules/can-compile/lib/compile.js:20:9"""
# https://github.com/raxjs/miniapp/issues/319 (Node on Windows)
NODE_WINDOWS = """\
    at getReplacer (C:\\Users\\HP\\IdeaProjects\\web-framework\\node_modules\\jsx-compiler\\src\\modules\\code.js:472:27)
    at Object.<anonymous> (C:\\Users\\HP\\IdeaProjects\\web-framework\\index.js:99:13)
    at Module._compile (node:internal/modules/cjs/loader:1275:14)"""

# https://github.com/JesusFreke/smali/issues/537 (Java, JUnit)
JAVA = """\
Caused by: java.lang.AssertionError: expected:<6> but was:<3>
\tat org.junit.Assert.fail(Assert.java:88)
\tat org.junit.Assert.failNotEquals(Assert.java:834)
\tat org.jf.smalidea.dexlib.SmalideaMethodTest.checkSwitchElement(SmalideaMethodTest.java:373)
\tat org.jf.smalidea.dexlib.SmalideaMethodTest.testPackedSwitch(SmalideaMethodTest.java:431)"""
# https://github.com/cmusphinx/sphinx4/issues/95 (a native frame names no line)
JAVA_NATIVE = """\
         at edu.cmu.sphinx.result.LatticeCompTest.testLatticeComp(LatticeCompTest.java:83)
         at sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)"""
# format of a JVM stack trace from Kotlin code (file names end in .kt, `MainKt` is the file's class)
KOTLIN = """\
Exception in thread "main" java.lang.IllegalStateException: empty
\tat com.example.cli.MainKt.parse(Main.kt:12)
\tat com.example.cli.MainKt.main(Main.kt:5)"""


@pytest.mark.parametrize("text, expected", [
    (PYTHON, [("/usr/lib/python3.6/runpy.py", 183, "_run_module_as_main"),
              ("/usr/lib/python3.6/runpy.py", 109, "_get_module_details"),
              ("/home/ubuntu/gangsta/server.py", 24, "<module>")]),
    (PYTEST_SHORT, [(".../tests/test_issue_7.py", 44, "test_t010")]),
    (PYTEST_LONG, [("tests/test_demo.py", 5, ""), ("failure_demo.py", 281, "")]),
    (FAULTHANDLER, [("/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", 546, "post_physics_step"),
                    ("/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/env.py", 498, "compute_reward"),
                    ("/home/ubuntu/Genesis/examples/locomotion/Genesis-backflip/reward_wrapper.py", 88,
                     "_reward_feet_air_time")]),
    (GDB, [("AmThread.cpp", 75, "AmThread::_start"), ("udp_trsp.cpp", 381, "udp_trsp::run"),
           ("trans_layer.cpp", 1658, "_trans_layer::received_msg"),
           ("trans_layer.cpp", 1676, "_trans_layer::process_rcvd_msg"),
           ("trans_table.cpp", 127, "trans_bucket::match_request")]),
    (GDB_INLINED, [("/u/meaho/CAST/bb/src/bbcmd.cc", 1026, "main"), ("/usr/include/string.h", 333, "strstr")]),
    (GLIBC, [("testlbt", 0, "main")]),
    (GLIBC_OFFSET, [("/home/bret/projects/crt/aws-c-common/cmake-build-debug/tests/aws-c-common-tests", 0, "")]),
    (RUST_PANIC, [("src/explorer_modinfo.rs", 45, "panic")]),
    (RUST_PANIC_OLD, [("src/main.rs", 2, "panic")]),
    (RUST_BOOK, [("src/main.rs", 4, "panic::main"),
                 ("/rustc/f6e511eec7342f59a25f7c0534f1dbea00d01b14/library/std/src/panicking.rs", 662,
                  "rust_begin_unwind"),
                 ("src/main.rs", 4, "panic")]),
    (GO_PANIC, [("/Users/me/go/src/github.com/bcicen/grmon/main.go", 38, "main.Refresh"),
                ("/Users/me/go/src/github.com/bcicen/grmon/client.go", 38, "main.poll"),
                ("/Users/me/go/src/github.com/bcicen/grmon/parse.go", 76, "main.ReadRoutines")]),
    (GO_CONTAINER, [("main.go", 69, "main.main")]),
    (GO_TEST, [("parser_test.go", 17, "")]),
    (NODE, [("node:internal/process/task_queues", 95, "process.processTicksAndRejections"),
            ("/home/container/dados/src/index.js", 84, "NazuninhaBotExec")]),
    (NODE_ANONYMOUS, [("/home/aljosa/tmp/tmp1/node_modules/can-compile/lib/compile.js", 20, ""),
                      ("/home/aljosa/tmp/tmp1/node_modules/can-compile/lib/compile.js", 55, "")]),
    (NODE_WINDOWS, [("node:internal/modules/cjs/loader", 1275, "Module._compile"),
                    ("C:/Users/HP/IdeaProjects/web-framework/index.js", 99, "Object.<anonymous>"),
                    ("C:/Users/HP/IdeaProjects/web-framework/node_modules/jsx-compiler/src/modules/code.js", 472,
                     "getReplacer")]),
    (JAVA, [("org/jf/smalidea/dexlib/SmalideaMethodTest.java", 431,
             "org.jf.smalidea.dexlib.SmalideaMethodTest.testPackedSwitch"),
            ("org/jf/smalidea/dexlib/SmalideaMethodTest.java", 373,
             "org.jf.smalidea.dexlib.SmalideaMethodTest.checkSwitchElement"),
            ("org/junit/Assert.java", 834, "org.junit.Assert.failNotEquals"),
            ("org/junit/Assert.java", 88, "org.junit.Assert.fail")]),
    (JAVA_NATIVE, [("edu/cmu/sphinx/result/LatticeCompTest.java", 83,
                    "edu.cmu.sphinx.result.LatticeCompTest.testLatticeComp")]),
    (KOTLIN, [("com/example/cli/Main.kt", 5, "com.example.cli.MainKt.main"),
              ("com/example/cli/Main.kt", 12, "com.example.cli.MainKt.parse")]),
], ids=["python", "pytest-short", "pytest-long", "faulthandler", "gdb", "gdb-inlined", "glibc", "glibc-offset",
        "rust-panic", "rust-panic-old", "rust-backtrace-book", "go-panic", "go-container", "go-test", "node",
        "node-anonymous", "node-windows", "java", "java-native", "kotlin"])
def test_frames_of_each_format(text, expected):
    assert frames(text) == expected


def test_a_chained_python_exception_keeps_both_tracebacks_as_two_stacks():
    found = frames_in(PYTHON_CHAINED.splitlines())
    assert [(f.path, f.line, f.stack) for f in found] == [
        ("test.py", 10, 0), ("string_utils/generation.py", 130, 0), ("string_utils/generation.py", 116, 0),
        ("test.py", 26, 1), ("test.py", 16, 1)]


def test_a_sanitizer_report_keeps_its_access_and_free_stacks_apart():
    found = frames_in(ASAN.splitlines())
    access = [(f.path, f.line) for f in found if f.stack == 0]
    freed = [(f.path, f.line) for f in found if f.stack == 1]
    assert access[-1] == ("/home/karas/hashlink/src/code.c", 458)  # the innermost frame, last
    assert ("/home/karas/hashlink/src/main.c", 147) in access
    assert freed == [("/home/karas/hashlink/src/alloc.c", 967)]


def test_rust_backtrace_frames_take_the_function_from_the_line_before():
    found = frames(RUST_BACKTRACE)
    assert ("src/rustland/layout/policy/auto_circulation.rs", 63,
            "<rustland::layout::policy::auto_circulation::AutoCirculation as "
            "rustland::layout::policy::LayoutPolicy>::seat_window") in found
    assert found[-1] == ("/checkout/src/liballoc/vec.rs", 1551, "panic")


@pytest.mark.parametrize("path, expected", [
    ("/home/runner/work/repo/repo/pkg/mod.py", ("pkg/mod.py", None)),
    ("/Users/runner/work/repo/repo/pkg/mod.py", ("pkg/mod.py", None)),
    ("/__w/repo/repo/pkg/mod.py", ("pkg/mod.py", None)),
    ("/home/ci/actions-runner/_work/repo/repo/src/x.rs", ("src/x.rs", None)),
    ("D:\\a\\repo\\repo\\src\\index.js", ("src/index.js", None)),
    ("C:\\a\\repo\\repo\\pkg\\mod.py", ("pkg/mod.py", None)),
    ("/workspace/pkg/mod.py", ("pkg/mod.py", None)),
    ("/app/main.go", ("main.go", None)),
    ("/src/lib/x.cc", ("lib/x.cc", None)),
    ("./src/main.rs", ("src/main.rs", None)),
    ("/opt/py/lib/python3.11/site-packages/vllm/engine/llm_engine.py", ("vllm/engine/llm_engine.py", "vllm")),
    # tests/corpus/excerpts/network-a03.log: a virtualenv inside the checkout is third-party code
    ("/home/runner/work/dimos/dimos/.venv/lib/python3.12/site-packages/huggingface_hub/file_download.py",
     ("huggingface_hub/file_download.py", "huggingface_hub")),
    ("/usr/lib/python3/dist-packages/yaml/__init__.py", ("yaml/__init__.py", "yaml")),
    ("/rustc/f6e511eec7342f59a25f7c0534f1dbea00d01b14/library/std/src/panicking.rs",
     ("/rustc/f6e511eec7342f59a25f7c0534f1dbea00d01b14/library/std/src/panicking.rs", "std")),
    ("/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.38.0/src/runtime/park.rs",
     ("/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/tokio-1.38.0/src/runtime/park.rs", "tokio-1.38.0")),
    ("/home/runner/go/pkg/mod/github.com/stretchr/testify@v1.9.0/assert/assertions.go",
     ("/home/runner/go/pkg/mod/github.com/stretchr/testify@v1.9.0/assert/assertions.go", "github.com/stretchr/testify")),
    ("/usr/local/go/src/runtime/panic.go", ("/usr/local/go/src/runtime/panic.go", "runtime")),
    ("node:internal/modules/cjs/loader", ("node:internal/modules/cjs/loader", "internal")),
    ("/lib/x86_64-linux-gnu/libc.so.6", ("/lib/x86_64-linux-gnu/libc.so.6", "libc.so.6")),
    ("/somewhere/else.py", ("/somewhere/else.py", None)),
])
def test_paths_become_repository_relative(path, expected):
    assert repo_relative(path) == expected


def changed(*names: str) -> tuple[ChangedFile, ...]:
    return tuple(ChangedFile(name, "modified", 1, 1) for name in names)


@pytest.mark.parametrize("text, files, decided_by", [
    (GO_CONTAINER, ("main.go",), "frame main.go:69 in main.main"),
    (GO_PANIC, ("client.go", "README.md"), "frame /Users/me/go/src/github.com/bcicen/grmon/client.go:38 in main.poll"),
    (GDB_INLINED, ("bb/src/bbcmd.cc",), "frame /u/meaho/CAST/bb/src/bbcmd.cc:1026 in main"),
    (ASAN, ("src/code.c", "src/alloc.c"), "frame /home/karas/hashlink/src/code.c:458 in hl_code_read"),
    (RUST_BOOK, ("src/main.rs",), "frame src/main.rs:4 in panic"),
    (NODE, ("src/index.js",), "frame /home/container/dados/src/index.js:84 in NazuninhaBotExec"),
    (JAVA, ("smalidea/src/test/java/org/jf/smalidea/dexlib/SmalideaMethodTest.java",),
     "frame org/jf/smalidea/dexlib/SmalideaMethodTest.java:373 in "
     "org.jf.smalidea.dexlib.SmalideaMethodTest.checkSwitchElement"),
    (KOTLIN, ("cli/src/main/kotlin/com/example/cli/Main.kt",), "frame com/example/cli/Main.kt:12 in com.example.cli.MainKt.parse"),
    (PYTHON_CHAINED, ("string_utils/generation.py",), "frame string_utils/generation.py:116 in validate"),
])
def test_a_stack_through_a_changed_file_is_related_and_names_its_frame(text, files, decided_by):
    relation = relate("build", frames_in(text.splitlines()), (), changed(*files))
    assert relation.relatedness is Relatedness.RELATED
    assert relation.decided_by == decided_by


def test_third_party_frames_are_not_the_repositorys_files():
    # A dependency's file of the same name is not the changed one; node_modules, the toolchain, libc.
    for text, files in ((NODE_ANONYMOUS, ("lib/compile.js",)), (RUST_BOOK, ("library/std/src/panicking.rs",)),
                        (GDB, ("libc.so.6",))):
        assert relate("build", frames_in(text.splitlines()), (), changed(*files)).relatedness is Relatedness.UNRELATED


def test_an_installed_copy_of_the_repositorys_package_is_the_repository_file():
    site = "/opt/conda/lib/python3.12/site-packages"
    stack = (Frame("pkg/sampling/top_p.py", 22, "top_p_filter", "pkg"), Frame("torch/nn/x.py", 1, "f", "torch"))
    assert repo_relative(f"{site}/pkg/sampling/top_p.py") == ("pkg/sampling/top_p.py", "pkg")
    for layout in ("pkg/sampling/top_p.py", "src/pkg/sampling/top_p.py"):
        relation = relate("tests", stack, (), changed(layout))
        assert relation == (Relatedness.RELATED, (layout,), "frame pkg/sampling/top_p.py:22 in top_p_filter")
    assert relate("tests", stack, (), changed("torch_utils/nn/x.py")).relatedness is Relatedness.UNRELATED


@pytest.mark.parametrize("test_file, files, expected", [
    ("tests/test_top_p.py::test_keeps_top_token", ("pkg/sampling/top_p.py",),
     "failing test tests/test_top_p.py tests pkg/sampling/top_p.py"),
    ("tests/unit/top_p_test.py::test_a", ("pkg/sampling/top_p.py",),
     "failing test tests/unit/top_p_test.py tests pkg/sampling/top_p.py"),
    ("tests/test_top_p.py::test_a", ("tests/test_top_p.py",), "failing test file tests/test_top_p.py"),
])
def test_a_failing_test_whose_file_or_module_under_test_changed_is_related(test_file, files, expected):
    relation = relate("tests", (), (test_file,), changed(*files))
    assert relation.relatedness is Relatedness.RELATED and relation.decided_by == expected


def test_go_tests_map_to_the_source_beside_them():
    found = frames_in(GO_TEST.splitlines())
    assert relate("go", found, ("TestParse",), changed("internal/parser/parser.go")).decided_by == (
        "failing test parser_test.go tests internal/parser/parser.go")
    # With a directory, the source must sit in the same one.
    stack = (Frame("internal/parser/parser_test.go", 17, ""),)
    assert relate("go", stack, (), changed("internal/lexer/parser.go")).relatedness is Relatedness.UNRELATED
    assert relate("go", stack, (), changed("internal/parser/parser.go")).relatedness is Relatedness.RELATED


@pytest.mark.parametrize("test_path, expected", [
    ("tests/test_top_p.py", ("", ("top_p.py",))),
    ("pkg/x_test.go", ("pkg", ("x.go",))),
    ("src/ui/button.test.tsx", ("", ("button.js", "button.jsx", "button.ts", "button.tsx", "button.mjs", "button.cjs"))),
    ("src/test/java/com/x/FooTest.java", ("", ("Foo.java", "Foo.kt"))),
    ("tests/conftest.py", None),
    ("pkg/sampling/top_p.py", None),
])
def test_module_under_test_by_name(test_path, expected):
    assert module_under_test(test_path) == expected


def test_an_unrelated_test_failure_stays_unrelated():
    assert relate("tests", (), ("tests/test_top_k.py::test_a",), changed("pkg/sampling/top_p.py")) == (
        Relatedness.UNRELATED, (), None)


def test_pytest_warnings_and_linter_lines_are_not_frames():
    text = ("  /home/runner/work/r/r/pkg/x.py:12: DeprecationWarning: old\n"
            "pkg/x.py:12: DeprecationWarning\n"
            "pkg/x.py:12: error: Incompatible types in assignment  [assignment]\n"
            "pkg/x.py:12:5: E501 line too long\n")
    assert frames(text) == []


def test_a_long_stack_keeps_its_innermost_frames():
    text = "\n".join(f"    at com.x.Deep.f{i}(Deep.java:{i + 1})" for i in range(500))
    found = frames_in(text.splitlines())
    assert len(found) == MAX_PER_STACK
    assert found[-1].line == 1  # the innermost (printed first) frame is kept, last


def test_reading_is_linear_on_hostile_lines():
    # Long lines made of the characters the patterns look for: no pattern backtracks on them.
    hostile = ["#1 " + "0x1 in (" * 20_000, "    at " + "a (" * 20_000 + "x.js:1:1)",
               'File "' + '"' * 50_000 + '", line 1, in f', "x.py:" * 30_000, "\t" + "a.go:1 " * 20_000]
    started = time.perf_counter()
    frames_in(hostile * 40)
    assert time.perf_counter() - started < 5


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list('#0x in()at :/.\\"File,line+-_aZ9\t')), max_size=120),
                max_size=40))
def test_any_text_gives_well_formed_frames(lines):
    for frame in frames_in(lines):
        assert isinstance(frame.path, str) and frame.line >= 0 and 0 <= frame.stack
