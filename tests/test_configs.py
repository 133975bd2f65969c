"""Every YAML file shipped in configs/ loads as a valid Config."""

import glob
import os

import pytest

from trainer.config import from_sources

CONFIGS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "configs", "*.yaml")))


@pytest.mark.parametrize("path", CONFIGS, ids=os.path.basename)
def test_shipped_config_loads(path):
    config = from_sources(path, {})
    assert config.train_steps > 0
