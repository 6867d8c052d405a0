"""Scoring the classifier on the labelled corpus (tests/corpus): shared by tests/test_corpus.py and
benchmarks/classify_accuracy.py, so the test and the printed figures can never disagree.

An excerpt is classified exactly as a job log is: the bytes go through the fast matcher's candidate
selection (`relevant_lines`) and then `classify`, the same path `ci-triage classify` and the report take.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ci_triage.core.categories import CATEGORIES, NEVER_RETRYABLE
from ci_triage.core.logs.classify import classify
from ci_triage.core.logs.matcher import relevant_lines
from ci_triage.core.logs.rules import RuleSet, builtin_rules
from ci_triage.model import Classification

CORPUS = Path(__file__).parent / "corpus"
SPLITS = ("tune", "test")
# The corpus labels with the classifier's own categories.
LABEL_CATEGORIES = CATEGORIES
# Failures of the code: an excerpt of these called retryable would waste a runner on a rerun that
# cannot pass. A dependency failure is the exception only when the package index was unreachable.
CODE_CATEGORIES = NEVER_RETRYABLE
# The split rule (README "The split"): the first corpus's 76 excerpts (named `<category>-NN.log`) and their
# repositories are `tune`; any other repository is `test` when sha256 of its lowercased owner/name starts
# below 0xa0. The one exception: repositories a rule writer has seen (a rule file cites one of their
# threads, or a rule writer's searches surfaced them) are `tune` whatever their hash, because a held-out
# figure measured on logs the rules' authors read is not held out. Lowercased owner/name, with the reason.
FIRST_CORPUS_FILE = re.compile(r"[a-z_]+-\d\d\.log")
TEST_HASH_BELOW = 0xA0
CONTAMINATED = {
    "databiosphere/azul": "cited in rules/builtin/10-runner.toml (issue 7026, a GitLab step_script timeout)",
    "adoptium/temurin-build": "cited in rules/builtin/10-runner.toml (issue 1450, a Jenkins JNLP channel loss)",
    "nodejs/build": "cited in rules/builtin/10-runner.toml (Jenkins agent and timeout threads)",
    "azure/azure-sdk-for-python": "its agent-lost thread surfaced in a rule writer's searches",
    "dotnet/corefx": "its crash thread surfaced in a rule writer's searches",
    "kostyasha/yet-another-docker-plugin": "its thread surfaced in a rule writer's searches",
    "scala/scala-jenkins-infra": "its thread surfaced in a rule writer's searches",
    "robotlocomotion/drake": "its timeout thread surfaced in a rule writer's searches",
    "nspcc-dev/neo-go": "its CircleCI no-output timeout surfaced in a rule writer's searches",
    "sgl-project/sglang": "its thread surfaced in a rule writer's searches",
    "cirruslabs/cirrus-ci-docs": "its threads surfaced in a rule writer's searches (issue 10 item 2, Cirrus CI agent and instance failures)",
    "podman-container-tools/podman": "its threads surfaced in a rule writer's searches (issue 10 item 2, Cirrus CI agent-stopped-responding flakes)",
    "actions/actions-runner-controller": "its threads surfaced in a rule writer's searches (issue 10 item 2, lost-communication errors)",
    "jetbrains/teamcity-kubernetes-plugin": "its threads surfaced in a rule writer's searches (issue 10 item 2, TeamCity agent problems)",
    "microsoft/bringing-old-photos-back-to-life": "found by the rules helper's searches (issue 10 item 2); its excerpt was added to tune",
    "clima/climacoupler.jl": "found by the rules helper's searches (issue 10 item 2); its excerpt was added to tune",
    "yandex-qatools/teamcity-openstack-plugin": "found by the rules helper's searches (issue 10 item 2); its excerpt was added to tune",
    "relf/pydoe3": "a rule writer's grep of labels.toml printed its excerpt's note (issue 10 item 2, second round)",
    "libratbag/piper": "a rule writer's grep of labels.toml printed its excerpt's note (issue 10 item 2, second round)",
    "ascend/pytorch": "a rule writer's code search showed its troubleshooting docs (issue 10 item 2, third round)",
    "oceanntwt/ra-isf": "a rule writer's issue search showed its thread (issue 10 item 2, third round)",
    "astral-sh/ruff": "a rule writer's searches showed its pull request and its crate's docs (issue 10 item 2, third round)",
    "lowlighter/metrics": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "jenkinsci/jenkins": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "brianchandotcom/liferay-portal": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "devcontainers/template-starter": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "espressosystems/cape": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "whitelok/watermark-remover": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "microsoft/templatestudio": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "azure/azure-sdk-for-js": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "elucideye/drishti": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "microsoft/vso-agent": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "dotnet/runtime": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "ungoogled-software/ungoogled-chromium-macos": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, infra sweep)",
    "rwth-i6/returnn": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "stellar/stellar-core": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "rocm/hip": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "apache/tvm": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "deepspeedai/deepspeed": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "nvidia/nccl-tests": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "uswds/uswds": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "coveragepy/coveragepy": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "spine-tools/spine-toolbox": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "modelscope/ms-swift": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "fudan-generative-vision/hallo": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "timescale/tobs": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "facebookresearch/metaseq": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "nvidia/fuser": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "tensorflow/tensorflow": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "apache/mxnet": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "zsoldosp/django-performance-testing": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "cair/tmu": "a rule writer's search results showed its thread as a snippet (issue 10 item 2, device/crash/build sweep)",
    "apache/datafusion-comet": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "apache/pulsar": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "azure/mlops-v2": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "bigbluebutton/bigbluebutton": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "c0untfloyd/roop-unleashed": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "cannylab/tsne-cuda": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "cflint/cflint": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "darkflameuniverse/darkflameserver": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "dask/distributed": "its test labels and notes were printed by rule writers' tail of labels.toml (issue 10 sweeps, 2026-12-04)",
    "devtron-labs/devtron": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "docker/build-push-action": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "dusty-nv/jetson-inference": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "elektrainitiative/libelektra": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "espressomd/espresso": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "facebookresearch/detectron2": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "falcosecurity/falcosidekick": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "fedosejev/react-essentials": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "foundationvision/vnext": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "huggingface/accelerate": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "ibis-project/ibis-bigquery": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "jeanpaiva42/jest-an-issue": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "krzema12/kotlin-python": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "lllyasviel/framepack": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "marbl/canu": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "marin-community/levanter": "its test labels and notes were printed by rule writers' tail of labels.toml (issue 10 sweeps, 2026-12-04)",
    "microsoft/azure-pipelines-tasks": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "microsoft/vcpkg": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "microsoft/winappcli": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "mp3guy/icpcuda": "its test labels and notes were printed by rule writers' tail of labels.toml (issue 10 sweeps, 2026-12-04)",
    "nagadit/deepfacelab_linux": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "nodejs/node": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "nvidia/nvidia-container-toolkit": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "nvidia/nvidia-docker": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "postlight/ci-failed-test-reporter": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "pyg-team/pytorch_geometric": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "pypa/pip": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "python-poetry/poetry": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "python/mypy": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "rust-lang/cargo": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "rust-lang/simpleinfra": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "scylladb/scylla-cluster-tests": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "smartprocure/futil-js": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "suse/susemanager-ci": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "tenstorrent/tt-metal": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "terraform-google-modules/terraform-google-gke-gitlab": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "tikv/tikv": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "unslothai/unsloth": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "vllm-project/afd-plugin": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "yadgah/yadgah": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "zettaai/zetta_utils": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "zsoldosp/django-act-as-auth": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-04)",
    "anduril/jetpack-nixos": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "argoproj/argo-workflows": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "avarok-cybersecurity/dgx-vllm": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "buildkite/agent": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "bvlc/caffe": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "clickhouse/clickhouse": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "dimagi/commcare-hq": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "docker/for-linux": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "eosio/eos": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "galoisinc/crucible": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "gojekfarm/probed": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "google-deepmind/alphafold": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "googlecloudplatform/cloud-builders": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "hoytech/strfry": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "huggingface/smolagents": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "hw-native-sys/ptoas": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "intel/torch-xpu-ops": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "kiegroup/droolsjbpm-build-bootstrap": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "kubernetes-sigs/headlamp": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "lllyasviel/fooocus": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "microsoft/pai": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "modelcontextprotocol/csharp-sdk": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "modelscope/funasr": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "nvidia/nvsentinel": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "openbmc/openbmc": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "patrickbryant1/afprofile": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "peterande/d-fine": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "pku-yuangroup/open-sora-plan": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "pypa/cibuildwheel": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "r-hub/rhub": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "rocm/therock": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "rubocop/rubocop": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "thu-ml/tianshou": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "torch/cutorch": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "uzh-rpg/rpg_open_remode": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "vscodenpa/testissues": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "yuzu-emu/yuzu": "a rule writer's search results showed its thread as a snippet (issue 10 sweeps, 2026-12-05)",
    "0jc1/py-autovod": "a rule writer's grep over the excerpts printed lines of its test excerpt (issue 10, 2026-12-05)",
    "dyrnq/install-docker": "a rule writer's grep over the excerpts printed lines of its test excerpt (issue 10, 2026-12-05)",
    "nvidia-nemo/rl": "an accelerator sweep's code search (find_string) showed a snippet that looked like a quote of one of its "
                      "threads (issue 10, sweep s10b, 2026-12-06); no rule was written from it",
}


@dataclass(frozen=True)
class Excerpt:
    file: str
    category: str
    root_cause_line: int
    split: str
    repository: str
    source: str
    note: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Scored:
    excerpt: Excerpt
    result: Classification

    @property
    def root_line(self) -> int | None:
        return self.result.root_cause.line if self.result.root_cause else None

    @property
    def category_ok(self) -> bool:
        return self.result.category == self.excerpt.category

    @property
    def root_ok(self) -> bool:
        return self.root_line == self.excerpt.root_cause_line

    @property
    def wrongly_retryable(self) -> bool:
        return (self.excerpt.category in CODE_CATEGORIES and self.result.retryable
                and "index_unreachable" not in self.excerpt.tags)


def load_labels() -> list[Excerpt]:
    document = tomllib.loads((CORPUS / "labels.toml").read_text(encoding="utf-8"))
    return [Excerpt(e["file"], e["category"], e["root_cause_line"], e["split"], e["repository"], e["source"],
                    e["note"], tuple(e.get("tags", ()))) for e in document["excerpt"]]


def expected_split(repository: str, first_corpus_repositories: set[str]) -> str:
    """The split the README's rule gives a repository (owner/name, any case)."""
    name = repository.lower()
    if name in first_corpus_repositories or name in CONTAMINATED:
        return "tune"
    return "test" if int(hashlib.sha256(name.encode()).hexdigest()[:2], 16) < TEST_HASH_BELOW else "tune"


def first_corpus_repositories(excerpts: list[Excerpt]) -> set[str]:
    return {e.repository.lower() for e in excerpts if FIRST_CORPUS_FILE.fullmatch(e.file)}


def score(excerpts: list[Excerpt], rules: RuleSet | None = None, directory: Path = CORPUS / "excerpts") -> list[Scored]:
    rule_set = rules or builtin_rules()
    scored = []
    for excerpt in excerpts:
        raw = (directory / excerpt.file).read_bytes()
        scored.append(Scored(excerpt, classify(relevant_lines(raw, rule_set), rule_set)))
    return scored


def accuracy(scored: list[Scored]) -> tuple[float, float]:
    if not scored:
        return 0.0, 0.0
    return (sum(s.category_ok for s in scored) / len(scored), sum(s.root_ok for s in scored) / len(scored))


def breakdown(scored: list[Scored], with_misses: bool = True) -> str:
    rows = [f"{'category':<19} {'n':>3}  {'category-ok':>11}  {'root-ok':>7}"]
    counts = Counter(s.excerpt.category for s in scored)
    for category in LABEL_CATEGORIES:
        mine = [s for s in scored if s.excerpt.category == category]
        if not mine:
            continue
        rows.append(f"{category:<19} {counts[category]:>3}  {sum(s.category_ok for s in mine):>11}  "
                    f"{sum(s.root_ok for s in mine):>7}")
    category_rate, root_rate = accuracy(scored)
    rows.append(f"{'all':<19} {len(scored):>3}  {category_rate:>10.1%}  {root_rate:>7.1%}")
    hinted = [s for s in scored if s.result.resembles]
    rows.append(f"unknown with a resemblance hint: {len(hinted)}, the hint right for "
                f"{sum(s.result.resembles == s.excerpt.category for s in hinted)} (never counted as the category)")
    if with_misses:
        misses = [f"  {s.excerpt.file}: got {s.result.category} (rule {s.result.rule_id}) at line {s.root_line}, "
                  f"expected {s.excerpt.category} at line {s.excerpt.root_cause_line}"
                  for s in scored if not (s.category_ok and s.root_ok)]
        if misses:
            rows += ["misses:", *misses]
    return "\n".join(rows)
