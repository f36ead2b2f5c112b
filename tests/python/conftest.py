"""Shared fixtures. PIPEWEAVE_CLI (the test command sets it) names the C++ CLI, against which
predictions are checked; tests that need it are skipped without it."""

import os
import pathlib
import shutil

import pytest

import pipeweave as pw

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def predictor():
    return pw.Predictor()


@pytest.fixture(scope="session")
def h100():
    return pw.GpuSpec("H100-SXM")


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("PIPEWEAVE_CLI") or shutil.which("pipeweave")
    if not path:
        pytest.skip("PIPEWEAVE_CLI is not set (the test command sets it to build/pipeweave)")
    return os.path.abspath(path)
